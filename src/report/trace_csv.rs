//! The per-run event log written by `--trace`: rendered from records in
//! memory ([`render`]), or streamed to its file as the run produces it
//! ([`TraceFile`], a `TraceSink`), with the same bytes.
//!
//! Rows are formatted here, not by the csv crate (a trace row is written
//! millions of times per C1M run): each name's cell is rendered once per
//! file, by the crate's quoting rule (`csv_bytes::push_quoted`, tested
//! against the crate), and a row is copied bytes and digits. A streamed
//! trace is formatted and written on a writer thread of its own, fed
//! batches of records through a bounded channel, so the run goes on
//! simulating while its rows are written.

use std::io::{self, Write};
use std::path::Path;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

use super::atomic::AtomicFile;
use super::csv_bytes::{push_cell, push_millis, push_u64};
use crate::model::scenario::Scenario;
use crate::sim::trace::{TraceRecord, TraceSink};

pub const TRACE_COLUMNS: [&str; 8] = [
    "time_s", "event", "job", "group", "alloc", "node", "volume", "detail",
];

/// Most rows a streamed trace file takes (MAX_TRACE_FILE_ROWS): a few GB
/// of CSV, far more than the C1M shape writes; a run that would write more
/// (a scenario spinning until MAX_RUN_EVENTS) stops instead of filling the disk.
pub const MAX_TRACE_FILE_ROWS: u64 = 50_000_000;

/// Records a run hands its trace file's writer thread at once: few enough
/// to stay small (about 0.5 MB), many enough that the hand-over costs
/// nothing per row.
const BATCH_ROWS: usize = 4096;

/// Full batches waiting for the writer thread (TRACE_BATCHES_QUEUED): the
/// bound of the channel between a run and its writer. A run producing rows
/// faster than they are written waits here, so a trace holds at most this
/// many batches plus the one being filled and the one being written, about
/// 8 MB, however long the run. Sixteen hold what C1M produces in the 15-35 ms
/// the writer waits for a periodic sync (with four the run waited at ~20
/// of them).
const TRACE_BATCHES_QUEUED: usize = 16;

/// Bytes the writer gathers before each write to the file.
const WRITE_CHUNK_BYTES: usize = 1 << 20;

/// Bytes written between syncs of a long trace (the writer thread waits
/// for each, the run does not), so that closing it, which the run waits
/// for, syncs only the last of them.
const SYNC_EVERY_BYTES: u64 = 16 << 20;

/// Every name a row can show, as its finished cell (formula guard, then
/// quoted as the csv crate quotes it): rendered once per file, copied per row.
struct RowFormat {
    jobs: Vec<Box<[u8]>>,
    /// Per job, per group.
    groups: Vec<Vec<Box<[u8]>>>,
    /// Per job, per group.
    allocs: Vec<Vec<AllocCell>>,
    nodes: Vec<Box<[u8]>>,
    volumes: Vec<Box<[u8]>>,
    /// Job and group names as written, for an allocation named the long way.
    names: Vec<(String, Vec<String>)>,
}

/// A group's allocation cell around the index: `<open><index><close>`.
/// `<job>.<group>[<index>]` never reads as a number, so its guard and
/// quoting depend only on the part before the index (digits and `]` are
/// never quoted).
struct AllocCell {
    open: Box<[u8]>,
    close: &'static [u8],
}

fn cell_bytes(text: &str) -> Box<[u8]> {
    super::csv_bytes::cell(text).into_boxed_slice()
}

/// The allocation's name as Nomad writes it: `<job>.<group>[<index>]`.
fn alloc_name(job: &str, group: &str, index: u32) -> String {
    format!("{job}.{group}[{index}]")
}

