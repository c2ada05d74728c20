//! The command line's contract: exit codes, outputs, nothing written on bad input.

mod common;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn run_prints_the_comparison_and_writes_summary_and_traces() {
    let out = common::temp_dir("run");
    let output = common::plansim(&[
        "run",
        "scenarios/csi-single-reader-count2.yaml",
        "--out",
        common::arg(&out),
        "--trace",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("naive  validate  plan-aware"), "{stdout}");
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert_eq!(summary.lines().count(), 4, "header + one row per policy");
    for policy in ["naive", "validate", "plan-aware"] {
        let trace = out.join(format!("trace-csi-single-reader-count2-{policy}-7.csv"));
        let trace = std::fs::read_to_string(trace).unwrap();
        assert!(trace.starts_with("time_s,event,job,group,alloc,node,volume,detail\n"));
    }
    let aware =
        std::fs::read_to_string(out.join("trace-csi-single-reader-count2-plan-aware-7.csv"))
            .unwrap();
    assert!(aware.contains(
        "infeasible,example,cache,example.cache[1],,,CSI volume test-volume0 is unschedulable or has exhausted its available reader claims"
    ));
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
fn seed_override_is_in_every_row() {
    let out = common::temp_dir("seed");
    let output = common::plansim(&[
        "run",
        "scenarios",
        "--seed",
        "5",
        "--out",
        common::arg(&out),
        "--quiet",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    for row in summary.lines().skip(1) {
        assert_eq!(row.split(',').nth(2), Some("5"), "{row}");
    }
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
fn a_failed_expectation_exits_1_and_names_the_actual_value() {
    let dir = common::temp_dir("expect");
    let scenario = dir.join("wrong.yaml");
    let original =
        std::fs::read_to_string(common::repo_path("scenarios/csi-single-reader-count2.yaml"))
            .unwrap();
    let wrong = original.replace("naive:      {placed: 2,", "naive:      {placed: 3,");
    assert_ne!(original, wrong);
    std::fs::write(&scenario, wrong).unwrap();
    let output = common::plansim(&["run", common::arg(&scenario), "--scheduler", "naive"]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("expect FAIL naive: placed == 3 (actual 2)"),
        "{stdout}"
    );
    assert!(text(&output.stderr).contains("1 expectation(s) failed"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let dir = common::temp_dir("bad");
    std::fs::copy(
        common::repo_path("scenarios/csi-single-reader-count2.yaml"),
        dir.join("a.yaml"),
    )
    .unwrap();
    std::fs::write(dir.join("b.yaml"), "nodes:\n  - id: a\n    cpus: 1\n").unwrap();
    let out = dir.join("out");
    let output = common::plansim(&["run", common::arg(&dir), "--out", common::arg(&out)]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("b.yaml:3:5: unknown field `cpus`"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing is written on bad input");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(
        common::plansim(&["run", "scenarios", "--scheduler", "fifo"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(common::plansim(&["run"]).status.code(), Some(2));
    assert_eq!(common::plansim(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(
        common::plansim(&["run", "no/such/dir"]).status.code(),
        Some(2)
    );
    assert_eq!(common::plansim(&["--version"]).status.code(), Some(0));
}

#[test]
fn validate_reports_each_file() {
    let output = common::plansim(&["validate", "scenarios"]);
    assert_eq!(output.status.code(), Some(0));
    let stdout = text(&output.stdout);
    assert_eq!(stdout.lines().count(), common::scenario_files().len());
    assert!(stdout.lines().all(|l| l.starts_with("ok ")));
}

#[test]
fn running_twice_gives_identical_bytes() {
    let (a, b) = (common::temp_dir("twice-a"), common::temp_dir("twice-b"));
    for out in [&a, &b] {
        let output = common::plansim(&[
            "run",
            "scenarios",
            "--out",
            common::arg(out),
            "--trace",
            "--quiet",
        ]);
        assert!(output.status.success());
    }
    let mut names: Vec<_> = std::fs::read_dir(&a)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert!(names.len() > 10);
    for name in names {
        assert_eq!(
            std::fs::read(a.join(&name)).unwrap(),
            std::fs::read(b.join(&name)).unwrap(),
            "{name:?}"
        );
    }
    std::fs::remove_dir_all(a).unwrap();
    std::fs::remove_dir_all(b).unwrap();
}

/// The README's worked example must be what the binary prints.
#[test]
fn readme_example_is_real_output() {
    let readme = std::fs::read_to_string(common::repo_path("README.md")).unwrap();
    let command = "$ cargo run --release -- run scenarios/csi-single-reader-count2.yaml\n";
    let start = readme
        .find(command)
        .expect("the README shows the example command")
        + command.len();
    let shown = &readme[start..start + readme[start..].find("```").unwrap()];
    let output = common::plansim(&["run", "scenarios/csi-single-reader-count2.yaml"]);
    assert_eq!(text(&output.stdout).trim_end(), shown.trim_end());
}

/// `plansim run ... | head` must not panic when the reader goes away, and
/// must still write its --out files.
#[test]
fn a_closed_stdout_is_not_a_crash() {
    let out = common::temp_dir("pipe");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_plansim"))
        .args([
            "run",
            "scenarios",
            "--seeds",
            "50",
            "--out",
            common::arg(&out),
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let runs: usize = common::scenario_files()
        .iter()
        .map(|f| plansim::scenario::load_file(f).unwrap().policies.len() * 50)
        .sum();
    assert_eq!(summary.lines().count(), 1 + runs);
    std::fs::remove_dir_all(out).unwrap();
}
