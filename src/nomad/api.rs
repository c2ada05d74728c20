//! JSON saved from a live cluster's HTTP API (the endpoints Nomad's
//! `command/agent` serves, in the shapes of its `api` package): nodes,
//! CSI plugins and volumes, jobs and allocations, into raw types. Pure: the
//! files come in as text, keyed by their path inside the export directory
//! (`nodes.json`, `node/<id>.json`, ...), and go out as raw types plus notes
//! on what was narrowed or assumed. The job and volume JSON go through the
//! same front end as `file:` entries (`nomad::json`, `nomad::job`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::job::{ignored_warning, to_raw_job};
use super::json::{parse_job, parse_value, volume_from_value};
use super::volume::to_raw_volume;
use crate::scenario::error::{LoadError, Position, file_error};
use crate::scenario::raw::*;
use crate::scenario::write::raw::{RawCluster, StartEvent};

/// The files of an export, by path inside DIR (`/`-separated).
pub type ExportFiles = BTreeMap<String, String>;

/// What the export says about the cluster, as raw types.
pub struct ImportedCluster {
    /// Nodes down or draining now are timeline events at 0s in it.
    pub cluster: RawCluster,
    /// What was left out, narrowed or assumed, one line each, in the order
    /// found.
    pub notes: Vec<String>,
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

/// The export being read.
struct Export<'f> {
    files: &'f ExportFiles,
}

impl Export<'_> {
    /// The file at `path` as JSON, if the export has it.
    fn parse(&self, path: &str) -> Result<Option<Value>, LoadError> {
        self.files
            .get(path)
            .map(|t| parse_value(t, path))
            .transpose()
    }
}

/// A node of nodes.json: its name, its entry in the list, and its
/// node/<id>.json if saved.
struct ListedNode {
    name: String,
    stub: Value,
    detail: Option<Value>,
}

/// Reads the export into raw types.
pub fn read(files: &ExportFiles) -> Result<ImportedCluster, LoadError> {
    let export = Export { files };
    let mut notes = unknown_files(files);
    let Some(nodes_json) = export.parse("nodes.json")? else {
        return Err(file_error(
            "nodes.json",
            None,
            "missing: save GET /v1/nodes?resources=true as nodes.json (see the README)",
        ));
    };
    let (mut plugins, plugin_nodes) = read_plugins(&export, &mut notes)?;
    let (node_names, listed) = read_node_list(&export, &nodes_json, &mut notes)?;
    let volumes = read_volumes(&export, &mut notes)?;
    let (jobs, job_ids) = read_jobs(&export, &mut notes)?;
    let wanted_attributes = constraint_keys(&jobs);
    let mut nodes = Vec::new();
    let mut start_events = Vec::new();
    for (id, node) in listed {
        let csi = node_plugins(&node, plugin_nodes.get(&id));
        for plugin in csi.keys() {
            if !plugins.contains(plugin) {
                plugins.push(plugin.clone());
            }
        }
        nodes.push(raw_node(&node, &csi, &wanted_attributes, &mut notes));
        let full = node.detail.as_ref().unwrap_or(&node.stub);
        if let Some(event) = start_event(&node.name, full, &mut notes) {
            start_events.push(event);
        }
    }
    if !plugins.is_empty() {
        notes.push(format!(
            "plugins {}: whether a plugin enforces access modes is not in the API; written as enforces_access_mode: false, edit to say otherwise",
            plugins.join(", ")
        ));
    }
    let initial_allocations = read_allocations(&export, &job_ids, &node_names, &mut notes)?;
    let cluster = RawCluster {
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
                controller_publish_failure: None,
                node_publish_failure: None,
            })
            .collect(),
        volumes,
        jobs,
        initial_allocations,
        start_events,
    };
    Ok(ImportedCluster { cluster, notes })
}

/// A note for every file plansim does not read.
fn unknown_files(files: &ExportFiles) -> Vec<String> {
    let mut notes = Vec::new();
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
    notes
}

/// CSI plugin ids from plugins.json, in its order, and per node id the
/// plugins plugin/<id>.json says it runs.
type PluginNodes = BTreeMap<String, BTreeMap<String, Value>>;

