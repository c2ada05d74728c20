//! The per-run event log written by `--trace`: rendered from records in
//! memory ([`render`]), or streamed to its file as the run produces it
//! ([`TraceFile`], a `TraceSink`), with the same bytes.

use std::io::{self, Write};
use std::path::Path;

use super::atomic::AtomicFile;
use super::csv_bytes::push_millis;
use crate::model::scenario::Scenario;
use crate::sim::trace::{TraceRecord, TraceSink};

pub const TRACE_COLUMNS: [&str; 8] = [
    "time_s", "event", "job", "group", "alloc", "node", "volume", "detail",
];

/// Most rows a streamed trace file takes (MAX_TRACE_FILE_ROWS): a few GB
/// of CSV, far more than the C1M shape writes; a run that would write more
/// (a scenario spinning until MAX_RUN_EVENTS) stops instead of filling the disk.
pub const MAX_TRACE_FILE_ROWS: u64 = 50_000_000;

fn csv_writer<W: Write>(out: W) -> csv::Writer<W> {
    let mut writer = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(out);
    // Errors surface when the rows are written.
    let _ = writer.write_record(TRACE_COLUMNS);
    writer
}

/// Reused buffers for the cells built per row.
#[derive(Default)]
struct Scratch {
    time: Vec<u8>,
    alloc: String,
}

/// Writes one row, turning ids into the names the scenario uses.
/// Allocations are named as Nomad names them: `<job>.<group>[<index>]`.
fn write_row<W: Write>(
    writer: &mut csv::Writer<W>,
    scenario: &Scenario,
    record: &TraceRecord,
    scratch: &mut Scratch,
) -> csv::Result<()> {
    use std::fmt::Write as _;
    let job = record
        .job
        .map(|j| scenario.jobs[j.index()].name.as_str())
        .unwrap_or("");
    let group = record
        .group
        .map(|g| {
            scenario.jobs[g.job.index()].groups[g.group_index()]
                .name
                .as_str()
        })
        .unwrap_or("");
    scratch.alloc.clear();
    if let Some(index) = record.alloc_index {
        let _ = write!(scratch.alloc, "{job}.{group}[{index}]");
    }
    let node = record
        .node
        .map(|n| scenario.nodes[n.index()].name.as_str())
        .unwrap_or("");
    let volume = record
        .volume
        .map(|v| scenario.volumes[v.index()].name.as_str())
        .unwrap_or("");
    scratch.time.clear();
    push_millis(&mut scratch.time, record.time);
    // Names are data: never a spreadsheet formula. (The time is digits and
    // the event a fixed name: the guard would leave them as they are.)
    let guard = crate::names::csv_cell;
    writer.write_record([
        scratch.time.as_slice(),
        record.kind.name().as_bytes(),
        guard(job).as_bytes(),
        guard(group).as_bytes(),
        guard(&scratch.alloc).as_bytes(),
        guard(node).as_bytes(),
        guard(volume).as_bytes(),
        guard(&record.detail).as_bytes(),
    ])
}

/// Renders a trace as CSV.
pub fn render(scenario: &Scenario, records: &[TraceRecord]) -> Vec<u8> {
    let mut writer = csv_writer(Vec::new());
    let mut scratch = Scratch::default();
    for record in records {
        write_row(&mut writer, scenario, record, &mut scratch).expect("writing to memory");
    }
    writer.into_inner().expect("flushing to memory")
}

/// `run --trace`'s sink: each row is written as the run produces it (through
/// the csv writer's buffer) into a temporary beside the trace file, closed
/// when the run ends and renamed into place by [`TraceFile::commit`].
/// Dropped uncommitted (another run was refused, a write failed), it leaves
/// nothing behind. Nothing of a row is kept once written.
pub struct TraceFile<'s> {
    scenario: &'s Scenario,
    state: FileState,
    scratch: Scratch,
    rows: u64,
}

enum FileState {
    Writing(Box<csv::Writer<AtomicFile>>),
    /// The run ended: the data is on disk, the rename still to come.
    Closed(AtomicFile),
    /// The first error (creating, writing or closing); the temporary is gone.
    Failed(io::Error),
}

