//! The attributes Nomad's client fingerprints on every node, as
//! constraints see them (`NodeSpec::attribute`).

mod common;

use plansim::model::policy::Policy;
use plansim::sim::trace::TraceKind;

/// The node each job's allocations were placed on, by job name.
fn placed_on(yaml: &str, policy: Policy) -> Vec<(String, String)> {
    let scenario = common::load(yaml);
    let run = common::run_checked(&scenario, policy, 1);
    let mut placed: Vec<(String, String)> = run
        .trace
        .unwrap()
        .iter()
        .filter(|r| r.kind == TraceKind::Placed)
        .map(|r| {
            let job = &scenario.jobs[r.job.unwrap().index()].name;
            let node = &scenario.nodes[r.node.unwrap().index()].name;
            (job.clone(), node.clone())
        })
        .collect();
    placed.sort();
    placed
}

const NODES: &str = "nodes:
  - {id: exec-only, drivers: [exec], cpu: 4000}
  - {id: docker-small, drivers: [docker], cpu: 4000}
  - {id: docker-big, drivers: [docker, exec], cpu: 16000}
";

fn job(name: &str, attribute: &str, operator: &str, value: &str) -> String {
    format!(
        "  - id: {name}
    constraints: [{{attribute: \"{attribute}\", operator: \"{operator}\", value: \"{value}\"}}]
    groups: [{{name: g, tasks: [{{name: t, driver: exec, cpu: 100, memory: 64}}]}}]
"
    )
}

#[test]
fn driver_attributes_are_set_for_the_node_s_drivers() {
    let yaml = format!(
        "{NODES}jobs:\n{}{}",
        job("needs-docker", "${attr.driver.docker}", "=", "true"),
        job("no-docker", "${attr.driver.docker}", "is_not_set", ""),
    );
    for policy in Policy::ALL {
        assert_eq!(
            placed_on(&yaml, policy),
            [
                ("needs-docker".to_string(), "docker-big".to_string()),
                ("no-docker".to_string(), "exec-only".to_string()),
            ],
            "{policy:?}"
        );
    }
}

#[test]
fn hostname_and_core_count_come_from_the_node() {
    let yaml = format!(
        "{NODES}jobs:\n{}{}",
        job("pinned", "${attr.unique.hostname}", "=", "exec-only"),
        job("many-cores", "${attr.cpu.numcores}", ">=", "8"),
    );
    // 16000 MHz at the default 2000 MHz a core is 8 cores; 4000 is 2.
    let placed = placed_on(&yaml, Policy::Validate);
    assert_eq!(
        placed[0],
        ("many-cores".to_string(), "docker-big".to_string())
    );
    assert_eq!(placed[1], ("pinned".to_string(), "exec-only".to_string()));
}
