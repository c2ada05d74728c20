//! Allocation health: the one notion of "healthy" that deployments,
//! migrations, plugin health and the `unavailable_s` metric share. An
//! allocation is healthy once it has been running for its group's
//! `healthy_after` (plansim's stand-in for Nomad's task checks, which
//! client/allochealth waits for) and stops being healthy when it leaves
//! running. Whatever reacts to health hooks into `on_alloc_healthy` and
//! `on_alloc_unhealthy`.

use crate::model::ids::{AllocId, GroupRef};
use crate::model::scenario::{JobKind, JobSpec};
use crate::model::time::Millis;
use crate::sim::simulation::{Event, Simulation};
use crate::sim::state::alloc_parts::MaybeStamp;
use crate::sim::state::store::{AllocState, JobStatus};

/// Whether a job's groups count in `unavailable_s`: system and sysbatch
/// jobs do not (one allocation per node is not a desired count).
pub(crate) fn counts_for_availability(job: &JobSpec) -> bool {
    matches!(job.kind, JobKind::Service | JobKind::Batch)
}

impl Simulation<'_> {
    /// The allocation just started running: it becomes healthy after its
    /// group's `healthy_after` (at once when that is 0s, without a queue
    /// entry, so runs that do not use it pay nothing).
    pub(crate) fn begin_health(&mut self, id: AllocId) {
        let (group, version) = (
            self.allocs[id.index()].group,
            self.allocs[id.index()].version,
        );
        let wait = self.scenario.jobs[group.job.index()].groups_of(version)[group.group_index()]
            .healthy_after;
        if wait == Millis::ZERO {
            self.on_alloc_healthy(id);
        } else {
            self.after(wait, Event::AllocHealthy(id));
        }
    }

    /// `healthy_after` passed: healthy if it is still running (an
    /// allocation that left running meanwhile never becomes healthy).
    pub(crate) fn alloc_health_due(&mut self, id: AllocId) {
        let alloc = &self.allocs[id.index()];
        if alloc.state == AllocState::Running && alloc.healthy_at.is_none() {
            self.on_alloc_healthy(id);
        }
    }

    /// The allocation became healthy.
    pub(crate) fn on_alloc_healthy(&mut self, id: AllocId) {
        let now = self.now();
        let alloc = &mut self.allocs[id.index()];
        alloc.healthy_at = MaybeStamp::some(now);
        let group = alloc.group;
        self.jobs[group.job.index()].healthy[group.group_index()] += 1;
        self.refresh_availability(group);
        self.plugin_alloc_healthy(id);
        self.deployment_alloc_healthy(id);
    }

    /// A healthy allocation is no longer (it left running).
    pub(crate) fn on_alloc_unhealthy(&mut self, id: AllocId) {
        let alloc = &mut self.allocs[id.index()];
        if alloc.healthy_at.take().is_none() {
            return;
        }
        let group = alloc.group;
        self.jobs[group.job.index()].healthy[group.group_index()] -= 1;
        self.refresh_availability(group);
    }

    /// Keeps the `unavailable_s` clock of a group: it runs while the group
    /// has fewer healthy allocations (for a batch job, plus completed
    /// ones) than desired, once the group has first been fully healthy. A
    /// stopped or rejected job desires nothing.
    pub(crate) fn refresh_availability(&mut self, group: GroupRef) {
        let spec = &self.scenario.jobs[group.job.index()];
        if !counts_for_availability(spec) {
            return;
        }
        let now = self.now();
        let batch = spec.is_batch();
        let job = &mut self.jobs[group.job.index()];
        let g = group.group_index();
        let desired = if job.status == JobStatus::Registered {
            job.counts[g]
        } else {
            0
        };
        let available = job.healthy[g] + if batch { job.complete[g] } else { 0 };
        if available >= desired {
            job.ever_available[g] |= desired > 0;
            if let Some(since) = job.unavailable_since[g].take() {
                self.metrics.unavailable_time += now - since;
            }
        } else if job.ever_available[g] && job.unavailable_since[g].is_none() {
            job.unavailable_since[g] = Some(now);
        }
    }

    /// Closes the `unavailable_s` clocks still running at the horizon.
    pub(crate) fn close_availability(&mut self) {
        let horizon = self.scenario.horizon;
        for job in &mut self.jobs {
            for since in job.unavailable_since.iter_mut().filter_map(Option::take) {
                self.metrics.unavailable_time += horizon - since;
            }
        }
    }
}
