//! `plansim run PATH... [--scheduler NAME]... [--seed N] [--out DIR] [--trace] [--quiet]`

use std::path::PathBuf;

use clap::Args;

use super::inputs::{load_scenarios, scenario_files};
use super::{EXIT_BAD_INPUT, EXIT_EXPECT_FAILED, EXIT_OK, parse_policy};
use crate::model::policy::Policy;
use crate::report::atomic::write_atomic;
use crate::report::summary::{self, SummaryRow};
use crate::report::{table, trace_csv};
use crate::run::{RunPlan, run_scenario};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Scenario files, or directories of *.yaml files (sorted).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// Run only this policy (repeat for several): naive, validate, plan-aware.
    #[arg(long = "scheduler", value_name = "NAME", value_parser = parse_policy)]
    schedulers: Vec<Policy>,
    /// Override every scenario's seed.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Write DIR/summary.csv (and traces with --trace).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Also write one event log per run beside summary.csv.
    #[arg(long, requires = "out")]
    trace: bool,
    /// Print only failed expectations and errors.
    #[arg(long)]
    quiet: bool,
}

pub fn run(args: RunArgs) -> u8 {
    let files = match scenario_files(&args.paths) {
        Ok(files) => files,
        Err(message) => {
            eprintln!("{message}");
            return EXIT_BAD_INPUT;
        }
    };
    let scenarios = match load_scenarios(&files) {
        Ok(scenarios) => scenarios,
        Err(errors) => {
            for err in errors {
                eprintln!("{err}");
            }
            return EXIT_BAD_INPUT;
        }
    };
    if let Some(out) = &args.out
        && let Err(err) = std::fs::create_dir_all(out)
    {
        eprintln!("{}: cannot create output directory: {err}", out.display());
        return EXIT_BAD_INPUT;
    }
    let plan = RunPlan {
        policies: (!args.schedulers.is_empty()).then(|| args.schedulers.clone()),
        seeds: args.seed.map(|seed| vec![seed]),
        trace: args.trace,
    };

    let mut rows: Vec<SummaryRow> = Vec::new();
    let mut failed = 0usize;
    for scenario in &scenarios {
        let results = run_scenario(scenario, &plan);
        let outcomes: Vec<_> = results
            .iter()
            .flat_map(|r| r.outcomes.iter().cloned())
            .collect();
        let failures: Vec<_> = outcomes.iter().filter(|o| !o.held).collect();
        failed += failures.len();
        if !args.quiet {
            println!("{}", table::render(scenario, &results));
        } else {
            for outcome in failures {
                eprintln!(
                    "{}: expect failed: {} (actual {})",
                    scenario.name,
                    outcome.expectation,
                    outcome.actual.render()
                );
            }
        }
        if let Some(out) = &args.out {
            for result in &results {
                if let Some(trace) = &result.trace {
                    let name = trace_csv::file_name(
                        &scenario.name,
                        result.row.policy.name(),
                        result.row.seed,
                    );
                    if let Err(err) =
                        write_atomic(&out.join(&name), &trace_csv::render(scenario, trace))
                    {
                        eprintln!("{}: cannot write: {err}", out.join(name).display());
                        return EXIT_BAD_INPUT;
                    }
                }
            }
        }
        rows.extend(results.into_iter().map(|r| r.row));
    }
    if let Some(out) = &args.out {
        summary::sort_rows(&mut rows);
        let path = out.join("summary.csv");
        if let Err(err) = write_atomic(&path, &summary::render(&rows)) {
            eprintln!("{}: cannot write: {err}", path.display());
            return EXIT_BAD_INPUT;
        }
    }
    if failed > 0 {
        eprintln!("{failed} expectation(s) failed");
        EXIT_EXPECT_FAILED
    } else {
        EXIT_OK
    }
}
