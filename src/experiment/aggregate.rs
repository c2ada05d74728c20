//! From runs to the experiment's tables: per grid point and policy, summary
//! statistics of every metric; per grid point and pair of policies, the
//! paired difference on the same seeds.

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

pub fn aggregate(table: &RunTable<'_>) -> Vec<AggregateRow> {
    let experiment = table.experiment;
    let mut rows = Vec::new();
    for point in 0..experiment.points.len() {
        for &policy in &experiment.policies {
            let runs = table.runs_of(point, policy);
            let metrics = Metric::ALL
                .iter()
                .map(|&metric| {
                    let (values, _) = table.values(runs.clone(), metric);
                    (summarize(&values), values.len())
                })
                .collect();
            rows.push(AggregateRow {
                point,
                policy,
                runs: runs.len(),
                metrics,
            });
        }
    }
    rows
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

pub fn paired(table: &RunTable<'_>) -> Vec<PairedRow> {
    let experiment = table.experiment;
    let mut rows = Vec::new();
    let seeds = experiment.seeds.len();
    for (baseline, candidate) in policy_pairs(&experiment.policies) {
        for metric in Metric::ALL {
            let mut pooled = Vec::new();
            for point in 0..experiment.points.len() {
                let mut differences = Vec::new();
                for seed in 0..seeds {
                    let a = table.runs[table.runs_of(point, baseline).start + seed]
                        .get(metric)
                        .as_f64();
                    let b = table.runs[table.runs_of(point, candidate).start + seed]
                        .get(metric)
                        .as_f64();
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
        }
    }
    rows
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
