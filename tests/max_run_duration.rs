//! A group's `max_run_duration` (Nomad 2.0.3+): the client stops each
//! allocation its duration after the placement was committed
//! (`client/allocrunner/max_run_duration_hook.go`, `alloc_runner.go`
//! `EnforceMaxRunDurationTimeout` at v2.0.5), it ends complete and is not
//! replaced; 1.2.6 (`naive`) has no such field.

mod common;

use common::{load, repo_path, run_checked};
use plansim::model::policy::Policy;
use plansim::model::scenario::Scenario;
use plansim::model::time::Millis;
use plansim::scenario::load_file;
use plansim::sim::trace::{TraceKind, TraceRecord};

/// Nomad's client description (`structs.AllocTimeoutReasonMaxRunDuration`).
const TIMEOUT: &str = "allocation exceeded max_run_duration";

const ENFORCING: [Policy; 2] = [Policy::Validate, Policy::PlanAware];

/// The time of the one row of `kind` about `job`.
fn only(scenario: &Scenario, trace: &[TraceRecord], kind: TraceKind, job: &str) -> Millis {
    let found = common::rows_of_job(scenario, trace, kind, job);
    assert_eq!(found.len(), 1, "{job}: {kind:?} rows {found:?}");
    found[0].time
}

/// The time a claim takes from the client's unmount to being free.
fn release_latency(scenario: &Scenario) -> Millis {
    let c = &scenario.cluster;
    c.node_detach_latency + c.controller_detach_latency + c.claim_free_latency
}

/// The shipped scenario: the crawler is stopped exactly 10m after its
/// placement, complete, its claim released after its 20s kill and the
/// detach; the report, blocked on CPU, is placed once the client's report
/// unblocks the class, and the upload gets the volume. Nothing is
/// replaced or rescheduled.
#[test]
fn the_crawler_stops_at_its_placement_plus_max_run_duration() {
    let scenario = load_file(&repo_path("scenarios/batch-max-run-duration.yaml")).unwrap();
    let limit = scenario.jobs[0].groups[0].max_run_duration;
    assert_eq!(limit, Some(Millis::from_secs(600)));
    let kill = Millis::from_secs(20);
    for policy in ENFORCING {
        for seed in 0..4 {
            let output = run_checked(&scenario, policy, seed);
            let trace = output.trace.unwrap();
            let placed = only(&scenario, &trace, TraceKind::Placed, "crawl");
            let complete = common::rows_of_job(&scenario, &trace, TraceKind::Complete, "crawl");
            assert_eq!(complete.len(), 1, "{policy:?}");
            assert_eq!(complete[0].time, placed + limit.unwrap(), "{policy:?}");
            assert!(complete[0].detail.starts_with(TIMEOUT), "{complete:?}");
            let released = only(&scenario, &trace, TraceKind::ClaimReleased, "crawl");
            assert_eq!(
                released,
                complete[0].time + kill + release_latency(&scenario),
                "{policy:?}: the claim goes after the kill and the detach"
            );
            // The class is unblocked by the client's report once the task is
            // killed, not before.
            let report = only(&scenario, &trace, TraceKind::Placed, "report");
            assert!(report >= complete[0].time + kill, "{policy:?} {report}");
            let upload = only(&scenario, &trace, TraceKind::Placed, "upload");
            assert!(upload > released, "{policy:?}");
            assert!(common::rows_of_job(&scenario, &trace, TraceKind::Failed, "crawl").is_empty());
            let m = &output.metrics;
            assert_eq!((m.placed, m.reschedules, m.client_failures), (3, 0, 0));
        }
    }
}

/// Under 1.2.6 the field does not exist: the crawler holds the node and the
/// volume all hour.
#[test]
fn naive_ignores_max_run_duration() {
    let scenario = load_file(&repo_path("scenarios/batch-max-run-duration.yaml")).unwrap();
    let output = run_checked(&scenario, Policy::Naive, 1);
    let trace = output.trace.unwrap();
    assert!(common::rows_of_job(&scenario, &trace, TraceKind::Complete, "crawl").is_empty());
    assert!(common::rows_of_job(&scenario, &trace, TraceKind::ClaimReleased, "crawl").is_empty());
    assert!(common::rows_of_job(&scenario, &trace, TraceKind::Placed, "report").is_empty());
    assert!(common::rows_of_job(&scenario, &trace, TraceKind::Placed, "upload").is_empty());
    assert_eq!((output.metrics.placed, output.metrics.running), (1, 1));
}

