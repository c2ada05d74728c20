//! The bad-input corpus: every file in tests/bad/ must be refused with
//! exactly the message in its `.expected` sibling (position included), by
//! the loader and by the binary (exit 2, no panic, nothing on stdout).
//!
//! After an intended change of wording, regenerate the snapshots with
//! `PLANSIM_BLESS=1 cargo test --test bad_input` and review the diff.

mod common;

use std::path::{Path, PathBuf};

fn corpus() -> Vec<PathBuf> {
    common::yaml_files("tests/bad")
}

fn expected_path(file: &Path) -> PathBuf {
    file.with_extension("expected")
}

/// The error as the user sees it, with the file named relative to tests/bad.
fn message_for(file: &Path) -> String {
    let err = plansim::scenario::load_file(file).expect_err("a bad file must be refused");
    let name = file.file_name().unwrap().to_string_lossy();
    err.to_string().replacen(&err.file, &name, 1)
}

/// An experiment's error, with paths shown relative to the repository.
fn experiment_message_for(file: &Path) -> String {
    let err =
        plansim::experiment::spec::load(file, None).expect_err("a bad experiment must be refused");
    let root = format!("{}/", env!("CARGO_MANIFEST_DIR"));
    err.to_string().replace(&root, "")
}

/// Compares each file's message with its snapshot, or rewrites the
/// snapshots under PLANSIM_BLESS.
fn check_snapshots(files: Vec<PathBuf>, message: fn(&Path) -> String) {
    let bless = std::env::var_os("PLANSIM_BLESS").is_some();
    let mut mismatches = Vec::new();
    for file in files {
        let actual = message(&file);
        assert!(
            !actual.contains('\n'),
            "{}: a message is one line",
            file.display()
        );
        assert!(!actual.contains("panicked"), "{}", file.display());
        assert!(
            !actual.chars().any(char::is_control),
            "{}: a control character reaches the terminal raw: {actual:?}",
            file.display()
        );
        if bless {
            std::fs::write(expected_path(&file), format!("{actual}\n")).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(expected_path(&file)).unwrap_or_else(|_| {
            panic!(
                "{}: no .expected snapshot (run with PLANSIM_BLESS=1)",
                file.display()
            )
        });
        if expected.trim_end() != actual {
            mismatches.push(format!(
                "{}\n  expected: {}\n  actual:   {actual}",
                file.display(),
                expected.trim_end()
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn every_bad_file_gives_its_exact_message() {
    let files = corpus();
    assert!(files.len() >= 40, "the corpus shrank to {}", files.len());
    check_snapshots(files, message_for);
}

#[test]
fn every_bad_experiment_gives_its_exact_message() {
    let files = common::yaml_files("tests/bad/experiments");
    assert!(
        files.len() >= 15,
        "the experiment corpus shrank to {}",
        files.len()
    );
    check_snapshots(files, experiment_message_for);
}

#[test]
fn bad_experiments_exit_2_from_the_binary_and_write_nothing() {
    let out = common::temp_dir("bad-experiments");
    for file in common::yaml_files("tests/bad/experiments") {
        let target = out.join(file.file_stem().unwrap());
        let output = common::plansim(&["sweep", common::arg(&file), "--out", common::arg(&target)]);
        common::assert_refused(&output, &file);
        assert!(
            !target.exists(),
            "{}: nothing is written for bad input",
            file.display()
        );
    }
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
fn the_binary_exits_2_without_a_panic() {
    for file in corpus() {
        let output = common::plansim(&["validate", common::arg(&file)]);
        common::assert_refused(&output, &file);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.starts_with(&file.display().to_string()),
            "{}: {stderr}",
            file.display()
        );
        assert!(output.stdout.is_empty(), "{}", file.display());
    }
}

/// Results files `diff` must refuse (tests/bad/results/*.csv): exact
/// message, file, row and column.
#[test]
fn every_bad_results_file_gives_its_exact_message() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad/results");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 7,
        "the results corpus shrank to {}",
        files.len()
    );
    check_snapshots(files.clone(), |file| {
        let err = plansim::report::results::read(file).expect_err("a bad results file is refused");
        err.replacen(
            &file.display().to_string(),
            &file.file_name().unwrap().to_string_lossy(),
            1,
        )
    });
    for file in files {
        let output = common::plansim(&["diff", common::arg(&file), "results/summary.csv"]);
        common::assert_refused(&output, &file);
    }
}

fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr)
        .trim_end()
        .to_string()
}

/// Item 3: a zero-time loop stops with exit 2, names the job and the zero
/// delays, and writes nothing.
#[test]
fn a_zero_time_loop_is_stopped_and_named() {
    let dir = common::temp_dir("zero-loop");
    let out = dir.join("out");
    let output = common::plansim(&[
        "run",
        "tests/bounded/zero-time-loop.yaml",
        "--scheduler",
        "naive",
        "--out",
        common::arg(&out),
    ]);
    common::assert_refused(&output, Path::new("zero-time-loop.yaml"));
    let stderr = stderr_of(&output);
    assert!(
        stderr.starts_with(
            "zero-time-loop (naive, seed 0): simulated time stopped advancing at 0.000s: "
        ),
        "{stderr}"
    );
    assert!(
        stderr.ends_with("events happened at that instant (MAX_EVENTS_PER_INSTANT); job \"app\" loops without time passing (these delays are 0s: cluster.scheduler_latency, cluster.pull_delay, cluster.node_detach_latency, cluster.controller_detach_latency, cluster.claim_free_latency, plugins[csi].publish_latency, jobs[app].groups[g].reschedule.delay); give the loop's delays a duration above 0s"),
        "{stderr}"
    );
    assert!(!out.exists(), "a refused run leaves nothing behind");
}

/// Traces stream to temporaries while the runs go: a run refused after
/// others were traced leaves none of them behind (only the user's file).
#[test]
fn a_refused_run_leaves_no_streamed_trace_behind() {
    let dir = common::temp_dir("zero-loop-trace");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let output = common::plansim(&[
        "run",
        "scenarios/csi-single-reader-count2.yaml",
        "tests/bounded/zero-time-loop.yaml",
        "--scheduler",
        "naive",
        "--out",
        common::arg(&out),
        "--trace",
    ]);
    common::assert_refused(&output, Path::new("zero-time-loop.yaml"));
    let left: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["notes.txt"]);
}

/// Item 2: the reschedule churn of a day runs to its end (the memory bound
/// is checked by scripts/check-corpus-bounded.sh under ulimit).
#[test]
fn a_day_of_reschedule_churn_runs_to_the_end() {
    let scenario = plansim::scenario::load_file(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/bounded/reschedule-churn.yaml"
    )))
    .unwrap();
    let output = plansim::sim::simulate(
        &scenario,
        plansim::sim::RunOptions::new(plansim::model::policy::Policy::Naive, 0),
    );
    assert_eq!(output.stopped_early, None);
    // One reschedule every few seconds for a day.
    assert!(output.metrics.reschedules > 20_000, "{:?}", output.metrics);
}

