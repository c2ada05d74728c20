//! Files written by others against the spec run unchanged: the spec's own
//! examples are kept as fixtures (checked against the spec when it is
//! beside the repository, as in CI), and must load and run.

// A test or example prints for the person running it; plansim's own
// shell prints only through cli::output (see clippy.toml).
#![allow(clippy::disallowed_macros)]

mod common;

use plansim::model::policy::Policy;
use plansim::scenario::load_file;

const FIXTURE: &str = "tests/fixtures/spec-example.yaml";
const EXPERIMENT_FIXTURE: &str = "tests/fixtures/spec-experiment.yaml";

/// The first YAML example of a file in ../shared/spec/, if it is there.
fn spec_example(file: &str) -> Option<String> {
    let spec =
        std::fs::read_to_string(common::repo_path(&format!("../shared/spec/{file}"))).ok()?;
    let start = spec.find("```yaml\n")? + "```yaml\n".len();
    let end = start + spec[start..].find("```")?;
    Some(spec[start..end].to_string())
}

#[test]
fn fixtures_are_the_specs_examples() {
    for (spec, fixture) in [
        ("scenario-format.md", FIXTURE),
        ("results-format.md", EXPERIMENT_FIXTURE),
    ] {
        match spec_example(spec) {
            Some(example) => {
                let text = std::fs::read_to_string(common::repo_path(fixture)).unwrap();
                assert_eq!(
                    text, example,
                    "the example in {spec} changed: copy it to {fixture}"
                );
            }
            None => eprintln!("../shared/spec not found; checking the fixtures only"),
        }
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

/// The spec's example experiment, on the spec's example scenario (saved
/// under the name the experiment gives it), runs as written. Two-node
/// variants lack the node the timeline drains: that event is left out of
/// those variants, with a warning.
#[test]
fn the_specs_example_experiment_runs() {
    let dir = common::temp_dir("spec-experiment");
    std::fs::copy(
        common::repo_path(FIXTURE),
        dir.join("csi-single-reader-count2.yaml"),
    )
    .unwrap();
    std::fs::copy(
        common::repo_path(EXPERIMENT_FIXTURE),
        dir.join("experiment.yaml"),
    )
    .unwrap();
    let out = dir.join("out");
    let output = common::plansim(&[
        "sweep",
        common::arg(&dir.join("experiment.yaml")),
        "--out",
        common::arg(&out),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains(
        "events[2].node_drain: no node with id \"client-2\" under nodes; the event is left out"
    ));
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert_eq!(
        runs.lines().count(),
        1 + 4 * 3 * 2 * 2 * 100,
        "points x policies x seeds"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
