//! Job registration and the scenario's timeline of operator actions.

use std::collections::BTreeSet;

use super::Simulation;
use super::state::{AllocState, JobStatus, NodeStatus};
use super::trace::{TraceKind, TraceRecord};
use crate::model::access::{AccessMode, ClaimMode};
use crate::model::ids::{AllocId, GroupRef, JobId, NodeId};
use crate::model::scenario::{TimelineAction, VolumeSource};

impl Simulation<'_> {
    pub(super) fn submit_job(&mut self, job: JobId) {
        self.jobs_submitted += 1;
        if self.policy.validates_registration()
            && let Some(problem) = self.registration_problem(job)
        {
            self.jobs[job.index()].status = JobStatus::Rejected;
            self.metrics.rejected_jobs += 1;
            self.rejections.push((job, problem.clone()));
            self.record(|t| {
                TraceRecord::new(t, TraceKind::JobRejected)
                    .job(job)
                    .detail(problem)
            });
            return;
        }
        self.jobs[job.index()].status = JobStatus::Registered;
        self.record(|t| TraceRecord::new(t, TraceKind::JobSubmitted).job(job));
        self.refresh_job(job);
        self.enqueue_eval(job);
    }

    /// Nomad 1.3's registration check: a group with count > 1 may not share
    /// a single-node volume (or write to a multi-node-single-writer volume)
    /// unless each allocation gets its own (`per_alloc`).
    fn registration_problem(&self, job: JobId) -> Option<String> {
        let spec = &self.scenario.jobs[job.index()];
        for (g, group) in spec.groups.iter().enumerate() {
            let count = self.jobs[job.index()].counts[g];
            if count <= 1 {
                continue;
            }
            for request in &group.volumes {
                let VolumeSource::Shared(volume) = request.source else {
                    continue;
                };
                let volume = &self.scenario.volumes[volume.index()];
                let mode = volume.access_mode;
                let exclusive = mode.is_single_node()
                    || (mode == AccessMode::MultiNodeSingleWriter
                        && request.mode == ClaimMode::Write);
                if exclusive {
                    return Some(format!(
                        "group {} has count {count} but volume {} ({mode}{}) can be claimed by one allocation only; use per_alloc",
                        group.name,
                        volume.name,
                        if request.mode == ClaimMode::Write {
                            ", read-write"
                        } else {
                            ""
                        }
                    ));
                }
            }
        }
        None
    }

    pub(super) fn apply_timeline(&mut self, index: usize) {
        let action = self.scenario.events[index].action.clone();
        match action {
            TimelineAction::NodeDown(node) => self.node_down(node),
            TimelineAction::NodeUp(node) => {
                let state = &mut self.nodes[node.index()];
                state.status = NodeStatus::Ready;
                state.eligible = true;
                self.record(|t| TraceRecord::new(t, TraceKind::NodeUp).node(node));
                self.unblock();
            }
            TimelineAction::NodeDrain(node) => {
                self.nodes[node.index()].eligible = false;
                self.record(|t| TraceRecord::new(t, TraceKind::NodeDrain).node(node));
                let live = self.live_allocs_on(node);
                for &id in &live {
                    self.allocs[id.index()].migrate = true;
                }
                self.evaluate_jobs_of(&live);
            }
            TimelineAction::Scale { job, group, count } => {
                let group = GroupRef::new(job, group);
                let status = self.jobs[job.index()].status;
                let detail = match status {
                    JobStatus::Registered | JobStatus::NotSubmitted => format!("count {count}"),
                    JobStatus::Rejected | JobStatus::Stopped => {
                        format!("count {count} ignored: the job is not registered")
                    }
                };
                self.record(|t| {
                    TraceRecord::new(t, TraceKind::Scale)
                        .group(group)
                        .detail(detail)
                });
                if matches!(status, JobStatus::Registered | JobStatus::NotSubmitted) {
                    self.jobs[job.index()].counts[group.group_index()] = count;
                }
                if status == JobStatus::Registered {
                    self.refresh_group(group);
                    self.enqueue_eval(job);
                }
            }
            TimelineAction::PluginHealth {
                plugin,
                node,
                healthy,
            } => {
                let slot = self.scenario.nodes[node.index()]
                    .csi_plugins
                    .iter()
                    .position(|p| p.plugin == plugin)
                    .expect("validated: the node runs the plugin");
                self.nodes[node.index()].plugin_healthy[slot] = healthy;
                let detail = format!(
                    "{} {}",
                    self.scenario.plugins[plugin.index()].name,
                    if healthy { "healthy" } else { "unhealthy" }
                );
                self.record(|t| {
                    TraceRecord::new(t, TraceKind::PluginHealth)
                        .node(node)
                        .detail(detail)
                });
                if healthy {
                    self.unblock();
                }
            }
            TimelineAction::StopJob(job) => {
                self.record(|t| TraceRecord::new(t, TraceKind::StopJob).job(job));
                if self.jobs[job.index()].status == JobStatus::Registered {
                    self.jobs[job.index()].status = JobStatus::Stopped;
                    self.blocked.remove(&job);
                    self.refresh_job(job);
                    self.enqueue_eval(job);
                }
            }
        }
    }

    /// The node stops heartbeating: its allocations are lost and replaced.
    fn node_down(&mut self, node: NodeId) {
        if self.nodes[node.index()].status == NodeStatus::Down {
            return;
        }
        self.nodes[node.index()].status = NodeStatus::Down;
        self.record(|t| TraceRecord::new(t, TraceKind::NodeDown).node(node));
        let live = self.live_allocs_on(node);
        for &id in &live {
            self.finish_alloc(
                id,
                AllocState::Lost,
                &format!("node {} is down", self.node_name(node)),
            );
        }
        self.evaluate_jobs_of(&live);
    }

    fn live_allocs_on(&self, node: NodeId) -> Vec<AllocId> {
        self.nodes[node.index()].allocs.iter().copied().collect()
    }

    fn evaluate_jobs_of(&mut self, allocs: &[AllocId]) {
        let jobs: BTreeSet<JobId> = allocs
            .iter()
            .map(|id| self.allocs[id.index()].group.job)
            .collect();
        for job in jobs {
            self.enqueue_eval(job);
        }
    }
}
