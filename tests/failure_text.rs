//! The placement-failure lines `nomad job status` prints (command/monitor.go
//! `formatAllocMetrics`) from the group's AllocMetric, as plansim builds it
//! (`sim/server/scheduler/feasibility.rs:AllocMetric`). `expect` checks
//! metrics, not these lines, so they are checked here.

mod common;

use plansim::model::policy::Policy;
use plansim::model::scenario::Scenario;
use plansim::report::table::failure_lines;
use plansim::sim::feasibility::PlacementFailure;
use plansim::sim::trace::TraceKind;

/// A group's failure as `nomad job status` prints it, line by line.
fn text_of(scenario: &Scenario, failure: &PlacementFailure) -> Vec<String> {
    failure_lines(scenario, failure)
        .into_iter()
        .map(|(_, line)| line)
        .collect()
}

fn status(yaml: &str, policy: Policy) -> Vec<String> {
    let scenario = common::load(yaml);
    let output = common::run_checked(&scenario, policy, 0);
    let [failure] = output.placement_failures.as_slice() else {
        panic!("one group failed: {:?}", output.placement_failures);
    };
    let lines = text_of(&scenario, failure);
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

/// Every group's failure lines of a run, by group index.
fn all_lines(scenario: &Scenario, policy: Policy, seed: u64) -> Vec<Vec<String>> {
    let output = common::run_checked(scenario, policy, seed);
    output
        .placement_failures
        .iter()
        .map(|failure| text_of(scenario, failure))
        .collect()
}

/// scheduler_system.go computePlacements tries a system job's placements in
/// the order util.go diffSystemAllocs ranges over two Go maps: nodes, then
/// on each node the job's allocation names. With a job constraint no node
/// meets, 1.2.6's evaluation context remembers the class failed it, so the
/// group tried second on the node is filtered as "computed class
/// ineligible"; which group that is follows Go's map order (the first
/// inserted comes first with odds 7/8 for two entries). 2.0.5's
/// SystemStack.Select forgets the eligibility before each node (1.11.0).
#[test]
fn system_groups_meet_the_class_in_map_order() {
    let yaml = "
name: t
horizon: 1m
nodes:
  - {id: n, node_class: a}
jobs:
  - id: sys
    type: system
    constraints: [{attribute: \"${node.datacenter}\", operator: \"==\", value: dc2}]
    groups:
      - {name: g0, tasks: [{name: t}]}
      - {name: g1, tasks: [{name: t}]}
";
    let scenario = common::load(yaml);
    let real = "* Constraint \"${node.datacenter} == dc2\": 1 nodes excluded by filter";
    let computed = "* Constraint \"computed class ineligible\": 1 nodes excluded by filter";
    let class = "* Class \"a\": 1 nodes excluded by filter";
    let mut g0_first = 0;
    for seed in 0..400 {
        let naive = all_lines(&scenario, Policy::Naive, seed);
        let [g0, g1] = naive.as_slice() else {
            panic!("two groups failed: {naive:?}")
        };
        assert_eq!(&g0[1], class, "seed {seed}");
        assert_eq!(&g1[1], class, "seed {seed}");
        match (g0[2].as_str(), g1[2].as_str()) {
            (a, b) if a == real && b == computed => g0_first += 1,
            (a, b) if a == computed && b == real => {}
            other => panic!("seed {seed}: {other:?}"),
        }
        for lines in all_lines(&scenario, Policy::Validate, seed) {
            assert_eq!(lines[1..], [class, real], "seed {seed}");
        }
    }
    // 7/8 of 400 is 350.
    assert!(
        (320..=380).contains(&g0_first),
        "g0 first in {g0_first} of 400"
    );
}

/// A system placement that finds its node exhausted reports that node's
/// Select: its class exhausted, and the ready nodes per datacenter of the
/// job (`nodesByDC`), which at 1.2.6 lists a datacenter with none.
#[test]
fn system_exhausted_node_reports_its_class_and_datacenters() {
    let yaml = "
name: t
horizon: 1m
nodes:
  - {id: n, node_class: c, cpu: 100}
jobs:
  - id: sys
    type: system
    datacenters: [dc1, dc2]
    groups:
      - {name: g, tasks: [{name: t, cpu: 500}]}
";
    let head = "sys: Task Group \"g\" (failed to place 1 allocation):";
    let tail = [
        "* Resources exhausted on 1 nodes",
        "* Class \"c\" exhausted on 1 nodes",
        "* Dimension \"cpu\" exhausted on 1 nodes",
    ];
    let naive = status(yaml, Policy::Naive);
    assert_eq!(naive[0], head);
    assert_eq!(naive[1], "* No nodes are available in datacenter \"dc2\"");
    assert_eq!(naive[2..], tail);
    let validate = status(yaml, Policy::Validate);
    assert_eq!(validate[1..], tail);
}
