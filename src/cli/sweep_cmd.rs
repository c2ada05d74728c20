//! `plansim sweep EXPERIMENT.yaml [--jobs N] [--out DIR] [--shard I/N] [--resume]`
//! and `plansim merge SHARD_DIR... --out DIR`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as AtomicOrdering};

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

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
    let (resumed, writer) = match journal::read(&journal_path)? {
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
    let mut done = by_index(experiment.runs(), resumed);
    let todo: Vec<usize> = (0..experiment.runs())
        .filter(|&r| shard.owns(r) && done[r].is_none())
        .collect();
    let owned = (0..experiment.runs()).filter(|&r| shard.owns(r)).count();
    let threads = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        usize::from,
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|err| format!("cannot start {threads} worker threads: {err}"))?;
    let progress = progress_bar(todo.len(), args.quiet);
    let this_time = run_all(&experiment, &todo, &pool, writer, &mut done, &progress)?;
    progress.finish_and_clear();
    let recorded = done.iter().filter(|m| m.is_some()).count();
    if INTERRUPTED.load(AtomicOrdering::SeqCst) {
        eprintln!(
            "interrupted: {recorded} of {owned} runs recorded in {} ({this_time} this time); run the same command with --resume to finish",
            out.display()
        );
        return Ok(());
    }
    if !args.quiet {
        let runs = if shard == Shard::WHOLE {
            format!("{recorded} runs")
        } else {
            format!("shard {shard}: {recorded} of {} runs", experiment.runs())
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
    // The outputs are rendered on the same --jobs threads as the runs.
    pool.install(|| finish(&out, &experiment, &header, done, args.quiet))
}

/// Recorded runs by index (`None`: not recorded); every index is below
/// `runs` (the journal reader checks it).
fn by_index(runs: usize, recorded: BTreeMap<usize, Metrics>) -> Vec<Option<Metrics>> {
    let mut done = vec![None; runs];
    for (index, metrics) in recorded {
        done[index] = Some(metrics);
    }
    done
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

/// A worker hands its finished runs to the journal after this many runs,
/// or sooner once they add up to [`FLUSH_EVENTS`] simulation events, so a
/// kill loses at most a few milliseconds of work per worker (and Ctrl-C
/// none: workers flush before they stop).
const FLUSH_RUNS: usize = 256;
const FLUSH_EVENTS: u64 = 1 << 20;
/// Runs a worker claims at once from the shared cursor.
const CLAIM: usize = 16;

/// Runs `todo` on every thread of `pool`, recording each finished run in
/// `done`. Each worker formats its finished runs' journal lines itself and
/// hands them over in batches (one lock, one `write` and one progress step
/// per batch), so nothing is sent, written or allocated per run; an
/// interrupted sweep keeps every run it finished. Returns how many runs
/// finished, or the failure of the lowest-numbered run that stopped early
/// (the others still run and are journaled).
fn run_all(
    experiment: &Experiment,
    todo: &[usize],
    pool: &rayon::ThreadPool,
    writer: journal::Writer,
    done: &mut [Option<Metrics>],
    progress: &ProgressBar,
) -> Result<usize, String> {
    struct Recorder<'d> {
        journal: Result<journal::Writer, String>,
        done: &'d mut [Option<Metrics>],
        finished: usize,
    }
    /// One worker's runs since its last hand-over.
    #[derive(Default)]
    struct Batch {
        lines: Vec<u8>,
        runs: Vec<(usize, Metrics)>,
        events: u64,
    }
    let cursor = AtomicUsize::new(0);
    let recorder = Mutex::new(Recorder {
        journal: Ok(writer),
        done,
        finished: 0,
    });
    let failed = Mutex::new(None::<(usize, String)>);
    // Set when the journal cannot be written: every worker stops.
    let broken = AtomicBool::new(false);
    let hand_over = |batch: &mut Batch| {
        if batch.runs.is_empty() {
            return;
        }
        let mut recorder = recorder.lock().unwrap_or_else(|e| e.into_inner());
        if let Ok(writer) = recorder.journal.as_mut()
            && let Err(err) = writer.append(&batch.lines)
        {
            recorder.journal = Err(format!("cannot write the journal: {err}"));
            broken.store(true, AtomicOrdering::SeqCst);
        }
        recorder.finished += batch.runs.len();
        progress.inc(batch.runs.len() as u64);
        for (index, metrics) in batch.runs.drain(..) {
            recorder.done[index] = Some(metrics);
        }
        drop(recorder);
        batch.lines.clear();
        batch.events = 0;
    };
    pool.broadcast(|_| {
        let mut batch = Batch::default();
        'claims: loop {
            let start = cursor.fetch_add(CLAIM, AtomicOrdering::Relaxed);
            if start >= todo.len() {
                break;
            }
            for &index in &todo[start..(start + CLAIM).min(todo.len())] {
                if INTERRUPTED.load(AtomicOrdering::Relaxed) || broken.load(AtomicOrdering::Relaxed)
                {
                    break 'claims;
                }
                let c = coord(experiment, index);
                let output = simulate(
                    &experiment.points[c.point].scenario,
                    RunOptions::new(c.policy, c.seed),
                );
                if let Some(why) = output.stopped_early {
                    // Not journaled: the run did not finish.
                    let mut failed = failed.lock().unwrap_or_else(|e| e.into_inner());
                    if failed.as_ref().is_none_or(|(first, _)| index < *first) {
                        let why = format!(
                            "run {index} ({}, {}, seed {}): {why}",
                            experiment.point_label(c.point),
                            c.policy,
                            c.seed
                        );
                        *failed = Some((index, why));
                    }
                    continue;
                }
                journal::push_record(&mut batch.lines, index, &output.metrics);
                batch.events += output.metrics.events;
                batch.runs.push((index, output.metrics));
                if batch.runs.len() >= FLUSH_RUNS || batch.events >= FLUSH_EVENTS {
                    hand_over(&mut batch);
                }
            }
        }
        hand_over(&mut batch);
    });
    let recorder = recorder.into_inner().unwrap_or_else(|e| e.into_inner());
    recorder
        .journal?
        .finish()
        .map_err(|err| format!("cannot write the journal: {err}"))?;
    match failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some((_, why)) => Err(why),
        None => Ok(recorder.finished),
    }
}

