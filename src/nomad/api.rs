//! JSON saved from a live cluster's HTTP API (the endpoints Nomad's
//! `command/agent` serves, in the shapes of its `api` package): nodes,
//! CSI plugins and volumes, jobs and allocations, into raw types. Pure: the
//! files come in as text, keyed by their path inside the export directory
//! (`nodes.json`, `node/<id>.json`, ...), and go out as raw types plus notes
//! on what was narrowed or assumed. The job and volume JSON go through the
//! same front end as `file:` entries (`nomad::json`, `nomad::job`).

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::value::RawValue;

use super::job::{ignored_warning, to_raw_job};
use super::json::{parse_job, parse_typed, parse_value, volume_from_value};
use super::volume::to_raw_volume;
use crate::model::scenario::DEFAULT_NODE_POOL;
use crate::scenario::error::{LoadError, Position, file_error};
use crate::scenario::limits::IMPORT_MAX_ALLOCATIONS;
use crate::scenario::raw::*;
use crate::scenario::write::raw::{RawCluster, StartEvent};

/// Where an export's files come from (a directory, for `plansim import
/// nomad DIR`): only the files named here are ever read, each when it is
/// parsed.
pub trait ExportSource {
    /// Every path the export lists (`nodes.json`, `node/<id>.json`, ...),
    /// for the notes on what is not read.
    fn listed(&self) -> Vec<String>;
    /// The text of the file at `path` inside the export, if it has one.
    fn read(&self, path: &str) -> Result<Option<String>, LoadError>;
    /// The file at `path` as a stream, for the one file that grows with
    /// the cluster past what is worth holding as text (allocations.json:
    /// a few KiB an allocation): parsed as it is read, keeping only what
    /// the import uses. By default, [`ExportSource::read`]'s text.
    fn open(&self, path: &str) -> Result<Option<Box<dyn std::io::Read + '_>>, LoadError> {
        Ok(self.read(path)?.map(|text| {
            Box::new(std::io::Cursor::new(text.into_bytes())) as Box<dyn std::io::Read>
        }))
    }
}

/// The files plansim reads at the top of an export; the rest are in these
/// subdirectories, as `<dir>/<id>.json`.
pub const EXPORT_FILES: [&str; 5] = [
    "nodes.json",
    "plugins.json",
    "volumes.json",
    "jobs.json",
    "allocations.json",
];
/// The subdirectories of an export that hold one file per id.
pub const EXPORT_DIRS: [&str; 4] = ["node", "plugin", "volume", "job"];

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

/// A list response parsed straight into `T`s (only the fields used).
fn parse_list<'t, T: Deserialize<'t>>(
    text: &'t str,
    file: &str,
    what: &str,
) -> Result<Vec<T>, LoadError> {
    super::json::refuse_bom(text, file)?;
    if !text.trim_start().starts_with('[') {
        return Err(file_error(
            file,
            Some(Position { line: 1, column: 1 }),
            format!(
                "expected a JSON list of {what} (the response of the endpoint), found something else"
            ),
        ));
    }
    parse_typed(text, file)
}

fn text(value: &Option<String>) -> &str {
    value.as_deref().unwrap_or("")
}

/// The fields of a node (`/v1/nodes?resources=true` entry, or
/// `/v1/node/:id`) that plansim uses; the API's others are skipped unread.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
struct ApiNode {
    #[serde(rename = "ID")]
    id: Option<String>,
    name: Option<String>,
    status: Option<String>,
    drain: Option<bool>,
    scheduling_eligibility: Option<String>,
    datacenter: Option<String>,
    node_class: Option<String>,
    node_pool: Option<String>,
    attributes: Option<BTreeMap<String, Option<String>>>,
    meta: Option<BTreeMap<String, Option<String>>>,
    drivers: Option<BTreeMap<String, Option<ApiDriver>>>,
    node_resources: Option<ApiResources>,
    reserved_resources: Option<ApiResources>,
    #[serde(rename = "CSINodePlugins")]
    csi_node_plugins: Option<BTreeMap<String, Option<ApiCsiInfo>>>,
    host_volumes: Option<BTreeMap<String, Option<ApiHostVolume>>>,
}

