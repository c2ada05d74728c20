//! Sweeps: every run of an experiment on a pool of worker threads,
//! journaled as it goes (so a killed or interrupted sweep resumes where it
//! stopped), sliced into shards for batch engines, merged, and rendered into
//! the output directory. Everything a sweep writes goes through here, under
//! a claimed output directory (`report::outdir`); the CLI only parses
//! arguments, draws progress and prints what this returns.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use crate::experiment::grid::{Shard, coord};
use crate::experiment::spec::{self, Experiment};
use crate::model::metrics::Metrics;
use crate::report::atomic::{self, AtomicFile, commit_all, write_all_atomic};
use crate::report::journal::{self, Header};
use crate::report::outdir::{self, OutDir};
use crate::report::sweep;
use crate::sim::{RunOptions, simulate};

const INPUTS: &str = "inputs";

/// A sweep ready to run: its output directory claimed, its journal open
/// (new, or resumed with the runs it already holds).
pub struct Sweep {
    experiment: Experiment,
    shard: Shard,
    header: Header,
    out_dir: OutDir,
    journal: Option<journal::Writer>,
    /// The runs the journal already held when the sweep was prepared.
    resumed: BTreeMap<usize, Metrics>,
    /// The runs this sweep does, ascending.
    todo: Vec<usize>,
    /// What became of them, once run.
    fresh: Fresh,
    /// The journal of a whole sweep that ran to the end, still to be
    /// flushed to disk: `render` does it while it renders (or, if it is
    /// never called, dropping the sweep).
    unsynced: Option<journal::Writer>,
}

/// The runs a sweep did: `metrics[p]` is run `todo[p]`'s, unless `p` is
/// in `unfinished` (ascending: stopped before it started, or stopped early).
#[derive(Default)]
struct Fresh {
    metrics: Vec<Metrics>,
    unfinished: Vec<usize>,
}

impl Fresh {
    fn finished(&self) -> usize {
        self.metrics.len() - self.unfinished.len()
    }

    /// The result of the run at position `p` of the runs to do.
    fn get(&self, p: usize) -> Option<&Metrics> {
        self.metrics
            .get(p)
            .filter(|_| self.unfinished.binary_search(&p).is_err())
    }
}

/// What a finished sweep wrote.
pub struct Rendered {
    /// One line per policy pair and metric (the paired differences).
    pub headlines: Vec<String>,
    pub index_html: PathBuf,
}

/// Loads an experiment file (its scenario beside it).
pub fn load(experiment: &Path) -> Result<Experiment, String> {
    spec::load(experiment, None).map_err(|err| err.to_string())
}

/// The output directory a sweep writes when none is given.
pub fn default_out(experiment: &Experiment) -> PathBuf {
    PathBuf::from(format!("sweep-{}", crate::names::slug(&experiment.name)))
}

impl Sweep {
    /// Claims `out` and opens its journal: a new sweep keeps copies of its
    /// inputs there; `resume` continues a sweep of the same inputs and
    /// shard, and nothing else.
    pub fn prepare(
        experiment: Experiment,
        experiment_path: &Path,
        out: &Path,
        shard: Shard,
        resume: bool,
        force: bool,
    ) -> Result<Sweep, String> {
        let out_dir = outdir::claim(out, outdir::Kind::Sweep, force)?;
        let journal_path = out.join(journal::FILE_NAME);
        let header = header_for(&experiment, shard);
        let journal = journal::read(&journal_path)?;
        // The sweep's own journal, not an input: plansim replaces it sorted.
        crate::fsio::forget_input(&journal_path);
        let (resumed, writer) = match journal {
            None => {
                let writer = start_journal(out, &experiment, experiment_path, &header)?;
                (BTreeMap::new(), writer)
            }
            Some(_) if !resume => {
                return Err(format!(
                    "{}: already holds a sweep; pass --resume to continue it, or choose another --out",
                    crate::names::one_line_path(out)
                ));
            }
            Some(contents) => {
                if contents.header != header {
                    return Err(format!(
                        "{}: holds a sweep of other inputs or another shard ({} runs, shard {}); it cannot be resumed with these",
                        crate::names::one_line_path(out),
                        contents.header.runs,
                        contents.header.shard
                    ));
                }
                let writer = journal::Writer::resume(&journal_path, contents.intact_len)?;
                (contents.runs, writer)
            }
        };
        let todo: Vec<usize> = (0..experiment.runs())
            .filter(|&r| shard.owns(r) && !resumed.contains_key(&r))
            .collect();
        Ok(Sweep {
            experiment,
            shard,
            header,
            out_dir,
            journal: Some(writer),
            resumed,
            todo,
            fresh: Fresh::default(),
            unsynced: None,
        })
    }

