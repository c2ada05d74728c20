//! `events:`: the timeline, each event's one action resolved against the
//! nodes, plugins and jobs.

use std::collections::BTreeMap;

use serde_saphyr::{Location, Spanned};

use super::budget::check_allocation_count;
use crate::model::ids::{GroupRef, JobId, NodeId, PluginId, VolumeId};
use crate::model::scenario::{
    JobSpec, NodeSpec, PluginSpec, PublishStage, TimedEvent, TimelineAction, VolumeSpec,
};
use crate::model::time::Millis;
use crate::scenario::error::{Fail, fail};
use crate::scenario::limits;
use crate::scenario::raw::{RawEvent, RawNodeDown, RawNodeDrain, RawPublishStage};

/// How a timeline reference that names no node or job is treated.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum DanglingEvents {
    /// An error, as for any bad reference (scenario files as written).
    Refuse,
    /// The event is left out with a warning (experiment variants: shrinking
    /// a cluster can leave an event naming a node the variant lacks).
    Skip,
}

enum EventError {
    Invalid(Fail),
    /// The event names a node or job (or plugin on a node) that does not exist.
    Dangling(String),
}

impl From<Fail> for EventError {
    fn from(fail: Fail) -> Self {
        EventError::Invalid(fail)
    }
}

pub(super) fn resolve_events(
    raw: &[Spanned<RawEvent>],
    horizon: Millis,
    nodes: &[NodeSpec],
    jobs: &[JobSpec],
    dangling: DanglingEvents,
    warnings: &mut Vec<String>,
    storage: EventStorage,
) -> Result<(Vec<TimedEvent>, Vec<Location>), Fail> {
    if raw.len() > limits::MAX_EVENTS {
        return Err((
            None,
            format!("events: more than {} (MAX_EVENTS)", limits::MAX_EVENTS),
        ));
    }
    if raw.is_empty() {
        // The name indexes below cost more than the rest of loading on a
        // 40,000-node snapshot; a scenario without events needs none.
        return Ok((Vec::new(), Vec::new()));
    }
    let node_ids: BTreeMap<&str, NodeId> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), NodeId::from_index(i)))
        .collect();
    let job_ids: BTreeMap<&str, JobId> = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| (j.name.as_str(), JobId::from_index(i)))
        .collect();
    let context = EventContext {
        horizon,
        nodes,
        plugin_ids: storage.plugin_ids,
        jobs,
        node_ids,
        job_ids,
        storage,
    };
    let mut events = Vec::with_capacity(raw.len());
    let mut positions = Vec::with_capacity(raw.len());
    for (index, entry) in raw.iter().enumerate() {
        match context.resolve(index, entry) {
            Ok(event) => {
                events.push(event);
                positions.push(entry.referenced);
            }
            Err(EventError::Dangling(message)) if dangling == DanglingEvents::Skip => {
                warnings.push(format!("{message}; the event is left out"));
            }
            Err(EventError::Dangling(message)) => return fail(entry.referenced, message),
            Err(EventError::Invalid(failure)) => return Err(failure),
        }
    }
    Ok((events, positions))
}

struct EventContext<'a> {
    horizon: Millis,
    nodes: &'a [NodeSpec],
    plugin_ids: &'a BTreeMap<&'a str, PluginId>,
    jobs: &'a [JobSpec],
    node_ids: BTreeMap<&'a str, NodeId>,
    job_ids: BTreeMap<&'a str, JobId>,
    storage: EventStorage<'a>,
}

/// The volumes and plugins events about storage refer to.
#[derive(Clone, Copy)]
pub(super) struct EventStorage<'a> {
    pub plugin_ids: &'a BTreeMap<&'a str, PluginId>,
    pub volume_ids: &'a BTreeMap<String, VolumeId>,
    pub volumes: &'a [VolumeSpec],
    pub plugins: &'a [PluginSpec],
}

