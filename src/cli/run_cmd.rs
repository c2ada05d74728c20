//! `plansim run PATH... [--scheduler NAME]... [--seed N | --seeds SEEDS] [--out DIR] [--trace] [--quiet]`

use std::path::PathBuf;

use clap::Args;

use super::inputs::{load_scenarios, scenario_files};
use super::{EXIT_BAD_INPUT, EXIT_EXPECT_FAILED, EXIT_OK, Seeds, parse_policy, parse_seeds};
use crate::model::policy::Policy;
use crate::report::atomic::write_atomic;
use crate::report::summary::{self, SummaryRow};
use crate::report::{outdir, table, trace_csv};
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
    #[arg(long, value_name = "N", conflicts_with = "seeds")]
    seed: Option<u64>,
    /// Run several seeds: a count N (seeds 0..N-1), a list 1,5,9 or a range A..B.
    #[arg(long, value_name = "SEEDS", value_parser = parse_seeds)]
    seeds: Option<Seeds>,
    /// Write DIR/summary.csv and DIR/comparison.md (and traces with --trace).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Also write one event log per run beside summary.csv (needs --out).
    #[arg(long)]
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
    // Claimed (locked) before anything runs; released, and removed if still
    // empty, when this function returns.
    let _out_dir = match args
        .out
        .as_deref()
        .map(|out| outdir::claim(out, outdir::Kind::Run))
    {
        Some(Err(message)) => {
            eprintln!("{message}");
            return EXIT_BAD_INPUT;
        }
        claimed => claimed,
    };
    if args.trace && args.out.is_none() {
        eprintln!(
            "warning: --trace writes its event logs beside summary.csv; add --out DIR to keep them"
        );
    }
    let plan = RunPlan {
        policies: (!args.schedulers.is_empty()).then(|| args.schedulers.clone()),
        seeds: args
            .seeds
            .clone()
            .map(|s| s.0)
            .or(args.seed.map(|seed| vec![seed])),
        trace: args.trace && args.out.is_some(),
    };

    let mut rows: Vec<SummaryRow> = Vec::new();
    let mut tables = String::new();
    let mut failed = 0usize;
    // Every run first: a run that hit the event cap is bad input, and bad
    // input writes nothing.
    let all: Vec<_> = scenarios
        .iter()
        .map(|scenario| run_scenario(scenario, &plan))
        .collect();
    let mut stopped = false;
    for (scenario, results) in scenarios.iter().zip(&all) {
        for result in results {
            if let Some(why) = &result.stopped_early {
                eprintln!(
                    "{} ({}, seed {}): {why}",
                    scenario.name, result.row.policy, result.row.seed
                );
                stopped = true;
            }
        }
    }
    if stopped {
        return EXIT_BAD_INPUT;
    }
    for (scenario, results) in scenarios.iter().zip(all) {
        let table = table::render(scenario, &results);
        for result in &results {
            for outcome in result.outcomes.iter().filter(|o| !o.held) {
                failed += 1;
                if args.quiet {
                    eprintln!(
                        "{} (seed {}): expect failed: {} (actual {})",
                        scenario.name,
                        result.row.seed,
                        outcome.expectation,
                        outcome.actual.render()
                    );
                }
            }
        }
        if !args.quiet {
            super::out(&format!("{table}\n"));
        }
        tables.push_str(&table);
        tables.push('\n');
        if let Some(out) = &args.out {
            for result in &results {
                if let Some(trace) = &result.trace {
                    let name = trace_csv::file_name(
                        &scenario.name,
                        result.row.policy.name(),
                        result.row.seed,
                    );
                    if let Err(message) =
                        write(&out.join(name), &trace_csv::render(scenario, trace))
                    {
                        eprintln!("{message}");
                        return EXIT_BAD_INPUT;
                    }
                }
            }
        }
        rows.extend(results.into_iter().map(|r| r.row));
    }
    if let Some(out) = &args.out {
        summary::sort_rows(&mut rows);
        let comparison = format!(
            "# plansim comparison\n\nThe terminal tables of `plansim run`, one per scenario. \
             Generated with summary.csv; do not edit.\n\n```text\n{}```\n",
            tables.trim_end().to_string() + "\n"
        );
        for (name, bytes) in [
            ("summary.csv", summary::render(&rows)),
            ("comparison.md", comparison.into_bytes()),
        ] {
            if let Err(message) = write(&out.join(name), &bytes) {
                eprintln!("{message}");
                return EXIT_BAD_INPUT;
            }
        }
    }
    if failed > 0 {
        eprintln!("{failed} expectation(s) failed");
        EXIT_EXPECT_FAILED
    } else {
        EXIT_OK
    }
}

fn write(path: &std::path::Path, bytes: &[u8]) -> Result<(), String> {
    write_atomic(path, bytes).map_err(|err| format!("{}: cannot write: {err}", path.display()))
}
