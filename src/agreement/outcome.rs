//! The outcome of one run as the agreement suite compares it, and the set
//! of outcomes over a scenario's seeds. Nomad's side is read from an
//! expected file (`expected.rs`); plansim's is built here from its runs.
//!
//! One run's outcome, on both sides:
//! - `placed`: per job the scenario registers (a job with no
//!   `initial_allocations`), the allocations placed before the job update,
//!   i.e. by the registration evaluations;
//! - `update`: `[placed, stopped]` of the updated job at or after the time
//!   of the scenario's `update_job` event (absent without one);
//! - `failures`: `[job, group, unplaced, lines]` of the latest evaluation
//!   of each registered job, the lines being `nomad job status`'s reason
//!   lines under the group's line, trimmed and sorted;
//! - `dist`: per (job, group), the registration placements per datacenter
//!   and per `rack` attribute (`-` for a node without one).
//!
//! A run whose job registration is refused (or a scenario that does not
//! load) is `Rejected`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::model::ids::{JobId, NodeId};
use crate::model::policy::Policy;
use crate::model::scenario::{Scenario, TimelineAction};
use crate::model::time::Millis;
use crate::report::table::failure_lines;
use crate::run::{RunPlan, RunResult, run_scenario_streamed};
use crate::sim::trace::{TraceKind, TraceRecord, TraceSink};

/// A group the latest evaluation left short: `[job, group, unplaced, lines]`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Failure {
    pub job: String,
    pub group: String,
    pub unplaced: u64,
    pub lines: Vec<String>,
}

/// What one run placed, stopped and reported (everything but `dist`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Placement {
    pub placed: BTreeMap<String, u64>,
    pub update: Option<[u64; 2]>,
    /// Sorted.
    pub failures: Vec<Failure>,
}

/// One run's outcome.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    Ran(Placement),
    /// The job (or the scenario) was refused at registration.
    Rejected,
    /// The oracle could not build the state (Nomad's side only).
    Error(String),
}

/// Per (job, group): placements per datacenter and per rack.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Deserialize)]
pub struct DistEntry(
    pub String,
    pub String,
    pub BTreeMap<String, u64>,
    pub BTreeMap<String, u64>,
);

/// A run's whole `dist`, sorted by (job, group).
pub type Dist = Vec<DistEntry>;

/// A scenario's outcomes over its seeds: which ones occurred, how often.
/// Comparisons use the sets; the counts weigh one-sided outcomes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OutcomeSet {
    pub seeds: u64,
    pub outcomes: BTreeMap<Outcome, u64>,
    /// Over the runs that were not rejected.
    pub dist_support: BTreeMap<Dist, u64>,
    /// The registration refusals' messages.
    pub rejected: BTreeSet<String>,
    /// The oracle's errors (Nomad's side only).
    pub error: BTreeSet<String>,
}

impl OutcomeSet {
    /// Every one of `seeds` runs refused, with `message` (a scenario that
    /// does not load).
    pub fn all_rejected(seeds: u64, message: String) -> OutcomeSet {
        OutcomeSet {
            seeds,
            outcomes: BTreeMap::from([(Outcome::Rejected, seeds)]),
            rejected: BTreeSet::from([message]),
            ..OutcomeSet::default()
        }
    }

    fn add(&mut self, outcome: Outcome, dist: Option<Dist>) {
        self.seeds += 1;
        *self.outcomes.entry(outcome).or_default() += 1;
        if let Some(dist) = dist {
            *self.dist_support.entry(dist).or_default() += 1;
        }
    }
}

/// What the outcome needs to know of a scenario, by id.
struct Frame {
    /// Per job: registered by the scenario (no initial allocations).
    registered: Vec<bool>,
    /// The `update_job` event: its job and time.
    update: Option<(JobId, Millis)>,
}

impl Frame {
    fn of(scenario: &Scenario) -> Frame {
        let mut registered = vec![true; scenario.jobs.len()];
        for alloc in &scenario.initial_allocations {
            registered[alloc.group.job.index()] = false;
        }
        let update = scenario.events.iter().find_map(|event| match event.action {
            TimelineAction::UpdateJob { job, .. } => Some((job, event.at)),
            _ => None,
        });
        Frame { registered, update }
    }
}

/// A trace sink that keeps only what the outcome counts from the `placed`
/// and `stopped` rows (the rows `--trace` writes, read the same way).
struct CountingSink<'a> {
    frame: &'a Frame,
    rows: u64,
    /// Per job index: placed before the update.
    placed: BTreeMap<usize, u64>,
    update: [u64; 2],
    /// Per (job index, group index): placements per node.
    per_group_node: BTreeMap<(usize, usize), BTreeMap<NodeId, u64>>,
}

