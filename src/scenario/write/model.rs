//! From a resolved [`Scenario`] back to plansim's YAML format: the inverse
//! of `load`. Used by `plansim hunt` to write the scenarios it finds, so the
//! output must load back into the same model (a round-trip test checks it).
//!
//! Only what differs from the loader's defaults is written, so a shrunk
//! scenario reads like one written by hand. Every string that is not a
//! plain word is double-quoted with JSON escapes, a subset of YAML's
//! double-quoted style, so a name can never turn into YAML syntax.

use std::fmt::Write as _;

use crate::model::access::ClaimMode;
use crate::model::policy::Policy;
use crate::model::scenario::*;
use crate::model::time::Millis;

use super::scalar::string_map;
use super::scalar::{duration, text};
use super::timeline::{write_events, write_expect, write_initial_allocations};

/// The loader's defaults, repeated here so the writer can leave them out.
/// The round-trip test fails if the two ever disagree.
const DEFAULT_HORIZON: Millis = Millis::from_secs(3600);
const DEFAULT_PUBLISH_LATENCY: Millis = Millis(500);
const DEFAULT_NODE_CPU: u64 = 4000;
const DEFAULT_NODE_MEMORY: u64 = 8192;
const DEFAULT_PRIORITY: u32 = 50;
const DEFAULT_DATACENTER: &str = "dc1";

/// The scenario as YAML text, preceded by `header` (each line becomes a
/// `# ` comment).
pub fn to_yaml(scenario: &Scenario, header: &str) -> String {
    let mut out = String::new();
    for line in header.lines() {
        if line.is_empty() {
            out.push_str("#\n");
        } else {
            let _ = writeln!(out, "# {line}");
        }
    }
    let _ = writeln!(out, "name: {}", text(&scenario.name));
    if !scenario.description.is_empty() {
        let _ = writeln!(out, "description: {}", text(&scenario.description));
    }
    let _ = writeln!(out, "seed: {}", scenario.seed);
    if scenario.horizon != DEFAULT_HORIZON {
        let _ = writeln!(out, "horizon: {}", duration(scenario.horizon));
    }
    if scenario.policies != Policy::ALL {
        let names: Vec<&str> = scenario.policies.iter().map(|p| p.name()).collect();
        let _ = writeln!(out, "schedulers: [{}]", names.join(", "));
    }
    if scenario.start_time != crate::model::periodic::WallClock::default() {
        let _ = writeln!(out, "start_time: \"{}\"", scenario.start_time.to_rfc3339());
    }
    write_cluster(&mut out, &scenario.cluster);
    write_nodes(&mut out, scenario);
    write_plugins(&mut out, scenario);
    write_volumes(&mut out, scenario);
    write_jobs(&mut out, scenario);
    write_initial_allocations(&mut out, scenario);
    write_events(&mut out, scenario);
    write_expect(&mut out, scenario);
    out
}

fn write_cluster(out: &mut String, cluster: &ClusterConfig) {
    let defaults = ClusterConfig::default();
    let mut fields = Vec::new();
    if cluster.scheduler_workers != defaults.scheduler_workers {
        fields.push(format!("scheduler_workers: {}", cluster.scheduler_workers));
    }
    if cluster.scheduler_algorithm != defaults.scheduler_algorithm {
        let name = match cluster.scheduler_algorithm {
            SchedulerAlgorithm::Binpack => "binpack",
            SchedulerAlgorithm::Spread => "spread",
        };
        fields.push(format!("scheduler_algorithm: {name}"));
    }
    let timings = [
        (
            "scheduler_latency",
            cluster.scheduler_latency,
            defaults.scheduler_latency,
        ),
        ("pull_delay", cluster.pull_delay, defaults.pull_delay),
        (
            "node_detach_latency",
            cluster.node_detach_latency,
            defaults.node_detach_latency,
        ),
        (
            "controller_detach_latency",
            cluster.controller_detach_latency,
            defaults.controller_detach_latency,
        ),
        (
            "claim_free_latency",
            cluster.claim_free_latency,
            defaults.claim_free_latency,
        ),
        (
            "claim_retry_deadline",
            cluster.claim_retry_deadline,
            defaults.claim_retry_deadline,
        ),
        (
            "csi_volume_claim_gc_interval",
            cluster.csi_volume_claim_gc_interval,
            defaults.csi_volume_claim_gc_interval,
        ),
        (
            "csi_volume_claim_gc_threshold",
            cluster.csi_volume_claim_gc_threshold,
            defaults.csi_volume_claim_gc_threshold,
        ),
        (
            "node_gc_threshold",
            cluster.node_gc_threshold,
            defaults.node_gc_threshold,
        ),
        (
            "node_gc_interval",
            cluster.node_gc_interval,
            defaults.node_gc_interval,
        ),
        (
            "heartbeat_grace",
            cluster.heartbeat_grace,
            defaults.heartbeat_grace,
        ),
    ];
    for (name, value, default) in timings {
        if value != default {
            fields.push(format!("{name}: {}", duration(value)));
        }
    }
    if !fields.is_empty() {
        out.push_str("\ncluster:\n");
        for field in fields {
            let _ = writeln!(out, "  {field}");
        }
    }
}

