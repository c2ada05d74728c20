//! The timeline of a resolved scenario: the events that happen at given
//! times (`events:`), what they change, and the allocations that exist
//! when the run starts (`initial_allocations:`). Every entity is named by
//! its id in the scenario's vectors (model/scenario.rs).

use super::ids::{GroupRef, JobId, NodeId, PluginId, VolumeId};
use super::time::Millis;

/// What an `update_job` changes in one group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupOverride {
    pub group: usize,
    pub count: Option<u32>,
    pub cpu: Option<u64>,
    pub memory: Option<u64>,
    pub healthy_after: Option<Millis>,
}

#[derive(Clone, Debug)]
pub struct TimedEvent {
    pub at: Millis,
    pub action: TimelineAction,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimelineAction {
    NodeDown(NodeId),
    NodeUp(NodeId),
    NodeDrain(NodeId),
    Scale {
        job: JobId,
        group: usize,
        count: u32,
    },
    PluginHealth {
        plugin: PluginId,
        node: NodeId,
        healthy: bool,
    },
    StopJob(JobId),
    /// The plugin's controller turns healthy or unhealthy.
    PluginControllerHealth {
        plugin: PluginId,
        healthy: bool,
    },
    /// `update_job`: a new version of the job (`version`, from 1; `None`
    /// until the loader numbers the versions).
    UpdateJob {
        job: JobId,
        version: Option<u32>,
        overrides: Vec<GroupOverride>,
    },
    /// A drain with Nomad's drain strategy (`node_drain: {node: ...}`); the
    /// short form `NodeDrain` is a forced drain.
    NodeDrainSpec(NodeId, DrainSpec),
    /// The client loses its servers: it stops heartbeating, its allocations
    /// keep running.
    NodeDisconnect(NodeId),
    /// The client reaches its servers again.
    NodeReconnect(NodeId),
    /// `promote_deployment`: the operator promotes the job's canaries
    /// (`nomad deployment promote`).
    PromoteDeployment(JobId),
    /// `alloc_fail: "job.group[index]"`: the task of the newest live
    /// allocation of that name fails for good (its restarts, if any, are
    /// spent): the client reports it failed.
    AllocFail {
        group: GroupRef,
        index: u32,
    },
    /// `node_down: {node_of: "job.group[index]"}`: the node holding the
    /// newest live allocation of that name at the event's time goes down.
    NodeDownOf {
        group: GroupRef,
        index: u32,
    },
    /// `plugin_restart`: the node plugin's task on `node` restarts and is
    /// back after `down_for`.
    PluginRestart {
        plugin: PluginId,
        node: NodeId,
        down_for: Millis,
    },
    /// `volume_detach`: `nomad volume detach <volume> <node>`.
    VolumeDetach {
        volume: VolumeId,
        node: NodeId,
    },
    /// `publish_failure`: the next `count` publishes of `volume` at `stage`
    /// fail at the storage provider.
    PublishFailure {
        volume: VolumeId,
        stage: PublishStage,
        count: u32,
    },
    /// `dispatch`: `nomad job dispatch` of the parameterized `job`, which
    /// registers `child` (the loader's stamped-out dispatched job).
    Dispatch {
        job: JobId,
        child: JobId,
        request: Box<super::periodic::DispatchRequest>,
    },
}

/// Where a publish of a volume fails: the server's ControllerPublish
/// (`nomad/csi_endpoint.go:controllerPublishVolume`) or the client's node
/// plugin (`client/pluginmanager/csimanager/volume.go:MountVolume`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PublishStage {
    Controller,
    Node,
}

impl PublishStage {
    /// The name scenario files use.
    pub fn name(self) -> &'static str {
        match self {
            PublishStage::Controller => "controller",
            PublishStage::Node => "node",
        }
    }
}

impl TimelineAction {
    /// The job the action is about, if it is about one.
    pub fn job(&self) -> Option<JobId> {
        match self {
            TimelineAction::Scale { job, .. }
            | TimelineAction::StopJob(job)
            | TimelineAction::UpdateJob { job, .. }
            | TimelineAction::PromoteDeployment(job)
            | TimelineAction::Dispatch { job, .. } => Some(*job),
            TimelineAction::AllocFail { group, .. } | TimelineAction::NodeDownOf { group, .. } => {
                Some(group.job)
            }
            // Every kind named, so a new one is decided here: the loader
            // and the hunt's mutations order events after this job.
            TimelineAction::NodeDown(_)
            | TimelineAction::NodeUp(_)
            | TimelineAction::NodeDrain(_)
            | TimelineAction::NodeDrainSpec(..)
            | TimelineAction::NodeDisconnect(_)
            | TimelineAction::NodeReconnect(_)
            | TimelineAction::PluginHealth { .. }
            | TimelineAction::PluginControllerHealth { .. }
            | TimelineAction::PluginRestart { .. }
            | TimelineAction::VolumeDetach { .. }
            | TimelineAction::PublishFailure { .. } => None,
        }
    }
}

/// An allocation that exists at time 0 (`initial_allocations`): running
/// ones hold their volume claims, granted and published, from the start;
/// pending ones were placed and have not claimed yet; failed ones failed
/// before the run began and hold nothing.
#[derive(Clone, Debug)]
pub struct InitialAllocation {
    pub group: crate::model::ids::GroupRef,
    pub index: u32,
    pub node: NodeId,
    pub status: InitialStatus,
}

/// The client status of an initial allocation (desired status run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitialStatus {
    Running,
    Pending,
    /// Client status failed, not yet rescheduled (no `NextAllocation`).
    Failed,
}

impl InitialStatus {
    pub fn name(self) -> &'static str {
        match self {
            InitialStatus::Running => "running",
            InitialStatus::Pending => "pending",
            InitialStatus::Failed => "failed",
        }
    }
}

/// A drain's strategy (Nomad's DrainSpec): allocations left at the deadline
/// are stopped at once; `None` is no deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrainSpec {
    pub deadline: Option<Millis>,
    pub ignore_system_jobs: bool,
}

impl Default for DrainSpec {
    /// `nomad node drain -enable`: a one hour deadline, system jobs drained.
    fn default() -> Self {
        DrainSpec {
            deadline: Some(Millis::from_secs(3600)),
            ignore_system_jobs: false,
        }
    }
}
