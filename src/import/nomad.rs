//! `plansim import nomad DIR`: a scenario from JSON saved from a live
//! cluster's HTTP API. Pure: the files come in as text, keyed by their path
//! inside DIR (`nodes.json`, `node/<id>.json`, ...), and the scenario goes
//! out as YAML text plus notes on what was narrowed or assumed. The job and
//! volume JSON go through the same front end as `file:` entries.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

use crate::scenario::error::{LoadError, Position};
use crate::scenario::nomad_job::{file_error, ignored_warning, to_raw_job};
use crate::scenario::nomad_json::{parse_job, parse_value, volume_from_value};
use crate::scenario::nomad_volume::to_raw_volume;
use crate::scenario::raw::*;

/// The files of an export, by path inside DIR (`/`-separated).
pub type ExportFiles = BTreeMap<String, String>;

/// What an import produces.
pub struct Imported {
    pub yaml: String,
    /// What was left out, narrowed or assumed, one line each, for stderr.
    pub notes: Vec<String>,
}

/// The scenario as written: the raw types, plus the timeline events that
/// put nodes in their current state.
#[serde_with::skip_serializing_none]
#[derive(Serialize)]
struct Output {
    name: String,
    description: String,
    nodes: Vec<RawNode>,
    plugins: Vec<RawPlugin>,
    volumes: Vec<RawVolume>,
    jobs: Vec<RawJob>,
    initial_allocations: Vec<RawInitialAllocation>,
    events: Option<Vec<OutputEvent>>,
}

#[serde_with::skip_serializing_none]
#[derive(Serialize)]
struct OutputEvent {
    at: &'static str,
    node_down: Option<String>,
    node_drain: Option<String>,
}

/// Names from the API end up in YAML, terminals and CSV files: refuse
/// control characters and empty names rather than pass them on.
fn checked_name<'a>(file: &str, what: &str, name: &'a str) -> Result<&'a str, LoadError> {
    if name.trim().is_empty() || name.chars().any(char::is_control) || name.len() > 256 {
        return Err(file_error(
            file,
            None,
            format!(
                "{what} {name:?}: expected a non-empty name of printable characters (at most 256 bytes)"
            ),
        ));
    }
    Ok(name)
}

fn list<'v>(value: &'v Value, file: &str, what: &str) -> Result<&'v Vec<Value>, LoadError> {
    value.as_array().ok_or_else(|| {
        file_error(
            file,
            Some(Position { line: 1, column: 1 }),
            format!("expected a JSON list of {what} (the response of the endpoint), found something else"),
        )
    })
}

fn text<'v>(value: &'v Value, key: &str) -> &'v str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