/// A node's `HostVolumes` entry (`structs.ClientHostVolumeConfig`).
#[derive(Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
struct ApiHostVolume {
    read_only: Option<bool>,
    /// Set for a dynamic host volume (which the volumes list carries).
    #[serde(rename = "ID")]
    id: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
struct ApiDriver {
    detected: Option<bool>,
    healthy: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
struct ApiResources {
    cpu: Option<ApiCpu>,
    memory: Option<ApiMemory>,
    disk: Option<ApiDisk>,
    networks: Option<ApiReservedNetworks>,
}

/// `NodeResources.Disk`, `ReservedResources.Disk`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ApiDisk {
    #[serde(rename = "DiskMB")]
    disk_mb: Option<i64>,
}

/// `ReservedResources.Networks`: the client's `reserved.reserved_ports`.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
struct ApiReservedNetworks {
    reserved_host_ports: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
struct ApiCpu {
    cpu_shares: Option<i64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ApiMemory {
    #[serde(rename = "MemoryMB")]
    memory_mb: Option<i64>,
}

/// A CSI plugin's info on one node (a node's CSINodePlugins entry, or a
/// plugin's Nodes entry).
#[derive(Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
struct ApiCsiInfo {
    healthy: Option<bool>,
    node_info: Option<ApiCsiNodeInfo>,
}

#[derive(Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
struct ApiCsiNodeInfo {
    max_volumes: Option<i64>,
    accessible_topology: Option<ApiTopology>,
}

#[derive(Clone, Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
struct ApiTopology {
    segments: Option<BTreeMap<String, Option<String>>>,
}

/// `/v1/plugin/csi/:id`: the nodes it runs on.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
struct ApiPlugin {
    nodes: Option<BTreeMap<String, Option<ApiCsiInfo>>>,
}

/// An entry of a list that plansim needs only the id of.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ApiStub {
    #[serde(rename = "ID")]
    id: Option<String>,
}

/// An entry of `/v1/jobs`.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
struct ApiJobStub {
    #[serde(rename = "ID")]
    id: Option<String>,
    stop: Option<bool>,
    status: Option<String>,
    #[serde(rename = "ParentID")]
    parent_id: Option<String>,
}

/// An entry of `/v1/allocations`.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "PascalCase")]
struct ApiAllocation {
    name: Option<String>,
    #[serde(rename = "JobID")]
    job_id: Option<String>,
    #[serde(rename = "NodeID")]
    node_id: Option<String>,
    desired_status: Option<String>,
    client_status: Option<String>,
    /// Nanoseconds since the Unix epoch of its last change.
    modify_time: Option<i64>,
}

/// The allocations of `/v1/allocations` that start the run (desired
/// status run, client status running or pending), with that status: each
/// entry is parsed and dropped as the file streams past, so what is held
/// is only what is kept, at most [`IMPORT_MAX_ALLOCATIONS`]; and the latest
/// `ModifyTime` of any of them, the snapshot's clock.
struct StartingAllocations(Vec<(ApiAllocation, RawInitialStatus)>, Option<i64>);

impl<'de> Deserialize<'de> for StartingAllocations {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct List;
        impl<'de> serde::de::Visitor<'de> for List {
            type Value = StartingAllocations;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON list of allocations (the response of the endpoint)")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut kept = Vec::new();
                let mut latest: Option<i64> = None;
                while let Some(alloc) = seq.next_element::<ApiAllocation>()? {
                    if let Some(t) = alloc.modify_time.filter(|&t| t > 0) {
                        latest = Some(latest.map_or(t, |l| l.max(t)));
                    }
                    let status = match (text(&alloc.desired_status), text(&alloc.client_status)) {
                        ("run", "running") => RawInitialStatus::Running,
                        ("run", "pending") => RawInitialStatus::Pending,
                        _ => continue,
                    };
                    if kept.len() >= IMPORT_MAX_ALLOCATIONS {
                        return Err(serde::de::Error::custom(format!(
                            "more than {IMPORT_MAX_ALLOCATIONS} running or pending allocations (IMPORT_MAX_ALLOCATIONS)"
                        )));
                    }
                    kept.push((alloc, status));
                }
                Ok(StartingAllocations(kept, latest))
            }
        }
        deserializer.deserialize_seq(List)
    }
}

