//! How each policy treats the same small cluster: feasibility, the server's
//! claim check, registration validation, the plugin and claim release.

mod common;

use plansim::model::policy::Policy;
use plansim::sim::trace::TraceKind;

/// A cluster of `nodes` nodes running plugin `csi` (enforcing or not), one
/// volume `vol` with `mode`, and the given jobs YAML appended.
fn cluster(nodes: u32, enforcing: bool, mode: &str, jobs: &str) -> String {
    format!(
        "nodes:\n  - {{id: \"n{{i}}\", count: {nodes}, csi_plugins: [{{id: csi}}]}}\n\
         plugins:\n  - {{id: csi, enforces_access_mode: {enforcing}}}\n\
         volumes:\n  - {{id: vol, plugin_id: csi, access_mode: {mode}}}\n{jobs}"
    )
}

fn job(id: &str, count: u32, read_only: bool, extra: &str) -> String {
    format!(
        "  - id: {id}\n{extra}    groups:\n      - name: g\n        count: {count}\n\
         \x20       volumes: {{v: {{type: csi, source: vol, read_only: {read_only}}}}}\n\
         \x20       tasks: [{{name: t}}]\n"
    )
}

fn details(output: &plansim::sim::RunOutput, kind: TraceKind) -> Vec<String> {
    output
        .trace
        .as_ref()
        .unwrap()
        .iter()
        .filter(|r| r.kind == kind)
        .map(|r| r.detail.clone())
        .collect()
}

#[test]
fn naive_ignores_readers_plan_aware_counts_the_plan() {
    let yaml = cluster(
        3,
        false,
        "single-node-reader-only",
        &format!("jobs:\n{}", job("j", 2, true, "")),
    );
    let scenario = common::load(&yaml);
    let naive = common::run_checked(&scenario, Policy::Naive, 0);
    assert_eq!((naive.metrics.placed, naive.metrics.violations), (2, 1));
    let aware = common::run_checked(&scenario, Policy::PlanAware, 0);
    assert_eq!((aware.metrics.placed, aware.metrics.infeasible), (1, 1));
    assert_eq!(
        details(&aware, TraceKind::Infeasible),
        ["CSI volume vol is unschedulable or has exhausted its available reader claims"]
    );
}

#[test]
fn naive_skips_same_job_writers_but_not_other_jobs() {
    // Same job, count 2: naive places both writers.
    let same = common::load(&cluster(
        2,
        false,
        "single-node-writer",
        &format!("jobs:\n{}", job("j", 2, false, "")),
    ));
    assert_eq!(
        common::run_checked(&same, Policy::Naive, 0).metrics.placed,
        2
    );
    // Another job, submitted once the first holds its claim: naive refuses it.
    let jobs = format!(
        "jobs:\n{}{}",
        job("a", 1, false, ""),
        job("b", 1, false, "    submit_at: 1m\n")
    );
    let other = common::load(&cluster(2, false, "single-node-writer", &jobs));
    let naive = common::run_checked(&other, Policy::Naive, 0);
    assert_eq!((naive.metrics.placed, naive.metrics.infeasible), (1, 1));
    assert_eq!(
        details(&naive, TraceKind::Infeasible),
        ["CSI volume vol has exhausted its available writer claims"]
    );
}

#[test]
fn writers_are_refused_on_reader_only_volumes_by_every_policy() {
    // A read-write request in a reader-only mode fails job validation at
    // every pinned release (VolumeRequest.Validate, since 1.1.0).
    let scenario = common::load(&cluster(
        2,
        true,
        "multi-node-reader-only",
        &format!("jobs:\n{}", job("j", 1, false, "")),
    ));
    for policy in Policy::ALL {
        let output = common::run_checked(&scenario, policy, 0);
        assert_eq!(
            (output.metrics.placed, output.metrics.rejected_jobs),
            (0, 1),
            "{policy}"
        );
        assert_eq!(
            details(&output, TraceKind::JobRejected),
            ["task group g volume v: multi-node-reader-only volumes must be read-only"]
        );
    }
    // A request in a writer mode passes validation; the scheduler then finds
    // the volume, whose capabilities are reader-only, not write-schedulable.
    let yaml = "\
nodes:
  - {id: n, csi_plugins: [{id: csi}]}
plugins:
  - {id: csi, enforces_access_mode: true}
volumes:
  - id: vol
    plugin_id: csi
    capabilities: [{access_mode: multi-node-reader-only, attachment_mode: file-system}]
jobs:
  - id: j
    groups:
      - name: g
        volumes: {v: {type: csi, source: vol, access_mode: single-node-writer, attachment_mode: file-system}}
        tasks: [{name: t}]
";
    let scenario = common::load(yaml);
    for policy in Policy::ALL {
        let output = common::run_checked(&scenario, policy, 0);
        assert_eq!(output.metrics.placed, 0, "{policy}");
        assert_eq!(
            details(&output, TraceKind::Infeasible),
            ["CSI volume vol is unschedulable or is read-only"],
            "{policy}"
        );
    }
}

