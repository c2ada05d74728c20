//! The terminal comparison: one table per scenario, one column per policy,
//! then what each expectation found.

use std::fmt::Write;

use crate::model::expect::ExpectationOutcome;
use crate::model::metrics::{Metric, MetricValue};
use crate::model::policy::Policy;
use crate::model::scenario::Scenario;
use crate::run::RunResult;
use crate::sim::feasibility::PlacementFailure;

/// Renders the comparison of one scenario's runs (its policies, then seeds,
/// in order): one column per policy; over several seeds a cell shows the
/// range `lo..hi` (a `?` marks a metric some seeds never reached).
pub fn render(scenario: &Scenario, results: &[RunResult]) -> String {
    let outcomes: Vec<_> = results.iter().flat_map(|r| &r.outcomes).collect();
    let mut policies: Vec<Policy> = results.iter().map(|r| r.row.policy).collect();
    policies.dedup();
    let mut seeds: Vec<u64> = results.iter().map(|r| r.row.seed).collect();
    seeds.sort_unstable();
    seeds.dedup();
    let mut out = String::new();
    let _ = match seeds.as_slice() {
        [seed] => writeln!(out, "== {} (seed {seed})", scenario.name),
        _ => writeln!(
            out,
            "== {} ({} seeds, ranges over seeds)",
            scenario.name,
            seeds.len()
        ),
    };
    for line in wrap(&scenario.description, 78) {
        let _ = writeln!(out, "   {line}");
    }
    metric_rows(&mut out, &policies, results);
    expectation_lines(&mut out, &outcomes);
    rejections(&mut out, results);
    placement_failures(&mut out, scenario, results, seeds.len());
    out
}

/// The metric rows, one column per policy; a `*` marks a row whose policies
/// differ.
fn metric_rows(out: &mut String, policies: &[Policy], results: &[RunResult]) {
    // The contract's first metrics always; the later ones (deployments,
    // availability) only where some run has something to show, so a
    // scenario without updates keeps its compact table.
    let shown: Vec<Metric> = Metric::ALL
        .iter()
        .enumerate()
        .filter(|&(i, &metric)| {
            i < Metric::REQUIRED
                || results
                    .iter()
                    .any(|r| r.row.metrics.get(metric).as_f64().is_some_and(|v| v != 0.0))
        })
        .map(|(_, &metric)| metric)
        .collect();
    let columns: Vec<(String, Vec<String>)> = policies
        .iter()
        .map(|&policy| {
            let runs: Vec<_> = results.iter().filter(|r| r.row.policy == policy).collect();
            let cells = shown
                .iter()
                .map(|&metric| cell(runs.iter().map(|r| r.row.metrics.get(metric))))
                .collect();
            (policy.to_string(), cells)
        })
        .collect();
    let label_width = shown.iter().map(|m| m.name().len()).max().unwrap_or(0);
    let widths: Vec<usize> = columns
        .iter()
        .map(|(header, cells)| {
            cells
                .iter()
                .map(String::len)
                .chain([header.len()])
                .max()
                .unwrap_or(1)
        })
        .collect();
    let _ = write!(out, "   {:label_width$}", "metric");
    for ((header, _), width) in columns.iter().zip(&widths) {
        let _ = write!(out, "  {header:>width$}");
    }
    out.push('\n');
    for (row, metric) in shown.iter().enumerate() {
        let differs = columns.windows(2).any(|w| w[0].1[row] != w[1].1[row]);
        let marker = if differs { '*' } else { ' ' };
        let _ = write!(out, " {marker} {:label_width$}", metric.name());
        for ((_, cells), width) in columns.iter().zip(&widths) {
            let _ = write!(out, "  {:>width$}", cells[row]);
        }
        out.push('\n');
    }
}

/// How many expectations hold, and each that failed.
fn expectation_lines(out: &mut String, outcomes: &[&ExpectationOutcome]) {
    let held = outcomes.iter().filter(|o| o.held).count();
    if !outcomes.is_empty() {
        let _ = writeln!(out, "   expect: {held} of {} hold", outcomes.len());
    }
    for outcome in outcomes.iter().filter(|o| !o.held) {
        let actual = outcome.actual.render();
        let actual = if actual.is_empty() {
            "never".to_string()
        } else {
            actual
        };
        let _ = writeln!(
            out,
            "   expect FAIL {} (actual {actual})",
            outcome.expectation
        );
    }
}