impl RowFormat {
    fn new(scenario: &Scenario) -> RowFormat {
        let allocs = scenario
            .jobs
            .iter()
            .map(|job| {
                job.groups
                    .iter()
                    .map(|group| {
                        let mut open =
                            super::csv_bytes::cell(&format!("{}.{}[", job.name, group.name));
                        // The open part ends with `[`, or with the closing
                        // quote when the cell is quoted: that quote goes
                        // after the index.
                        let close: &[u8] = if open.last() == Some(&b'"') {
                            open.pop();
                            b"]\""
                        } else {
                            b"]"
                        };
                        AllocCell {
                            open: open.into_boxed_slice(),
                            close,
                        }
                    })
                    .collect()
            })
            .collect();
        RowFormat {
            jobs: scenario.jobs.iter().map(|j| cell_bytes(&j.name)).collect(),
            groups: scenario
                .jobs
                .iter()
                .map(|j| j.groups.iter().map(|g| cell_bytes(&g.name)).collect())
                .collect(),
            allocs,
            nodes: scenario.nodes.iter().map(|n| cell_bytes(&n.name)).collect(),
            volumes: scenario
                .volumes
                .iter()
                .map(|v| cell_bytes(&v.name))
                .collect(),
            names: scenario
                .jobs
                .iter()
                .map(|j| {
                    (
                        j.name.clone(),
                        j.groups.iter().map(|g| g.name.clone()).collect(),
                    )
                })
                .collect(),
        }
    }

    fn push_header(out: &mut Vec<u8>) {
        for (i, column) in TRACE_COLUMNS.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(column.as_bytes());
        }
        out.push(b'\n');
    }

    /// Appends one row, ids turned into the names the scenario uses.
    /// (The time is digits and the event a fixed name: neither needs the
    /// guard or quotes.)
    fn push_row(&self, out: &mut Vec<u8>, record: &TraceRecord) {
        push_millis(out, record.time);
        out.push(b',');
        out.extend_from_slice(record.kind.name().as_bytes());
        out.push(b',');
        if let Some(job) = record.job {
            out.extend_from_slice(&self.jobs[job.index()]);
        }
        out.push(b',');
        if let Some(group) = record.group {
            out.extend_from_slice(&self.groups[group.job.index()][group.group_index()]);
        }
        out.push(b',');
        match (record.alloc_index, record.group) {
            (Some(index), Some(group)) if record.job == Some(group.job) => {
                let cell = &self.allocs[group.job.index()][group.group_index()];
                out.extend_from_slice(&cell.open);
                push_u64(out, u64::from(index));
                out.extend_from_slice(cell.close);
            }
            // A record naming another job than its group's (none does
            // today) is named the long way.
            (Some(index), group) => {
                let job = record.job.map_or("", |j| self.names[j.index()].0.as_str());
                let group = group.map_or("", |g| {
                    self.names[g.job.index()].1[g.group_index()].as_str()
                });
                push_cell(out, &alloc_name(job, group, index));
            }
            (None, _) => {}
        }
        out.push(b',');
        if let Some(node) = record.node {
            out.extend_from_slice(&self.nodes[node.index()]);
        }
        out.push(b',');
        if let Some(volume) = record.volume {
            out.extend_from_slice(&self.volumes[volume.index()]);
        }
        out.push(b',');
        push_cell(out, &record.detail);
        out.push(b'\n');
    }
}

/// Renders a trace as CSV.
pub fn render(scenario: &Scenario, records: &[TraceRecord]) -> Vec<u8> {
    let format = RowFormat::new(scenario);
    let mut out = Vec::new();
    RowFormat::push_header(&mut out);
    for record in records {
        format.push_row(&mut out, record);
    }
    out
}

/// `run --trace`'s sink: rows go, a batch at a time, to a writer thread
/// that formats them and writes them as the run produces them into a
/// temporary beside the trace file, closed when the run ends and renamed
/// into place by [`TraceFile::commit`]. Dropped uncommitted (another run
/// was refused, a write failed), it leaves nothing behind. Nothing of a row
/// is kept once written.
///
/// One thread per trace file, alive from [`TraceFile::create`] to the end
/// of its run (`end()` joins it): `run` makes one sink per run and runs at
/// most rayon's thread count of runs at once, so a `run scenarios/ --trace`
/// of many runs never has more writer threads than that. One writer per
/// file, taking batches in order: the bytes do not depend on threads.
pub struct TraceFile {
    state: FileState,
    /// Rows taken and not yet handed to the writer.
    batch: Vec<TraceRecord>,
    rows: u64,
}

