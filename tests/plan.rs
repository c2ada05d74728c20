//! `plansim plan`: a job file against a cluster, answered per policy in
//! `nomad job plan`'s words (command/job_plan.go at v2.0.5), then with the
//! simulated consequences; exit codes as `nomad job plan`'s (0 no change,
//! 1 allocations created), 2 for bad input.

mod common;

use std::path::{Path, PathBuf};

/// A directory holding the seed report's files and a cluster scenario
/// without its job: the cluster an operator would plan against.
fn seed_cluster(name: &str) -> (common::TempDir, PathBuf) {
    let dir = common::temp_dir(name);
    for file in [
        "example.nomad.hcl",
        "hostpath-plugin.nomad.hcl",
        "test-volume0.hcl",
    ] {
        std::fs::copy(
            common::repo_path(&format!("scenarios/seed-report-nomad/{file}")),
            dir.join(file),
        )
        .unwrap();
    }
    let cluster = dir.join("cluster.yaml");
    std::fs::write(
        &cluster,
        "name: cluster\nseed: 7\nnodes:\n  - {id: \"client-{i}\", count: 3}\nplugins:\n  - {id: hostpath-plugin0, enforces_access_mode: false, publish_latency: 500ms}\nvolumes:\n  - file: test-volume0.hcl\njobs:\n  - file: hostpath-plugin.nomad.hcl\n",
    )
    .unwrap();
    (dir, cluster)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The part of the text output one policy answered.
fn answer<'t>(out: &'t str, policy: &str) -> &'t str {
    let start = out
        .find(&format!("== {policy} ("))
        .unwrap_or_else(|| panic!("{policy} in {out}"));
    let rest = &out[start + 3..];
    &out[start..start + 3 + rest.find("\n== ").unwrap_or(rest.len())]
}

/// `output`'s stdout, once its exit code is `code` (else both streams).
fn stdout_after(output: &std::process::Output, code: i32) -> String {
    let out = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(code),
        "{out}{}",
        text(&output.stderr)
    );
    out
}

fn arg(path: &Path) -> &str {
    common::arg(path)
}

#[test]
fn the_seed_report_s_job_is_answered_in_nomad_s_words_per_policy() {
    let (dir, cluster) = seed_cluster("plan-seed");
    let job = dir.join("example.nomad.hcl");
    let output = common::plansim(&["plan", arg(&job), "--cluster", arg(&cluster)]);
    let out = stdout_after(&output, 1);
    let naive = answer(&out, "naive");
    assert!(naive.starts_with("== naive (Nomad 1.2.6)"), "{naive}");
    assert!(
        naive.contains("+ Job: \"example\"\n+ Task Group: \"cache\" (2 create)"),
        "{naive}"
    );
    assert!(
        naive.contains("Scheduler dry-run:\n- All tasks successfully allocated."),
        "{naive}"
    );
    // What the dry run cannot show: the toy plugin lets both readers run.
    assert!(
        naive.contains("verdict: naive violates (1 violation"),
        "{naive}"
    );
    let validate = answer(&out, "validate");
    assert!(
        validate.contains("Error during plan: job \"example\""),
        "{validate}"
    );
    assert!(validate.contains("allows only one reader"), "{validate}");
    let fixed = answer(&out, "plan-aware");
    assert!(fixed.contains("- WARNING: Failed to place all allocations.\n  Task Group \"cache\" (failed to place 1 allocation):\n    * Constraint \"CSI volume test-volume0"), "{fixed}");
    assert!(
        fixed.contains("verdict: plan-aware leaves 1 allocation unplaced"),
        "{fixed}"
    );
    let stderr = text(&output.stderr);
    assert!(stderr.contains("submitted at 30.000 s"), "{stderr}");
}

