//! `plansim hunt [--property NAME]... [--seed N] [--budget RUNS|DURATION]
//! [--jobs N] [--out DIR] [--from SCENARIO]`: the shell around `hunt`
//! (argument parsing, the thread pool, the progress bar, the wall-clock
//! budget, files).

use std::path::PathBuf;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::output::{EXIT_BAD_INPUT, EXIT_EXPECT_FAILED, EXIT_OK, errln, out};
use crate::hunt::Property;
use crate::hunt::command::{HuntRequest, HuntSession};
use crate::model::time::{Millis, parse_duration};

/// The properties, one per line, for `--help` (the long help of
/// `--property`: the subcommand's own `after_help` is set in `cli/mod.rs`).
fn properties_help() -> String {
    let mut text = String::from(
        "A property to check (repeatable; default: all of them, `expect` only with --from):\n",
    );
    for p in Property::ALL {
        text.push_str(&format!("  {:<27} {}\n", p.name(), p.help()));
    }
    text.push_str(
        "A budget in runs (--budget 100000) is reproducible: the same --seed finds and shrinks \
         the same scenarios for any --jobs. A DURATION budget (--budget 5m) stops on the wall \
         clock, so how far it gets depends on the machine.",
    );
    text
}

#[derive(Args, Debug)]
pub struct HuntArgs {
    /// A property to check (repeatable); `--help` lists them.
    #[arg(long = "property", value_name = "NAME", value_parser = parse_property, long_help = properties_help())]
    properties: Vec<Property>,
    /// Seed of the generator (or of the mutations with --from).
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    /// Scenarios to check (a number: reproducible), or wall-clock time (`30s`, `5m`).
    #[arg(long, value_name = "RUNS|DURATION", default_value = "10000", value_parser = parse_budget)]
    budget: Budget,
    /// Worker threads (default: every core). Never changes what is found.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
    /// Where the minimal scenarios go, one file per failed property (default: hunt-<seed>).
    #[arg(short = 'o', long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Mutate this scenario instead of generating new ones (mutant 0 is the file itself).
    #[arg(long, value_name = "SCENARIO")]
    from: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Write into an --out directory plansim did not write (never over an input, a symlink or a non-regular file).
    #[arg(long)]
    force: bool,
}

/// How long a hunt goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    Runs(u64),
    Time(Millis),
}

/// Most scenarios one hunt may check (MAX_HUNT_RUNS).
const MAX_HUNT_RUNS: u64 = 1_000_000_000;

fn parse_budget(text: &str) -> Result<Budget, String> {
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        let runs: u64 = text
            .parse()
            .map_err(|_| format!("budget {text} is too large"))?;
        if runs == 0 || runs > MAX_HUNT_RUNS {
            return Err(format!(
                "budget {runs} must be between 1 and {MAX_HUNT_RUNS} scenarios (MAX_HUNT_RUNS)"
            ));
        }
        return Ok(Budget::Runs(runs));
    }
    match parse_duration(text) {
        Ok(Millis::ZERO) => Err("a budget of 0s checks nothing".to_string()),
        Ok(time) => Ok(Budget::Time(time)),
        Err(err) => Err(format!(
            "{err}; a budget is a number of scenarios (10000) or a duration (30s, 5m)"
        )),
    }
}

fn parse_property(name: &str) -> Result<Property, String> {
    Property::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Property::ALL.iter().map(|p| p.name()).collect();
        format!(
            "unknown property \"{}\" (expected one of: {})",
            crate::names::one_line(name),
            names.join(", ")
        )
    })
}

pub fn run(args: HuntArgs) -> u8 {
    match hunt_command(&args) {
        Ok(code) => code,
        Err(message) => {
            errln!("{message}");
            EXIT_BAD_INPUT
        }
    }
}

fn hunt_command(args: &HuntArgs) -> Result<u8, String> {
    let threads = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        usize::from,
    );
    let session = HuntSession::open(&HuntRequest {
        seed: args.seed,
        properties: &args.properties,
        from: args.from.as_deref(),
        out: args.out.as_deref(),
        threads,
        force: args.force,
    })?;
    let (runs, time_limit) = match args.budget {
        Budget::Runs(n) => (n, None),
        Budget::Time(t) => (MAX_HUNT_RUNS, Some(std::time::Duration::from_millis(t.0))),
    };
    let bar = progress_bar(args.budget, args.quiet);
    // The wall clock lives here, in the shell: it only decides when a
    // DURATION budget is spent and how fast the bar says we go. The hunt
    // itself never reads it.
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    // Asked before every scenario, not only between batches of 1,024: a
    // batch of slow scenarios (mutants of a large one) would otherwise run
    // on for minutes past a DURATION budget.
    let spent = || time_limit.is_some_and(|limit| started.elapsed() >= limit);
    let search = session.search(
        runs,
        |progress| {
            bar.set_position(progress.tried);
            bar.set_message(format!("{} failing", progress.failing));
            !spent()
        },
        &spent,
    );
    bar.finish_and_clear();
    let searched = started.elapsed();
    let outcome = session.finish(&search)?;
    out(&outcome.summary);
    if !args.quiet && searched.as_secs_f64() > 0.0 {
        // Timing is not output: it goes to stderr and never into a file.
        errln!(
            "searched {} scenario(s) in {:.1}s on {threads} thread(s): {:.0} scenarios/s",
            search.tried,
            searched.as_secs_f64(),
            search.tried as f64 / searched.as_secs_f64()
        );
    }
    Ok(if outcome.found {
        EXIT_EXPECT_FAILED
    } else {
        EXIT_OK
    })
}

fn progress_bar(budget: Budget, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    // stderr draws nothing when it is not a terminal.
    let (total, template) = match budget {
        Budget::Runs(n) => (
            Some(n),
            "{bar:40} {pos}/{len} scenarios  {rate}  {msg}  ETA {eta}",
        ),
        Budget::Time(_) => (None, "{spinner} {pos} scenarios  {rate}  {msg}  {elapsed}"),
    };
    let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template(template)
        .expect("a valid template")
        .with_key(
            "rate",
            |state: &indicatif::ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(out, "{:.0} scenarios/s", state.per_sec());
            },
        );
    bar.set_style(style);
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_are_runs_or_durations() {
        assert_eq!(parse_budget("100000"), Ok(Budget::Runs(100_000)));
        assert_eq!(parse_budget("5m"), Ok(Budget::Time(Millis::from_secs(300))));
        assert!(parse_budget("0").is_err());
        assert!(parse_budget("0s").is_err());
        assert!(parse_budget("-3").is_err());
        assert!(parse_budget("lots").is_err());
        assert!(parse_budget("99999999999999999999999").is_err());
    }
}
