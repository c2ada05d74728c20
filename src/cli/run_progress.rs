//! A progress line for long single runs (`plansim run scale-scenarios/`):
//! simulated time against the horizon, summed over the runs in flight, and
//! events per second. Drawn on stderr only when it is a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::model::scenario::Scenario;

/// A bar over `runs` runs of `scenario`, each `horizon` long; hidden when
/// `quiet`, and draws nothing when stderr is not a terminal.
pub fn bar(scenario: &Scenario, runs: usize, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let total_ms = scenario.horizon.0.saturating_mul(runs as u64);
    let bar = ProgressBar::with_draw_target(Some(total_ms), ProgressDrawTarget::stderr());
    let template = format!(
        "{} {{bar:30}} simulated {{simulated}} of {{horizon}} per run  {{msg}}",
        scenario.name
    );
    let runs = runs.max(1) as u64;
    let style = ProgressStyle::with_template(&template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key(
            "simulated",
            move |state: &indicatif::ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(out, "{}s", state.pos() / runs / 1000);
            },
        )
        .with_key(
            "horizon",
            move |state: &indicatif::ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(out, "{}s", state.len().unwrap_or(0) / runs / 1000);
            },
        );
    bar.set_style(style);
    bar
}

/// Adds one progress report (increments of simulated ms and events) to the
/// bar, and refreshes the events/s figure.
pub fn report(bar: &ProgressBar, events: &std::sync::atomic::AtomicU64, ms: u64, steps: u64) {
    use std::sync::atomic::Ordering;
    let total = events.fetch_add(steps, Ordering::Relaxed) + steps;
    let seconds = bar.elapsed().as_secs_f64();
    if seconds > 0.0 {
        bar.set_message(format!("{:.2} M events/s", total as f64 / seconds / 1e6));
    }
    bar.inc(ms);
}