/// The deadline is `CreateTime` plus the duration: a slow pull delays the
/// start, not the stop; a task that finishes first completes on its own
/// and the deadline does nothing after; a task that would run longer is
/// cut.
#[test]
fn the_deadline_counts_from_the_placement_and_the_first_end_wins() {
    let scenario = load(
        r#"
horizon: 1h
cluster: {pull_delay: 3m}
nodes: [{id: c1}]
jobs:
  - id: short
    type: batch
    groups: [{name: g, max_run_duration: 10m, tasks: [{name: t, run_for: 5m}]}]
  - id: long
    type: batch
    groups: [{name: g, max_run_duration: 10m, tasks: [{name: t, run_for: 50m}]}]
"#,
    );
    for policy in ENFORCING {
        let trace = run_checked(&scenario, policy, 1).trace.unwrap();
        for (job, run_for) in [("short", 300), ("long", 3000)] {
            let placed = only(&scenario, &trace, TraceKind::Placed, job);
            let running = only(&scenario, &trace, TraceKind::Running, job);
            assert!(running >= placed + Millis::from_secs(180), "{job}");
            let complete = common::rows_of_job(&scenario, &trace, TraceKind::Complete, job);
            assert_eq!(complete.len(), 1, "{job}: {complete:?}");
            let ran = running + Millis::from_secs(run_for);
            let deadline = placed + Millis::from_secs(600);
            if ran < deadline {
                assert_eq!(complete[0].time, ran, "{job}");
                assert_eq!(complete[0].detail, "all tasks completed");
            } else {
                assert_eq!(complete[0].time, deadline, "{job}: not running + 10m");
                assert_eq!(complete[0].detail, TIMEOUT);
            }
        }
    }
    let naive = run_checked(&scenario, Policy::Naive, 1).trace.unwrap();
    let placed = only(&scenario, &naive, TraceKind::Running, "long");
    let complete = only(&scenario, &naive, TraceKind::Complete, "long");
    assert_eq!(
        complete,
        placed + Millis::from_secs(3000),
        "naive runs it out"
    );
}

/// A stop at the deadline kills the tasks as a stop does, but never starts
/// the poststop task: the claim goes the kill timeout after the deadline,
/// where `stop_job` of the same group also waits for the poststop task.
#[test]
fn poststop_tasks_never_start_at_the_deadline() {
    let job = |id: &str, limit: &str| {
        format!(
            "  - id: {id}
    type: batch
    groups:
      - name: g
        {limit}
        volumes: {{d: {{type: csi, source: vol-{id}}}}}
        tasks:
          - {{name: main, kill_timeout: 15s}}
          - {{name: tidy, run_for: 4m, lifecycle: {{hook: poststop}}}}
"
        )
    };
    let scenario = load(&format!(
        "horizon: 1h
nodes: [{{id: c1, csi_plugins: [{{id: p}}]}}]
plugins: [{{id: p, enforces_access_mode: true}}]
volumes:
  - {{id: vol-timed, plugin_id: p, access_mode: single-node-writer}}
  - {{id: vol-stopped, plugin_id: p, access_mode: single-node-writer}}
jobs:
{}{}events:
  - {{at: 10m, stop_job: stopped}}
",
        job("timed", "max_run_duration: 10m"),
        job("stopped", "")
    ));
    let kill = Millis::from_secs(15);
    let poststop = Millis::from_secs(240);
    for policy in ENFORCING {
        let trace = run_checked(&scenario, policy, 1).trace.unwrap();
        let timed_out = only(&scenario, &trace, TraceKind::Complete, "timed");
        let freed = only(&scenario, &trace, TraceKind::ClaimReleased, "timed");
        assert_eq!(freed, timed_out + kill + release_latency(&scenario));
        let stopped = only(&scenario, &trace, TraceKind::Stopped, "stopped");
        let freed = only(&scenario, &trace, TraceKind::ClaimReleased, "stopped");
        assert_eq!(
            freed,
            stopped + kill + poststop + release_latency(&scenario)
        );
    }
}