    pub fn experiment(&self) -> &Experiment {
        &self.experiment
    }

    pub fn out(&self) -> &Path {
        self.out_dir.path()
    }

    /// Runs still to do in this shard.
    pub fn to_run(&self) -> usize {
        self.todo.len() - self.fresh.finished()
    }

    /// Runs this shard owns.
    pub fn owned(&self) -> usize {
        (0..self.experiment.runs())
            .filter(|&r| self.shard.owns(r))
            .count()
    }

    /// Runs recorded in the journal so far.
    pub fn recorded(&self) -> usize {
        self.resumed.len() + self.fresh.finished()
    }

    /// Runs every run still to do on `pool`, journaling each; stops
    /// starting runs once `stop` is set. `progress(n)` is told of every
    /// `n` runs recorded. Returns how many runs finished this time. The
    /// journal is closed afterwards (a sweep runs once), and flushed to disk
    /// unless the sweep is whole and complete: then `render` flushes it
    /// while it renders.
    pub fn run(
        &mut self,
        pool: &rayon::ThreadPool,
        stop: &AtomicBool,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<usize, String> {
        let writer = self
            .journal
            .take()
            .ok_or_else(|| "this sweep already ran".to_string())?;
        // From the first run on, the journal is work to keep (`--resume`).
        self.out_dir.keep();
        let ran = run_all(&self.experiment, &self.todo, pool, writer, stop, progress);
        self.fresh = ran.fresh;
        let writer = ran.journal?;
        let complete = self.shard == Shard::WHOLE && self.recorded() == self.experiment.runs();
        if complete && ran.failed.is_none() {
            self.unsynced = Some(writer);
        } else {
            writer.finish().map_err(journal_error)?;
        }
        match ran.failed {
            Some(why) => Err(why),
            None => Ok(ran.finished),
        }
    }

    /// Renders every output of a whole sweep whose runs are all recorded,
    /// on `pool`'s threads, and leaves its journal sorted.
    pub fn render(mut self, pool: &rayon::ThreadPool) -> Result<Rendered, String> {
        let out = self.out_dir.path().to_path_buf();
        let unsynced = self.unsynced.take();
        let fresh = std::mem::take(&mut self.fresh);
        // The journal's flush waits on the disk, not on a worker.
        std::thread::scope(|scope| {
            let syncing = scope.spawn(move || unsynced.map_or(Ok(()), journal::Writer::finish));
            let rendered = pool.install(|| {
                let runs = assemble(&self.experiment, &self.resumed, &self.todo, fresh)?;
                finish(&out, &self.experiment, &self.header, &runs)
            });
            let synced = syncing
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            let rendered = rendered?;
            synced.map_err(journal_error)?;
            Ok(rendered)
        })
    }
}

impl Drop for Sweep {
    fn drop(&mut self) {
        // A complete sweep never rendered: its journal is still flushed
        // (nobody is left to hear of a failure; the lines are written).
        if let Some(writer) = self.unsynced.take() {
            let _ = writer.finish();
        }
    }
}

fn journal_error(err: std::io::Error) -> String {
    format!("cannot write the journal: {err}")
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

/// A worker hands its finished runs to the journal after this many runs,
/// or sooner once they add up to [`FLUSH_EVENTS`] simulation events, so a
/// kill loses at most a few milliseconds of work per worker (and Ctrl-C
/// none: what workers hold is handed over before the sweep stops).
const FLUSH_RUNS: usize = 256;
const FLUSH_EVENTS: u64 = 1 << 20;
/// The most runs a worker takes at once: the pieces the runs are split
/// into, so that workers finish together.
const CLAIM: usize = 16;

/// Runs `todo` on every thread of `pool`. The results land in run order
/// straight from the workers (an indexed parallel collect: nothing is
/// allocated or initialised per run beforehand, nothing gathered after).
/// Each worker formats its finished runs' journal lines into its own batch
/// and hands them over a batch at a time (one lock, one `write` and one
/// progress step per batch); an interrupted sweep keeps every run it
/// finished. Returns the results, with the journal still to be flushed.
fn run_all(
    experiment: &Experiment,
    todo: &[usize],
    pool: &rayon::ThreadPool,
    writer: journal::Writer,
    stop: &AtomicBool,
    progress: &(dyn Fn(u64) + Sync),
) -> Ran {
    use rayon::prelude::*;
    /// One worker's finished runs since its last hand-over.
    #[derive(Default)]
    struct Batch {
        lines: Vec<u8>,
        runs: usize,
        events: u64,
    }
    let journal = Mutex::new(Ok::<_, String>(writer));
    // One batch per worker thread, locked only by it (and at the end).
    let batches: Vec<Mutex<Batch>> = (0..pool.current_num_threads().max(1))
        .map(|_| Mutex::default())
        .collect();
    let unfinished = Mutex::new(Vec::new());
    let failed = Mutex::new(None::<(usize, String)>);
    // Set when the journal cannot be written: every worker stops.
    let broken = AtomicBool::new(false);
    let hand_over = |batch: &mut Batch| {
        if batch.runs == 0 {
            return;
        }
        let mut journal = journal.lock().unwrap_or_else(|e| e.into_inner());
        if let Ok(writer) = journal.as_mut()
            && let Err(err) = writer.append(&batch.lines)
        {
            *journal = Err(journal_error(err));
            broken.store(true, AtomicOrdering::SeqCst);
        }
        drop(journal);
        progress(batch.runs as u64);
        batch.lines.clear();
        batch.runs = 0;
        batch.events = 0;
    };
    let not_run = |position: usize| {
        let mut unfinished = unfinished.lock().unwrap_or_else(|e| e.into_inner());
        unfinished.push(position);
        Metrics::default()
    };
    let mut metrics = Vec::new();
    pool.install(|| {
        todo.par_iter()
            .enumerate()
            .with_max_len(CLAIM)
            .map(|(position, &index)| {
                if stop.load(AtomicOrdering::Relaxed) || broken.load(AtomicOrdering::Relaxed) {
                    return not_run(position);
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
                    drop(failed);
                    return not_run(position);
                }
                let worker = rayon::current_thread_index().unwrap_or(0) % batches.len();
                let mut batch = batches[worker].lock().unwrap_or_else(|e| e.into_inner());
                journal::push_record(&mut batch.lines, index, &output.metrics);
                batch.runs += 1;
                batch.events += output.metrics.events;
                if batch.runs >= FLUSH_RUNS || batch.events >= FLUSH_EVENTS {
                    hand_over(&mut batch);
                }
                output.metrics
            })
            .collect_into_vec(&mut metrics);
    });
    for batch in &batches {
        hand_over(&mut batch.lock().unwrap_or_else(|e| e.into_inner()));
    }
    let mut unfinished = unfinished.into_inner().unwrap_or_else(|e| e.into_inner());
    unfinished.sort_unstable();
    let fresh = Fresh {
        metrics,
        unfinished,
    };
    Ran {
        finished: fresh.finished(),
        fresh,
        journal: journal.into_inner().unwrap_or_else(|e| e.into_inner()),
        failed: failed
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .map(|(_, why)| why),
    }
}

/// What [`run_all`] did.
struct Ran {
    fresh: Fresh,
    /// How many runs finished.
    finished: usize,
    /// The journal, every finished run written to it (not yet flushed to
    /// disk), or why it could not be written.
    journal: Result<journal::Writer, String>,
    /// The failure of the lowest-numbered run that stopped early (the
    /// others still ran and are journaled).
    failed: Option<String>,
}

/// Writes every output of a complete sweep, and leaves its journal sorted.
/// The journal, runs.csv and the other outputs are rendered side by side;
/// the journal and runs.csv, the large files, are each committed (written,
/// flushed to disk, renamed) on a thread of their own as soon as they are
/// rendered, while the rest renders; the rest is flushed together.
fn finish(
    out: &Path,
    experiment: &Experiment,
    header: &Header,
    runs: &[Metrics],
) -> Result<Rendered, String> {
    use rayon::prelude::*;
    let whole = Header {
        shard: Shard::WHOLE.to_string(),
        ..header.clone()
    };
    outdir::create_subdir(out, "plots")?;
    std::thread::scope(|scope| {
        let commit_early = |path: PathBuf, pieces: Vec<Vec<u8>>| {
            let staged = stage(&path, &pieces);
            scope.spawn(move || staged?.commit().map_err(|err| cannot_write(&path, &err)))
        };
        let ((journal, runs_csv), summaries) = rayon::join(
            || {
                rayon::join(
                    || {
                        commit_early(
                            out.join(journal::FILE_NAME),
                            journal::render_sorted(&whole, runs),
                        )
                    },
                    || commit_early(out.join("runs.csv"), sweep::runs_csv(experiment, runs)),
                )
            },
            || sweep::render_summaries(experiment, runs),
        );
        let summaries = summaries.and_then(|summaries| {
            let staged: Vec<AtomicFile> = summaries
                .files
                .par_iter()
                .map(|(name, bytes)| stage(&out.join(name), std::slice::from_ref(bytes)))
                .collect::<Result<_, _>>()?;
            commit_all(staged).map_err(|(path, err)| cannot_write(&path, &err))?;
            Ok(summaries)
        });
        for early in [journal, runs_csv] {
            early
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        }
        Ok(Rendered {
            headlines: summaries?.headlines,
            index_html: out.join("index.html"),
        })
    })
}

/// Every run of the experiment, in run order, from the runs the journal
/// held (`resumed`) and the ones just run (`fresh`, for the runs `todo`);
/// otherwise which are missing.
fn assemble(
    experiment: &Experiment,
    resumed: &BTreeMap<usize, Metrics>,
    todo: &[usize],
    fresh: Fresh,
) -> Result<Vec<Metrics>, String> {
    use rayon::prelude::*;
    let runs = experiment.runs();
    // A whole sweep run at once: its results are already every run, in order.
    if resumed.is_empty() && todo.len() == runs && fresh.finished() == runs {
        return Ok(fresh.metrics);
    }
    // `todo` is ascending and holds no resumed run: each run is found once.
    let recorded = |index: usize| match todo.binary_search(&index) {
        Ok(p) => fresh.get(p),
        Err(_) => resumed.get(&index),
    };
    let count = resumed.len() + fresh.finished();
    if count != runs {
        let missing = (0..runs).find(|&r| recorded(r).is_none()).unwrap_or(0);
        let c = coord(experiment, missing);
        return Err(format!(
            "{} of {} runs are missing (first: run {missing}, {}, {}, seed {})",
            runs - count,
            runs,
            experiment.point_label(c.point),
            c.policy,
            c.seed
        ));
    }
    let mut all = Vec::new();
    (0..runs)
        .into_par_iter()
        .map(|r| recorded(r).expect("every run is recorded").clone())
        .collect_into_vec(&mut all);
    Ok(all)
}

/// Writes files atomically, flushed to disk together (see [`write_all_atomic`]).
fn write_files(files: &[(PathBuf, Vec<Vec<u8>>)]) -> Result<(), String> {
    write_all_atomic(files).map_err(|(path, err)| cannot_write(&path, &err))
}

/// A file's temporary, written whole (see [`atomic::stage`]).
fn stage(path: &Path, pieces: &[Vec<u8>]) -> Result<AtomicFile, String> {
    atomic::stage(path, pieces).map_err(|err| cannot_write(path, &err))
}

fn cannot_write(path: &Path, err: &std::io::Error) -> String {
    format!("{}: cannot write: {err}", crate::names::one_line_path(path))
}

/// A new sweep's journal, created while the copies of its inputs are
/// written beside it (so that their flushes to disk overlap). When the
/// inputs cannot be written, the journal is removed again: a sweep
/// directory always keeps its inputs.
fn start_journal(
    out: &Path,
    experiment: &Experiment,
    experiment_path: &Path,
    header: &Header,
) -> Result<journal::Writer, String> {
    let journal_path = out.join(journal::FILE_NAME);
    let (inputs, writer) = std::thread::scope(|scope| {
        let inputs = scope.spawn(|| write_inputs(out, experiment, &file_name_of(experiment_path)));
        let writer = journal::Writer::create(&journal_path, header);
        let inputs = inputs
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (inputs, writer)
    });
    if let Err(err) = inputs {
        if writer.is_ok() {
            let _ = std::fs::remove_file(&journal_path);
        }
        return Err(err);
    }
    writer
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
    write_files(&[
        (
            out.join(INPUTS).join(experiment_file),
            vec![experiment.experiment_text.as_bytes().to_vec()],
        ),
        (
            dir.join(&experiment.scenario_file_name),
            vec![experiment.scenario_text.as_bytes().to_vec()],
        ),
    ])
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
            crate::names::one_line_path(dir),
            crate::names::one_line_path(&inputs)
        )
    })?;
    let scenario = std::fs::read_dir(&scenario_dir)
        .map_err(|err| {
            format!(
                "{}: not a sweep directory (cannot read {}: {err})",
                crate::names::one_line_path(dir),
                crate::names::one_line_path(&scenario_dir)
            )
        })?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .ok_or_else(|| {
            format!(
                "{}: no scenario kept in {}",
                crate::names::one_line_path(dir),
                crate::names::one_line_path(&scenario_dir)
            )
        })?;
    let experiment =
        spec::load(&experiment_path, Some(&scenario)).map_err(|err| err.to_string())?;
    Ok((experiment, file_name_of(&experiment_path)))
}