fn drivers(scenario: &Scenario, set: DriverSet) -> Vec<&str> {
    // Index order: the loader numbers drivers by first appearance, and
    // writing each set in index order reproduces that numbering.
    scenario
        .driver_names
        .iter()
        .enumerate()
        .filter(|&(i, _)| set.0 & (1 << i) != 0)
        .map(|(_, name)| name.as_str())
        .collect()
}

fn write_nodes(out: &mut String, scenario: &Scenario) {
    if scenario.nodes.is_empty() {
        return;
    }
    out.push_str("\nnodes:\n");
    for node in &scenario.nodes {
        let _ = writeln!(out, "  - id: {}", text(&node.name));
        if node.datacenter != DEFAULT_DATACENTER {
            let _ = writeln!(out, "    datacenter: {}", text(&node.datacenter));
        }
        if !node.node_class.is_empty() {
            let _ = writeln!(out, "    node_class: {}", text(&node.node_class));
        }
        if node.node_pool != DEFAULT_NODE_POOL {
            let _ = writeln!(out, "    node_pool: {}", text(&node.node_pool));
        }
        if !node.attributes.is_empty() {
            let _ = writeln!(out, "    attributes: {}", string_map(&node.attributes));
        }
        if node.cpu != DEFAULT_NODE_CPU {
            let _ = writeln!(out, "    cpu: {}", node.cpu);
        }
        if node.memory != DEFAULT_NODE_MEMORY {
            let _ = writeln!(out, "    memory: {}", node.memory);
        }
        if node.disk != NodeSpec::DEFAULT_DISK_MB {
            let _ = writeln!(out, "    disk: {}", node.disk);
        }
        let names: Vec<String> = drivers(scenario, node.drivers)
            .into_iter()
            .map(text)
            .collect();
        let _ = writeln!(out, "    drivers: [{}]", names.join(", "));
        if !node.topology.is_empty() {
            let _ = writeln!(out, "    topology: {}", string_map(&node.topology));
        }
        super::network::write_reserved_ports(out, &node.reserved_ports);
        super::host_volumes::write_node_host_volumes(out, &node.host_volumes);
        // Slots a plugin job's allocations fill come back from its tasks.
        let declared: Vec<_> = node.csi_plugins.iter().filter(|p| !p.from_job).collect();
        if !declared.is_empty() {
            out.push_str("    csi_plugins:\n");
            for plugin in declared {
                let mut line = format!(
                    "      - {{id: {}",
                    text(&scenario.plugins[plugin.plugin.index()].name)
                );
                if !plugin.healthy {
                    line.push_str(", healthy: false");
                }
                if plugin.max_volumes != 0 {
                    let _ = write!(line, ", max_volumes: {}", plugin.max_volumes);
                }
                line.push('}');
                let _ = writeln!(out, "{line}");
            }
        }
    }
}

