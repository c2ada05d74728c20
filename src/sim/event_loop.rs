//! The event loop: pops the next event, hands it to the part of Nomad it
//! belongs to, and stops at the horizon, at a cap, or when the queue runs
//! dry (the simulation's twin of Nomad's servers and clients all running at
//! once). Also the public entry points that build a [`Simulation`], seed
//! it, run it and turn it into a [`RunOutput`].

use crate::model::scenario::Scenario;
use crate::model::time::Millis;
use crate::sim::simulation::{Event, RunOptions, RunOutput, Simulation};
use crate::sim::stall;
use crate::sim::state::store::{AllocState, JobStatus};
use crate::sim::trace::TraceSink;

/// Replays `scenario` under one policy and seed.
pub fn simulate(scenario: &Scenario, options: RunOptions) -> RunOutput {
    simulate_observed(scenario, options, &mut |_, _| {})
}

/// Queue entries between two calls of a progress observer.
pub const PROGRESS_EVERY: u64 = 1 << 14;

/// As [`simulate`], calling `progress(simulated time, queue entries so far)`
/// every [`PROGRESS_EVERY`] entries, for a progress display. The observer
/// sees the run but cannot change it: results are the same bytes.
pub fn simulate_observed(
    scenario: &Scenario,
    options: RunOptions,
    progress: &mut dyn FnMut(Millis, u64),
) -> RunOutput {
    if !options.trace {
        return simulate_into(scenario, options, None, progress);
    }
    let mut records = Vec::new();
    let mut output = simulate_into(scenario, options, Some(&mut records), progress);
    output.trace = Some(records);
    output
}

/// As [`simulate_observed`], handing each trace row to `sink` as the run
/// produces it (whatever `options.trace` says); `RunOutput::trace` is `None`.
pub fn simulate_streamed(
    scenario: &Scenario,
    options: RunOptions,
    sink: &mut dyn TraceSink,
    progress: &mut dyn FnMut(Millis, u64),
) -> RunOutput {
    simulate_into(scenario, options, Some(sink), progress)
}

fn simulate_into<'s>(
    scenario: &'s Scenario,
    options: RunOptions,
    trace: Option<&'s mut dyn TraceSink>,
    progress: &mut dyn FnMut(Millis, u64),
) -> RunOutput {
    let mut sim = Simulation::new(scenario, options);
    sim.trace = trace;
    sim.seed_initial_allocations();
    sim.run(progress);
    sim.finish()
}

