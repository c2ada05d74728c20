//! The sweep journal: one line per finished run, appended in batches of
//! whole lines (a worker's last few finished runs, one `write` call each),
//! so a sweep killed at any moment keeps every run it recorded and loses at
//! most the batches not yet written. A kill can at worst leave a torn last
//! line, which reading drops (and resuming truncates).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use crate::model::metrics::{Metric, MetricValue, Metrics};
use crate::report::csv_bytes::{par_blocks, push_metrics, push_u64};

/// The journal's file name inside a sweep's output directory.
pub const FILE_NAME: &str = ".plansim-journal.csv";
const MAGIC: &str = "# plansim-journal v1";

/// What the journal belongs to: the exact inputs, the run count and the shard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub fingerprint: String,
    pub runs: usize,
    pub shard: String,
}

impl Header {
    fn line(&self) -> String {
        format!(
            "{MAGIC} fingerprint={} runs={} shard={}\n",
            self.fingerprint, self.runs, self.shard
        )
    }

    fn parse(line: &str) -> Option<Header> {
        let rest = line.strip_prefix(MAGIC)?.trim();
        let mut fields = BTreeMap::new();
        for part in rest.split_whitespace() {
            let (key, value) = part.split_once('=')?;
            fields.insert(key, value);
        }
        Some(Header {
            fingerprint: fields.get("fingerprint")?.to_string(),
            runs: fields.get("runs")?.parse().ok()?,
            shard: fields.get("shard")?.to_string(),
        })
    }
}

