//! The event log of a run (`--trace`): what happened, when, to what. Records
//! hold ids; the report layer turns them into names.

use crate::model::access::{ClaimCounts, ClaimMode};
use crate::model::ids::{AllocId, GroupRef, JobId, NodeId, VolumeId};
use crate::model::time::Millis;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceKind {
    JobSubmitted,
    JobRejected,
    Eval,
    Placed,
    Infeasible,
    PlanRejected,
    Stopped,
    ClaimGranted,
    ClaimRejected,
    Violation,
    ViolationEnded,
    Published,
    Running,
    Failed,
    Complete,
    Lost,
    ClaimReleased,
    NodeDown,
    NodeUp,
    NodeDrain,
    PluginHealth,
    Scale,
    StopJob,
    UpdateJob,
    DeploymentStarted,
    DeploymentPromoted,
    DeploymentSucceeded,
    DeploymentFailed,
    DeploymentReverted,
    NodeDisconnect,
    NodeReconnect,
    NodeDisconnected,
    Unknown,
    Reconnected,
    ClientStopped,
    Migrate,
    DrainComplete,
    NodeDetachFailed,
    PromoteDeployment,
    /// A task group's first failed placement in an evaluation: its
    /// AllocMetric's `nomad job status` lines.
    PlacementFailure,
    /// An `alloc_fail` event: the allocation it failed, or why it did
    /// nothing.
    AllocFail,
    /// A node plugin's task restarts (`plugin_restart`), and is back.
    PluginRestart,
    /// `nomad volume detach`: what it released, or why it failed.
    VolumeDetach,
    /// A volume is registered (`register_at`).
    VolumeRegistered,
    /// A ControllerPublish or NodePublish failed at the storage provider
    /// (`controller_publish_failure` / `node_publish_failure`, or a
    /// scripted `publish_failure`); detail: the stage and what follows.
    PublishFailure,
    /// A release's ControllerUnpublish found no healthy controller: the
    /// claim waits until one is (the volume watcher retries then).
    ControllerDetachWaiting,
    /// `nomad job dispatch` of a parameterized job; detail: the child.
    Dispatch,
    /// A periodic launch the leader's dispatcher skipped; detail: why.
    LaunchSkipped,
}

/// How the claim RPC's error begins when its ControllerPublish fails
/// (`csi_endpoint.go:CSIVolume.Claim` wraps it so): hunt tells these
/// refusals apart from the access-mode ones.
pub const CONTROLLER_PUBLISH_ERROR: &str = "controller publish: ";

impl TraceKind {
    pub fn name(self) -> &'static str {
        match self {
            TraceKind::JobSubmitted => "job_submitted",
            TraceKind::JobRejected => "job_rejected",
            TraceKind::Eval => "eval",
            TraceKind::Placed => "placed",
            TraceKind::Infeasible => "infeasible",
            TraceKind::PlanRejected => "plan_rejected",
            TraceKind::Stopped => "stopped",
            TraceKind::ClaimGranted => "claim_granted",
            TraceKind::ClaimRejected => "claim_rejected",
            TraceKind::Violation => "violation",
            TraceKind::ViolationEnded => "violation_ended",
            TraceKind::Published => "published",
            TraceKind::Running => "running",
            TraceKind::Failed => "failed",
            TraceKind::Complete => "complete",
            TraceKind::Lost => "lost",
            TraceKind::ClaimReleased => "claim_released",
            TraceKind::NodeDown => "node_down",
            TraceKind::NodeUp => "node_up",
            TraceKind::NodeDrain => "node_drain",
            TraceKind::PluginHealth => "plugin_health",
            TraceKind::Scale => "scale",
            TraceKind::StopJob => "stop_job",
            TraceKind::UpdateJob => "update_job",
            TraceKind::DeploymentStarted => "deployment_started",
            TraceKind::DeploymentPromoted => "deployment_promoted",
            TraceKind::DeploymentSucceeded => "deployment_succeeded",
            TraceKind::DeploymentFailed => "deployment_failed",
            TraceKind::DeploymentReverted => "deployment_reverted",
            TraceKind::NodeDisconnect => "node_disconnect",
            TraceKind::NodeReconnect => "node_reconnect",
            TraceKind::NodeDisconnected => "node_disconnected",
            TraceKind::Unknown => "unknown",
            TraceKind::Reconnected => "reconnected",
            TraceKind::ClientStopped => "client_stopped",
            TraceKind::Migrate => "migrate",
            TraceKind::DrainComplete => "drain_complete",
            TraceKind::NodeDetachFailed => "node_detach_failed",
            TraceKind::PromoteDeployment => "promote_deployment",
            TraceKind::PlacementFailure => "placement_failure",
            TraceKind::AllocFail => "alloc_fail",
            TraceKind::PluginRestart => "plugin_restart",
            TraceKind::VolumeDetach => "volume_detach",
            TraceKind::VolumeRegistered => "volume_registered",
            TraceKind::PublishFailure => "publish_failure",
            TraceKind::ControllerDetachWaiting => "controller_detach_waiting",
            TraceKind::Dispatch => "dispatch",
            TraceKind::LaunchSkipped => "launch_skipped",
        }
    }
}

