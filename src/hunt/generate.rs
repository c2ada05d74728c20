//! The default generator: small, seed-report-sized scenarios built straight
//! into the resolved model (no YAML on the hot path). Every draw comes from
//! the scenario's own stream, so scenario `i` of a seed never changes with
//! the thread count.
//!
//! It aims at the places the policies differ: single-node volumes shared by
//! `count > 1` or by several jobs, `per_alloc` families, volumes listing
//! capabilities and requests naming their modes, enforcing and toy
//! plugins, `max_volumes`, reschedule policies, and timelines of scale,
//! drain, node down/up, plugin health and stop events, with one or two
//! scheduler workers, and claim GC and node GC settings small enough to act;
//! now and then system and sysbatch jobs, a system plugin job providing the
//! node plugin, and drains with a strategy (`add_workloads`).

use std::collections::BTreeMap;

use super::rng::{HuntRng, Purpose};
use crate::model::access::{AccessMode, ClaimMode};
use crate::model::ids::{JobId, NodeId, PluginId, VolumeId};
use crate::model::policy::Policy;
use crate::model::scenario::*;
use crate::model::time::Millis;

/// The only driver generated scenarios use: bit 0 of `DriverSet`.
const DRIVER: DriverSet = DriverSet(1);

/// Scenario `index` of the hunt seeded with `seed`.
pub fn generate(seed: u64, index: u64) -> Scenario {
    let mut rng = HuntRng::new(seed, index, Purpose::Generate);
    let rng = &mut rng;
    let horizon = Millis::from_secs([600, 1800, 3600][rng.weighted(&[20, 50, 30])]);
    let cluster = cluster(rng);

    let plugins: Vec<PluginSpec> = (0..rng.range(1, 2))
        .map(|i| PluginSpec {
            name: format!("plugin{i}"),
            enforces_access_mode: rng.chance(50),
            publish_latency: if rng.chance(70) {
                Millis(500)
            } else {
                Millis(rng.range(0, 30) * 100)
            },
            controller_required: false,
            controller_publish_latency: Millis::ZERO,
            controller_healthy: true,
            controller_from_jobs: false,
            controller_publish_failure: 0.0,
            node_publish_failure: 0.0,
        })
        .collect();

    let node_count = 1 + rng.weighted(&[15, 30, 35, 20]);
    let nodes: Vec<NodeSpec> = (0..node_count)
        .map(|i| node(rng, i, plugins.len()))
        .collect();

    let mut volumes = Vec::new();
    for i in 0..rng.range(1, 3) {
        let name = format!("vol{i}");
        let plugin = PluginId::from_index(rng.index(plugins.len()));
        volumes.push(if rng.chance(30) {
            capability_volume(rng, name, plugin)
        } else {
            VolumeSpec::with_shorthand(name, plugin, access_mode(rng), AttachmentMode::FileSystem)
        });
    }
    // A `per_alloc` family disk[0], disk[1], ... (possibly too short for
    // the group's count: Nomad's "missing CSI volume" case).
    let family = rng.chance(25);
    if family {
        let plugin = PluginId::from_index(rng.index(plugins.len()));
        let mode = access_mode(rng);
        for k in 0..rng.range(1, 3) {
            volumes.push(VolumeSpec::with_shorthand(
                format!("disk[{k}]"),
                plugin,
                mode,
                AttachmentMode::FileSystem,
            ));
        }
    }
    let shared = volumes.iter().filter(|v| !v.name.contains('[')).count();

    let job_count = 1 + rng.weighted(&[50, 35, 15]);
    let jobs: Vec<JobSpec> = (0..job_count)
        .map(|j| job(rng, j, &volumes, shared, family))
        .collect();

    let mut events: Vec<TimedEvent> = (0..rng.weighted(&[25, 40, 20, 15]))
        .map(|_| event(rng, horizon, &nodes, &jobs))
        .collect();
    // An event about a job comes after its submission, as a file must say.
    for event in &mut events {
        if let Some(job) = event.action.job() {
            event.at = event
                .at
                .max(jobs[job.index()].submit_at + Millis::from_secs(1));
        }
    }
    // Stable: equal times keep their draw order, as a file would.
    events.sort_by_key(|e| e.at);

    let mut scenario = Scenario {
        name: format!("hunt-{seed}-{index}"),
        description: String::new(),
        seed: rng.below(1000),
        horizon,
        policies: Policy::ALL.to_vec(),
        cluster,
        nodes,
        plugins,
        volumes,
        jobs,
        events,
        expectations: Vec::new(),
        initial_allocations: Vec::new(),
        volume_by_name: BTreeMap::new(),
        driver_names: vec!["docker".to_string()],
        start_time: Default::default(),
        host_volumes: Vec::new(),
        host_plugins: Vec::new(),
    };
    add_workloads(&mut scenario, seed, index);
    scenario.rebuild_volume_names();
    scenario
}

