//! Job registration and the scenario's timeline of operator actions.

use std::collections::BTreeSet;

use super::Simulation;
use super::state::{AllocState, JobStatus, NodeStatus};
use super::trace::{TraceKind, TraceRecord};
use crate::model::access::{AccessMode, ClaimMode};
use crate::model::ids::{AllocId, GroupRef, JobId, NodeId};
use crate::model::scenario::{TimelineAction, VolumeRequest, VolumeSource};

impl Simulation<'_> {
    pub(super) fn submit_job(&mut self, job: JobId) {
        self.jobs_submitted += 1;
        if let Some(problem) = self.registration_problem(job) {
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

    /// Nomad's job validation of each CSI volume request
    /// (structs/volumes.go `VolumeRequest.Validate`). Since 1.1.0, at every
    /// pinned release: the request needs an access mode, and a reader-only
    /// mode must be mounted read-only. From 1.3 (validate only; see
    /// `Behaviour::validates_registration`): a group with count > 1 may not
    /// share a single-node volume, or write a multi-node-single-writer one,
    /// without `per_alloc`. The modes checked are the request's.
    fn registration_problem(&self, job: JobId) -> Option<String> {
        if let Some(problem) = self.disconnect_problem(job) {
            return Some(problem);
        }
        let spec = &self.scenario.jobs[job.index()];
        for (g, group) in spec.groups.iter().enumerate() {
            let count = self.jobs[job.index()].counts[g];
            for request in &group.volumes {
                let per_alloc = matches!(request.source, VolumeSource::PerAlloc { .. });
                let problem = match self.request_access_mode(request) {
                    None => Some("CSI volumes must have an access mode".to_string()),
                    Some(mode) if !mode.allows_writers() && request.mode == ClaimMode::Write => {
                        Some(format!("{mode} volumes must be read-only"))
                    }
                    Some(mode)
                        if self.behaviour.validates_registration && count > 1 && !per_alloc =>
                    {
                        match mode {
                            AccessMode::SingleNodeReaderOnly => Some("allows only one reader"),
                            AccessMode::SingleNodeWriter => {
                                Some("allows only one reader or writer")
                            }
                            AccessMode::MultiNodeSingleWriter
                                if request.mode == ClaimMode::Write =>
                            {
                                Some("allows only one writer")
                            }
                            _ => None,
                        }
                        .map(|rule| format!("volume with {mode} access mode {rule}"))
                    }
                    Some(_) => None,
                };
                if let Some(problem) = problem {
                    return Some(format!(
                        "task group {} volume {}: {problem}",
                        group.name, request.alias
                    ));
                }
            }
        }
        None
    }

    /// The access mode a request is made in: its own, or the shorthand of
    /// the volume it names (for `per_alloc`, the one shorthand all the
    /// `<source>[N]` volumes share; `None` if any lacks it or they differ).
    fn request_access_mode(&self, request: &VolumeRequest) -> Option<AccessMode> {
        if request.access_mode.is_some() {
            return request.access_mode;
        }
        match &request.source {
            VolumeSource::Shared(volume) => self.scenario.volumes[volume.index()].shorthand,
            VolumeSource::PerAlloc { base } => {
                let prefix = format!("{base}[");
                let mut modes = self
                    .scenario
                    .volume_by_name
                    .range(prefix.clone()..)
                    .take_while(|(name, _)| name.starts_with(&prefix))
                    .map(|(_, v)| self.scenario.volumes[v.index()].shorthand);
                let first = modes.next().flatten()?;
                modes.all(|m| m == Some(first)).then_some(first)
            }
        }
    }

    pub(super) fn apply_timeline(&mut self, index: usize) {
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
                self.note_plugin_marks(&live, super::plugin_drain::PluginMark::Forced);
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
                self.cancel_deployment(job, "the job stopped");
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
    pub(super) fn node_down(&mut self, node: NodeId) {
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

    pub(super) fn live_allocs_on(&self, node: NodeId) -> Vec<AllocId> {
        self.nodes[node.index()].allocs.iter().copied().collect()
    }

    pub(super) fn evaluate_jobs_of(&mut self, allocs: &[AllocId]) {
        let jobs: BTreeSet<JobId> = allocs
            .iter()
            .map(|id| self.allocs[id.index()].group.job)
            .collect();
        for job in jobs {
            self.enqueue_eval(job);
        }
    }
}
