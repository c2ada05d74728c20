//! Host volumes end to end: static ones of a client's configuration,
//! dynamic ones with their plugins, per release and per policy (see
//! src/sim/server/scheduler/host_volumes.rs, src/sim/client/host_mounts.rs).

mod common;

use plansim::model::policy::Policy;
use plansim::sim::trace::TraceKind;

const TWO_WORKERS: &str = "scenarios/host-volume-two-workers.yaml";

fn shipped(relative: &str) -> String {
    std::fs::read_to_string(common::repo_path(relative)).unwrap()
}

/// The two-workers race on an enforcing plugin: 2.0.5's second writer is
/// refused at its mount on the client (a client failure, no violation);
/// plan-aware never places it.
#[test]
fn an_enforcing_plugin_refuses_the_second_writer_at_mount() {
    let yaml = shipped(TWO_WORKERS).replace(
        "{id: mkdir, type: host, enforces_access_mode: false}",
        "{id: mkdir, type: host, enforces_access_mode: true}",
    );
    let scenario = common::load(&yaml);
    let validate = common::run_checked(&scenario, Policy::Validate, 1);
    assert_eq!(validate.metrics.violations, 0);
    assert!(
        validate.metrics.client_failures >= 1,
        "{:?}",
        validate.metrics
    );
    let trace = validate.trace.unwrap();
    assert!(
        trace.iter().any(|r| r
            .detail
            .starts_with("plugin mkdir refused to mount host volume shared")),
        "the refusal is traced"
    );
    let fixed = common::run_checked(&scenario, Policy::PlanAware, 1);
    assert_eq!(fixed.metrics.client_failures, 0);
    assert_eq!(fixed.metrics.violations, 0);
}

/// A toy plugin lets both writers run; the violation ends when one stops.
#[test]
fn a_violation_ends_when_a_writer_stops() {
    let yaml = shipped(TWO_WORKERS).replace(
        "expect:",
        "events:\n  - {at: 10m, stop_job: importer}\n\nexpect_unused:",
    );
    let yaml = yaml.split("expect_unused:").next().unwrap().to_string();
    let scenario = common::load(&yaml);
    let run = common::run_checked(&scenario, Policy::Validate, 1);
    assert_eq!(run.metrics.violations, 1);
    let seconds = run.metrics.violation_time.0 / 1000;
    assert!((590..=600).contains(&seconds), "{seconds}");
    let trace = run.trace.unwrap();
    assert!(trace.iter().any(|r| r.kind == TraceKind::ViolationEnded));
}

/// Nomad looks a dynamic host volume up in the job's namespace.
#[test]
fn a_dynamic_host_volume_of_another_namespace_is_not_found() {
    let yaml = shipped("scenarios/host-volume-single-writer-count2.yaml").replace(
        "    node: client-1\n",
        "    node: client-1\n    namespace: prod\n",
    );
    let scenario = common::load(yaml.split("expect:").next().unwrap());
    let run = common::run_checked(&scenario, Policy::Validate, 1);
    assert_eq!(run.metrics.placed, 0);
    let lines = run.placement_failures[0].metric.lines().join("\n");
    assert!(lines.contains("missing compatible host volumes"), "{lines}");
}

/// Every scenario with host volumes reads back as it was written.
#[test]
fn host_volume_scenarios_round_trip() {
    for file in [
        "scenarios/host-volume-single-writer-count2.yaml",
        TWO_WORKERS,
        "scenarios/host-volume-static-class-cache.yaml",
        "scenarios/host-volumes-nomad/host-volumes-nomad.yaml",
        STICKY,
    ] {
        let scenario = plansim::scenario::load_file(&common::repo_path(file)).unwrap();
        let yaml = plansim::scenario::write::model::to_yaml(&scenario, "");
        let again = common::load(&yaml);
        assert_eq!(
            plansim::scenario::write::model::to_yaml(&again, ""),
            yaml,
            "{file}"
        );
        assert_eq!(again.host_volumes.len(), scenario.host_volumes.len());
        let sticky = |s: &plansim::model::scenario::Scenario| -> Vec<bool> {
            s.jobs
                .iter()
                .flat_map(|j| &j.groups)
                .flat_map(|g| g.host_volumes.iter().map(|r| r.sticky))
                .collect()
        };
        assert_eq!(sticky(&again), sticky(&scenario), "{file}");
        for policy in Policy::ALL {
            let a = common::run_checked(&scenario, policy, 3).metrics;
            let b = common::run_checked(&again, policy, 3).metrics;
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{file} {policy:?}");
        }
    }
}