fn write_plugins(out: &mut String, scenario: &Scenario) {
    if scenario.plugins.is_empty() && scenario.host_plugins.is_empty() {
        return;
    }
    out.push_str("\nplugins:\n");
    super::host_volumes::write_host_plugins(out, scenario);
    for plugin in &scenario.plugins {
        let mut line = format!(
            "  - {{id: {}, enforces_access_mode: {}",
            text(&plugin.name),
            plugin.enforces_access_mode
        );
        if plugin.publish_latency != DEFAULT_PUBLISH_LATENCY {
            let _ = write!(
                line,
                ", publish_latency: {}",
                duration(plugin.publish_latency)
            );
        }
        if plugin.controller_required {
            line.push_str(", controller_required: true");
        }
        if plugin.controller_publish_latency != Millis::ZERO {
            let _ = write!(
                line,
                ", controller_publish_latency: {}",
                duration(plugin.controller_publish_latency)
            );
        }
        if !plugin.controller_healthy {
            line.push_str(", controller_healthy: false");
        }
        if plugin.controller_publish_failure != 0.0 {
            let p = plugin.controller_publish_failure;
            let _ = write!(line, ", controller_publish_failure: {p:?}");
        }
        if plugin.node_publish_failure != 0.0 {
            let p = plugin.node_publish_failure;
            let _ = write!(line, ", node_publish_failure: {p:?}");
        }
        line.push('}');
        let _ = writeln!(out, "{line}");
    }
}

fn write_volumes(out: &mut String, scenario: &Scenario) {
    if scenario.volumes.is_empty() && scenario.host_volumes.is_empty() {
        return;
    }
    out.push_str("\nvolumes:\n");
    super::host_volumes::write_host_volumes(out, scenario);
    for volume in &scenario.volumes {
        let mut line = format!(
            "  - {{id: {}, plugin_id: {}",
            text(&volume.name),
            text(&scenario.plugins[volume.plugin.index()].name),
        );
        match volume.shorthand {
            Some(access_mode) => {
                let _ = write!(line, ", access_mode: {}", access_mode.name());
                if volume.attachment_mode == AttachmentMode::BlockDevice {
                    line.push_str(", attachment_mode: block-device");
                }
            }
            None => {
                let capabilities: Vec<String> = volume
                    .capabilities
                    .iter()
                    .map(|c| {
                        format!(
                            "{{access_mode: {}, attachment_mode: {}}}",
                            c.access_mode.name(),
                            c.attachment_mode.name()
                        )
                    })
                    .collect();
                let _ = write!(line, ", capabilities: [{}]", capabilities.join(", "));
            }
        }
        if !volume.topologies.is_empty() {
            let maps: Vec<String> = volume.topologies.iter().map(string_map).collect();
            let _ = write!(line, ", topologies: [{}]", maps.join(", "));
        }
        if volume.namespace != DEFAULT_NAMESPACE {
            let _ = write!(line, ", namespace: {}", text(&volume.namespace));
        }
        if volume.register_at > Millis::ZERO {
            let _ = write!(line, ", register_at: {}", duration(volume.register_at));
        }
        line.push('}');
        let _ = writeln!(out, "{line}");
    }
}

/// A constraint as the user wrote it (the attribute and operator
/// spellings, `${attr.rack}`, `is`, that the model folds).
fn constraint(c: &Constraint) -> String {
    let mut line = "{".to_string();
    if !c.attribute.is_empty() {
        let _ = write!(line, "attribute: {}, ", text(&c.attribute));
    }
    let _ = write!(
        line,
        "operator: {}",
        serde_json::to_string(&c.operator_text).expect("a string serializes")
    );
    let valueless = matches!(
        c.operator,
        ConstraintOperator::IsSet
            | ConstraintOperator::IsNotSet
            | ConstraintOperator::DistinctHosts
            | ConstraintOperator::DistinctProperty
    );
    if !valueless || !c.value.is_empty() {
        let _ = write!(line, ", value: {}", text(&c.value));
    }
    line
}

fn write_constraints(out: &mut String, indent: &str, constraints: &[Constraint]) {
    if constraints.is_empty() {
        return;
    }
    let _ = writeln!(out, "{indent}constraints:");
    for c in constraints {
        let _ = writeln!(out, "{indent}  - {}}}", constraint(c));
    }
}

