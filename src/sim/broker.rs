//! The evaluation broker and scheduler workers. Like Nomad's broker it keeps
//! at most one evaluation per job waiting and one in flight, and hands out
//! the highest priority first (FIFO among equals).

use std::cmp::Reverse;
use std::collections::BTreeMap;

use super::trace::{TraceKind, TraceRecord};
use super::{Event, Simulation};
use crate::model::ids::JobId;

/// Nomad retries a plan that the applier partly rejected this many times
/// (service, batch) before it gives up and blocks the evaluation.
const MAX_SERVICE_ATTEMPTS: u32 = 5;
const MAX_BATCH_ATTEMPTS: u32 = 2;

#[derive(Default)]
pub struct EvalBroker {
    /// (priority, arrival) -> (job, attempt).
    ready: BTreeMap<(Reverse<u32>, u64), (JobId, u32)>,
    next_seq: u64,
}

impl Simulation<'_> {
    /// Asks for an evaluation of `job`. Coalesces with one already waiting;
    /// if a worker is busy with the job, it is evaluated again afterwards.
    pub(super) fn enqueue_eval(&mut self, job: JobId) {
        self.enqueue_attempt(job, 0);
    }

    fn enqueue_attempt(&mut self, job: JobId, attempt: u32) {
        let state = &mut self.jobs[job.index()];
        if state.eval_queued {
            return;
        }
        if state.eval_in_flight {
            state.eval_dirty = true;
            return;
        }
        state.eval_queued = true;
        let priority = self.scenario.jobs[job.index()].priority;
        let seq = self.broker.next_seq;
        self.broker.next_seq += 1;
        self.broker
            .ready
            .insert((Reverse(priority), seq), (job, attempt));
        self.dispatch();
    }

    /// Hands waiting evaluations to idle workers. Each worker schedules
    /// against the state as it is now (its snapshot) and submits its plan
    /// `scheduler_latency` later; other workers may plan from the same state
    /// in between, which is how concurrent workers double-claim.
    fn dispatch(&mut self) {
        while let Some(worker) = self.workers.iter().position(Option::is_none) {
            let Some((_, (job, attempt))) = self.broker.ready.pop_first() else {
                return;
            };
            let state = &mut self.jobs[job.index()];
            state.eval_queued = false;
            state.eval_in_flight = true;
            self.metrics.evals += 1;
            self.record(|t| {
                TraceRecord::new(t, TraceKind::Eval)
                    .job(job)
                    .detail(format!("worker {worker}, attempt {}", attempt + 1))
            });
            let plan = self.schedule(job, attempt);
            self.workers[worker] = Some(plan);
            self.after(
                self.scenario.cluster.scheduler_latency,
                Event::PlanSubmit { worker },
            );
        }
    }

    pub(super) fn plan_submitted(&mut self, worker: usize) {
        let plan = self.workers[worker]
            .take()
            .expect("a busy worker has a plan");
        let job = plan.job;
        let attempt = plan.attempt;
        let fully_applied = self.apply_plan(plan);
        let state = &mut self.jobs[job.index()];
        state.eval_in_flight = false;
        if !fully_applied {
            let batch = self.scenario.jobs[job.index()].is_batch();
            let limit = if batch {
                MAX_BATCH_ATTEMPTS
            } else {
                MAX_SERVICE_ATTEMPTS
            };
            if attempt + 1 < limit {
                self.jobs[job.index()].eval_dirty = false;
                self.enqueue_attempt(job, attempt + 1);
            } else {
                self.blocked.insert(job);
            }
        }
        if std::mem::take(&mut self.jobs[job.index()].eval_dirty) {
            self.enqueue_eval(job);
        }
        self.dispatch();
    }
}
