//! Sweeps: every run of an experiment on a pool of worker threads,
//! journaled as it goes (so a killed or interrupted sweep resumes where it
//! stopped), sliced into shards for batch engines, merged, and rendered into
//! the output directory. Everything a sweep writes goes through here, under
//! a claimed output directory (`report::outdir`); the CLI only parses
//! arguments, draws progress and prints what this returns.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering as AtomicOrdering};

use crate::experiment::grid::{Shard, coord};
use crate::experiment::spec::{self, Experiment};
use crate::model::metrics::Metrics;
use crate::report::atomic::write_atomic;
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
    done: Vec<Option<Metrics>>,
    todo: Vec<usize>,
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
    ) -> Result<Sweep, String> {
        let out_dir = outdir::claim(out, outdir::Kind::Sweep)?;
        let journal_path = out.join(journal::FILE_NAME);
        let header = header_for(&experiment, shard);
        let (resumed, writer) = match journal::read(&journal_path)? {
            None => {
                write_inputs(out, &experiment, &file_name_of(experiment_path))?;
                (
                    BTreeMap::new(),
                    journal::Writer::create(&journal_path, &header)?,
                )
            }
            Some(_) if !resume => {
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
        let done = by_index(experiment.runs(), resumed);
        let todo: Vec<usize> = (0..experiment.runs())
            .filter(|&r| shard.owns(r) && done[r].is_none())
            .collect();
        Ok(Sweep {
            experiment,
            shard,
            header,
            out_dir,
            journal: Some(writer),
            done,
            todo,
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
        self.todo.len()
    }

    /// Runs this shard owns.
    pub fn owned(&self) -> usize {
        (0..self.experiment.runs())
            .filter(|&r| self.shard.owns(r))
            .count()
    }

    /// Runs recorded in the journal so far.
    pub fn recorded(&self) -> usize {
        self.done.iter().filter(|m| m.is_some()).count()
    }

    /// Runs every run still to do on `pool`, journaling each; stops
    /// starting runs once `stop` is set. `progress(n)` is told of every
    /// `n` runs recorded. Returns how many runs finished this time. The
    /// journal is closed afterwards: a sweep runs once.
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
        let todo = std::mem::take(&mut self.todo);
        run_all(
            &self.experiment,
            &todo,
            pool,
            writer,
            &mut self.done,
            stop,
            progress,
        )
    }

    /// Renders every output of a whole sweep whose runs are all recorded,
    /// on `pool`'s threads, and leaves its journal sorted.
    pub fn render(self, pool: &rayon::ThreadPool) -> Result<Rendered, String> {
        let out = self.out_dir.path().to_path_buf();
        pool.install(|| finish(&out, &self.experiment, &self.header, self.done))
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

/// Recorded runs by index (`None`: not recorded); every index is below
/// `runs` (the journal reader checks it).
fn by_index(runs: usize, recorded: BTreeMap<usize, Metrics>) -> Vec<Option<Metrics>> {
    let mut done = vec![None; runs];
    for (index, metrics) in recorded {
        done[index] = Some(metrics);
    }
    done
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
    stop: &AtomicBool,
    progress: &(dyn Fn(u64) + Sync),
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
        progress(batch.runs.len() as u64);
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
                if stop.load(AtomicOrdering::Relaxed) || broken.load(AtomicOrdering::Relaxed) {
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
) -> Result<Rendered, String> {
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
    Ok(Rendered {
        headlines: outputs.headlines,
        index_html: out.join("index.html"),
    })
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

/// Merges the shard directories of one sweep into `out` and renders it
/// whole; `note` is told what each shard holds as it is read.
pub fn merge(
    dirs: &[PathBuf],
    out: &Path,
    pool: &rayon::ThreadPool,
    note: &mut dyn FnMut(String),
) -> Result<Rendered, String> {
    let first = dirs.first().ok_or("no shard directories to merge")?;
    let (experiment, experiment_file) = load_inputs(first)?;
    let header = header_for(&experiment, Shard::WHOLE);
    let mut done: BTreeMap<usize, Metrics> = BTreeMap::new();
    let mut shards: BTreeMap<String, &PathBuf> = BTreeMap::new();
    for dir in dirs {
        let contents = journal::read(&dir.join(journal::FILE_NAME))?
            .ok_or_else(|| format!("{}: no sweep journal here", dir.display()))?;
        if contents.header.fingerprint != header.fingerprint || contents.header.runs != header.runs
        {
            return Err(format!(
                "{}: a sweep of other inputs than {}",
                dir.display(),
                first.display()
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
        note(format!(
            "shard {}: {} of {} runs ({})",
            contents.header.shard,
            contents.runs.len(),
            header.runs,
            dir.display()
        ));
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
    let _out_dir = outdir::claim(out, outdir::Kind::Sweep)?;
    write_inputs(out, &experiment, &experiment_file)?;
    let done = by_index(header.runs, done);
    pool.install(|| finish(out, &experiment, &header, done))
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
