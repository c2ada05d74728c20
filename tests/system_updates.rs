//! Updates of system jobs: destructive ones stop and replace the allocation
//! on its node, at most `max_parallel` per evaluation; in-place ones only
//! take the new version. 1.2.6 (naive) rolls on with an evaluation
//! `stagger` later (scheduler_system.go process, NextRollingEval); 2.0.5
//! (validate) under a deployment, each batch once the last one is healthy
//! (system deployments, 1.11.0). For a CSI node-plugin job, the plugin is
//! down on a node from its allocation's stop until the replacement is
//! healthy.

mod common;

use std::collections::BTreeMap;

use plansim::model::ids::NodeId;
use plansim::model::policy::Policy;
use plansim::model::time::Millis;
use plansim::sim::trace::{TraceKind, TraceRecord};

const UPDATE_AT: Millis = Millis::from_secs(300);

/// A system job of `groups` on `nodes` nodes, `update` its job-level block
/// (YAML, or empty), updated at 5m by `update_event`.
fn system_job(nodes: usize, update: &str, groups: &str, update_event: &str) -> String {
    format!(
        r#"
horizon: 20m
nodes:
  - {{id: "node-{{i}}", count: {nodes}}}
jobs:
  - id: agent
    type: system
    {update}
    groups:
{groups}
events:
  - {{at: 5m, update_job: {update_event}}}
"#
    )
}

const ONE_GROUP: &str = "      - {name: web, tasks: [{name: web, cpu: 100, memory: 64}]}";

fn trace_of(yaml: &str, policy: Policy) -> (plansim::sim::RunOutput, Vec<TraceRecord>) {
    let scenario = common::load(yaml);
    let mut output = common::run_checked(&scenario, policy, 3);
    let trace = output.trace.take().expect("traced");
    (output, trace)
}

/// Per commit time from the update on: (allocations stopped, placements
/// that update one), of the job's rows.
fn batches(trace: &[TraceRecord]) -> BTreeMap<Millis, (usize, usize)> {
    let mut out: BTreeMap<Millis, (usize, usize)> = BTreeMap::new();
    for r in trace.iter().filter(|r| r.time >= UPDATE_AT) {
        match r.kind {
            TraceKind::Stopped => out.entry(r.time).or_default().0 += 1,
            TraceKind::Placed if r.detail.starts_with("updates alloc") => {
                out.entry(r.time).or_default().1 += 1
            }
            _ => {}
        }
    }
    out
}

/// The times of the evaluations from the update on.
fn evals(trace: &[TraceRecord]) -> Vec<Millis> {
    trace
        .iter()
        .filter(|r| r.kind == TraceKind::Eval && r.time >= UPDATE_AT)
        .map(|r| r.time)
        .collect()
}

#[test]
fn naive_updates_max_parallel_per_evaluation_and_follows_up_after_stagger() {
    let yaml = system_job(
        7,
        "update: {max_parallel: 3, stagger: 45s}",
        ONE_GROUP,
        "{job: agent}",
    );
    let (output, trace) = trace_of(&yaml, Policy::Naive);
    let latency = Millis(10);
    let at = |secs: u64| Millis::from_secs(secs) + latency;
    // 3, then 3 at +45s, then the last one at +90s: each stop replaced in
    // the same plan, on its node.
    let expected: BTreeMap<Millis, (usize, usize)> =
        BTreeMap::from([(at(300), (3, 3)), (at(345), (3, 3)), (at(390), (1, 1))]);
    assert_eq!(batches(&trace), expected);
    // The follow-ups come exactly `stagger` after the evaluation that
    // reached the limit; the last batch reaches none, so none follows.
    assert_eq!(
        evals(&trace),
        vec![
            Millis::from_secs(300),
            Millis::from_secs(345),
            Millis::from_secs(390)
        ]
    );
    for r in trace
        .iter()
        .filter(|r| r.kind == TraceKind::Placed && r.time > UPDATE_AT)
    {
        let stopped_here = trace
            .iter()
            .any(|s| s.kind == TraceKind::Stopped && s.time == r.time && s.node == r.node);
        assert!(stopped_here, "{r:?}: replaced on another node");
    }
    assert_eq!(output.metrics.placed, 14);
    assert_eq!(output.metrics.running, 7);
    assert_eq!(
        output.metrics.deployments, 0,
        "1.2.6 has no system deployments"
    );
}

