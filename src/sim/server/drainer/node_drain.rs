//! Drains with a drain strategy (`node_drain: {node, deadline,
//! ignore_system_jobs}`), as Nomad's drainer runs them (nomad/drainer/):
//! the node turns ineligible; the job watcher marks the node's allocations
//! for migration group by group, no more at once than the group's
//! `migrate.max_parallel` allows given how many of its allocations have
//! their health set (watch_jobs.go handleTaskGroup); marks are written in
//! 1s batches with an evaluation per job (drainer.go batchDrainAllocs);
//! system jobs (and from 1.3 plugin jobs) go last, once everything else on
//! the node is done (draining_node.go IsDone, RemainingAllocs); at the
//! deadline whatever is left is marked at once. The short form
//! (`node_drain: NODE`) is a forced drain: timeline.rs marks everything.

use std::collections::BTreeSet;

use crate::model::ids::{AllocId, GroupRef, JobId, NodeId};
use crate::model::scenario::{DrainSpec, HealthCheck, JobKind};
use crate::model::time::Millis;
use crate::sim::server::drainer::drain_state::PluginMark;
use crate::sim::simulation::{Event, Simulation};
use crate::sim::state::store::AllocState;
use crate::sim::trace::{TraceKind, TraceRecord};

/// Nomad's drainer batches migration marks this long (BatchUpdateInterval).
const BATCH_WINDOW: Millis = Millis::from_secs(1);