/// FNV-1a, 64 bits: a stable fingerprint of the inputs (not for security).
pub fn fingerprint(parts: &[&str]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain([0u8]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

/// Appends run `index`'s journal line (`index,metric,...\n`) to `out`.
pub fn push_record(out: &mut Vec<u8>, index: usize, metrics: &Metrics) {
    push_u64(out, index as u64);
    out.push(b',');
    push_metrics(out, metrics);
    out.push(b'\n');
}

fn parse_record(line: &str) -> Option<(usize, Metrics)> {
    let mut fields = line.split(',');
    let index = fields.next()?.parse().ok()?;
    let mut metrics = Metrics::default();
    for metric in Metric::ALL {
        let value = MetricValue::parse(metric, fields.next()?)?;
        if !metrics.set(metric, value) {
            return None;
        }
    }
    fields.next().is_none().then_some((index, metrics))
}

/// A journal read back: its header, its runs, and the length of its intact
/// prefix (a torn last line is not part of it).
#[derive(Debug)]
pub struct Contents {
    pub header: Header,
    pub runs: BTreeMap<usize, Metrics>,
    pub intact_len: u64,
}

/// Reads a journal; `Ok(None)` when there is none.
pub fn read(path: &Path) -> Result<Option<Contents>, String> {
    use crate::fsio::{MAX_JOURNAL_BYTES, ReadError, read_limited};
    let bytes = match read_limited(path, MAX_JOURNAL_BYTES, "MAX_JOURNAL_BYTES") {
        Ok(bytes) => bytes,
        Err(ReadError::NotFound) => return Ok(None),
        Err(err) => {
            return Err(format!(
                "{}: {}",
                crate::names::one_line_path(path),
                err.message()
            ));
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let label = crate::names::one_line_path(path);
    let mut lines = text.split_inclusive('\n');
    let header = lines
        .next()
        .filter(|line| line.ends_with('\n'))
        .and_then(|line| Header::parse(line.trim_end()))
        .ok_or_else(|| format!("{label}: not a plansim sweep journal"))?;
    // Runs are numbered below `runs`, each recorded once: with `runs` within
    // MAX_RUNS, so is what reading the journal holds.
    let max_runs = crate::experiment::spec::MAX_RUNS;
    if header.runs > max_runs {
        return Err(format!(
            "{label}: a journal of {} runs, more than any sweep has (MAX_RUNS, {max_runs}): not a journal plansim wrote",
            header.runs
        ));
    }
    let mut runs = BTreeMap::new();
    let mut intact_len = header.line().len() as u64;
    for (number, line) in lines.enumerate() {
        if !line.ends_with('\n') {
            break; // torn by a kill mid-write: that run is simply redone
        }
        let (index, metrics) = parse_record(line.trim_end())
            .filter(|(index, _)| *index < header.runs)
            .ok_or_else(|| format!("{label}:{}: corrupt journal line", number + 2))?;
        if runs.insert(index, metrics).is_some() {
            return Err(format!(
                "{label}:{}: run {index} recorded twice",
                number + 2
            ));
        }
        intact_len += line.len() as u64;
    }
    Ok(Some(Contents {
        header,
        runs,
        intact_len,
    }))
}

/// Appends finished runs, one `write` per batch of whole lines.
pub struct Writer {
    file: File,
}

impl Writer {
    /// Starts a new journal (the file must not exist).
    pub fn create(path: &Path, header: &Header) -> Result<Writer, String> {
        let mut file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(path)
            .map_err(|err| {
                format!(
                    "{}: cannot create: {err}",
                    crate::names::one_line_path(path)
                )
            })?;
        file.write_all(header.line().as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|err| format!("{}: cannot write: {err}", crate::names::one_line_path(path)))?;
        Ok(Writer { file })
    }

    /// Continues a journal after its intact prefix, dropping a torn last line.
    pub fn resume(path: &Path, intact_len: u64) -> Result<Writer, String> {
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|err| format!("{}: cannot open: {err}", crate::names::one_line_path(path)))?;
        file.set_len(intact_len).map_err(|err| {
            format!(
                "{}: cannot truncate: {err}",
                crate::names::one_line_path(path)
            )
        })?;
        Ok(Writer { file })
    }

    /// Appends whole lines, as [`push_record`] writes them.
    pub fn append(&mut self, lines: &[u8]) -> std::io::Result<()> {
        self.file.write_all(lines)
    }

    pub fn finish(self) -> std::io::Result<()> {
        self.file.sync_all()
    }
}

/// The journal's bytes with every run in index order (`runs[i]` is run
/// `i`: what a finished sweep and a merge both leave, so their directories
/// are identical).
/// Blocks of lines are rendered on the current rayon pool (see
/// [`par_blocks`]: the file is the blocks one after another).
pub fn render_sorted(header: &Header, runs: &[Metrics]) -> Vec<Vec<u8>> {
    par_blocks(header.line().into_bytes(), runs, |out, index, metrics| {
        push_record(out, index, metrics);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dir::TempDir;

    #[test]
    fn torn_last_line_is_dropped_and_truncated_on_resume() {
        let dir = TempDir::new("journal-torn");
        let path = dir.join(FILE_NAME);
        let header = Header {
            fingerprint: "abc".into(),
            runs: 10,
            shard: "1/1".into(),
        };
        let mut writer = Writer::create(&path, &header).unwrap();
        let metrics = Metrics {
            placed: 3,
            ..Metrics::default()
        };
        let mut lines = Vec::new();
        push_record(&mut lines, 4, &metrics);
        push_record(&mut lines, 7, &metrics);
        writer.append(&lines).unwrap();
        drop(writer);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(b"9,1,2");
        std::fs::write(&path, &bytes).unwrap();
        let contents = read(&path).unwrap().unwrap();
        assert_eq!(contents.header, header);
        assert_eq!(contents.runs.keys().copied().collect::<Vec<_>>(), [4, 7]);
        assert_eq!(contents.runs[&4], metrics);
        let mut writer = Writer::resume(&path, contents.intact_len).unwrap();
        let mut line = Vec::new();
        push_record(&mut line, 9, &metrics);
        writer.append(&line).unwrap();
        drop(writer);
        let again = read(&path).unwrap().unwrap();
        assert_eq!(again.runs.keys().copied().collect::<Vec<_>>(), [4, 7, 9]);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn corrupt_lines_and_foreign_files_are_refused() {
        let dir = TempDir::new("journal-corrupt");
        let path = dir.join(FILE_NAME);
        std::fs::write(&path, "hello\n").unwrap();
        assert!(
            read(&path)
                .unwrap_err()
                .contains("not a plansim sweep journal")
        );
        std::fs::write(
            &path,
            format!("{MAGIC} fingerprint=a runs=2 shard=1/1\n5,1\n"),
        )
        .unwrap();
        assert!(read(&path).unwrap_err().contains("corrupt journal line"));
        assert!(read(&path.with_file_name("absent")).unwrap().is_none());
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn fingerprint_is_stable_and_sensitive() {
        assert_eq!(fingerprint(&["a", "b"]), fingerprint(&["a", "b"]));
        assert_ne!(fingerprint(&["a", "b"]), fingerprint(&["ab", ""]));
        assert_eq!(fingerprint(&[]), "cbf29ce484222325");
    }
}
