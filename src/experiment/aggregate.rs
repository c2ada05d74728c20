//! From runs to the experiment's tables: per grid point and policy, summary
//! statistics of every metric; per grid point and pair of policies, the
//! paired difference on the same seeds.

use rayon::prelude::*;

use super::spec::Experiment;
use super::stats::{Summary, summarize};
use crate::model::metrics::{Metric, Metrics};
use crate::model::policy::Policy;

/// The metrics plots and headlines focus on.
pub const MAIN_METRICS: [Metric; 6] = [
    Metric::ClaimFailures,
    Metric::Reschedules,
    Metric::Violations,
    Metric::ViolationSeconds,
    Metric::Infeasible,
    Metric::FirstFullS,
];

/// Every run's metrics, in run order (`runs[i]` is run `i`).
pub struct RunTable<'a> {
    pub experiment: &'a Experiment,
    pub runs: &'a [Metrics],
}

impl RunTable<'_> {
    fn values(&self, runs: impl Iterator<Item = usize>, metric: Metric) -> (Vec<f64>, usize) {
        let mut total = 0;
        let values = runs
            .inspect(|_| total += 1)
            .filter_map(|run| self.runs[run].get(metric).as_f64())
            .collect();
        (values, total)
    }

    /// The runs of one grid point under one policy: consecutive indices.
    fn runs_of(&self, point: usize, policy: Policy) -> std::ops::Range<usize> {
        let experiment = self.experiment;
        let seeds = experiment.seeds.len();
        let p = experiment
            .policies
            .iter()
            .position(|&x| x == policy)
            .expect("policy in experiment");
        let start = (point * experiment.policies.len() + p) * seeds;
        start..start + seeds
    }
}

#[derive(Clone, Debug)]
pub struct AggregateRow {
    pub point: usize,
    pub policy: Policy,
    pub runs: usize,
    /// Per metric (in `Metric::ALL` order): the summary over runs that
    /// reached it, and how many did (see `Metric::may_be_never`).
    pub metrics: Vec<(Option<Summary>, usize)>,
}

/// Rows in grid order; each row's metrics are summarised on the current
/// rayon pool (the result does not depend on its threads).
pub fn aggregate(table: &RunTable<'_>) -> Vec<AggregateRow> {
    let experiment = table.experiment;
    let slots: Vec<(usize, Policy)> = (0..experiment.points.len())
        .flat_map(|point| {
            experiment
                .policies
                .iter()
                .map(move |&policy| (point, policy))
        })
        .collect();
    slots
        .into_par_iter()
        .map(|(point, policy)| {
            let runs = table.runs_of(point, policy);
            let metrics = Metric::ALL
                .par_iter()
                .map(|&metric| {
                    let (values, _) = table.values(runs.clone(), metric);
                    (summarize(&values), values.len())
                })
                .collect();
            AggregateRow {
                point,
                policy,
                runs: runs.len(),
                metrics,
            }
        })
        .collect()
}

/// `candidate - baseline` on the same grid point and seeds.
#[derive(Clone, Debug)]
pub struct PairedRow {
    /// `None` for the pooled row over every grid point.
    pub point: Option<usize>,
    pub baseline: Policy,
    pub candidate: Policy,
    pub metric: Metric,
    pub difference: Option<Summary>,
}

/// Pairs of policies, each compared with the ones after it (naive first).
pub fn policy_pairs(policies: &[Policy]) -> Vec<(Policy, Policy)> {
    let mut pairs = Vec::new();
    for (i, &a) in policies.iter().enumerate() {
        for &b in &policies[i + 1..] {
            pairs.push((a, b));
        }
    }
    pairs
}

/// Per pair of policies and metric (summarised on the current rayon pool):
/// a row per grid point, then the pooled row.
pub fn paired(table: &RunTable<'_>) -> Vec<PairedRow> {
    let experiment = table.experiment;
    let seeds = experiment.seeds.len();
    let tasks: Vec<((Policy, Policy), Metric)> = policy_pairs(&experiment.policies)
        .into_iter()
        .flat_map(|pair| Metric::ALL.into_iter().map(move |metric| (pair, metric)))
        .collect();
    let per_task: Vec<Vec<PairedRow>> = tasks
        .into_par_iter()
        .map(|((baseline, candidate), metric)| {
            let mut rows = Vec::new();
            let mut pooled = Vec::new();
            for point in 0..experiment.points.len() {
                let (a_start, b_start) = (
                    table.runs_of(point, baseline).start,
                    table.runs_of(point, candidate).start,
                );
                let mut differences = Vec::new();
                for seed in 0..seeds {
                    let a = table.runs[a_start + seed].get(metric).as_f64();
                    let b = table.runs[b_start + seed].get(metric).as_f64();
                    if let (Some(a), Some(b)) = (a, b) {
                        differences.push(b - a);
                    }
                }
                pooled.extend_from_slice(&differences);
                rows.push(PairedRow {
                    point: Some(point),
                    baseline,
                    candidate,
                    metric,
                    difference: summarize(&differences),
                });
            }
            if experiment.points.len() > 1 {
                rows.push(PairedRow {
                    point: None,
                    baseline,
                    candidate,
                    metric,
                    difference: summarize(&pooled),
                });
            }
            rows
        })
        .collect();
    per_task.into_iter().flatten().collect()
}

/// For a plot: per value of one vary key, per policy, the summary of a
/// metric over every run whose grid point has that value. One pass over the
/// grid points per policy (runs are bucketed by the point's value), so the
/// cost is linear in runs, not values x points.
pub fn marginal(
    table: &RunTable<'_>,
    key: usize,
    metric: Metric,
) -> Vec<(Policy, Vec<Option<Summary>>)> {
    let experiment = table.experiment;
    let values = experiment.vary[key].values.len();
    experiment
        .policies
        .iter()
        .map(|&policy| {
            let mut buckets: Vec<Vec<f64>> = vec![Vec::new(); values];
            for (point, grid_point) in experiment.points.iter().enumerate() {
                let (found, _) = table.values(table.runs_of(point, policy), metric);
                buckets[grid_point.choice[key]].extend(found);
            }
            let per_value = buckets.iter().map(|bucket| summarize(bucket)).collect();
            (policy, per_value)
        })
        .collect()
}
