//! A progress line for long single runs (`plansim run scale-scenarios/`):
//! simulated time against the horizon, summed over the runs in flight, and
//! events per second. Drawn on stderr only when it is a terminal.

use super::output::errln;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::model::scenario::Scenario;
use crate::run_command::{RunObserver, ScenarioDone, ScenarioProgress};

/// A bar over `runs` runs of `scenario`, each `horizon` long; hidden when
/// `quiet`, and draws nothing when stderr is not a terminal.
fn bar(scenario: &Scenario, runs: usize, quiet: bool) -> ProgressBar {
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
fn report(bar: &ProgressBar, events: &std::sync::atomic::AtomicU64, ms: u64, steps: u64) {
    use std::sync::atomic::Ordering;
    let total = events.fetch_add(steps, Ordering::Relaxed) + steps;
    let seconds = bar.elapsed().as_secs_f64();
    if seconds > 0.0 {
        bar.set_message(format!("{:.2} M events/s", total as f64 / seconds / 1e6));
    }
    bar.inc(ms);
}

/// What `plansim run` shows while it works: a bar per scenario, its table
/// (unless `--quiet` or `--format json`) and, with `--quiet`, each failed
/// expectation.
pub struct RunBars {
    pub quiet: bool,
    pub print_tables: bool,
}

/// One scenario's bar and the events its runs have reported so far.
struct ScenarioBar {
    bar: ProgressBar,
    events: std::sync::atomic::AtomicU64,
}

impl ScenarioProgress for ScenarioBar {
    fn advance(&self, ms: u64, steps: u64) {
        report(&self.bar, &self.events, ms, steps);
    }

    fn finish(self: Box<Self>) {
        self.bar.finish_and_clear();
    }
}

impl RunObserver for RunBars {
    fn runs_started(&mut self, scenario: &Scenario, runs: usize) -> Box<dyn ScenarioProgress> {
        Box::new(ScenarioBar {
            bar: bar(scenario, runs, self.quiet),
            events: std::sync::atomic::AtomicU64::new(0),
        })
    }

    fn scenario_done(&mut self, done: &ScenarioDone) {
        if self.quiet {
            for (seed, outcome) in &done.failed {
                errln!(
                    "{} (seed {seed}): expect failed: {} (actual {})",
                    done.scenario.name,
                    outcome.expectation,
                    outcome.actual.render()
                );
            }
        }
        if self.print_tables {
            super::output::out(&format!("{}\n", done.table));
        }
    }

    fn stale_traces_removed(&mut self, dir: &std::path::Path, names: &[String]) {
        if !self.quiet {
            errln!(
                "removed {} trace file(s) of an earlier run from {}",
                names.len(),
                crate::names::one_line_path(dir)
            );
        }
    }
}
