//! The command line: argument parsing and the commands. The thin shell that
//! reads files, calls the pure core and writes results.

mod diff_cmd;
mod inputs;
mod run_cmd;
mod sweep_cmd;
mod validate_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::model::policy::Policy;

/// Exit codes of the contract.
pub const EXIT_OK: u8 = 0;
pub const EXIT_EXPECT_FAILED: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "plansim",
    version,
    about = "Deterministic simulator of Nomad's CSI volume scheduling: naive vs validate vs plan-aware"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Replay scenarios under each policy and compare them side by side.
    Run(run_cmd::RunArgs),
    /// Check scenarios without running them.
    Validate(validate_cmd::ValidateArgs),
    /// Compare two results (summary.csv files or directories) metric by metric.
    Diff(diff_cmd::DiffArgs),
    /// Run a capacity-planning experiment: a grid of scenario variants x seeds x policies.
    Sweep(sweep_cmd::SweepArgs),
    /// Combine the directories of a sharded sweep into the output of one sweep.
    Merge(sweep_cmd::MergeArgs),
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(if err.use_stderr() {
                EXIT_BAD_INPUT
            } else {
                EXIT_OK
            });
        }
    };
    let code = match cli.command {
        Command::Run(args) => run_cmd::run(args),
        Command::Validate(args) => validate_cmd::run(args),
        Command::Diff(args) => diff_cmd::run(args),
        Command::Sweep(args) => sweep_cmd::run(args),
        Command::Merge(args) => sweep_cmd::merge(args),
    };
    ExitCode::from(code)
}

static STDOUT_GONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Prints to stdout. A reader that went away (`plansim run ... | head`) is
/// not our error: printing stops quietly, and the work (and any `--out`
/// files) still completes.
pub(crate) fn out(text: &str) {
    use std::io::Write;
    use std::sync::atomic::Ordering;
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    if let Err(err) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        STDOUT_GONE.store(true, Ordering::Relaxed);
        if err.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("cannot write to stdout: {err}");
        }
    }
}

/// Parses a policy name for `--scheduler`.
fn parse_policy(name: &str) -> Result<Policy, String> {
    Policy::from_name(name).ok_or_else(|| {
        format!("unknown scheduler \"{name}\" (expected one of: naive, validate, plan-aware)")
    })
}

/// Most seeds one `--seeds` may ask for.
const MAX_SEEDS: u64 = 100_000;

/// A list of seeds from `--seeds` (a newtype: clap treats a bare `Vec` as
/// "the flag may repeat").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seeds(pub Vec<u64>);

/// Parses `--seeds`: a count `N` (seeds 0..N-1), a list `1,5,9`, or a
/// half-open range `A..B`.
fn parse_seeds(text: &str) -> Result<Seeds, String> {
    let number = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| format!("\"{s}\" is not a seed (a whole number of at least 0)"))
    };
    let seeds: Vec<u64> = if let Some((from, to)) = text.split_once("..") {
        let (from, to) = (number(from)?, number(to)?);
        if from >= to {
            return Err(format!("empty seed range {text}: write A..B with A < B"));
        }
        if to - from > MAX_SEEDS {
            return Err(format!("seed range {text} is longer than {MAX_SEEDS}"));
        }
        (from..to).collect()
    } else if text.contains(',') {
        let seeds = text
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(number)
            .collect::<Result<Vec<u64>, String>>()?;
        let mut unique = seeds.clone();
        unique.sort_unstable();
        unique.dedup();
        if unique.len() != seeds.len() {
            return Err(format!("seed list {text} repeats a seed"));
        }
        seeds
    } else {
        let count = number(text)?;
        if count == 0 || count > MAX_SEEDS {
            return Err(format!(
                "seed count {count} must be between 1 and {MAX_SEEDS}"
            ));
        }
        (0..count).collect()
    };
    if seeds.is_empty() {
        return Err("no seeds given".to_string());
    }
    Ok(Seeds(seeds))
}

#[cfg(test)]
mod tests {
    use super::{Seeds, parse_seeds};

    #[test]
    fn seeds_as_count_list_or_range() {
        assert_eq!(parse_seeds("3"), Ok(Seeds(vec![0, 1, 2])));
        assert_eq!(parse_seeds("1,5,9"), Ok(Seeds(vec![1, 5, 9])));
        assert_eq!(parse_seeds("7,"), Ok(Seeds(vec![7])));
        assert_eq!(parse_seeds("10..13"), Ok(Seeds(vec![10, 11, 12])));
        assert!(parse_seeds("0").is_err());
        assert!(parse_seeds("5..5").is_err());
        assert!(parse_seeds("1,1").is_err());
        assert!(parse_seeds("-1").is_err());
        assert!(parse_seeds("a,b").is_err());
        assert!(parse_seeds("99999999").is_err());
    }
}
