//! `plansim sweep EXPERIMENT.yaml [--jobs N] [--out DIR] [--shard I/N] [--resume]`
//! and `plansim merge SHARD_DIR... --out DIR`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::mpsc;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;

use super::inputs::{FileKind, file_kind};
use super::{EXIT_BAD_INPUT, EXIT_OK};
use crate::experiment::grid::{Shard, coord};
use crate::experiment::spec::{self, Experiment};
use crate::model::metrics::Metrics;
use crate::report::atomic::write_atomic;
use crate::report::journal::{self, Header};
use crate::report::outdir;
use crate::report::sweep;
use crate::sim::{RunOptions, simulate};

const INPUTS: &str = "inputs";

#[derive(Args, Debug)]
pub struct SweepArgs {
    /// The experiment file.
    experiment: PathBuf,
    /// Worker threads (default: every core). Never changes a byte of output.
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=256))]
    jobs: Option<u16>,
    /// Output directory (default: sweep-<experiment name>).
    #[arg(short, long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Run only the I-th of N disjoint slices of the runs (merge them with `plansim merge`).
    #[arg(long, value_name = "I/N", value_parser = Shard::parse)]
    shard: Option<Shard>,
    /// Continue a sweep in DIR: skip the runs it already recorded.
    #[arg(long)]
    resume: bool,
    /// No progress bar and no summary lines.
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Directories written by `plansim sweep --shard I/N`, one per shard.
    #[arg(required = true)]
    shards: Vec<PathBuf>,
    /// Where to write the merged results.
    #[arg(short, long, value_name = "DIR")]
    out: PathBuf,
    /// No summary lines.
    #[arg(short, long)]
    quiet: bool,
}

/// Set by the first Ctrl-C: workers start no new run, finished runs are
/// journaled, and the sweep stops so `--resume` can finish it.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// The exit code of a sweep stopped by Ctrl-C (128 + SIGINT, as shells expect).
pub const EXIT_INTERRUPTED: u8 = 130;

pub fn run(args: SweepArgs) -> u8 {
    // A second Ctrl-C stops at once; the journal is still whole up to its
    // last complete line.
    let _ = ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, AtomicOrdering::SeqCst) {
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
    });
    match sweep_command(&args) {
        Ok(()) if INTERRUPTED.load(AtomicOrdering::SeqCst) => EXIT_INTERRUPTED,
        Ok(()) => EXIT_OK,
        Err(message) => {
            eprintln!("{message}");
            EXIT_BAD_INPUT
        }
    }
}

pub fn merge(args: MergeArgs) -> u8 {
    match merge_command(&args) {
        Ok(()) => EXIT_OK,
        Err(message) => {
            eprintln!("{message}");
            EXIT_BAD_INPUT
        }
    }
}

fn header_for(experiment: &Experiment, shard: Shard) -> Header {
    Header {
        fingerprint: journal::fingerprint(&[
            crate::report::summary::VERSION,
            &experiment.experiment_text,
            &experiment.scenario_file_name,
            &experiment.scenario_text,
        ]),
        runs: experiment.runs(),
        shard: shard.to_string(),
    }
}

