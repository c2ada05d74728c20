//! The scenario file exactly as written: serde types mirroring the YAML, with
//! `deny_unknown_fields` everywhere so a typo is an error, never ignored.
//! Entries that later checks may complain about are wrapped in `Spanned` so
//! those errors can point at `file:line:column` too.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

use crate::model::access::AccessMode;
use crate::model::metrics::Metric;
use crate::model::policy::Policy;
use crate::model::time::{Millis, parse_duration};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    pub name: Option<String>,
    pub description: Option<String>,
    pub seed: Option<u64>,
    pub horizon: Option<RawDuration>,
    pub schedulers: Option<Vec<Policy>>,
    pub cluster: Option<RawCluster>,
    #[serde(default)]
    pub nodes: Vec<Spanned<RawNode>>,
    #[serde(default)]
    pub plugins: Vec<Spanned<RawPlugin>>,
    #[serde(default)]
    pub volumes: Vec<Spanned<RawVolume>>,
    #[serde(default)]
    pub jobs: Vec<Spanned<RawJob>>,
    #[serde(default)]
    pub events: Vec<Spanned<RawEvent>>,
    pub expect: Option<BTreeMap<Policy, BTreeMap<Metric, Spanned<RawExpectValue>>>>,
    #[serde(default)]
    pub initial_allocations: Vec<Spanned<RawInitialAllocation>>,
    /// `initial_allocations` in the compact form `plansim import nomad`
    /// writes (one YAML node per allocation, so a large cluster's state
    /// fits YAML_MAX_NODES): node -> status -> allocation names. Read as
    /// the entries it stands for, after `initial_allocations`.
    pub initial_allocations_by_node: Option<InitialByNode>,
    /// RFC 3339: the wall-clock time of simulated 0s, which cron specs are
    /// read against (default 1970-01-01T00:00:00Z).
    pub start_time: Option<Spanned<String>>,
}

/// `initial_allocations_by_node`: per node, per status, the allocations.
pub type InitialByNode = BTreeMap<String, Spanned<BTreeMap<RawInitialStatus, Vec<String>>>>;

