//! Property tests over random small clusters, volumes, jobs and timelines:
//! under every policy the model's invariants hold after every event (they
//! are asserted inside the simulation); under plan-aware no access mode is
//! ever violated and no claim is ever refused (but for a ControllerPublish
//! when a required controller is down). Jobs may be system or sysbatch, the
//! plugin may come from a system plugin job, and need a controller whose
//! health events flip. Jobs may carry spread, affinity, distinct_hosts and
//! distinct_property blocks over racks and datacenters; the plugin job may
//! be a system job (monolith, or node plugin beside a controller job) or a
//! service job, and drains (with deadlines, ignoring system jobs or not)
//! hit the nodes that run it. Service jobs may have an update block with
//! canaries (auto-promoted or not), and timelines promote deployments.

mod common;

use plansim::model::policy::Policy;
use proptest::prelude::*;

const MODES: [&str; 5] = [
    "single-node-reader-only",
    "single-node-writer",
    "multi-node-reader-only",
    "multi-node-single-writer",
    "multi-node-multi-writer",
];

#[derive(Debug, Clone)]
struct Request {
    volume: usize,
    read_only: bool,
    /// The request's own access mode and attachment (block device or not).
    mode: Option<(usize, bool)>,
}

#[derive(Debug, Clone)]
struct Group {
    count: u32,
    requests: Vec<Request>,
    cpu: u32,
    /// max_client_disconnect, stop_after_client_disconnect (seconds) and
    /// migrate.max_parallel.
    disconnect: (Option<u32>, Option<u32>, u32),
}

#[derive(Debug, Clone)]
struct Job {
    /// 0 service, 1 batch, 2 system, 3 sysbatch.
    kind: usize,
    submit_s: u32,
    run_for_s: Option<u32>,
    /// Every task's `healthy_after`, in seconds (0: healthy at once).
    healthy_after_s: u32,
    groups: Vec<Group>,
    /// Placement preferences (service and batch jobs): bit 0 a job-level
    /// distinct_hosts, bit 1 a group-level one on g0, bit 2 a job-level
    /// distinct_property on the rack (limit `limit`), bit 3 a spread over
    /// racks, bit 4 an affinity for a rack, bit 5 a spread over
    /// datacenters with targets.
    prefs: u8,
    limit: u32,
    /// The `update` block of a service job: canary, auto_promote,
    /// max_parallel (None: Nomad's defaults).
    update: Option<(u32, bool, u32)>,
}

#[derive(Debug, Clone)]
enum Action {
    NodeDown(usize),
    NodeUp(usize),
    NodeDrain(usize),
    Scale(usize, u32),
    StopJob(usize),
    PluginHealth(usize, bool),
    ControllerHealth(bool),
    /// `update_job`: a new version (with a changed cpu, or bare), or counts only.
    UpdateJob(usize, Option<u32>, u32),
    NodeDisconnect(usize),
    NodeReconnect(usize),
    /// A drain with a strategy: node, deadline (seconds, 0: none), and
    /// whether system jobs are ignored.
    NodeDrainSpec(usize, u32, bool),
    /// `promote_deployment` of a job.
    PromoteDeployment(usize),
}

#[derive(Debug, Clone)]
struct World {
    workers: u32,
    enforcing: bool,
    nodes: Vec<(u32, bool, u32)>,
    modes: Vec<usize>,
    /// Volumes listing capabilities instead of the access_mode shorthand.
    capabilities: Vec<Option<Vec<(usize, bool)>>>,
    jobs: Vec<Job>,
    events: Vec<(u32, Action)>,
    /// The plugin needs a controller (`controller_required`).
    controller_required: bool,
    /// The node plugin comes from a system plugin job, not the nodes.
    plugin_job: bool,
    /// The plugin job's shape: 0 a system monolith, 1 a system node
    /// plugin (with a controller from a service job when one is required),
    /// 2 a service job running the node plugin (count: the node count,
    /// distinct_hosts), which 1.2.6 drains like any other job.
    plugin_shape: usize,
    /// Racks and datacenters of the nodes (for spread, affinity and
    /// distinct_property): node i is in rack `racks[i] % 3` and dc1 or dc2.
    racks: Vec<(u8, bool)>,
}