impl TraceSink for CountingSink<'_> {
    fn record(&mut self, record: TraceRecord) {
        self.rows += 1;
        let placed = match record.kind {
            TraceKind::Placed => true,
            TraceKind::Stopped => false,
            _ => return,
        };
        if let Some((job, at)) = self.frame.update
            && record.time >= at
        {
            if record.job == Some(job) {
                self.update[usize::from(!placed)] += 1;
            }
            return;
        }
        let Some(job) = record.job.filter(|j| self.frame.registered[j.index()]) else {
            return;
        };
        if placed {
            *self.placed.entry(job.index()).or_default() += 1;
            if let (Some(group), Some(node)) = (record.group, record.node) {
                let key = (group.job.index(), group.group_index());
                *self
                    .per_group_node
                    .entry(key)
                    .or_default()
                    .entry(node)
                    .or_default() += 1;
            }
        }
    }

    fn rows(&self) -> u64 {
        self.rows
    }

    fn wants_seen(&self) -> bool {
        false
    }
}

/// plansim's outcome set for the scenario in `path` under `policy`, over
/// seeds `0..seeds` (what `plansim run --seeds N` runs). A file that does
/// not load counts as rejected by every seed.
pub fn plansim_outcomes(path: &Path, policy: Policy, seeds: u64) -> OutcomeSet {
    match crate::scenario::load_file(path) {
        Ok(scenario) => scenario_outcomes(&scenario, policy, seeds),
        Err(err) => OutcomeSet::all_rejected(seeds, err.to_string()),
    }
}

/// As [`plansim_outcomes`], for a loaded scenario.
pub fn scenario_outcomes(scenario: &Scenario, policy: Policy, seeds: u64) -> OutcomeSet {
    let frame = Frame::of(scenario);
    let plan = RunPlan {
        policies: Some(vec![policy]),
        seeds: Some((0..seeds).collect()),
        trace: false,
    };
    let open = |_: Policy, _: u64| CountingSink {
        frame: &frame,
        rows: 0,
        placed: BTreeMap::new(),
        update: [0, 0],
        per_group_node: BTreeMap::new(),
    };
    let mut set = OutcomeSet::default();
    for (result, sink) in run_scenario_streamed(scenario, &plan, &|_, _| {}, &open) {
        if !result.rejections.is_empty() || result.row.metrics.rejected_jobs > 0 {
            set.rejected.insert(rejection_message(scenario, &result));
            set.add(Outcome::Rejected, None);
            continue;
        }
        let (outcome, dist) = outcome_of(scenario, &frame, &result, &sink);
        set.add(Outcome::Ran(outcome), Some(dist));
    }
    set
}

fn rejection_message(scenario: &Scenario, result: &RunResult) -> String {
    let message: Vec<String> = result
        .rejections
        .iter()
        .map(|(job, problem)| format!("{}: {problem}", scenario.jobs[job.index()].name))
        .collect();
    if message.is_empty() {
        "rejected_jobs".to_string()
    } else {
        message.join(" ")
    }
}

fn outcome_of(
    scenario: &Scenario,
    frame: &Frame,
    result: &RunResult,
    sink: &CountingSink,
) -> (Placement, Dist) {
    let job_name = |index: usize| scenario.jobs[index].name.clone();
    let placed = (0..scenario.jobs.len())
        .filter(|&j| frame.registered[j])
        .map(|j| (job_name(j), sink.placed.get(&j).copied().unwrap_or(0)))
        .collect();
    let mut failures: Vec<Failure> = result
        .placement_failures
        .iter()
        .filter(|f| frame.registered[f.group.job.index()])
        .map(|f| {
            let mut lines: Vec<String> = failure_lines(scenario, f)
                .into_iter()
                .skip(1)
                .map(|(_, line)| line.trim().to_string())
                .collect();
            lines.sort();
            Failure {
                job: job_name(f.group.job.index()),
                group: scenario.jobs[f.group.job.index()].groups[f.group.group_index()]
                    .name
                    .clone(),
                unplaced: u64::from(f.unplaced),
                lines,
            }
        })
        .collect();
    failures.sort();
    let outcome = Placement {
        placed,
        update: frame.update.map(|_| sink.update),
        failures,
    };
    (outcome, dist_of(scenario, sink))
}

fn dist_of(scenario: &Scenario, sink: &CountingSink) -> Dist {
    let mut by_name: BTreeMap<(&str, &str), &BTreeMap<NodeId, u64>> = BTreeMap::new();
    for (&(job, group), nodes) in &sink.per_group_node {
        let job = &scenario.jobs[job];
        by_name.insert((&job.name, &job.groups[group].name), nodes);
    }
    by_name
        .into_iter()
        .map(|((job, group), nodes)| {
            let (mut dc, mut rack) = (BTreeMap::new(), BTreeMap::new());
            for (&node, &count) in nodes {
                let spec = &scenario.nodes[node.index()];
                let node_rack = spec.attributes.get("rack").map_or("-", String::as_str);
                *dc.entry(spec.datacenter.clone()).or_default() += count;
                *rack.entry(node_rack.to_string()).or_default() += count;
            }
            DistEntry(job.to_string(), group.to_string(), dc, rack)
        })
        .collect()
}