/// Registration errors, once per policy and job (the same on every seed).
fn rejections(out: &mut String, results: &[RunResult]) {
    let mut rejected: Vec<(Policy, &str)> = Vec::new();
    for result in results {
        for (_, problem) in &result.rejections {
            if !rejected.contains(&(result.row.policy, problem.as_str())) {
                rejected.push((result.row.policy, problem.as_str()));
            }
        }
    }
    for (policy, problem) in rejected {
        let _ = writeln!(out, "   {policy}: registration rejected: {problem}");
    }
}

/// Placement failures in Nomad's words; the same failure on several seeds
/// is shown once, with its seeds (out of `seed_count`).
fn placement_failures(
    out: &mut String,
    scenario: &Scenario,
    results: &[RunResult],
    seed_count: usize,
) {
    let mut blocks: Vec<(Policy, String, Vec<u64>)> = Vec::new();
    for result in results {
        let mut block = String::new();
        for failure in &result.placement_failures {
            render_failure(&mut block, scenario, failure);
        }
        if block.is_empty() {
            continue;
        }
        let policy = result.row.policy;
        match blocks
            .iter_mut()
            .find(|(p, b, _)| *p == policy && *b == block)
        {
            Some((_, _, block_seeds)) => block_seeds.push(result.row.seed),
            None => blocks.push((policy, block, vec![result.row.seed])),
        }
    }
    if !blocks.is_empty() {
        out.push_str(
            "   placement failures (latest evaluation, as `nomad job status` shows them):\n",
        );
    }
    for (policy, block, block_seeds) in blocks {
        let _ = if seed_count == 1 {
            writeln!(out, "     {policy}:")
        } else if block_seeds.len() == seed_count {
            writeln!(out, "     {policy}, every seed:")
        } else {
            let list: Vec<String> = block_seeds.iter().map(u64::to_string).collect();
            writeln!(out, "     {policy}, seeds {}:", list.join(","))
        };
        out.push_str(&block);
    }
}

/// One cell: the value, or `lo..hi` over seeds; `-` for never, and a `?`
/// after a range when some seeds never reached the metric.
pub fn cell(values: impl Iterator<Item = MetricValue>) -> String {
    let values: Vec<MetricValue> = values.collect();
    let reached: Vec<(f64, String)> = values
        .iter()
        .filter_map(|v| v.as_f64().map(|x| (x, v.render())))
        .collect();
    let some_never = reached.len() < values.len();
    let lowest = reached.iter().min_by(|a, b| a.0.total_cmp(&b.0));
    let highest = reached.iter().max_by(|a, b| a.0.total_cmp(&b.0));
    match (lowest, highest) {
        (None, _) | (_, None) => "-".to_string(),
        (Some(lo), Some(hi)) if lo.1 == hi.1 && !some_never => lo.1.clone(),
        (Some(lo), Some(hi)) => {
            let range = if lo.1 == hi.1 {
                lo.1.clone()
            } else {
                format!("{}..{}", lo.1, hi.1)
            };
            if some_never {
                format!("{range}?")
            } else {
                range
            }
        }
    }
}

fn render_failure(out: &mut String, scenario: &Scenario, failure: &PlacementFailure) {
    for (depth, line) in failure_lines(scenario, failure) {
        let _ = writeln!(out, "{:indent$}{line}", "", indent = 7 + 2 * depth);
    }
}

/// A placement failure as `nomad job status` words it: the group's line
/// (depth 0), then one line per reason (depth 1).
pub fn failure_lines(scenario: &Scenario, failure: &PlacementFailure) -> Vec<(usize, String)> {
    let job = &scenario.jobs[failure.group.job.index()];
    let group = &job.groups[failure.group.group_index()];
    let plural = if failure.unplaced == 1 { "" } else { "s" };
    let mut lines = vec![(
        0,
        format!(
            "{}: Task Group \"{}\" (failed to place {} allocation{plural}):",
            job.name, group.name, failure.unplaced
        ),
    )];
    lines.extend(failure.metric.lines().into_iter().map(|line| (1, line)));
    lines
}

