//! `plansim run` as a library call: every run of every scenario, then the
//! files of `--out` (summary.csv, comparison.md, traces) and `--report`
//! (one HTML page per scenario and an index). The command line parses the
//! arguments and prints; what it prints comes from here, through
//! [`RunObserver`] while the work goes on and [`RunOutcome`] at the end.

use std::collections::BTreeSet;
use std::path::Path;

use crate::model::expect::ExpectationOutcome;
use crate::model::scenario::Scenario;
use crate::report::atomic::write_atomic;
use crate::report::outdir;
use crate::report::run_report;
use crate::report::stale_traces;
use crate::report::summary::{self, SummaryRow};
use crate::report::table::{self, Verdict};
use crate::report::trace_csv::{self, TraceFile};
use crate::run::{RunPlan, RunResult, run_scenario_observed, run_scenario_streamed};

/// What `plansim run` was asked to do, once its arguments are parsed.
#[derive(Clone, Debug)]
pub struct RunRequest<'a> {
    /// The policies and seeds to run (`trace` is set from `report` by
    /// [`RunRequest::new`]: the report draws its timelines from the traces).
    pub plan: RunPlan,
    /// `--out DIR`: summary.csv and comparison.md.
    pub out: Option<&'a Path>,
    /// `--trace`: one event log per run in `out`.
    pub trace: bool,
    /// `--report DIR`: the HTML report.
    pub report: Option<&'a Path>,
    /// `--format json`: collect the JSON document (otherwise left out).
    pub json: bool,
    /// `--force`: write into `out` and `report` even if plansim did not
    /// write them (the output rules: `report::outdir`).
    pub force: bool,
}

impl<'a> RunRequest<'a> {
    pub fn new(
        policies: Option<Vec<crate::model::policy::Policy>>,
        seeds: Option<Vec<u64>>,
        out: Option<&'a Path>,
        trace: bool,
        report: Option<&'a Path>,
        json: bool,
        force: bool,
    ) -> RunRequest<'a> {
        RunRequest {
            plan: RunPlan {
                policies,
                seeds,
                // The report draws its timelines from the traces (kept in memory).
                trace: report.is_some(),
            },
            out,
            trace,
            report,
            json,
            force,
        }
    }

    /// Without a report, `--trace` streams each run's trace to its file as
    /// the run goes (held nowhere); the files are put in place only once
    /// every run has finished.
    fn stream_to(&self) -> Option<&'a Path> {
        self.out.filter(|_| self.trace && self.report.is_none())
    }
}

/// Progress of one scenario's runs (which go in parallel).
pub trait ScenarioProgress: Sync {
    /// `ms` more simulated time and `steps` more queue entries, in one run.
    fn advance(&self, ms: u64, steps: u64);
    /// Every run of the scenario has finished.
    fn finish(self: Box<Self>);
}

/// What the caller hears while a run command works, in order.
pub trait RunObserver {
    /// `runs` runs of `scenario` start.
    fn runs_started(&mut self, scenario: &Scenario, runs: usize) -> Box<dyn ScenarioProgress>;
    /// A scenario's table and its failed expectations are ready; called
    /// before its files are written.
    fn scenario_done(&mut self, done: &ScenarioDone);
    /// Traces of an earlier run were removed from `dir`.
    fn stale_traces_removed(&mut self, dir: &Path, names: &[String]);
}

/// One scenario's results, as the terminal shows them.
pub struct ScenarioDone<'a> {
    pub scenario: &'a Scenario,
    /// The scenario's terminal table (no trailing newline).
    pub table: &'a str,
    /// Every expectation that did not hold, with the seed of its run.
    pub failed: Vec<(u64, &'a ExpectationOutcome)>,
}

/// What a finished run command hands back for the final lines.
pub struct RunOutcome {
    /// How many expectations failed, over every run.
    pub failed: usize,
    verdicts: Vec<Vec<Verdict>>,
    json_scenarios: Vec<serde_json::Value>,
}

impl RunOutcome {
    /// The JSON document of `--format json`.
    pub fn json_document(self) -> String {
        table::json_document(self.json_scenarios, &self.verdicts)
    }

    /// One verdict line per scenario and the total, each ending in a newline.
    pub fn verdict_lines(&self, scenarios: &[Scenario]) -> String {
        let mut lines = String::new();
        for (scenario, scenario_verdicts) in scenarios.iter().zip(&self.verdicts) {
            lines.push_str(&table::verdict_line(scenario, scenario_verdicts));
            lines.push('\n');
        }
        lines.push_str(&table::total_line(&self.verdicts));
        lines.push('\n');
        lines
    }
}