impl EventContext<'_> {
    /// A `scale` or `stop_job` acts on a submitted job: one written for
    /// before the job's `submit_at` (or at the same instant: timeline
    /// events come first) is refused rather than silently ignored.
    fn check_submitted(
        &self,
        at_time: Millis,
        job: JobId,
        path: &str,
        at: Location,
    ) -> Result<(), Fail> {
        let spec = &self.jobs[job.index()];
        if at_time <= spec.submit_at {
            return fail(
                at,
                format!(
                    "{path}: at {at_time}s job \"{}\" is not submitted yet (submit_at: {}s; timeline events at the same instant come before submissions): move the event after {}s, or submit the job earlier",
                    spec.name, spec.submit_at, spec.submit_at
                ),
            );
        }
        Ok(())
    }

    fn resolve(&self, index: usize, entry: &Spanned<RawEvent>) -> Result<TimedEvent, EventError> {
        let at = entry.referenced;
        let event = &entry.value;
        let path = format!("events[{index}]");
        if event.at.0 > self.horizon {
            return Err(EventError::Invalid((
                Some(at),
                format!(
                    "{path}.at: {}s is beyond the horizon of {}s; the event would never happen",
                    event.at.0, self.horizon
                ),
            )));
        }
        let refs = EventRefs {
            context: self,
            path: &path,
            at,
        };
        let mut actions = Vec::new();
        node_actions(event, &refs, &mut actions)?;
        self.job_actions(event, &refs, &mut actions)?;
        self.volume_actions(event, &refs, &mut actions)?;
        self.storage_actions(event, &refs, &mut actions)?;
        let action = match actions.len() {
            1 => actions.pop().expect("one action"),
            0 => {
                return Err(EventError::Invalid((
                    Some(at),
                    format!(
                        "{path}: no action; give one of node_down, node_up, node_drain, scale, plugin_health, stop_job, update_job, node_disconnect, node_reconnect, promote_deployment, alloc_fail, plugin_restart, volume_detach, publish_failure, dispatch"
                    ),
                )));
            }
            n => {
                return Err(EventError::Invalid((
                    Some(at),
                    format!("{path}: give exactly one action per event, found {n}"),
                )));
            }
        };
        Ok(TimedEvent {
            at: event.at.0,
            action,
        })
    }

    /// The event's job and plugin actions (scale, plugin_health, stop_job,
    /// plugin_controller_health, update_job, promote_deployment).
    fn job_actions(
        &self,
        event: &RawEvent,
        refs: &EventRefs,
        actions: &mut Vec<TimelineAction>,
    ) -> Result<(), EventError> {
        let (path, at) = (refs.path, refs.at);
        if let Some(scale) = &event.scale {
            let job_id = refs.job(&scale.job, "scale.job")?;
            let group = refs.group(job_id, &scale.job, &scale.group, "scale.group")?;
            super::periodic::refuse_parent(self.jobs, job_id, &format!("{path}.scale"), at)?;
            check_allocation_count(scale.count.0, &format!("{path}.scale.count"), at)?;
            self.check_submitted(event.at.0, job_id, &format!("{path}.scale"), at)?;
            crate::scenario::system::check_system_scale(
                self.jobs[job_id.index()].kind,
                scale.count.0,
                &format!("{path}.scale"),
                at,
            )?;
            actions.push(TimelineAction::Scale {
                job: job_id,
                group,
                count: scale.count.0,
            });
        }
        if let Some(health) = &event.plugin_health {
            let (plugin, node_id) =
                refs.node_plugin(&health.plugin, &health.node, "plugin_health")?;
            actions.push(TimelineAction::PluginHealth {
                plugin,
                node: node_id,
                healthy: health.healthy,
            });
        }
        if let Some(name) = &event.stop_job {
            let job_id = refs.job(name, "stop_job")?;
            self.check_submitted(event.at.0, job_id, &format!("{path}.stop_job"), at)?;
            actions.push(TimelineAction::StopJob(job_id));
        }
        if let Some(health) = &event.plugin_controller_health {
            let plugin = refs.plugin(&health.plugin, "plugin_controller_health.plugin")?;
            actions.push(TimelineAction::PluginControllerHealth {
                plugin,
                healthy: health.healthy,
            });
        }
        if let Some(update) = &event.update_job {
            let job_id = refs.job(&update.job, "update_job.job")?;
            super::periodic::refuse_parent(self.jobs, job_id, &format!("{path}.update_job"), at)?;
            let mut overrides = Vec::new();
            for (name, raw) in update.groups.iter().flatten() {
                let group = refs.group(job_id, &update.job, name, "update_job.groups")?;
                if let Some(count) = raw.count {
                    check_allocation_count(
                        count.0,
                        &format!("{path}.update_job.groups.{name}.count"),
                        at,
                    )?;
                }
                overrides.push(crate::scenario::update::override_of(group, raw));
            }
            self.check_submitted(event.at.0, job_id, &format!("{path}.update_job"), at)?;
            actions.push(TimelineAction::UpdateJob {
                job: job_id,
                version: None,
                overrides,
            });
        }
        if let Some(name) = &event.promote_deployment {
            let job_id = refs.job(name, "promote_deployment")?;
            let field = format!("{path}.promote_deployment");
            super::periodic::refuse_parent(self.jobs, job_id, &field, at)?;
            self.check_submitted(
                event.at.0,
                job_id,
                &format!("{path}.promote_deployment"),
                at,
            )?;
            actions.push(TimelineAction::PromoteDeployment(job_id));
        }
        if let Some(dispatch) = &event.dispatch {
            let job_id = refs.job(&dispatch.job, "dispatch.job")?;
            let field = format!("{path}.dispatch");
            self.check_submitted(event.at.0, job_id, &field, at)?;
            let action =
                super::periodic::resolve_dispatch(self.jobs, job_id, dispatch, &field, at)?;
            actions.push(action);
        }
        if let Some(name) = &event.alloc_fail {
            let (group, index) = refs.alloc(name, "alloc_fail", event.at.0)?;
            super::periodic::refuse_parent(
                self.jobs,
                group.job,
                &format!("{path}.alloc_fail"),
                at,
            )?;
            actions.push(TimelineAction::AllocFail { group, index });
        }
        Ok(())
    }
}

