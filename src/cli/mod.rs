//! The command line: argument parsing and the commands. The thin shell that
//! reads files, calls the pure core and writes results.

mod diff_cmd;
mod explain_cmd;
mod hunt_cmd;
mod import_cmd;
mod inputs;
mod run_cmd;
mod run_progress;
mod sweep_cmd;
mod validate_cmd;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

use crate::model::policy::Policy;

/// Exit codes, as `--help` and README list them.
pub const EXIT_OK: u8 = 0;
pub const EXIT_EXPECT_FAILED: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;

/// Shown under every `--help`: what the exit codes mean and where the
/// formats are described.
const AFTER_HELP: &str = "\
Exit codes: 0 ok; 1 an `expect` failed (run) or the results differ (diff);
2 bad input or usage (nothing is written); 130 interrupted (sweep).

Formats: docs/scenario-format.md (scenario files), docs/results-format.md
(every output file and column).";

#[derive(Parser, Debug)]
#[command(
    name = "plansim",
    version,
    about = "Deterministic simulator of Nomad's CSI volume scheduling: naive vs validate vs plan-aware",
    after_help = AFTER_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Replay scenarios under each policy and compare them side by side.
    #[command(after_help = "\
Example: plansim run scenarios/ --out results/ --trace

Exit codes: 0 ok; 1 an `expect` failed; 2 bad input or usage (nothing is written).")]
    Run(run_cmd::RunArgs),
    /// Check scenarios (or an experiment's every grid point) without running them.
    #[command(after_help = "\
Example: plansim validate scenarios/ experiments/churn-vs-count.yaml

Exit codes: 0 valid; 2 invalid.")]
    Validate(validate_cmd::ValidateArgs),
    /// Compare two results (summary.csv files or directories) metric by metric.
    #[command(after_help = "\
Example: plansim diff results/ /tmp/after --only violations,claim_failures

Exit codes: 0 same; 1 differs; 2 bad input.")]
    Diff(diff_cmd::DiffArgs),
    /// Run a capacity-planning experiment: a grid of scenario variants x seeds x policies.
    #[command(after_help = "\
Example: plansim sweep experiments/churn-vs-count.yaml -j 2 -o /tmp/churn

Exit codes: 0 ok; 2 bad input; 130 interrupted (Ctrl-C: continue with --resume).")]
    Sweep(sweep_cmd::SweepArgs),
    /// Combine the directories of a sharded sweep into the output of one sweep.
    #[command(after_help = "\
Example: plansim merge /shared/sweep/shard-* -o /shared/sweep/merged

Exit codes: 0 ok; 2 bad input, or shards missing or given twice.")]
    Merge(sweep_cmd::MergeArgs),
    /// Print a shell completion script: plansim completions bash|zsh|fish.
    #[command(after_help = "\
Example: plansim completions bash > ~/.local/share/bash-completion/completions/plansim

Exit codes: 0 ok; 2 unknown shell.")]
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: CompletionShell,
    },
    /// Print plansim's man page (roff) to stdout.
    #[command(after_help = "\
Example: plansim man > plansim.1 && man ./plansim.1

Exit codes: 0 ok.")]
    Man,
    /// Write a scenario from a live cluster's saved state.
    #[command(after_help = "\
Example: plansim import nomad snapshot/ -o cluster.yaml

Exit codes: 0 ok; 2 bad input (nothing is written).")]
    Import(import_cmd::ImportArgs),
    /// Explain why two policies differ: the first decision where they diverge and what followed.
    #[command(after_help = "\
Example: plansim explain scenarios/csi-single-reader-count2.yaml --candidate validate

Exit codes: 0 ok (whether or not the policies diverge); 2 bad input.")]
    Explain(explain_cmd::ExplainArgs),
    /// Search generated (or mutated) scenarios for one where a policy misbehaves, and shrink it.
    #[command(after_help = "\
Example: plansim hunt --property validate-catches --budget 100000 -o found/

Exit codes: 0 every property held; 1 a property failed (the shrunk scenarios are written); 2 bad input.")]
    Hunt(hunt_cmd::HuntArgs),
}

/// The shells `plansim completions` writes for.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum CompletionShell {
    Bash,
    Zsh,
    Fish,
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
        Command::Completions { shell } => completions(shell),
        Command::Man => man_page(),
        Command::Import(args) => import_cmd::run(args),
        Command::Explain(args) => explain_cmd::run(args),
        Command::Hunt(args) => hunt_cmd::run(args),
    };
    ExitCode::from(code)
}

fn completions(shell: CompletionShell) -> u8 {
    use clap_complete::Shell;
    let shell = match shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "plansim", &mut script);
    out(&String::from_utf8_lossy(&script));
    EXIT_OK
}

fn man_page() -> u8 {
    let mut page = Vec::new();
    match clap_mangen::Man::new(Cli::command()).render(&mut page) {
        Ok(()) => {
            out(&String::from_utf8_lossy(&page));
            EXIT_OK
        }
        Err(err) => {
            eprintln!("cannot render the man page: {err}");
            EXIT_BAD_INPUT
        }
    }
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

/// Parses `--seeds`: a count `N` (seeds 0..N-1), a list `1,5,9`, a
/// half-open range `A..B` (B excluded, as in Rust) or `A..=B` (B included).
fn parse_seeds(text: &str) -> Result<Seeds, String> {
    let number = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| format!("\"{s}\" is not a seed (a whole number of at least 0)"))
    };
    let seeds: Vec<u64> = if let Some((from, to)) = text.split_once("..") {
        let (from, to) = match to.strip_prefix('=') {
            // A..=B is A..B+1; B = u64::MAX has no successor, so it is refused.
            Some(last) => (
                number(from)?,
                number(last)?
                    .checked_add(1)
                    .ok_or_else(|| format!("seed range {text} ends past the largest seed"))?,
            ),
            None => (number(from)?, number(to)?),
        };
        if from >= to {
            return Err(format!(
                "empty seed range {text}: write A..B (B excluded) with A < B, or A..=B (B included) with A <= B"
            ));
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
        assert_eq!(parse_seeds("10..=13"), Ok(Seeds(vec![10, 11, 12, 13])));
        assert_eq!(parse_seeds("5..=5"), Ok(Seeds(vec![5])));
        assert!(parse_seeds("6..=5").is_err());
        assert!(parse_seeds("0..=18446744073709551615").is_err());
        assert!(parse_seeds("0").is_err());
        assert!(parse_seeds("5..5").is_err());
        assert!(parse_seeds("1,1").is_err());
        assert!(parse_seeds("-1").is_err());
        assert!(parse_seeds("a,b").is_err());
        assert!(parse_seeds("99999999").is_err());
    }
}
