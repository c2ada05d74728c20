//! Scenario files written by others against the spec run unchanged: the
//! spec's own example is kept as a fixture and must load, run and meet its
//! `expect` block.

mod common;

use plansim::model::policy::Policy;
use plansim::scenario::load_file;

const FIXTURE: &str = "tests/fixtures/spec-example.yaml";

/// The YAML example of ../shared/spec/scenario-format.md, when the spec is
/// checked out beside the repository (it is in CI).
fn spec_example() -> Option<String> {
    let spec =
        std::fs::read_to_string(common::repo_path("../shared/spec/scenario-format.md")).ok()?;
    let start = spec.find("```yaml\n")? + "```yaml\n".len();
    let end = start + spec[start..].find("```")?;
    Some(spec[start..end].to_string())
}

#[test]
fn fixture_is_the_specs_example() {
    match spec_example() {
        Some(example) => {
            let fixture = std::fs::read_to_string(common::repo_path(FIXTURE)).unwrap();
            assert_eq!(
                fixture, example,
                "the spec's example changed: copy it to {FIXTURE}"
            );
        }
        None => eprintln!("../shared/spec not found; checking the fixture only"),
    }
}

#[test]
fn the_specs_example_runs_and_meets_its_expectations() {
    let scenario = load_file(&common::repo_path(FIXTURE)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scenario.policies, [Policy::Naive, Policy::PlanAware]);
    assert_eq!(scenario.events.len(), 6);
    for &policy in &scenario.policies {
        let output = common::run_checked(&scenario, policy, scenario.seed);
        for expectation in scenario.expectations.iter().filter(|e| e.policy == policy) {
            assert!(expectation.holds(&output.metrics), "{expectation}");
        }
    }
}