fn group() -> impl Strategy<Value = Group> {
    (
        0u32..4,
        prop::collection::vec(
            (
                0usize..4,
                any::<bool>(),
                prop::option::weighted(0.3, (0usize..5, prop::bool::weighted(0.2))),
            )
                .prop_map(|(volume, read_only, mode)| Request {
                    volume,
                    read_only,
                    mode,
                }),
            0..3,
        ),
        prop::sample::select(vec![100u32, 500, 1500]),
        (
            prop::option::weighted(0.3, 1u32..900),
            prop::option::weighted(0.2, 1u32..600),
            0u32..4,
        ),
    )
        .prop_map(|(count, requests, cpu, disconnect)| Group {
            count,
            requests,
            cpu,
            disconnect,
        })
}

fn job() -> impl Strategy<Value = Job> {
    (
        prop::sample::select(vec![0usize, 0, 1, 1, 2, 3]),
        0u32..120,
        prop::option::of(1u32..600),
        prop::collection::vec(group(), 1..3),
        prop::sample::select(vec![0u32, 0, 5, 45]),
        (prop::bool::weighted(0.4), 0u8..64, 1u32..3),
        prop::option::weighted(0.5, (0u32..3, any::<bool>(), 1u32..3)),
    )
        .prop_map(
            |(
                kind,
                submit_s,
                run_for_s,
                groups,
                healthy_after_s,
                (any_prefs, prefs, limit),
                update,
            )| Job {
                kind,
                submit_s,
                run_for_s,
                healthy_after_s,
                groups,
                prefs: if any_prefs { prefs } else { 0 },
                limit,
                update,
            },
        )
}

fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        (0usize..6).prop_map(Action::NodeDown),
        (0usize..6).prop_map(Action::NodeUp),
        (0usize..6).prop_map(Action::NodeDrain),
        (0usize..4, 0u32..5).prop_map(|(j, c)| Action::Scale(j, c)),
        (0usize..4).prop_map(Action::StopJob),
        (0usize..6, any::<bool>()).prop_map(|(n, h)| Action::PluginHealth(n, h)),
        any::<bool>().prop_map(Action::ControllerHealth),
        (
            0usize..4,
            prop::option::of(prop::sample::select(vec![100u32, 700])),
            0u32..4
        )
            .prop_map(|(j, cpu, c)| Action::UpdateJob(j, cpu, c)),
        (0usize..6).prop_map(Action::NodeDisconnect),
        (0usize..6).prop_map(Action::NodeReconnect),
        (
            0usize..6,
            prop::sample::select(vec![0u32, 30, 300, 1200]),
            any::<bool>()
        )
            .prop_map(|(n, d, i)| Action::NodeDrainSpec(n, d, i)),
        (0usize..4).prop_map(Action::PromoteDeployment),
    ]
}

fn world() -> impl Strategy<Value = World> {
    (
        1u32..4,
        any::<bool>(),
        prop::collection::vec(
            (
                0u32..3,
                any::<bool>(),
                prop::sample::select(vec![2000u32, 4000, 8000]),
            ),
            1..6,
        ),
        prop::collection::vec(0usize..5, 1..5),
        prop::collection::vec(job(), 1..5),
        prop::collection::vec((0u32..1800, action()), 0..6),
        prop::collection::vec(
            prop::option::weighted(
                0.3,
                prop::collection::vec((0usize..5, prop::bool::weighted(0.2)), 1..3),
            ),
            4,
        ),
        prop::bool::weighted(0.3),
        (
            prop::bool::weighted(0.3),
            0usize..3,
            prop::collection::vec((0u8..3, prop::bool::weighted(0.3)), 6),
        ),
    )
        .prop_map(
            |(
                workers,
                enforcing,
                nodes,
                modes,
                jobs,
                events,
                capabilities,
                controller_required,
                (plugin_job, plugin_shape, racks),
            )| World {
                workers,
                enforcing,
                nodes,
                modes,
                capabilities,
                jobs,
                events,
                controller_required,
                plugin_job,
                plugin_shape,
                racks,
            },
        )
}