/// A failure's AllocMetric as `--format json` writes it (Nomad's field
/// names in snake case; maps as objects in name order).
fn metric_json(m: &crate::sim::feasibility::AllocMetric) -> serde_json::Value {
    use serde_json::{Value, json};
    let map = |pairs: &[(String, u32)]| -> Value {
        let mut sorted: Vec<&(String, u32)> = pairs.iter().collect();
        sorted.sort();
        Value::Object(
            sorted
                .into_iter()
                .map(|(k, n)| (k.clone(), json!(n)))
                .collect(),
        )
    };
    json!({
        "nodes_evaluated": m.nodes_evaluated,
        "nodes_filtered": m.nodes_filtered,
        "nodes_available": map(&m.nodes_available),
        "class_filtered": map(&m.class_filtered),
        "constraint_filtered": map(&m.constraint_filtered),
        "nodes_exhausted": m.nodes_exhausted,
        "class_exhausted": map(&m.class_exhausted),
        "dimension_exhausted": map(&m.dimension_exhausted),
    })
}

/// What one policy did wrong in a scenario, summed over its seeds: the
/// problems a verdict names.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Verdict {
    pub policy: String,
    pub seeds: usize,
    pub violations: u64,
    pub violation_seconds: String,
    pub claim_failures: u64,
    /// Allocations the latest evaluation of each group could not place.
    pub unplaced: u64,
    pub rejected_jobs: u64,
}

impl Verdict {
    pub fn of(policy: Policy, results: &[RunResult]) -> Verdict {
        let runs: Vec<&RunResult> = results.iter().filter(|r| r.row.policy == policy).collect();
        let sum = |f: &dyn Fn(&RunResult) -> u64| runs.iter().map(|r| f(r)).sum::<u64>();
        let seconds = runs
            .iter()
            .fold(crate::model::time::Millis::ZERO, |total, r| {
                total + r.row.metrics.violation_time
            });
        Verdict {
            policy: policy.to_string(),
            seeds: runs.len(),
            violations: sum(&|r| r.row.metrics.violations),
            violation_seconds: seconds.to_string(),
            claim_failures: sum(&|r| r.row.metrics.claim_failures),
            unplaced: sum(&|r| {
                r.placement_failures
                    .iter()
                    .map(|f| u64::from(f.unplaced))
                    .sum()
            }),
            rejected_jobs: sum(&|r| r.row.metrics.rejected_jobs),
        }
    }

    pub fn violates(&self) -> bool {
        self.violations > 0
    }

    /// "violates (1 violation, 3597.490 s)", "7 claim failures", ..., or "ok".
    pub fn text(&self) -> String {
        let plural =
            |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut parts = Vec::new();
        if self.violations > 0 {
            parts.push(format!(
                "violates ({}, {} s)",
                plural(self.violations, "violation", "violations"),
                self.violation_seconds
            ));
        }
        if self.claim_failures > 0 {
            parts.push(format!(
                "fails claims ({})",
                plural(self.claim_failures, "claim failure", "claim failures")
            ));
        }
        if self.rejected_jobs > 0 {
            parts.push(format!(
                "rejects {} at registration",
                plural(self.rejected_jobs, "job", "jobs")
            ));
        }
        if self.unplaced > 0 {
            parts.push(format!(
                "leaves {} unplaced",
                plural(self.unplaced, "allocation", "allocations")
            ));
        }
        if parts.is_empty() {
            "ok".to_string()
        } else {
            parts.join(", ")
        }
    }
}

/// Every policy's verdict on one scenario's runs, in policy order.
pub fn verdicts(results: &[RunResult]) -> Vec<Verdict> {
    let mut policies: Vec<Policy> = results.iter().map(|r| r.row.policy).collect();
    policies.dedup();
    policies
        .into_iter()
        .map(|p| Verdict::of(p, results))
        .collect()
}

/// One line per scenario: `verdict NAME: naive violates (...); validate ok; ...`.
pub fn verdict_line(scenario: &Scenario, verdicts: &[Verdict]) -> String {
    let parts: Vec<String> = verdicts
        .iter()
        .map(|v| format!("{} {}", v.policy, v.text()))
        .collect();
    let seeds = verdicts.first().map_or(1, |v| v.seeds);
    let over = if seeds > 1 {
        format!(" (summed over {seeds} seeds)")
    } else {
        String::new()
    };
    format!("verdict {}{over}: {}", scenario.name, parts.join("; "))
}

