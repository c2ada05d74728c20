//! `plansim run PATH... [--scheduler NAME]... [--seed N | --seeds SEEDS] [--out DIR] [--trace] [--quiet] [--force]`

use std::path::PathBuf;

use clap::Args;

use super::args::{Seeds, parse_policy, parse_seeds};
use super::inputs::{load_scenarios, scenario_files};
use super::output::{EXIT_BAD_INPUT, EXIT_EXPECT_FAILED, EXIT_OK, errln};
use super::run_progress::RunBars;
use crate::model::policy::Policy;
use crate::run_command::{RunRequest, run_command};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Scenario files, or directories of *.yaml files (sorted); Nomad job files (.hcl, .nomad, .json) are run together as one scenario on --cluster.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    #[command(flatten)]
    given: super::plan_cmd::JobFileArgs,
    /// Run only this policy (repeat for several): naive, validate, plan-aware.
    #[arg(long = "scheduler", value_name = "NAME", value_parser = parse_policy)]
    schedulers: Vec<Policy>,
    /// Override every scenario's seed.
    #[arg(short, long, value_name = "N", conflicts_with = "seeds")]
    seed: Option<u64>,
    /// Run several seeds: a count N (seeds 0..N-1), a list 1,5,9, a range A..B (B excluded) or A..=B (B included).
    #[arg(long, value_name = "SEEDS", value_parser = parse_seeds)]
    seeds: Option<Seeds>,
    /// Write DIR/summary.csv and DIR/comparison.md (and traces with --trace).
    #[arg(short, long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Also write one event log per run beside summary.csv (needs --out).
    #[arg(long, requires = "out")]
    trace: bool,
    /// Print only failed expectations and errors.
    #[arg(short, long)]
    quiet: bool,
    /// Refuse a scenario with warnings (fields of Nomad files that can change
    /// placement and that plansim does not model).
    #[arg(long)]
    strict: bool,
    /// Also write an HTML report: DIR/index.html and one page per scenario.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// Write into --out and --report directories plansim did not write (never over an input, a symlink or a non-regular file).
    #[arg(long)]
    force: bool,
    /// Output format of the comparison: text (tables and verdicts) or json.
    #[arg(long, value_enum, default_value_t = super::explain_cmd::Format::Text)]
    format: super::explain_cmd::Format,
}

pub fn run(args: RunArgs) -> u8 {
    let (job_files, paths) = super::plan_cmd::split_job_files(&args.paths);
    if let Err(message) = args.given.check_used(&job_files) {
        errln!("{message}");
        return EXIT_BAD_INPUT;
    }
    let files = match scenario_files(&paths) {
        Ok(files) => files,
        Err(message) => {
            errln!("{message}");
            return EXIT_BAD_INPUT;
        }
    };
    let mut scenarios = match load_scenarios(&files, args.strict) {
        Ok(scenarios) => scenarios,
        Err(errors) => {
            for err in errors {
                errln!("{err}");
            }
            return EXIT_BAD_INPUT;
        }
    };
    if !job_files.is_empty() {
        match super::plan_cmd::compose_job_files(&job_files, &args.given, &[], args.strict) {
            Ok(composed) => scenarios.push(composed.scenario),
            Err(message) => {
                errln!("{message}");
                return EXIT_BAD_INPUT;
            }
        }
    }
    let json = args.format == super::explain_cmd::Format::Json;
    let request = RunRequest::new(
        (!args.schedulers.is_empty()).then(|| args.schedulers.clone()),
        args.seeds
            .clone()
            .map(|s| s.0)
            .or(args.seed.map(|seed| vec![seed])),
        args.out.as_deref(),
        args.trace,
        args.report.as_deref(),
        json,
        args.force,
    );
    let mut bars = RunBars {
        quiet: args.quiet,
        print_tables: !args.quiet && !json,
    };
    let outcome = match run_command(&scenarios, &request, &mut bars) {
        Ok(outcome) => outcome,
        Err(lines) => {
            for line in lines {
                errln!("{line}");
            }
            return EXIT_BAD_INPUT;
        }
    };
    let failed = outcome.failed;
    if json {
        super::output::out(&outcome.json_document());
    } else if !args.quiet {
        super::output::out(&outcome.verdict_lines(&scenarios));
    }
    if failed > 0 {
        errln!("{failed} expectation(s) failed");
        EXIT_EXPECT_FAILED
    } else {
        EXIT_OK
    }
}
