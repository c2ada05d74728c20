//! The scenario's timeline: what an operator or the infrastructure does at
//! a given time (a node down, up, drained, disconnected or reconnected; a
//! job scaled, updated, promoted or stopped; a plugin's health changed),
//! as the `nomad node` / `nomad job` / `nomad deployment` commands and the
//! servers' node status updates would do it.

use std::collections::BTreeSet;

use crate::model::ids::{AllocId, GroupRef, JobId, NodeId};
use crate::model::scenario::TimelineAction;
use crate::sim::server::drainer::drain_state::PluginMark;
use crate::sim::simulation::Simulation;
use crate::sim::state::store::{AllocState, JobStatus, NodeStatus};
use crate::sim::trace::{TraceKind, TraceRecord};

impl Simulation<'_> {
    pub(crate) fn apply_timeline(&mut self, index: usize) {
        let action = self.scenario.events[index].action.clone();
        match action {
            TimelineAction::NodeDown(node) => self.node_down(node),
            TimelineAction::NodeUp(node) => {
                self.set_node_status(node, NodeStatus::Ready);
                self.set_node_eligible(node, true);
                // A node brought back up heartbeats again.
                self.set_disconnected_at(node, None);
                self.record(|t| TraceRecord::new(t, TraceKind::NodeUp).node(node));
                self.node_back_up(node);
                self.unblock_class(node);
                self.evaluate_system_jobs();
            }
            TimelineAction::NodeDrain(node) => {
                self.set_node_eligible(node, false);
                self.record(|t| TraceRecord::new(t, TraceKind::NodeDrain).node(node));
                let live = self.live_allocs_on(node);
                self.note_plugin_marks(&live, PluginMark::Forced);
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
                    JobStatus::Rejected
                    | JobStatus::Stopped
                    | JobStatus::Tracked
                    | JobStatus::Skipped => {
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
                    .plugin_slot(plugin)
                    .expect("validated: the node runs the plugin");
                if self.plugin_restarts.contains(&(node, slot)) {
                    // The restart decides its health when it is back.
                    let detail = format!(
                        "{} ignored: restarting",
                        self.plugin_health_text(plugin, healthy)
                    );
                    self.record(|t| {
                        TraceRecord::new(t, TraceKind::PluginHealth)
                            .node(node)
                            .detail(detail)
                    });
                    return;
                }
                self.nodes[node.index()].plugin_healthy[slot] = healthy;
                self.announce_plugin_health(node, plugin, healthy);
            }
            TimelineAction::PluginControllerHealth { plugin, healthy } => {
                self.set_controller_health(plugin, healthy);
            }
            TimelineAction::UpdateJob { job, version, .. } => {
                // The loader numbers every update (scenario/update.rs
                // assign_versions), a count-only one included.
                let version = version.expect("every update_job has a version");
                self.record(|t| {
                    TraceRecord::new(t, TraceKind::UpdateJob)
                        .job(job)
                        .detail(format!("version {version}"))
                });
                self.update_job(job, version);
            }
            TimelineAction::NodeDisconnect(node) => self.node_disconnect(node),
            TimelineAction::NodeReconnect(node) => self.node_reconnect(node),
            TimelineAction::NodeDrainSpec(node, spec) => self.drain_node(node, spec),
            TimelineAction::PromoteDeployment(job) => self.promote_deployment(job),
            TimelineAction::StopJob(job) => {
                self.record(|t| TraceRecord::new(t, TraceKind::StopJob).job(job));
                if self.jobs[job.index()].status == JobStatus::Tracked {
                    // A parent has no allocations, and Deregister creates
                    // no evaluation for it; it launches nothing more.
                    self.jobs[job.index()].status = JobStatus::Stopped;
                    return;
                }
                self.cancel_deployment(job, "the job stopped");
                if self.jobs[job.index()].status == JobStatus::Registered {
                    self.jobs[job.index()].status = JobStatus::Stopped;
                    self.blocked.remove(&job);
                    self.refresh_job(job);
                    self.enqueue_eval(job);
                }
            }
            TimelineAction::Dispatch { job, child, .. } => {
                // The child registers at this instant, after the timeline
                // (its submit_at is the event's time).
                let detail = self.scenario.jobs[child.index()].name.clone();
                self.record(|t| {
                    TraceRecord::new(t, TraceKind::Dispatch)
                        .job(job)
                        .detail(detail)
                });
            }
            TimelineAction::AllocFail { group, index } => self.alloc_fail(group, index),
            TimelineAction::NodeDownOf { group, index } => self.node_down_of(group, index),
            TimelineAction::PluginRestart {
                plugin,
                node,
                down_for,
            } => self.plugin_restart(plugin, node, down_for),
            TimelineAction::VolumeDetach { volume, node } => self.volume_detach(volume, node),
            TimelineAction::PublishFailure {
                volume,
                stage,
                count,
            } => self.script_publish_failures(volume, stage, count),
        }
    }

    /// The node stops heartbeating: its allocations are lost and replaced.
    pub(crate) fn node_down(&mut self, node: NodeId) {
        if self.nodes[node.index()].status == NodeStatus::Down {
            return;
        }
        self.set_node_status(node, NodeStatus::Down);
        self.nodes[node.index()].down_since = self.now();
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

    pub(crate) fn live_allocs_on(&self, node: NodeId) -> Vec<AllocId> {
        self.nodes[node.index()].allocs.iter().copied().collect()
    }

    pub(crate) fn evaluate_jobs_of(&mut self, allocs: &[AllocId]) {
        let jobs: BTreeSet<JobId> = allocs
            .iter()
            .map(|id| self.allocs[id.index()].group.job)
            .collect();
        for job in jobs {
            self.enqueue_eval(job);
        }
    }
}