/// From their own stream, so the scenarios they leave alone are unchanged:
/// in about one scenario of four the first plugin's node plugin comes from
/// a system plugin job (every node gets the job's slot instead of its own),
/// one job of eight becomes a system or sysbatch job (count 1; scales of
/// it to 0 or 1), and in about one of three a drain with a strategy (a
/// deadline or none, system jobs ignored or not) hits a node, so drains of
/// nodes running plugin allocations and system jobs are searched too.
fn add_workloads(scenario: &mut Scenario, seed: u64, index: u64) {
    let mut rng = HuntRng::new(seed, index, Purpose::Workloads);
    let rng = &mut rng;
    let plugin_job = rng.chance(25);
    let plugin = PluginId::from_index(0);
    if plugin_job {
        for node in &mut scenario.nodes {
            node.csi_plugins.retain(|p| p.plugin != plugin);
            node.csi_plugins.push(NodePluginSpec {
                plugin,
                healthy: false,
                max_volumes: 0,
                from_job: true,
            });
        }
    }
    for job in &mut scenario.jobs {
        if rng.chance(12) {
            job.kind = if rng.chance(75) {
                JobKind::System
            } else {
                JobKind::Sysbatch
            };
            for group in &mut job.groups {
                group.count = 1;
                group.reschedule = ReschedulePolicy::default_for(job.kind);
                // As the loader gives every group of a job that is not batch.
                group.update = Some(Default::default());
                if job.kind == JobKind::Sysbatch && group.run_for.is_none() {
                    group.run_for = Some(Millis::from_secs(rng.range(1, 10) * 60));
                }
            }
        }
    }
    for event in &mut scenario.events {
        if let TimelineAction::Scale { job, count, .. } = &mut event.action
            && scenario.jobs[job.index()].is_system()
        {
            *count = (*count).min(1);
        }
    }
    if plugin_job {
        let job = plugin_job_spec(rng, plugin);
        // As the loader marks a plugin whose controller a job runs.
        scenario.plugins[plugin.index()].controller_from_jobs |= job.groups[0]
            .csi_plugins
            .iter()
            .any(|t| t.kind.runs_controller());
        scenario.jobs.push(job);
    }
    if rng.chance(35) {
        let node = NodeId::from_index(rng.index(scenario.nodes.len()));
        let deadline = [None, Some(30), Some(120), Some(900)][rng.index(4)];
        let at = Millis::from_secs(rng.range(10, scenario.horizon.0 / 2000));
        scenario.events.push(TimedEvent {
            at,
            action: TimelineAction::NodeDrainSpec(
                node,
                DrainSpec {
                    deadline: deadline.map(Millis::from_secs),
                    ignore_system_jobs: rng.chance(30),
                },
            ),
        });
        // Stable: the drain goes after events at its instant, as a file's.
        scenario.events.sort_by_key(|e| e.at);
    }
}

