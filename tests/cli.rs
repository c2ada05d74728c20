//! The command line's contract: exit codes, outputs, nothing written on bad input.

// A test or example prints for the person running it; plansim's own
// shell prints only through cli::output (see clippy.toml).
#![allow(clippy::disallowed_macros)]

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
fn a_value_on_the_command_line_is_quoted_escaped() {
    // clap quotes a refused value raw: a newline would forge a line of its
    // own, an ESC would reach the terminal. Each value parser and clap's
    // own "invalid value" line must show it escaped, as names are.
    let cases: [&[&str]; 4] = [
        &[
            "run",
            "scenarios",
            "--scheduler",
            "naive\nerror: forged\u{1b}[2J",
        ],
        &["run", "scenarios", "--seeds", "1,2\nerror: forged\u{1b}[2J"],
        &["run", "scenarios", "--seeds=3\nerror: forged\u{1b}[2J"],
        &["hunt", "--property", "no-lost\nerror: forged\u{1b}[2J"],
    ];
    for args in cases {
        let output = common::plansim(args);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            !stderr.lines().any(|line| line.starts_with("error: forged")),
            "{args:?}: a value forged a line:\n{stderr}"
        );
        assert!(!stderr.contains('\u{1b}'), "{args:?}: a raw ESC: {stderr}");
        assert!(stderr.contains("\\nerror: forged"), "{args:?}: {stderr}");
    }
}