/// The entries `initial_allocations_by_node` stands for, each at its
/// node's place in the file: node by node, status by status, in order.
pub fn initial_by_node_entries(by_node: InitialByNode) -> Vec<Spanned<RawInitialAllocation>> {
    let mut entries = Vec::new();
    for (node, statuses) in by_node {
        let (referenced, defined) = (statuses.referenced, statuses.defined);
        for (status, allocs) in statuses.value {
            for alloc in allocs {
                entries.push(Spanned {
                    value: RawInitialAllocation {
                        alloc,
                        node: node.clone(),
                        status,
                    },
                    referenced,
                    defined,
                });
            }
        }
    }
    entries
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCluster {
    pub scheduler_workers: Option<u32>,
    pub scheduler_algorithm: Option<crate::model::scenario::SchedulerAlgorithm>,
    pub scheduler_latency: Option<RawDuration>,
    pub pull_delay: Option<RawDuration>,
    pub node_detach_latency: Option<RawDuration>,
    pub controller_detach_latency: Option<RawDuration>,
    pub claim_free_latency: Option<RawDuration>,
    pub claim_retry_deadline: Option<RawDuration>,
    pub csi_volume_claim_gc_interval: Option<RawDuration>,
    pub csi_volume_claim_gc_threshold: Option<RawDuration>,
    pub node_gc_threshold: Option<RawDuration>,
    pub node_gc_interval: Option<RawDuration>,
    pub heartbeat_grace: Option<RawDuration>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawNode {
    pub id: String,
    pub count: Option<RawCount>,
    pub datacenter: Option<String>,
    pub node_class: Option<String>,
    pub attributes: Option<BTreeMap<String, String>>,
    pub cpu: Option<u64>,
    pub memory: Option<u64>,
    /// MB of disk for allocations' ephemeral disks.
    pub disk: Option<u64>,
    pub drivers: Option<Vec<String>>,
    pub topology: Option<BTreeMap<String, String>>,
    pub csi_plugins: Option<Vec<RawNodePlugin>>,
    /// Nomad's client `node_pool` (1.6+); "default" when not given.
    pub node_pool: Option<String>,
    /// Nomad's client `reserved.reserved_ports`: "22,8500-8600".
    pub reserved_ports: Option<String>,
    /// The client's static host volumes (`client { host_volume "x" {} }`).
    pub host_volumes: Option<Vec<RawNodeHostVolume>>,
}

/// A static host volume of a client's configuration.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawNodeHostVolume {
    pub name: String,
    pub read_only: Option<bool>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawNodePlugin {
    pub id: String,
    pub healthy: Option<bool>,
    pub max_volumes: Option<u32>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPlugin {
    pub id: String,
    /// `csi` (default) or `host`: a dynamic host volume plugin.
    #[serde(rename = "type")]
    pub plugin_type: Option<RawPluginType>,
    pub enforces_access_mode: bool,
    pub publish_latency: Option<RawDuration>,
    pub controller_required: Option<bool>,
    pub controller_publish_latency: Option<RawDuration>,
    pub controller_healthy: Option<bool>,
    pub controller_publish_failure: Option<f64>,
    pub node_publish_failure: Option<f64>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RawPluginType {
    Csi,
    Host,
}

/// An access mode as a file writes it: CSI's five and the two only host
/// volumes have; each resolver takes the ones its volume kind has.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RawAccessMode {
    SingleNodeReaderOnly,
    SingleNodeWriter,
    MultiNodeReaderOnly,
    MultiNodeSingleWriter,
    MultiNodeMultiWriter,
    SingleNodeSingleWriter,
    SingleNodeMultiWriter,
}

impl RawAccessMode {
    /// The CSI mode of that name, if CSI has one.
    pub fn csi(self) -> Option<AccessMode> {
        match self {
            RawAccessMode::SingleNodeReaderOnly => Some(AccessMode::SingleNodeReaderOnly),
            RawAccessMode::SingleNodeWriter => Some(AccessMode::SingleNodeWriter),
            RawAccessMode::MultiNodeReaderOnly => Some(AccessMode::MultiNodeReaderOnly),
            RawAccessMode::MultiNodeSingleWriter => Some(AccessMode::MultiNodeSingleWriter),
            RawAccessMode::MultiNodeMultiWriter => Some(AccessMode::MultiNodeMultiWriter),
            RawAccessMode::SingleNodeSingleWriter | RawAccessMode::SingleNodeMultiWriter => None,
        }
    }

    /// The host volume mode of that name, if host volumes have one.
    pub fn host(self) -> Option<crate::model::host_volume::HostAccessMode> {
        use crate::model::host_volume::HostAccessMode as Host;
        match self {
            RawAccessMode::SingleNodeReaderOnly => Some(Host::SingleNodeReaderOnly),
            RawAccessMode::SingleNodeWriter => Some(Host::SingleNodeWriter),
            RawAccessMode::SingleNodeSingleWriter => Some(Host::SingleNodeSingleWriter),
            RawAccessMode::SingleNodeMultiWriter => Some(Host::SingleNodeMultiWriter),
            _ => None,
        }
    }

    pub fn from_csi(mode: AccessMode) -> Self {
        match mode {
            AccessMode::SingleNodeReaderOnly => RawAccessMode::SingleNodeReaderOnly,
            AccessMode::SingleNodeWriter => RawAccessMode::SingleNodeWriter,
            AccessMode::MultiNodeReaderOnly => RawAccessMode::MultiNodeReaderOnly,
            AccessMode::MultiNodeSingleWriter => RawAccessMode::MultiNodeSingleWriter,
            AccessMode::MultiNodeMultiWriter => RawAccessMode::MultiNodeMultiWriter,
        }
    }

    pub fn from_host(mode: crate::model::host_volume::HostAccessMode) -> Self {
        use crate::model::host_volume::HostAccessMode as Host;
        match mode {
            Host::SingleNodeReaderOnly => RawAccessMode::SingleNodeReaderOnly,
            Host::SingleNodeWriter => RawAccessMode::SingleNodeWriter,
            Host::SingleNodeSingleWriter => RawAccessMode::SingleNodeSingleWriter,
            Host::SingleNodeMultiWriter => RawAccessMode::SingleNodeMultiWriter,
        }
    }

    /// The name as files write it.
    pub fn name(self) -> &'static str {
        match (self.csi(), self.host()) {
            (Some(csi), _) => csi.name(),
            (None, Some(host)) => host.name(),
            (None, None) => unreachable!("every raw mode is CSI's or a host volume's"),
        }
    }
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RawAttachmentMode {
    FileSystem,
    BlockDevice,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawVolume {
    // `id` and `plugin_id` may come from a volume spec file (`file:`); the
    // resolver refuses an inline volume without them.
    #[serde(default)]
    pub id: String,
    pub count: Option<RawCount>,
    #[serde(default)]
    pub plugin_id: String,
    /// A shorthand for `capabilities` with this one access mode.
    pub access_mode: Option<AccessMode>,
    pub attachment_mode: Option<RawAttachmentMode>,
    pub topologies: Option<Vec<BTreeMap<String, String>>>,
    pub capabilities: Option<Vec<RawCapability>>,
    /// A Nomad volume spec (HCL or JSON), relative to the scenario.
    pub file: Option<String>,
    /// When `nomad volume register` makes it known (default 0s).
    pub register_at: Option<RawDuration>,
    /// Nomad's volume `namespace`; "default" when not given.
    pub namespace: Option<String>,
    /// `csi` (default) or `host`: a dynamic host volume (Nomad 1.10+).
    #[serde(rename = "type")]
    pub volume_type: Option<RawVolumeType>,
    /// A host volume: the node it was created on.
    pub node: Option<String>,
    /// A host volume: created on the first node of this pool (in file
    /// order), when `node` is not given.
    pub node_pool: Option<String>,
    /// A host volume: constraints the node it is created on must meet.
    pub constraints: Option<Vec<RawConstraint>>,
}

/// Nomad's volume `capability` block.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawCapability {
    pub access_mode: RawAccessMode,
    pub attachment_mode: RawAttachmentMode,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RawJobType {
    Service,
    Batch,
    System,
    Sysbatch,
}

impl RawJobType {
    /// The model's kind of job this type names.
    pub fn kind(self) -> crate::model::scenario::JobKind {
        use crate::model::scenario::JobKind;
        match self {
            RawJobType::Service => JobKind::Service,
            RawJobType::Batch => JobKind::Batch,
            RawJobType::System => JobKind::System,
            RawJobType::Sysbatch => JobKind::Sysbatch,
        }
    }
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawJob {
    // `id` and `groups` may come from a Nomad job file (`file:`); the
    // resolver refuses an inline job without them.
    #[serde(default)]
    pub id: String,
    pub replicas: Option<RawCount>,
    #[serde(rename = "type")]
    pub job_type: Option<RawJobType>,
    pub submit_at: Option<RawDuration>,
    pub datacenters: Option<Vec<String>>,
    pub priority: Option<u32>,
    pub constraints: Option<Vec<RawConstraint>>,
    #[serde(default)]
    pub groups: Vec<Spanned<RawGroup>>,
    /// A Nomad job file (HCL2 or JSON), relative to the scenario.
    pub file: Option<String>,
    /// With `file:`: overrides of group counts, by group name.
    pub count: Option<BTreeMap<String, RawCount>>,
    /// With `file:`: a task's run time, by task name (what `run_for` is on
    /// a YAML task; a job file cannot say how long its tasks run).
    pub run_for: Option<BTreeMap<String, RawDuration>>,
    /// With `file:`: values for the job file's variables, as `nomad job run
    /// -var` gives them (typed as written here).
    pub vars: Option<BTreeMap<String, hcl::Value>>,
    /// With `file:`: var files, relative to the scenario, as `-var-file`
    /// gives them, in order (`vars:` takes precedence over them).
    pub var_files: Option<Vec<String>>,
    /// Nomad's `spread` blocks, for every group of the job.
    pub spread: Option<Vec<Spanned<RawSpread>>>,
    /// Nomad's `affinity` blocks, for every group of the job.
    pub affinity: Option<Vec<Spanned<RawAffinity>>>,
    /// Nomad's `update` block (groups inherit it, field by field).
    pub update: Option<RawUpdate>,
    /// Nomad's job `node_pool` (1.6+); "default" when not given, "all" for
    /// every node.
    pub node_pool: Option<String>,
    /// Nomad's job `namespace`; "default" when not given.
    pub namespace: Option<String>,
    /// Nomad's `periodic` block: launched at each cron time, not at once.
    pub periodic: Option<RawPeriodic>,
    /// Nomad's `parameterized` block: launched only by `dispatch` events.
    pub parameterized: Option<RawParameterized>,
}

/// Nomad's `periodic` block.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPeriodic {
    pub cron: Option<String>,
    /// Nomad 1.6.2+.
    pub crons: Option<Vec<String>>,
    pub prohibit_overlap: Option<bool>,
    pub time_zone: Option<String>,
    pub enabled: Option<bool>,
}

/// Nomad's `parameterized` block.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawParameterized {
    pub payload: Option<String>,
    pub meta_required: Option<Vec<String>>,
    pub meta_optional: Option<Vec<String>>,
}

/// Nomad's `update` block, at job or group level.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawUpdate {
    pub max_parallel: Option<RawCount>,
    pub canary: Option<RawCount>,
    pub min_healthy_time: Option<RawDuration>,
    pub healthy_deadline: Option<RawDuration>,
    pub progress_deadline: Option<RawDuration>,
    pub auto_revert: Option<bool>,
    pub auto_promote: Option<bool>,
    pub stagger: Option<RawDuration>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawConstraint {
    /// Empty only for `distinct_hosts`, which takes no attribute.
    #[serde(default)]
    pub attribute: String,
    pub operator: Option<String>,
    pub value: Option<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawGroup {
    pub name: String,
    pub count: Option<RawCount>,
    pub volumes: Option<BTreeMap<String, Spanned<RawVolumeRequest>>>,
    pub reschedule: Option<RawReschedule>,
    pub constraints: Option<Vec<RawConstraint>>,
    pub tasks: Vec<Spanned<RawTask>>,
    pub spread: Option<Vec<Spanned<RawSpread>>>,
    pub affinity: Option<Vec<Spanned<RawAffinity>>>,
    /// Nomad's `update` block, merged over the job's.
    pub update: Option<RawUpdate>,
    pub migrate: Option<RawMigrate>,
    /// The group fields Nomad deprecated in 1.8 and ignores from 1.10.
    pub max_client_disconnect: Option<RawDuration>,
    pub stop_after_client_disconnect: Option<RawDuration>,
    /// Nomad 1.8+'s `disconnect` block.
    pub disconnect: Option<RawDisconnect>,
    /// Nomad's group `shutdown_delay`: the client waits this long after
    /// deregistering the group's services before it kills any task.
    pub shutdown_delay: Option<RawDuration>,
    /// Nomad 2.0.3+'s group `max_run_duration` (batch and sysbatch jobs).
    pub max_run_duration: Option<RawDuration>,
    /// Nomad's group `network` block: its ports.
    pub network: Option<RawNetwork>,
    /// Nomad's group `ephemeral_disk` block.
    pub ephemeral_disk: Option<RawEphemeralDisk>,
}

/// A group's `ephemeral_disk:`, as Nomad's block.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawEphemeralDisk {
    /// MB (`size`), at least 10.
    pub size: Option<i64>,
    pub sticky: Option<bool>,
    pub migrate: Option<bool>,
}

/// A group's `network:`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawNetwork {
    #[serde(default)]
    pub ports: Vec<Spanned<RawPort>>,
}

/// One port: `{label: http, static: 8080}`, or `{label: metrics}` for a
/// dynamic one.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPort {
    pub label: String,
    #[serde(rename = "static")]
    pub static_port: Option<i64>,
}

/// Nomad 1.8+'s `disconnect` block (the two settings plansim models).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawDisconnect {
    pub lost_after: Option<RawDuration>,
    pub stop_on_client_after: Option<RawDuration>,
}

