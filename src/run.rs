//! Runs scenarios: every (policy, seed) of each, in parallel, with results in
//! a fixed order whatever the thread count. Pure: no files, no terminal.

use rayon::prelude::*;

use crate::model::expect::ExpectationOutcome;
use crate::model::policy::Policy;
use crate::model::scenario::Scenario;
use crate::report::summary::SummaryRow;
use crate::sim::feasibility::PlacementFailure;
use crate::sim::trace::{TraceRecord, TraceSink};
use crate::sim::{RunOptions, simulate_observed, simulate_streamed};

/// What to run for each scenario; `None` means "as the scenario says".
#[derive(Clone, Debug, Default)]
pub struct RunPlan {
    pub policies: Option<Vec<Policy>>,
    pub seeds: Option<Vec<u64>>,
    pub trace: bool,
}

impl RunPlan {
    pub fn policies_for(&self, scenario: &Scenario) -> Vec<Policy> {
        match &self.policies {
            Some(policies) => Policy::ALL
                .into_iter()
                .filter(|p| policies.contains(p))
                .collect(),
            None => scenario.policies.clone(),
        }
    }

    pub fn seeds_for(&self, scenario: &Scenario) -> Vec<u64> {
        self.seeds.clone().unwrap_or_else(|| vec![scenario.seed])
    }
}

/// One run's outcome.
#[derive(Clone, Debug)]
pub struct RunResult {
    pub row: SummaryRow,
    pub trace: Option<Vec<TraceRecord>>,
    pub outcomes: Vec<ExpectationOutcome>,
    pub placement_failures: Vec<PlacementFailure>,
    /// Set when the run hit the event cap before its horizon.
    pub stopped_early: Option<String>,
    /// Jobs refused at registration, with the registration error.
    pub rejections: Vec<(crate::model::ids::JobId, String)>,
    /// Each job's first evaluation (`nomad job plan`'s dry run).
    pub first_plans: Vec<crate::sim::FirstPlan>,
}

/// Every run of one scenario, sorted by policy then seed.
pub fn run_scenario(scenario: &Scenario, plan: &RunPlan) -> Vec<RunResult> {
    run_scenario_observed(scenario, plan, &|_, _| {})
}

/// As [`run_scenario`], reporting progress from every run as it goes:
/// `progress(simulated ms, queue entries)` gets the increments since that
/// run's previous report (runs go in parallel, so the caller sums them).
pub fn run_scenario_observed(
    scenario: &Scenario,
    plan: &RunPlan,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Vec<RunResult> {
    jobs_of(scenario, plan)
        .into_par_iter()
        .map(|(policy, seed)| run_one_observed(scenario, policy, seed, plan.trace, None, progress))
        .collect()
}

/// As [`run_scenario_observed`], each run streaming its trace into the
/// sink `open(policy, seed)` makes, row by row, instead of keeping it
/// (`RunResult::trace` stays `None`); each run's sink comes back beside its
/// result, for the caller to keep or discard.
pub fn run_scenario_streamed<S: TraceSink + Send>(
    scenario: &Scenario,
    plan: &RunPlan,
    progress: &(dyn Fn(u64, u64) + Sync),
    open: &(dyn Fn(Policy, u64) -> S + Sync),
) -> Vec<(RunResult, S)> {
    jobs_of(scenario, plan)
        .into_par_iter()
        .map(|(policy, seed)| {
            let mut sink = open(policy, seed);
            let result = run_one_observed(scenario, policy, seed, false, Some(&mut sink), progress);
            (result, sink)
        })
        .collect()
}

/// Every (policy, seed) to run, sorted by policy then seed.
fn jobs_of(scenario: &Scenario, plan: &RunPlan) -> Vec<(Policy, u64)> {
    let policies = plan.policies_for(scenario);
    let seeds = plan.seeds_for(scenario);
    policies
        .iter()
        .flat_map(|&policy| seeds.iter().map(move |&seed| (policy, seed)))
        .collect()
}

pub fn run_one(scenario: &Scenario, policy: Policy, seed: u64, trace: bool) -> RunResult {
    run_one_observed(scenario, policy, seed, trace, None, &|_, _| {})
}

fn run_one_observed(
    scenario: &Scenario,
    policy: Policy,
    seed: u64,
    trace: bool,
    sink: Option<&mut dyn TraceSink>,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> RunResult {
    let (mut last_ms, mut last_steps) = (0, 0);
    let mut observe = |now: crate::model::time::Millis, steps: u64| {
        let now = now.0;
        progress(now.saturating_sub(last_ms), steps - last_steps);
        (last_ms, last_steps) = (now, steps);
    };
    let options = RunOptions {
        trace,
        ..RunOptions::new(policy, seed)
    };
    let output = match sink {
        Some(sink) => simulate_streamed(scenario, options, sink, &mut observe),
        None => simulate_observed(scenario, options, &mut observe),
    };
    let outcomes = scenario
        .expectations
        .iter()
        .filter(|e| e.policy == policy)
        .map(|e| ExpectationOutcome {
            expectation: e.clone(),
            actual: output.metrics.get(e.metric),
            held: e.holds(&output.metrics),
        })
        .collect();
    RunResult {
        row: SummaryRow {
            scenario: scenario.name.clone(),
            policy,
            seed,
            metrics: output.metrics,
        },
        trace: output.trace,
        outcomes,
        placement_failures: output.placement_failures,
        stopped_early: output.stopped_early,
        rejections: output.rejections,
        first_plans: output.first_plans,
    }
}
