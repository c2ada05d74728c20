//! `plansim import nomad BUNDLE`: the archive `nomad operator debug`
//! writes (Nomad v1.2.6 and v2.0.5 `command/operator_debug.go`), read as
//! the export directory it resembles. Pure: the shell hands over the
//! bundle's files by their path inside it (`cluster/nodes.json`,
//! `interval/0003/jobs.json`, ...), the ones [`BundleReader::use_of`] asks
//! for, and gets an [`ExportSource`] for `import::nomad::import`.
//!
//! The layout (both releases): a folder `nomad-debug-<timestamp>/` (the
//! archive's only top-level entry) holding `cluster/` (`nodes.json`, the
//! node list at the start; `eventstream.json`, the event stream when
//! captured with `-event-topic`), `client/<id>/` and `server/<name>/`
//! (agent hosts, profiles, logs: not read), and one folder per capture,
//! `interval/0000/`, `interval/0001/`, ... (`collectNomad`), each with
//! `nodes.json`, `jobs.json`, `allocations.json`, `csi-plugins.json`,
//! `csi-plugin-id-<id>.json` per plugin, `csi-volumes.json`,
//! `csi-volume-id-<id>.json` per volume (an id's `/\<>:"|?*` written `_`,
//! `helper.CleanFilename`). Lists are one JSON array at v1.2.6
//! (`writeJSON`) and one object per line at v2.0.5
//! (`writeResponseStreamOrErrorToFile`: `writeNDJSON`); an endpoint that
//! failed is `{"Error": "..."}` instead. The lists are the API's stubs
//! (`/v1/nodes` without `?resources=true`, `/v1/jobs`): a node's resources
//! and attributes and a job's spec are only in the event stream's `Node`
//! and `Job` events, if it has them. The latest capture is the starting
//! state; the event stream's latest object per id fills in the details.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Read};

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::nomad::api::ExportSource;
use crate::scenario::error::{LoadError, file_error};

/// The node list written once, at the start of the capture.
pub const CLUSTER_NODES: &str = "cluster/nodes.json";
/// The event stream (`-event-topic`), one event per line.
pub const EVENT_STREAM: &str = "cluster/eventstream.json";
/// A capture's list files, and the export file each stands for.
const INTERVAL_LISTS: [(&str, &str); 5] = [
    ("nodes.json", "nodes.json"),
    ("csi-plugins.json", "plugins.json"),
    ("csi-volumes.json", "volumes.json"),
    ("jobs.json", "jobs.json"),
    ("allocations.json", "allocations.json"),
];
/// A capture's per-object files: `csi-plugin-id-<id>.json`, for `plugin/<id>.json`.
const DETAIL_PREFIXES: [(&str, &str); 2] =
    [("csi-plugin-id-", "plugin"), ("csi-volume-id-", "volume")];

/// What the shell does with a file of the bundle.
#[derive(Debug, PartialEq, Eq)]
pub enum Use {
    /// Read it whole and hand it over ([`BundleReader::add`]).
    Keep,
    /// Stream it to [`BundleReader::read_events`].
    Events,
    /// Never read it.
    Skip,
}

/// The capture number and file name of `interval/<n>/<file>`.
fn in_interval(path: &str) -> Option<(u32, &str)> {
    let (number, file) = path.strip_prefix("interval/")?.split_once('/')?;
    if file.contains('/')
        || number.is_empty()
        || number.len() > 9
        || !number.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    Some((number.parse().ok()?, file))
}

/// Whether the import reads this file of a capture.
fn read_in_interval(file: &str) -> bool {
    INTERVAL_LISTS.iter().any(|(name, _)| *name == file)
        || DETAIL_PREFIXES
            .iter()
            .any(|(prefix, _)| file.starts_with(prefix) && file.ends_with(".json"))
}

/// Whether a bundle's top-level names look like a debug capture.
pub fn is_bundle_root(names: &[&str]) -> bool {
    names.contains(&"interval") || names.contains(&"cluster") && !names.contains(&"nodes.json")
}

/// `helper.CleanFilename(name, "_")`: the file name an id is written under.
pub fn clean_filename(name: &str) -> String {
    name.chars()
        .map(|c| if "/\\<>:\"|?*".contains(c) { '_' } else { c })
        .collect()
}