fn sweep_command(args: &SweepArgs) -> Result<(), String> {
    if file_kind(&args.experiment) == FileKind::Scenario {
        return Err(format!(
            "{}: this is a scenario file: use plansim run {} (an experiment file names its scenario with `scenario:`; see docs/experiment-format.md)",
            args.experiment.display(),
            args.experiment.display()
        ));
    }
    let experiment_file = file_name_of(&args.experiment);
    let experiment = spec::load(&args.experiment, None).map_err(|err| err.to_string())?;
    if !args.quiet {
        for warning in &experiment.warnings {
            eprintln!("warning: {warning}");
        }
    }
    let shard = args.shard.unwrap_or(Shard::WHOLE);
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!("sweep-{}", crate::names::slug(&experiment.name)))
    });
    let _out_dir = outdir::claim(&out, outdir::Kind::Sweep)?;
    let journal_path = out.join(journal::FILE_NAME);
    let header = header_for(&experiment, shard);
    let (mut done, writer) = match journal::read(&journal_path)? {
        None => {
            write_inputs(&out, &experiment, &experiment_file)?;
            (
                BTreeMap::new(),
                journal::Writer::create(&journal_path, &header)?,
            )
        }
        Some(_) if !args.resume => {
            return Err(format!(
                "{}: already holds a sweep; pass --resume to continue it, or choose another --out",
                out.display()
            ));
        }
        Some(contents) => {
            if contents.header != header {
                return Err(format!(
                    "{}: holds a sweep of other inputs or another shard ({} runs, shard {}); it cannot be resumed with these",
                    out.display(),
                    contents.header.runs,
                    contents.header.shard
                ));
            }
            let writer = journal::Writer::resume(&journal_path, contents.intact_len)?;
            (contents.runs, writer)
        }
    };
    let todo: Vec<usize> = (0..experiment.runs())
        .filter(|&r| shard.owns(r) && !done.contains_key(&r))
        .collect();
    let owned = (0..experiment.runs()).filter(|&r| shard.owns(r)).count();
    let threads = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        usize::from,
    );
    let progress = progress_bar(todo.len(), args.quiet);
    let finished = run_all(&experiment, &todo, threads, writer, &progress)?;
    progress.finish_and_clear();
    let this_time = finished.len();
    done.extend(finished);
    if INTERRUPTED.load(AtomicOrdering::SeqCst) {
        eprintln!(
            "interrupted: {} of {owned} runs recorded in {} ({this_time} this time); run the same command with --resume to finish",
            done.len(),
            out.display()
        );
        return Ok(());
    }
    if !args.quiet {
        let runs = if shard == Shard::WHOLE {
            format!("{} runs", done.len())
        } else {
            format!(
                "shard {shard}: {} of {} runs",
                done.len(),
                experiment.runs()
            )
        };
        eprintln!(
            "{runs} recorded in {} ({this_time} this time)",
            out.display()
        );
    }
    if shard != Shard::WHOLE {
        if !args.quiet {
            eprintln!("merge the shards with: plansim merge SHARD_DIR... --out DIR");
        }
        return Ok(());
    }
    finish(&out, &experiment, &header, &done, args.quiet)
}

fn progress_bar(total: usize, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    // stderr draws nothing when it is not a terminal.
    let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("{bar:40} {pos}/{len} runs  {rate}  ETA {eta}")
        .expect("a valid template")
        .with_key(
            "rate",
            |state: &indicatif::ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(out, "{:.0} runs/s", state.per_sec());
            },
        );
    bar.set_style(style);
    bar
}