impl EventContext<'_> {
    /// The event's volume and plugin-restart actions (plugin_restart,
    /// volume_detach).
    fn volume_actions(
        &self,
        event: &RawEvent,
        refs: &EventRefs,
        actions: &mut Vec<TimelineAction>,
    ) -> Result<(), EventError> {
        let (path, at) = (refs.path, refs.at);
        if let Some(restart) = &event.plugin_restart {
            let (plugin, node_id) =
                refs.node_plugin(&restart.plugin, &restart.node, "plugin_restart")?;
            if restart.down_for.0 == Millis::ZERO {
                return Err(EventError::Invalid((
                    Some(at),
                    format!(
                        "{path}.plugin_restart.down_for: 0s; a restart takes some time (give e.g. 30s)"
                    ),
                )));
            }
            actions.push(TimelineAction::PluginRestart {
                plugin,
                node: node_id,
                down_for: restart.down_for.0,
            });
        }
        if let Some(detach) = &event.volume_detach {
            let volume = self.volume(&detach.volume, &format!("{path}.volume_detach"), at)?;
            let node_id = refs.node(&detach.node, "volume_detach.node")?;
            actions.push(TimelineAction::VolumeDetach {
                volume,
                node: node_id,
            });
        }
        Ok(())
    }
}

impl EventContext<'_> {
    /// The volume an event's `<field>.volume` names.
    fn volume(&self, name: &str, field: &str, at: Location) -> Result<VolumeId, EventError> {
        self.storage.volume_ids.get(name).copied().ok_or_else(|| {
            EventError::Invalid((
                Some(at),
                format!("{field}.volume: no volume with id \"{name}\" under volumes"),
            ))
        })
    }

    /// The event's storage actions (publish_failure).
    fn storage_actions(
        &self,
        event: &RawEvent,
        refs: &EventRefs,
        actions: &mut Vec<TimelineAction>,
    ) -> Result<(), EventError> {
        let (path, at) = (refs.path, refs.at);
        if let Some(failure) = &event.publish_failure {
            let field = format!("{path}.publish_failure");
            let volume = self.volume(&failure.volume, &field, at)?;
            let stage = match failure.stage {
                RawPublishStage::Controller => PublishStage::Controller,
                RawPublishStage::Node => PublishStage::Node,
            };
            let plugin = &self.storage.plugins[self.storage.volumes[volume.index()].plugin.index()];
            if stage == PublishStage::Controller && !plugin.controller_required {
                return Err(EventError::Invalid((
                    Some(at),
                    format!(
                        "{field}.stage: volume \"{}\"'s plugin \"{}\" has no controller (controller_required: false), so no ControllerPublish is made; use stage: node, or set controller_required",
                        failure.volume, plugin.name
                    ),
                )));
            }
            if failure.count.0 == 0 {
                return Err(EventError::Invalid((
                    Some(at),
                    format!("{field}.count: 0 publishes would fail; give at least 1"),
                )));
            }
            actions.push(TimelineAction::PublishFailure {
                volume,
                stage,
                count: failure.count.0,
            });
        }
        Ok(())
    }
}

/// The event's node actions (node_down, node_up, node_drain,
/// node_disconnect, node_reconnect).
fn node_actions(
    event: &RawEvent,
    refs: &EventRefs,
    actions: &mut Vec<TimelineAction>,
) -> Result<(), EventError> {
    match &event.node_down {
        Some(RawNodeDown::Node(name)) => {
            actions.push(TimelineAction::NodeDown(refs.node(name, "node_down")?));
        }
        Some(RawNodeDown::Of(of)) => {
            let (group, index) = refs.alloc(&of.node_of, "node_down.node_of", event.at.0)?;
            actions.push(TimelineAction::NodeDownOf { group, index });
        }
        None => {}
    }
    if let Some(name) = &event.node_up {
        actions.push(TimelineAction::NodeUp(refs.node(name, "node_up")?));
    }
    match &event.node_drain {
        Some(RawNodeDrain::Node(name)) => {
            actions.push(TimelineAction::NodeDrain(refs.node(name, "node_drain")?));
        }
        Some(RawNodeDrain::Spec(spec)) => actions.push(TimelineAction::NodeDrainSpec(
            refs.node(&spec.node, "node_drain.node")?,
            crate::scenario::nodes::drain_spec(spec),
        )),
        None => {}
    }
    if let Some(name) = &event.node_disconnect {
        actions.push(TimelineAction::NodeDisconnect(
            refs.node(name, "node_disconnect")?,
        ));
    }
    if let Some(name) = &event.node_reconnect {
        actions.push(TimelineAction::NodeReconnect(
            refs.node(name, "node_reconnect")?,
        ));
    }
    Ok(())
}