/// Writes every output of a complete sweep, and leaves its journal sorted.
fn finish(
    out: &Path,
    experiment: &Experiment,
    header: &Header,
    done: Vec<Option<Metrics>>,
    quiet: bool,
) -> Result<(), String> {
    let runs = complete(experiment, done)?;
    let whole = Header {
        shard: Shard::WHOLE.to_string(),
        ..header.clone()
    };
    write_file(
        &out.join(journal::FILE_NAME),
        &journal::render_sorted(&whole, &runs),
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

/// Every run of the experiment, in run order; otherwise which are missing.
fn complete(experiment: &Experiment, done: Vec<Option<Metrics>>) -> Result<Vec<Metrics>, String> {
    let recorded = done.iter().filter(|m| m.is_some()).count();
    if recorded != experiment.runs() {
        let missing = done.iter().position(Option::is_none).unwrap_or(0);
        let c = coord(experiment, missing);
        return Err(format!(
            "{} of {} runs are missing (first: run {missing}, {}, {}, seed {})",
            experiment.runs() - recorded,
            experiment.runs(),
            experiment.point_label(c.point),
            c.policy,
            c.seed
        ));
    }
    // Same layout: collected in place.
    Ok(done
        .into_iter()
        .map(|m| m.expect("every run is recorded"))
        .collect())
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
    let done = by_index(header.runs, done);
    finish(&args.out, &experiment, &header, done, args.quiet)
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