/// A job's spread, affinity, distinct_hosts and distinct_property blocks.
fn preferences(job: &Job) -> String {
    let mut out = String::new();
    let mut constraints = Vec::new();
    if job.prefs & 1 != 0 {
        constraints.push("{operator: distinct_hosts}".to_string());
    }
    if job.prefs & 4 != 0 {
        constraints.push(format!(
            "{{attribute: \"${{attr.rack}}\", operator: distinct_property, value: \"{}\"}}",
            job.limit
        ));
    }
    if !constraints.is_empty() {
        out += &format!("    constraints: [{}]\n", constraints.join(", "));
    }
    let mut spreads = Vec::new();
    if job.prefs & 8 != 0 {
        spreads.push("{attribute: \"${attr.rack}\", weight: 50}".to_string());
    }
    if job.prefs & 32 != 0 {
        spreads.push(
            "{attribute: \"${node.datacenter}\", weight: 30, targets: [{value: dc1, percent: 70}, {value: dc2, percent: 30}]}"
                .to_string(),
        );
    }
    if !spreads.is_empty() {
        out += &format!("    spread: [{}]\n", spreads.join(", "));
    }
    if job.prefs & 16 != 0 {
        out += "    affinity: [{attribute: \"${attr.rack}\", operator: \"=\", value: r1, weight: 40}]\n";
    }
    out
}

/// The jobs that run the CSI plugin, by `plugin_shape`.
fn plugin_jobs(world: &World) -> String {
    let task = |kind: &str| {
        format!(
            "        tasks: [{{name: driver, cpu: 50, memory: 64, csi_plugin: {{id: csi, type: {kind}}}}}]\n"
        )
    };
    let head = |id: &str, kind: &str| {
        format!("  - id: {id}\n    type: {kind}\n    datacenters: [dc1, dc2]\n")
    };
    match world.plugin_shape {
        0 => {
            head("csi-nodes", "system") + "    groups:\n      - name: plugin\n" + &task("monolith")
        }
        1 => {
            head("csi-nodes", "system")
                + "    groups:\n      - name: plugin\n"
                + &task("node")
                + &head("csi-controller", "service")
                + "    groups:\n      - name: controller\n"
                + &task("controller")
        }
        _ => {
            head("csi-nodes", "service")
                + "    constraints: [{operator: distinct_hosts}]\n    groups:\n      - name: plugin\n"
                + &format!("        count: {}\n", world.nodes.len())
                + &task("monolith")
        }
    }
}

/// The world as a scenario file: what the loader sees is what users write.
fn yaml(world: &World) -> String {
    let mut out = format!(
        "horizon: 1h\ncluster: {{scheduler_workers: {}}}\nnodes:\n",
        world.workers
    );
    for (i, (max_volumes, healthy, cpu)) in world.nodes.iter().enumerate() {
        let (rack, dc2) = world.racks[i];
        let place = format!(
            "datacenter: dc{}, attributes: {{rack: r{rack}}}, ",
            if dc2 { 2 } else { 1 }
        );
        if world.plugin_job {
            out += &format!("  - {{id: n{i}, {place}cpu: {cpu}, memory: 8192}}\n");
        } else {
            out += &format!(
                "  - {{id: n{i}, {place}cpu: {cpu}, memory: 8192, csi_plugins: [{{id: csi, healthy: {healthy}, max_volumes: {max_volumes}}}]}}\n"
            );
        }
    }
    out += &format!(
        "plugins:\n  - {{id: csi, enforces_access_mode: {}, controller_required: {}, controller_publish_latency: 1s}}\nvolumes:\n",
        world.enforcing, world.controller_required
    );
    out += &yaml_volumes(world);
    out += "jobs:\n";
    for (j, job) in world.jobs.iter().enumerate() {
        out += &yaml_job(world, j, job);
    }
    if world.plugin_job {
        out += &plugin_jobs(world);
    }
    out += &yaml_events(world);
    out
}