/// The latest object the event stream holds per id.
#[derive(Default)]
struct Details {
    /// Id to (event index, the object's JSON).
    nodes: BTreeMap<String, (u64, String)>,
    jobs: BTreeMap<String, (u64, String)>,
    events: u64,
}

/// One line of `eventstream.json`: an `api.Event`.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct EventLine {
    #[serde(default)]
    topic: String,
    #[serde(default)]
    key: String,
    #[serde(default)]
    index: u64,
    #[serde(default)]
    payload: Option<BTreeMap<String, Box<RawValue>>>,
}

/// The bundle's files the import uses, collected as the shell reads them.
#[derive(Default)]
pub struct BundleReader {
    latest: Option<u32>,
    captures: BTreeSet<u32>,
    interval: BTreeMap<String, Vec<u8>>,
    cluster_nodes: Option<Vec<u8>>,
    details: Details,
    notes: Vec<String>,
}

impl BundleReader {
    /// What to do with the file at `path` (inside the bundle's folder).
    pub fn use_of(&self, path: &str) -> Use {
        if path == EVENT_STREAM {
            return Use::Events;
        }
        if path == CLUSTER_NODES {
            return Use::Keep;
        }
        match in_interval(path) {
            Some((n, file)) if read_in_interval(file) && self.latest.is_none_or(|l| n >= l) => {
                Use::Keep
            }
            _ => Use::Skip,
        }
    }

    /// Whether the file at `path` is a capture's allocations, which grow
    /// with the cluster (the shell bounds it by what is left of the total,
    /// not by the per-file limit).
    pub fn is_large(path: &str) -> bool {
        in_interval(path).is_some_and(|(_, file)| file == "allocations.json")
    }

    /// A file [`Use::Keep`] asked for.
    pub fn add(&mut self, path: &str, bytes: Vec<u8>) {
        if path == CLUSTER_NODES {
            self.cluster_nodes = Some(bytes);
            return;
        }
        let Some((n, file)) = in_interval(path) else {
            return;
        };
        self.captures.insert(n);
        if self.latest.is_some_and(|l| n < l) {
            return;
        }
        if self.latest != Some(n) {
            self.interval.clear();
            self.latest = Some(n);
        }
        self.interval.insert(file.to_string(), bytes);
    }

    /// Notes that a capture exists (a file of it the import does not read).
    pub fn saw(&mut self, path: &str) {
        if let Some((n, _)) = in_interval(path) {
            self.captures.insert(n);
        }
    }

    /// Reads the event stream: per node and job id, the object of its
    /// latest `Node` or `Job` event (a job purged is dropped).
    pub fn read_events(&mut self, stream: &mut dyn BufRead) -> Result<(), LoadError> {
        let mut line = Vec::new();
        let mut number = 0u64;
        loop {
            line.clear();
            let n = stream
                .read_until(b'\n', &mut line)
                .map_err(|err| file_error(EVENT_STREAM, None, err.to_string()))?;
            if n == 0 {
                return Ok(());
            }
            number += 1;
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let event: EventLine = match serde_json::from_slice(&line) {
                Ok(event) => event,
                // The capture was cut while writing its last event.
                Err(_) if !line.ends_with(b"\n") => {
                    self.notes.push(format!(
                        "{EVENT_STREAM}: line {number} is cut short (the capture was stopped while writing it); ignored"
                    ));
                    return Ok(());
                }
                Err(err) => {
                    return Err(file_error(
                        EVENT_STREAM,
                        Some(crate::scenario::error::Position {
                            line: number,
                            column: err.column() as u64,
                        }),
                        format!("not an event of Nomad's event stream: {err}"),
                    ));
                }
            };
            self.details.events += 1;
            self.keep_event(event);
        }
    }

    fn keep_event(&mut self, event: EventLine) {
        let (map, field) = match event.topic.as_str() {
            "Node" => (&mut self.details.nodes, "Node"),
            "Job" => (&mut self.details.jobs, "Job"),
            _ => return,
        };
        let Some(mut payload) = event.payload else {
            return;
        };
        if map.get(&event.key).is_some_and(|(i, _)| *i > event.index) {
            return;
        }
        let deleted = payload
            .get("Deleted")
            .is_some_and(|value| value.get() == "true");
        match payload.remove(field) {
            _ if deleted => {
                map.remove(&event.key);
            }
            Some(object) if object.get() != "null" && !event.key.is_empty() => {
                map.insert(event.key, (event.index, object.get().to_string()));
            }
            _ => {}
        }
    }