#[test]
fn registration_validation_targets_exclusive_volumes_only() {
    let rejected = |mode: &str, count: u32, read_only: bool| {
        let scenario = common::load(&cluster(
            3,
            true,
            mode,
            &format!("jobs:\n{}", job("j", count, read_only, "")),
        ));
        common::run_checked(&scenario, Policy::Validate, 0)
            .metrics
            .rejected_jobs
            == 1
    };
    assert!(rejected("single-node-reader-only", 2, true));
    assert!(rejected("single-node-writer", 2, false));
    assert!(rejected("multi-node-single-writer", 2, false));
    assert!(!rejected("multi-node-single-writer", 2, true));
    assert!(!rejected("multi-node-reader-only", 3, true));
    assert!(!rejected("single-node-writer", 1, false));
    // Only validate checks registration.
    let scenario = common::load(&cluster(
        3,
        true,
        "single-node-writer",
        &format!("jobs:\n{}", job("j", 2, false, "")),
    ));
    for policy in [Policy::Naive, Policy::PlanAware] {
        assert_eq!(
            common::run_checked(&scenario, policy, 0)
                .metrics
                .rejected_jobs,
            0
        );
    }
}

/// A multi-node-single-writer volume: one job reads, another job writes, a
/// third job wants to write too. Under validate the scheduler (naive view)
/// places the second writer, and the server refuses its claim, retrying.
#[test]
fn second_writer_is_refused_at_claim_time_under_validate() {
    let jobs = format!(
        "jobs:\n{}{}{}",
        job("reader", 1, true, ""),
        job("writer-a", 1, false, ""),
        job("writer-b", 1, false, "")
    );
    let scenario = common::load(&format!(
        "cluster: {{scheduler_workers: 2}}\n{}",
        cluster(3, true, "multi-node-single-writer", &jobs)
    ));
    let validate = common::run_checked(&scenario, Policy::Validate, 0);
    assert!(validate.metrics.claim_failures >= 1);
    assert!(
        details(&validate, TraceKind::ClaimRejected)
            .iter()
            .all(|d| d == "volume max claims reached")
    );
    assert_eq!(validate.metrics.violations, 0);
    let aware = common::run_checked(&scenario, Policy::PlanAware, 0);
    assert_eq!(
        (aware.metrics.claim_failures, aware.metrics.violations),
        (0, 0)
    );
    assert_eq!(aware.metrics.running, 2);
}

#[test]
fn enforcing_plugin_fails_the_allocation_and_it_is_rescheduled() {
    let scenario = common::load(&cluster(
        3,
        true,
        "single-node-writer",
        &format!("jobs:\n{}", job("j", 2, false, "")),
    ));
    let naive = common::run_checked(&scenario, Policy::Naive, 0);
    assert!(naive.metrics.client_failures >= 1);
    assert!(naive.metrics.reschedules >= 1);
    assert_eq!(naive.metrics.violations, 0);
    assert!(
        details(&naive, TraceKind::ClaimRejected)[0].starts_with("plugin csi refused to publish")
    );
}

