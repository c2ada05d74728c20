//! A resolved scenario: templates stamped out, names turned into ids, every
//! reference checked. The simulation only ever sees this form.

use std::borrow::Cow;
use std::collections::BTreeMap;

pub use super::access::AttachmentMode;
use super::access::{AccessMode, ClaimMode};
use super::expect::Expectation;
use super::ids::{PluginId, VolumeId};
use super::lifecycle::{GroupLifecycle, Resources, TaskResourceRule};
use super::policy::Policy;
use super::release::DisconnectSettings;
use super::time::Millis;
pub use super::timeline::{
    DrainSpec, GroupOverride, InitialAllocation, InitialStatus, PublishStage, TimedEvent,
    TimelineAction,
};

#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub seed: u64,
    pub horizon: Millis,
    pub policies: Vec<Policy>,
    pub cluster: ClusterConfig,
    pub nodes: Vec<NodeSpec>,
    pub plugins: Vec<PluginSpec>,
    pub volumes: Vec<VolumeSpec>,
    pub jobs: Vec<JobSpec>,
    pub events: Vec<TimedEvent>,
    pub expectations: Vec<Expectation>,
    /// Volume ids by name, for `per_alloc` sources resolved at placement time.
    pub volume_by_name: BTreeMap<String, VolumeId>,
    /// Driver names; a `DriverSet` bit `i` stands for `driver_names[i]`.
    pub driver_names: Vec<String>,
    /// Allocations that exist when the run starts (a live cluster's state).
    pub initial_allocations: Vec<InitialAllocation>,
    /// The wall-clock time of simulated 0s (`start_time`).
    pub start_time: super::periodic::WallClock,
    /// Dynamic host volumes (`volumes:` entries of `type: host`).
    pub host_volumes: Vec<super::host_volume::HostVolumeSpec>,
    /// Host volume plugins (`plugins:` entries of `type: host`).
    pub host_plugins: Vec<super::host_volume::HostPluginSpec>,
}

impl Scenario {
    /// `volume_by_name` from `volumes`, after a change to them (a hunt's
    /// generator or shrinker adds and removes volumes in the model).
    pub fn rebuild_volume_names(&mut self) {
        self.volume_by_name = self
            .volumes
            .iter()
            .enumerate()
            .map(|(i, v)| (v.name.clone(), VolumeId::from_index(i)))
            .collect();
    }

    /// Each node's dynamic host volume entries from `host_volumes`, as the
    /// loader puts them (after a change to the nodes or the volumes: a
    /// copied node has none of its original's).
    pub fn place_host_volumes(&mut self) {
        for node in &mut self.nodes {
            node.host_volumes.retain(|v| v.dynamic.is_none());
        }
        for (index, volume) in self.host_volumes.iter().enumerate() {
            super::host_volume::add_dynamic(
                &mut self.nodes[volume.node.index()].host_volumes,
                &volume.name,
                super::host_volume::HostVolumeId::from_index(index),
            );
        }
    }

    /// Whether every event about a job comes after the job's submission:
    /// the loader refuses one at or before it (events at an instant run
    /// before that instant's submissions), so a scenario built in code must
    /// keep to this to be written and read back.
    pub fn events_follow_submissions(&self) -> bool {
        self.events.iter().all(|event| {
            event
                .action
                .job()
                .is_none_or(|job| event.at > self.jobs[job.index()].submit_at)
        })
    }
}

