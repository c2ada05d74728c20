//! From runs to the experiment's tables: per grid point and policy, summary
//! statistics of every metric; per grid point and pair of policies, the
//! paired difference on the same seeds.

use rayon::prelude::*;

use super::spec::Experiment;
use super::stats::{Summary, summarize};
use crate::model::metrics::{Metric, Metrics};
use crate::model::policy::Policy;

/// Re-exported for the sweep report's imports.
pub use super::spec::MAIN_METRICS;

/// Every run's metrics as columns: per grid point and policy (a "slot",
/// `point * policies + p`: their runs are consecutive), per metric (in
/// `Metric::ALL` order), the value of each seed's run in seed order, NaN
/// for a metric never reached (no metric's value is NaN). Each run is read
/// once, in order; every statistic then reads contiguous numbers.
pub struct RunTable<'a> {
    pub experiment: &'a Experiment,
    columns: Vec<Vec<Vec<f64>>>,
}

impl<'a> RunTable<'a> {
    /// `runs[i]` is run `i`. The slots are read on the current rayon pool.
    pub fn new(experiment: &'a Experiment, runs: &[Metrics]) -> RunTable<'a> {
        let seeds = experiment.seeds.len().max(1);
        let columns = runs
            .par_chunks(seeds)
            .map(|slot| {
                let mut columns: Vec<Vec<f64>> = Metric::ALL
                    .iter()
                    .map(|_| Vec::with_capacity(slot.len()))
                    .collect();
                for metrics in slot {
                    for (column, metric) in columns.iter_mut().zip(Metric::ALL) {
                        column.push(metrics.get(metric).as_f64().unwrap_or(f64::NAN));
                    }
                }
                columns
            })
            .collect();
        RunTable {
            experiment,
            columns,
        }
    }

    /// The values of one metric over the seeds of one grid point and policy.
    fn column(&self, point: usize, policy: Policy, metric: Metric) -> &[f64] {
        let experiment = self.experiment;
        let p = experiment
            .policies
            .iter()
            .position(|&x| x == policy)
            .expect("policy in experiment");
        let m = Metric::ALL
            .iter()
            .position(|&x| x == metric)
            .expect("metric in ALL");
        &self.columns[point * experiment.policies.len() + p][m]
    }
}

/// The values a metric reached (NaN: never).
fn reached(column: &[f64]) -> Vec<f64> {
    column.iter().copied().filter(|v| !v.is_nan()).collect()
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
            let metrics = Metric::ALL
                .par_iter()
                .map(|&metric| {
                    let values = reached(table.column(point, policy, metric));
                    let count = values.len();
                    (summarize(values), count)
                })
                .collect();
            AggregateRow {
                point,
                policy,
                runs: experiment.seeds.len(),
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
                let a = table.column(point, baseline, metric);
                let b = table.column(point, candidate, metric);
                // NaN (never reached) on either side pairs nothing.
                let differences: Vec<f64> = a
                    .iter()
                    .zip(b)
                    .filter(|(a, b)| !a.is_nan() && !b.is_nan())
                    .map(|(a, b)| b - a)
                    .collect();
                pooled.extend_from_slice(&differences);
                rows.push(PairedRow {
                    point: Some(point),
                    baseline,
                    candidate,
                    metric,
                    difference: summarize(differences),
                });
            }
            if experiment.points.len() > 1 {
                rows.push(PairedRow {
                    point: None,
                    baseline,
                    candidate,
                    metric,
                    difference: summarize(pooled),
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
                let found = table.column(point, policy, metric);
                buckets[grid_point.choice[key]].extend(found.iter().filter(|v| !v.is_nan()));
            }
            let per_value = buckets.into_iter().map(summarize).collect();
            (policy, per_value)
        })
        .collect()
}
