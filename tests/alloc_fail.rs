//! `alloc_fail`, `status: failed` initial allocations and
//! `node_down: {node_of: ...}` (issue 27, "Failing an allocation").

mod common;

use common::{load, repo_path, run_checked};
use plansim::model::policy::Policy;
use plansim::report::trace_csv;
use plansim::scenario::load_file;
use plansim::sim::trace::{TraceKind, TraceRecord};

const POLICIES: [Policy; 3] = [Policy::Naive, Policy::Validate, Policy::PlanAware];

fn rows(trace: &[TraceRecord], kind: TraceKind) -> Vec<&TraceRecord> {
    trace.iter().filter(|r| r.kind == kind).collect()
}

/// Reschedules happen when the delay function says: 1m, 2m, 4m after
/// each failure (exponential), and the batch job's one attempt is spent.
#[test]
fn alloc_fail_reschedule_times_follow_the_delay_function() {
    let scenario = load_file(&repo_path("scenarios/nomad/alloc-fail-reschedule.yaml")).unwrap();
    for policy in POLICIES {
        for seed in 0..5 {
            let output = run_checked(&scenario, policy, seed);
            let trace = output.trace.unwrap();
            let reschedules: Vec<(u64, String)> = rows(&trace, TraceKind::Placed)
                .into_iter()
                .filter(|r| r.detail.starts_with("reschedule"))
                .map(|r| {
                    (
                        r.time.0 / 1000,
                        scenario.jobs[r.group.unwrap().job.index()].name.clone(),
                    )
                })
                .collect();
            assert_eq!(
                reschedules,
                [
                    (65, "etl".to_string()),
                    (120, "web".into()),
                    (300, "web".into())
                ],
                "{policy:?} seed {seed}"
            );
            let fails = rows(&trace, TraceKind::AllocFail);
            assert_eq!(fails.len(), 6, "{policy:?}");
            let ignored: Vec<u64> = fails
                .iter()
                .filter(|r| r.detail.starts_with("ignored"))
                .map(|r| r.time.0 / 1000)
                .collect();
            assert_eq!(
                ignored,
                [240],
                "{policy:?}: the 4m alloc_fail names no live allocation"
            );
            // The node_down at 4m names no live allocation: a row without a node.
            let downs = rows(&trace, TraceKind::NodeDown);
            assert_eq!(downs.len(), 2);
            assert!(downs[0].node.is_none() && downs[0].detail.starts_with("ignored"));
            // The 7m node_down takes the node web.app[0] ran on.
            let web0_node = trace
                .iter()
                .rev()
                .find(|r| {
                    r.kind == TraceKind::Running
                        && r.alloc_index == Some(0)
                        && r.group
                            .is_some_and(|g| scenario.jobs[g.job.index()].name == "web")
                        && r.time.0 < 420_000
                })
                .and_then(|r| r.node);
            assert_eq!(downs[1].node, web0_node, "{policy:?} seed {seed}");
            assert_eq!(output.metrics.client_failures, 5);
        }
    }
}

/// A failed batch allocation with no attempt left makes no evaluation
/// (node_endpoint.go UpdateAlloc).
#[test]
fn a_failure_without_attempts_creates_no_evaluation() {
    let yaml = |attempts: u32| {
        format!(
            r#"
horizon: 5m
nodes: [{{id: c1}}]
jobs:
  - id: b
    type: batch
    groups:
      - name: g
        reschedule: {{attempts: {attempts}, interval: 24h, delay: 5s, delay_function: constant, unlimited: false}}
        tasks: [{{name: t, run_for: 1h}}]
events:
  - {{at: 1m, alloc_fail: "b.g[0]"}}
"#
        )
    };
    let none = run_checked(&load(&yaml(0)), Policy::Naive, 1).metrics;
    let one = run_checked(&load(&yaml(1)), Policy::Naive, 1).metrics;
    assert_eq!((none.reschedules, one.reschedules), (0, 1));
    // Registration only, against registration + the failure's + the follow-up's.
    assert_eq!(none.evals, 1);
    assert_eq!(one.evals, 3);
}

/// A failed initial allocation holds nothing and is rescheduled by the
/// first evaluation per its policy: batch 5s, service 30s.
#[test]
fn initial_failed_allocations_are_rescheduled_after_their_delay() {
    let scenario = load_file(&repo_path("scenarios/nomad/initial-failed-allocation.yaml")).unwrap();
    for policy in POLICIES {
        let output = run_checked(&scenario, policy, 3);
        let trace = output.trace.unwrap();
        let failed = rows(&trace, TraceKind::Failed);
        assert_eq!(failed.len(), 2);
        assert!(
            failed
                .iter()
                .all(|r| r.time.0 == 0 && r.detail == "initial allocation")
        );
        let placed: Vec<(u64, &str)> = rows(&trace, TraceKind::Placed)
            .into_iter()
            .map(|r| {
                let node = &scenario.nodes[r.node.unwrap().index()].name;
                (r.time.0 / 1000, node.as_str())
            })
            .collect();
        assert_eq!(placed.len(), 2, "{policy:?}");
        assert_eq!(placed[0].0, 5, "the batch reschedule");
        assert_eq!(placed[1], (30, "client-1"), "the service reschedule");
        assert_eq!(output.metrics.client_failures, 0);
        assert_eq!(output.metrics.running, 3);
    }
}

/// Names the loader refuses, with file:line:column.
#[test]
fn bad_names_are_refused_with_a_position() {
    let refused = |yaml: &str| {
        plansim::scenario::load_str(yaml, "t.yaml", "t")
            .expect_err("refused")
            .to_string()
    };
    let before_submission = refused(
        r#"
jobs:
  - {id: web, submit_at: 10m, groups: [{name: app, tasks: [{name: t}]}]}
events:
  - {at: 5m, alloc_fail: "web.app[0]"}
"#,
    );
    assert!(
        before_submission.starts_with("t.yaml:5:")
            && before_submission
                .contains("events[0].alloc_fail: at 300.000s job \"web\" is not submitted yet"),
        "{before_submission}"
    );
    let no_job = refused(
        r#"
jobs:
  - {id: web, groups: [{name: app, tasks: [{name: t}]}]}
events:
  - {at: 5m, node_down: {node_of: "db.app[0]"}}
"#,
    );
    assert!(
        no_job.starts_with("t.yaml:5:")
            && no_job.contains(
                "events[0].node_down.node_of: no job and group under jobs match \"db.app\""
            ),
        "{no_job}"
    );
}

/// Same inputs and seed, same trace bytes.
#[test]
fn runs_are_deterministic() {
    for file in [
        "alloc-fail-reschedule.yaml",
        "initial-failed-allocation.yaml",
    ] {
        let scenario = load_file(&repo_path(&format!("scenarios/nomad/{file}"))).unwrap();
        for policy in POLICIES {
            let render =
                || trace_csv::render(&scenario, &run_checked(&scenario, policy, 9).trace.unwrap());
            assert_eq!(render(), render(), "{file} {policy:?}");
        }
    }
}