/// `spread` and `affinity` blocks, as the loader reads them back.
fn write_preferences(out: &mut String, indent: &str, spreads: &[Spread], affinities: &[Affinity]) {
    if !spreads.is_empty() {
        let _ = writeln!(out, "{indent}spread:");
        for s in spreads {
            let mut line = format!("{{attribute: {}, weight: {}", text(&s.attribute), s.weight);
            if !s.targets.is_empty() {
                let targets: Vec<String> = s
                    .targets
                    .iter()
                    .map(|t| format!("{{value: {}, percent: {}}}", text(&t.value), t.percent))
                    .collect();
                let _ = write!(line, ", targets: [{}]", targets.join(", "));
            }
            let _ = writeln!(out, "{indent}  - {line}}}");
        }
    }
    if !affinities.is_empty() {
        let _ = writeln!(out, "{indent}affinity:");
        for a in affinities {
            let _ = writeln!(
                out,
                "{indent}  - {}, weight: {}}}",
                constraint(&a.constraint),
                a.weight
            );
        }
    }
}

fn write_jobs(out: &mut String, scenario: &Scenario) {
    if scenario.jobs.is_empty() {
        return;
    }
    out.push_str("\njobs:\n");
    // A periodic or dispatched child is stamped out again from its parent.
    for job in scenario.jobs.iter().filter(|j| j.launch.parent().is_none()) {
        let _ = writeln!(out, "  - id: {}", text(&job.name));
        match job.kind {
            JobKind::Service => {}
            JobKind::Batch => out.push_str("    type: batch\n"),
            JobKind::System => out.push_str("    type: system\n"),
            JobKind::Sysbatch => out.push_str("    type: sysbatch\n"),
        }
        if job.submit_at != Millis::ZERO {
            let _ = writeln!(out, "    submit_at: {}", duration(job.submit_at));
        }
        if job.datacenters != [DEFAULT_DATACENTER] {
            let names: Vec<String> = job.datacenters.iter().map(|d| text(d)).collect();
            let _ = writeln!(out, "    datacenters: [{}]", names.join(", "));
        }
        if job.priority != DEFAULT_PRIORITY {
            let _ = writeln!(out, "    priority: {}", job.priority);
        }
        if job.node_pool != DEFAULT_NODE_POOL {
            let _ = writeln!(out, "    node_pool: {}", text(&job.node_pool));
        }
        if job.namespace != DEFAULT_NAMESPACE {
            let _ = writeln!(out, "    namespace: {}", text(&job.namespace));
        }
        if let Some(u) = job.job_update {
            // The groups' strategies are written whole: this block only
            // gives the job's own fields back.
            let _ = writeln!(
                out,
                "    update: {{max_parallel: {}, stagger: {}}}",
                u.max_parallel,
                duration(u.stagger)
            );
        }
        super::periodic::write_launch(out, &job.launch);
        write_constraints(out, "    ", &job.constraints);
        write_preferences(out, "    ", &job.spreads, &job.affinities);
        out.push_str("    groups:\n");
        for group in &job.groups {
            write_group(out, scenario, job.kind, group);
        }
    }
}

fn write_group(out: &mut String, scenario: &Scenario, kind: JobKind, group: &GroupSpec) {
    let _ = writeln!(out, "      - name: {}", text(&group.name));
    let _ = writeln!(out, "        count: {}", group.count);
    write_volume_requests(out, scenario, group);
    write_constraints(out, "        ", &group.constraints);
    write_preferences(out, "        ", &group.spreads, &group.affinities);
    write_policies(out, kind, group);
    write_node_settings(out, group);
    if let Some(limit) = group.max_run_duration {
        let _ = writeln!(out, "        max_run_duration: {}", duration(limit));
    }
    super::network::write_ports(out, &group.ports);
    let disk = group.ephemeral_disk;
    if disk != EphemeralDisk::DEFAULT {
        let _ = writeln!(
            out,
            "        ephemeral_disk: {{size: {}, sticky: {}, migrate: {}}}",
            disk.size_mb, disk.sticky, disk.migrate
        );
    }
    write_tasks(out, scenario, group);
}