enum FileState {
    Writing(Writer),
    /// The run ended: the data is on disk, the rename still to come.
    Closed(AtomicFile),
    /// The first error (creating, writing or closing); the temporary is gone.
    Failed(io::Error),
}

/// The run's end of a writer thread.
struct Writer {
    batches: SyncSender<Vec<TraceRecord>>,
    /// Emptied batches coming back, to be filled again.
    spare: Receiver<Vec<TraceRecord>>,
    /// Gives back the closed file, or the first error (the file then gone).
    thread: JoinHandle<io::Result<AtomicFile>>,
}

impl Writer {
    fn start(path: &Path, scenario: &Scenario) -> io::Result<Writer> {
        let mut file = AtomicFile::create(path)?;
        let format = RowFormat::new(scenario);
        let (batches, full) = mpsc::sync_channel::<Vec<TraceRecord>>(TRACE_BATCHES_QUEUED);
        let (give_back, spare) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("trace-writer".into())
            .spawn(move || {
                let mut out = Vec::with_capacity(WRITE_CHUNK_BYTES * 2);
                RowFormat::push_header(&mut out);
                let mut unsynced = 0u64;
                for mut batch in full {
                    for record in &batch {
                        format.push_row(&mut out, record);
                        if out.len() >= WRITE_CHUNK_BYTES {
                            file.write_all(&out)?;
                            unsynced += out.len() as u64;
                            out.clear();
                            if unsynced >= SYNC_EVERY_BYTES {
                                file.sync_data()?;
                                unsynced = 0;
                            }
                        }
                    }
                    batch.clear();
                    // The run may be over already: then the batch just goes.
                    let _ = give_back.send(batch);
                }
                file.write_all(&out)?;
                file.close()?;
                Ok(file)
            })?;
        Ok(Writer {
            batches,
            spare,
            thread,
        })
    }

    /// Waits for the writer to write what it was given and close the file.
    fn finish(self) -> io::Result<AtomicFile> {
        drop(self.batches);
        match self.thread.join() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

impl TraceFile {
    /// Starts the trace file `path` of a run of `scenario`. An error, here
    /// or while writing, is reported by [`TraceFile::commit`].
    pub fn create(path: &Path, scenario: &Scenario) -> TraceFile {
        TraceFile {
            state: match Writer::start(path, scenario) {
                Ok(writer) => FileState::Writing(writer),
                Err(err) => FileState::Failed(err),
            },
            batch: Vec::with_capacity(BATCH_ROWS),
            rows: 0,
        }
    }

    /// Puts the finished trace in place, or reports why it cannot be.
    pub fn commit(mut self) -> io::Result<()> {
        self.end();
        match std::mem::replace(
            &mut self.state,
            FileState::Failed(io::Error::other("committed")),
        ) {
            FileState::Closed(file) => file.commit(),
            FileState::Failed(err) => Err(err),
            FileState::Writing(_) => unreachable!("end() closes the file"),
        }
    }

    /// Hands the rows taken so far to the writer.
    fn send_batch(&mut self) {
        let FileState::Writing(writer) = &mut self.state else {
            return;
        };
        let next = writer
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH_ROWS));
        let full = std::mem::replace(&mut self.batch, next);
        if writer.batches.send(full).is_err() {
            // The writer stopped at an error: take it.
            self.finish_writer();
        }
    }

    /// Joins the writer, keeping the closed file or its error.
    fn finish_writer(&mut self) {
        let placeholder = FileState::Failed(io::Error::other("closing"));
        self.state = match std::mem::replace(&mut self.state, placeholder) {
            FileState::Writing(writer) => match writer.finish() {
                Ok(file) => FileState::Closed(file),
                Err(err) => FileState::Failed(err),
            },
            other => other,
        };
    }
}

