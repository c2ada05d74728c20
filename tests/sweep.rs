//! `plansim sweep` and `plansim merge`: outputs never depend on thread
//! count, sharding or interruption; bad experiments exit 2 with a precise error.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

/// A small experiment beside a copy of the report's scenario.
fn experiment(dir: &Path, body: &str) -> PathBuf {
    std::fs::copy(
        common::repo_path("scenarios/csi-single-reader-count2.yaml"),
        dir.join("report.yaml"),
    )
    .unwrap();
    let path = dir.join("experiment.yaml");
    std::fs::write(&path, format!("scenario: report.yaml\n{body}")).unwrap();
    path
}

const GRID: &str = "seeds: 6\nvary:\n  \"jobs[example].groups[cache].count\": [1, 2, 4]\n  \"plugins[hostpath-plugin0].enforces_access_mode\": [true, false]\n";

fn sweep(experiment: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "sweep",
        common::arg(experiment),
        "--out",
        common::arg(out),
        "--quiet",
    ];
    args.extend_from_slice(extra);
    common::plansim(&args)
}

#[test]
fn output_is_identical_with_one_and_two_jobs() {
    let dir = common::temp_dir("jobs");
    let exp = experiment(&dir, GRID);
    let (one, two) = (dir.join("one"), dir.join("two"));
    assert!(sweep(&exp, &one, &["--jobs", "1"]).status.success());
    assert!(sweep(&exp, &two, &["--jobs", "2"]).status.success());
    let files = common::files_under(&one);
    for name in [
        "runs.csv",
        "aggregate.csv",
        "paired.csv",
        "index.html",
        ".plansim-journal.csv",
    ] {
        assert!(files.contains_key(name), "{name} missing");
    }
    assert_eq!(
        files.keys().filter(|k| k.starts_with("plots/")).count(),
        12,
        "2 keys x 6 metrics"
    );
    assert_eq!(files, common::files_under(&two));
    let runs = String::from_utf8(files["runs.csv"].clone()).unwrap();
    assert_eq!(
        runs.lines().count(),
        1 + 6 * 3 * 2 * 3,
        "header + points x policies x seeds"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn shards_partition_the_runs_and_merge_to_the_unsharded_output() {
    let dir = common::temp_dir("shards");
    let exp = experiment(&dir, GRID);
    let whole = dir.join("whole");
    assert!(sweep(&exp, &whole, &[]).status.success());
    let mut shard_dirs = Vec::new();
    let mut recorded = Vec::new();
    for i in 1..=3 {
        let shard = dir.join(format!("shard{i}"));
        let output = sweep(&exp, &shard, &["--shard", &format!("{i}/3")]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let journal = std::fs::read_to_string(shard.join(".plansim-journal.csv")).unwrap();
        recorded.extend(
            journal
                .lines()
                .skip(1)
                .map(|l| l.split(',').next().unwrap().to_string()),
        );
        assert!(
            !shard.join("runs.csv").exists(),
            "a shard alone writes no results"
        );
        shard_dirs.push(shard);
    }
    recorded.sort_by_key(|r| r.parse::<usize>().unwrap());
    let expected: Vec<String> = (0..108).map(|r| r.to_string()).collect();
    assert_eq!(recorded, expected, "every run in exactly one shard");
    let merged = dir.join("merged");
    let mut args = vec!["merge"];
    args.extend(shard_dirs.iter().map(|d| common::arg(d)));
    args.extend(["--out", common::arg(&merged), "--quiet"]);
    let output = common::plansim(&args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(common::files_under(&merged), common::files_under(&whole));
    // Two of three shards are not enough.
    let partial = common::plansim(&[
        "merge",
        common::arg(&shard_dirs[0]),
        common::arg(&shard_dirs[1]),
        "--out",
        common::arg(&dir.join("partial")),
    ]);
    assert_eq!(partial.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&partial.stderr).contains("runs are missing"));
    std::fs::remove_dir_all(dir).unwrap();
}

/// What `kill -9` can leave: the inputs and any prefix of the journal, a
/// torn last line included. `--resume` must end exactly where an
/// uninterrupted sweep does.
#[test]
fn resume_after_an_interruption_gives_identical_output() {
    let dir = common::temp_dir("resume");
    let exp = experiment(&dir, GRID);
    let whole = dir.join("whole");
    assert!(sweep(&exp, &whole, &[]).status.success());
    let journal = std::fs::read(whole.join(".plansim-journal.csv")).unwrap();
    for cut in [journal.len() / 7, journal.len() / 2 + 3, journal.len() - 5] {
        let killed = dir.join(format!("killed-{cut}"));
        std::fs::create_dir_all(&killed).unwrap();
        std::fs::write(killed.join(".plansim-journal.csv"), &journal[..cut]).unwrap();
        let inputs = common::files_under(&whole.join("inputs"));
        for (name, bytes) in inputs {
            let path = killed.join("inputs").join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        let again = sweep(&exp, &killed, &[]);
        assert_eq!(
            again.status.code(),
            Some(2),
            "an existing sweep needs --resume"
        );
        assert!(String::from_utf8_lossy(&again.stderr).contains("--resume"));
        let resumed = sweep(&exp, &killed, &["--resume"]);
        assert!(
            resumed.status.success(),
            "{}",
            String::from_utf8_lossy(&resumed.stderr)
        );
        assert_eq!(
            common::files_under(&killed),
            common::files_under(&whole),
            "cut at {cut}"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn resuming_with_other_inputs_is_refused() {
    let dir = common::temp_dir("other");
    let exp = experiment(&dir, GRID);
    let out = dir.join("out");
    assert!(sweep(&exp, &out, &[]).status.success());
    std::fs::write(
        &exp,
        format!(
            "scenario: report.yaml\n{}",
            GRID.replace("seeds: 6", "seeds: 7")
        ),
    )
    .unwrap();
    let output = sweep(&exp, &out, &["--resume"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("other inputs"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_experiments_exit_2_naming_the_key_and_what_exists() {
    let dir = common::temp_dir("bad");
    let cases = [
        (
            "vary:\n  \"jobs[exmaple].groups[cache].count\": [2]\n",
            "jobs has no item \"exmaple\" (items: example)",
        ),
        (
            "vary:\n  \"jobs[example].groups[db].count\": [2]\n",
            "jobs[example].groups has no item \"db\" (items: cache)",
        ),
        (
            "vary:\n  \"jobs[example].groups[cache].count\": [-1]\n",
            "count -1 is negative",
        ),
        (
            "vary:\n  \"jobs[example].groups[cache].cuont\": [2]\n",
            "unknown field `cuont`",
        ),
        ("vary:\n  \"horizon\": [30]\n", "add a unit"),
        ("vary:\n  \"jobs[example\": [2]\n", "unclosed '['"),
        ("vary:\n  \"horizon\": []\n", "list at least one value"),
        ("seeds: 0\n", "seeds: a count must be at least 1"),
        ("sedes: 3\n", "unknown field `sedes`"),
    ];
    for (index, (body, message)) in cases.iter().enumerate() {
        let exp = experiment(&dir, body);
        let output = sweep(&exp, &dir.join(format!("out{index}")), &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{body}: {stderr}");
        assert!(
            stderr.contains(message),
            "{body}: expected {message:?} in {stderr}"
        );
        assert!(!stderr.contains("panicked"));
    }
    let missing = dir.join("missing.yaml");
    std::fs::write(&missing, "scenario: nowhere.yaml\n").unwrap();
    assert_eq!(sweep(&missing, &dir.join("o"), &[]).status.code(), Some(2));
    std::fs::remove_dir_all(dir).unwrap();
}

/// Ctrl-C (SIGINT) stops a sweep cleanly: exit 130, every finished run kept,
/// and `--resume` ends with the output of an uninterrupted sweep.
#[test]
fn ctrl_c_keeps_every_finished_run() {
    let dir = common::temp_dir("sigint");
    let body = "seeds: 100\nschedulers: [naive, plan-aware]\nvary:\n  \"jobs[example].groups[cache].count\": [1, 2, 4, 8, 16]\n  \"nodes[client-{i}].count\": [2, 4, 8, 16, 32]\n  \"plugins[hostpath-plugin0].enforces_access_mode\": [true, false]\n";
    let exp = experiment(&dir, body);
    let out = dir.join("interrupted");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_plansim"))
        .args([
            "sweep",
            common::arg(&exp),
            "--out",
            common::arg(&out),
            "--jobs",
            "2",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until some runs are journaled, then interrupt.
    let journal = out.join(".plansim-journal.csv");
    while std::fs::read_to_string(&journal).map_or(0, |t| t.lines().count()) < 100 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("--resume"), "{stderr}");
    let recorded = std::fs::read_to_string(&journal).unwrap().lines().count() - 1;
    assert!(
        recorded > 0 && recorded < 10_000,
        "{recorded} runs recorded"
    );
    assert!(!out.join("runs.csv").exists(), "no partial results");
    assert!(sweep(&exp, &out, &["--resume"]).status.success());
    let whole = dir.join("whole");
    assert!(sweep(&exp, &whole, &[]).status.success());
    assert_eq!(common::files_under(&out), common::files_under(&whole));
    std::fs::remove_dir_all(dir).unwrap();
}
