//! `plansim explain`: the first divergence of decisions, told right on the
//! committed scenarios and on held-out ones written here (drain, node
//! down, scale), in text and JSON, and exit codes.

mod common;

use plansim::explain::{Explanation, explain};
use plansim::model::policy::Policy;
use plansim::model::time::Millis;
use plansim::scenario::load_file;
use plansim::sim::{RunOptions, simulate};

fn scenario(name: &str) -> plansim::model::scenario::Scenario {
    load_file(&common::repo_path(&format!("scenarios/{name}.yaml"))).unwrap()
}

fn explained(name: &str, baseline: Policy, candidate: Policy) -> Explanation {
    let s = scenario(name);
    explain(&s, baseline, candidate, s.seed).unwrap()
}

fn text(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn seed_scenario_names_the_allocation_volume_decisions_and_window() {
    let output = common::plansim(&["explain", "scenarios/csi-single-reader-count2.yaml"]);
    assert_eq!(output.status.code(), Some(0));
    // Wrapped lines joined, so phrases can be looked for whole.
    let narrative = text(&output).replace("\n      ", " ");
    // The window's start follows from the naive run's own metrics: it lasts
    // to the horizon, so it starts violation_seconds before it.
    let s = scenario("csi-single-reader-count2");
    let naive = simulate(&s, RunOptions::new(Policy::Naive, s.seed)).metrics;
    let from = s.horizon - naive.violation_time;
    for needed in [
        "First divergence at 0.000 s: placing example.cache[1]".to_string(),
        "naive placed example.cache[1] on client-".to_string(),
        "plan-aware did not place example.cache[1]".to_string(),
        "earlier placements in this plan: 1 reader (example.cache[0] (read))".to_string(),
        "reason: CSI volume test-volume0 is unschedulable or has exhausted its available reader claims".to_string(),
        format!(
            "test-volume0 in violation from {from} s to the end of the run ({} s)",
            s.horizon
        ),
        format!(
            "violation_seconds  {} -> 0.000",
            naive.violation_time
        ),
    ] {
        assert!(narrative.contains(&needed), "missing {needed:?} in:\n{narrative}");
    }
}

#[test]
fn json_carries_the_same_content() {
    let output = common::plansim(&[
        "explain",
        "scenarios/csi-single-reader-count2.yaml",
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let d = &json["divergence"];
    assert_eq!(d["kind"], "placement");
    assert_eq!(d["subject"], "example.cache[1]");
    assert_eq!(d["baseline"]["policy"], "naive");
    assert_eq!(d["baseline"]["outcome"], "placed");
    assert_eq!(d["candidate"]["outcome"], "not_placed");
    let window = &d["baseline"]["violation_windows"][0];
    assert_eq!(window["volume"], "test-volume0");
    assert_eq!(window["until_end"], true);
    assert!(
        d["candidate"]["violation_windows"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let metrics: Vec<&str> = json["metric_differences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap())
        .collect();
    assert!(metrics.contains(&"violations") && metrics.contains(&"violation_seconds"));
}

#[test]
fn policies_that_agree_say_so() {
    let output = common::plansim(&[
        "explain",
        "scenarios/per-alloc-enough-volumes.yaml",
        "--candidate",
        "validate",
    ]);
    assert_eq!(output.status.code(), Some(0));
    assert!(
        text(&output).contains("The policies never diverge"),
        "{}",
        text(&output)
    );
    let output = common::plansim(&[
        "explain",
        "scenarios/per-alloc-enough-volumes.yaml",
        "--format",
        "json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(json["divergence"].is_null());
}

#[test]
fn bad_input_exits_2() {
    for args in [
        vec!["explain", "scenarios/no-such-file.yaml"],
        vec!["explain", "tests/bad/bad-access-mode.yaml"],
        vec![
            "explain",
            "scenarios/csi-single-reader-count2.yaml",
            "--baseline",
            "nomad",
        ],
        vec![
            "explain",
            "scenarios/csi-single-reader-count2.yaml",
            "--format",
            "xml",
        ],
    ] {
        let output = common::plansim(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(!String::from_utf8_lossy(&output.stderr).contains("panicked"));
    }
}

#[test]
fn registration_rejection_is_a_divergence() {
    let e = explained("csi-single-reader-count2", Policy::Naive, Policy::Validate);
    let d = e.divergence.unwrap();
    assert_eq!((d.kind, d.subject.as_str()), ("registration", "example"));
    assert_eq!(
        (d.baseline.outcome, d.candidate.outcome),
        ("accepted", "rejected")
    );
    assert!(
        d.candidate
            .reason
            .unwrap()
            .contains("allows only one reader")
    );
    // What followed under naive: both allocations placed, then the violation.
    assert!(
        d.baseline
            .consequences
            .iter()
            .any(|s| s.what == "example.cache[1] placed on client-2"
                || s.what.starts_with("example.cache[1] placed on"))
    );
    assert_eq!(d.baseline.violation_windows.len(), 1);
}

#[test]
fn a_refused_claim_that_fails_versus_one_that_retries() {
    // Both servers refuse the second writer; the 1.2 client fails the
    // allocation, the 1.3+ client retries: that is where they part.
    let e = explained(
        "multi-node-single-writer-second-writer",
        Policy::Naive,
        Policy::Validate,
    );
    let d = e.divergence.unwrap();
    assert_eq!(d.kind, "claim");
    assert_eq!(d.volume.as_deref(), Some("events"));
    assert_eq!(
        (d.baseline.outcome, d.candidate.outcome),
        ("refused_alloc_fails", "refused_client_retries")
    );
    assert!(
        d.baseline.saw[0].contains("ingest-a.write[0] (write)"),
        "{:?}",
        d.baseline.saw
    );
}

#[test]
fn node_down_replacement_double_writes_under_naive() {
    let e = explained("node-failure-slow-detach", Policy::Naive, Policy::PlanAware);
    let d = e.divergence.unwrap();
    assert_eq!(
        (d.kind, d.subject.as_str()),
        ("placement", "ledger.writer[0]")
    );
    assert_eq!(
        (d.baseline.outcome, d.candidate.outcome),
        ("placed", "not_placed")
    );
    // The claim the replacement ran into is its lost predecessor's.
    assert!(
        d.candidate.saw[0].contains("held by the allocation this one replaces"),
        "{:?}",
        d.candidate.saw
    );
    let window = &d.baseline.violation_windows[0];
    // Nomad 1.2.6 cannot node-detach from a down node: the claim is freed
    // only by the node GC (24 h), past this run's horizon.
    assert!(window.until_end, "the node GC, past the horizon, ends it");
    let naive = simulate(
        &scenario("node-failure-slow-detach"),
        RunOptions::new(Policy::Naive, 4),
    );
    assert_eq!(window.to - window.from, naive.metrics.violation_time);
}

#[test]
fn scale_up_diverges_when_the_scale_lands() {
    let s = scenario("scale-up-bypasses-validation");
    let scaled_at = s.events[0].at;
    let e = explain(&s, Policy::Naive, Policy::PlanAware, s.seed).unwrap();
    let d = e.divergence.unwrap();
    assert_eq!(d.time_s, scaled_at.to_string());
    assert_eq!(d.subject, "app.web[1]");
    // Validate's scheduler is naive's: they part at the server's claim check.
    let e = explain(&s, Policy::Naive, Policy::Validate, s.seed).unwrap();
    let d = e.divergence.unwrap();
    assert_eq!(
        (d.kind, d.baseline.outcome, d.candidate.outcome),
        ("claim", "granted", "refused_client_retries")
    );
}

#[test]
fn concurrent_workers_meet_the_plan_applier() {
    let e = explained(
        "two-jobs-race-two-workers",
        Policy::Naive,
        Policy::PlanAware,
    );
    let d = e.divergence.unwrap();
    assert_eq!(
        (d.baseline.outcome, d.candidate.outcome),
        ("placed", "plan_rejected")
    );
    assert!(d.candidate.check.iter().any(|c| c.contains("plan applier")));
}

/// A writer on a single-node-writer volume, on two nodes.
const DRAIN_BASE: &str = r#"
horizon: 10m
nodes:
  - {id: "n{i}", count: 2, csi_plugins: [{id: p}]}
plugins: [{id: p, enforces_access_mode: false}]
volumes: [{id: disk, plugin_id: p, access_mode: single-node-writer}]
jobs:
  - id: db
    groups:
      - name: main
        volumes: {d: {type: csi, source: disk}}
        tasks: [{name: t}]
events:
  - {at: 1m, node_drain: n0}
"#;

/// A held-out drain: the migrated writer's old claim is still being
/// released when its replacement is placed.
#[test]
fn drain_migration_is_explained() {
    let one_drain = common::load(DRAIN_BASE);
    // Draining both nodes leaves the replacement nowhere to go until n0 is back.
    let s = common::load(&format!(
        "{DRAIN_BASE}  - {{at: 1m, node_drain: n1}}\n  - {{at: 2m, node_up: n0}}\n"
    ));
    let placed_on_n0 = simulate(
        &one_drain,
        RunOptions {
            trace: true,
            ..RunOptions::new(Policy::Naive, 0)
        },
    )
    .trace
    .unwrap()
    .iter()
    .any(|r| r.kind == plansim::sim::trace::TraceKind::Placed && r.node.is_some_and(|n| n.0 == 0));
    assert!(
        placed_on_n0,
        "seed 0 starts the writer on n0, which the drain moves"
    );
    let e = explain(&one_drain, Policy::Naive, Policy::PlanAware, 0).unwrap();
    let text = plansim::explain::render_text(&e);
    let d = e.divergence.expect("the migration diverges");
    assert_eq!(d.time_s, "60.000", "{text}");
    assert_eq!((d.kind, d.subject.as_str()), ("placement", "db.main[0]"));
    assert_eq!(
        (d.baseline.outcome, d.candidate.outcome),
        ("placed", "not_placed")
    );
    assert!(
        d.candidate.saw[0].contains("held by the allocation this one replaces"),
        "{text}"
    );
    // Under naive the old claim is freed after the new one was granted:
    // the chain must not mistake it for the new allocation's.
    assert!(
        text.contains("db.main[0]'s claim on disk freed (the claim of the allocation it replaced)"),
        "{text}"
    );
    let e = explain(&one_drain, Policy::Naive, Policy::Validate, 0).unwrap();
    let d = e.divergence.unwrap();
    assert_eq!(
        (d.kind, d.baseline.outcome, d.candidate.outcome),
        ("claim", "granted", "refused_client_retries")
    );
    // Draining both: nothing to compare beyond the one allocation.
    for candidate in [Policy::PlanAware, Policy::Validate] {
        let e = explain(&s, Policy::Naive, candidate, s.seed).unwrap();
        if let Some(d) = e.divergence {
            assert_eq!(d.subject, "db.main[0]");
        }
    }
}

/// Swapping baseline and candidate finds the same divergence, with the
/// sides swapped, on every committed scenario, pair of policies and a few
/// seeds; and runs that never diverge have the same metrics.
#[test]
fn divergence_is_symmetric_everywhere() {
    let pairs = [
        (Policy::Naive, Policy::PlanAware),
        (Policy::Naive, Policy::Validate),
        (Policy::Validate, Policy::PlanAware),
    ];
    for file in common::scenario_files() {
        let s = load_file(&file).unwrap();
        for seed in [s.seed, 1, 2] {
            for (a, b) in pairs {
                let ab = explain(&s, a, b, seed).unwrap();
                let ba = explain(&s, b, a, seed).unwrap();
                let name = format!("{} {a} vs {b} seed {seed}", s.name);
                match (&ab.divergence, &ba.divergence) {
                    (Some(x), Some(y)) => {
                        assert_eq!(
                            (&x.time_s, &x.subject, x.kind),
                            (&y.time_s, &y.subject, y.kind),
                            "{name}"
                        );
                        assert_eq!(x.baseline.outcome, y.candidate.outcome, "{name}");
                        assert_eq!(x.candidate.outcome, y.baseline.outcome, "{name}");
                    }
                    (None, None) => {
                        let run = |p| simulate(&s, RunOptions::new(p, seed)).metrics;
                        assert_eq!(run(a), run(b), "{name}: same decisions, different metrics");
                    }
                    _ => panic!("{name}: divergence found one way only"),
                }
            }
        }
    }
}

#[test]
fn the_window_is_never_before_the_divergence() {
    for file in common::scenario_files() {
        let s = load_file(&file).unwrap();
        let e = explain(&s, Policy::Naive, Policy::PlanAware, s.seed).unwrap();
        if let Some(d) = e.divergence {
            for w in d
                .baseline
                .violation_windows
                .iter()
                .chain(&d.candidate.violation_windows)
            {
                assert!(w.to > d.at && w.to <= s.horizon, "{}", s.name);
                assert!(w.from < w.to || w.from == w.to && w.to == Millis::ZERO);
            }
        }
    }
}

#[test]
fn canary_divergence_follows_the_deployment_in_each_run() {
    let e = explained("canary-per-alloc", Policy::Naive, Policy::Validate);
    let d = e.divergence.expect("the canary's claim diverges");
    assert_eq!(d.kind, "claim");
    assert_eq!(d.subject, "db.pg[0]");
    let events = |side: &plansim::explain::SideDecision| -> Vec<&str> {
        side.consequences.iter().map(|s| s.event).collect()
    };
    // Naive grants the canary's claim: the watcher promotes it and the
    // deployment succeeds; validate refuses it: the deployment fails at
    // its progress deadline and reverts.
    let naive = events(&d.baseline);
    assert!(naive.contains(&"deployment_promoted"), "{naive:?}");
    assert!(naive.contains(&"deployment_succeeded"), "{naive:?}");
    let validate = events(&d.candidate);
    assert!(validate.contains(&"deployment_failed"), "{validate:?}");
    assert!(validate.contains(&"deployment_reverted"), "{validate:?}");
    assert!(!validate.contains(&"deployment_promoted"), "{validate:?}");
    // Under plan-aware the canary itself is the divergence, told as one.
    let e = explained("canary-per-alloc", Policy::Naive, Policy::PlanAware);
    let d = e.divergence.expect("the canary's placement diverges");
    assert_eq!(d.kind, "placement");
    assert!(
        d.baseline.decided.contains("a canary"),
        "{}",
        d.baseline.decided
    );
    assert_eq!(d.candidate.outcome, "not_placed");
}
