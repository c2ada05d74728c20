//! The event log of a run (`--trace`): what happened, when, to what. Records
//! hold ids; the report layer turns them into names.

use crate::model::ids::{GroupRef, JobId, NodeId, VolumeId};
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
}

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