/// The group's `volumes:` requests.
fn write_volume_requests(out: &mut String, scenario: &Scenario, group: &GroupSpec) {
    if !group.volumes.is_empty() || !group.host_volumes.is_empty() {
        out.push_str("        volumes:\n");
        super::host_volumes::write_host_requests(out, group);
        for request in &group.volumes {
            let (source, per_alloc) = match &request.source {
                VolumeSource::Shared(id) => (scenario.volumes[id.index()].name.as_str(), false),
                VolumeSource::PerAlloc { base } => (base.as_str(), true),
                VolumeSource::Missing { name } => (name.as_str(), false),
            };
            let mut line = format!(
                "          {}: {{type: csi, source: {}",
                text(&request.alias),
                text(source)
            );
            if request.mode == ClaimMode::Read {
                line.push_str(", read_only: true");
            }
            if per_alloc {
                line.push_str(", per_alloc: true");
            }
            if let Some(access_mode) = request.access_mode {
                let _ = write!(line, ", access_mode: {}", access_mode.name());
            }
            if let Some(attachment_mode) = request.attachment_mode {
                let _ = write!(line, ", attachment_mode: {}", attachment_mode.name());
            }
            line.push('}');
            let _ = writeln!(out, "{line}");
        }
    }
}

/// The group's reschedule policy and update strategy, where not the job
/// type's defaults.
fn write_policies(out: &mut String, kind: JobKind, group: &GroupSpec) {
    let policy = &group.reschedule;
    let defaults = ReschedulePolicy::default_for(kind);
    if *policy != defaults {
        let function = match policy.delay_function {
            DelayFunction::Constant => "constant",
            DelayFunction::Exponential => "exponential",
            DelayFunction::Fibonacci => "fibonacci",
        };
        let _ = writeln!(
            out,
            "        reschedule: {{attempts: {}, interval: {}, delay: {}, delay_function: {function}, max_delay: {}, unlimited: {}}}",
            policy.attempts,
            duration(policy.interval),
            duration(policy.delay),
            duration(policy.max_delay),
            policy.unlimited
        );
    }
    // The update strategy as resolved, at group level: the same after reading.
    let default_update = (kind == JobKind::Service).then(UpdateStrategy::default);
    if group.update != default_update {
        let u = group.update.unwrap_or(UpdateStrategy {
            max_parallel: 0,
            ..UpdateStrategy::default()
        });
        let _ = writeln!(
            out,
            "        update: {{max_parallel: {}, canary: {}, min_healthy_time: {}, healthy_deadline: {}, progress_deadline: {}, auto_revert: {}, auto_promote: {}, stagger: {}}}",
            u.max_parallel,
            u.canary,
            duration(u.min_healthy_time),
            duration(u.healthy_deadline),
            duration(u.progress_deadline),
            u.auto_revert,
            u.auto_promote,
            duration(u.stagger)
        );
    }
}

/// The group's `tasks:`, rebuilt from the sums the model keeps.
fn write_tasks(out: &mut String, scenario: &Scenario, group: &GroupSpec) {
    // The model keeps a group's sums (resources, drivers, longest run_for),
    // not its tasks: one task per driver gives the same sums, the first
    // carrying the resources.
    if let Some(lifecycle) = group.lifecycle.as_deref() {
        let written = super::lifecycle::Written {
            drivers: drivers(scenario, group.drivers)
                .into_iter()
                .map(text)
                .collect(),
            plugin_names: group
                .csi_plugins
                .iter()
                .map(|p| text(&scenario.plugins[p.plugin.index()].name))
                .collect(),
            duration: &duration,
        };
        super::lifecycle::write_tasks(out, &written, group, lifecycle);
        return;
    }
    out.push_str("        tasks:\n");
    for (i, driver) in drivers(scenario, group.drivers).into_iter().enumerate() {
        let (cpu, memory) = if i == 0 {
            (group.cpu, group.memory)
        } else {
            (0, 0)
        };
        let mut line = format!(
            "          - {{name: task{i}, driver: {}, cpu: {cpu}, memory: {memory}",
            text(driver)
        );
        if let Some(run_for) = group.run_for {
            let _ = write!(line, ", run_for: {}", duration(run_for));
        }
        if i == 0 && group.healthy_after > Millis::ZERO {
            let _ = write!(line, ", healthy_after: {}", duration(group.healthy_after));
        }
        line.push('}');
        let _ = writeln!(out, "{line}");
    }
    // One task without resources per plugin the group runs.
    let driver = drivers(scenario, group.drivers)
        .into_iter()
        .next()
        .map(text)
        .unwrap_or_else(|| "docker".to_string());
    for (i, task) in group.csi_plugins.iter().enumerate() {
        let kind = match task.kind {
            CsiPluginType::Node => "node",
            CsiPluginType::Controller => "controller",
            CsiPluginType::Monolith => "monolith",
        };
        let mut line =
            format!("          - {{name: plugin{i}, driver: {driver}, cpu: 0, memory: 0");
        if let Some(run_for) = group.run_for {
            let _ = write!(line, ", run_for: {}", duration(run_for));
        }
        let _ = writeln!(
            out,
            "{line}, csi_plugin: {{id: {}, type: {kind}}}}}",
            text(&scenario.plugins[task.plugin.index()].name)
        );
    }
}

