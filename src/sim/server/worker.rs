//! The evaluation broker and scheduler workers. Like Nomad's broker it keeps
//! at most one evaluation per job waiting and one in flight, and hands out
//! the highest priority first (FIFO among equals).

use std::cmp::Reverse;

use crate::model::ids::JobId;
use crate::sim::simulation::{Event, Simulation};
use crate::sim::trace::{TraceKind, TraceRecord};

/// Nomad's worker retries a plan that the applier partly rejected until this
/// many passes in a row made no progress (service, batch), then blocks the
/// evaluation (generic_sched.go `retryMax`).
const MAX_SERVICE_ATTEMPTS: u32 = 5;
const MAX_BATCH_ATTEMPTS: u32 = 2;

impl Simulation<'_> {
    /// Asks for an evaluation of `job`. Coalesces with one already waiting;
    /// if a worker is busy with the job, it is evaluated again afterwards.
    pub(crate) fn enqueue_eval(&mut self, job: JobId) {
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
        self.broker.ready.insert((Reverse(priority), seq), job);
        self.dispatch();
    }

    /// Hands waiting evaluations to idle workers. Each worker schedules
    /// against the state as it is now (its snapshot) and submits its plan
    /// `scheduler_latency` later; other workers may plan from the same state
    /// in between, which is how concurrent workers double-claim.
    pub(crate) fn dispatch(&mut self) {
        if self.broker.held {
            // A worker is planning or its plan is being applied: the
            // evaluation waits until it is done (see `EvalBroker::held`).
            return;
        }
        while let Some(worker) = self.workers.iter().position(Option::is_none) {
            let Some((_, job)) = self.broker.ready.pop_first() else {
                return;
            };
            let state = &mut self.jobs[job.index()];
            state.eval_queued = false;
            state.eval_in_flight = true;
            self.metrics.evals += 1;
            self.record(|t| {
                TraceRecord::new(t, TraceKind::Eval)
                    .job(job)
                    .detail(format!("worker {worker}, attempt 1"))
            });
            self.broker.held = true;
            let plan = self.schedule(job, 0);
            self.broker.held = false;
            self.workers[worker] = Some(plan);
            self.after(
                self.scenario.cluster.scheduler_latency,
                Event::PlanSubmit { worker },
            );
        }
    }

    pub(crate) fn plan_submitted(&mut self, worker: usize) {
        // The worker stays busy until its plan is applied and, if the
        // applier refused part of it, its retry planned: what the plan's
        // stops and failures enqueue waits for it.
        self.broker.held = true;
        self.apply_submitted(worker);
        self.broker.held = false;
        self.dispatch();
    }

    /// Applies worker `worker`'s plan, then retries the evaluation on the
    /// same worker or lets the worker go (`broker.held` is set throughout).
    fn apply_submitted(&mut self, worker: usize) {
        let plan = self.workers[worker]
            .take()
            .expect("a busy worker has a plan");
        let job = plan.job;
        let attempt = plan.attempt;
        // Progress (Nomad's progressMade): the applier committed a stop or a
        // placement of this plan.
        let placed_before = self.metrics.placed;
        let stops = plan
            .stops
            .iter()
            .any(|id| self.allocs[id.index()].is_live());
        let fully_applied = self.apply_plan(plan);
        if !fully_applied {
            let batch = self.scenario.jobs[job.index()].is_batch();
            let limit = if batch {
                MAX_BATCH_ATTEMPTS
            } else {
                MAX_SERVICE_ATTEMPTS
            };
            // retryMax: the count starts over whenever a plan made progress.
            let progress = stops || self.metrics.placed > placed_before;
            let attempt = if progress { 0 } else { attempt + 1 };
            if attempt < limit {
                // The worker retries the same evaluation at once, against
                // the refreshed state, without going back to the broker.
                self.record(|t| {
                    TraceRecord::new(t, TraceKind::Eval)
                        .job(job)
                        .detail(format!("worker {worker}, retry {}", attempt + 1))
                });
                let plan = self.schedule(job, attempt);
                self.workers[worker] = Some(plan);
                self.after(
                    self.scenario.cluster.scheduler_latency,
                    Event::PlanSubmit { worker },
                );
                return;
            }
            self.blocked.insert(job);
            self.block_after_max_plans(job);
        }
        self.jobs[job.index()].eval_in_flight = false;
        if std::mem::take(&mut self.jobs[job.index()].eval_dirty) {
            self.enqueue_eval(job);
        }
    }
}
