//! The terminal comparison: one table per scenario, one column per policy,
//! then what each expectation found.

use std::fmt::Write;

use crate::model::metrics::{Metric, MetricValue};
use crate::model::policy::Policy;
use crate::model::scenario::Scenario;
use crate::run::RunResult;
use crate::sim::feasibility::{PlacementFailure, ReasonKind};

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
    let columns: Vec<(String, Vec<String>)> = policies
        .iter()
        .map(|&policy| {
            let runs: Vec<_> = results.iter().filter(|r| r.row.policy == policy).collect();
            let cells = Metric::ALL
                .iter()
                .map(|&metric| cell(runs.iter().map(|r| r.row.metrics.get(metric))))
                .collect();
            (policy.to_string(), cells)
        })
        .collect();
    let label_width = Metric::ALL
        .iter()
        .map(|m| m.name().len())
        .max()
        .unwrap_or(0);
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
    for (row, metric) in Metric::ALL.iter().enumerate() {
        let differs = columns.windows(2).any(|w| w[0].1[row] != w[1].1[row]);
        let marker = if differs { '*' } else { ' ' };
        let _ = write!(out, " {marker} {:label_width$}", metric.name());
        for ((_, cells), width) in columns.iter().zip(&widths) {
            let _ = write!(out, "  {:>width$}", cells[row]);
        }
        out.push('\n');
    }
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
    // The same failure on several seeds is shown once, with its seeds.
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
        let _ = if seeds.len() == 1 {
            writeln!(out, "     {policy}:")
        } else if block_seeds.len() == seeds.len() {
            writeln!(out, "     {policy}, every seed:")
        } else {
            let list: Vec<String> = block_seeds.iter().map(u64::to_string).collect();
            writeln!(out, "     {policy}, seeds {}:", list.join(","))
        };
        out.push_str(&block);
    }
    out
}

/// One cell: the value, or `lo..hi` over seeds; `-` for never, and a `?`
/// after a range when some seeds never reached the metric.
fn cell(values: impl Iterator<Item = MetricValue>) -> String {
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
    let job = &scenario.jobs[failure.group.job.index()];
    let group = &job.groups[failure.group.group_index()];
    let plural = if failure.unplaced == 1 { "" } else { "s" };
    let _ = writeln!(
        out,
        "       {}: Task Group \"{}\" (failed to place {} allocation{plural}):",
        job.name, group.name, failure.unplaced
    );
    for (reason, kind, nodes) in &failure.reasons {
        let _ = match kind {
            ReasonKind::Filter => writeln!(
                out,
                "         * Constraint \"{reason}\": {nodes} nodes excluded by filter"
            ),
            ReasonKind::Exhausted => writeln!(out, "         * {reason} on {nodes} nodes"),
            ReasonKind::NoNodes => writeln!(out, "         * {reason}"),
        };
    }
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