#[test]
fn batch_allocation_failing_twice_is_rescheduled_once() {
    let batch = job("j", 2, false, "    type: batch\n");
    let scenario = common::load(&cluster(
        3,
        true,
        "single-node-writer",
        &format!("jobs:\n{batch}"),
    ));
    let naive = common::run_checked(&scenario, Policy::Naive, 0);
    assert_eq!(naive.metrics.client_failures, 2);
    assert_eq!(naive.metrics.reschedules, 1);
}

#[test]
fn claims_are_held_until_released_after_the_allocation_stops() {
    // Job a stops at 1m (its stop is applied with the plan, 10ms of scheduler
    // latency later); b (another job) arrives at 1m too and must wait for the
    // node detach (1s) and controller detach (2s) before it can claim.
    let jobs = format!(
        "jobs:\n{}{}",
        job("a", 1, false, ""),
        job("b", 1, false, "    submit_at: 1m\n")
    );
    let yaml = format!(
        "{}events:\n  - {{at: 1m, stop_job: a}}\n",
        cluster(2, true, "single-node-writer", &jobs)
    );
    let scenario = common::load(&yaml);
    for policy in Policy::ALL {
        let output = common::run_checked(&scenario, policy, 0);
        let trace = output.trace.as_ref().unwrap();
        let released = trace
            .iter()
            .find(|r| r.kind == TraceKind::ClaimReleased)
            .expect("released")
            .time;
        assert_eq!(
            released.0, 63_010,
            "{policy}: stop at 60.01s + 1s node detach + 2s controller detach"
        );
        let placed_b: Vec<_> = trace
            .iter()
            .filter(|r| r.kind == TraceKind::Placed && r.job == Some(plansim::model::ids::JobId(1)))
            .collect();
        assert!(
            placed_b.iter().all(|r| r.time >= released),
            "{policy}: b placed before the release"
        );
        // b was blocked while a's claim was held; the release unblocks
        // nothing in Nomad (fsm.go), only under plan-aware's fix.
        let expected = u64::from(policy == Policy::PlanAware);
        assert_eq!(output.metrics.running, expected, "{policy}");
        assert_eq!(output.metrics.violations, 0, "{policy}");
    }
}