#[test]
fn naive_without_a_job_update_block_updates_every_node_at_once() {
    let yaml = system_job(7, "", ONE_GROUP, "{job: agent}");
    let (_, trace) = trace_of(&yaml, Policy::Naive);
    let batches = batches(&trace);
    assert_eq!(batches.len(), 1, "{batches:?}");
    assert_eq!(batches.values().next(), Some(&(7, 7)));
    assert_eq!(evals(&trace), vec![UPDATE_AT], "no rolling follow-up");
}

#[test]
fn a_group_whose_tasks_did_not_change_is_updated_in_place() {
    // Only `web` changes (its cpu): `log` takes the new version as it runs.
    let groups = "      - {name: web, tasks: [{name: web, cpu: 100, memory: 64}]}\n      - {name: log, tasks: [{name: log, cpu: 50, memory: 32}]}";
    let yaml = system_job(4, "", groups, "{job: agent, groups: {web: {cpu: 200}}}");
    for policy in [Policy::Naive, Policy::Validate] {
        let (output, trace) = trace_of(&yaml, policy);
        let scenario = common::load(&yaml);
        let group_of = |r: &TraceRecord| {
            scenario.jobs[0].groups[r.group.unwrap().group_index()]
                .name
                .clone()
        };
        let stopped: Vec<String> = trace
            .iter()
            .filter(|r| r.kind == TraceKind::Stopped)
            .map(group_of)
            .collect();
        assert!(
            !stopped.is_empty(),
            "{policy:?}: web is updated destructively"
        );
        assert!(
            stopped.iter().all(|g| g == "web"),
            "{policy:?}: log is updated in place, never stopped: {stopped:?}"
        );
        assert_eq!(output.metrics.placed, 8 + 4, "{policy:?}");
        assert_eq!(output.metrics.running, 8, "{policy:?}");
    }
}

#[test]
fn validate_rolls_out_under_a_deployment_one_healthy_batch_at_a_time() {
    let yaml = system_job(
        5,
        "update: {max_parallel: 2, stagger: 45s, min_healthy_time: 20s}",
        ONE_GROUP,
        "{job: agent}",
    );
    let (output, trace) = trace_of(&yaml, Policy::Validate);
    let batches = batches(&trace);
    let sizes: Vec<(usize, usize)> = batches.values().copied().collect();
    assert_eq!(sizes, vec![(2, 2), (2, 2), (1, 1)], "{batches:?}");
    // Each batch waits for the one before to be healthy: placed, 2s pull,
    // 20s min_healthy_time, then the watcher's batched evaluation 1s
    // later; never the 45s stagger.
    let times: Vec<Millis> = batches.keys().copied().collect();
    for pair in times.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= Millis::from_secs(23),
            "{gap}s: before the batch was healthy"
        );
        assert!(gap < Millis::from_secs(45), "{gap}s: waited for stagger");
    }
    assert!(
        !evals(&trace).contains(&Millis::from_secs(345)),
        "no stagger follow-up at 2.0.5"
    );
    assert_eq!(output.metrics.deployments, 1);
    assert_eq!(output.metrics.deployment_failures, 0);
    assert!(
        trace
            .iter()
            .any(|r| r.kind == TraceKind::DeploymentSucceeded),
        "the deployment succeeds once every node runs the new version"
    );
}