/// Timings of the server and clients. Every field has a default documented in
/// the README; a scenario may override them under `cluster:`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterConfig {
    pub scheduler_workers: u32,
    /// Nomad's scheduler configuration `scheduler_algorithm`.
    pub scheduler_algorithm: SchedulerAlgorithm,
    /// Time a worker spends on one evaluation before it submits its plan.
    pub scheduler_latency: Millis,
    /// Time from a committed placement to the client asking for its claims
    /// (fetching the allocation, pulling the image).
    pub pull_delay: Millis,
    /// Time for the client to unpublish a volume after its allocation stops.
    pub node_detach_latency: Millis,
    /// Time for the volume watcher to controller-detach the volume.
    pub controller_detach_latency: Millis,
    /// Time from the controller detach to the claim being freed.
    pub claim_free_latency: Millis,
    /// How long a Nomad 1.3+ client keeps retrying a refused claim before the
    /// allocation fails (Nomad: 24h).
    pub claim_retry_deadline: Millis,
    /// Nomad's `csi_volume_claim_gc_interval`: how often the leader's core
    /// scheduler garbage-collects claims of terminal allocations.
    pub csi_volume_claim_gc_interval: Millis,
    /// Nomad's `csi_volume_claim_gc_threshold`: a volume modified more
    /// recently than this is skipped by that pass (Nomad 1.3.4+; 1.2.6
    /// compares the volume's creation, which predates every scenario).
    pub csi_volume_claim_gc_threshold: Millis,
    /// Nomad's `node_gc_threshold`: how long a down node stays before the
    /// node GC removes it (1.2.6 frees a down node's claims only then).
    pub node_gc_threshold: Millis,
    /// Nomad's `node_gc_interval`: how often the node GC runs.
    pub node_gc_interval: Millis,
    /// Nomad's `heartbeat_grace`: how long after a client's last heartbeat
    /// the server marks the node down (or, from 1.3, disconnected).
    pub heartbeat_grace: Millis,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            scheduler_workers: 1,
            scheduler_algorithm: SchedulerAlgorithm::Binpack,
            scheduler_latency: Millis(10),
            pull_delay: Millis::from_secs(2),
            node_detach_latency: Millis::from_secs(1),
            controller_detach_latency: Millis::from_secs(2),
            claim_free_latency: Millis::ZERO,
            claim_retry_deadline: Millis::from_secs(24 * 3600),
            csi_volume_claim_gc_interval: Millis::from_secs(5 * 60),
            csi_volume_claim_gc_threshold: Millis::from_secs(5 * 60),
            node_gc_threshold: Millis::from_secs(24 * 3600),
            node_gc_interval: Millis::from_secs(5 * 60),
            heartbeat_grace: Millis::from_secs(10),
        }
    }
}

/// How nodes are scored: fill the fullest nodes first, or the emptiest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchedulerAlgorithm {
    Binpack,
    Spread,
}

#[derive(Clone, Debug)]
pub struct NodeSpec {
    pub name: String,
    pub datacenter: String,
    pub node_class: String,
    pub attributes: BTreeMap<String, String>,
    pub cpu: u64,
    pub memory: u64,
    /// MB of disk the node offers to allocations' ephemeral disks
    /// (`NodeResources.Disk.DiskMB`).
    pub disk: u64,
    pub drivers: DriverSet,
    pub topology: BTreeMap<String, String>,
    pub csi_plugins: Vec<NodePluginSpec>,
    /// Nomad's node pool (1.6+): "default" unless the scenario says.
    pub node_pool: String,
    /// The client's `reserved.reserved_ports`.
    pub reserved_ports: crate::model::ports::PortRanges,
    /// The node's host volumes (`Node.HostVolumes`), static and dynamic,
    /// sorted by name.
    pub host_volumes: Vec<super::host_volume::NodeHostVolume>,
}

/// The namespace every job and volume is in unless it says otherwise
/// (`structs.DefaultNamespace`).
pub const DEFAULT_NAMESPACE: &str = "default";

/// The node pool every node and job is in unless it says otherwise
/// (`structs.NodePoolDefault`).
pub const DEFAULT_NODE_POOL: &str = "default";
/// The built-in pool a job names to run on every node, whatever its pool
/// (`structs.NodePoolAll`); no node can be in it.
pub const ALL_NODE_POOLS: &str = "all";

impl NodeSpec {
    /// The disk a node offers when the scenario does not say: 100 GiB, a
    /// common root volume. Nomad's client fingerprints its data directory's
    /// volume (`client/fingerprint/storage.go`): the free space up to
    /// 1.11.0, the total size from 1.11.1 (#27019), less `reserved.disk`.
    pub const DEFAULT_DISK_MB: u64 = 100 * 1024;