/// Runs `todo` on `threads` workers; each finished run is journaled at once
/// by one writer thread, so an interrupted sweep keeps what it finished.
fn run_all(
    experiment: &Experiment,
    todo: &[usize],
    threads: usize,
    mut writer: journal::Writer,
    progress: &ProgressBar,
) -> Result<BTreeMap<usize, Metrics>, String> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|err| format!("cannot start {threads} worker threads: {err}"))?;
    let (sender, receiver) = mpsc::channel::<(usize, Result<Metrics, String>)>();
    std::thread::scope(|scope| {
        let journal = scope.spawn(move || -> Result<BTreeMap<usize, Metrics>, String> {
            let mut finished = BTreeMap::new();
            let mut failed = None;
            for (index, result) in receiver {
                match result {
                    Ok(metrics) => {
                        writer
                            .append(index, &metrics)
                            .map_err(|err| format!("cannot write the journal: {err}"))?;
                        finished.insert(index, metrics);
                        // Counted here, on one thread: workers never contend for the bar.
                        progress.inc(1);
                    }
                    // Not journaled: the run did not finish. Report the first.
                    Err(why) => {
                        failed.get_or_insert(why);
                    }
                }
            }
            writer
                .finish()
                .map_err(|err| format!("cannot write the journal: {err}"))?;
            match failed {
                Some(why) => Err(why),
                None => Ok(finished),
            }
        });
        pool.install(|| {
            todo.par_iter().for_each_with(sender, |sender, &index| {
                if INTERRUPTED.load(AtomicOrdering::Relaxed) {
                    return;
                }
                let c = coord(experiment, index);
                let output = simulate(
                    &experiment.points[c.point].scenario,
                    RunOptions::new(c.policy, c.seed),
                );
                let result = match output.stopped_early {
                    None => Ok(output.metrics),
                    Some(why) => Err(format!(
                        "run {index} ({}, {}, seed {}): {why}",
                        experiment.point_label(c.point),
                        c.policy,
                        c.seed
                    )),
                };
                // A closed channel means the journal failed; its error is reported below.
                let _ = sender.send((index, result));
            });
        });
        journal
            .join()
            .map_err(|_| "the journal writer stopped unexpectedly".to_string())?
    })
}

/// Writes every output of a complete sweep, and leaves its journal sorted.
fn finish(
    out: &Path,
    experiment: &Experiment,
    header: &Header,
    done: &BTreeMap<usize, Metrics>,
    quiet: bool,
) -> Result<(), String> {
    check_complete(experiment, done)?;
    let runs: Vec<Metrics> = done.values().cloned().collect();
    let whole = Header {
        shard: Shard::WHOLE.to_string(),
        ..header.clone()
    };
    write_file(
        &out.join(journal::FILE_NAME),
        &journal::render_sorted(&whole, done),
    )?;
    outdir::create_subdir(out, "plots")?;
    let outputs = sweep::render_all(experiment, &runs)?;
    for (name, bytes) in &outputs.files {
        write_file(&out.join(name), bytes)?;
    }
    if !quiet {
        for line in &outputs.headlines {
            super::out(&format!("{line}\n"));
        }
        eprintln!("wrote {}", out.join("index.html").display());
    }
    Ok(())
}

/// Every run of the experiment is recorded; otherwise which are missing.
fn check_complete(experiment: &Experiment, done: &BTreeMap<usize, Metrics>) -> Result<(), String> {
    if done.len() != experiment.runs() {
        let missing = (0..experiment.runs())
            .find(|r| !done.contains_key(r))
            .unwrap_or(0);
        let c = coord(experiment, missing);
        return Err(format!(
            "{} of {} runs are missing (first: run {missing}, {}, {}, seed {})",
            experiment.runs() - done.len(),
            experiment.runs(),
            experiment.point_label(c.point),
            c.policy,
            c.seed
        ));
    }
    Ok(())
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    write_atomic(path, bytes).map_err(|err| format!("{}: cannot write: {err}", path.display()))
}

/// The file name of a path, for keeping a copy under the same name.
fn file_name_of(path: &Path) -> String {
    path.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "experiment.yaml".to_string())
}

/// Keeps copies of the inputs with the results: provenance, and what `merge`
/// reads. The experiment keeps its file name: an experiment without `name:`
/// is named after its file, and a merge must name it the same.
fn write_inputs(out: &Path, experiment: &Experiment, experiment_file: &str) -> Result<(), String> {
    let dir = outdir::create_subdir(out, &format!("{INPUTS}/scenario"))?;
    write_file(
        &out.join(INPUTS).join(experiment_file),
        experiment.experiment_text.as_bytes(),
    )?;
    write_file(
        &dir.join(&experiment.scenario_file_name),
        experiment.scenario_text.as_bytes(),
    )
}

/// The first `*.yaml` file (by name) directly in `dir`: a sweep keeps one,
/// its experiment's copy.
fn yaml_in(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    found.sort();
    found.into_iter().next()
}