/// Nomad's `spread` block.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpread {
    pub attribute: String,
    pub weight: Option<i64>,
    pub targets: Option<Vec<RawSpreadTarget>>,
}

/// One `target` of a spread block.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpreadTarget {
    pub value: String,
    pub percent: i64,
}

/// Nomad's `affinity` block.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawAffinity {
    pub attribute: String,
    pub operator: Option<String>,
    pub value: Option<String>,
    pub weight: Option<i64>,
}

/// Nomad's `migrate` block.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawMigrate {
    pub max_parallel: Option<u32>,
    pub health_check: Option<RawHealthCheck>,
    pub min_healthy_time: Option<RawDuration>,
    pub healthy_deadline: Option<RawDuration>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RawHealthCheck {
    Checks,
    TaskStates,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RawVolumeType {
    Csi,
    Host,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawVolumeRequest {
    #[serde(rename = "type")]
    pub volume_type: RawVolumeType,
    pub source: String,
    pub read_only: Option<bool>,
    pub per_alloc: Option<bool>,
    pub access_mode: Option<RawAccessMode>,
    pub attachment_mode: Option<RawAttachmentMode>,
    /// A host volume request's `sticky` (Nomad 1.10+).
    pub sticky: Option<bool>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RawDelayFunction {
    Constant,
    Exponential,
    Fibonacci,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawReschedule {
    pub attempts: Option<u32>,
    pub interval: Option<RawDuration>,
    pub delay: Option<RawDuration>,
    pub delay_function: Option<RawDelayFunction>,
    pub max_delay: Option<RawDuration>,
    pub unlimited: Option<bool>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawTask {
    pub name: String,
    pub driver: Option<String>,
    pub cpu: Option<u64>,
    pub memory: Option<u64>,
    pub run_for: Option<RawDuration>,
    pub volume_mounts: Option<Vec<RawVolumeMount>>,
    pub csi_plugin: Option<RawCsiPlugin>,
    /// Time after the task starts until its health checks pass (plansim's
    /// stand-in for Nomad's checks; default 0s).
    pub healthy_after: Option<RawDuration>,
    /// Nomad's task `lifecycle` block; none: a main task.
    pub lifecycle: Option<RawLifecycle>,
    /// Nomad's `kill_timeout`: how long the client waits for the task to
    /// exit after its kill signal before it kills it.
    pub kill_timeout: Option<RawDuration>,
    /// Nomad's task `shutdown_delay`: the wait between deregistering the
    /// task's services and sending its kill signal.
    pub shutdown_delay: Option<RawDuration>,
}

/// Nomad's task `lifecycle` block.
#[serde_with::skip_serializing_none]
#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawLifecycle {
    pub hook: RawLifecycleHook,
    pub sidecar: Option<bool>,
}

/// When a lifecycle task runs (`structs.TaskLifecycleHookPrestart`, ...).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RawLifecycleHook {
    Prestart,
    Poststart,
    Poststop,
}

/// A task that runs a CSI plugin (Nomad's `csi_plugin` block).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawCsiPlugin {
    pub id: String,
    #[serde(rename = "type")]
    pub plugin_type: RawCsiPluginType,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RawCsiPluginType {
    Node,
    Controller,
    Monolith,
}

/// An allocation that exists at time 0 (`initial_allocations`, what
/// `plansim import nomad` writes for a live cluster).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawInitialAllocation {
    /// Nomad's allocation name, `<job>.<group>[<index>]`.
    pub alloc: String,
    pub node: String,
    pub status: RawInitialStatus,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum RawInitialStatus {
    Running,
    Pending,
    /// Failed before the run began and not yet rescheduled.
    Failed,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawVolumeMount {
    pub volume: String,
    pub destination: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEvent {
    pub at: RawDuration,
    pub node_down: Option<RawNodeDown>,
    pub node_up: Option<String>,
    pub node_drain: Option<RawNodeDrain>,
    pub scale: Option<RawScale>,
    pub plugin_health: Option<RawPluginHealth>,
    pub stop_job: Option<String>,
    pub plugin_controller_health: Option<RawPluginControllerHealth>,
    pub update_job: Option<RawUpdateJob>,
    pub node_disconnect: Option<String>,
    pub node_reconnect: Option<String>,
    pub promote_deployment: Option<String>,
    /// `alloc_fail: "web.app[1]"`: that allocation's task fails.
    pub alloc_fail: Option<String>,
    pub plugin_restart: Option<RawPluginRestart>,
    pub volume_detach: Option<RawVolumeDetach>,
    pub publish_failure: Option<RawPublishFailure>,
    pub dispatch: Option<RawDispatch>,
}

/// `dispatch`: `nomad job dispatch -meta k=v <job> [input]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDispatch {
    pub job: String,
    pub meta: Option<BTreeMap<String, String>>,
    /// The input; only whether there is one matters.
    pub payload: Option<String>,
}

/// `node_down: client-1`, or `node_down: {node_of: "web.app[0]"}`: the
/// node holding that allocation when the event happens.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RawNodeDown {
    Node(String),
    Of(RawNodeOf),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNodeOf {
    pub node_of: String,
}

/// `plugin_restart`: a node plugin's task restarts on one node.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPluginRestart {
    pub plugin: String,
    pub node: String,
    pub down_for: RawDuration,
}

/// `volume_detach`: `nomad volume detach <volume> <node>`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawVolumeDetach {
    pub volume: String,
    pub node: String,
}

/// `publish_failure`: the next `count` publishes of a volume at a stage fail.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPublishFailure {
    pub volume: String,
    pub stage: RawPublishStage,
    pub count: RawCount,
}

#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RawPublishStage {
    Controller,
    Node,
}

