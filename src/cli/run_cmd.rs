//! `plansim run PATH... [--scheduler NAME]... [--seed N | --seeds SEEDS] [--out DIR] [--trace] [--quiet]`

use std::path::PathBuf;

use clap::Args;

use super::inputs::{load_scenarios, scenario_files};
use super::run_progress;
use super::{EXIT_BAD_INPUT, EXIT_EXPECT_FAILED, EXIT_OK, Seeds, parse_policy, parse_seeds};
use crate::model::policy::Policy;
use crate::report::atomic::write_atomic;
use crate::report::summary::{self, SummaryRow};
use crate::report::trace_csv::{self, TraceFile};
use crate::report::{outdir, run_report, table};
use crate::run::{RunPlan, RunResult, run_scenario_observed, run_scenario_streamed};

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Scenario files, or directories of *.yaml files (sorted).
    #[arg(required = true)]
    paths: Vec<PathBuf>,
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
    /// Output format of the comparison: text (tables and verdicts) or json.
    #[arg(long, value_enum, default_value_t = super::explain_cmd::Format::Text)]
    format: super::explain_cmd::Format,
}

pub fn run(args: RunArgs) -> u8 {
    let files = match scenario_files(&args.paths) {
        Ok(files) => files,
        Err(message) => {
            eprintln!("{message}");
            return EXIT_BAD_INPUT;
        }
    };
    let scenarios = match load_scenarios(&files, args.strict) {
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
    if let Some(dir) = &args.report
        && let Err(err) = std::fs::create_dir_all(dir)
    {
        eprintln!("{}: cannot create output directory: {err}", dir.display());
        return EXIT_BAD_INPUT;
    }
    let plan = RunPlan {
        policies: (!args.schedulers.is_empty()).then(|| args.schedulers.clone()),
        seeds: args
            .seeds
            .clone()
            .map(|s| s.0)
            .or(args.seed.map(|seed| vec![seed])),
        // The report draws its timelines from the traces (kept in memory).
        trace: args.report.is_some(),
    };
    // Without a report, `--trace` streams each run's trace to its file as
    // the run goes (held nowhere); the files are put in place only once
    // every run has finished.
    let stream_to = args
        .out
        .as_deref()
        .filter(|_| args.trace && args.report.is_none());
    let json = args.format == super::explain_cmd::Format::Json;

    let mut rows: Vec<SummaryRow> = Vec::new();
    let mut tables = String::new();
    let mut failed = 0usize;
    let mut verdicts: Vec<Vec<table::Verdict>> = Vec::new();
    let mut json_scenarios: Vec<serde_json::Value> = Vec::new();
    let mut report_pages: Vec<(String, String, Vec<table::Verdict>)> = Vec::new();
    let page_files = run_report::page_file_names(scenarios.iter().map(|s| s.name.as_str()));
    // Every run first: a run that hit the event cap is bad input, and bad
    // input writes nothing.
    let all: Vec<_> = scenarios
        .iter()
        .map(|scenario| {
            let runs = plan.policies_for(scenario).len() * plan.seeds_for(scenario).len();
            let bar = run_progress::bar(scenario, runs, args.quiet);
            let events = std::sync::atomic::AtomicU64::new(0);
            let progress = |ms, steps| run_progress::report(&bar, &events, ms, steps);
            let results: Vec<(RunResult, Option<TraceFile>)> = match stream_to {
                Some(out) => run_scenario_streamed(scenario, &plan, &progress, &|policy, seed| {
                    let name = trace_csv::file_name(&scenario.name, policy.name(), seed);
                    TraceFile::create(&out.join(name), scenario)
                })
                .into_iter()
                .map(|(result, file)| (result, Some(file)))
                .collect(),
                None => run_scenario_observed(scenario, &plan, &progress)
                    .into_iter()
                    .map(|result| (result, None))
                    .collect(),
            };
            bar.finish_and_clear();
            results
        })
        .collect();
    let mut written_traces = std::collections::BTreeSet::new();
    let mut stopped = false;
    for (scenario, results) in scenarios.iter().zip(&all) {
        for (result, _) in results {
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
        let (results, trace_files): (Vec<RunResult>, Vec<Option<TraceFile>>) =
            results.into_iter().unzip();
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
        if !args.quiet && !json {
            super::out(&format!("{table}\n"));
        }
        let scenario_verdicts = table::verdicts(&results);
        if json {
            json_scenarios.push(table::scenario_json(scenario, &results, &scenario_verdicts));
        }
        if let Some(dir) = &args.report {
            let file = page_files[report_pages.len()].clone();
            if let Err(message) = write(
                &dir.join(&file),
                run_report::scenario_page(scenario, &results).as_bytes(),
            ) {
                eprintln!("{message}");
                return EXIT_BAD_INPUT;
            }
            report_pages.push((scenario.name.clone(), file, scenario_verdicts.clone()));
        }
        verdicts.push(scenario_verdicts);
        tables.push_str(&table);
        tables.push('\n');
        if let Some(out) = args.out.as_ref().filter(|_| args.trace) {
            for (result, file) in results.iter().zip(trace_files) {
                let name =
                    trace_csv::file_name(&scenario.name, result.row.policy.name(), result.row.seed);
                let path = out.join(&name);
                let written = match (file, &result.trace) {
                    (Some(file), _) => file
                        .commit()
                        .map_err(|err| format!("{}: cannot write: {err}", path.display())),
                    (None, Some(trace)) => write(&path, &trace_csv::render(scenario, trace)),
                    (None, None) => continue,
                };
                written_traces.insert(name);
                if let Err(message) = written {
                    eprintln!("{message}");
                    return EXIT_BAD_INPUT;
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
        // Traces of an earlier run in DIR that this run did not write would
        // read as this run's: remove them (only names plansim writes).
        match super::traces::remove_stale(out, &written_traces) {
            Ok(removed) if !removed.is_empty() && !args.quiet => eprintln!(
                "removed {} trace file(s) of an earlier run from {}",
                removed.len(),
                out.display()
            ),
            Ok(_) => {}
            Err(message) => {
                eprintln!("{message}");
                return EXIT_BAD_INPUT;
            }
        }
    }
    if let Some(dir) = &args.report
        && let Err(message) = write(
            &dir.join("index.html"),
            run_report::index_page(&report_pages).as_bytes(),
        )
    {
        eprintln!("{message}");
        return EXIT_BAD_INPUT;
    }
    if json {
        super::out(&table::json_document(json_scenarios, &verdicts));
    } else if !args.quiet {
        let mut lines = String::new();
        for (scenario, scenario_verdicts) in scenarios.iter().zip(&verdicts) {
            lines.push_str(&table::verdict_line(scenario, scenario_verdicts));
            lines.push('\n');
        }
        lines.push_str(&table::total_line(&verdicts));
        lines.push('\n');
        super::out(&lines);
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