/// A system job whose task runs `plugin`'s node plugin on every node.
fn plugin_job_spec(rng: &mut HuntRng, plugin: PluginId) -> JobSpec {
    let kind = JobKind::System;
    JobSpec {
        name: "plugin-nodes".to_string(),
        kind,
        submit_at: Millis::ZERO,
        datacenters: vec!["dc1".to_string()],
        priority: 50,
        constraints: Vec::new(),
        groups: vec![GroupSpec {
            name: "plugin".to_string(),
            count: 1,
            host_volumes: Vec::new(),
            volumes: Vec::new(),
            constraints: Vec::new(),
            reschedule: ReschedulePolicy::default_for(kind),
            cpu: 100,
            memory: 64,
            ephemeral_disk: EphemeralDisk::DEFAULT,
            drivers: DRIVER,
            run_for: None,
            max_run_duration: None,
            csi_plugins: vec![TaskPlugin {
                plugin,
                kind: if rng.chance(50) {
                    CsiPluginType::Node
                } else {
                    CsiPluginType::Monolith
                },
            }],
            healthy_after: Millis::ZERO,
            spreads: Vec::new(),
            affinities: Vec::new(),
            update: Some(Default::default()),
            disconnect: Default::default(),
            migrate: Default::default(),
            lifecycle: None,
            ports: Vec::new(),
        }],
        spreads: Vec::new(),
        affinities: Vec::new(),
        versions: Vec::new(),
        bare_versions: Default::default(),
        job_update: None,
        node_pool: DEFAULT_NODE_POOL.to_string(),
        namespace: DEFAULT_NAMESPACE.to_string(),
        launch: Default::default(),
    }
}

fn cluster(rng: &mut HuntRng) -> ClusterConfig {
    let mut cluster = ClusterConfig {
        scheduler_workers: if rng.chance(30) { 2 } else { 1 },
        ..ClusterConfig::default()
    };
    if rng.chance(30) {
        cluster.scheduler_latency = Millis(rng.range(0, 10) * 10);
        cluster.pull_delay = Millis(rng.range(0, 50) * 100);
        cluster.node_detach_latency = Millis(rng.range(0, 30) * 100);
        cluster.controller_detach_latency = Millis(rng.range(0, 50) * 100);
        cluster.claim_free_latency = Millis(rng.range(0, 10) * 100);
    }
    // Nomad's GC settings, small enough to act within a horizon: the claim
    // GC frees a down node's claims (2.0.5), the node GC lets 1.2.6 free
    // them at all (its default, 24h, is past every generated horizon).
    if rng.chance(50) {
        let minutes = |rng: &mut HuntRng, choices: &[u64]| {
            Millis::from_secs(60 * choices[rng.index(choices.len())])
        };
        cluster.csi_volume_claim_gc_interval = minutes(rng, &[1, 2, 5]);
        cluster.csi_volume_claim_gc_threshold = minutes(rng, &[0, 1, 5]);
        cluster.node_gc_threshold = minutes(rng, &[2, 5, 10, 30]);
        cluster.node_gc_interval = minutes(rng, &[1, 5]);
    }
    cluster
}

/// A volume that lists two or three capabilities (Nomad's `capability`
/// blocks), now and then one of them block-device. No shorthand: every
/// request must name its access mode (Nomad >= 1.1).
fn capability_volume(rng: &mut HuntRng, name: String, plugin: PluginId) -> VolumeSpec {
    let mut capabilities: Vec<Capability> = Vec::new();
    for _ in 0..rng.range(2, 3) {
        let capability = Capability {
            access_mode: access_mode(rng),
            attachment_mode: if rng.chance(10) {
                AttachmentMode::BlockDevice
            } else {
                AttachmentMode::FileSystem
            },
        };
        if !capabilities.contains(&capability) {
            capabilities.push(capability);
        }
    }
    VolumeSpec {
        name,
        plugin,
        capabilities,
        shorthand: None,
        attachment_mode: AttachmentMode::FileSystem,
        topologies: Vec::new(),
        register_at: crate::model::time::Millis::ZERO,
        namespace: DEFAULT_NAMESPACE.to_string(),
    }
}