#[test]
fn node_checks_report_nomads_reasons() {
    let yaml = "\
nodes:
  - {id: no-plugin}
  - {id: sick, csi_plugins: [{id: csi, healthy: false}]}
  - {id: full, topology: {zone: a}, csi_plugins: [{id: csi, max_volumes: 1}]}
  - {id: elsewhere, topology: {zone: b}, csi_plugins: [{id: csi}]}
plugins:
  - {id: csi, enforces_access_mode: true}
volumes:
  - {id: other, plugin_id: csi, access_mode: single-node-writer}
  - {id: vol, plugin_id: csi, access_mode: single-node-writer, topologies: [{zone: a}]}
jobs:
  - id: hog
    constraints: [{attribute: \"${node.unique.name}\", value: full}]
    groups:
      - {name: g, volumes: {v: {type: csi, source: other}}, tasks: [{name: t}]}
  - id: j
    submit_at: 1m
    groups:
      - {name: g, volumes: {v: {type: csi, source: vol}}, tasks: [{name: t}]}
";
    let scenario = common::load(yaml);
    let output = common::run_checked(&scenario, Policy::PlanAware, 0);
    assert_eq!(output.metrics.running, 1);
    // Every node is excluded, each for its own reason; the trace names the
    // reason shared by most nodes (ties: the first in Nomad's check order).
    assert_eq!(
        details(&output, TraceKind::Infeasible),
        ["CSI plugin csi is missing from client no-plugin"]
    );
    let [failure] = output.placement_failures.as_slice() else {
        panic!("one group failed: {:?}", output.placement_failures);
    };
    let reasons: Vec<&str> = failure
        .metric
        .constraint_filtered
        .iter()
        .map(|(text, nodes)| {
            assert_eq!(*nodes, 1, "{text}");
            text.as_str()
        })
        .collect();
    assert_eq!(
        reasons,
        [
            "CSI plugin csi is missing from client no-plugin",
            "CSI plugin csi is unhealthy on client sick",
            "CSI plugin csi has the maximum number of volumes on client full",
            "did not meet topology requirement",
        ]
    );
}

/// Nomad counts only volumes already claimed on a node against the plugin's
/// `max_volumes`, so one plan can put two new volumes on a node that takes
/// one; an enforcing plugin then refuses the second attach. Plan-aware also
/// counts the plan and allocations that have not claimed yet.
#[test]
fn one_plan_cannot_overfill_a_node_under_plan_aware() {
    let yaml = "\
nodes:
  - {id: only, csi_plugins: [{id: csi, max_volumes: 1}]}
plugins:
  - {id: csi, enforces_access_mode: true}
volumes:
  - {id: \"disk[{i}]\", count: 2, plugin_id: csi, access_mode: single-node-writer}
jobs:
  - id: j
    groups:
      - {name: g, count: 2, volumes: {d: {type: csi, source: disk, per_alloc: true}}, tasks: [{name: t}]}
";
    let scenario = common::load(yaml);
    let naive = common::run_checked(&scenario, Policy::Naive, 0);
    assert!(naive.metrics.placed >= 2);
    assert!(
        details(&naive, TraceKind::ClaimRejected)[0]
            .contains("already has 1 of its volumes attached (max_volumes)")
    );
    let aware = common::run_checked(&scenario, Policy::PlanAware, 0);
    assert_eq!(
        (
            aware.metrics.placed,
            aware.metrics.infeasible,
            aware.metrics.claim_failures
        ),
        (1, 1, 0)
    );
    assert_eq!(
        details(&aware, TraceKind::Infeasible),
        ["CSI plugin csi has the maximum number of volumes on client only"]
    );
}

/// Nomad's `scheduler_algorithm`: binpack fills a node before the next;
/// spread puts single allocations of different jobs on different nodes.
#[test]
fn spread_and_binpack_choose_different_nodes() {
    let jobs: String = (0..4)
        .map(|i| format!("  - {{id: j{i}, submit_at: {i}s, groups: [{{name: g, tasks: [{{name: t, cpu: 1000, memory: 1024}}]}}]}}\n"))
        .collect();
    let nodes = |algorithm: &str| {
        format!(
            "cluster: {{scheduler_algorithm: {algorithm}}}\nnodes:\n  - {{id: \"n{{i}}\", count: 4}}\njobs:\n{jobs}"
        )
    };
    // Nomad scores only max(2, ceil(log2 n)) nodes per placement, so spread
    // is not perfect: compare the nodes used over many seeds.
    let distinct_nodes = |yaml: &str| -> usize {
        let scenario = common::load(yaml);
        (0..20)
            .map(|seed| {
                let output = common::run_checked(&scenario, Policy::PlanAware, seed);
                let mut nodes: Vec<_> = output
                    .trace
                    .unwrap()
                    .iter()
                    .filter(|r| r.kind == TraceKind::Placed)
                    .map(|r| r.node)
                    .collect();
                nodes.sort();
                nodes.dedup();
                nodes.len()
            })
            .sum()
    };
    let (spread, binpack) = (
        distinct_nodes(&nodes("spread")),
        distinct_nodes(&nodes("binpack")),
    );
    assert!(
        spread >= binpack + 10,
        "spread used {spread} nodes over 20 seeds, binpack {binpack}"
    );
}

/// Times far beyond the horizon (a 60-day task, a 100-day claim deadline)
/// are never queued, so they cannot overflow the event queue's range.
#[test]
fn far_future_events_past_the_horizon_are_harmless() {
    let yaml = "\
horizon: 30d
cluster: {claim_retry_deadline: 100d}
nodes:
  - {id: n, csi_plugins: [{id: csi}]}
plugins:
  - {id: csi, enforces_access_mode: true}
volumes:
  - {id: v, plugin_id: csi, access_mode: single-node-writer}
jobs:
  - {id: long, type: batch, groups: [{name: g, count: 2, volumes: {d: {type: csi, source: v}}, tasks: [{name: t, run_for: 60d}]}]}
";
    let scenario = common::load(yaml);
    for policy in Policy::ALL {
        let output = common::run_checked(&scenario, policy, 0);
        let accepted = output.metrics.rejected_jobs == 0;
        assert_eq!(accepted, policy != Policy::Validate, "{policy}");
        assert_eq!(output.metrics.placed >= 1, accepted, "{policy}");
    }
}

/// The event cap stops a run and says so, instead of hanging.
#[test]
fn a_run_past_the_event_cap_stops_and_says_why() {
    let scenario = common::load(&cluster(
        3,
        true,
        "single-node-writer",
        &format!("jobs:\n{}", job("j", 2, false, "")),
    ));
    let capped = plansim::sim::RunOptions {
        max_events: 5,
        ..plansim::sim::RunOptions::new(Policy::Naive, 0)
    };
    let output = plansim::sim::simulate(&scenario, capped);
    let why = output.stopped_early.expect("the cap was hit");
    assert!(
        why.contains("stopped after 5 events") && why.contains("MAX_RUN_EVENTS"),
        "{why}"
    );
    let whole = common::run_checked(&scenario, Policy::Naive, 0);
    assert!(whole.stopped_early.is_none());
    assert!(whole.metrics.events > output.metrics.events);
}

/// Nomad's stack runs job constraints, then the group's drivers, then the
/// group's constraints (scheduler/stack.go NewGenericStack), caching the
/// result per computed class for the evaluation: a later node of a class
/// that already failed is "computed class ineligible".
#[test]
fn checks_run_in_nomads_order_and_are_cached_per_class() {
    let yaml = "\
nodes:
  - {id: a, drivers: [exec], attributes: {rack: r1}}
  - {id: b, drivers: [exec], attributes: {rack: r2}}
  - {id: \"same-{i}\", count: 2, drivers: [docker], attributes: {rack: r2}}
jobs:
  - id: j
    constraints: [{attribute: rack, value: r2}]
    groups:
      - name: g
        constraints: [{attribute: rack, value: r9}]
        tasks: [{name: t, driver: docker}]
";
    let scenario = common::load(yaml);
    for policy in Policy::ALL {
        let output = common::run_checked(&scenario, policy, 0);
        let failure = &output.placement_failures[0];
        let mut reasons: Vec<(String, u32)> = failure.metric.constraint_filtered.clone();
        reasons.sort();
        assert_eq!(
            reasons,
            [
                // a: the job constraint fails first.
                ("rack = r2".to_string(), 1),
                // b passes the job constraint; its driver fails before the
                // group constraint would.
                ("missing drivers".to_string(), 1),
                // The first same-* node fails the group constraint ...
                ("rack = r9".to_string(), 1),
                // ... and the second shares its class.
                ("computed class ineligible".to_string(), 1),
            ]
            .into_iter()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>(),
            "{policy}"
        );
    }
}

/// A claim on a down node waits for the claim GC (every 5m): 2.0.5 skips the
/// node detach and frees it after the controller detach; 1.2.6's node detach
/// fails until the node GC, 24h after the node went down (and a 2h
/// threshold here lets the node GC happen within the run).
#[test]
fn down_node_claims_wait_for_claim_gc_or_node_gc() {
    let release_time = |settings: &str, policy: Policy| {
        let jobs = format!("jobs:\n{}", job("j", 1, false, ""));
        let yaml = format!(
            "horizon: 4h\ncluster: {{{settings}}}\n{}events:\n  - {{at: 7m, node_down: n0}}\n",
            cluster(1, true, "single-node-writer", &jobs)
        );
        let output = common::run_checked(&common::load(&yaml), policy, 0);
        output
            .trace
            .unwrap()
            .iter()
            .find(|r| r.kind == TraceKind::ClaimReleased)
            .map(|r| r.time.0)
    };
    // 2.0.5: the GC pass at 10m frees it after the 2s controller detach.
    for policy in [Policy::Validate, Policy::PlanAware] {
        assert_eq!(release_time("", policy), Some(602_000), "{policy}");
    }
    // 1.2.6: never within the run with Nomad's 24h node GC threshold ...
    assert_eq!(release_time("", Policy::Naive), None);
    // ... and at the first claim GC pass after the node GC with a 1h one:
    // down at 7m, node GC eligible at 1h7m, node GC tick at 1h10m, claim GC
    // tick at 1h10m, plus the controller detach.
    assert_eq!(
        release_time("node_gc_threshold: 1h", Policy::Naive),
        Some(4_202_000)
    );
}