/// Refusals in Nomad's words, at the entry.
#[test]
fn host_volume_mistakes_are_refused() {
    let base = "nodes:\n  - {id: c1}\nplugins:\n  - {id: mkdir, type: host, enforces_access_mode: false}\nvolumes:\n";
    let cases = [
        (
            "  - {id: v, type: host, plugin_id: mkdir, node: c1, capabilities: [{access_mode: multi-node-multi-writer, attachment_mode: file-system}]}\n",
            "invalid access mode",
        ),
        (
            "  - {id: v, type: host, plugin_id: mkdir, node_pool: gpu}\n",
            "no node meets constraints: no node in pool \"gpu\"",
        ),
        (
            "  - {id: v, type: host, plugin_id: nope, node: c1, capabilities: [{access_mode: single-node-writer, attachment_mode: file-system}]}\n",
            "no host volume plugin",
        ),
    ];
    for (volume, expected) in cases {
        let yaml = format!("{base}{volume}");
        let err = plansim::scenario::load_str(&yaml, "t.yaml", "t").unwrap_err();
        assert!(err.to_string().contains(expected), "{err}");
    }
}

/// 1.2.6 judges a node class by the first node it visits (#18679): over
/// seeds, some runs find the class ineligible and place nothing, others
/// place beside the volume on a node without it, whose client fails the
/// allocation; 2.0.5 checks every node and places on the one that has it.
#[test]
fn nomad_1_2_6_checks_static_host_volumes_once_per_class() {
    let scenario = plansim::scenario::load_file(&common::repo_path(
        "scenarios/host-volume-static-class-cache.yaml",
    ))
    .unwrap();
    let (mut refused, mut failed) = (0, 0);
    for seed in 1..=20 {
        let naive = common::run_checked(&scenario, Policy::Naive, seed).metrics;
        if naive.placed == 0 {
            refused += 1;
        }
        if naive.client_failures > 0 {
            failed += 1;
        }
        let validate = common::run_checked(&scenario, Policy::Validate, seed).metrics;
        assert_eq!(
            (validate.placed, validate.client_failures),
            (2, 0),
            "seed {seed}"
        );
    }
    assert!(
        refused > 0 && failed > 0,
        "{refused} refused, {failed} failed"
    );
}

/// The applier's re-check pairs each dynamic volume with its own request:
/// a static read-only mount listed before the single-writer one (aliases
/// sort `certs` first) changes nothing, plan-aware still refuses the
/// second writer.
#[test]
fn plan_aware_refuses_the_second_writer_beside_a_static_mount() {
    let yaml = shipped(TWO_WORKERS)
        .replace(
            "  - id: client-{i}\n    count: 2\n",
            "  - id: client-{i}\n    count: 2\n    host_volumes: [{name: certs, read_only: true}]\n",
        )
        .replace(
            "          data: {type: host, source: shared, access_mode: single-node-single-writer}\n",
            "          data: {type: host, source: shared, access_mode: single-node-single-writer}\n          certs: {type: host, source: certs, read_only: true}\n",
        );
    let scenario = common::load(yaml.split("expect:").next().unwrap());
    assert_eq!(scenario.jobs[0].groups[0].host_volumes[0].alias, "certs");
    let fixed = common::run_checked(&scenario, Policy::PlanAware, 1).metrics;
    assert_eq!((fixed.placed, fixed.violations), (1, 0));
    let validate = common::run_checked(&scenario, Policy::Validate, 1).metrics;
    assert_eq!(validate.violations, 1);
}