impl TraceSink for TraceFile {
    fn record(&mut self, record: TraceRecord) {
        self.rows += 1;
        if matches!(self.state, FileState::Writing(_)) {
            self.batch.push(record);
            if self.batch.len() >= BATCH_ROWS {
                self.send_batch();
            }
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

    /// Hands over the last rows, then waits for the writer to flush and
    /// close the file: a run's finished trace waits for its commit holding
    /// no descriptor and no thread.
    ///
    /// Nothing of the run's rows is kept past its end: the last batch goes
    /// to the writer without a spare taking its place (a finished run's
    /// file held ~0.4 MB of empty batch until the commit, so a thousand
    /// seeds ran out of a 1 GiB address space).
    fn end(&mut self) {
        let last = std::mem::take(&mut self.batch);
        if let FileState::Writing(writer) = &self.state
            && !last.is_empty()
        {
            // An error is the writer's: finish_writer takes it.
            let _ = writer.batches.send(last);
        }
        self.finish_writer();
    }
}

impl Drop for TraceFile {
    /// Dropped while writing (uncommitted, a panic), the writer is still
    /// joined, so its temporary is removed before the process can exit; a
    /// closed file removes its own.
    fn drop(&mut self) {
        if let FileState::Writing(writer) = std::mem::replace(
            &mut self.state,
            FileState::Failed(io::Error::other("dropped")),
        ) {
            drop(writer.batches);
            // What it gives back is dropped: the temporary goes with it.
            let _ = writer.thread.join();
        }
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
    use crate::test_dir::TempDir;

    #[test]
    fn a_streamed_trace_is_the_rendered_trace() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios/node-failure-slow-detach.yaml");
        let scenario = crate::scenario::load_file(&path).unwrap();
        let dir = TempDir::new("trace-stream");
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

#[cfg(test)]
mod oracle {
    //! The rows as the csv crate writes them (how every trace was written
    //! before rows were formatted here): the formatter must match it byte
    //! for byte, whatever the names and details hold.
    use super::*;
    use crate::model::ids::{GroupRef, JobId, NodeId, VolumeId};
    use crate::model::time::Millis;
    use crate::sim::trace::TraceKind;
    use proptest::prelude::*;

    fn csv_crate_render(scenario: &Scenario, records: &[TraceRecord]) -> Vec<u8> {
        let mut writer = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        writer.write_record(TRACE_COLUMNS).unwrap();
        let guard = crate::names::csv_cell;
        for record in records {
            let job = record
                .job
                .map_or("", |j| scenario.jobs[j.index()].name.as_str());
            let group = record.group.map_or("", |g| {
                scenario.jobs[g.job.index()].groups[g.group_index()]
                    .name
                    .as_str()
            });
            let alloc = record
                .alloc_index
                .map_or(String::new(), |i| format!("{job}.{group}[{i}]"));
            let node = record
                .node
                .map_or("", |n| scenario.nodes[n.index()].name.as_str());
            let volume = record
                .volume
                .map_or("", |v| scenario.volumes[v.index()].name.as_str());
            writer
                .write_record([
                    record.time.to_string().as_str(),
                    record.kind.name(),
                    &guard(job),
                    &guard(group),
                    &guard(&alloc),
                    &guard(node),
                    &guard(volume),
                    &guard(&record.detail),
                ])
                .unwrap();
        }
        writer.into_inner().unwrap()
    }

    /// A shipped scenario with several jobs, groups, nodes and volumes.
    fn scenario() -> Scenario {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios/access-modes-used-correctly.yaml");
        crate::scenario::load_file(&path).unwrap()
    }

    /// Text with what CSV must quote or guard over-represented.
    fn tricky() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z,\"\r\n=+@\t'. 0-9eé€\\[\\]-]{0,8}",
            "[-+=@]?(inf|nan|[0-9]{1,3}(\\.[0-9])?)",
            any::<String>(),
        ]
    }

    const KINDS: [TraceKind; 5] = [
        TraceKind::Placed,
        TraceKind::Eval,
        TraceKind::ClaimGranted,
        TraceKind::NodeDown,
        TraceKind::Running,
    ];

    /// Raw picks for a record: time, kind, job, (job, group), index, node,
    /// volume, detail.
    type Pick = (
        u64,
        usize,
        Option<usize>,
        Option<(usize, usize)>,
        Option<u32>,
        Option<usize>,
        Option<usize>,
        String,
    );

    /// A record from raw picks: ids wrap into the scenario's ranges; the
    /// job may differ from the group's (the formatter's long way).
    fn record(
        scenario: &Scenario,
        (time, kind, job, group, index, node, volume, detail): Pick,
    ) -> TraceRecord {
        let mut record = TraceRecord::new(Millis(time), KINDS[kind % KINDS.len()]);
        record.group = group.map(|(j, g)| {
            let j = j % scenario.jobs.len();
            GroupRef::new(JobId::from_index(j), g % scenario.jobs[j].groups.len())
        });
        record.job = match job {
            Some(j) => Some(JobId::from_index(j % scenario.jobs.len())),
            None => record.group.map(|g| g.job),
        };
        record.alloc_index = index;
        record.node = node.map(|n| NodeId::from_index(n % scenario.nodes.len()));
        record.volume = volume.map(|v| VolumeId::from_index(v % scenario.volumes.len()));
        record.detail = detail;
        record
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 64,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0),
            ..ProptestConfig::default()
        })]
        #[test]
        fn rows_are_the_csv_crates_bytes(
            names in proptest::collection::vec(tricky(), 32),
            picks in proptest::collection::vec(
                (
                    any::<u64>(),
                    any::<usize>(),
                    proptest::option::weighted(0.2, any::<usize>()),
                    proptest::option::of((any::<usize>(), any::<usize>())),
                    proptest::option::of(any::<u32>()),
                    proptest::option::of(any::<usize>()),
                    proptest::option::of(any::<usize>()),
                    tricky(),
                ),
                0..40,
            ),
        ) {
            let mut scenario = scenario();
            let mut names = names.into_iter().cycle();
            for job in &mut scenario.jobs {
                job.name = names.next().unwrap();
                for group in &mut job.groups {
                    group.name = names.next().unwrap();
                }
            }
            for node in &mut scenario.nodes {
                node.name = names.next().unwrap();
            }
            for volume in &mut scenario.volumes {
                volume.name = names.next().unwrap();
            }
            let records: Vec<TraceRecord> =
                picks.into_iter().map(|p| record(&scenario, p)).collect();
            prop_assert_eq!(render(&scenario, &records), csv_crate_render(&scenario, &records));
        }
    }

    #[test]
    fn a_long_streamed_trace_is_the_rendered_trace() {
        let scenario = scenario();
        let dir = crate::test_dir::TempDir::new("trace-long");
        // Several batches and several write chunks, the last batch partial.
        let records: Vec<TraceRecord> = (0..3 * BATCH_ROWS + 17)
            .map(|i| {
                let pick = (
                    i as u64 * 7,
                    i,
                    None,
                    Some((i, i / 3)),
                    Some(i as u32),
                    Some(i),
                    (i % 5 == 0).then_some(i),
                    format!("row {i}, {}", "x".repeat(i % 400)),
                );
                record(&scenario, pick)
            })
            .collect();
        let expected = render(&scenario, &records);
        assert!(expected.len() > 2 * WRITE_CHUNK_BYTES);
        let target = dir.join("long.csv");
        let mut file = TraceFile::create(&target, &scenario);
        for record in &records {
            file.record(record.clone());
        }
        assert_eq!(file.rows(), records.len() as u64);
        file.end();
        assert!(!target.exists(), "in place only once committed");
        file.commit().unwrap();
        assert!(std::fs::read(&target).unwrap() == expected);
        // Dropped in the middle of writing, it leaves nothing behind.
        let mut file = TraceFile::create(&dir.join("dropped.csv"), &scenario);
        for record in &records {
            file.record(record.clone());
        }
        drop(file);
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["long.csv"]);
        // A file that cannot be created says so at the commit.
        let mut file = TraceFile::create(&dir.join("missing/t.csv"), &scenario);
        file.record(records[0].clone());
        file.end();
        assert_eq!(file.rows(), 1);
        assert_eq!(file.commit().unwrap_err().kind(), io::ErrorKind::NotFound);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