impl<'s> TraceFile<'s> {
    /// Starts the trace file `path` of a run of `scenario`. An error, here
    /// or while writing, is reported by [`TraceFile::commit`].
    pub fn create(path: &Path, scenario: &'s Scenario) -> TraceFile<'s> {
        TraceFile {
            scenario,
            state: match AtomicFile::create(path) {
                Ok(file) => FileState::Writing(Box::new(csv_writer(file))),
                Err(err) => FileState::Failed(err),
            },
            scratch: Scratch::default(),
            rows: 0,
        }
    }

    /// Puts the finished trace in place, or reports why it cannot be.
    pub fn commit(mut self) -> io::Result<()> {
        self.end();
        match self.state {
            FileState::Closed(file) => file.commit(),
            FileState::Failed(err) => Err(err),
            FileState::Writing(_) => unreachable!("end() closes the file"),
        }
    }
}

impl TraceSink for TraceFile<'_> {
    fn record(&mut self, record: TraceRecord) {
        self.rows += 1;
        if let FileState::Writing(writer) = &mut self.state
            && let Err(err) = write_row(writer, self.scenario, &record, &mut self.scratch)
        {
            self.state = FileState::Failed(err.into());
        }
    }

    fn rows(&self) -> u64 {
        self.rows
    }

    fn max_rows(&self) -> (u64, &'static str) {
        (MAX_TRACE_FILE_ROWS, "MAX_TRACE_FILE_ROWS")
    }

    fn wants_seen(&self) -> bool {
        false
    }

    /// Flushes and closes the file: a run's finished trace waits for its
    /// commit holding no descriptor.
    fn end(&mut self) {
        let placeholder = FileState::Failed(io::Error::other("closing"));
        self.state = match std::mem::replace(&mut self.state, placeholder) {
            FileState::Writing(writer) => match writer.into_inner() {
                Ok(mut file) => match file.close() {
                    Ok(()) => FileState::Closed(file),
                    Err(err) => FileState::Failed(err),
                },
                Err(err) => FileState::Failed(err.into_error()),
            },
            other => other,
        };
    }
}

/// `trace-<scenario>-<scheduler>-<seed>.csv`
pub fn file_name(scenario: &str, policy: &str, seed: u64) -> String {
    format!(
        "trace-{}-{}-{seed}.csv",
        crate::names::slug(scenario),
        policy
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::policy::Policy;
    use crate::sim::{RunOptions, simulate, simulate_streamed};

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("plansim-trace-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_streamed_trace_is_the_rendered_trace() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios/node-failure-slow-detach.yaml");
        let scenario = crate::scenario::load_file(&path).unwrap();
        let dir = temp_dir("stream");
        for policy in Policy::ALL {
            let options = RunOptions {
                trace: true,
                ..RunOptions::new(policy, 3)
            };
            let kept = simulate(&scenario, options);
            let records = kept.trace.unwrap();
            assert!(records.len() > 10, "a trace worth comparing");
            let target = dir.join(format!("{policy}.csv"));
            let mut file = TraceFile::create(&target, &scenario);
            let streamed = simulate_streamed(&scenario, options, &mut file, &mut |_, _| {});
            assert_eq!(streamed.metrics, kept.metrics, "{policy}");
            assert!(streamed.trace.is_none());
            assert_eq!(file.rows(), records.len() as u64);
            assert!(!target.exists(), "in place only once committed");
            file.commit().unwrap();
            assert_eq!(
                String::from_utf8(std::fs::read(&target).unwrap()).unwrap(),
                String::from_utf8(render(&scenario, &records)).unwrap()
            );
        }
        // Uncommitted, a trace leaves nothing behind.
        let mut file = TraceFile::create(&dir.join("dropped.csv"), &scenario);
        simulate_streamed(
            &scenario,
            RunOptions::new(Policy::Naive, 3),
            &mut file,
            &mut |_, _| {},
        );
        drop(file);
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["naive.csv", "plan-aware.csv", "validate.csv"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