const STICKY: &str = "scenarios/host-volume-sticky.yaml";

/// The nodes `job`'s placements went to under validate, in order.
fn nodes_placed(scenario: &plansim::model::scenario::Scenario, seed: u64) -> Vec<String> {
    let run = common::run_checked(scenario, Policy::Validate, seed);
    run.trace
        .unwrap()
        .iter()
        .filter(|r| r.kind == TraceKind::Placed)
        .map(|r| scenario.nodes[r.node.unwrap().index()].name.clone())
        .collect()
}

/// A sticky request's claim brings a destructive update back to the
/// claimed volume at every seed; without sticky the tie between the two
/// empty nodes goes where the shuffle puts it.
#[test]
fn a_sticky_host_volume_keeps_an_update_where_its_data_is() {
    let sticky = plansim::scenario::load_file(&common::repo_path(STICKY)).unwrap();
    let plain = common::load(
        shipped(STICKY)
            .replace("sticky: true, ", "")
            .split("expect:")
            .next()
            .unwrap(),
    );
    let mut moved = 0;
    for seed in 1..=20 {
        let placed = nodes_placed(&sticky, seed);
        assert_eq!(placed.len(), 2, "{placed:?}");
        assert_eq!(placed[0], placed[1], "seed {seed}: the update stays");
        let placed = nodes_placed(&plain, seed);
        moved += usize::from(placed[0] != placed[1]);
    }
    assert!(
        (1..20).contains(&moved),
        "without sticky some updates move: {moved}"
    );
}

/// 2.0.5's checker takes a claim off its list at the first node that
/// meets it, so the nodes its scan visits after that one are feasible
/// again: a rescheduled allocation (its old node penalised) returns to its
/// volume only when the scan reaches the other node first.
#[test]
fn a_sticky_reschedule_returns_only_when_the_claimed_node_is_scanned_last() {
    let yaml = shipped(STICKY).replace(
        "  - {at: 10m, update_job: {job: postgres}}",
        "  - {at: 10m, alloc_fail: \"postgres.db[0]\"}",
    );
    let scenario = common::load(yaml.split("expect:").next().unwrap());
    let (mut back, mut away) = (0, 0);
    for seed in 1..=20 {
        let placed = nodes_placed(&scenario, seed);
        assert_eq!(placed.len(), 2, "{placed:?}");
        if placed[0] == placed[1] {
            back += 1;
        } else {
            away += 1;
        }
    }
    assert!(back > 0 && away > 0, "back {back}, away {away}");
}

/// Nomad's refusals of sticky requests: with `per_alloc` at registration,
/// and on a static host volume at every node.
#[test]
fn sticky_mistakes_are_refused_as_nomad_refuses_them() {
    let yaml = shipped(STICKY).replace("sticky: true,", "sticky: true, per_alloc: true,");
    let err = plansim::scenario::load_str(&yaml, "t.yaml", "t").unwrap_err();
    assert!(
        err.to_string()
            .contains("volume cannot be per_alloc and sticky at the same time"),
        "{err}"
    );
    let on_static = "nodes:\n  - {id: c1, host_volumes: [{name: data}]}\njobs:\n  - id: j\n    groups:\n      - name: g\n        volumes:\n          data: {type: host, source: data, sticky: true}\n        tasks: [{name: t}]\n";
    let scenario = common::load(on_static);
    let run = common::run_checked(&scenario, Policy::Validate, 1);
    assert_eq!(run.metrics.placed, 0);
    let lines = run.placement_failures[0].metric.lines().join("\n");
    assert!(lines.contains("missing compatible host volumes"), "{lines}");
    // 1.2.6 has no sticky: the static volume fits.
    assert_eq!(
        common::run_checked(&scenario, Policy::Naive, 1)
            .metrics
            .placed,
        1
    );
}