/// An allocation still pulling at its deadline never runs: it completes
/// there, and the claim it had not made yet is never made.
#[test]
fn an_allocation_not_yet_running_ends_at_its_deadline() {
    let scenario = load(
        r#"
horizon: 1h
cluster: {pull_delay: 5m}
nodes: [{id: c1, csi_plugins: [{id: p}]}]
plugins: [{id: p, enforces_access_mode: true}]
volumes: [{id: v, plugin_id: p, access_mode: single-node-writer}]
jobs:
  - id: slow
    type: batch
    groups:
      - name: g
        max_run_duration: 1m
        volumes: {d: {type: csi, source: v}}
        tasks: [{name: t}]
"#,
    );
    for policy in ENFORCING {
        let output = run_checked(&scenario, policy, 1);
        let trace = output.trace.unwrap();
        let placed = only(&scenario, &trace, TraceKind::Placed, "slow");
        let complete = common::rows_of_job(&scenario, &trace, TraceKind::Complete, "slow");
        assert_eq!(complete.len(), 1);
        assert_eq!(complete[0].time, placed + Millis::from_secs(60));
        assert_eq!(complete[0].detail, TIMEOUT, "no kill time: nothing ran");
        assert!(common::rows_of_job(&scenario, &trace, TraceKind::Running, "slow").is_empty());
        assert!(common::rows_of_job(&scenario, &trace, TraceKind::ClaimGranted, "slow").is_empty());
        assert_eq!(output.metrics.placed, 1, "complete: not replaced");
    }
}

/// A sysbatch group's allocations time out on every node, complete, and
/// the system scheduler does not run them again when a node comes back.
#[test]
fn sysbatch_allocations_time_out_once_per_node() {
    let scenario = load(
        r#"
horizon: 1h
nodes: [{id: "c{i}", count: 3}]
jobs:
  - id: sweep
    type: sysbatch
    groups: [{name: g, max_run_duration: 5m, tasks: [{name: t}]}]
events:
  - {at: 20m, node_down: c0}
  - {at: 30m, node_up: c0}
"#,
    );
    for policy in ENFORCING {
        let output = run_checked(&scenario, policy, 1);
        let trace = output.trace.unwrap();
        let placed = common::rows_of_job(&scenario, &trace, TraceKind::Placed, "sweep");
        let complete = common::rows_of_job(&scenario, &trace, TraceKind::Complete, "sweep");
        assert_eq!((placed.len(), complete.len()), (3, 3), "{policy:?}");
        for done in &complete {
            let on_node = placed.iter().find(|p| p.node == done.node).unwrap();
            assert_eq!(done.time, on_node.time + Millis::from_secs(300));
            assert_eq!(done.detail, TIMEOUT);
        }
        assert_eq!(output.metrics.running, 0);
    }
    let naive = run_checked(&scenario, Policy::Naive, 1);
    assert_eq!(naive.metrics.running, 2, "naive: c0's allocation was lost");
}

/// A client that cannot reach its servers at the deadline kills the tasks
/// itself; the servers learn it at the reconnect, and then only.
#[test]
fn a_deadline_while_disconnected_is_reported_at_the_reconnect() {
    let scenario = load(
        r#"
horizon: 1h
cluster: {heartbeat_grace: 30m}
nodes: [{id: c1}]
jobs:
  - id: etl
    type: batch
    groups: [{name: g, max_run_duration: 10m, tasks: [{name: t}]}]
events:
  - {at: 2m, node_disconnect: c1}
  - {at: 20m, node_reconnect: c1}
"#,
    );
    for policy in ENFORCING {
        let trace = run_checked(&scenario, policy, 1).trace.unwrap();
        let complete = common::rows_of_job(&scenario, &trace, TraceKind::Complete, "etl");
        assert_eq!(complete.len(), 1, "{policy:?}: {complete:?}");
        assert_eq!(complete[0].time, Millis::from_secs(1200));
        assert_eq!(complete[0].detail, TIMEOUT);
    }
}

/// The same with the node marked disconnected (`disconnect.lost_after`):
/// the unknown allocation is replaced on the other node, whose own deadline
/// counts from its own placement; the original is reported complete at the
/// reconnect, and the replacement is not stopped for it.
#[test]
fn an_unknown_allocation_past_its_deadline_completes_at_the_reconnect() {
    let scenario = load(
        r#"
horizon: 1h
nodes: [{id: "c{i}", count: 2}]
jobs:
  - id: etl
    type: batch
    groups:
      - name: g
        max_run_duration: 10m
        disconnect: {lost_after: 1h}
        affinity: [{attribute: "${node.unique.name}", value: c0, weight: 100}]
        tasks: [{name: t}]
events:
  - {at: 2m, node_disconnect: c0}
  - {at: 20m, node_reconnect: c0}
"#,
    );
    for policy in ENFORCING {
        let trace = run_checked(&scenario, policy, 1).trace.unwrap();
        let placed = common::rows_of_job(&scenario, &trace, TraceKind::Placed, "etl");
        assert_eq!(
            placed.len(),
            2,
            "{policy:?}: the original and its replacement"
        );
        let complete = common::rows_of_job(&scenario, &trace, TraceKind::Complete, "etl");
        assert_eq!(complete.len(), 2, "{policy:?}: {complete:?}");
        assert!(complete.iter().all(|c| c.detail == TIMEOUT));
        assert_eq!(complete[0].time, placed[1].time + Millis::from_secs(600));
        assert_eq!(complete[0].node, placed[1].node);
        assert_eq!(complete[1].time, Millis::from_secs(1200));
        assert_eq!(complete[1].node, placed[0].node);
        assert!(common::rows_of_job(&scenario, &trace, TraceKind::Stopped, "etl").is_empty());
    }
}