/// A streamed file's parse error: a read refused by its limit in the
/// limit's words, anything else as [`parse_typed`] words it.
fn stream_error(err: &serde_json::Error, file: &str) -> LoadError {
    if err.is_io() {
        return file_error(file, None, err.to_string());
    }
    super::json::json_error(err, file)
}

/// The export being read.
struct Export<'f> {
    files: &'f dyn ExportSource,
}

impl Export<'_> {
    /// The file at `path` parsed as a `T`, if the export has it.
    fn parse<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<Option<T>, LoadError> {
        self.files
            .read(path)?
            .map(|t| parse_typed(&t, path))
            .transpose()
    }
}

/// A node of nodes.json: its name, its entry in the list, and its
/// node/<id>.json if saved.
struct ListedNode {
    name: String,
    stub: ApiNode,
    detail: Option<ApiNode>,
}

impl ListedNode {
    fn full(&self) -> &ApiNode {
        self.detail.as_ref().unwrap_or(&self.stub)
    }
}

/// Reads the export into raw types.
pub fn read(files: &dyn ExportSource) -> Result<ImportedCluster, LoadError> {
    let export = Export { files };
    let mut notes = unknown_files(&files.listed());
    let Some(nodes_text) = files.read("nodes.json")? else {
        return Err(file_error(
            "nodes.json",
            None,
            "missing: save GET /v1/nodes?resources=true as nodes.json (see the README)",
        ));
    };
    let nodes_list: Vec<ApiNode> = parse_list(&nodes_text, "nodes.json", "nodes")?;
    drop(nodes_text);
    let (mut plugins, plugin_nodes) = read_plugins(&export, &mut notes)?;
    let (node_names, listed) = read_node_list(&export, nodes_list, &mut notes)?;
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
        if let Some(event) = start_event(&node.name, node.full(), &mut notes) {
            start_events.push(event);
        }
    }
    if !plugins.is_empty() {
        notes.push(format!(
            "plugins {}: whether a plugin enforces access modes is not in the API; written as enforces_access_mode: false, edit to say otherwise",
            plugins.join(", ")
        ));
    }
    let (initial_allocations, start_time) =
        read_allocations(&export, &job_ids, &node_names, &mut notes)?;
    let cluster = RawCluster {
        nodes,
        plugins: plugins
            .into_iter()
            .map(|id| RawPlugin {
                id,
                plugin_type: None,
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
        start_time,
    };
    Ok(ImportedCluster { cluster, notes })
}

/// Whether plansim reads the file at `path` of an export (by its name
/// only: `node/<id>.json` is read only for a node nodes.json lists).
pub fn is_export_file(path: &str) -> bool {
    EXPORT_FILES.contains(&path)
        || EXPORT_DIRS.iter().any(|dir| {
            path.strip_prefix(dir)
                .and_then(|rest| rest.strip_prefix('/'))
                .is_some_and(|name| name.ends_with(".json") && !name.contains('/'))
        })
}

/// A note for every file plansim does not read.
fn unknown_files(listed: &[String]) -> Vec<String> {
    listed
        .iter()
        .filter(|path| !is_export_file(path))
        .map(|path| format!("{path}: not a file plansim reads; ignored"))
        .collect()
}

/// CSI plugin ids from plugins.json, in its order, and per node id the
/// plugins plugin/<id>.json says it runs.
type PluginNodes = BTreeMap<String, BTreeMap<String, ApiCsiInfo>>;

fn read_plugins(
    export: &Export,
    notes: &mut Vec<String>,
) -> Result<(Vec<String>, PluginNodes), LoadError> {
    let mut plugins = Vec::new();
    let mut plugin_nodes = PluginNodes::new();
    let Some(list_text) = export.files.read("plugins.json")? else {
        notes.push("plugins.json missing: plugins only from node/<id>.json".into());
        return Ok((plugins, plugin_nodes));
    };
    let list: Vec<ApiStub> = parse_list(&list_text, "plugins.json", "CSI plugins")?;
    drop(list_text);
    for plugin in list {
        let id = checked_name("plugins.json", "plugin", text(&plugin.id))?.to_string();
        let detail = format!("plugin/{id}.json");
        if let Some(full) = export.parse::<ApiPlugin>(&detail)? {
            for (node, info) in full.nodes.into_iter().flatten() {
                plugin_nodes
                    .entry(node)
                    .or_default()
                    .insert(id.clone(), info.unwrap_or_default());
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
    nodes_list: Vec<ApiNode>,
    notes: &mut Vec<String>,
) -> Result<(NodeNames, BTreeMap<String, ListedNode>), LoadError> {
    let mut node_names = NodeNames::new();
    let mut names = BTreeSet::new();
    let mut listed = BTreeMap::new();
    for node in nodes_list {
        let id = text(&node.id).to_string();
        let name = checked_name("nodes.json", "node", text(&node.name))?.to_string();
        if !names.insert(name.clone()) {
            return Err(file_error(
                "nodes.json",
                None,
                format!("node name {name:?} is used twice"),
            ));
        }
        node_names.insert(id.clone(), name.clone());
        let detail = export.parse::<ApiNode>(&format!("node/{id}.json"))?;
        if detail.is_none() {
            notes.push(format!(
                "node/{id}.json missing: node {name} has no attributes or CSI plugins beyond plugin/<id>.json"
            ));
        }
        listed.insert(
            id,
            ListedNode {
                name,
                stub: node,
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
    let Some(list_text) = export.files.read("volumes.json")? else {
        notes.push("volumes.json missing: no volumes imported".into());
        return Ok(volumes);
    };
    // Each entry as its own text, parsed only if its volume/<id>.json is
    // not saved.
    let list: Vec<&RawValue> = parse_list(&list_text, "volumes.json", "CSI volumes")?;
    for entry in list {
        let stub: ApiStub = parse_typed(entry.get(), "volumes.json")?;
        let id = checked_name("volumes.json", "volume", text(&stub.id))?.to_string();
        let path = format!("volume/{id}.json");
        let (volume, source) = match export.files.read(&path)? {
            Some(detail) => (
                volume_from_value(&parse_value(&detail, &path)?, &detail, &path)?,
                path.as_str(),
            ),
            None => (
                volume_from_value(
                    &parse_value(entry.get(), "volumes.json")?,
                    &list_text,
                    "volumes.json",
                )?,
                "volumes.json",
            ),
        };
        if volume.capabilities.is_empty() {
            notes.push(format!(
                "volume {id}: no access mode in volumes.json (it has no claims); save {path} to import it"
            ));
            continue;
        }
        volumes.push(to_raw_volume(volume, source)?);
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
    let Some(list_text) = export.files.read("jobs.json")? else {
        notes.push("jobs.json missing: no jobs imported".into());
        return Ok((jobs, job_ids));
    };
    let list: Vec<ApiJobStub> = parse_list(&list_text, "jobs.json", "jobs")?;
    drop(list_text);
    for stub in list {
        let id = checked_name("jobs.json", "job", text(&stub.id))?.to_string();
        if stub.stop == Some(true) || text(&stub.status) == "dead" {
            notes.push(format!("job {id}: stopped or dead; left out"));
            continue;
        }
        if !text(&stub.parent_id).is_empty() {
            notes.push(format!(
                "job {id}: a periodic or dispatched child; left out"
            ));
            continue;
        }
        let path = format!("job/{id}.json");
        let Some(job_text) = export.files.read(&path)? else {
            notes.push(format!("{path} missing: job {id} left out"));
            continue;
        };
        let job = parse_job(&job_text, &path)?;
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
    from_plugins: Option<&BTreeMap<String, ApiCsiInfo>>,
) -> BTreeMap<String, ApiCsiInfo> {
    let mut csi: BTreeMap<String, ApiCsiInfo> = node
        .full()
        .csi_node_plugins
        .iter()
        .flatten()
        .map(|(plugin, info)| (plugin.clone(), info.clone().unwrap_or_default()))
        .collect();
    for (plugin, info) in from_plugins.into_iter().flatten() {
        csi.entry(plugin.clone()).or_insert_with(|| info.clone());
    }
    csi
}

/// A node that is not ready starts down; one draining or ineligible starts
/// draining.
fn start_event(name: &str, full: &ApiNode, notes: &mut Vec<String>) -> Option<StartEvent> {
    let status = text(&full.status);
    if status != "ready" {
        notes.push(format!(
            "node {name}: status {status:?}; written as node_down at 0s"
        ));
        Some(StartEvent::NodeDown(name.to_string()))
    } else if full.drain == Some(true) || text(&full.scheduling_eligibility) == "ineligible" {
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
    csi: &BTreeMap<String, ApiCsiInfo>,
    wanted_attributes: &BTreeSet<String>,
    notes: &mut Vec<String>,
) -> RawNode {
    let name = &node.name;
    let full = node.full();
    let (cpu, memory, disk) = match node_resources(full, &node.stub) {
        Some(resources) => resources,
        None => {
            notes.push(format!(
                "node {name}: no NodeResources (save /v1/nodes with ?resources=true); plansim's defaults used"
            ));
            (0, 0, 0)
        }
    };
    let mut attributes = BTreeMap::new();
    for map in [&full.attributes, &full.meta] {
        for (key, value) in map.iter().flatten() {
            if wanted_attributes.contains(key.as_str())
                && let Some(value) = value
            {
                attributes.insert(key.clone(), value.clone());
            }
        }
    }
    let drivers = healthy_drivers(full);
    let (topology, csi_plugins) = node_csi(csi);
    RawNode {
        id: name.clone(),
        count: None,
        datacenter: Some(text(&full.datacenter).to_string()).filter(|d| !d.is_empty()),
        node_class: Some(text(&full.node_class).to_string()).filter(|c| !c.is_empty()),
        attributes: (!attributes.is_empty()).then_some(attributes),
        cpu: (cpu > 0).then(|| cpu.unsigned_abs()),
        memory: (memory > 0).then(|| memory.unsigned_abs()),
        disk: (disk > 0).then(|| disk.unsigned_abs()),
        drivers: (!drivers.is_empty()).then_some(drivers),
        topology: (!topology.is_empty()).then_some(topology),
        csi_plugins: (!csi_plugins.is_empty()).then_some(csi_plugins),
        // Nomad 1.6+ reports every node's pool; "default" is the default.
        node_pool: Some(text(&full.node_pool).to_string())
            .filter(|p| !p.is_empty() && p != DEFAULT_NODE_POOL),
        reserved_ports: full
            .reserved_resources
            .as_ref()
            .or(node.stub.reserved_resources.as_ref())
            .and_then(|r| r.networks.as_ref())
            .and_then(|n| n.reserved_host_ports.clone())
            .filter(|p| !p.is_empty()),
        host_volumes: static_host_volumes(full),
    }
}

/// The node's static host volumes (its client configuration's); a dynamic
/// one, which has an id, is left out.
fn static_host_volumes(node: &ApiNode) -> Option<Vec<RawNodeHostVolume>> {
    let volumes: Vec<RawNodeHostVolume> = node
        .host_volumes
        .iter()
        .flatten()
        .filter_map(|(name, config)| {
            let config = config.clone().unwrap_or_default();
            config
                .id
                .is_none_or(|id| id.is_empty())
                .then(|| RawNodeHostVolume {
                    name: name.clone(),
                    read_only: config.read_only.filter(|&r| r),
                })
        })
        .collect();
    (!volumes.is_empty()).then_some(volumes)
}

/// CPU, memory and disk less the reserved, if the node has NodeResources.
fn node_resources(full: &ApiNode, stub: &ApiNode) -> Option<(i64, i64, i64)> {
    let resources = full
        .node_resources
        .as_ref()
        .or(stub.node_resources.as_ref())?;
    let reserved = full
        .reserved_resources
        .as_ref()
        .or(stub.reserved_resources.as_ref());
    let cpu = |r: Option<&ApiResources>| {
        r.and_then(|r| r.cpu.as_ref())
            .and_then(|c| c.cpu_shares)
            .unwrap_or(0)
    };
    let memory = |r: Option<&ApiResources>| {
        r.and_then(|r| r.memory.as_ref())
            .and_then(|m| m.memory_mb)
            .unwrap_or(0)
    };
    let disk = |r: Option<&ApiResources>| {
        r.and_then(|r| r.disk.as_ref())
            .and_then(|d| d.disk_mb)
            .unwrap_or(0)
    };
    Some((
        cpu(Some(resources)).saturating_sub(cpu(reserved)),
        memory(Some(resources)).saturating_sub(memory(reserved)),
        disk(Some(resources)).saturating_sub(disk(reserved)),
    ))
}

/// The node's drivers, sorted.
fn healthy_drivers(full: &ApiNode) -> Vec<String> {
    // Nomad's driver checker wants a driver detected and healthy (BTreeMap: sorted).
    full.drivers
        .iter()
        .flatten()
        .filter(|(_, info)| {
            info.as_ref()
                .is_none_or(|i| i.detected != Some(false) && i.healthy != Some(false))
        })
        .map(|(driver, _)| driver.clone())
        .collect()
}

/// The topology segments the node's plugins report, and the plugins.
fn node_csi(csi: &BTreeMap<String, ApiCsiInfo>) -> (BTreeMap<String, String>, Vec<RawNodePlugin>) {
    let mut topology = BTreeMap::new();
    let mut csi_plugins = Vec::new();
    for (plugin, info) in csi {
        let node_info = info.node_info.as_ref();
        let segments = node_info
            .and_then(|n| n.accessible_topology.as_ref())
            .and_then(|t| t.segments.as_ref());
        for (key, value) in segments.into_iter().flatten() {
            if let Some(value) = value {
                topology.insert(key.clone(), value.clone());
            }
        }
        let max = node_info.and_then(|n| n.max_volumes).unwrap_or(0);
        csi_plugins.push(RawNodePlugin {
            id: plugin.clone(),
            healthy: Some(info.healthy.unwrap_or(false)),
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
) -> Result<(Vec<RawInitialAllocation>, Option<String>), LoadError> {
    let mut initial = Vec::new();
    let Some(stream) = export.files.open("allocations.json")? else {
        notes.push("allocations.json missing: the run starts with no allocations".into());
        return Ok((initial, None));
    };
    let mut parser = serde_json::Deserializer::from_reader(std::io::BufReader::new(stream));
    let StartingAllocations(list, latest) = StartingAllocations::deserialize(&mut parser)
        .and_then(|list| parser.end().map(|()| list))
        .map_err(|err| stream_error(&err, "allocations.json"))?;
    for (alloc, status) in list {
        let alloc_name = checked_name("allocations.json", "allocation", text(&alloc.name))?;
        if !job_ids.contains(text(&alloc.job_id)) {
            notes.push(format!(
                "allocation {alloc_name}: its job is not imported; left out"
            ));
            continue;
        }
        let Some(node) = node_names.get(text(&alloc.node_id)) else {
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
    // The snapshot's clock: simulated 0s is when the last allocation
    // changed, so periodic jobs launch from the cluster's own time.
    let start_time = latest.map(|nanos| {
        let clock = crate::model::periodic::WallClock(nanos.div_euclid(1_000_000_000));
        notes.push(format!(
            "start_time {}: the latest allocation ModifyTime, the snapshot's clock (periodic jobs launch from it)",
            clock.to_rfc3339()
        ));
        clock.to_rfc3339()
    });
    Ok((initial, start_time))
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