impl Simulation<'_> {
    pub(crate) fn run(&mut self, progress: &mut dyn FnMut(Millis, u64)) {
        let horizon = self.scenario.horizon;
        // Queue entries handled at the current instant (see stall.rs).
        let (instant_limit, mut instant, mut at_instant) = (self.instant_limit(), Millis::ZERO, 0);
        while let Some((at, event)) = self.queue.pop_until(horizon) {
            (instant, at_instant) = if at == instant {
                (at, at_instant + 1)
            } else {
                (at, 1)
            };
            if at_instant > instant_limit {
                self.stopped_early = Some(self.describe_stall(event, at_instant - 1));
                return;
            }
            if self.allocs.len() + self.mounts_placed > stall::MAX_PLACEMENTS_PER_RUN {
                self.stopped_early = Some(self.describe_churn());
                return;
            }
            if let Some((max, name)) = self
                .trace
                .as_ref()
                .map(|t| (t.rows(), t.max_rows()))
                .and_then(|(rows, (max, name))| (rows >= max).then_some((max, name)))
            {
                self.stopped_early = Some(self.describe_long_trace(max, name));
                return;
            }
            if self.steps >= self.options.max_events {
                self.stopped_early = Some(format!(
                    "stopped after {} events at {}s of {}s (MAX_RUN_EVENTS): the scenario may loop",
                    self.steps,
                    self.now(),
                    horizon
                ));
                return;
            }
            self.steps += 1;
            if self.steps.is_multiple_of(PROGRESS_EVERY) {
                progress(self.now(), self.steps);
            }
            self.handle(event);
            self.note_full_placement();
            if self.options.check_invariants {
                self.check_invariants();
            }
        }
    }

    pub(crate) fn handle(&mut self, event: Event) {
        match event {
            Event::JobSubmit(job) => self.submit_job(job),
            Event::Timeline(index) => self.apply_timeline(index),
            Event::PlanSubmit { worker } => self.plan_submitted(worker),
            Event::RescheduleDue(job) => self.enqueue_eval(job),
            Event::DeploymentEvalBatch(job) => {
                self.jobs[job.index()].eval_batch = false;
                self.enqueue_eval(job);
            }
            Event::AllocPulled(alloc) => self.alloc_pulled(alloc),
            Event::ClaimAttempt(alloc) => self.claim_attempt(alloc),
            Event::PublishDone(alloc) => self.publish_done(alloc),
            Event::TaskComplete(alloc) => self.task_complete(alloc),
            Event::NodeDetach(alloc, volume) => self.node_detach(alloc, volume),
            Event::ControllerDetach(alloc, volume) => self.controller_detach(alloc, volume),
            Event::ClaimFreed(alloc, volume) => self.claim_freed(alloc, volume),
            Event::ClaimGc => self.claim_gc(),
            Event::UnblockFailed => self.unblock_failed(),
            Event::AllocHealthy(alloc) => self.alloc_health_due(alloc),
            Event::DeployHealthy(alloc) => self.deploy_healthy_due(alloc),
            Event::HealthyDeadline(alloc) => self.healthy_deadline_due(alloc),
            Event::ProgressDeadline(job) => self.progress_deadline_due(job),
            Event::HeartbeatMissed(node, since) => self.heartbeat_missed(node, since),
            Event::ClientHeartbeatStop(node, since) => self.client_heartbeat_stop(node, since),
            Event::DisconnectExpired(alloc, since) => self.disconnect_expired(alloc, since),
            Event::DrainPass => self.drain_pass(),
            Event::DrainBatch => self.drain_batch(),
            Event::PluginRestarted(node, slot) => self.plugin_restarted(node, slot),
            Event::VolumeRegistered(volume) => self.volume_registered(volume),
            Event::TasksKilled(alloc) => self.tasks_killed(alloc),
            Event::RunDeadline(alloc) => self.run_deadline(alloc),
        }
    }

    pub(crate) fn finish(mut self) -> RunOutput {
        let horizon = self.scenario.horizon;
        self.close_availability();
        if !self.deploy_times.is_empty() {
            let total: u64 = self.deploy_times.iter().map(|t| t.0).sum();
            self.metrics.time_to_deploy = Some(Millis(total / self.deploy_times.len() as u64));
        }
        for volume in &mut self.volumes {
            if let Some(since) = volume.violating_since.take() {
                self.metrics.violation_time += horizon - since;
            }
        }
        for mounts in &mut self.host_volume_table.mounts {
            if let Some(since) = mounts.violating_since.take() {
                self.metrics.violation_time += horizon - since;
            }
        }
        // A system or sysbatch job's allocations are not in `desired`.
        self.metrics.desired = self
            .jobs
            .iter()
            .zip(&self.scenario.jobs)
            .filter(|(job, spec)| job.status == JobStatus::Registered && !spec.is_system())
            .flat_map(|(job, _)| job.counts.iter())
            .map(|&count| u64::from(count))
            .sum();
        self.metrics.running = self
            .allocs
            .iter()
            .filter(|alloc| alloc.state == AllocState::Running)
            .count() as u64;
        if let Some(trace) = &mut self.trace {
            trace.end();
        }
        RunOutput {
            metrics: self.metrics,
            // Filled by `simulate_observed` from its in-memory sink.
            trace: None,
            placement_failures: self.placement_failures.into_values().collect(),
            stopped_early: self.stopped_early,
            rejections: self.rejections,
            first_plans: self.first_plans.into_values().collect(),
        }
    }

    /// Records the first moment every live job has its desired count running
    /// (batch allocations that completed count as done). Checked only once
    /// every job has been submitted, so an early, partial cluster does not count.
    pub(crate) fn note_full_placement(&mut self) {
        if self.metrics.first_full.is_some() || self.jobs_submitted < self.jobs.len() {
            return;
        }
        let any_live = self
            .jobs
            .iter()
            .zip(&self.scenario.jobs)
            .any(|(job, spec)| job.status == JobStatus::Registered && !spec.is_system());
        if any_live && self.unsatisfied_groups == 0 {
            self.metrics.first_full = Some(self.now());
        }
    }
}