/// The three front ends read the same field: YAML, an HCL2 job file
/// (`max_run_duration = "90s"`) and a JSON job (`MaxRunDuration` in
/// nanoseconds, below a millisecond taken as 1ms).
#[test]
fn yaml_hcl_and_json_read_the_same_duration() {
    let dir = common::temp_dir("max-run-duration-front-ends");
    let hcl = r#"job "h" {
  type = "batch"
  group "g" {
    max_run_duration = "90s"
    task "t" { driver = "docker" }
  }
}
"#;
    let json = |id: &str, nanos: u64| {
        format!(
            r#"{{"ID": "{id}", "Type": "batch", "TaskGroups": [{{"Name": "g", "MaxRunDuration": {nanos}, "Tasks": [{{"Name": "t", "Driver": "docker"}}]}}]}}"#
        )
    };
    std::fs::write(dir.join("h.nomad.hcl"), hcl).unwrap();
    std::fs::write(dir.join("j.json"), json("j", 90_000_000_000)).unwrap();
    std::fs::write(dir.join("tiny.json"), json("tiny", 1_000)).unwrap();
    let yaml = "nodes: [{id: c1}]
jobs:
  - id: y
    type: batch
    groups: [{name: g, max_run_duration: 90s, tasks: [{name: t}]}]
  - file: h.nomad.hcl
  - file: j.json
  - file: tiny.json
";
    std::fs::write(dir.join("s.yaml"), yaml).unwrap();
    let scenario = load_file(&dir.join("s.yaml")).unwrap();
    let read: Vec<Option<Millis>> = scenario
        .jobs
        .iter()
        .map(|j| j.groups[0].max_run_duration)
        .collect();
    let ninety = Some(Millis::from_secs(90));
    assert_eq!(read, [ninety, ninety, ninety, Some(Millis(1))]);
    // --strict has nothing to refuse: the field is modelled.
    let strict = common::plansim(&["validate", "--strict", common::arg(&dir.join("s.yaml"))]);
    assert!(strict.status.success(), "{strict:?}");
}

/// Where Nomad's job validation refuses the field, every front end refuses
/// the scenario (exit 2) in Nomad's words, at the field.
#[test]
fn refusals_name_nomads_reason() {
    for (file, reason) in [
        (
            "max-run-duration-service.yaml",
            "Job type \"service\" does not allow max_run_duration",
        ),
        (
            "max-run-duration-zero.yaml",
            "MaxRunDuration must be greater than zero",
        ),
        (
            "nomad-hcl-max-run-duration-system.yaml",
            "Job type \"system\" does not allow max_run_duration",
        ),
        (
            "nomad-hcl-max-run-duration-negative.yaml",
            "MaxRunDuration must be greater than zero",
        ),
        (
            "nomad-json-max-run-duration-service.yaml",
            "Job type \"service\" does not allow max_run_duration",
        ),
        (
            "nomad-json-max-run-duration-zero.yaml",
            "MaxRunDuration must be greater than zero",
        ),
    ] {
        let path = repo_path("tests/bad").join(file);
        let output = common::plansim(&["validate", common::arg(&path)]);
        common::assert_refused(&output, &path);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(reason), "{file}: {stderr}");
    }
}

/// An allocation already running at 0s (`initial_allocations`, as an
/// import describes a live cluster) has no creation time in the scenario:
/// its deadline counts from 0s, as its `run_for` does.
#[test]
fn an_initial_allocation_counts_from_zero() {
    let scenario = load(
        r#"
horizon: 1h
nodes: [{id: c1}]
jobs:
  - id: etl
    type: batch
    groups: [{name: g, max_run_duration: 5m, tasks: [{name: t}]}]
initial_allocations:
  - {alloc: "etl.g[0]", node: c1, status: running}
"#,
    );
    for policy in ENFORCING {
        let output = run_checked(&scenario, policy, 1);
        let trace = output.trace.unwrap();
        let complete = only(&scenario, &trace, TraceKind::Complete, "etl");
        assert_eq!(complete, Millis::from_secs(300));
        assert_eq!(output.metrics.placed, 0, "complete, not replaced");
    }
}