/// Runs `scenarios` as `request` says and writes its files. `Err` holds the
/// lines to report (on stderr) of bad input: a directory that cannot be
/// claimed or written, or a run that hit the event cap; a run that hit the
/// cap writes nothing.
pub fn run_command(
    scenarios: &[Scenario],
    request: &RunRequest,
    observer: &mut dyn RunObserver,
) -> Result<RunOutcome, Vec<String>> {
    // Claimed (locked) before anything runs; released when this function
    // returns, and what a failed command wrote into a new directory removed.
    let claim = |dir: &Path, kind| outdir::claim(dir, kind, request.force).map_err(|e| vec![e]);
    let mut out_dir = request
        .out
        .map(|out| claim(out, outdir::Kind::Run))
        .transpose()?;
    // `--report` into the `--out` directory shares its claim.
    let mut report_dir = match request.report {
        Some(dir) if request.out.is_none_or(|out| !outdir::same_dir(out, dir)) => {
            Some(claim(dir, outdir::Kind::Report)?)
        }
        _ => None,
    };
    // The fixed names are checked before the runs, not after them.
    let fixed = [(request.out, "summary.csv"), (request.out, "comparison.md")]
        .into_iter()
        .chain([(request.report, "index.html")])
        .filter_map(|(dir, name)| Some(dir?.join(name)));
    for path in fixed {
        crate::fsio::check_replace(&path).map_err(|err| vec![err.to_string()])?;
    }
    let all = run_every_scenario(scenarios, request, observer)?;
    let mut files = Outputs::new(scenarios, request);
    for (scenario, results) in scenarios.iter().zip(all) {
        files
            .add(scenario, results, observer)
            .map_err(|e| vec![e])?;
    }
    let outcome = files.finish(observer).map_err(|e| vec![e])?;
    for dir in out_dir.iter_mut().chain(report_dir.iter_mut()) {
        dir.keep();
    }
    Ok(outcome)
}

/// Every run first: a run that hit the event cap is bad input, and bad
/// input writes nothing.
fn run_every_scenario(
    scenarios: &[Scenario],
    request: &RunRequest,
    observer: &mut dyn RunObserver,
) -> Result<Vec<ScenarioRuns>, Vec<String>> {
    let plan = &request.plan;
    let all: Vec<_> = scenarios
        .iter()
        .map(|scenario| {
            let runs = plan.policies_for(scenario).len() * plan.seeds_for(scenario).len();
            let bar = observer.runs_started(scenario, runs);
            let progress = |ms, steps| bar.advance(ms, steps);
            let results: ScenarioRuns = match request.stream_to() {
                Some(out) => run_scenario_streamed(scenario, plan, &progress, &|policy, seed| {
                    let name = trace_csv::file_name(&scenario.name, policy.name(), seed);
                    TraceFile::create(&out.join(name), scenario)
                })
                .into_iter()
                .map(|(result, file)| (result, Some(file)))
                .collect(),
                None => run_scenario_observed(scenario, plan, &progress)
                    .into_iter()
                    .map(|result| (result, None))
                    .collect(),
            };
            bar.finish();
            results
        })
        .collect();
    let stopped: Vec<String> = scenarios
        .iter()
        .zip(&all)
        .flat_map(|(scenario, results)| {
            results.iter().filter_map(move |(result, _)| {
                let why = result.stopped_early.as_ref()?;
                Some(format!(
                    "{} ({}, seed {}): {why}",
                    scenario.name, result.row.policy, result.row.seed
                ))
            })
        })
        .collect();
    if stopped.is_empty() {
        Ok(all)
    } else {
        Err(stopped)
    }
}

/// One scenario's runs, each with its streamed trace file if any.
type ScenarioRuns = Vec<(RunResult, Option<TraceFile>)>;

/// The files of one run command, gathered scenario by scenario.
struct Outputs<'a> {
    request: &'a RunRequest<'a>,
    rows: Vec<SummaryRow>,
    tables: String,
    failed: usize,
    verdicts: Vec<Vec<Verdict>>,
    json_scenarios: Vec<serde_json::Value>,
    /// Report pages written: (scenario name, file name, verdicts).
    report_pages: Vec<(String, String, Vec<Verdict>)>,
    page_files: Vec<String>,
    written_traces: BTreeSet<String>,
}

