//! The terminal comparison: one table per scenario, one column per policy,
//! then what each expectation found.

use std::fmt::Write;

use crate::model::expect::ExpectationOutcome;
use crate::model::metrics::Metric;
use crate::model::scenario::Scenario;

use super::summary::SummaryRow;

/// Renders the comparison of one scenario's rows (one seed, its policies in order).
pub fn render(
    scenario: &Scenario,
    rows: &[&SummaryRow],
    outcomes: &[ExpectationOutcome],
) -> String {
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
        .zip(rows)
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
    for outcome in outcomes {
        let verdict = if outcome.held { "ok  " } else { "FAIL" };
        let actual = outcome.actual.render();
        let actual = if actual.is_empty() {
            "never".to_string()
        } else {
            actual
        };
        let _ = writeln!(
            out,
            "   expect {verdict} {} (actual {actual})",
            outcome.expectation
        );
    }
    out
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