    /// The export the bundle gives, and what was noted on the way.
    pub fn finish(mut self) -> Result<DebugExport, LoadError> {
        let Some(latest) = self.latest else {
            return Err(file_error(
                "interval/",
                None,
                "no capture in the bundle (no interval/<n>/nodes.json, jobs.json, ...): is it an archive of nomad operator debug?",
            ));
        };
        let capture = format!("interval/{latest:04}");
        self.notes.insert(
            0,
            format!(
                "debug bundle: the latest of {} captures, {capture}, is the starting state; {} events in {EVENT_STREAM} ({} nodes and {} jobs in full)",
                self.captures.len(),
                self.details.events,
                self.details.nodes.len(),
                self.details.jobs.len()
            ),
        );
        let mut lists = BTreeMap::new();
        for (file, export) in INTERVAL_LISTS {
            let bytes = match self.interval.remove(file) {
                Some(bytes) => bytes,
                None if export == "nodes.json" => match self.cluster_nodes.take() {
                    Some(bytes) => {
                        self.notes.push(format!(
                            "{capture}/nodes.json missing: the nodes of {CLUSTER_NODES} used"
                        ));
                        bytes
                    }
                    None => continue,
                },
                None => continue,
            };
            let shown = format!("{capture}/{file}");
            match capture_failed(&bytes) {
                Some(error) => self.notes.push(format!(
                    "{shown}: nomad operator debug could not read it ({error}); left out"
                )),
                None => {
                    lists.insert(export, (shown, bytes));
                }
            }
        }
        if !lists.contains_key("nodes.json") {
            return Err(file_error(
                &format!("{capture}/nodes.json"),
                None,
                "missing (and no cluster/nodes.json): the bundle has no node list",
            ));
        }
        let details = std::mem::take(&mut self.interval);
        let export = DebugExport {
            capture,
            lists,
            details,
            nodes: std::mem::take(&mut self.details.nodes),
            jobs: std::mem::take(&mut self.details.jobs),
            notes: self.notes,
        };
        Ok(export)
    }
}

/// The error a capture wrote in place of a response (`{"Error": "..."}`),
/// if that is what `bytes` holds.
fn capture_failed(bytes: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ErrorWrapper {
        #[serde(rename = "Error")]
        error: String,
    }
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    serde_json::from_slice::<ErrorWrapper>(first)
        .ok()
        .map(|wrapper| wrapper.error)
}

/// A bundle read as an export: the latest capture's lists (as JSON
/// arrays), its per-plugin and per-volume files, and the event stream's
/// nodes and jobs as `node/<id>.json` and `job/<id>.json`.
pub struct DebugExport {
    capture: String,
    /// Export file name to (the bundle's path, its bytes).
    lists: BTreeMap<&'static str, (String, Vec<u8>)>,
    /// The capture's other files, by name (`csi-plugin-id-<id>.json`).
    details: BTreeMap<String, Vec<u8>>,
    nodes: BTreeMap<String, (u64, String)>,
    jobs: BTreeMap<String, (u64, String)>,
    notes: Vec<String>,
}

impl DebugExport {
    /// What was noted reading the bundle, for stderr before the import's own notes.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The bundle's path of an export file, for messages.
    pub fn shown(&self, path: &str) -> String {
        if let Some((shown, _)) = self.lists.get(path) {
            return shown.clone();
        }
        if let Some((dir, id)) = path.split_once('/') {
            let id = id.strip_suffix(".json").unwrap_or(id);
            match dir {
                "node" | "job" => return format!("{EVENT_STREAM} ({dir} {id})"),
                _ => {
                    if let Some((prefix, _)) = DETAIL_PREFIXES.iter().find(|(_, d)| *d == dir) {
                        return format!("{}/{prefix}{}.json", self.capture, clean_filename(id));
                    }
                }
            }
        }
        path.to_string()
    }

