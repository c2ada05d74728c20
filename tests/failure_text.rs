//! The placement-failure lines `nomad job status` prints (command/monitor.go
//! `formatAllocMetrics`) from the group's AllocMetric, as plansim builds it
//! (`sim/server/scheduler/feasibility.rs:AllocMetric`). `expect` checks
//! metrics, not these lines, so they are checked here.

mod common;

use plansim::model::policy::Policy;
use plansim::report::table::failure_lines;
use plansim::sim::trace::TraceKind;

fn status(yaml: &str, policy: Policy) -> Vec<String> {
    let scenario = common::load(yaml);
    let output = common::run_checked(&scenario, policy, 0);
    let [failure] = output.placement_failures.as_slice() else {
        panic!("one group failed: {:?}", output.placement_failures);
    };
    let lines: Vec<String> = failure_lines(&scenario, failure)
        .into_iter()
        .map(|(_, line)| line)
        .collect();
    // The trace's placement_failure row carries the same lines.
    let rows: Vec<&str> = output
        .trace
        .as_ref()
        .expect("traced")
        .iter()
        .filter(|r| r.kind == TraceKind::PlacementFailure)
        .map(|r| r.detail.as_str())
        .collect();
    assert_eq!(rows, [lines[1..].join("; ")]);
    lines
}

/// generic_sched_test.go TestServiceSched_JobRegister_AllocFail: no node in
/// the job's datacenter; the metric has `NodesAvailable["dc1"] == 0` and 9
/// coalesced failures of 10. 1.2.6's readyNodesInDCs lists every datacenter
/// of the job; 2.0.5's only those with a ready node (#11170).
#[test]
fn no_nodes_in_the_datacenter() {
    let yaml = "
name: t
horizon: 1m
nodes:
  - {id: n, datacenter: dc2}
jobs:
  - id: j
    datacenters: [dc1]
    groups:
      - {name: g, count: 10, tasks: [{name: t}]}
";
    let head = "j: Task Group \"g\" (failed to place 10 allocations):";
    assert_eq!(
        status(yaml, Policy::Naive),
        [
            head,
            "* No nodes were eligible for evaluation",
            "* No nodes are available in datacenter \"dc1\"",
        ]
    );
    assert_eq!(
        status(yaml, Policy::Validate),
        [head, "* No nodes were eligible for evaluation"]
    );
}

/// structs.go AllocMetric.FilterNode and ExhaustedNode count a node under
/// its class too (when it has one), and formatAllocMetrics prints the
/// classes filtered, the constraints, the nodes exhausted, the classes
/// exhausted and the dimensions, in that order. Constraint.String is
/// "%s %s %s": an is_set constraint ends in a space.
#[test]
fn classes_constraints_and_exhaustion() {
    let yaml = "
name: t
horizon: 1m
nodes:
  - {id: a1, node_class: a, memory: 1024, attributes: {rack: r1}}
  - {id: a2, node_class: a, memory: 1024, attributes: {rack: r2}}
  - {id: b, node_class: b}
  - {id: c}
jobs:
  - id: j
    groups:
      - name: g
        constraints: [{attribute: \"${attr.rack}\", operator: is_set}]
        tasks: [{name: t, memory: 2048}]
";
    for policy in Policy::ALL {
        assert_eq!(
            status(yaml, policy),
            [
                "j: Task Group \"g\" (failed to place 1 allocation):",
                "* Class \"b\": 1 nodes excluded by filter",
                "* Constraint \"${attr.rack} is_set \": 2 nodes excluded by filter",
                "* Resources exhausted on 2 nodes",
                "* Class \"a\" exhausted on 2 nodes",
                "* Dimension \"memory\" exhausted on 2 nodes",
            ],
            "{policy}"
        );
    }
}