/// A group's `migrate` block and disconnect settings, where not Nomad's
/// defaults.
fn write_node_settings(out: &mut String, group: &GroupSpec) {
    let migrate = &group.migrate;
    if *migrate != MigrateStrategy::default() {
        let check = match migrate.health_check {
            HealthCheck::Checks => "checks",
            HealthCheck::TaskStates => "task_states",
        };
        let _ = writeln!(
            out,
            "        migrate: {{max_parallel: {}, health_check: {check}, min_healthy_time: {}, healthy_deadline: {}}}",
            migrate.max_parallel,
            duration(migrate.min_healthy_time),
            duration(migrate.healthy_deadline)
        );
    }
    let fields = group.disconnect.group_fields;
    if let Some(window) = fields.max_client_disconnect {
        let _ = writeln!(out, "        max_client_disconnect: {}", duration(window));
    }
    if let Some(after) = fields.stop_after_client_disconnect {
        let _ = writeln!(
            out,
            "        stop_after_client_disconnect: {}",
            duration(after)
        );
    }
    let block = group.disconnect.block;
    let settings: Vec<String> = [
        ("lost_after", block.max_client_disconnect),
        ("stop_on_client_after", block.stop_after_client_disconnect),
    ]
    .into_iter()
    .filter_map(|(key, value)| value.map(|d| format!("{key}: {}", duration(d))))
    .collect();
    if !settings.is_empty() {
        let _ = writeln!(out, "        disconnect: {{{}}}", settings.join(", "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_str;

    /// Every scenario shipped in `scenarios/` survives write -> load
    /// unchanged (the model's Debug form is compared: it shows every field).
    #[test]
    fn shipped_scenarios_round_trip() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let mut files: Vec<_> = ["", "nomad", "found"]
            .into_iter()
            .flat_map(|sub| std::fs::read_dir(root.join(sub)).unwrap())
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        files.sort();
        assert!(files.len() >= 10, "the shipped scenarios are found");
        for file in files {
            let scenario = crate::scenario::load_file(&file).unwrap();
            let yaml = to_yaml(&scenario, "a header\n\nwith two lines");
            let back = load_str(&yaml, "written.yaml", "unused")
                .unwrap_or_else(|err| panic!("{}: {err}\n{yaml}", file.display()));
            assert_eq!(
                format!("{back:?}"),
                format!("{scenario:?}"),
                "{}",
                file.display()
            );
        }
    }

    /// The cluster as it is at time 0 survives write -> load.
    #[test]
    fn initial_allocations_round_trip() {
        let source = r#"
nodes:
  - {id: "client-{i}", count: 2, csi_plugins: [{id: p}]}
plugins:
  - {id: p, enforces_access_mode: true}
volumes:
  - {id: v, plugin_id: p, access_mode: single-node-writer}
jobs:
  - id: db
    groups:
      - name: pg
        count: 3
        volumes: {data: {type: csi, source: v}}
        tasks: [{name: postgres}]
initial_allocations:
  - {alloc: "db.pg[0]", node: client-1, status: running}
  - {alloc: "db.pg[1]", node: client-0, status: pending}
  - {alloc: "db.pg[2]", node: client-0, status: failed}
events:
  - {at: 1m, alloc_fail: "db.pg[0]"}
  - {at: 2m, node_down: {node_of: "db.pg[1]"}}
"#;
        let scenario = load_str(source, "initial.yaml", "initial").unwrap();
        assert_eq!(scenario.initial_allocations.len(), 3);
        assert!(yaml_has_failed(&to_yaml(&scenario, "")));
        let yaml = to_yaml(&scenario, "");
        let back = load_str(&yaml, "written.yaml", "unused").unwrap();
        assert_eq!(format!("{back:?}"), format!("{scenario:?}"), "{yaml}");
    }

    fn yaml_has_failed(yaml: &str) -> bool {
        yaml.contains("status: failed")
            && yaml.contains("alloc_fail: \"db.pg[0]\"")
            && yaml.contains("node_down: {node_of: \"db.pg[1]\"}")
    }

    #[test]
    fn odd_names_and_constraints_round_trip() {
        let source = r#"
name: "odd: name, with # and {braces}"
description: "two\nlines"
horizon: 90s
schedulers: [plan-aware, naive]
cluster: {scheduler_workers: 2, pull_delay: 1500ms, scheduler_algorithm: spread}
nodes:
  - {id: "true", cpu: 100, memory: 50, drivers: [exec, "odd driver"], attributes: {"${x}": "y z"}, datacenter: dc2, node_class: gpu, topology: {zone: "1"}, csi_plugins: [{id: p, healthy: false, max_volumes: 3}]}
plugins: [{id: p, enforces_access_mode: true, publish_latency: 1s}]
volumes:
  - {id: "u[{i}]", count: 2, plugin_id: p, access_mode: multi-node-single-writer, attachment_mode: block-device, topologies: [{zone: "1"}]}
jobs:
  - id: j
    type: batch
    submit_at: 1m
    datacenters: [dc2]
    priority: 70
    constraints:
      - {attribute: "${attr.x}", operator: is, value: "y z"}
      - {attribute: "${node.class}", operator: is_set}
    groups:
      - name: g
        count: 2
        volumes: {v: {type: csi, source: u, per_alloc: true, read_only: true}}
        reschedule: {attempts: 3, delay: 10s, delay_function: fibonacci}
        tasks:
          - {name: a, driver: exec, cpu: 10, memory: 20, run_for: 5m}
          - {name: b, driver: "odd driver", run_for: 1m}
events:
  - {at: 70s, scale: {job: j, group: g, count: 1}}
  - {at: 20s, plugin_health: {plugin: p, node: "true", healthy: true}}
  - {at: 30s, node_drain: "true"}
  - {at: 80s, stop_job: j}
expect:
  naive: {placed: 2, first_full_s: ">= 1.5"}
  plan-aware: {violations: "!= 0"}
"#;
        let scenario = load_str(source, "odd.yaml", "odd").unwrap();
        let yaml = to_yaml(&scenario, "");
        let back =
            load_str(&yaml, "written.yaml", "unused").unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        assert_eq!(format!("{back:?}"), format!("{scenario:?}"), "{yaml}");
    }

    #[test]
    fn plugin_restarts_detaches_and_late_registrations_round_trip() {
        let source = r#"
name: late
horizon: 1h
nodes:
  - {id: client-1, cpu: 100, memory: 100, csi_plugins: [{id: p}]}
plugins: [{id: p, enforces_access_mode: true}]
volumes:
  - {id: data, plugin_id: p, access_mode: single-node-writer, register_at: 5m}
  - {id: other, plugin_id: p, access_mode: single-node-writer}
events:
  - {at: 30m, plugin_restart: {plugin: p, node: client-1, down_for: 30s}}
  - {at: 20m, volume_detach: {volume: data, node: client-1}}
"#;
        let scenario = load_str(source, "late.yaml", "late").unwrap();
        assert_eq!(scenario.volumes[0].register_at, Millis::from_secs(300));
        assert_eq!(scenario.volumes[1].register_at, Millis::ZERO);
        let yaml = to_yaml(&scenario, "");
        assert!(yaml.contains("register_at: 5m"), "{yaml}");
        assert!(
            yaml.contains("plugin_restart: {plugin: p, node: client-1, down_for: 30s}"),
            "{yaml}"
        );
        assert!(
            yaml.contains("volume_detach: {volume: data, node: client-1}"),
            "{yaml}"
        );
        let back =
            load_str(&yaml, "written.yaml", "unused").unwrap_or_else(|e| panic!("{e}\n{yaml}"));
        assert_eq!(format!("{back:?}"), format!("{scenario:?}"), "{yaml}");
    }

    #[test]
    fn durations_use_the_largest_exact_unit() {
        assert_eq!(duration(Millis(0)), "0s");
        assert_eq!(duration(Millis(250)), "250ms");
        assert_eq!(duration(Millis(1500)), "1500ms");
        assert_eq!(duration(Millis::from_secs(90)), "90s");
        assert_eq!(duration(Millis::from_secs(300)), "5m");
        assert_eq!(duration(Millis::from_secs(7200)), "2h");
        assert_eq!(duration(Millis::from_secs(86_400)), "1d");
    }

    #[test]
    fn words_are_plain_and_everything_else_is_quoted() {
        assert_eq!(text("client-0"), "client-0");
        assert_eq!(text("true"), "\"true\"");
        assert_eq!(text("0day"), "\"0day\"");
        assert_eq!(text("a: b"), "\"a: b\"");
        assert_eq!(text("u[0]"), "\"u[0]\"");
        assert_eq!(text(""), "\"\"");
    }

    /// Parents, their children (stamped out again, not written), dispatch
    /// events and an event on a child survive write -> load.
    #[test]
    fn periodic_and_parameterized_round_trip() {
        let source = r#"
start_time: "2026-01-05T09:30:00+02:00"
horizon: 2h
nodes: [{id: c}]
jobs:
  - id: a
    type: batch
    periodic: {crons: ["*/30 * * * *", "@hourly"], prohibit_overlap: true, time_zone: Etc/GMT-3}
    groups: [{name: g, count: 1, tasks: [{name: t, run_for: 10m}]}]
  - id: b
    type: sysbatch
    periodic: {cron: "0 0 * * *", enabled: false}
    groups: [{name: g, count: 1, tasks: [{name: t, run_for: 10m}]}]
  - id: p
    type: batch
    parameterized: {payload: required, meta_required: [x], meta_optional: ["odd key"]}
    groups: [{name: g, count: 1, tasks: [{name: t, run_for: 10m}]}]
events:
  - {at: 1m, dispatch: {job: p, meta: {x: "1", "odd key": "a b"}, payload: "{}"}}
  - {at: 2m, dispatch: {job: p, meta: {x: "2"}, payload: p}}
  - {at: 40m, stop_job: a/periodic-1767600000}
"#;
        let scenario = load_str(source, "periodic.yaml", "periodic").unwrap();
        let names: Vec<&str> = scenario.jobs.iter().map(|j| j.name.as_str()).collect();
        // 07:30 UTC; launches every 30 minutes within two hours.
        assert_eq!(scenario.start_time.0, 1_767_598_200);
        assert_eq!(
            names[3..7],
            [
                "a/periodic-1767600000",
                "a/periodic-1767601800",
                "a/periodic-1767603600",
                "a/periodic-1767605400",
            ]
        );
        assert_eq!(names.len(), 9, "{names:?}");
        assert!(names[7].starts_with("p/dispatch-1767598260-"), "{names:?}");
        assert!(names[8].starts_with("p/dispatch-1767598320-"), "{names:?}");
        let yaml = to_yaml(&scenario, "");
        assert!(
            !yaml.contains("periodic-1767600000\n"),
            "children are not written:\n{yaml}"
        );
        let back =
            load_str(&yaml, "written.yaml", "unused").unwrap_or_else(|err| panic!("{err}\n{yaml}"));
        assert_eq!(format!("{back:?}"), format!("{scenario:?}"), "{yaml}");
    }
}