/// A request's own `access_mode` and `attachment_mode`. Mostly valid: on a
/// volume listing capabilities, one of them (a request without an access
/// mode is refused at registration by every pinned release, "CSI volumes
/// must have an access mode", 1 in 20); on a shorthand volume, usually
/// none (the shorthand stands in), sometimes the shorthand's or another.
fn request_modes(
    rng: &mut HuntRng,
    volume: &VolumeSpec,
) -> (Option<AccessMode>, Option<AttachmentMode>) {
    if volume.shorthand.is_some() {
        return match rng.weighted(&[80, 15, 5]) {
            0 => (None, None),
            1 => (volume.shorthand, None),
            _ => (Some(access_mode(rng)), None),
        };
    }
    if rng.chance(5) {
        return (None, None);
    }
    let capability = volume.capabilities[rng.index(volume.capabilities.len())];
    let attachment = match capability.attachment_mode {
        AttachmentMode::BlockDevice => Some(AttachmentMode::BlockDevice),
        AttachmentMode::FileSystem => rng.chance(20).then_some(AttachmentMode::FileSystem),
    };
    (Some(capability.access_mode), attachment)
}

fn node(rng: &mut HuntRng, i: usize, plugins: usize) -> NodeSpec {
    let mut csi_plugins = Vec::new();
    for p in 0..plugins {
        if rng.chance(85) {
            csi_plugins.push(NodePluginSpec {
                plugin: PluginId::from_index(p),
                healthy: rng.chance(95),
                max_volumes: if rng.chance(85) {
                    0
                } else {
                    rng.range(1, 2) as u32
                },
                from_job: false,
            });
        }
    }
    NodeSpec {
        name: format!("client-{i}"),
        datacenter: "dc1".to_string(),
        node_class: String::new(),
        attributes: BTreeMap::new(),
        // A small node now and then, so resources bind too.
        cpu: if rng.chance(20) { 1000 } else { 4000 },
        memory: 8192,
        disk: NodeSpec::DEFAULT_DISK_MB,
        drivers: DRIVER,
        topology: BTreeMap::new(),
        csi_plugins,
        node_pool: DEFAULT_NODE_POOL.to_string(),
        reserved_ports: Default::default(),
        host_volumes: Vec::new(),
    }
}

/// Single-node and single-writer modes weigh most: they are where the
/// policies disagree.
fn access_mode(rng: &mut HuntRng) -> AccessMode {
    AccessMode::ALL[rng.weighted(&[25, 30, 10, 25, 10])]
}

fn job(
    rng: &mut HuntRng,
    j: usize,
    volumes: &[VolumeSpec],
    shared: usize,
    family: bool,
) -> JobSpec {
    let kind = if rng.chance(15) {
        JobKind::Batch
    } else {
        JobKind::Service
    };
    let submit_at = if rng.chance(70) {
        Millis::ZERO
    } else {
        Millis::from_secs(rng.range(1, 120))
    };
    let groups = (0..1 + rng.weighted(&[85, 15]))
        .map(|g| group(rng, g, kind, volumes, shared, family))
        .collect();
    JobSpec {
        name: format!("job{j}"),
        kind,
        submit_at,
        datacenters: vec!["dc1".to_string()],
        priority: 50,
        constraints: Vec::new(),
        groups,
        spreads: Vec::new(),
        affinities: Vec::new(),
        versions: Vec::new(),
        bare_versions: Default::default(),
        job_update: None,
        node_pool: DEFAULT_NODE_POOL.to_string(),
        namespace: DEFAULT_NAMESPACE.to_string(),
        launch: Default::default(),
    }
}