fn read_plugins(
    export: &Export,
    notes: &mut Vec<String>,
) -> Result<(Vec<String>, PluginNodes), LoadError> {
    let mut plugins = Vec::new();
    let mut plugin_nodes = PluginNodes::new();
    let Some(list_json) = export.parse("plugins.json")? else {
        notes.push("plugins.json missing: plugins only from node/<id>.json".into());
        return Ok((plugins, plugin_nodes));
    };
    for plugin in list(&list_json, "plugins.json", "CSI plugins")? {
        let id = checked_name("plugins.json", "plugin", text(plugin, "ID"))?.to_string();
        let detail = format!("plugin/{id}.json");
        if let Some(full) = export.parse(&detail)? {
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
    Ok((plugins, plugin_nodes))
}

/// Node names by node id.
type NodeNames = BTreeMap<String, String>;

/// nodes.json's nodes by id, with their node/<id>.json; and node names by
/// id (names must be unique: they become the scenario's node ids).
fn read_node_list(
    export: &Export,
    nodes_json: &Value,
    notes: &mut Vec<String>,
) -> Result<(NodeNames, BTreeMap<String, ListedNode>), LoadError> {
    let mut node_names = NodeNames::new();
    let mut listed = BTreeMap::new();
    for node in list(nodes_json, "nodes.json", "nodes")? {
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
        let detail = export.parse(&format!("node/{id}.json"))?;
        if detail.is_none() {
            notes.push(format!(
                "node/{id}.json missing: node {name} has no attributes or CSI plugins beyond plugin/<id>.json"
            ));
        }
        listed.insert(
            id,
            ListedNode {
                name,
                stub: node.clone(),
                detail,
            },
        );
    }
    Ok((node_names, listed))
}

/// volumes.json's volumes, each from volume/<id>.json when saved (the list
/// has no access modes for a volume without claims).
fn read_volumes(export: &Export, notes: &mut Vec<String>) -> Result<Vec<RawVolume>, LoadError> {
    let mut volumes = Vec::new();
    let Some(list_json) = export.parse("volumes.json")? else {
        notes.push("volumes.json missing: no volumes imported".into());
        return Ok(volumes);
    };
    for stub in list(&list_json, "volumes.json", "CSI volumes")? {
        let id = checked_name("volumes.json", "volume", text(stub, "ID"))?.to_string();
        let path = format!("volume/{id}.json");
        let (value, source) = match export.files.get(&path) {
            Some(t) => (parse_value(t, &path)?, path.clone()),
            None => (stub.clone(), "volumes.json".to_string()),
        };
        let source_text = export.files.get(&source).map_or("", String::as_str);
        let volume = volume_from_value(&value, source_text, &source)?;
        if volume.capabilities.is_empty() {
            notes.push(format!(
                "volume {id}: no access mode in volumes.json (it has no claims); save {path} to import it"
            ));
            continue;
        }
        volumes.push(to_raw_volume(volume, &source)?);
    }
    Ok(volumes)
}

/// jobs.json's running jobs, each from job/<id>.json; and their ids.
fn read_jobs(
    export: &Export,
    notes: &mut Vec<String>,
) -> Result<(Vec<RawJob>, BTreeSet<String>), LoadError> {
    let mut jobs = Vec::new();
    let mut job_ids = BTreeSet::new();
    let Some(list_json) = export.parse("jobs.json")? else {
        notes.push("jobs.json missing: no jobs imported".into());
        return Ok((jobs, job_ids));
    };
    for stub in list(&list_json, "jobs.json", "jobs")? {
        let id = checked_name("jobs.json", "job", text(stub, "ID"))?.to_string();
        if stub.get("Stop").and_then(Value::as_bool) == Some(true) || text(stub, "Status") == "dead"
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
        let Some(job_text) = export.files.get(&path) else {
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
    Ok((jobs, job_ids))
}

/// The CSI plugins a node runs: its own CSINodePlugins, then those only
/// plugin/<id>.json places on it.
fn node_plugins(
    node: &ListedNode,
    from_plugins: Option<&BTreeMap<String, Value>>,
) -> serde_json::Map<String, Value> {
    let full = node.detail.as_ref().unwrap_or(&node.stub);
    let mut csi = full
        .get("CSINodePlugins")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (plugin, info) in from_plugins.into_iter().flatten() {
        csi.entry(plugin.clone()).or_insert_with(|| info.clone());
    }
    csi
}

/// A node that is not ready starts down; one draining or ineligible starts
/// draining.
fn start_event(name: &str, full: &Value, notes: &mut Vec<String>) -> Option<StartEvent> {
    let status = text(full, "Status");
    if status != "ready" {
        notes.push(format!(
            "node {name}: status {status:?}; written as node_down at 0s"
        ));
        Some(StartEvent::NodeDown(name.to_string()))
    } else if full.get("Drain").and_then(Value::as_bool) == Some(true)
        || text(full, "SchedulingEligibility") == "ineligible"
    {
        notes.push(format!(
            "node {name}: draining or ineligible; written as node_drain at 0s"
        ));
        Some(StartEvent::NodeDrain(name.to_string()))
    } else {
        None
    }
}

/// One node: its resources less the reserved, the attributes and meta the
/// jobs' constraints look at, healthy drivers, topology and CSI plugins.
fn raw_node(
    node: &ListedNode,
    csi: &serde_json::Map<String, Value>,
    wanted_attributes: &BTreeSet<String>,
    notes: &mut Vec<String>,
) -> RawNode {
    let name = &node.name;
    let full = node.detail.as_ref().unwrap_or(&node.stub);
    let (cpu, memory) = match node_resources(full, &node.stub) {
        Some(resources) => resources,
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
    let drivers = healthy_drivers(full);
    let (topology, csi_plugins) = node_csi(csi);
    RawNode {
        id: name.clone(),
        count: None,
        datacenter: Some(text(full, "Datacenter").to_string()).filter(|d| !d.is_empty()),
        node_class: Some(text(full, "NodeClass").to_string()).filter(|c| !c.is_empty()),
        attributes: (!attributes.is_empty()).then_some(attributes),
        cpu: (cpu > 0).then(|| cpu.unsigned_abs()),
        memory: (memory > 0).then(|| memory.unsigned_abs()),
        drivers: (!drivers.is_empty()).then_some(drivers),
        topology: (!topology.is_empty()).then_some(topology),
        csi_plugins: (!csi_plugins.is_empty()).then_some(csi_plugins),
    }
}

/// CPU and memory less the reserved, if the node has NodeResources.
fn node_resources(full: &Value, stub: &Value) -> Option<(i64, i64)> {
    let resources = full.get("NodeResources").or(stub.get("NodeResources"))?;
    let reserved = full
        .get("ReservedResources")
        .or(stub.get("ReservedResources"))
        .cloned()
        .unwrap_or(Value::Null);
    Some((
        number(resources, &["Cpu", "CpuShares"]) - number(&reserved, &["Cpu", "CpuShares"]),
        number(resources, &["Memory", "MemoryMB"]) - number(&reserved, &["Memory", "MemoryMB"]),
    ))
}

/// The node's drivers, sorted.
fn healthy_drivers(full: &Value) -> Vec<String> {
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
    drivers
}

/// The topology segments the node's plugins report, and the plugins.
fn node_csi(
    csi: &serde_json::Map<String, Value>,
) -> (BTreeMap<String, String>, Vec<RawNodePlugin>) {
    let mut topology = BTreeMap::new();
    let mut csi_plugins = Vec::new();
    for (plugin, info) in csi {
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
    (topology, csi_plugins)
}

/// allocations.json's running and pending allocations of imported jobs on
/// listed nodes: the starting state, sorted by name.
fn read_allocations(
    export: &Export,
    job_ids: &BTreeSet<String>,
    node_names: &NodeNames,
    notes: &mut Vec<String>,
) -> Result<Vec<RawInitialAllocation>, LoadError> {
    let mut initial = Vec::new();
    let Some(list_json) = export.parse("allocations.json")? else {
        notes.push("allocations.json missing: the run starts with no allocations".into());
        return Ok(initial);
    };
    for alloc in list(&list_json, "allocations.json", "allocations")? {
        let status = match (text(alloc, "DesiredStatus"), text(alloc, "ClientStatus")) {
            ("run", "running") => RawInitialStatus::Running,
            ("run", "pending") => RawInitialStatus::Pending,
            _ => continue,
        };
        let alloc_name = checked_name("allocations.json", "allocation", text(alloc, "Name"))?;
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
    initial.sort_by(|a, b| a.alloc.cmp(&b.alloc));
    Ok(initial)
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