/// The experiment and its file name, from the copies a sweep keeps.
fn load_inputs(dir: &Path) -> Result<(Experiment, String), String> {
    let inputs = dir.join(INPUTS);
    let scenario_dir = inputs.join("scenario");
    let experiment_path = yaml_in(&inputs).ok_or_else(|| {
        format!(
            "{}: not a sweep directory (no experiment file in {})",
            dir.display(),
            inputs.display()
        )
    })?;
    let scenario = std::fs::read_dir(&scenario_dir)
        .map_err(|err| {
            format!(
                "{}: not a sweep directory (cannot read {}: {err})",
                dir.display(),
                scenario_dir.display()
            )
        })?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .ok_or_else(|| {
            format!(
                "{}: no scenario kept in {}",
                dir.display(),
                scenario_dir.display()
            )
        })?;
    let experiment =
        spec::load(&experiment_path, Some(&scenario)).map_err(|err| err.to_string())?;
    Ok((experiment, file_name_of(&experiment_path)))
}

fn merge_command(args: &MergeArgs) -> Result<(), String> {
    let (experiment, experiment_file) = load_inputs(&args.shards[0])?;
    let header = header_for(&experiment, Shard::WHOLE);
    let mut done: BTreeMap<usize, Metrics> = BTreeMap::new();
    let mut shards: BTreeMap<String, &PathBuf> = BTreeMap::new();
    for dir in &args.shards {
        let contents = journal::read(&dir.join(journal::FILE_NAME))?
            .ok_or_else(|| format!("{}: no sweep journal here", dir.display()))?;
        if contents.header.fingerprint != header.fingerprint || contents.header.runs != header.runs
        {
            return Err(format!(
                "{}: a sweep of other inputs than {}",
                dir.display(),
                args.shards[0].display()
            ));
        }
        if let Some(first) = shards.insert(contents.header.shard.clone(), dir) {
            return Err(format!(
                "{}: shard {} given twice (also {}); give each shard once",
                dir.display(),
                contents.header.shard,
                first.display()
            ));
        }
        if !args.quiet {
            eprintln!(
                "shard {}: {} of {} runs ({})",
                contents.header.shard,
                contents.runs.len(),
                header.runs,
                dir.display()
            );
        }
        for (index, metrics) in contents.runs {
            if let Some(previous) = done.insert(index, metrics.clone())
                && previous != metrics
            {
                return Err(format!(
                    "{}: run {index} disagrees with another shard",
                    dir.display()
                ));
            }
        }
    }
    if let Some(missing) = missing_shards(&shards, header.runs, done.len()) {
        return Err(missing);
    }
    let _out_dir = outdir::claim(&args.out, outdir::Kind::Sweep)?;
    write_inputs(&args.out, &experiment, &experiment_file)?;
    finish(&args.out, &experiment, &header, &done, args.quiet)
}

/// Names the shards a merge lacks ("shard 3/3 missing"), when every shard
/// given is a slice of the same N; `None` when nothing is missing or the
/// shards were cut differently (then the first missing run is named).
fn missing_shards(
    given: &BTreeMap<String, &PathBuf>,
    runs: usize,
    recorded: usize,
) -> Option<String> {
    if recorded == runs {
        return None;
    }
    let parsed: Vec<Shard> = given.keys().filter_map(|s| Shard::parse(s).ok()).collect();
    let count = parsed.first()?.count;
    if parsed.iter().any(|s| s.count != count) {
        return None;
    }
    let missing: Vec<String> = (1..=count)
        .filter(|&index| !parsed.contains(&Shard { index, count }))
        .map(|index| format!("shard {index}/{count} missing"))
        .collect();
    if missing.is_empty() {
        return None;
    }
    Some(format!(
        "{}: {recorded} of {runs} runs present; run the missing shard(s) with plansim sweep EXPERIMENT --shard I/{count} --out DIR, then merge every shard",
        missing.join(", ")
    ))
}