fn group(
    rng: &mut HuntRng,
    g: usize,
    kind: JobKind,
    volumes: &[VolumeSpec],
    shared: usize,
    family: bool,
) -> GroupSpec {
    let count = 1 + rng.weighted(&[45, 35, 20]) as u32;
    let requests = rng.weighted(&[10, 75, 15]);
    let mut requested = Vec::new();
    for r in 0..requests {
        let (source, volume) = if family && rng.chance(30) {
            (
                VolumeSource::PerAlloc {
                    base: "disk".to_string(),
                },
                &volumes[shared],
            )
        } else {
            let v = rng.index(shared);
            (VolumeSource::Shared(VolumeId::from_index(v)), &volumes[v])
        };
        let (access_mode, attachment_mode) = request_modes(rng, volume);
        let mode = access_mode.unwrap_or_else(|| volume.nominal_access_mode());
        // Mostly legal requests: read-only on reader-only volumes.
        let read_only = if mode.allows_writers() {
            rng.chance(40)
        } else {
            rng.chance(80)
        };
        requested.push(VolumeRequest {
            alias: format!("v{r}"),
            source,
            mode: ClaimMode::from_read_only(read_only),
            access_mode,
            attachment_mode,
        });
    }
    let mut reschedule = ReschedulePolicy::default_for(kind);
    if rng.chance(30) {
        reschedule = ReschedulePolicy {
            attempts: rng.range(0, 3) as u32,
            interval: Millis::from_secs([300, 3600][rng.index(2)]),
            delay: Millis::from_secs(rng.range(1, 12) * 5),
            delay_function: [
                DelayFunction::Constant,
                DelayFunction::Exponential,
                DelayFunction::Fibonacci,
            ][rng.index(3)],
            max_delay: Millis::from_secs(rng.range(2, 60) * 60),
            unlimited: rng.chance(50),
        };
    }
    let run_for = if kind == JobKind::Batch || rng.chance(10) {
        Some(Millis::from_secs(rng.range(1, 10) * 60))
    } else {
        None
    };
    GroupSpec {
        name: format!("g{g}"),
        count,
        volumes: requested,
        host_volumes: Vec::new(),
        constraints: Vec::new(),
        reschedule,
        cpu: rng.range(1, 10) * 100,
        memory: rng.range(2, 16) * 64,
        ephemeral_disk: EphemeralDisk::DEFAULT,
        drivers: DRIVER,
        run_for,
        max_run_duration: None,
        csi_plugins: Vec::new(),
        healthy_after: Millis::ZERO,
        spreads: Vec::new(),
        affinities: Vec::new(),
        // As the loader gives a service group without an `update` block.
        update: (kind == JobKind::Service).then(Default::default),
        disconnect: Default::default(),
        migrate: Default::default(),
        lifecycle: None,
        ports: Vec::new(),
    }
}