/// `update_job`: a new version of a job, optionally changing some groups.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawUpdateJob {
    pub job: String,
    pub groups: Option<BTreeMap<String, RawGroupOverride>>,
}

/// What an `update_job` may change in a group.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGroupOverride {
    pub count: Option<RawCount>,
    pub cpu: Option<u64>,
    pub memory: Option<u64>,
    pub healthy_after: Option<RawDuration>,
}

/// `node_drain: client-2` (a forced drain) or `node_drain: {node: ...}`
/// (a drain with a deadline, as `nomad node drain -enable` makes).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RawNodeDrain {
    Node(String),
    Spec(RawDrainSpec),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDrainSpec {
    pub node: String,
    pub deadline: Option<RawDuration>,
    pub ignore_system_jobs: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScale {
    pub job: String,
    pub group: String,
    pub count: RawCount,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPluginHealth {
    pub plugin: String,
    pub node: String,
    pub healthy: bool,
}

/// `plugin_controller_health`: the plugin's controller turns healthy or not.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPluginControllerHealth {
    pub plugin: String,
    pub healthy: bool,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RawExpectValue {
    Number(f64),
    Text(String),
}

/// A duration written with units. A bare number is an error that says
/// "add a unit": `30` could mean seconds or milliseconds, and guessing wrong
/// silently changes every result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawDuration(pub Millis);

impl<'de> Deserialize<'de> for RawDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct DurationVisitor;

        impl Visitor<'_> for DurationVisitor {
            type Value = RawDuration;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a duration with a unit, such as 250ms, 30s, 5m, 2h, 1d or 1h30m")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<RawDuration, E> {
                parse_duration(text).map(RawDuration).map_err(E::custom)
            }

            fn visit_u64<E: de::Error>(self, n: u64) -> Result<RawDuration, E> {
                Err(E::custom(format!(
                    "duration {n} has no unit: add a unit, e.g. \"{n}s\" or \"{n}ms\""
                )))
            }

            fn visit_i64<E: de::Error>(self, n: i64) -> Result<RawDuration, E> {
                if n < 0 {
                    return Err(E::custom(format!("duration {n} is negative")));
                }
                self.visit_u64(n.unsigned_abs())
            }

            fn visit_f64<E: de::Error>(self, n: f64) -> Result<RawDuration, E> {
                Err(E::custom(format!(
                    "duration {n} has no unit: add a unit, e.g. \"{n}s\" (fractions: use ms)"
                )))
            }
        }

        deserializer.deserialize_any(DurationVisitor)
    }
}

