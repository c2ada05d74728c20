//! The terminal comparison: one table per scenario, one column per policy,
//! then what each expectation found.

use std::fmt::Write;

use crate::model::metrics::Metric;
use crate::model::scenario::Scenario;
use crate::run::RunResult;
use crate::sim::feasibility::{PlacementFailure, ReasonKind};

/// Renders the comparison of one scenario's runs (its policies, then seeds, in order).
pub fn render(scenario: &Scenario, results: &[RunResult]) -> String {
    let rows: Vec<_> = results.iter().map(|r| &r.row).collect();
    let outcomes: Vec<_> = results.iter().flat_map(|r| &r.outcomes).collect();
    let mut out = String::new();
    let seeds: Vec<u64> = {
        let mut seeds: Vec<u64> = rows.iter().map(|r| r.seed).collect();
        seeds.dedup();
        seeds
    };
    let _ = write!(out, "== {}", scenario.name);
    if let [seed] = seeds.as_slice() {
        let _ = write!(out, " (seed {seed})");
    }
    out.push('\n');
    if !scenario.description.is_empty() {
        for line in wrap(&scenario.description, 78) {
            let _ = writeln!(out, "   {line}");
        }
    }
    let headers: Vec<String> = rows
        .iter()
        .map(|r| {
            if seeds.len() > 1 {
                format!("{}/{}", r.policy, r.seed)
            } else {
                r.policy.to_string()
            }
        })
        .collect();
    let label_width = Metric::ALL
        .iter()
        .map(|m| m.name().len())
        .max()
        .unwrap_or(0);
    let widths: Vec<usize> = headers
        .iter()
        .zip(&rows)
        .map(|(h, r)| {
            Metric::ALL
                .iter()
                .map(|&m| r.metrics.get(m).render().len().max(1))
                .chain([h.len()])
                .max()
                .unwrap_or(1)
        })
        .collect();
    let _ = write!(out, "   {:label_width$}", "metric");
    for (header, width) in headers.iter().zip(&widths) {
        let _ = write!(out, "  {header:>width$}");
    }
    out.push('\n');
    for metric in Metric::ALL {
        let values: Vec<String> = rows
            .iter()
            .map(|r| r.metrics.get(metric).render())
            .collect();
        let differs = values.windows(2).any(|w| w[0] != w[1]);
        let marker = if differs { '*' } else { ' ' };
        let _ = write!(out, " {marker} {:label_width$}", metric.name());
        for (value, width) in values.iter().zip(&widths) {
            let shown = if value.is_empty() {
                "-"
            } else {
                value.as_str()
            };
            let _ = write!(out, "  {shown:>width$}");
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
    let failed: Vec<_> = results
        .iter()
        .filter(|r| !r.placement_failures.is_empty())
        .collect();
    if !failed.is_empty() {
        out.push_str(
            "   placement failures (latest evaluation, as `nomad job status` shows them):\n",
        );
    }
    for result in failed {
        let label = if seeds.len() > 1 {
            format!("{}/{}", result.row.policy, result.row.seed)
        } else {
            result.row.policy.to_string()
        };
        for failure in &result.placement_failures {
            render_failure(&mut out, scenario, &label, failure);
        }
    }
    out
}

fn render_failure(out: &mut String, scenario: &Scenario, label: &str, failure: &PlacementFailure) {
    let job = &scenario.jobs[failure.group.job.index()];
    let group = &job.groups[failure.group.group_index()];
    let plural = if failure.unplaced == 1 { "" } else { "s" };
    let _ = writeln!(
        out,
        "     {label}: {}: Task Group \"{}\" (failed to place {} allocation{plural}):",
        job.name, group.name, failure.unplaced
    );
    for (reason, kind, nodes) in &failure.reasons {
        let _ = match kind {
            ReasonKind::Filter => writeln!(
                out,
                "       * Constraint \"{reason}\": {nodes} nodes excluded by filter"
            ),
            ReasonKind::Exhausted => writeln!(out, "       * {reason} on {nodes} nodes"),
            ReasonKind::NoNodes => writeln!(out, "       * {reason}"),
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