fn event(rng: &mut HuntRng, horizon: Millis, nodes: &[NodeSpec], jobs: &[JobSpec]) -> TimedEvent {
    let at = Millis::from_secs(rng.range(10, horizon.0 / 2000));
    let node = NodeId::from_index(rng.index(nodes.len()));
    let job_index = rng.index(jobs.len());
    let job = JobId::from_index(job_index);
    let action = match rng.weighted(&[40, 15, 15, 10, 10, 10]) {
        0 => {
            let group = rng.index(jobs[job_index].groups.len());
            // Up more often than down: scaling up is the bypass.
            let count = [0, 1, 2, 3, 4][rng.weighted(&[5, 20, 40, 25, 10])];
            TimelineAction::Scale { job, group, count }
        }
        1 => TimelineAction::NodeDrain(node),
        2 => TimelineAction::NodeDown(node),
        3 => TimelineAction::NodeUp(node),
        4 => match nodes[node.index()].csi_plugins.first() {
            Some(plugin) => TimelineAction::PluginHealth {
                plugin: plugin.plugin,
                node,
                healthy: rng.chance(50),
            },
            None => TimelineAction::NodeDown(node),
        },
        _ => TimelineAction::StopJob(job),
    };
    TimedEvent { at, action }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// System and sysbatch jobs, a system plugin job providing the node
    /// plugin (every node's slot for it then comes from the job), and
    /// drains with a strategy are generated, within the usual bounds.
    #[test]
    fn generates_system_jobs_plugin_jobs_and_drains() {
        let scenarios: Vec<Scenario> = (0..300).map(|i| generate(1, i)).collect();
        let jobs = || scenarios.iter().flat_map(|s| s.jobs.iter());
        assert!(jobs().any(|j| j.kind == JobKind::System && j.groups[0].csi_plugins.is_empty()));
        assert!(jobs().any(|j| j.kind == JobKind::Sysbatch));
        let with_plugin_job = scenarios
            .iter()
            .filter(|s| s.jobs.iter().any(|j| !j.groups[0].csi_plugins.is_empty()))
            .count();
        assert!(with_plugin_job > 30, "{with_plugin_job}");
        for s in &scenarios {
            let runs_plugin = s.jobs.iter().any(|j| !j.groups[0].csi_plugins.is_empty());
            let job_slots = s
                .nodes
                .iter()
                .filter(|n| n.csi_plugins.iter().any(|p| p.from_job))
                .count();
            assert_eq!(job_slots, if runs_plugin { s.nodes.len() } else { 0 });
            assert!(s.jobs.len() <= 4 && s.nodes.len() <= 4);
        }
        assert!(scenarios.iter().any(|s| {
            s.events.iter().any(|e| {
                matches!(e.action, TimelineAction::NodeDrainSpec(_, spec) if spec.deadline.is_some())
            })
        }));
    }

    /// The generator makes the inputs the pinned releases added: volumes
    /// listing capabilities, requests naming their modes (a few without,
    /// which registration refuses), and GC settings short enough to act.
    #[test]
    fn generates_capabilities_request_modes_and_short_gc_settings() {
        let scenarios: Vec<Scenario> = (0..300).map(|i| generate(1, i)).collect();
        let volumes = || scenarios.iter().flat_map(|s| s.volumes.iter());
        let requests = || {
            scenarios
                .iter()
                .flat_map(|s| s.jobs.iter().flat_map(|j| j.groups.iter()))
                .flat_map(|g| g.volumes.iter())
        };
        assert!(volumes().any(|v| v.shorthand.is_none() && v.capabilities.len() >= 2));
        assert!(volumes().any(|v| v.shorthand.is_some()));
        assert!(requests().any(|r| r.access_mode.is_some()));
        assert!(requests().any(|r| r.attachment_mode == Some(AttachmentMode::BlockDevice)));
        let defaults = ClusterConfig::default();
        assert!(scenarios.iter().any(|s| {
            s.cluster.node_gc_threshold < s.horizon
                && s.cluster.csi_volume_claim_gc_interval < defaults.csi_volume_claim_gc_interval
        }));
        // Mostly valid: most requests on a capability volume name a mode.
        let on_capabilities: Vec<_> = scenarios
            .iter()
            .flat_map(|s| {
                s.jobs
                    .iter()
                    .flat_map(|j| j.groups.iter())
                    .flat_map(|g| g.volumes.iter())
                    .filter_map(move |r| match r.source {
                        VolumeSource::Shared(v) => Some((r, &s.volumes[v.index()])),
                        VolumeSource::PerAlloc { .. } | VolumeSource::Missing { .. } => None,
                    })
            })
            .filter(|(_, v)| v.shorthand.is_none())
            .collect();
        let named = on_capabilities
            .iter()
            .filter(|(r, _)| r.access_mode.is_some())
            .count();
        assert!(
            named * 10 > on_capabilities.len() * 8,
            "{named} of {}",
            on_capabilities.len()
        );
    }
}