impl<'a> Outputs<'a> {
    fn new(scenarios: &[Scenario], request: &'a RunRequest<'a>) -> Outputs<'a> {
        Outputs {
            request,
            rows: Vec::new(),
            tables: String::new(),
            failed: 0,
            verdicts: Vec::new(),
            json_scenarios: Vec::new(),
            report_pages: Vec::new(),
            page_files: run_report::page_file_names(scenarios.iter().map(|s| s.name.as_str())),
            written_traces: BTreeSet::new(),
        }
    }

    /// One scenario's results: told to the observer, then its report page
    /// and traces written.
    fn add(
        &mut self,
        scenario: &Scenario,
        results: ScenarioRuns,
        observer: &mut dyn RunObserver,
    ) -> Result<(), String> {
        let (results, trace_files): (Vec<RunResult>, Vec<Option<TraceFile>>) =
            results.into_iter().unzip();
        let table = table::render(scenario, &results);
        let failed: Vec<(u64, &ExpectationOutcome)> = results
            .iter()
            .flat_map(|result| {
                let seed = result.row.seed;
                result
                    .outcomes
                    .iter()
                    .filter(|o| !o.held)
                    .map(move |o| (seed, o))
            })
            .collect();
        self.failed += failed.len();
        observer.scenario_done(&ScenarioDone {
            scenario,
            table: &table,
            failed,
        });
        let scenario_verdicts = table::verdicts(&results);
        if self.request.json {
            self.json_scenarios
                .push(table::scenario_json(scenario, &results, &scenario_verdicts));
        }
        if let Some(dir) = self.request.report {
            let file = self.page_files[self.report_pages.len()].clone();
            write(
                &dir.join(&file),
                run_report::scenario_page(scenario, &results).as_bytes(),
            )?;
            self.report_pages
                .push((scenario.name.clone(), file, scenario_verdicts.clone()));
        }
        self.verdicts.push(scenario_verdicts);
        self.tables.push_str(&table);
        self.tables.push('\n');
        if let Some(out) = self.request.out.filter(|_| self.request.trace) {
            self.write_traces(out, scenario, &results, trace_files)?;
        }
        self.rows.extend(results.into_iter().map(|r| r.row));
        Ok(())
    }

    /// Each run's trace file: a streamed one put in place, or one rendered
    /// from the trace kept in memory.
    fn write_traces(
        &mut self,
        out: &Path,
        scenario: &Scenario,
        results: &[RunResult],
        trace_files: Vec<Option<TraceFile>>,
    ) -> Result<(), String> {
        for (result, file) in results.iter().zip(trace_files) {
            let name =
                trace_csv::file_name(&scenario.name, result.row.policy.name(), result.row.seed);
            let path = out.join(&name);
            let written = match (file, &result.trace) {
                (Some(file), _) => file.commit().map_err(|err| {
                    format!(
                        "{}: cannot write: {err}",
                        crate::names::one_line_path(&path)
                    )
                }),
                (None, Some(trace)) => write(&path, &trace_csv::render(scenario, trace)),
                (None, None) => continue,
            };
            self.written_traces.insert(name);
            written?;
        }
        Ok(())
    }

    /// summary.csv, comparison.md, the stale traces removed, and the
    /// report's index page.
    fn finish(mut self, observer: &mut dyn RunObserver) -> Result<RunOutcome, String> {
        if let Some(out) = self.request.out {
            summary::sort_rows(&mut self.rows);
            let comparison = format!(
                "# plansim comparison\n\nThe terminal tables of `plansim run`, one per scenario. \
                 Generated with summary.csv; do not edit.\n\n```text\n{}```\n",
                self.tables.trim_end().to_string() + "\n"
            );
            for (name, bytes) in [
                ("summary.csv", summary::render(&self.rows)),
                ("comparison.md", comparison.into_bytes()),
            ] {
                write(&out.join(name), &bytes)?;
            }
            // Traces of an earlier run in DIR that this run did not write would
            // read as this run's: remove them (only names plansim writes).
            let removed = stale_traces::remove_stale(out, &self.written_traces)?;
            if !removed.is_empty() {
                observer.stale_traces_removed(out, &removed);
            }
        }
        if let Some(dir) = self.request.report {
            write(
                &dir.join("index.html"),
                run_report::index_page(&self.report_pages).as_bytes(),
            )?;
        }
        Ok(RunOutcome {
            failed: self.failed,
            verdicts: self.verdicts,
            json_scenarios: self.json_scenarios,
        })
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    write_atomic(path, bytes)
        .map_err(|err| format!("{}: cannot write: {err}", crate::names::one_line_path(path)))
}
