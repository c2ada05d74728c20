//! The fixture `nomad operator debug` bundle, made from the fixture
//! export's responses and laid out as Nomad v2.0.5's
//! `command/operator_debug.go` lays out a capture run with
//! `-event-topic=Node,Job -interval=30s -duration=1m`: one folder
//! `nomad-debug-<timestamp>/` holding `index.json`, `cluster/` (the node
//! list at the start, `writeResponseToFile`: one JSON array; the event
//! stream, one event per line), `client/<id>/agent-host.json`, and two
//! captures `interval/0000/` and `interval/0001/` whose lists are one
//! object per line (`writeNDJSON`) and whose per-plugin and per-volume
//! files are `csi-plugin-id-<id>.json` and `csi-volume-id-<id>.json`.
//! The lists are stubs as the debug command asks for them (`/v1/nodes`
//! without `?resources=true`: no NodeResources); each node's and job's
//! full object is in its `Node` or `Job` event. The first capture is an
//! older state (no jobs, no allocations) that the latest must replace.
//! JSON is written compact in the export's own key order, as Go's
//! `json.Marshal` writes it. Deterministic: the same bytes every time.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::value::RawValue;

pub const ROOT: &str = "nomad-debug-2026-01-05-093000Z";

/// JSON text without the whitespace between tokens.
fn compact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

/// An object's fields in their order.
struct Fields(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Fields;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Fields, A::Error> {
                let mut fields = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    fields.push(entry);
                }
                Ok(Fields(fields))
            }
        }
        deserializer.deserialize_map(Visit)
    }
}

impl Fields {
    fn text(&self, without: &[&str]) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .filter(|(key, _)| !without.contains(&key.as_str()))
            .map(|(key, value)| {
                format!(
                    "{}:{}",
                    serde_json::to_string(key).unwrap(),
                    compact(value.get())
                )
            })
            .collect();
        format!("{{{}}}", parts.join(","))
    }

    fn get(&self, key: &str) -> String {
        let value = &self.0.iter().find(|(k, _)| k == key).unwrap().1;
        serde_json::from_str(value.get()).unwrap()
    }
}

fn list(export: &Path, file: &str) -> Vec<Fields> {
    serde_json::from_str(&std::fs::read_to_string(export.join(file)).unwrap()).unwrap()
}

fn read(export: &Path, path: &str) -> Option<String> {
    std::fs::read_to_string(export.join(path))
        .ok()
        .map(|text| compact(&text))
}

fn ndjson(lines: &[String]) -> String {
    lines.iter().map(|line| format!("{line}\n")).collect()
}

/// The bundle's files: path inside the archive to bytes, in the order
/// `filepath.Walk` archives them (lexical).
pub fn bundle_files(export: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files: BTreeMap<String, String> = BTreeMap::new();
    let nodes = list(export, "nodes.json");
    let stubs: Vec<String> = nodes
        .iter()
        .map(|node| node.text(&["NodeResources", "ReservedResources"]))
        .collect();
    files.insert(
        "cluster/nodes.json".into(),
        format!("[{}]", stubs.join(",")),
    );
    let mut events = Vec::new();
    let mut index = 10;
    for node in &nodes {
        let id = node.get("ID");
        // The Node object: node/<id>.json where the export saved it, else
        // the stub's fields (the export saved only those).
        let full = read(export, &format!("node/{id}.json")).unwrap_or_else(|| node.text(&[]));
        events.push(format!(
            r#"{{"Topic":"Node","Type":"NodeRegistration","Key":"{id}","FilterKeys":null,"Index":{index},"Payload":{{"Node":{full}}}}}"#
        ));
        index += 1;
        files.insert(
            format!("client/{id}/agent-host.json"),
            r#"{"AgentID":"","HostData":null}"#.into(),
        );
    }
    let jobs = list(export, "jobs.json");
    for job in &jobs {
        let id = job.get("ID");
        if let Some(full) = read(export, &format!("job/{id}.json")) {
            events.push(format!(
                r#"{{"Topic":"Job","Type":"JobRegistered","Key":"{id}","FilterKeys":null,"Index":{index},"Payload":{{"Job":{full}}}}}"#
            ));
            index += 1;
        }
    }
    events.push(format!(
        r#"{{"Topic":"Evaluation","Type":"EvaluationUpdated","Key":"e1","FilterKeys":["example"],"Index":{index},"Payload":{{"Evaluation":{{"ID":"e1"}}}}}}"#
    ));
    files.insert("cluster/eventstream.json".into(), ndjson(&events));
    files.insert(
        "cluster/members.json".into(),
        r#"{"ServerName":"server-1","ServerRegion":"global","ServerDC":"dc1","Members":[]}"#.into(),
    );
    // The first capture: the nodes, before any job ran.
    files.insert("interval/0000/nodes.json".into(), ndjson(&stubs));
    files.insert("interval/0000/jobs.json".into(), String::new());
    files.insert("interval/0000/allocations.json".into(), String::new());
    // The latest capture.
    files.insert("interval/0001/nodes.json".into(), ndjson(&stubs));
    for (file, name) in [
        ("jobs.json", "jobs.json"),
        ("allocations.json", "allocations.json"),
        ("plugins.json", "csi-plugins.json"),
        ("volumes.json", "csi-volumes.json"),
    ] {
        let entries: Vec<String> = list(export, file).iter().map(|e| e.text(&[])).collect();
        files.insert(format!("interval/0001/{name}"), ndjson(&entries));
    }
    for (file, dir, prefix) in [
        ("plugins.json", "plugin", "csi-plugin-id-"),
        ("volumes.json", "volume", "csi-volume-id-"),
    ] {
        for entry in list(export, file) {
            let id = entry.get("ID");
            let detail = read(export, &format!("{dir}/{id}.json")).unwrap();
            files.insert(format!("interval/0001/{prefix}{id}.json"), detail);
        }
    }
    for name in ["deployments.json", "evaluations.json"] {
        files.insert(format!("interval/0001/{name}"), String::new());
    }
    files.insert("interval/0001/metrics.json".into(), r#"{"Timestamp":"2026-01-05 09:30:30 +0000 UTC","Gauges":[],"Points":[],"Counters":[],"Samples":[]}"#.into());
    let manifest: Vec<String> = files
        .keys()
        .map(|path| serde_json::to_string(path).unwrap())
        .collect();
    files.insert("index.json".into(), format!("[{}]\n", manifest.join(",")));
    files
        .into_iter()
        .map(|(path, text)| (format!("{ROOT}/{path}"), text.into_bytes()))
        .collect()
}

/// The bundle as a tar stream (regular files only, as `TarCZF` writes
/// them: no directory entries), deterministic (mode 0644, time 0).
pub fn tar_bytes(files: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, bytes) in files {
        let mut header = tar::Header::new_ustar();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(1_767_605_400);
        header.set_entry_type(tar::EntryType::Regular);
        builder
            .append_data(&mut header, path, bytes.as_slice())
            .unwrap();
    }
    builder.into_inner().unwrap()
}

/// A tar stream gzip-compressed.
pub fn gzip(tar: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::best());
    encoder.write_all(tar).unwrap();
    encoder.finish().unwrap()
}

/// Writes the bundle's files into `dir`, as `tar xzf` unpacks it.
pub fn unpack(files: &BTreeMap<String, Vec<u8>>, dir: &Path) {
    for (path, bytes) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}