/// The `volumes:` section of [`yaml`].
fn yaml_volumes(world: &World) -> String {
    let mut out = String::new();
    for (i, mode) in world.modes.iter().enumerate() {
        match world.capabilities.get(i).and_then(Option::as_ref) {
            Some(caps) => {
                let caps: Vec<String> = caps
                    .iter()
                    .map(|&(m, block)| {
                        format!(
                            "{{access_mode: {}, attachment_mode: {}}}",
                            MODES[m],
                            attachment(block)
                        )
                    })
                    .collect();
                out += &format!(
                    "  - {{id: v{i}, plugin_id: csi, capabilities: [{}]}}\n",
                    caps.join(", ")
                );
            }
            None => {
                out += &format!(
                    "  - {{id: v{i}, plugin_id: csi, access_mode: {}}}\n",
                    MODES[*mode]
                )
            }
        }
    }
    out
}

/// A volume's attachment mode as the scenario names it.
fn attachment(block: bool) -> &'static str {
    if block { "block-device" } else { "file-system" }
}

/// One job of [`yaml`], its groups included.
fn yaml_job(world: &World, j: usize, job: &Job) -> String {
    let mut out = String::new();
    let kind = ["service", "batch", "system", "sysbatch"][job.kind];
    out += &format!(
        "  - id: j{j}\n    type: {kind}\n    submit_at: {}s\n    datacenters: [dc1, dc2]\n",
        job.submit_s
    );
    if job.kind < 2 {
        out += &preferences(job);
    }
    if let (0, Some((canary, auto_promote, max_parallel))) = (job.kind, job.update) {
        out += &format!(
            "    update: {{max_parallel: {max_parallel}, canary: {canary}, auto_promote: {auto_promote}, min_healthy_time: 5s, progress_deadline: 2m, auto_revert: true}}\n"
        );
    }
    out += "    groups:\n";
    for (g, group) in job.groups.iter().enumerate() {
        out += &yaml_group(world, job, g, group);
    }
    out
}

/// One group of [`yaml_job`].
fn yaml_group(world: &World, job: &Job, g: usize, group: &Group) -> String {
    let mut out = String::new();
    // A system group runs at most one allocation per node.
    let count = if job.kind >= 2 {
        group.count.min(1)
    } else {
        group.count
    };
    out += &format!("      - name: g{g}\n        count: {count}\n");
    if g == 0 && job.kind < 2 && job.prefs & 2 != 0 {
        out += "        constraints: [{operator: distinct_hosts}]\n";
    }
    let (window, stop_after, max_parallel) = group.disconnect;
    // Both spellings: 1.2.6 reads the group fields, 2.0.5 the block.
    if let Some(s) = window {
        out += &format!("        max_client_disconnect: {s}s\n");
    }
    if let Some(s) = stop_after {
        out += &format!("        stop_after_client_disconnect: {s}s\n");
    }
    let block: Vec<String> = [("lost_after", window), ("stop_on_client_after", stop_after)]
        .into_iter()
        .filter_map(|(key, s)| s.map(|s| format!("{key}: {s}s")))
        .collect();
    if !block.is_empty() {
        out += &format!("        disconnect: {{{}}}\n", block.join(", "));
    }
    out += &format!("        migrate: {{max_parallel: {max_parallel}}}\n        volumes: {{");
    let requests: Vec<String> = group
        .requests
        .iter()
        .enumerate()
        .map(|(r, req)| {
            let mode = req
                .mode
                .map(|(m, block)| {
                    format!(
                        ", access_mode: {}, attachment_mode: {}",
                        MODES[m],
                        attachment(block)
                    )
                })
                .unwrap_or_default();
            format!(
                "r{r}: {{type: csi, source: v{}, read_only: {}{mode}}}",
                req.volume % world.modes.len(),
                req.read_only
            )
        })
        .collect();
    out += &requests.join(", ");
    let run_for = job
        .run_for_s
        .map(|s| format!(", run_for: {s}s"))
        .unwrap_or_default();
    out += &format!(
        "}}\n        tasks: [{{name: t, cpu: {}{run_for}, healthy_after: {}s}}]\n",
        group.cpu, job.healthy_after_s
    );
    out
}

