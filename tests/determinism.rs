//! Same scenario + seed -> byte-identical output, on any thread count.

mod common;

use plansim::model::policy::Policy;
use plansim::report::{summary, trace_csv};
use plansim::run::{RunPlan, run_scenario};
use plansim::scenario::load_file;

/// summary.csv bytes and every trace, for every scenario.
fn all_outputs(threads: usize) -> Vec<Vec<u8>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let plan = RunPlan {
            trace: true,
            seeds: Some(vec![0, 1, 2]),
            ..RunPlan::default()
        };
        let mut outputs = Vec::new();
        let mut rows = Vec::new();
        for file in common::scenario_files() {
            let scenario = load_file(&file).unwrap();
            for result in run_scenario(&scenario, &plan) {
                outputs.push(trace_csv::render(&scenario, result.trace.as_ref().unwrap()));
                rows.push(result.row);
            }
        }
        summary::sort_rows(&mut rows);
        outputs.push(summary::render(&rows));
        outputs
    })
}

#[test]
fn repeated_runs_are_byte_identical() {
    assert_eq!(all_outputs(2), all_outputs(2));
}

#[test]
fn thread_count_never_changes_a_byte() {
    assert_eq!(all_outputs(1), all_outputs(2));
}

#[test]
fn the_seed_changes_node_choice() {
    let scenario = load_file(&common::repo_path(
        "scenarios/csi-single-reader-count2.yaml",
    ))
    .unwrap();
    let placements = |seed| {
        let output = common::run_checked(&scenario, Policy::Naive, seed);
        output
            .trace
            .unwrap()
            .iter()
            .filter(|r| r.kind == plansim::sim::trace::TraceKind::Placed)
            .map(|r| r.node)
            .collect::<Vec<_>>()
    };
    let distinct: std::collections::BTreeSet<_> = (0..10).map(placements).collect();
    assert!(distinct.len() > 1, "ten seeds all placed identically");
}

/// The trace has exactly one row per simulation event: `events` counts them.
#[test]
fn the_trace_has_one_row_per_event() {
    for file in common::scenario_files() {
        let scenario = load_file(&file).unwrap();
        for &policy in &scenario.policies {
            let output = common::run_checked(&scenario, policy, scenario.seed);
            assert_eq!(
                output.trace.unwrap().len() as u64,
                output.metrics.events,
                "{} {policy}",
                scenario.name
            );
        }
    }
}