/// The closing line: per policy, in how many scenarios it violates, fails
/// claims, rejects jobs or leaves work unplaced.
pub fn total_line(all: &[Vec<Verdict>]) -> String {
    let mut per_policy: Vec<(String, [usize; 4])> = Vec::new();
    for verdict in all.iter().flatten() {
        let index = match per_policy.iter().position(|(p, _)| *p == verdict.policy) {
            Some(i) => i,
            None => {
                per_policy.push((verdict.policy.clone(), [0; 4]));
                per_policy.len() - 1
            }
        };
        let counts = &mut per_policy[index].1;
        for (slot, bad) in [
            verdict.violates(),
            verdict.claim_failures > 0,
            verdict.rejected_jobs > 0,
            verdict.unplaced > 0,
        ]
        .into_iter()
        .enumerate()
        {
            counts[slot] += usize::from(bad);
        }
    }
    let parts: Vec<String> = per_policy
        .iter()
        .map(|(policy, counts)| {
            let named: Vec<String> = [
                "violates",
                "fails claims",
                "rejects jobs",
                "leaves work unplaced",
            ]
            .iter()
            .zip(counts)
            .filter(|(_, n)| **n > 0)
            .map(|(what, n)| format!("{what} in {n}"))
            .collect();
            if named.is_empty() {
                format!("{policy} ok in all")
            } else {
                format!("{policy} {}", named.join(", "))
            }
        })
        .collect();
    format!("total: {} scenario(s); {}", all.len(), parts.join("; "))
}

fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// One scenario's comparison as JSON (`plansim run --format json`): every
/// run's metrics (seconds as numbers, `null` for never), expectations,
/// registration errors and placement failures, and the verdicts.
pub fn scenario_json(
    scenario: &Scenario,
    results: &[RunResult],
    verdicts: &[Verdict],
) -> serde_json::Value {
    use serde_json::{Value, json};
    let runs: Vec<Value> = results
        .iter()
        .map(|r| {
            let metrics: serde_json::Map<String, Value> = Metric::ALL
                .iter()
                .map(|&m| {
                    let value = match r.row.metrics.get(m) {
                        MetricValue::Count(n) => json!(n),
                        MetricValue::Seconds(t) => json!(t.as_secs_f64()),
                        MetricValue::Never => Value::Null,
                    };
                    (m.name().to_string(), value)
                })
                .collect();
            let failures: Vec<Value> = r
                .placement_failures
                .iter()
                .map(|f| {
                    let lines: Vec<String> =
                        failure_lines(scenario, f).into_iter().map(|(_, l)| l).collect();
                    json!({
                        "job": scenario.jobs[f.group.job.index()].name,
                        "group": scenario.jobs[f.group.job.index()].groups[f.group.group_index()].name,
                        "unplaced": f.unplaced,
                        "nomad_status": lines,
                        "metric": metric_json(&f.metric),
                    })
                })
                .collect();
            json!({
                "policy": r.row.policy.name(),
                "seed": r.row.seed,
                "metrics": metrics,
                "expectations": r.outcomes.iter().map(|o| json!({
                    "expectation": o.expectation.to_string(),
                    "actual": o.actual.render(),
                    "held": o.held,
                })).collect::<Vec<_>>(),
                "registration_errors": r.rejections.iter().map(|(job, problem)| json!({
                    "job": scenario.jobs[job.index()].name,
                    "error": problem,
                })).collect::<Vec<_>>(),
                "placement_failures": failures,
            })
        })
        .collect();
    json!({
        "scenario": scenario.name,
        "runs": runs,
        "verdicts": verdicts,
        "verdict": verdict_line(scenario, verdicts),
    })
}

/// The whole `plansim run --format json` document.
pub fn json_document(scenarios: Vec<serde_json::Value>, verdicts: &[Vec<Verdict>]) -> String {
    let document = serde_json::json!({
        "scenarios": scenarios,
        "total": total_line(verdicts),
    });
    format!(
        "{}\n",
        serde_json::to_string_pretty(&document).expect("JSON values serialise")
    )
}
