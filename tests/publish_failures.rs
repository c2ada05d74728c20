//! Publishes that fail at the storage provider (`controller_publish_failure`,
//! `node_publish_failure`, `publish_failure` events) and what each release
//! does with them: 1.2.6 fails the allocation before writing a claim; 2.0.5
//! writes the claim, keeps it and retries a FailedPrecondition
//! (csi_endpoint.go CSIVolume.Claim, csi_hook.go claimWithRetry, #12387).

mod common;

use plansim::model::policy::Policy;
use plansim::sim::trace::{TraceKind, TraceRecord};

fn scenario(plugin_extra: &str, events: &str, cluster: &str) -> String {
    format!(
        r#"
horizon: 30m
cluster: {{{cluster}}}
nodes:
  - {{id: "client-{{i}}", count: 2, csi_plugins: [{{id: ebs0}}]}}
plugins:
  - {{id: ebs0, enforces_access_mode: true, controller_required: true, controller_publish_latency: 3s{plugin_extra}}}
volumes:
  - {{id: data, plugin_id: ebs0, access_mode: single-node-writer}}
jobs:
  - id: db
    groups:
      - name: pg
        volumes: {{data: {{type: csi, source: data}}}}
        reschedule: {{attempts: 0, unlimited: true, delay: 30s, delay_function: constant}}
        tasks: [{{name: postgres}}]
events: [{events}]
"#
    )
}

fn kinds(trace: &[TraceRecord]) -> Vec<&'static str> {
    trace.iter().map(|r| r.kind.name()).collect()
}

fn trace_of(yaml: &str, policy: Policy, seed: u64) -> (plansim::sim::RunOutput, Vec<TraceRecord>) {
    let scenario = common::load(yaml);
    let mut output = common::run_checked(&scenario, policy, seed);
    let trace = output.trace.take().expect("traced");
    (output, trace)
}