    /// The node's attribute `key` (`${attr.KEY}`, `${meta.KEY}`): as the
    /// scenario sets it, else what Nomad's client fingerprints on every
    /// node (`client/fingerprint/`: `host.go` `unique.hostname`,
    /// `kernel.name`, `os.name`; `arch.go` `cpu.arch`; `cpu.go`
    /// `cpu.totalcompute`, `cpu.numcores`, `cpu.frequency`; `memory.go`
    /// `memory.totalbytes`; `storage.go` `unique.storage.bytestotal` and
    /// `unique.storage.bytesfree`), derived from the node's own fields. Computed
    /// when asked, so a node carries only what the scenario gives it.
    ///
    /// `drivers` names the scenario's driver bits (`Scenario::driver_names`):
    /// each driver the node has sets `driver.<name>` to "true", as every
    /// task driver's fingerprint does (`drivers/docker/fingerprint.go`,
    /// `drivers/exec/driver.go`: `Attributes["driver.docker"] =
    /// NewBoolAttribute(true)`).
    pub fn attribute(&self, key: &str, drivers: &[String]) -> Option<Cow<'_, str>> {
        if let Some(value) = self.attributes.get(key) {
            return Some(Cow::Borrowed(value));
        }
        if let Some(driver) = key.strip_prefix("driver.") {
            let bit = drivers.iter().position(|name| name == driver)?;
            return (self.drivers.0 & (1 << bit) != 0).then_some(Cow::Borrowed("true"));
        }
        let fingerprinted = match key {
            "unique.hostname" => return Some(Cow::Borrowed(&self.name)),
            "kernel.name" => "linux",
            "os.name" => "ubuntu",
            "cpu.arch" => "amd64",
            "cpu.frequency" => return Some(Cow::Owned(CPU_FREQUENCY_MHZ.to_string())),
            "cpu.totalcompute" => return Some(Cow::Owned(self.cpu.to_string())),
            "cpu.numcores" => {
                let cores = self.cpu.div_ceil(CPU_FREQUENCY_MHZ).max(1);
                return Some(Cow::Owned(cores.to_string()));
            }
            "memory.totalbytes" => {
                return Some(Cow::Owned(
                    (self.memory.saturating_mul(1 << 20)).to_string(),
                ));
            }
            // storage.go: the data directory's volume, whose size (or free
            // space, before 1.11.1) is the node's disk.
            "unique.storage.bytestotal" | "unique.storage.bytesfree" => {
                return Some(Cow::Owned((self.disk.saturating_mul(1 << 20)).to_string()));
            }
            _ => return None,
        };
        Some(Cow::Borrowed(fingerprinted))
    }

    /// The position of `plugin` in the node's `csi_plugins` (the index of
    /// its per-node state), if the node runs it.
    pub fn plugin_slot(&self, plugin: PluginId) -> Option<usize> {
        self.csi_plugins.iter().position(|p| p.plugin == plugin)
    }
}

/// The clock rate a node's fingerprinted `cpu.frequency` reports, and
/// `cpu.numcores` divides its CPU by, when the scenario does not set them:
/// a scenario gives a node's total MHz, not its cores.
pub const CPU_FREQUENCY_MHZ: u64 = 2000;

/// A set of task drivers as a bitmask over `Scenario::driver_names`, so
/// the feasibility check is one AND, not a comparison of strings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DriverSet(pub u64);

impl DriverSet {
    /// Most distinct driver names a scenario may use.
    pub const CAPACITY: usize = 64;

    pub fn with(self, index: usize) -> DriverSet {
        DriverSet(self.0 | (1 << index))
    }

    pub fn union(self, other: DriverSet) -> DriverSet {
        DriverSet(self.0 | other.0)
    }

    pub fn is_subset(self, of: DriverSet) -> bool {
        self.0 & !of.0 == 0
    }
}

#[derive(Clone, Debug)]
pub struct NodePluginSpec {
    pub plugin: PluginId,
    pub healthy: bool,
    /// 0 means unlimited.
    pub max_volumes: u32,
    /// The slot is where a plugin job's group could run the plugin: the
    /// plugin is missing here until one of its allocations runs here, and
    /// its health follows those allocations. `false`: declared by the node.
    pub from_job: bool,
}

#[derive(Clone, Debug)]
pub struct PluginSpec {
    pub name: String,
    pub enforces_access_mode: bool,
    pub publish_latency: Millis,
    /// Volumes need a healthy controller: to be schedulable, to be
    /// claimed (ControllerPublish) and to be released (ControllerUnpublish).
    pub controller_required: bool,
    /// How long a claim's ControllerPublish takes.
    pub controller_publish_latency: Millis,
    /// The controller's health at the start (`plugin_controller_health`
    /// events change it).
    pub controller_healthy: bool,
    /// Some job runs the plugin's controller (a `controller` or `monolith`
    /// task): the controller is then available only while one of those
    /// allocations runs.
    pub controller_from_jobs: bool,
    /// The probability that one ControllerPublish of a claim fails at the
    /// storage provider (`controller_publish_failure`, 0..=1; only a plugin
    /// that requires a controller makes the call).
    pub controller_publish_failure: f64,
    /// The probability that one NodePublish (the client's NodeStage /
    /// NodePublish of a mount) fails (`node_publish_failure`, 0..=1).
    pub node_publish_failure: f64,
}

/// Which part of a CSI plugin a task runs (Nomad's `csi_plugin.type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CsiPluginType {
    Node,
    Controller,
    Monolith,
}

impl CsiPluginType {
    pub fn runs_node(self) -> bool {
        matches!(self, CsiPluginType::Node | CsiPluginType::Monolith)
    }