/// The `events:` section of [`yaml`], if any.
fn yaml_events(world: &World) -> String {
    let mut out = String::new();
    let nodes = world.nodes.len();
    let jobs = world.jobs.len();
    let events: Vec<String> = world
        .events
        .iter()
        .map(|(at, action)| {
            let body = match action {
                Action::NodeDown(n) => format!("node_down: n{}", n % nodes),
                Action::NodeUp(n) => format!("node_up: n{}", n % nodes),
                Action::NodeDrain(n) => format!("node_drain: n{}", n % nodes),
                Action::Scale(j, count) => {
                    let system = world.jobs[j % jobs].kind >= 2;
                    let count = if system { count % 2 } else { *count };
                    format!("scale: {{job: j{}, group: g0, count: {count}}}", j % jobs)
                }
                Action::StopJob(j) => format!("stop_job: j{}", j % jobs),
                Action::UpdateJob(j, cpu, count) => {
                    let cpu = cpu.map(|c| format!(", cpu: {c}")).unwrap_or_default();
                    format!(
                        "update_job: {{job: j{}, groups: {{g0: {{count: {count}{cpu}}}}}}}",
                        j % jobs
                    )
                }
                Action::PluginHealth(n, healthy) => {
                    format!(
                        "plugin_health: {{plugin: csi, node: n{}, healthy: {healthy}}}",
                        n % nodes
                    )
                }
                Action::ControllerHealth(healthy) => {
                    format!("plugin_controller_health: {{plugin: csi, healthy: {healthy}}}")
                }
                Action::NodeDisconnect(n) => format!("node_disconnect: n{}", n % nodes),
                Action::NodeReconnect(n) => format!("node_reconnect: n{}", n % nodes),
                Action::NodeDrainSpec(n, deadline, ignore) => format!(
                    "node_drain: {{node: n{}, deadline: {deadline}s, ignore_system_jobs: {ignore}}}",
                    n % nodes
                ),
                Action::PromoteDeployment(j) => format!("promote_deployment: j{}", j % jobs),
            };
            // scale and stop_job act on a submitted job: the loader refuses
            // one at or before the job's submit_at.
            let at = match action {
                Action::Scale(j, _)
                | Action::StopJob(j)
                | Action::UpdateJob(j, _, _)
                | Action::PromoteDeployment(j) => {
                    (*at).max(world.jobs[j % jobs].submit_s + 1)
                }
                _ => *at,
            };
            format!("  - {{at: {at}s, {body}}}\n")
        })
        .collect();
    if !events.is_empty() {
        out += "events:\n";
        out += &events.concat();
    }
    out
}

/// A number from the environment, if set and well formed.
fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

proptest! {
    // 96 cases in `cargo test`, the same ones on every run and machine (a
    // red CI is a finding, not luck); PLANSIM_PROPTEST_CASES=10000 for a
    // deeper search, PLANSIM_PROPTEST_SEED=N for other cases.
    #![proptest_config(ProptestConfig {
        cases: env_number("PLANSIM_PROPTEST_CASES").map_or(96, |n| n as u32),
        rng_seed: proptest::test_runner::RngSeed::Fixed(env_number("PLANSIM_PROPTEST_SEED").unwrap_or(0)),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn invariants_hold_and_plan_aware_never_violates(world in world()) {
        let text = yaml(&world);
        let scenario = plansim::scenario::load_str(&text, "property.yaml", "property")
            .unwrap_or_else(|e| panic!("generated scenario refused: {e}\n{text}"));
        for policy in Policy::ALL {
            let output = common::run_checked(&scenario, policy, 0);
            let m = &output.metrics;
            prop_assert!(m.running <= m.placed, "{policy}: {m:?}");
            prop_assert!(m.reschedules <= m.client_failures, "{policy}: a reschedule replaces a failure: {m:?}");
            let plugin_groups = if world.plugin_job { 2 } else { 0 };
            let groups: usize =
                world.jobs.iter().map(|j| j.groups.len()).sum::<usize>() + plugin_groups;
            prop_assert!(
                m.unavailable_time <= scenario.horizon.saturating_mul(groups as u64),
                "{policy}: a group is unavailable at most the whole run: {m:?}"
            );
            if policy == Policy::PlanAware {
                prop_assert_eq!(m.violations, 0, "plan-aware violated an access mode\n{}", text);
                if !world.controller_required {
                    prop_assert_eq!(m.claim_failures, 0, "plan-aware had a claim refused\n{}", text);
                }
            }
        }
    }
}
