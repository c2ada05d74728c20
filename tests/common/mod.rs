//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use plansim::model::policy::Policy;
use plansim::model::scenario::Scenario;
use plansim::sim::{RunOptions, RunOutput, simulate};

pub fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// Every `*.yaml` directly under scenarios/, sorted.
pub fn scenario_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo_path("scenarios"))
        .expect("scenarios/ exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

pub fn load(yaml: &str) -> Scenario {
    plansim::scenario::load_str(yaml, "test.yaml", "test").unwrap_or_else(|e| panic!("{e}"))
}

/// Runs with every invariant checked after every event.
pub fn run_checked(scenario: &Scenario, policy: Policy, seed: u64) -> RunOutput {
    simulate(
        scenario,
        RunOptions {
            policy,
            seed,
            trace: true,
            check_invariants: true,
        },
    )
}