fn number(value: &Value, path: &[&str]) -> i64 {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// Reads the export into a scenario named `name`.
pub fn import(files: &ExportFiles, name: &str) -> Result<Imported, LoadError> {
    let mut notes = Vec::new();
    let parse = |path: &str| -> Result<Option<Value>, LoadError> {
        files.get(path).map(|t| parse_value(t, path)).transpose()
    };
    for path in files.keys() {
        let known = [
            "nodes.json",
            "plugins.json",
            "volumes.json",
            "jobs.json",
            "allocations.json",
        ]
        .contains(&path.as_str())
            || ["node/", "plugin/", "volume/", "job/"]
                .iter()
                .any(|dir| path.starts_with(dir) && path.ends_with(".json"));
        if !known {
            notes.push(format!("{path}: not a file plansim reads; ignored"));
        }
    }
    let Some(nodes_json) = parse("nodes.json")? else {
        return Err(file_error(
            "nodes.json",
            None,
            "missing: save GET /v1/nodes?resources=true as nodes.json (see the README)",
        ));
    };

    // Plugins, from the list; per node from node/<id>.json or plugin/<id>.json.
    let mut plugins = Vec::new();
    let mut plugin_nodes: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
    match parse("plugins.json")? {
        None => notes.push("plugins.json missing: plugins only from node/<id>.json".into()),
        Some(list_json) => {
            for plugin in list(&list_json, "plugins.json", "CSI plugins")? {
                let id = checked_name("plugins.json", "plugin", text(plugin, "ID"))?.to_string();
                let detail = format!("plugin/{id}.json");
                if let Some(full) = parse(&detail)? {
                    for (node, info) in full
                        .get("Nodes")
                        .and_then(Value::as_object)
                        .into_iter()
                        .flatten()
                    {
                        plugin_nodes
                            .entry(node.clone())
                            .or_default()
                            .insert(id.clone(), info.clone());
                    }
                }
                plugins.push(id);
            }
        }
    }

    let mut nodes = Vec::new();
    let mut node_names: BTreeMap<String, String> = BTreeMap::new();
    let mut events = Vec::new();
    let mut node_details = BTreeMap::new();
    for node in list(&nodes_json, "nodes.json", "nodes")? {
        let id = text(node, "ID").to_string();
        let name = checked_name("nodes.json", "node", text(node, "Name"))?.to_string();
        if node_names.values().any(|n| *n == name) {
            return Err(file_error(
                "nodes.json",
                None,
                format!("node name {name:?} is used twice"),
            ));
        }
        node_names.insert(id.clone(), name.clone());
        let detail = parse(&format!("node/{id}.json"))?;
        if detail.is_none() {
            notes.push(format!(
                "node/{id}.json missing: node {name} has no attributes or CSI plugins beyond plugin/<id>.json"
            ));
        }
        node_details.insert(id.clone(), (name, node.clone(), detail));
    }

    // Volumes.
    let mut volumes = Vec::new();
    match parse("volumes.json")? {
        None => notes.push("volumes.json missing: no volumes imported".into()),
        Some(list_json) => {
            for stub in list(&list_json, "volumes.json", "CSI volumes")? {
                let id = checked_name("volumes.json", "volume", text(stub, "ID"))?.to_string();
                let path = format!("volume/{id}.json");
                let (value, source) = match files.get(&path) {
                    Some(t) => (parse_value(t, &path)?, path.clone()),
                    None => (stub.clone(), "volumes.json".to_string()),
                };
                let source_text = files.get(&source).map_or("", String::as_str);
                let volume = volume_from_value(&value, source_text, &source)?;
                if volume.capabilities.is_empty() {
                    notes.push(format!(
                        "volume {id}: no access mode in volumes.json (it has no claims); save {path} to import it"
                    ));
                    continue;
                }
                volumes.push(to_raw_volume(volume, &source)?);
            }
        }
    }

    // Jobs, each from job/<id>.json.
    let mut jobs = Vec::new();
    let mut job_ids = BTreeSet::new();
    match parse("jobs.json")? {
        None => notes.push("jobs.json missing: no jobs imported".into()),
        Some(list_json) => {
            for stub in list(&list_json, "jobs.json", "jobs")? {
                let id = checked_name("jobs.json", "job", text(stub, "ID"))?.to_string();
                if stub.get("Stop").and_then(Value::as_bool) == Some(true)
                    || text(stub, "Status") == "dead"
                {
                    notes.push(format!("job {id}: stopped or dead; left out"));
                    continue;
                }
                if !text(stub, "ParentID").is_empty() {
                    notes.push(format!(
                        "job {id}: a periodic or dispatched child; left out"
                    ));
                    continue;
                }
                let path = format!("job/{id}.json");
                let Some(job_text) = files.get(&path) else {
                    notes.push(format!("{path} missing: job {id} left out"));
                    continue;
                };
                let job = parse_job(job_text, &path)?;
                let (job_id, at) = (job.id.clone(), job.at);
                let (raw, ignored) = to_raw_job(job, &path, serde_saphyr::Location::UNKNOWN)?;
                notes.extend(
                    ignored_warning(&path, &format!("job \"{job_id}\""), at, &ignored)
                        .map(|w| format!("warning: {w}")),
                );
                job_ids.insert(job_id);
                jobs.push(raw);
            }
        }
    }
    let wanted_attributes = constraint_keys(&jobs);

    for (id, (name, stub, detail)) in node_details {
        let full = detail.as_ref().unwrap_or(&stub);
        let resources = full.get("NodeResources").or(stub.get("NodeResources"));
        let reserved = full
            .get("ReservedResources")
            .or(stub.get("ReservedResources"));
        let (cpu, memory) = match resources {
            Some(r) => {
                let reserved = reserved.cloned().unwrap_or(Value::Null);
                (
                    number(r, &["Cpu", "CpuShares"]) - number(&reserved, &["Cpu", "CpuShares"]),
                    number(r, &["Memory", "MemoryMB"]) - number(&reserved, &["Memory", "MemoryMB"]),
                )
            }
            None => {
                notes.push(format!(
                    "node {name}: no NodeResources (save /v1/nodes with ?resources=true); plansim's defaults used"
                ));
                (0, 0)
            }
        };
        let mut attributes = BTreeMap::new();
        for map in ["Attributes", "Meta"] {
            for (key, value) in full
                .get(map)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                if wanted_attributes.contains(key.as_str())
                    && let Some(value) = value.as_str()
                {
                    attributes.insert(key.clone(), value.to_string());
                }
            }
        }
        let mut drivers: Vec<String> = full
            .get("Drivers")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            // Nomad's driver checker wants a driver detected and healthy.
            .filter(|(_, info)| {
                ["Detected", "Healthy"]
                    .iter()
                    .all(|key| info.get(key).and_then(Value::as_bool) != Some(false))
            })
            .map(|(driver, _)| driver.clone())
            .collect();
        drivers.sort();
        let mut csi = full
            .get("CSINodePlugins")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (plugin, info) in plugin_nodes.get(&id).into_iter().flatten() {
            csi.entry(plugin.clone()).or_insert_with(|| info.clone());
        }
        let mut topology = BTreeMap::new();
        let mut csi_plugins = Vec::new();
        for (plugin, info) in &csi {
            if !plugins.contains(plugin) {
                plugins.push(plugin.clone());
            }
            let node_info = info.get("NodeInfo");
            let segments = node_info
                .and_then(|n| n.get("AccessibleTopology"))
                .and_then(|t| t.get("Segments"))
                .and_then(Value::as_object);
            for (key, value) in segments.into_iter().flatten() {
                if let Some(value) = value.as_str() {
                    topology.insert(key.clone(), value.to_string());
                }
            }
            let max = node_info.map_or(0, |n| number(n, &["MaxVolumes"]));
            csi_plugins.push(RawNodePlugin {
                id: plugin.clone(),
                healthy: Some(
                    info.get("Healthy")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                ),
                max_volumes: (max > 0).then(|| u32::try_from(max).unwrap_or(u32::MAX)),
            });
        }
        let status = text(full, "Status");
        if status != "ready" {
            events.push(OutputEvent {
                at: "0s",
                node_down: Some(name.clone()),
                node_drain: None,
            });
            notes.push(format!(
                "node {name}: status {status:?}; written as node_down at 0s"
            ));
        } else if full.get("Drain").and_then(Value::as_bool) == Some(true)
            || text(full, "SchedulingEligibility") == "ineligible"
        {
            events.push(OutputEvent {
                at: "0s",
                node_down: None,
                node_drain: Some(name.clone()),
            });
            notes.push(format!(
                "node {name}: draining or ineligible; written as node_drain at 0s"
            ));
        }
        nodes.push(RawNode {
            id: name,
            count: None,
            datacenter: Some(text(full, "Datacenter").to_string()).filter(|d| !d.is_empty()),
            node_class: Some(text(full, "NodeClass").to_string()).filter(|c| !c.is_empty()),
            attributes: (!attributes.is_empty()).then_some(attributes),
            cpu: (cpu > 0).then(|| cpu.unsigned_abs()),
            memory: (memory > 0).then(|| memory.unsigned_abs()),
            drivers: (!drivers.is_empty()).then_some(drivers),
            topology: (!topology.is_empty()).then_some(topology),
            csi_plugins: (!csi_plugins.is_empty()).then_some(csi_plugins),
        });
    }
    if !plugins.is_empty() {
        notes.push(format!(
            "plugins {}: whether a plugin enforces access modes is not in the API; written as enforces_access_mode: false, edit to say otherwise",
            plugins.join(", ")
        ));
    }

    // Allocations: the starting state.
    let mut initial = Vec::new();
    match parse("allocations.json")? {
        None => notes.push("allocations.json missing: the run starts with no allocations".into()),
        Some(list_json) => {
            for alloc in list(&list_json, "allocations.json", "allocations")? {
                let status = match (text(alloc, "DesiredStatus"), text(alloc, "ClientStatus")) {
                    ("run", "running") => RawInitialStatus::Running,
                    ("run", "pending") => RawInitialStatus::Pending,
                    _ => continue,
                };
                let alloc_name =
                    checked_name("allocations.json", "allocation", text(alloc, "Name"))?;
                if !job_ids.contains(text(alloc, "JobID")) {
                    notes.push(format!(
                        "allocation {alloc_name}: its job is not imported; left out"
                    ));
                    continue;
                }
                let Some(node) = node_names.get(text(alloc, "NodeID")) else {
                    notes.push(format!(
                        "allocation {alloc_name}: its node is not in nodes.json; left out"
                    ));
                    continue;
                };
                initial.push(RawInitialAllocation {
                    alloc: alloc_name.to_string(),
                    node: node.clone(),
                    status,
                });
            }
        }
    }
    initial.sort_by(|a, b| a.alloc.cmp(&b.alloc));

    let output = Output {
        name: name.to_string(),
        description: "Imported from a Nomad cluster's HTTP API by plansim import nomad.".into(),
        nodes,
        plugins: plugins
            .into_iter()
            .map(|id| RawPlugin {
                id,
                enforces_access_mode: false,
                publish_latency: None,
                controller_required: None,
                controller_publish_latency: None,
                controller_healthy: None,
            })
            .collect(),
        volumes,
        jobs,
        initial_allocations: initial,
        events: (!events.is_empty()).then_some(events),
    };
    let mut yaml = serde_saphyr::to_string(&output)
        .map_err(|err| file_error("scenario", None, format!("cannot write YAML: {err}")))?;
    if !yaml.ends_with('\n') {
        yaml.push('\n');
    }
    Ok(Imported { yaml, notes })
}

/// Attribute and meta keys the jobs' constraints look at: the only node
/// attributes worth writing.
fn constraint_keys(jobs: &[RawJob]) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let constraints = jobs.iter().flat_map(|job| {
        job.constraints.iter().flatten().chain(
            job.groups
                .iter()
                .flat_map(|g| g.value.constraints.iter().flatten()),
        )
    });
    for constraint in constraints {
        let inner = constraint
            .attribute
            .trim()
            .trim_start_matches("${")
            .trim_end_matches('}');
        if let Some(key) = inner
            .strip_prefix("attr.")
            .or_else(|| inner.strip_prefix("meta."))
        {
            keys.insert(key.to_string());
        }
    }
    keys
}
