//! A group's `max_run_duration` (Nomad 2.0.3+, batch and sysbatch jobs):
//! the client's `max_run_duration` alloc-runner hook
//! (`client/allocrunner/max_run_duration_hook.go`, v2.0.5) arms a timer for
//! the allocation's `CreateTime` plus the duration when the runner starts,
//! and fires at once if that is past. At the deadline
//! `alloc_runner.go:EnforceMaxRunDurationTimeout` forces the client status
//! to complete, "allocation exceeded max_run_duration", and kills the tasks
//! the way a stop does (`killTasks`: the group's shutdown delay, each task's
//! shutdown delay and kill timeout, sidecars last), except that the poststop
//! tasks are killed before they start. The allocation is then a complete
//! one: the batch reconciler leaves it be and the system scheduler does not
//! run a sysbatch group on that node again, so nothing replaces it and no
//! reschedule policy applies.

use crate::model::ids::AllocId;
use crate::model::time::Millis;
use crate::sim::simulation::{Event, Simulation};
use crate::sim::state::store::AllocState;

/// The client description Nomad gives such an allocation
/// (`nomad/structs/alloc.go:AllocTimeoutReasonMaxRunDuration`).
pub(crate) const TIMEOUT_REASON: &str = "allocation exceeded max_run_duration";

impl Simulation<'_> {
    /// When the client stops `id` for its group's `max_run_duration`, if the
    /// release enforces one: the plan's commit, Nomad's `CreateTime`
    /// (`plan_apply.go:updateAllocTimestamps`; kept by an in-place update,
    /// new for a replacement), plus the duration. An allocation that
    /// predates the run is taken as created at 0s, as its tasks' `run_for`
    /// counts from 0s.
    pub(crate) fn run_deadline_at(&self, id: AllocId) -> Option<Millis> {
        if !self.behaviour.release.enforces_max_run_duration {
            return None;
        }
        let alloc = &self.allocs[id.index()];
        let group = alloc.group;
        let spec =
            &self.scenario.jobs[group.job.index()].groups_of(alloc.version)[group.group_index()];
        Some(alloc.placed_at.get() + spec.max_run_duration?)
    }

    /// Arms the deadline of an allocation just created (or, at 0s, seeded).
    pub(crate) fn arm_run_deadline(&mut self, id: AllocId) {
        if let Some(deadline) = self.run_deadline_at(id) {
            self.at(deadline, Event::RunDeadline(id));
        }
    }

    /// The deadline of `id` is reached. An allocation that finished first
    /// (its tasks completed, it failed, it was stopped or lost) has had its
    /// timer stopped by the hook's Postrun; a client that cannot reach its
    /// servers kills the tasks, and its report waits for the reconnect
    /// (`resume_stalled`). Otherwise the allocation completes: running
    /// tasks take the kill time to stop, before the claims are released; a
    /// pending one (pulling, claiming, publishing) never starts its tasks,
    /// and the claims it holds are released at once.
    pub(crate) fn run_deadline(&mut self, id: AllocId) {
        if !self.allocs[id.index()].is_live() || self.stall_if_disconnected(id) {
            return;
        }
        let alloc = &self.allocs[id.index()];
        let stopping = if alloc.state == AllocState::Running {
            let (group, release) = (alloc.group, self.behaviour.release);
            self.scenario.jobs[group.job.index()].groups_of(alloc.version)[group.group_index()]
                .kill_time(release.kills_sidecars_last, release.max_kill_timeout)
        } else {
            Millis::ZERO
        };
        self.end_alloc(id, AllocState::Complete, TIMEOUT_REASON, stopping);
    }

    /// Whether the deadline of `id` passed while its client could not reach
    /// the servers, before its tasks would have completed (then the
    /// completion came first, and the hook's Postrun stopped the timer).
    pub(crate) fn run_deadline_overdue(&self, id: AllocId) -> bool {
        let Some(deadline) = self.run_deadline_at(id) else {
            return false;
        };
        let alloc = &self.allocs[id.index()];
        if !alloc.is_live() || deadline > self.now() {
            return false;
        }
        let group = alloc.group;
        let run_for = self.scenario.jobs[group.job.index()].groups_of(alloc.version)
            [group.group_index()]
        .run_for;
        let completed_first = alloc.state == AllocState::Running
            && alloc
                .running_since
                .get()
                .zip(run_for)
                .is_some_and(|(since, run_for)| since + run_for <= deadline);
        !completed_first
    }
}
