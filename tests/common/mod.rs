//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use plansim::model::policy::Policy;
use plansim::model::scenario::Scenario;
use plansim::sim::trace::{TraceKind, TraceRecord};
use plansim::sim::{RunOptions, RunOutput, simulate};

pub fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// Every `*.yaml` directly under `dir` (relative to the repository), sorted.
pub fn yaml_files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo_path(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

/// Every scenario directly under scenarios/, sorted.
pub fn scenario_files() -> Vec<PathBuf> {
    yaml_files("scenarios")
}

/// Every scenario `plansim run scenarios/` reads: the YAML files under
/// scenarios/ and its subdirectories.
pub fn all_scenario_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&repo_path("scenarios"), &mut files);
    files.sort();
    files
}

/// Asserts a command refused its input as the contract says: exit 2, no
/// panic, and an error message.
pub fn assert_refused(output: &std::process::Output, file: &Path) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}: {stderr}",
        file.display()
    );
    assert!(!stderr.contains("panicked"), "{}: {stderr}", file.display());
    assert!(
        !stderr.trim().is_empty(),
        "{}: no error message",
        file.display()
    );
}

pub fn load(yaml: &str) -> Scenario {
    plansim::scenario::load_str(yaml, "test.yaml", "test").unwrap_or_else(|e| panic!("{e}"))
}

/// Runs with every invariant checked after every event.
pub fn run_checked(scenario: &Scenario, policy: Policy, seed: u64) -> RunOutput {
    simulate(
        scenario,
        RunOptions {
            trace: true,
            check_invariants: true,
            ..RunOptions::new(policy, seed)
        },
    )
}

/// Runs the plansim binary from the repository root.
pub fn plansim(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_plansim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

#[path = "../../src/test_dir.rs"]
mod test_dir;
pub use test_dir::TempDir;

/// A fresh, empty directory for one test, `$TMPDIR/plansim-test-{name}-{pid}`,
/// removed when the returned guard is dropped.
pub fn temp_dir(name: &str) -> TempDir {
    TempDir::new(&format!("test-{name}"))
}

/// A path as a command-line argument.
pub fn arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The names directly in `dir`, sorted.
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Every file under `dir`: relative path -> bytes.
pub fn files_under(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, files: &mut std::collections::BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, files);
            } else {
                let name = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                files.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut files = std::collections::BTreeMap::new();
    walk(dir, dir, &mut files);
    files
}

/// The trace rows of `kind` about the job named `job`, in trace order.
pub fn rows_of_job<'t>(
    scenario: &Scenario,
    trace: &'t [TraceRecord],
    kind: TraceKind,
    job: &str,
) -> Vec<&'t TraceRecord> {
    trace
        .iter()
        .filter(|r| r.kind == kind && r.job.is_some_and(|j| scenario.jobs[j.index()].name == job))
        .collect()
}