#[test]
fn a_scripted_controller_failure_is_retried_only_from_2_0_5() {
    let yaml = scenario(
        "",
        "{at: 0s, publish_failure: {volume: data, stage: controller, count: 2}}",
        "",
    );
    // 1.2.6: no claim is written before the failed publish; the allocation
    // fails, twice, and the third one runs.
    let (output, trace) = trace_of(&yaml, Policy::Naive, 1);
    let first_failure = trace
        .iter()
        .position(|r| r.kind == TraceKind::PublishFailure)
        .expect("a publish failure");
    assert!(
        !kinds(&trace[..first_failure]).contains(&"claim_granted"),
        "{:?}",
        kinds(&trace)
    );
    assert!(trace[first_failure + 1].kind == TraceKind::Failed);
    assert!(
        trace[first_failure + 1]
            .detail
            .contains("controller publish: attach volume:"),
        "{}",
        trace[first_failure + 1].detail
    );
    assert_eq!(output.metrics.client_failures, 2);
    assert_eq!(output.metrics.claim_failures, 2);
    assert_eq!(output.metrics.running, 1);
    // 2.0.5: the claim is written first and kept; two retries, no failure.
    let (output, trace) = trace_of(&yaml, Policy::Validate, 1);
    let got: Vec<_> = kinds(&trace)
        .into_iter()
        .filter(|k| {
            matches!(
                *k,
                "claim_granted" | "publish_failure" | "failed" | "running"
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            "claim_granted",
            "publish_failure",
            "publish_failure",
            "running"
        ]
    );
    let retries: Vec<_> = trace
        .iter()
        .filter(|r| r.kind == TraceKind::PublishFailure)
        .map(|r| r.time)
        .collect();
    // claimWithRetry: 2s, then 4s.
    assert_eq!((retries[1] - retries[0]).0, 2_000);
    assert_eq!(output.metrics.client_failures, 0);
    assert_eq!(output.metrics.reschedules, 0);
}

#[test]
fn a_retry_that_outlives_its_deadline_fails_with_the_provider_error_and_frees_the_claim() {
    // Every ControllerPublish fails; the client gives up at the deadline
    // with the last refusal, and the written claim is then released.
    let yaml = scenario(
        ", controller_publish_failure: 1.0",
        "",
        "claim_retry_deadline: 1m",
    );
    let (output, trace) = trace_of(&yaml, Policy::Validate, 1);
    let failed = trace
        .iter()
        .find(|r| r.kind == TraceKind::Failed)
        .expect("the allocation fails at the deadline");
    assert!(
        failed.detail.contains("CSI client error (retryable)")
            && failed.detail.contains("FailedPrecondition"),
        "{}",
        failed.detail
    );
    assert!(failed.time.0 >= 60_000, "at the deadline: {}", failed.time);
    assert!(
        trace
            .iter()
            .any(|r| r.kind == TraceKind::ClaimReleased && r.time >= failed.time),
        "the kept claim is released after the failure: {:?}",
        kinds(&trace)
    );
    assert_eq!(output.metrics.running, 0);
    assert!(output.metrics.client_failures >= 1);
}

#[test]
fn a_node_publish_failure_fails_the_allocation_at_every_release() {
    let yaml = scenario(
        "",
        "{at: 0s, publish_failure: {volume: data, stage: node, count: 1}}",
        "",
    );
    for policy in Policy::ALL {
        let (output, trace) = trace_of(&yaml, policy, 1);
        let at = trace
            .iter()
            .position(|r| r.kind == TraceKind::PublishFailure)
            .unwrap_or_else(|| panic!("{policy:?}: a publish failure"));
        assert!(
            trace[at].detail.starts_with("node:"),
            "{}",
            trace[at].detail
        );
        assert_eq!(trace[at + 1].kind, TraceKind::Failed, "{policy:?}");
        // The claim written for it is released, and the replacement runs.
        assert!(
            trace[at..]
                .iter()
                .any(|r| r.kind == TraceKind::ClaimReleased),
            "{policy:?}"
        );
        assert_eq!(output.metrics.client_failures, 1, "{policy:?}");
        assert_eq!(output.metrics.reschedules, 1, "{policy:?}");
        assert_eq!(output.metrics.running, 1, "{policy:?}");
    }
}

#[test]
fn probability_zero_draws_nothing_and_changes_nothing() {
    let plain = scenario("", "", "");
    let zero = scenario(
        ", controller_publish_failure: 0.0, node_publish_failure: 0",
        "",
        "",
    );
    for policy in Policy::ALL {
        for seed in 0..5 {
            let (a, ta) = trace_of(&plain, policy, seed);
            let (b, tb) = trace_of(&zero, policy, seed);
            assert_eq!(format!("{:?}", a.metrics), format!("{:?}", b.metrics));
            assert_eq!(ta, tb);
        }
    }
}

#[test]
fn probabilities_fail_some_publishes_and_follow_the_seed() {
    let yaml = scenario(", controller_publish_failure: 0.5", "", "");
    let failures: Vec<u64> = (0..20)
        .map(|seed| {
            trace_of(&yaml, Policy::Naive, seed)
                .0
                .metrics
                .client_failures
        })
        .collect();
    assert!(failures.iter().any(|&f| f > 0), "{failures:?}");
    assert!(failures.contains(&0), "{failures:?}");
    // The same seed, the same failures.
    let again: Vec<u64> = (0..20)
        .map(|seed| {
            trace_of(&yaml, Policy::Naive, seed)
                .0
                .metrics
                .client_failures
        })
        .collect();
    assert_eq!(failures, again);
}

#[test]
fn probabilities_outside_zero_to_one_are_refused_with_a_position() {
    for bad in ["1.5", "-0.1", ".nan"] {
        let yaml = scenario(&format!(", node_publish_failure: {bad}"), "", "");
        let err = plansim::scenario::load_str(&yaml, "t.yaml", "t").expect_err(bad);
        let text = err.to_string();
        assert!(
            text.contains("plugins[ebs0].node_publish_failure") && text.contains("t.yaml:7:"),
            "{bad}: {text}"
        );
    }
}