impl Simulation<'_> {
    pub(crate) fn drain_node(&mut self, node: NodeId, spec: DrainSpec) {
        let now = self.now();
        self.set_node_eligible(node, false);
        let detail = match spec.deadline {
            Some(deadline) => format!("deadline {deadline}s"),
            None => "no deadline".to_string(),
        };
        let detail = if spec.ignore_system_jobs {
            format!("{detail}, system jobs ignored")
        } else {
            detail
        };
        self.record(|t| {
            TraceRecord::new(t, TraceKind::NodeDrain)
                .node(node)
                .detail(detail)
        });
        self.drains.nodes.insert(node, (spec, now));
        if let Some(deadline) = spec.deadline {
            self.queue_drain_pass(now + deadline);
        }
        self.drain_pass();
    }

    /// Asks for a drainer pass at `at` (one per instant).
    pub(crate) fn queue_drain_pass(&mut self, at: Millis) {
        if at <= self.scenario.horizon && self.drains.passes.insert(at) {
            self.at(at, Event::DrainPass);
        }
    }

    /// Something the drainer watches changed (an allocation stopped or
    /// started running): it looks again.
    pub(crate) fn drain_watch(&mut self) {
        if !self.drains.nodes.is_empty() {
            self.queue_drain_pass(self.now());
        }
    }

    /// Whether the drainer leaves `job` for last: system jobs, and from 1.3
    /// jobs that run a CSI plugin.
    pub(crate) fn drained_last(&self, job: JobId) -> bool {
        let spec = &self.scenario.jobs[job.index()];
        match spec.kind {
            JobKind::System => true,
            JobKind::Service | JobKind::Batch | JobKind::Sysbatch => {
                self.behaviour.release.drains_plugin_jobs_last
                    && spec.groups.iter().any(|g| !g.csi_plugins.is_empty())
            }
        }
    }

    /// Marked for migration, or in the batch about to be.
    pub(crate) fn marked(&self, id: AllocId) -> bool {
        self.allocs[id.index()].migrate || self.drains.batch.contains(&id)
    }

    /// When the client set (or will set) the allocation's health for a
    /// migration (health_hook.go with the group's `migrate` block): healthy
    /// once running for `healthy_after` (checks) and `min_healthy_time`;
    /// unhealthy at `healthy_deadline`. Either counts for the drainer
    /// (`DeploymentStatus.HasHealth`).
    pub(crate) fn health_set_at(&self, id: AllocId) -> Millis {
        let alloc = &self.allocs[id.index()];
        if alloc.score.is_none() && alloc.state == AllocState::Running {
            // Running before the run began: its health was set before.
            return Millis::ZERO;
        }
        let group = &self.scenario.jobs[alloc.group.job.index()].groups[alloc.group.group_index()];
        let migrate = group.migrate;
        let deadline = alloc.placed_at.get() + migrate.healthy_deadline;
        match alloc.running_since.get() {
            Some(since) if alloc.state == AllocState::Running => {
                let checks = match migrate.health_check {
                    HealthCheck::Checks => group.healthy_after,
                    HealthCheck::TaskStates => Millis::ZERO,
                };
                (since + checks + migrate.min_healthy_time).min(deadline)
            }
            _ => deadline,
        }
    }

    /// One pass of the drainer: the job watcher over every draining job,
    /// then each node's done and deadline checks.
    pub(crate) fn drain_pass(&mut self) {
        let now = self.now();
        self.drains.passes.remove(&now);
        if self.drains.nodes.is_empty() {
            return;
        }
        // The jobs with live allocations on draining nodes (DrainingJobs).
        let mut jobs = BTreeSet::new();
        for &node in self.drains.nodes.keys() {
            for &id in &self.nodes[node.index()].allocs {
                let job = self.allocs[id.index()].group.job;
                if !self.drained_last(job) {
                    jobs.insert(job);
                }
            }
        }
        let mut marks = Vec::new();
        let mut wake: Option<Millis> = None;
        if self.drains.watcher_waiting {
            // The job watcher is blocked on its batch (watch_jobs.go watch
            // waits for the response): it handles nothing until then.
            jobs.clear();
        }
        for job in jobs {
            if self.scenario.jobs[job.index()].is_batch() {
                // Batch allocations are left to finish until the deadline.
                continue;
            }
            for g in 0..self.scenario.jobs[job.index()].groups.len() {
                let (group_marks, group_wake) = self.drain_group(GroupRef::new(job, g));
                marks.extend(group_marks);
                wake = match (wake, group_wake) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
        }
        if let Some(at) = wake {
            self.queue_drain_pass(at);
        }
        self.note_plugin_marks(&marks, PluginMark::Migrating);
        if !marks.is_empty() {
            self.drains.watcher_waiting = true;
        }
        self.mark_in_batch(marks);
        let nodes: Vec<(NodeId, DrainSpec, Millis)> = self
            .drains
            .nodes
            .iter()
            .map(|(&node, &(spec, since))| (node, spec, since))
            .collect();
        for (node, spec, since) in nodes {
            let deadlined = spec.deadline.is_some_and(|d| now >= since + d);
            if deadlined {
                let left = self.remaining_allocs(node, spec);
                self.note_plugin_marks(&left, PluginMark::Deadline);
                self.mark_in_batch(left);
                self.drain_complete(node, "deadline reached");
            } else if self.drain_done(node) {
                // The rest (system jobs) go without batching (drainer.go
                // handleMigratedAllocs).
                let left = self.remaining_allocs(node, spec);
                self.note_plugin_marks(&left, PluginMark::Done);
                self.mark_now(&left);
                self.drain_complete(node, "done");
            }
        }
    }

    /// handleTaskGroup: how many of the group's allocations on draining
    /// nodes to mark now, and when its health may next change.
    pub(crate) fn drain_group(&self, group: GroupRef) -> (Vec<AllocId>, Option<Millis>) {
        let now = self.now();
        let spec = &self.scenario.jobs[group.job.index()].groups[group.group_index()];
        let counts_marked = self.behaviour.release.drain_counts_migrating_healthy;
        let mut healthy: i64 = 0;
        let mut drainable = Vec::new();
        let mut wake: Option<Millis> = None;
        for &id in self.jobs[group.job.index()].latest[group.group_index()].values() {
            let alloc = &self.allocs[id.index()];
            if !alloc.is_live() {
                continue;
            }
            let set_at = self.health_set_at(id);
            let marked = self.marked(id);
            if set_at <= now {
                if counts_marked || !marked {
                    healthy += 1;
                }
            } else {
                wake = Some(wake.map_or(set_at, |w| w.min(set_at)));
            }
            if self.drains.nodes.contains_key(&alloc.node) && !marked {
                drainable.push(id);
            }
        }
        let threshold = i64::from(self.jobs[group.job.index()].counts[group.group_index()])
            - i64::from(spec.migrate.max_parallel);
        let take = (healthy - threshold).clamp(0, drainable.len() as i64) as usize;
        // Held back: look again when the next health is set.
        let wake = wake.filter(|_| take < drainable.len());
        drainable.truncate(take);
        (drainable, wake)
    }

    /// Whether only allocations drained last are left on the node (IsDone).
    pub(crate) fn drain_done(&self, node: NodeId) -> bool {
        self.nodes[node.index()]
            .allocs
            .iter()
            .all(|id| self.drained_last(self.allocs[id.index()].group.job))
    }

    /// RemainingAllocs: every live allocation on the node not yet marked,
    /// system jobs unless the drain ignores them.
    pub(crate) fn remaining_allocs(&self, node: NodeId, spec: DrainSpec) -> Vec<AllocId> {
        self.nodes[node.index()]
            .allocs
            .iter()
            .copied()
            .filter(|&id| !self.marked(id))
            .filter(|&id| {
                let job = self.allocs[id.index()].group.job;
                !spec.ignore_system_jobs || self.scenario.jobs[job.index()].kind != JobKind::System
            })
            .collect()
    }

    pub(crate) fn mark_in_batch(&mut self, marks: Vec<AllocId>) {
        if marks.is_empty() {
            return;
        }
        if self.drains.batch.is_empty() {
            self.after(BATCH_WINDOW, Event::DrainBatch);
        }
        self.drains.batch.extend(marks);
    }

    /// The batch window closed: the marks are written, with an evaluation
    /// for each job. The job watcher does not look again at its own write:
    /// it waits for an allocation update past it (watch_jobs.go watch sets
    /// `waitIndex` to the write's index), so the marks it just made are not
    /// counted again (TestDrainingJobWatcher_DrainJobs: "Just setting
    /// ShouldMigrate should not cause any further drains"). The next pass
    /// comes with the next allocation update: the plan stopping the marked
    /// allocations, one starting or finishing.
    pub(crate) fn drain_batch(&mut self) {
        let batch = std::mem::take(&mut self.drains.batch);
        self.drains.watcher_waiting = false;
        self.mark_now(&batch);
    }

    pub(crate) fn mark_now(&mut self, allocs: &[AllocId]) {
        let live: Vec<AllocId> = allocs
            .iter()
            .copied()
            .filter(|id| self.allocs[id.index()].is_live())
            .collect();
        for &id in &live {
            let alloc = &mut self.allocs[id.index()];
            alloc.migrate = true;
            let (group, index, node) = (alloc.group, alloc.index, alloc.node);
            self.record(|t| {
                TraceRecord::new(t, TraceKind::Migrate)
                    .alloc(group, index)
                    .node(node)
            });
        }
        self.evaluate_jobs_of(&live);
    }

    pub(crate) fn drain_complete(&mut self, node: NodeId, why: &str) {
        self.drains.nodes.remove(&node);
        self.record(|t| {
            TraceRecord::new(t, TraceKind::DrainComplete)
                .node(node)
                .detail(why)
        });
    }
}