    /// The capture's file for `plugin/<id>.json` or `volume/<id>.json`.
    fn detail(&self, path: &str) -> Option<&[u8]> {
        let (dir, name) = path.split_once('/')?;
        let id = name.strip_suffix(".json")?;
        let (prefix, _) = DETAIL_PREFIXES.iter().find(|(_, d)| *d == dir)?;
        let bytes = self
            .details
            .get(&format!("{prefix}{}.json", clean_filename(id)))?;
        capture_failed(bytes).is_none().then_some(bytes.as_slice())
    }
}

fn utf8(bytes: Vec<u8>, shown: &str) -> Result<String, LoadError> {
    String::from_utf8(bytes).map_err(|_| file_error(shown, None, "not UTF-8 text"))
}

impl ExportSource for DebugExport {
    fn listed(&self) -> Vec<String> {
        Vec::new()
    }

    fn read(&self, path: &str) -> Result<Option<String>, LoadError> {
        if let Some((shown, bytes)) = self.lists.get(path) {
            let mut text = Vec::new();
            AsArray::new(bytes)
                .read_to_end(&mut text)
                .map_err(|err| file_error(shown, None, err.to_string()))?;
            return utf8(text, shown).map(Some);
        }
        let object = match path.split_once('/') {
            Some(("node", name)) => name
                .strip_suffix(".json")
                .and_then(|id| self.nodes.get(id))
                .map(|(_, text)| text.clone()),
            Some(("job", name)) => name
                .strip_suffix(".json")
                .and_then(|id| self.jobs.get(id))
                .map(|(_, text)| text.clone()),
            _ => match self.detail(path) {
                Some(bytes) => Some(utf8(bytes.to_vec(), &self.shown(path))?),
                None => None,
            },
        };
        Ok(object)
    }

    fn open(&self, path: &str) -> Result<Option<Box<dyn Read + '_>>, LoadError> {
        if let Some((_, bytes)) = self.lists.get(path) {
            return Ok(Some(Box::new(AsArray::new(bytes))));
        }
        Ok(self
            .read(path)?
            .map(|text| Box::new(std::io::Cursor::new(text.into_bytes())) as Box<dyn Read>))
    }
}

/// A list file as one JSON array: an array as it is; one value per line
/// (newline-delimited JSON) with `[`, `]` and a comma before each value
/// but the first, every line kept where it was.
struct AsArray<'b> {
    rest: &'b [u8],
    /// Bytes to give before the rest (the bracket, a comma).
    pending: &'static [u8],
    ndjson: bool,
    /// A value was given (the next one needs a comma).
    values: bool,
    at_line_start: bool,
    comma_given: bool,
    done: bool,
}

impl<'b> AsArray<'b> {
    fn new(bytes: &'b [u8]) -> Self {
        let start = bytes.iter().position(|b| !b.is_ascii_whitespace());
        let ndjson = start.is_none_or(|i| bytes[i] != b'[');
        AsArray {
            rest: bytes,
            pending: if ndjson { b"[" } else { b"" },
            ndjson,
            values: false,
            at_line_start: true,
            comma_given: false,
            done: false,
        }
    }
}