/// Item 5: devices, FIFOs and directories are refused by metadata, never read.
#[cfg(unix)]
#[test]
fn devices_fifos_and_directories_are_refused_without_reading() {
    let dir = common::temp_dir("special-files");
    let fifo = dir.join("fifo.yaml");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    let mut specials = vec![PathBuf::from("/dev/zero"), dir.to_path_buf()];
    if made.is_ok_and(|s| s.success()) {
        specials.push(fifo);
    }
    for special in &specials {
        for args in [
            vec!["validate", common::arg(special)],
            vec![
                "sweep",
                common::arg(special),
                "--out",
                common::arg(&dir.join("o")),
            ],
            vec!["diff", common::arg(special), "results/summary.csv"],
        ] {
            if args[0] != "sweep" && special.is_dir() {
                continue; // a directory stands for its *.yaml files, or its summary.csv
            }
            let output = common::plansim(&args);
            common::assert_refused(&output, special);
            let stderr = stderr_of(&output);
            assert!(stderr.contains("not a regular file"), "{args:?}: {stderr}");
        }
    }
    assert!(!dir.join("o").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Item 8: names that share a file name are refused, naming both files.
#[test]
fn scenario_names_that_share_a_slug_are_refused() {
    let dir = common::temp_dir("slug-clash");
    let body = "nodes: [{id: n}]\njobs: [{id: j, groups: [{name: g, tasks: [{name: t}]}]}]\n";
    std::fs::write(dir.join("a.yaml"), format!("name: my scenario\n{body}")).unwrap();
    std::fs::write(dir.join("b.yaml"), format!("name: my_scenario\n{body}")).unwrap();
    let out = dir.join("out");
    let output = common::plansim(&[
        "run",
        common::arg(&dir),
        "--trace",
        "--out",
        common::arg(&out),
    ]);
    common::assert_refused(&output, &dir);
    assert_eq!(
        stderr_of(&output),
        format!(
            "{}: name: scenario names \"my_scenario\" and \"my scenario\" ({}) both become \"my_scenario\" in file names, so their traces would overwrite each other; rename one",
            dir.join("b.yaml").display(),
            dir.join("a.yaml").display()
        )
    );
    assert!(!out.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Items 6 and 13: a name with `../` never leaves the working directory,
/// and a name that looks like a formula is not one in CSV.
#[test]
fn names_reach_paths_as_slugs_and_csv_as_text() {
    let dir = common::temp_dir("name-paths");
    let scenario = dir.join("s.yaml");
    std::fs::write(
        &scenario,
        "name: \"=HYPERLINK(1)\"\nnodes: [{id: n}]\njobs: [{id: j, groups: [{name: g, tasks: [{name: t}]}]}]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("e.yaml"),
        "name: ../../escape\nscenario: s.yaml\nschedulers: [naive]\n",
    )
    .unwrap();
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_plansim"))
        .args(["sweep", "../e.yaml", "--quiet"])
        .current_dir(&work)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr_of(&output));
    let written: Vec<String> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(written, ["sweep-_escape"]);
    assert!(!dir.parent().unwrap().join("escape").exists());
    let runs = std::fs::read_to_string(work.join("sweep-_escape/runs.csv")).unwrap();
    assert!(
        runs.lines()
            .nth(1)
            .unwrap()
            .starts_with("'=HYPERLINK(1),naive,"),
        "{runs}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Items 9 and 10: a directory that is not a sweep is refused and left as
/// it was; refusals found before the first run leave nothing behind.
#[test]
fn foreign_output_directories_and_early_refusals_write_nothing() {
    let dir = common::temp_dir("foreign-out");
    std::fs::write(dir.join("index.html"), "mine").unwrap();
    let experiment = "experiments/report-grid.yaml";
    let output = common::plansim(&["sweep", experiment, "--out", common::arg(&dir), "--quiet"]);
    common::assert_refused(&output, &dir);
    assert_eq!(
        stderr_of(&output),
        format!(
            "refusing to write into {}: not written by plansim (it holds index.html, and no .plansim-output); pass --force, or choose a new or empty directory",
            dir.display()
        )
    );
    assert_eq!(common::files_under(&dir).len(), 1);
    let run = common::plansim(&[
        "run",
        "scenarios/csi-single-writer-count2.yaml",
        "--out",
        common::arg(&dir),
    ]);
    common::assert_refused(&run, &dir);
    assert_eq!(std::fs::read(dir.join("index.html")).unwrap(), b"mine");

    let fresh = dir.join("fresh");
    let jobs = common::plansim(&[
        "sweep",
        experiment,
        "--jobs",
        "65535",
        "--out",
        common::arg(&fresh),
    ]);
    common::assert_refused(&jobs, &fresh);
    assert!(!fresh.exists());

    // A shard's directory alone cannot be merged: refused before writing.
    let shard = dir.join("shard1");
    let swept = common::plansim(&[
        "sweep",
        experiment,
        "--shard",
        "1/2",
        "--out",
        common::arg(&shard),
        "--quiet",
    ]);
    assert_eq!(swept.status.code(), Some(0), "{}", stderr_of(&swept));
    let merged = common::plansim(&["merge", common::arg(&shard), "--out", common::arg(&fresh)]);
    common::assert_refused(&merged, &fresh);
    assert!(
        stderr_of(&merged).contains("shard 2/2 missing"),
        "{}",
        stderr_of(&merged)
    );
    assert!(!fresh.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