/// Merges the shard directories of one sweep into `out` and renders it
/// whole; `note` is told what each shard holds as it is read.
pub fn merge(
    dirs: &[PathBuf],
    out: &Path,
    force: bool,
    pool: &rayon::ThreadPool,
    note: &mut dyn FnMut(String),
) -> Result<Rendered, String> {
    let first = dirs.first().ok_or("no shard directories to merge")?;
    let (experiment, experiment_file) = load_inputs(first)?;
    let header = header_for(&experiment, Shard::WHOLE);
    let mut done: BTreeMap<usize, Metrics> = BTreeMap::new();
    let mut shards: BTreeMap<String, &PathBuf> = BTreeMap::new();
    for dir in dirs {
        let contents = journal::read(&dir.join(journal::FILE_NAME))?.ok_or_else(|| {
            format!(
                "{}: no sweep journal here",
                crate::names::one_line_path(dir)
            )
        })?;
        if contents.header.fingerprint != header.fingerprint || contents.header.runs != header.runs
        {
            return Err(format!(
                "{}: a sweep of other inputs than {}",
                crate::names::one_line_path(dir),
                crate::names::one_line_path(first)
            ));
        }
        if let Some(first) = shards.insert(contents.header.shard.clone(), dir) {
            return Err(format!(
                "{}: shard {} given twice (also {}); give each shard once",
                crate::names::one_line_path(dir),
                contents.header.shard,
                crate::names::one_line_path(first)
            ));
        }
        note(format!(
            "shard {}: {} of {} runs ({})",
            contents.header.shard,
            contents.runs.len(),
            header.runs,
            crate::names::one_line_path(dir)
        ));
        for (index, metrics) in contents.runs {
            if let Some(previous) = done.insert(index, metrics.clone())
                && previous != metrics
            {
                return Err(format!(
                    "{}: run {index} disagrees with another shard",
                    crate::names::one_line_path(dir)
                ));
            }
        }
    }
    if let Some(missing) = missing_shards(&shards, header.runs, done.len()) {
        return Err(missing);
    }
    // Every check before anything is written: a shard stopped before its
    // end (interrupted) is refused here, leaving no output directory.
    let runs = pool.install(|| assemble(&experiment, &done, &[], Fresh::default()))?;
    // A shard is an input: never the output directory.
    for dir in dirs {
        crate::fsio::mark_input(dir);
    }
    let mut out_dir = outdir::claim(out, outdir::Kind::Sweep, force)?;
    write_inputs(out, &experiment, &experiment_file)?;
    let rendered = pool.install(|| finish(out, &experiment, &header, &runs))?;
    out_dir.keep();
    Ok(rendered)
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