impl Read for AsArray<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if !self.pending.is_empty() {
                let n = self.pending.len().min(buf.len());
                buf[..n].copy_from_slice(&self.pending[..n]);
                self.pending = &self.pending[n..];
                return Ok(n);
            }
            if !self.ndjson {
                let n = self.rest.len().min(buf.len());
                buf[..n].copy_from_slice(&self.rest[..n]);
                self.rest = &self.rest[n..];
                return Ok(n);
            }
            if self.rest.is_empty() {
                if self.done {
                    return Ok(0);
                }
                self.done = true;
                self.pending = b"]";
                continue;
            }
            // The rest of this line, its newline included.
            let end = self
                .rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(self.rest.len(), |i| i + 1);
            if self.at_line_start {
                if !self.rest[..end].iter().all(u8::is_ascii_whitespace) {
                    if self.values && !self.comma_given {
                        self.comma_given = true;
                        self.pending = b",";
                        continue;
                    }
                    self.values = true;
                }
                self.at_line_start = false;
                self.comma_given = false;
            }
            let n = end.min(buf.len());
            buf[..n].copy_from_slice(&self.rest[..n]);
            self.rest = &self.rest[n..];
            self.at_line_start = n == end;
            return Ok(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(bytes: &[u8]) -> String {
        let mut out = String::new();
        AsArray::new(bytes).read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn newline_delimited_lists_become_arrays_with_their_lines_in_place() {
        assert_eq!(array(b""), "[]");
        assert_eq!(array(b"[1, 2]\n"), "[1, 2]\n");
        assert_eq!(
            array(b"{\"a\":1}\n{\"b\":2}\n"),
            "[{\"a\":1}\n,{\"b\":2}\n]"
        );
        assert_eq!(array(b"1\n\n2"), "[1\n\n,2]");
        // Read one byte at a time, the same.
        let mut out = Vec::new();
        let mut reader = AsArray::new(b"1\n22\n\n333\n");
        let mut byte = [0u8; 1];
        while reader.read(&mut byte).unwrap() == 1 {
            out.push(byte[0]);
        }
        assert_eq!(String::from_utf8(out).unwrap(), "[1\n,22\n\n,333\n]");
        let parsed: Vec<u32> = serde_json::from_str(&array(b"1\n22\n\n333\n")).unwrap();
        assert_eq!(parsed, [1, 22, 333]);
    }

    #[test]
    fn the_latest_capture_and_the_latest_event_win() {
        let mut reader = BundleReader::default();
        assert_eq!(reader.use_of("interval/0001/nodes.json"), Use::Keep);
        reader.add("interval/0001/nodes.json", b"[{\"ID\":\"b\"}]".to_vec());
        assert_eq!(reader.use_of("interval/0000/nodes.json"), Use::Skip);
        assert_eq!(reader.use_of("interval/0001/metrics.json"), Use::Skip);
        assert_eq!(reader.use_of("client/x/profile_0000.prof"), Use::Skip);
        assert_eq!(reader.use_of(EVENT_STREAM), Use::Events);
        let events = concat!(
            r#"{"Topic":"Job","Key":"web","Index":5,"Payload":{"Job":{"ID":"web","Version":1}}}"#,
            "\n",
            r#"{"Topic":"Job","Key":"web","Index":3,"Payload":{"Job":{"ID":"web","Version":0}}}"#,
            "\n",
            r#"{"Topic":"Job","Key":"gone","Index":3,"Payload":{"Job":{"ID":"gone"}}}"#,
            "\n",
            r#"{"Topic":"Job","Key":"gone","Index":4,"Payload":{"Job":{"ID":"gone"},"Deleted":true}}"#,
            "\n",
            r#"{"Topic":"Allocation","Key":"a","Index":6,"Payload":{"Allocation":{}}}"#,
            "\n",
            r#"{"Topic":"Node","Key":"b","Index":2,"Payload":{"Node":{"ID":"b"}}}"#,
            "\n",
            r#"{"Topic":"Node","Key":"b","Ind"#,
        );
        reader.read_events(&mut events.as_bytes()).unwrap();
        reader.add("interval/0002/csi-plugin-id-a_b.json", b"{}".to_vec());
        reader.add(
            "interval/0002/jobs.json",
            b"{\"Error\":\"403 Permission denied\"}".to_vec(),
        );
        reader.add("interval/0002/nodes.json", b"{\"ID\":\"b\"}\n".to_vec());
        let export = reader.finish().unwrap();
        assert_eq!(
            export.read("nodes.json").unwrap().unwrap(),
            "[{\"ID\":\"b\"}\n]"
        );
        assert_eq!(
            export.read("job/web.json").unwrap().unwrap(),
            r#"{"ID":"web","Version":1}"#
        );
        assert!(export.read("job/gone.json").unwrap().is_none());
        assert_eq!(
            export.read("node/b.json").unwrap().unwrap(),
            r#"{"ID":"b"}"#
        );
        assert_eq!(export.read("plugin/a:b.json").unwrap().unwrap(), "{}");
        assert!(export.read("jobs.json").unwrap().is_none());
        let notes = export.notes().join("\n");
        assert!(
            notes.contains("the latest of 2 captures, interval/0002"),
            "{notes}"
        );
        assert!(notes.contains("interval/0002/jobs.json: nomad operator debug could not read it (403 Permission denied)"), "{notes}");
        assert!(notes.contains("line 7 is cut short"), "{notes}");
        assert_eq!(
            export.shown("plugin/a:b.json"),
            "interval/0002/csi-plugin-id-a_b.json"
        );
    }
}
