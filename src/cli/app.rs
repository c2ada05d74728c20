//! `plansim`'s commands and their help, and the entry point that runs one.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

use super::output::{EXIT_BAD_INPUT, EXIT_OK, errln, note_stdout, out, stdout_failed};

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
    Run(super::run_cmd::RunArgs),
    /// Check scenarios (or an experiment's every grid point) without running them.
    #[command(after_help = "\
Example: plansim validate scenarios/ experiments/churn-vs-count.yaml

Exit codes: 0 valid; 2 invalid.")]
    Validate(super::validate_cmd::ValidateArgs),
    /// Compare two results (summary.csv files or directories) metric by metric.
    #[command(after_help = "\
Example: plansim diff results/ /tmp/after --only violations,claim_failures

Exit codes: 0 same; 1 differs; 2 bad input.")]
    Diff(super::diff_cmd::DiffArgs),
    /// Run a capacity-planning experiment: a grid of scenario variants x seeds x policies.
    #[command(after_help = "\
Example: plansim sweep experiments/churn-vs-count.yaml -j 2 -o /tmp/churn

Exit codes: 0 ok; 2 bad input; 130 interrupted (Ctrl-C: continue with --resume).")]
    Sweep(super::sweep_cmd::SweepArgs),
    /// Combine the directories of a sharded sweep into the output of one sweep.
    #[command(after_help = "\
Example: plansim merge /shared/sweep/shard-* -o /shared/sweep/merged

Exit codes: 0 ok; 2 bad input, or shards missing or given twice.")]
    Merge(super::sweep_cmd::MergeArgs),
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
    Import(super::import_cmd::ImportArgs),
    /// Explain why two policies differ: the first decision where they diverge and what followed.
    #[command(after_help = "\
Example: plansim explain scenarios/csi-single-reader-count2.yaml --candidate validate

Exit codes: 0 ok (whether or not the policies diverge); 2 bad input.")]
    Explain(super::explain_cmd::ExplainArgs),
    /// Search generated (or mutated) scenarios for one where a policy misbehaves, and shrink it.
    #[command(after_help = "\
Example: plansim hunt --property validate-catches --budget 100000 -o found/

Exit codes: 0 every property held; 1 a property failed (the shrunk scenarios are written); 2 bad input.")]
    Hunt(super::hunt_cmd::HuntArgs),
    /// What happens if these Nomad job files are submitted: `nomad job plan`'s dry run per policy, then the simulated consequences.
    #[command(after_help = "\
Example: plansim plan example.nomad.hcl --cluster cluster.yaml -var count=2

Exit codes: 0 no allocation would be created or destroyed; 1 some would be (as `nomad job plan`); 2 bad input.")]
    Plan(super::plan_cmd::PlanArgs),
}

/// The shells `plansim completions` writes for.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

/// clap's message for a command line it refused, with every value the user
/// typed escaped as plansim escapes names ([`crate::names::one_line`]).
/// clap quotes values raw, and its terminal writer passes an ESC through
/// (or, off a terminal, strips the sequence and so quotes a value the user
/// did not type); a newline in a value would forge a line of its own. The
/// message is rendered again without clap's styling, so the only escape
/// sequences in it are the user's, and [`errln!`] escapes what is left.
fn usage_error_text() -> String {
    let args: Vec<String> = nomad_style_args()
        .into_iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    let Err(err) = Cli::command()
        .styles(clap::builder::Styles::plain())
        .try_get_matches_from(&args)
    else {
        return "error: the command line could not be parsed".to_string();
    };
    let mut text = err.render().ansi().to_string();
    // Longest first, so a value that holds another is escaped whole.
    let mut values: Vec<&str> = args
        .iter()
        .flat_map(|arg| [arg.as_str(), arg.split_once('=').map_or("", |(_, v)| v)])
        .filter(|value| crate::names::one_line(value) != *value)
        .collect();
    values.sort_by_key(|value| std::cmp::Reverse(value.len()));
    for value in values {
        text = text.replace(value, &crate::names::one_line(value));
    }
    text.trim_end().to_string()
}

/// The command line with Nomad's single-dash `-var` and `-var-file` (as
/// `nomad job plan` spells them) read as `--var` and `--var-file`.
fn nomad_style_args() -> Vec<std::ffi::OsString> {
    std::env::args_os()
        .map(|arg| match arg.to_str() {
            Some(text)
                if ["-var", "-var-file"].contains(&text)
                    || text.starts_with("-var=")
                    || text.starts_with("-var-file=") =>
            {
                format!("-{text}").into()
            }
            _ => arg,
        })
        .collect()
}

pub fn main() -> ExitCode {
    // A panic (a bug) prints one paragraph and writes a crash file, then
    // exits 101 as before.
    super::crash::install();
    super::crash::test_panic_if_asked();
    // An interrupt removes the temporaries of the files being written.
    super::interrupt::install();
    let cli = match Cli::try_parse_from(nomad_style_args()) {
        Ok(cli) => cli,
        Err(err) if err.use_stderr() => {
            errln!("{}", usage_error_text());
            return ExitCode::from(EXIT_BAD_INPUT);
        }
        Err(err) => {
            let printed = err.print();
            // `--help` and `--version` go to stdout.
            note_stdout(printed.and_then(|()| std::io::Write::flush(&mut std::io::stdout())));
            return ExitCode::from(stdout_exit(EXIT_OK));
        }
    };
    let code = match cli.command {
        Command::Run(args) => super::run_cmd::run(args),
        Command::Validate(args) => super::validate_cmd::run(args),
        Command::Diff(args) => super::diff_cmd::run(args),
        Command::Sweep(args) => super::sweep_cmd::run(args),
        Command::Merge(args) => super::sweep_cmd::merge(args),
        Command::Completions { shell } => completions(shell),
        Command::Man => man_page(),
        Command::Import(args) => super::import_cmd::run(args),
        Command::Explain(args) => super::explain_cmd::run(args),
        Command::Hunt(args) => super::hunt_cmd::run(args),
        Command::Plan(args) => super::plan_cmd::run(args),
    };
    ExitCode::from(stdout_exit(code))
}

/// `code`, unless stdout could not be written (a full disk, not a reader
/// that went away): then the error is named and the exit code is 2.
fn stdout_exit(code: u8) -> u8 {
    match stdout_failed() {
        Some(message) => {
            errln!("{message}");
            EXIT_BAD_INPUT
        }
        None => code,
    }
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
            errln!("cannot render the man page: {err}");
            EXIT_BAD_INPUT
        }
    }
}