    pub fn runs_controller(self) -> bool {
        matches!(self, CsiPluginType::Controller | CsiPluginType::Monolith)
    }
}

/// A plugin a group's task runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskPlugin {
    pub plugin: PluginId,
    pub kind: CsiPluginType,
}

/// One way a volume can be used (Nomad's `capability` block).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Capability {
    pub access_mode: AccessMode,
    pub attachment_mode: AttachmentMode,
}

#[derive(Clone, Debug)]
pub struct VolumeSpec {
    pub name: String,
    pub plugin: PluginId,
    /// The capabilities the volume supports (Nomad's RequestedCapabilities).
    /// The volume's mode is unset until the first claim sets it.
    pub capabilities: Vec<Capability>,
    /// The volume-level `access_mode` shorthand, if the file used it: the
    /// access mode a request that names none is made in.
    pub shorthand: Option<AccessMode>,
    /// The volume-level `attachment_mode` (default file-system): the
    /// attachment mode a request that names none is made in.
    pub attachment_mode: AttachmentMode,
    pub topologies: Vec<BTreeMap<String, String>>,
    /// When `nomad volume register` makes it known (`register_at`, default
    /// 0s): before, a job mounting it is infeasible ("missing CSI volume").
    pub register_at: Millis,
    /// The volume's namespace: only a job in it can mount the volume
    /// (the CSI volume checker looks a source up in the job's namespace).
    pub namespace: String,
}

impl VolumeSpec {
    /// A volume written with the `access_mode` shorthand: one capability,
    /// requested in that mode unless a request names another.
    pub fn with_shorthand(
        name: String,
        plugin: PluginId,
        access_mode: AccessMode,
        attachment_mode: AttachmentMode,
    ) -> Self {
        VolumeSpec {
            name,
            plugin,
            capabilities: vec![Capability {
                access_mode,
                attachment_mode,
            }],
            shorthand: Some(access_mode),
            attachment_mode,
            topologies: Vec::new(),
            register_at: Millis::ZERO,
            namespace: DEFAULT_NAMESPACE.to_string(),
        }
    }

    /// The access mode reports name the volume by: its shorthand, else its
    /// first capability's. (The mode in force is set by the first claim.)
    pub fn nominal_access_mode(&self) -> AccessMode {
        self.shorthand
            .unwrap_or_else(|| self.capabilities[0].access_mode)
    }

    /// Whether some capability allows writers (Nomad's WriteSchedulable on a
    /// volume whose mode no claim has set yet).
    pub fn writable(&self) -> bool {
        self.capabilities
            .iter()
            .any(|c| c.access_mode.allows_writers())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    Service,
    Batch,
    /// One allocation per eligible node, run until stopped (Nomad's system
    /// scheduler, scheduler_system.go).
    System,
    /// One allocation per eligible node, run to completion once and not
    /// re-run (the system scheduler with `sysbatch`).
    Sysbatch,
}

impl JobKind {
    /// Whether the job runs one allocation per eligible node (the system
    /// scheduler) instead of a count placed anywhere.
    pub fn is_system(self) -> bool {
        matches!(self, JobKind::System | JobKind::Sysbatch)
    }

    /// A job type whose groups may not set `max_run_duration`, as Nomad
    /// names it (`structs.go:TaskGroup.Validate`: only batch and sysbatch
    /// jobs may), or `None` for one that may.
    pub fn refuses_max_run_duration(self) -> Option<&'static str> {
        match self {
            JobKind::Service => Some("service"),
            JobKind::System => Some("system"),
            JobKind::Batch | JobKind::Sysbatch => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct JobSpec {
    pub name: String,
    pub kind: JobKind,
    pub submit_at: Millis,
    pub datacenters: Vec<String>,
    pub priority: u32,
    pub constraints: Vec<Constraint>,
    pub groups: Vec<GroupSpec>,
    /// Job-level `spread` blocks (they apply to every group).
    pub spreads: Vec<Spread>,
    /// Job-level `affinity` blocks.
    pub affinities: Vec<Affinity>,
    /// The groups of each later version (`update_job`), oldest first:
    /// version `v` (from 1) is `versions[v - 1]`; version 0 is `groups`.
    pub versions: Vec<Vec<GroupSpec>>,
    /// Versions made by a bare `update_job` (no groups): a changed task
    /// config in every group, so each is updated destructively.
    pub bare_versions: std::collections::BTreeSet<u32>,
    /// A system job's own `update` block, as Nomad keeps it on the job
    /// (`max_parallel`, `stagger`; api UpdateStrategy.Canonicalize's
    /// defaults 1 and 30s for the fields it leaves out); `None` without
    /// one, and for other job types. Nomad's agent copies only these two
    /// fields into the job, and only when `max_parallel > 0`
    /// (command/agent/job_endpoint.go ApiJobToStructJob: a 0, kept here,
    /// leaves the job's zero value); the system scheduler reads them
    /// (1.2.6 `Job.Update.Rolling`, 2.0.5 the fallback of a group without
    /// `max_parallel`, where a job without a block has api
    /// Job.Canonicalize's DefaultUpdateStrategy).
    pub job_update: Option<JobUpdate>,
    /// The job's node pool (1.6+): its nodes are the pool's, or every
    /// node for [`ALL_NODE_POOLS`].
    pub node_pool: String,
    /// The job's namespace: its volume sources are looked up in it.
    pub namespace: String,
    /// Periodic or parameterized parent, child of one, or neither.
    pub launch: super::periodic::JobLaunch,
}

/// The job-level `update` fields the system scheduler reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobUpdate {
    pub max_parallel: u32,
    pub stagger: Millis,
}

impl JobSpec {
    /// Batch and sysbatch jobs run to completion: a completed allocation is
    /// done, and the scheduler's limits are the batch ones.
    pub fn is_batch(&self) -> bool {
        matches!(self.kind, JobKind::Batch | JobKind::Sysbatch)
    }

