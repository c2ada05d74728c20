//! What `plansim explain` finds, as data: the divergence, each run's side of
//! it, what followed and the metric differences (the JSON of `--format
//! json`; text.rs words it).

use serde::Serialize;

use crate::model::ids::VolumeId;
use crate::model::metrics::Metrics;
use crate::model::policy::Policy;
use crate::model::time::Millis;
use crate::sim::trace::TraceRecord;

/// The whole explanation (the JSON of `--format json`).
#[derive(Clone, Debug, Serialize)]
pub struct Explanation {
    pub scenario: String,
    pub seed: u64,
    pub baseline: String,
    pub candidate: String,
    /// `None` when the two runs made the same decisions throughout.
    pub divergence: Option<Divergence>,
    /// Metrics on which the runs differ, in column order.
    pub metric_differences: Vec<MetricDifference>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Divergence {
    /// Simulated seconds, three decimals.
    pub time_s: String,
    #[serde(skip)]
    pub at: Millis,
    /// `registration`, `placement`, `claim` or `deployment`.
    pub kind: &'static str,
    /// The allocation (`job.group[index]`) or, for a registration, the job.
    pub subject: String,
    /// The volume, for a claim.
    pub volume: Option<String>,
    /// The evaluation that made a placement decision, in words.
    pub evaluation: Option<String>,
    pub baseline: SideDecision,
    pub candidate: SideDecision,
}

/// One run's side of the divergence.
#[derive(Clone, Debug, Serialize)]
pub struct SideDecision {
    pub policy: String,
    /// One of the decision outcomes (`placed`, `not_placed`,
    /// `plan_rejected`, `granted`, `refused_alloc_fails`,
    /// `refused_client_retries`, `accepted`, `rejected`, `promoted`,
    /// `succeeded`, `failed`), or `none` when
    /// this run never faced the question.
    pub outcome: &'static str,
    /// What it decided, in words.
    pub decided: String,
    pub node: Option<String>,
    /// What it saw: per volume, the claims it counted and those it ignored.
    pub saw: Vec<String>,
    /// The check it ran and why it passed or refused.
    pub check: Vec<String>,
    /// The reason given, in Nomad's words where Nomad has them.
    pub reason: Option<String>,
    /// What followed in this run for the allocation(s) and volume(s) concerned.
    pub consequences: Vec<Step>,
    /// Steps left out of `consequences` (shown summarised).
    pub more_steps: Option<String>,
    /// Violation windows of the volume(s) concerned, after the divergence.
    pub violation_windows: Vec<Window>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Step {
    pub time_s: String,
    pub event: &'static str,
    pub what: String,
    /// The same step happened again this many times right after.
    pub repeats: u32,
    /// When the last repeat happened.
    pub last_s: Option<String>,
}

/// A stretch of time a volume spent published in breach of its access mode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Window {
    pub volume: String,
    #[serde(skip)]
    pub volume_id: VolumeId,
    pub from_s: String,
    pub to_s: String,
    pub seconds: String,
    /// The window was still open at the end of the run.
    pub until_end: bool,
    #[serde(skip)]
    pub from: Millis,
    #[serde(skip)]
    pub to: Millis,
}

#[derive(Clone, Debug, Serialize)]
pub struct MetricDifference {
    pub metric: &'static str,
    pub baseline: String,
    pub candidate: String,
    /// How much of the difference the divergence accounts for.
    pub explained_by: String,
}

/// One traced run, as explain reads it.
#[derive(Clone, Copy, Debug)]
pub struct RunView<'a> {
    pub policy: Policy,
    pub trace: &'a [TraceRecord],
    pub metrics: &'a Metrics,
}
