//! The explanation as plain text for the terminal.

use std::fmt::Write;

use super::explanation::{Explanation, SideDecision};

/// Renders an explanation as the narrative `plansim explain` prints.
pub fn render_text(e: &Explanation) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "== {} (seed {}): {} vs {}",
        e.scenario, e.seed, e.baseline, e.candidate
    );
    let Some(d) = &e.divergence else {
        let _ = writeln!(
            out,
            "The policies never diverge: {} and {} made the same decisions (registrations, placements, claims) throughout.",
            e.baseline, e.candidate
        );
        metrics(&mut out, e);
        return out;
    };
    let about = match (d.kind, &d.volume) {
        ("registration", _) => format!("registering job {}", d.subject),
        ("claim", Some(volume)) => format!("{} claiming volume {volume}", d.subject),
        _ => format!("placing {}", d.subject),
    };
    let _ = writeln!(out, "First divergence at {} s: {about}.", d.time_s);
    if let Some(evaluation) = &d.evaluation {
        let _ = writeln!(out, "In {evaluation}:");
    }
    for side in [&d.baseline, &d.candidate] {
        decision(&mut out, side);
    }
    for side in [&d.baseline, &d.candidate] {
        chain(&mut out, side);
    }
    metrics(&mut out, e);
    out
}

fn decision(out: &mut String, side: &SideDecision) {
    let _ = writeln!(out, "  {} {}.", side.policy, side.decided);
    for line in &side.saw {
        wrapped(out, "    saw: ", line);
    }
    for line in &side.check {
        wrapped(out, "    check: ", line);
    }
    if let Some(reason) = &side.reason {
        let _ = writeln!(out, "    reason: {reason}");
    }
}

/// Most characters on a wrapped line of the narrative.
const WIDTH: usize = 100;

/// Writes `text` after `lead`, wrapped at word boundaries, continuation
/// lines indented under the text.
fn wrapped(out: &mut String, lead: &str, text: &str) {
    let indent = 6;
    let mut line = lead.to_string();
    let mut fresh = true;
    for word in text.split(' ') {
        if !fresh && line.chars().count() + 1 + word.chars().count() > WIDTH {
            let _ = writeln!(out, "{line}");
            line = " ".repeat(indent);
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        line.push_str(word);
        fresh = false;
    }
    let _ = writeln!(out, "{line}");
}

fn chain(out: &mut String, side: &SideDecision) {
    if side.consequences.is_empty() && side.violation_windows.is_empty() {
        let _ = writeln!(
            out,
            "What followed under {}: nothing more for it.",
            side.policy
        );
        return;
    }
    let _ = writeln!(out, "What followed under {}:", side.policy);
    for step in &side.consequences {
        let _ = write!(out, "  {:>10} s  {}", step.time_s, step.what);
        if let Some(last) = &step.last_s {
            let _ = write!(
                out,
                " (and {} more time(s), the last at {last} s)",
                step.repeats
            );
        }
        out.push('\n');
    }
    if let Some(more) = &side.more_steps {
        let _ = writeln!(out, "  ... {more}");
    }
    for w in &side.violation_windows {
        let end = if w.until_end {
            format!("the end of the run ({} s)", w.to_s)
        } else {
            format!("{} s", w.to_s)
        };
        let _ = writeln!(
            out,
            "  => {} in violation from {} s to {end}: {} s",
            w.volume, w.from_s, w.seconds
        );
    }
}

fn metrics(out: &mut String, e: &Explanation) {
    if e.metric_differences.is_empty() {
        let _ = writeln!(out, "Metrics: no difference.");
        return;
    }
    let _ = writeln!(
        out,
        "Metric differences ({} -> {}):",
        e.baseline, e.candidate
    );
    let width = e
        .metric_differences
        .iter()
        .map(|m| m.metric.len())
        .max()
        .unwrap_or(0);
    for m in &e.metric_differences {
        let _ = writeln!(
            out,
            "  {:width$}  {} -> {}: {}",
            m.metric, m.baseline, m.candidate, m.explained_by
        );
    }
}