#[test]
fn json_says_the_same_and_nomad_picks_the_release() {
    let (dir, cluster) = seed_cluster("plan-json");
    let job = dir.join("example.nomad.hcl");
    let output = common::plansim(&[
        "plan",
        arg(&job),
        "--cluster",
        arg(&cluster),
        "--format",
        "json",
        "--nomad",
        "2.0.5",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let answers = doc["answers"].as_array().unwrap();
    let policies: Vec<&str> = answers
        .iter()
        .map(|a| a["policy"].as_str().unwrap())
        .collect();
    assert_eq!(policies, ["validate", "plan-aware"]);
    assert!(
        answers[0]["jobs"][0]["registration_error"]
            .as_str()
            .unwrap()
            .contains("only one reader")
    );
    let group = &answers[1]["jobs"][0]["groups"][0];
    assert_eq!(
        (group["create"].as_u64(), group["placed"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(doc["exit_code"], 1);
}

#[test]
fn a_what_if_event_changes_the_simulated_answer_not_the_dry_run() {
    let (dir, cluster) = seed_cluster("plan-event");
    let job = dir.join("example.nomad.hcl");
    let base = [
        "plan",
        arg(&job),
        "--cluster",
        arg(&cluster),
        "--nomad",
        "1.2.6",
    ];
    let plain = text(&common::plansim(&base).stdout);
    let mut with = base.to_vec();
    with.extend(["--event", "10m scale example=3"]);
    let scaled = text(&common::plansim(&with).stdout);
    let dry = |out: &str| out[..out.find("Simulated").unwrap()].to_string();
    assert_eq!(dry(&plain), dry(&scaled));
    assert!(plain.contains("violates (1 violation"), "{plain}");
    assert!(scaled.contains("violates (2 violations"), "{scaled}");
}

#[test]
fn variables_come_from_the_command_line_as_nomad_reads_them() {
    let dir = common::temp_dir("plan-vars");
    for file in ["web.nomad.hcl", "prod.vars.hcl"] {
        std::fs::copy(
            common::repo_path(&format!("scenarios/job-file-vars/{file}")),
            dir.join(file),
        )
        .unwrap();
    }
    let job = dir.join("web.nomad.hcl");
    // replicas has no default: without a value the job does not load.
    let unset = common::plansim(&["plan", arg(&job)]);
    assert_eq!(unset.status.code(), Some(2));
    assert!(
        text(&unset.stderr).contains("replicas"),
        "{}",
        text(&unset.stderr)
    );
    let vars = dir.join("prod.vars.hcl");
    let output = common::plansim(&[
        "plan",
        arg(&job),
        "-var-file",
        arg(&vars),
        "-var",
        "volume=none",
        "-var=replicas=3",
        "--nomad",
        "1.2.6",
    ]);
    let out = stdout_after(&output, 1);
    assert!(out.contains("+ Task Group: \"web\" (3 create)"), "{out}");
    // No cluster: the default one, said on stderr.
    assert!(text(&output.stderr).contains("default cluster of 3 nodes"));
}

#[test]
fn a_job_that_creates_nothing_exits_0() {
    let dir = common::temp_dir("plan-nothing");
    let job = dir.join("idle.nomad.hcl");
    std::fs::write(
        &job,
        "job \"idle\" {\n  group \"g\" {\n    count = 0\n    task \"t\" {\n      driver = \"docker\"\n    }\n  }\n}\n",
    )
    .unwrap();
    let output = common::plansim(&["plan", arg(&job)]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stdout));
    assert!(text(&output.stdout).contains("+ Task Group: \"g\"\n"));
}

#[test]
fn bad_input_exits_2_naming_the_problem() {
    let (dir, cluster) = seed_cluster("plan-bad");
    let job = dir.join("example.nomad.hcl");
    let plugin = dir.join("hostpath-plugin.nomad.hcl");
    let missing = dir.join("nope.nomad.hcl");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["plan", arg(&missing)], "nope.nomad.hcl"),
        (
            vec!["plan", arg(&job), "--nomad", "1.9.0"],
            "plansim models Nomad 1.2.6 and 2.0.5",
        ),
        (
            vec!["plan", arg(&job), "-var", "novalue"],
            "expected NAME=VALUE",
        ),
        (
            vec!["plan", arg(&job), "--event", "5m"],
            "expected \"AT KIND ARGS\"",
        ),
        (
            vec!["plan", arg(&plugin), "--cluster", arg(&cluster)],
            "is already in the cluster",
        ),
        (
            vec!["plan", arg(&job), "--cluster", arg(&missing)],
            "nope.nomad.hcl",
        ),
    ];
    for (args, expected) in cases {
        let output = common::plansim(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
        let stderr = text(&output.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// `run JOBFILE` and `validate JOBFILE` compose the same scenario `plan`
/// answers for, on the same cluster, with the same variables.
#[test]
fn run_and_validate_take_job_files_with_their_cluster_and_variables() {
    let (dir, cluster) = seed_cluster("plan-run");
    let job = dir.join("example.nomad.hcl");
    let run = common::plansim(&["run", arg(&job), "--cluster", arg(&cluster)]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let out = text(&run.stdout);
    assert!(
        out.contains("verdict cluster: naive violates (1 violation"),
        "{out}"
    );
    let validate = common::plansim(&["validate", arg(&job), "--cluster", arg(&cluster)]);
    assert_eq!(
        validate.status.code(),
        Some(0),
        "{}",
        text(&validate.stderr)
    );
    assert!(
        text(&validate.stdout).contains("(3 nodes, 1 volumes, 2 jobs, 3 allocations"),
        "{}",
        text(&validate.stdout)
    );
    // What applies to job files, without one, is refused.
    let scenario = common::repo_path("scenarios/csi-single-reader-count2.yaml");
    for command in ["run", "validate"] {
        let output = common::plansim(&[command, arg(&scenario), "-var", "a=b"]);
        assert_eq!(output.status.code(), Some(2), "{command}");
        assert!(text(&output.stderr).contains("apply to Nomad job files"));
    }
}

/// `-` is the job file on standard input.
#[test]
fn a_job_file_can_come_on_standard_input() {
    use std::io::Write;
    let job = std::fs::read(common::repo_path(
        "scenarios/seed-report-nomad/example.nomad.hcl",
    ))
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_plansim"))
        .args(["plan", "-", "--nomad", "1.2.6"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&job).unwrap();
    let output = child.wait_with_output().unwrap();
    let out = stdout_after(&output, 1);
    assert!(out.contains("+ Job: \"example\""), "{out}");
}

/// An imported cluster: the saved API responses and the same cluster as a
/// `nomad operator debug` archive answer the same plan, word for word.
#[test]
fn an_export_folder_and_a_debug_archive_answer_the_same_plan() {
    let job = common::repo_path("scenarios/job-file-vars/web.nomad.hcl");
    let plan = |cluster: &str| {
        common::plansim(&[
            "plan",
            arg(&job),
            "-var",
            "replicas=1",
            "-var",
            "volume=x",
            "--cluster",
            cluster,
        ])
    };
    let from_dir = plan("tests/fixtures/nomad/export");
    let from_archive = plan("tests/fixtures/nomad/debug-bundle.tar.gz");
    assert_eq!(
        from_dir.status.code(),
        Some(1),
        "{}",
        text(&from_dir.stderr)
    );
    assert_eq!(from_dir.stdout, from_archive.stdout);
    assert!(text(&from_dir.stdout).contains("+ Job: \"web\""));
    // A job the imported cluster already runs is an update: refused.
    let example = common::repo_path("scenarios/seed-report-nomad/example.nomad.hcl");
    let update = common::plansim(&[
        "plan",
        arg(&example),
        "--cluster",
        "tests/fixtures/nomad/export",
    ]);
    assert_eq!(update.status.code(), Some(2));
    assert!(text(&update.stderr).contains("is already in the cluster"));
}