/// The names one event refers to, looked up with the event's path and
/// place for the message.
struct EventRefs<'c> {
    context: &'c EventContext<'c>,
    path: &'c str,
    at: Location,
}

impl EventRefs<'_> {
    fn node(&self, name: &str, field: &str) -> Result<NodeId, EventError> {
        self.context.node_ids.get(name).copied().ok_or_else(|| {
            EventError::Dangling(format!(
                "{}.{field}: no node with id \"{name}\" under nodes",
                self.path
            ))
        })
    }

    fn job(&self, name: &str, field: &str) -> Result<JobId, EventError> {
        self.context.job_ids.get(name).copied().ok_or_else(|| {
            EventError::Dangling(format!(
                "{}.{field}: no job with id \"{name}\" under jobs",
                self.path
            ))
        })
    }

    /// An unknown plugin is a bad event, not a dangling reference.
    fn plugin(&self, name: &str, field: &str) -> Result<PluginId, EventError> {
        self.context.plugin_ids.get(name).copied().ok_or_else(|| {
            EventError::Invalid((
                Some(self.at),
                format!(
                    "{}.{field}: no plugin with id \"{name}\" under plugins",
                    self.path
                ),
            ))
        })
    }

    /// The plugin and node of an event about one node's plugin
    /// (`<field>: {plugin, node}`): the node must run it.
    fn node_plugin(
        &self,
        plugin: &str,
        node: &str,
        field: &str,
    ) -> Result<(PluginId, NodeId), EventError> {
        let plugin_id = self.plugin(plugin, &format!("{field}.plugin"))?;
        let node_id = self.node(node, &format!("{field}.node"))?;
        let runs = self.context.nodes[node_id.index()]
            .csi_plugins
            .iter()
            .any(|p| p.plugin == plugin_id);
        if !runs {
            return Err(EventError::Dangling(format!(
                "{}.{field}: node \"{node}\" does not run plugin \"{plugin}\"",
                self.path
            )));
        }
        Ok((plugin_id, node_id))
    }

    /// An allocation named the Nomad way, `<job>.<group>[<index>]`, of a
    /// job submitted before `at_time` and not a system job (whose every
    /// allocation is `<job>.<group>[0]`, one per node: the name does not
    /// say which). The index need not be below the count: an event naming
    /// no live allocation when it happens does nothing (a trace row says so).
    fn alloc(
        &self,
        name: &str,
        field: &str,
        at_time: Millis,
    ) -> Result<(GroupRef, u32), EventError> {
        let path = self.path;
        let Some((group_name, index)) = super::initial::split_alloc_name(name) else {
            return Err(EventError::Invalid((
                Some(self.at),
                format!(
                    "{path}.{field}: \"{name}\" is not an allocation name: expected <job>.<group>[<index>]"
                ),
            )));
        };
        let Some((j, g)) = super::initial::find_group(self.context.jobs, group_name) else {
            return Err(EventError::Dangling(format!(
                "{path}.{field}: no job and group under jobs match \"{group_name}\""
            )));
        };
        let job = JobId::from_index(j);
        if self.context.jobs[j].is_system() {
            return Err(EventError::Invalid((
                Some(self.at),
                format!(
                    "{path}.{field}: job \"{}\" is a system or sysbatch job: each of its allocations is named \"{group_name}[0]\", one per node, so the name does not say which",
                    self.context.jobs[j].name
                ),
            )));
        }
        self.context
            .check_submitted(at_time, job, &format!("{path}.{field}"), self.at)?;
        Ok((GroupRef::new(job, g), index))
    }

    fn group(
        &self,
        job_id: JobId,
        job_name: &str,
        name: &str,
        field: &str,
    ) -> Result<usize, EventError> {
        self.context.jobs[job_id.index()]
            .groups
            .iter()
            .position(|g| g.name == name)
            .ok_or_else(|| {
                EventError::Invalid((
                    Some(self.at),
                    format!(
                        "{}.{field}: job \"{job_name}\" has no group \"{name}\"",
                        self.path
                    ),
                ))
            })
    }
}