/// A count of things (`count`, `replicas`): a whole number, never negative.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawCount(pub u32);

impl<'de> Deserialize<'de> for RawCount {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CountVisitor;

        impl Visitor<'_> for CountVisitor {
            type Value = RawCount;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a whole number of at least 0")
            }

            fn visit_u64<E: de::Error>(self, n: u64) -> Result<RawCount, E> {
                u32::try_from(n)
                    .map(RawCount)
                    .map_err(|_| E::custom(format!("count {n} is absurdly large")))
            }

            fn visit_i64<E: de::Error>(self, n: i64) -> Result<RawCount, E> {
                if n < 0 {
                    return Err(E::custom(format!("count {n} is negative")));
                }
                self.visit_u64(n.unsigned_abs())
            }

            fn visit_f64<E: de::Error>(self, n: f64) -> Result<RawCount, E> {
                if n.is_finite() && n.fract() == 0.0 {
                    // 2.0, 1e3, or 010 (which YAML reads as a decimal).
                    return Err(E::custom(format!(
                        "count written as a decimal ({n:?}): write a plain whole number without a leading zero, point or exponent, e.g. {n}"
                    )));
                }
                Err(E::custom(format!("count {n} is not a whole number")))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<RawCount, E> {
                Err(E::custom(format!("count \"{text}\" is not a number")))
            }
        }

        deserializer.deserialize_any(CountVisitor)
    }
}

/// Written in the largest unit that divides it exactly (`30s`, `1h`, `250ms`).
impl Serialize for RawDuration {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let ms = self.0.0;
        let units = [
            (86_400_000, "d"),
            (3_600_000, "h"),
            (60_000, "m"),
            (1_000, "s"),
        ];
        let text = units
            .iter()
            .find(|(size, _)| ms > 0 && ms.is_multiple_of(*size))
            .map_or_else(
                || {
                    if ms == 0 {
                        "0s".to_string()
                    } else {
                        format!("{ms}ms")
                    }
                },
                |(size, unit)| format!("{}{unit}", ms / size),
            );
        serializer.serialize_str(&text)
    }
}

impl Serialize for RawCount {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(self.0)
    }
}