    pub fn is_system(&self) -> bool {
        self.kind.is_system()
    }

    /// Whether placing this job needs spread or affinity scores or the
    /// distinct_hosts / distinct_property iterators: jobs without them skip
    /// that machinery entirely.
    pub fn uses_placement_preferences(&self) -> bool {
        let distinct = |list: &[Constraint]| {
            list.iter().any(|c| {
                matches!(
                    c.operator,
                    ConstraintOperator::DistinctHosts | ConstraintOperator::DistinctProperty
                )
            })
        };
        !self.spreads.is_empty()
            || !self.affinities.is_empty()
            || distinct(&self.constraints)
            || self.groups.iter().any(|g| {
                !g.spreads.is_empty() || !g.affinities.is_empty() || distinct(&g.constraints)
            })
    }

    /// The groups of version `version` (0: as registered).
    pub fn groups_of(&self, version: u32) -> &[GroupSpec] {
        match version {
            0 => &self.groups,
            v => &self.versions[v as usize - 1],
        }
    }

    /// Whether an allocation of group `group` at version `from` becomes
    /// version `to` in place: Nomad decides per allocation, comparing its
    /// own job's group with the new one (scheduler/util.go tasksUpdated,
    /// called from genericAllocUpdateFn for each allocation of each
    /// group), so a group whose tasks are as they were is updated in place
    /// whatever the update changed in other groups, and a change undone by
    /// a later version is no change. A bare `update_job` in between
    /// changes every group's task config.
    pub fn updates_in_place(&self, group: usize, from: u32, to: u32) -> bool {
        let (a, b) = (&self.groups_of(from)[group], &self.groups_of(to)[group]);
        from < to
            && self.bare_versions.range(from + 1..=to).next().is_none()
            && (a.cpu, a.memory, a.healthy_after) == (b.cpu, b.memory, b.healthy_after)
            && a.ephemeral_disk == b.ephemeral_disk
            && a.lifecycle == b.lifecycle
    }
}

/// Nomad's `update` block, merged (group fields over the job's) and with
/// Nomad's defaults (structs.go DefaultUpdateStrategy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UpdateStrategy {
    pub max_parallel: u32,
    pub canary: u32,
    pub min_healthy_time: Millis,
    pub healthy_deadline: Millis,
    pub progress_deadline: Millis,
    pub auto_revert: bool,
    pub auto_promote: bool,
    pub stagger: Millis,
}

impl Default for UpdateStrategy {
    fn default() -> Self {
        UpdateStrategy {
            max_parallel: 1,
            canary: 0,
            min_healthy_time: Millis::from_secs(10),
            healthy_deadline: Millis::from_secs(5 * 60),
            progress_deadline: Millis::from_secs(10 * 60),
            auto_revert: false,
            auto_promote: false,
            stagger: Millis::from_secs(30),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConstraintTarget {
    /// A node attribute (`rack`, or Nomad's `${attr.rack}`).
    Attribute(String),
    Datacenter,
    NodeClass,
    NodeName,
    /// No attribute (`distinct_hosts` takes none).
    Unset,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConstraintOperator {
    Equal,
    NotEqual,
    IsSet,
    IsNotSet,
    /// `<`, `<=`, `>`, `>=`: lexical in 1.2.6; as integers, else floats,
    /// else lexically in 2.0.5.
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
    /// `regexp`: the compiled expression is in `Constraint::matcher`.
    Regexp,
    /// `version` and `semver`: the parsed constraints are in the matcher.
    Version,
    Semver,
    /// `set_contains` (= `set_contains_all`) and `set_contains_any`.
    SetContainsAll,
    SetContainsAny,
    /// Checked by their own iterators after the constraint checks; the
    /// constraint checker lets every node through them.
    DistinctHosts,
    DistinctProperty,
}

#[derive(Clone, Debug)]
pub struct Constraint {
    pub target: ConstraintTarget,
    pub operator: ConstraintOperator,
    pub value: String,
    /// The constraint as the user wrote it, for Nomad-style filter reasons.
    pub text: String,
    /// What was compiled from `value` at load (regexp, version
    /// constraints, distinct_property's allowed count).
    pub matcher: Matcher,
    /// The attribute and operator as written (`${attr.rack}`, `==`).
    pub attribute: String,
    pub operator_text: String,
}

/// The part of a constraint's value that is parsed once, at load.
#[derive(Clone, Debug, Default)]
pub enum Matcher {
    #[default]
    None,
    Regexp(regex::Regex),
    Version(super::version::VersionConstraints),
    /// distinct_property: how many allocations may share a value (default 1).
    AllowedCount(u64),
}

/// A `spread` block: allocations spread over the values of `target`, by
/// `targets` percentages (the rest, if under 100, to any other value), or
/// evenly when there are no targets.
#[derive(Clone, Debug)]
pub struct Spread {
    pub target: ConstraintTarget,
    /// As written (`${node.datacenter}`): Nomad keys spreads by it.
    pub attribute: String,
    /// 1..=100.
    pub weight: u8,
    pub targets: Vec<SpreadTarget>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpreadTarget {
    pub value: String,
    /// 0..=100; the targets of a spread sum to at most 100.
    pub percent: u8,
}

/// An `affinity` block: a constraint that scores instead of filtering.
#[derive(Clone, Debug)]
pub struct Affinity {
    pub constraint: Constraint,
    /// -100..=100, never 0.
    pub weight: i8,
}

#[derive(Clone, Debug)]
pub struct GroupSpec {
    pub name: String,
    pub count: u32,
    pub volumes: Vec<VolumeRequest>,
    /// The group's `volume` blocks of `type: host`.
    pub host_volumes: Vec<super::host_volume::HostVolumeRequest>,
    /// Group-level constraints, checked after the job's.
    pub constraints: Vec<Constraint>,
    pub reschedule: ReschedulePolicy,
    /// Sums over the group's tasks: what one allocation asks of a node.
    pub cpu: u64,
    pub memory: u64,
    pub drivers: DriverSet,
    /// The allocation completes when its longest task does; `None` when any
    /// task runs until stopped.
    pub run_for: Option<Millis>,
    /// Nomad's group `max_run_duration` (batch and sysbatch jobs only, as
    /// registration allows): from 2.0.3 the client stops an allocation
    /// this long after the plan that created it was committed, and reports
    /// it complete. Read by the release ([`Release::enforces_max_run_duration`]).
    ///
    /// [`Release::enforces_max_run_duration`]: crate::model::release::Release::enforces_max_run_duration
    pub max_run_duration: Option<Millis>,
    /// CSI plugins the group's tasks run (`csi_plugin`).
    pub csi_plugins: Vec<TaskPlugin>,
    /// Time after the allocation starts running until it is healthy: the
    /// longest of its tasks' `healthy_after`, because Nomad's allocation
    /// health waits for every task's checks to pass (allochealth tracker).
    pub healthy_after: Millis,
    /// Group-level `spread` blocks (Nomad combines them with the job's).
    pub spreads: Vec<Spread>,
    /// Group-level `affinity` blocks, scored after the job's.
    pub affinities: Vec<Affinity>,
    /// The update strategy; `None` for a batch job or `max_parallel: 0`
    /// (Nomad's UpdateStrategy.IsEmpty: every update at once, no deployment).
    pub update: Option<UpdateStrategy>,
    /// What happens to the group's allocations when their client stops
    /// heartbeating (`max_client_disconnect`, `stop_after_client_disconnect`).
    pub disconnect: DisconnectPolicy,
    /// How a drain moves the group's allocations (Nomad's `migrate` block).
    pub migrate: MigrateStrategy,
    /// The group's tasks by lifecycle phase, with their stop timings; none
    /// when every task is a main task with neither `kill_timeout` nor
    /// `shutdown_delay` and the group has no `shutdown_delay` (then `cpu`
    /// and `memory` are the ask, and a stop takes no time on the client).
    pub lifecycle: Option<Box<GroupLifecycle>>,
    /// The group `network` block's ports, static and dynamic.
    pub ports: Vec<crate::model::ports::PortAsk>,
    /// The group's `ephemeral_disk`.
    pub ephemeral_disk: EphemeralDisk,
}

/// A group's `ephemeral_disk` (`structs.EphemeralDisk`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EphemeralDisk {
    /// MB each allocation reserves on its node's disk (`SizeMB`).
    pub size_mb: u64,
    /// A replacement of an allocation tries the node the allocation was on
    /// first (`Sticky`; `generic_sched.go` `findPreferredNode`).
    pub sticky: bool,
    /// The client copies the previous allocation's data to a replacement
    /// on another node (`Migrate`): client-side only, no placement effect.
    pub migrate: bool,
}

impl EphemeralDisk {
    /// What a group without the block gets (`structs.DefaultEphemeralDisk`:
    /// 300 MB, neither sticky nor migrating).
    pub const DEFAULT: EphemeralDisk = EphemeralDisk {
        size_mb: 300,
        sticky: false,
        migrate: false,
    };
}

impl Default for EphemeralDisk {
    fn default() -> Self {
        EphemeralDisk::DEFAULT
    }
}

/// What one allocation reserves on its node: the dimensions Nomad's
/// `AllocsFit` compares (`ComparableResources.Superset`: CPU, memory,
/// disk).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reserved {
    /// MHz.
    pub cpu: u64,
    /// MiB.
    pub memory: u64,
    /// MB of ephemeral disk.
    pub disk: u64,
}

impl Reserved {
    pub fn plus(self, other: Reserved) -> Reserved {
        Reserved {
            cpu: self.cpu.saturating_add(other.cpu),
            memory: self.memory.saturating_add(other.memory),
            disk: self.disk.saturating_add(other.disk),
        }
    }

    /// `self` less `other`, each dimension at least zero.
    pub fn less(self, other: Reserved) -> Reserved {
        Reserved {
            cpu: self.cpu.saturating_sub(other.cpu),
            memory: self.memory.saturating_sub(other.memory),
            disk: self.disk.saturating_sub(other.disk),
        }
    }
}

impl GroupSpec {
    /// What one allocation reserves on its node under `rule`: `cpu`/`memory`
    /// are the main tasks' total, the lifecycle tasks are added as the
    /// release's `AllocatedResources.Comparable` adds them; the ephemeral
    /// disk is the group's, shared by its tasks (`AllocatedSharedResources`).
    #[inline]
    pub fn ask(&self, rule: TaskResourceRule) -> Reserved {
        let (cpu, memory) = match self.lifecycle.as_deref() {
            None => (self.cpu, self.memory),
            Some(lifecycle) => {
                let main = Resources {
                    cpu: self.cpu,
                    memory: self.memory,
                };
                let ask = lifecycle.ask(main, rule);
                (ask.cpu, ask.memory)
            }
        };
        Reserved {
            cpu,
            memory,
            disk: self.ephemeral_disk.size_mb,
        }
    }

    /// How long a stopped allocation's client takes before its CSI hook's
    /// Postrun (`GroupLifecycle::stop_time`); 0s without lifecycle data.
    pub fn stop_time(&self, kills_sidecars_last: bool, max_kill_timeout: Option<Millis>) -> Millis {
        self.lifecycle.as_deref().map_or(Millis::ZERO, |l| {
            l.stop_time(kills_sidecars_last, max_kill_timeout)
        })
    }

    /// The same for a stop at the group's `max_run_duration`, which never
    /// starts the poststop tasks (`GroupLifecycle::kill_time`).
    pub fn kill_time(&self, kills_sidecars_last: bool, max_kill_timeout: Option<Millis>) -> Millis {
        self.lifecycle.as_deref().map_or(Millis::ZERO, |l| {
            l.kill_time(kills_sidecars_last, max_kill_timeout)
        })
    }
}

#[derive(Clone, Debug)]
pub struct VolumeRequest {
    pub alias: String,
    pub source: VolumeSource,
    pub mode: ClaimMode,
    /// The request's own `access_mode` (Nomad 1.1+); when absent, the
    /// volume's shorthand stands in (see [`VolumeRequest::modes_on`]).
    pub access_mode: Option<AccessMode>,
    /// The request's own `attachment_mode`; when absent, the volume's.
    pub attachment_mode: Option<AttachmentMode>,
}

impl VolumeRequest {
    /// The access and attachment modes this request claims `volume` in.
    /// No access mode (a volume listing capabilities, a request naming
    /// none) is what Nomad's registration refuses: "CSI volumes must have
    /// an access mode".
    pub fn modes_on(&self, volume: &VolumeSpec) -> (Option<AccessMode>, AttachmentMode) {
        (
            self.access_mode.or(volume.shorthand),
            self.attachment_mode.unwrap_or(volume.attachment_mode),
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VolumeSource {
    /// Every allocation of the group mounts this volume.
    Shared(VolumeId),
    /// `per_alloc`: allocation N mounts the volume named `<base>[N]`.
    PerAlloc { base: String },
    /// A source no volume of the scenario has: Nomad registers the job, and
    /// every placement finds the volume missing (a job file's volume made
    /// elsewhere, or a placeholder a template tool was to fill in).
    Missing { name: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DelayFunction {
    Constant,
    Exponential,
    Fibonacci,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReschedulePolicy {
    pub attempts: u32,
    pub interval: Millis,
    pub delay: Millis,
    pub delay_function: DelayFunction,
    pub max_delay: Millis,
    pub unlimited: bool,
}

impl ReschedulePolicy {
    /// Nomad's defaults for the job type.
    pub fn default_for(kind: JobKind) -> Self {
        match kind {
            JobKind::Service => ReschedulePolicy {
                attempts: 0,
                interval: Millis::ZERO,
                delay: Millis::from_secs(30),
                delay_function: DelayFunction::Exponential,
                max_delay: Millis::from_secs(3600),
                unlimited: true,
            },
            JobKind::Batch => ReschedulePolicy {
                attempts: 1,
                interval: Millis::from_secs(24 * 3600),
                delay: Millis::from_secs(5),
                delay_function: DelayFunction::Constant,
                max_delay: Millis::ZERO,
                unlimited: false,
            },
            // System and sysbatch jobs have no reschedule policy (Nomad's
            // Job.Validate refuses one): a failed allocation is replaced on
            // its node by the job's next evaluation, never rescheduled.
            JobKind::System | JobKind::Sysbatch => ReschedulePolicy {
                attempts: 0,
                interval: Millis::ZERO,
                delay: Millis::ZERO,
                delay_function: DelayFunction::Constant,
                max_delay: Millis::ZERO,
                unlimited: false,
            },
        }
    }
}

/// The group's disconnect settings as written, each spelling apart so that
/// the release decides which counts ([`DisconnectSettings`]): the group
/// fields `max_client_disconnect` / `stop_after_client_disconnect`
/// (deprecated in 1.8, ignored from 1.10) and the 1.8+ block
/// `disconnect { lost_after, stop_on_client_after }`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DisconnectPolicy {
    /// The group fields.
    pub group_fields: DisconnectWindows,
    /// The `disconnect` block.
    pub block: DisconnectWindows,
}

impl DisconnectPolicy {
    /// The windows a release reads.
    pub fn counted(&self, settings: DisconnectSettings) -> DisconnectWindows {
        match settings {
            DisconnectSettings::GroupFields => self.group_fields,
            DisconnectSettings::Block => self.block,
        }
    }
}

/// One spelling's disconnect windows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DisconnectWindows {
    /// How long an allocation on a disconnected client stays `unknown`
    /// before it is lost (`max_client_disconnect`, Nomad 1.3+, or
    /// `disconnect.lost_after`; 1.2.6 has neither).
    pub max_client_disconnect: Option<Millis>,
    /// The client stops the allocation itself after this long without a
    /// heartbeat, and the server delays its replacement as long
    /// (`stop_after_client_disconnect`, or `disconnect.stop_on_client_after`).
    pub stop_after_client_disconnect: Option<Millis>,
}

/// How a migration's health is judged (Nomad's `migrate.health_check`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HealthCheck {
    /// Tasks running and their checks passing (`healthy_after`).
    Checks,
    /// Tasks running, checks ignored.
    TaskStates,
}

/// Nomad's `migrate` block, with its defaults (structs.go
/// `DefaultMigrateStrategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MigrateStrategy {
    pub max_parallel: u32,
    pub health_check: HealthCheck,
    pub min_healthy_time: Millis,
    pub healthy_deadline: Millis,
}

impl Default for MigrateStrategy {
    fn default() -> Self {
        MigrateStrategy {
            max_parallel: 1,
            health_check: HealthCheck::Checks,
            min_healthy_time: Millis::from_secs(10),
            healthy_deadline: Millis::from_secs(5 * 60),
        }
    }
}