/// One line of the trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceRecord {
    pub time: Millis,
    pub kind: TraceKind,
    pub job: Option<JobId>,
    pub group: Option<GroupRef>,
    /// The allocation's group and index: its name is `<job>.<group>[<index>]`.
    pub alloc_index: Option<u32>,
    pub node: Option<NodeId>,
    pub volume: Option<VolumeId>,
    pub detail: String,
    /// The allocation's id, on the rows the claim bookkeeping reads
    /// (`claim_granted`, `claim_released`, `node_detach_failed` and the
    /// terminal rows): a replacement placed on its predecessor's node has
    /// its name, and the predecessor's claim may outlast the replacement's
    /// (a stranded unmount), so the name alone cannot say whose claim a row
    /// is about. Not part of the trace CSV (`None` for a row read back).
    pub alloc_id: Option<AllocId>,
    /// What the scheduler saw when it decided a placement: one entry on a
    /// `placed` or `infeasible` row, one per refused placement on a
    /// `plan_rejected` row; empty elsewhere. Filled only when tracing, for
    /// `plansim explain`; it is not part of the trace CSV.
    pub seen: Vec<PlacementSeen>,
}

impl TraceRecord {
    pub fn new(time: Millis, kind: TraceKind) -> Self {
        TraceRecord {
            time,
            kind,
            job: None,
            group: None,
            alloc_index: None,
            node: None,
            volume: None,
            detail: String::new(),
            alloc_id: None,
            seen: Vec::new(),
        }
    }

    pub fn job(mut self, job: JobId) -> Self {
        self.job = Some(job);
        self
    }

    pub fn alloc(mut self, group: GroupRef, index: u32) -> Self {
        self.job = Some(group.job);
        self.group = Some(group);
        self.alloc_index = Some(index);
        self
    }

    /// The allocation's id as well (see `alloc_id`).
    pub fn id(mut self, id: AllocId) -> Self {
        self.alloc_id = Some(id);
        self
    }

    pub fn group(mut self, group: GroupRef) -> Self {
        self.job = Some(group.job);
        self.group = Some(group);
        self
    }

    pub fn node(mut self, node: NodeId) -> Self {
        self.node = Some(node);
        self
    }

    pub fn volume(mut self, volume: VolumeId) -> Self {
        self.volume = Some(volume);
        self
    }

    pub fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = detail.into();
        self
    }
}

impl TraceRecord {
    pub fn seen(mut self, seen: Vec<PlacementSeen>) -> Self {
        self.seen = seen;
        self
    }
}

/// One placement decision as the scheduler made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacementSeen {
    pub group: GroupRef,
    pub index: u32,
    /// The evaluation that planned it: the n-th `eval` row of the run, from 1.
    pub eval: u64,
    /// The node the scheduler picked; `None` when no node was feasible.
    pub node: Option<NodeId>,
    /// Each volume the allocation mounts, as the claim check saw it.
    pub volumes: Vec<VolumeSeen>,
}

/// A volume as one scheduler's claim check saw it for one placement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeSeen {
    pub volume: VolumeId,
    /// The claim the allocation asks for.
    pub request: ClaimMode,
    /// Claims the server holds and has not freed (granted, or being released).
    pub claimed: SeenClaims,
    /// Live allocations already placed that have not claimed it yet.
    pub unclaimed: SeenClaims,
    /// Placements earlier in the plan being built.
    pub in_plan: SeenClaims,
    /// What the policy's check counted against the access mode; the rest of
    /// the above it ignored.
    pub counted: ClaimCounts,
}

/// Claims of one kind: how many, and the first few holders.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeenClaims {
    pub counts: ClaimCounts,
    /// At most [`SEEN_HOLDERS`] holders, oldest first: (group, index, mode).
    pub holders: Vec<(GroupRef, u32, ClaimMode)>,
}

/// Holders listed per kind of claim: a volume shared by thousands of
/// allocations must not make every trace row carry thousands of names.
pub const SEEN_HOLDERS: usize = 8;

/// Most trace rows one run keeps in memory (MAX_TRACE_ROWS, with
/// `--trace`): a run whose trace would be longer stops (exit 2) rather than
/// holding an unbounded log; about 100 bytes a row, plus its CSV.
pub const MAX_TRACE_ROWS: usize = 1_000_000;

/// Where a traced run's rows go, one at a time as the run produces them:
/// kept in memory (`Vec<TraceRecord>`: `plansim explain`, `run --report`,
/// the hunt, tests) or streamed by a writer the shell provides (`run
/// --trace` writes CSV as it goes, so a long run's trace is never held).
/// The simulation only calls it; it knows nothing of files.
pub trait TraceSink {
    /// Takes the next row.
    fn record(&mut self, record: TraceRecord);
    /// Rows taken so far.
    fn rows(&self) -> u64;
    /// Most rows this sink takes: a run whose trace would be longer stops
    /// there (`stopped_early`), naming the limit.
    fn max_rows(&self) -> (u64, &'static str) {
        (MAX_TRACE_ROWS as u64, "MAX_TRACE_ROWS")
    }
    /// Whether rows should carry what the scheduler saw (`seen`): only
    /// readers of the records themselves use it, never the CSV.
    fn wants_seen(&self) -> bool {
        true
    }
    /// The run is over: no row follows (a writer flushes and closes here).
    fn end(&mut self) {}
}

impl TraceSink for Vec<TraceRecord> {
    fn record(&mut self, record: TraceRecord) {
        self.push(record);
    }

    fn rows(&self) -> u64 {
        self.len() as u64
    }
}