#[test]
fn a_path_in_a_message_is_escaped() {
    // diff and merge name the paths they were given; a newline in one
    // must not start a line of its own.
    let dir = common::temp_dir("cli-path-escaped");
    let forged = dir.join("x\nerror: forged");
    std::fs::create_dir_all(&forged).unwrap();
    let missing = forged.join("summary.csv");
    let merge = forged.join("shard");
    std::fs::create_dir_all(&merge).unwrap();
    for args in [
        vec!["diff", common::arg(&missing), common::arg(&missing)],
        vec![
            "merge",
            common::arg(&merge),
            "-o",
            common::arg(&dir.join("merged")),
        ],
    ] {
        let output = common::plansim(&args);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            !stderr.lines().any(|line| line.starts_with("error: forged")),
            "{args:?}: a path forged a line:\n{stderr}"
        );
        assert!(stderr.contains("\\nerror: forged"), "{args:?}: {stderr}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn validate_reports_each_file() {
    let output = common::plansim(&["validate", "scenarios"]);
    assert_eq!(output.status.code(), Some(0));
    let stdout = text(&output.stdout);
    assert_eq!(stdout.lines().count(), common::all_scenario_files().len());
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
    let command = "$ plansim run scenarios/csi-single-reader-count2.yaml\n";
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
    let runs: usize = common::all_scenario_files()
        .iter()
        .map(|f| plansim::scenario::load_file(f).unwrap().policies.len() * 50)
        .sum();
    assert_eq!(summary.lines().count(), 1 + runs);
    std::fs::remove_dir_all(out).unwrap();
}

/// `-s`, `-o`, `-q` and `-V` are the long flags' short forms.
#[test]
fn short_flags_work_like_long_ones() {
    let out = common::temp_dir("short");
    let output = common::plansim(&[
        "run",
        "scenarios/csi-single-reader-count2.yaml",
        "-s",
        "5",
        "-o",
        common::arg(&out),
        "-q",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(output.stdout.is_empty(), "-q prints nothing on success");
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(
        summary
            .lines()
            .skip(1)
            .all(|row| row.split(',').nth(2) == Some("5"))
    );
    let version = common::plansim(&["-V"]);
    assert_eq!(version.status.code(), Some(0));
    assert_eq!(
        text(&version.stdout).trim(),
        format!("plansim {}", env!("CARGO_PKG_VERSION"))
    );
    // sweep and merge take -j, -o and -q (tests/sweep.rs runs them).
    for command in ["sweep", "merge"] {
        let help = text(&common::plansim(&[command, "--help"]).stdout);
        for flag in ["-o, --out", "-q, --quiet"] {
            assert!(help.contains(flag), "{command}: {flag}\n{help}");
        }
    }
    let help = text(&common::plansim(&["sweep", "--help"]).stdout);
    assert!(help.contains("-j, --jobs"), "{help}");
    std::fs::remove_dir_all(out).unwrap();
}

/// Every command's help shows its exit codes and one example of it.
#[test]
fn help_shows_exit_codes_and_an_example() {
    let top = common::plansim(&["--help"]);
    assert_eq!(top.status.code(), Some(0));
    let top = text(&top.stdout);
    assert!(top.contains("Exit codes:"), "{top}");
    assert!(top.contains("docs/scenario-format.md"), "{top}");
    for command in [
        "run",
        "validate",
        "diff",
        "sweep",
        "merge",
        "completions",
        "man",
    ] {
        let output = common::plansim(&[command, "--help"]);
        assert_eq!(output.status.code(), Some(0), "{command}");
        let help = text(&output.stdout);
        assert!(help.contains("Exit codes:"), "{command}: {help}");
        assert!(
            help.contains(&format!("Example: plansim {command} ")),
            "{command}: {help}"
        );
    }
}

#[test]
fn completions_and_man_page() {
    for shell in ["bash", "zsh", "fish"] {
        let output = common::plansim(&["completions", shell]);
        assert_eq!(output.status.code(), Some(0), "{shell}");
        let script = text(&output.stdout);
        for word in ["plansim", "sweep", "merge", "shard", "trace", "completions"] {
            assert!(script.contains(word), "{shell} completions lack {word}");
        }
    }
    let bash = text(&common::plansim(&["completions", "bash"]).stdout);
    assert!(bash.contains("complete -F"), "a bash completion function");
    let fish = text(&common::plansim(&["completions", "fish"]).stdout);
    assert!(fish.contains("complete -c plansim"));
    let zsh = text(&common::plansim(&["completions", "zsh"]).stdout);
    assert!(zsh.starts_with("#compdef plansim"));
    assert_eq!(
        common::plansim(&["completions", "powershell-9"])
            .status
            .code(),
        Some(2)
    );
    let man = common::plansim(&["man"]);
    assert_eq!(man.status.code(), Some(0));
    let man = text(&man.stdout);
    assert!(
        man.starts_with(".ie") || man.contains(".TH plansim"),
        "{man}"
    );
    for word in ["run", "sweep", "merge", "Exit codes"] {
        assert!(man.contains(word), "the man page lacks {word}");
    }
}

/// `--trace` needs `--out`: refused before anything runs, exit 2.
#[test]
fn trace_without_out_is_refused_before_running() {
    let output = common::plansim(&["run", "scenarios/csi-single-reader-count2.yaml", "--trace"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty(), "nothing ran");
    let stderr = text(&output.stderr);
    assert!(stderr.contains("--out"), "{stderr}");
}

/// An experiment given to `run` and a scenario given to `sweep` each say
/// which command they belong to; `validate` dry-runs an experiment.
#[test]
fn experiment_and_scenario_files_are_told_apart() {
    let experiment = "experiments/churn-vs-count.yaml";
    let run = common::plansim(&["run", experiment]);
    assert_eq!(run.status.code(), Some(2));
    assert!(run.stdout.is_empty());
    let stderr = text(&run.stderr);
    assert!(
        stderr.contains("this is an experiment file: use plansim sweep"),
        "{stderr}"
    );
    let out = common::temp_dir("scenario-to-sweep");
    let sweep = common::plansim(&[
        "sweep",
        "scenarios/csi-single-reader-count2.yaml",
        "-o",
        common::arg(&out.join("x")),
    ]);
    assert_eq!(sweep.status.code(), Some(2));
    let stderr = text(&sweep.stderr);
    assert!(
        stderr.contains("this is a scenario file: use plansim run"),
        "{stderr}"
    );
    assert!(!out.join("x").exists(), "nothing written");
    std::fs::remove_dir_all(out).unwrap();

    let validate = common::plansim(&["validate", experiment]);
    assert_eq!(
        validate.status.code(),
        Some(0),
        "{}",
        text(&validate.stderr)
    );
    let stdout = text(&validate.stdout);
    // The committed sweep of this experiment has one row per run.
    let runs = std::fs::read_to_string(common::repo_path(
        "results/experiments/churn-vs-count/runs.csv",
    ))
    .unwrap()
    .lines()
    .count()
        - 1;
    assert!(stdout.contains(&format!("= {runs} runs")), "{stdout}");
    assert!(stdout.contains("this is an experiment file"), "{stdout}");
    // A bad grid point is found without running anything.
    let dir = common::temp_dir("validate-experiment");
    std::fs::copy(
        common::repo_path("scenarios/csi-single-reader-count2.yaml"),
        dir.join("report.yaml"),
    )
    .unwrap();
    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        "scenario: report.yaml\nvary:\n  \"jobs[example].groups[cache].count\": [1, -2]\n",
    )
    .unwrap();
    let output = common::plansim(&["validate", common::arg(&bad)]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("count -2 is negative"),
        "{}",
        text(&output.stderr)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// A scenario with enough events (30,000 allocations) to report progress.
fn long_scenario(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("long.yaml");
    std::fs::write(
        &path,
        "name: long\nnodes:\n  - {id: \"n-{i}\", count: 300}\njobs:\n  - id: many\n    groups:\n      - name: g\n        count: 30000\n        tasks:\n          - {name: t, cpu: 10, memory: 10}\n",
    )
    .unwrap();
    path
}

/// Progress (simulated time of the horizon, events/s) is drawn on a
/// terminal, and never when stderr is a pipe or file.
#[test]
fn progress_shows_on_a_terminal_only() {
    let dir = common::temp_dir("progress");
    let scenario = long_scenario(&dir);
    let piped = common::plansim(&["run", common::arg(&scenario), "--scheduler", "naive"]);
    assert!(piped.status.success(), "{}", text(&piped.stderr));
    assert!(piped.stderr.is_empty(), "{}", text(&piped.stderr));
    // `script` runs the command on a pseudo-terminal (util-linux).
    let command = format!(
        "{} run {} --scheduler naive",
        env!("CARGO_BIN_EXE_plansim"),
        scenario.display()
    );
    match std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
    {
        Ok(tty) => {
            let shown = text(&tty.stdout);
            assert!(tty.status.success(), "{shown}");
            assert!(shown.contains("simulated"), "{shown}");
            assert!(shown.contains("of 3600s per run"), "{shown}");
            assert!(shown.contains("M events/s"), "{shown}");
        }
        Err(err) => eprintln!("no `script` to make a terminal ({err}); checked off-TTY only"),
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// The run loop's progress hook sees simulated time advance and every
/// PROGRESS_EVERY queue entries, and does not change the results.
#[test]
fn progress_hook_reports_without_changing_results() {
    let dir = common::temp_dir("progress-hook");
    let scenario = plansim::scenario::load_file(&long_scenario(&dir)).unwrap();
    let options = plansim::sim::RunOptions::new(plansim::model::policy::Policy::Naive, 0);
    let mut reports = Vec::new();
    let observed = plansim::sim::simulate_observed(&scenario, options, &mut |now, steps| {
        reports.push((now, steps));
    });
    assert!(!reports.is_empty());
    for (i, (_, steps)) in reports.iter().enumerate() {
        assert_eq!(*steps, (i as u64 + 1) * plansim::sim::PROGRESS_EVERY);
    }
    assert!(reports.windows(2).all(|w| w[0].0 <= w[1].0));
    let plain = plansim::sim::simulate(&scenario, options);
    assert_eq!(
        format!("{:?}", plain.metrics),
        format!("{:?}", observed.metrics)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// `run --out DIR` removes the traces of an earlier run in DIR it did not
/// write, and nothing else.
#[test]
fn stale_traces_are_removed_and_nothing_else() {
    let out = common::temp_dir("stale");
    let scenario = "scenarios/csi-single-reader-count2.yaml";
    let first = common::plansim(&[
        "run",
        scenario,
        "-s",
        "1",
        "-o",
        common::arg(&out),
        "--trace",
        "-q",
    ]);
    assert!(first.status.success());
    let keep = ["notes.txt", "trace-mine.csv", "trace-x-greedy-1.csv"];
    for name in keep {
        std::fs::write(out.join(name), "mine").unwrap();
    }
    let second = common::plansim(&[
        "run",
        scenario,
        "-s",
        "2",
        "-o",
        common::arg(&out),
        "--trace",
    ]);
    assert!(second.status.success());
    assert!(text(&second.stderr).contains("removed 3 trace file(s) of an earlier run"));
    let mut expected: Vec<String> = ["naive", "validate", "plan-aware"]
        .iter()
        .map(|p| format!("trace-csi-single-reader-count2-{p}-2.csv"))
        .chain(keep.iter().map(|k| k.to_string()))
        .chain([
            ".plansim-output".to_string(),
            "comparison.md".to_string(),
            "summary.csv".to_string(),
        ])
        .collect();
    expected.sort();
    assert_eq!(common::names_in(&out), expected);
    // Without --trace, every trace plansim wrote goes.
    let third = common::plansim(&["run", scenario, "-o", common::arg(&out), "-q"]);
    assert!(third.status.success());
    let mut expected: Vec<String> = keep
        .iter()
        .map(|k| k.to_string())
        .chain([
            ".plansim-output".to_string(),
            "comparison.md".to_string(),
            "summary.csv".to_string(),
        ])
        .collect();
    expected.sort();
    assert_eq!(common::names_in(&out), expected);
    std::fs::remove_dir_all(out).unwrap();
}

/// `A..B` leaves B out, `A..=B` takes it in, and the help says so.
#[test]
fn seed_ranges_exclusive_and_inclusive() {
    let seeds_of = |range: &str| -> Vec<String> {
        let out = common::temp_dir(&format!("range-{}", range.replace('=', "i")));
        let output = common::plansim(&[
            "run",
            "scenarios/csi-single-reader-count2.yaml",
            "--scheduler",
            "naive",
            "--seeds",
            range,
            "-o",
            common::arg(&out),
            "-q",
        ]);
        assert!(output.status.success(), "{}", text(&output.stderr));
        let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
        std::fs::remove_dir_all(out).unwrap();
        summary
            .lines()
            .skip(1)
            .map(|row| row.split(',').nth(2).unwrap().to_string())
            .collect()
    };
    assert_eq!(seeds_of("3..5"), ["3", "4"]);
    assert_eq!(seeds_of("3..=5"), ["3", "4", "5"]);
    let help = text(&common::plansim(&["run", "--help"]).stdout);
    assert!(
        help.contains("A..B (B excluded)") && help.contains("A..=B (B included)"),
        "{help}"
    );
}

/// scripts/regenerate-results.sh runs the binary from CARGO_TARGET_DIR
/// when it is set. A stand-in `cargo` (that builds nothing) and `plansim`
/// (that logs its arguments) show which binary the script calls.
#[test]
fn regenerate_script_honours_cargo_target_dir() {
    use std::os::unix::fs::PermissionsExt;
    let dir = common::temp_dir("target-dir");
    let (bin, target) = (dir.join("bin"), dir.join("target"));
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(target.join("release")).unwrap();
    let log = dir.join("calls.log");
    let scripts = [
        (bin.join("cargo"), "#!/bin/sh\nexit 0\n".to_string()),
        (
            target.join("release/plansim"),
            format!("#!/bin/sh\necho \"$@\" >> '{}'\n", log.display()),
        ),
    ];
    for (path, body) in &scripts {
        std::fs::write(path, body).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = std::process::Command::new(common::repo_path("scripts/regenerate-results.sh"))
        .arg(dir.join("out"))
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(calls.starts_with("run scenarios/ --out"), "{calls}");
    let experiments = common::yaml_files("experiments").len();
    assert_eq!(
        calls.matches("sweep experiments/").count(),
        experiments,
        "{calls}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// A panic (a bug) prints one paragraph, not Rust's message and backtrace,
/// writes a crash file in the temp dir and exits 101; when the file cannot
/// be written the paragraph says so. The panic is forced with the test-only
/// PLANSIM_TEST_PANIC (src/cli/crash.rs says why it exists): no input
/// should be able to make plansim panic.
#[test]
fn a_panic_prints_one_paragraph_and_writes_a_crash_file() {
    let tmp = common::temp_dir("crash");
    let run = |tmpdir: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_plansim"))
            .args(["run", "my scenario's.yaml", "--quiet"])
            .env("PLANSIM_TEST_PANIC", "1")
            .env("RUST_BACKTRACE", "1")
            .env("TMPDIR", tmpdir)
            .output()
            .unwrap()
    };
    let output = run(&tmp);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(101), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one paragraph: {stderr}");
    assert!(stderr.starts_with("plansim: internal error: PLANSIM_TEST_PANIC is set"));
    assert!(stderr.contains("This is a bug in plansim"), "{stderr}");
    assert!(!stderr.contains("panicked at"), "{stderr}");
    assert!(!stderr.contains("stack backtrace"), "{stderr}");
    let files = common::names_in(&tmp);
    assert_eq!(files.len(), 1, "{files:?}");
    let crash = tmp.join(&files[0]);
    assert!(files[0].starts_with("plansim-crash-"), "{files:?}");
    assert!(stderr.contains(&crash.display().to_string()), "{stderr}");
    let report = std::fs::read_to_string(&crash).unwrap();
    assert!(
        report.contains("message: PLANSIM_TEST_PANIC is set"),
        "{report}"
    );
    assert!(report.contains("location: src/cli/crash.rs:"), "{report}");
    assert!(
        report.contains(&format!("version: plansim {}", env!("CARGO_PKG_VERSION"))),
        "{report}"
    );
    assert!(
        report.contains(r" run 'my scenario'\''s.yaml' --quiet"),
        "{report}"
    );

    let missing = tmp.join("no-such-dir");
    let output = run(&missing);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(101), "{stderr}");
    assert!(
        stderr.contains("No crash file could be written ("),
        "{stderr}"
    );
    assert!(!missing.exists());
    std::fs::remove_dir_all(tmp).unwrap();
}
