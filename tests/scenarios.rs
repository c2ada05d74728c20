//! Every scenario in scenarios/ is a test: its `expect` block must hold, and
//! the model's invariants must hold after every event, for several seeds.

mod common;

use plansim::scenario::load_file;

#[test]
fn there_are_at_least_ten_scenarios_each_with_expectations() {
    let files = common::scenario_files();
    assert!(files.len() >= 10, "only {} scenarios", files.len());
    for file in files {
        let scenario = load_file(&file).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !scenario.expectations.is_empty(),
            "{} has no expect block",
            file.display()
        );
        assert!(
            !scenario.description.is_empty(),
            "{} has no description",
            file.display()
        );
    }
}

#[test]
fn every_expectation_holds() {
    let mut failures = Vec::new();
    for file in common::scenario_files() {
        let scenario = load_file(&file).unwrap_or_else(|e| panic!("{e}"));
        for &policy in &scenario.policies {
            let output = common::run_checked(&scenario, policy, scenario.seed);
            for expectation in scenario.expectations.iter().filter(|e| e.policy == policy) {
                if !expectation.holds(&output.metrics) {
                    failures.push(format!(
                        "{}: {expectation} (actual {})",
                        scenario.name,
                        output.metrics.get(expectation.metric).render()
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "failed expectations:\n{}",
        failures.join("\n")
    );
}

/// Invariants are asserted inside the simulation; this drives every scenario
/// through many seeds so different node orders hammer them.
#[test]
fn invariants_hold_across_seeds() {
    for file in common::scenario_files() {
        let scenario = load_file(&file).unwrap_or_else(|e| panic!("{e}"));
        for &policy in &scenario.policies {
            for seed in 0..12 {
                let output = common::run_checked(&scenario, policy, seed);
                let m = &output.metrics;
                assert!(
                    m.running <= m.placed,
                    "{}: more running than placed",
                    scenario.name
                );
                assert!(m.reschedules <= m.placed, "{}", scenario.name);
                if policy == plansim::model::policy::Policy::PlanAware {
                    assert_eq!(
                        m.violations, 0,
                        "{} seed {seed}: plan-aware violated",
                        scenario.name
                    );
                }
            }
        }
    }
}