#[test]
fn validate_reads_the_groups_max_parallel_before_the_jobs() {
    let groups = "      - {name: web, update: {max_parallel: 4}, tasks: [{name: web, cpu: 100, memory: 64}]}";
    let yaml = system_job(5, "update: {max_parallel: 1}", groups, "{job: agent}");
    let (_, trace) = trace_of(&yaml, Policy::Validate);
    let sizes: Vec<(usize, usize)> = batches(&trace).values().copied().collect();
    assert_eq!(sizes, vec![(4, 4), (1, 1)]);
    // naive reads the job's only: one per evaluation.
    let (_, trace) = trace_of(&yaml, Policy::Naive);
    let sizes: Vec<(usize, usize)> = batches(&trace).values().copied().collect();
    assert_eq!(sizes, vec![(1, 1); 5]);
}

/// The plugin's health rows on `node`: (time, healthy).
fn plugin_health(trace: &[TraceRecord], node: NodeId) -> Vec<(Millis, bool)> {
    trace
        .iter()
        .filter(|r| r.kind == TraceKind::PluginHealth && r.node == Some(node))
        .map(|r| (r.time, r.detail.ends_with(" healthy")))
        .collect()
}

#[test]
fn a_plugin_jobs_rolling_update_takes_the_plugin_down_until_the_replacement_is_healthy() {
    let path = common::repo_path("scenarios/nomad/plugin-system-job-rolling-update.yaml");
    let scenario = plansim::scenario::load_file(&path).expect("the scenario loads");
    for (policy, down_together) in [(Policy::Naive, 3), (Policy::Validate, 1)] {
        let mut output = common::run_checked(&scenario, policy, 7);
        let trace = output.trace.take().expect("traced");
        let mut windows = Vec::new();
        for n in 0..scenario.nodes.len() {
            let node = NodeId::from_index(n);
            let rows = plugin_health(&trace, node);
            // Up at start, down at the plugin allocation's stop, up again
            // when the replacement is healthy (2m after it runs).
            let after: Vec<&(Millis, bool)> =
                rows.iter().filter(|(t, _)| *t >= UPDATE_AT).collect();
            assert_eq!(after.len(), 2, "{policy:?} node {n}: {rows:?}");
            let (down, up) = (after[0], after[1]);
            assert!(!down.1 && up.1, "{policy:?} node {n}: {rows:?}");
            let stop = trace.iter().find(|r| {
                r.kind == TraceKind::Stopped && r.node == Some(node) && r.time >= UPDATE_AT
            });
            assert_eq!(stop.map(|r| r.time), Some(down.0), "{policy:?} node {n}");
            let down_for = up.0 - down.0;
            assert!(
                down_for >= Millis::from_secs(122),
                "{policy:?} node {n}: down {down_for}s, less than pull and healthy_after"
            );
            windows.push((down.0, up.0));
        }
        // How many plugins are down at the moment the caches ask (11m30s).
        let asked = Millis::from_secs(690);
        let down = windows
            .iter()
            .filter(|(d, u)| *d <= asked && asked < *u)
            .count();
        assert_eq!(down, down_together, "{policy:?}: {windows:?}");
        // Mounted volumes stay: the databases never stop or fail.
        assert_eq!(output.metrics.client_failures, 0, "{policy:?}");
        for r in trace.iter().filter(|r| r.kind == TraceKind::Stopped) {
            let job = &scenario.jobs[r.job.unwrap().index()].name;
            assert!(!job.starts_with("db-"), "{policy:?}: {job} stopped");
        }
        // An unpublish through a plugin that is down fails, once per
        // client whose plugin is down when its batch job finishes.
        let failed = trace
            .iter()
            .filter(|r| r.kind == TraceKind::NodeDetachFailed)
            .count();
        assert_eq!(failed, down_together, "{policy:?}");
        // Every cache runs in the end, none on a node with its plugin down.
        assert_eq!(output.metrics.running, 9, "{policy:?}");
        for r in trace.iter().filter(|r| {
            r.kind == TraceKind::Placed
                && scenario.jobs[r.job.unwrap().index()]
                    .name
                    .starts_with("cache-")
        }) {
            let n = r.node.unwrap().index();
            let (d, u) = windows[n];
            assert!(
                r.time < d || r.time >= u,
                "{policy:?}: cache placed while the plugin is down"
            );
        }
    }
}
