//! The output rules (issue 28, items 3, 7, 8), from the binary: every
//! command that writes (`run --out`, `run --report`, `sweep`/`merge --out`,
//! `hunt -o`, `import -o`) creates new output or replaces only what plansim
//! wrote; never an input, a symlink, a FIFO or a device; `--force` for a
//! user's file; a refused command leaves nothing; stdout that cannot be
//! written is an error (exit 2), a reader that goes away is not.
//!
//! Each refusal's message is kept in `tests/bad/outputs/<case>.expected`
//! (the test directory written as `DIR`); after an intended change of
//! wording, regenerate them with `PLANSIM_BLESS=1 cargo test --test outputs`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const SCENARIO: &str = "scenarios/csi-single-reader-count2.yaml";
const EXPORT: &str = "tests/fixtures/nomad/export";

/// Checks that `output` is a refusal (exit 2, no panic) whose stderr, with
/// `dir` written as `DIR`, is the snapshot `case`.
fn refused(case: &str, output: &Output, dir: &Path) {
    common::assert_refused(output, Path::new(case));
    let stderr = String::from_utf8_lossy(&output.stderr)
        .replace(common::arg(dir), "DIR")
        .trim_end()
        .to_string();
    let snapshot = common::repo_path(&format!("tests/bad/outputs/{case}.expected"));
    if std::env::var_os("PLANSIM_BLESS").is_some() {
        std::fs::create_dir_all(snapshot.parent().unwrap()).unwrap();
        std::fs::write(&snapshot, format!("{stderr}\n")).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&snapshot)
        .unwrap_or_else(|_| panic!("{case}: no snapshot (run with PLANSIM_BLESS=1)"));
    assert_eq!(expected.trim_end(), stderr, "{case}");
    assert!(output.stdout.is_empty(), "{case}: nothing on stdout");
}

fn import(out: &Path, extra: &[&str]) -> Output {
    import_from(&common::repo_path(EXPORT), out, extra)
}

fn import_from(export: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "import",
        "nomad",
        common::arg(export),
        "-o",
        common::arg(out),
    ];
    args.extend_from_slice(extra);
    common::plansim(&args)
}

fn mkfifo(path: &Path) -> bool {
    Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}

fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

#[test]
fn import_replaces_only_its_own_unedited_file() {
    let dir = common::temp_dir("out-import");
    let user = dir.join("user.yaml");
    std::fs::write(&user, "mine\n").unwrap();
    refused("import-user-file", &import(&user, &[]), &dir);
    assert_eq!(std::fs::read(&user).unwrap(), b"mine\n");
    assert_eq!(common::names_in(&dir), ["user.yaml"], "no temporary left");

    // --force replaces a user's file.
    let forced = import(&user, &["--force"]);
    assert_eq!(forced.status.code(), Some(0));
    assert!(
        std::fs::read_to_string(&user)
            .unwrap()
            .starts_with("# Written by plansim import nomad; fingerprint ")
    );
    // Its own file, unedited, is replaced without --force...
    assert_eq!(import(&user, &[]).status.code(), Some(0));
    // ...but not once edited.
    let mut edited = std::fs::read_to_string(&user).unwrap();
    edited = edited.replace("enforces_access_mode: false", "enforces_access_mode: true");
    std::fs::write(&user, &edited).unwrap();
    refused("import-edited-file", &import(&user, &[]), &dir);
    assert_eq!(std::fs::read_to_string(&user).unwrap(), edited);
}

#[test]
fn import_never_replaces_an_input_even_with_force() {
    let dir = common::temp_dir("out-import-input");
    let snap = dir.join("snap");
    let copied = Command::new("cp")
        .args([
            "-r",
            common::arg(&common::repo_path(EXPORT)),
            common::arg(&snap),
        ])
        .status()
        .unwrap();
    assert!(copied.success());
    let nodes = snap.join("nodes.json");
    let before = std::fs::read(&nodes).unwrap();
    refused(
        "import-input-file",
        &import_from(&snap, &nodes, &["--force"]),
        &dir,
    );
    assert_eq!(std::fs::read(&nodes).unwrap(), before);
    // The same input by another name (a symlink is refused as such, a hard
    // link as the input it is).
    let linked = dir.join("linked.json");
    std::fs::hard_link(&nodes, &linked).unwrap();
    let output = import_from(&snap, &linked, &["--force"]);
    common::assert_refused(&output, &linked);
    assert!(String::from_utf8_lossy(&output.stderr).contains("it is one of this command's inputs"));
    assert_eq!(std::fs::read(&nodes).unwrap(), before);
}

#[cfg(unix)]
#[test]
fn import_never_replaces_a_fifo_or_a_symlink_to_a_device() {
    let dir = common::temp_dir("out-import-special");
    let fifo = dir.join("fifo.yaml");
    if mkfifo(&fifo) {
        refused("import-fifo", &import(&fifo, &["--force"]), &dir);
        assert!(is_fifo(&fifo), "the FIFO is still there");
    }
    let null = dir.join("null.yaml");
    std::os::unix::fs::symlink("/dev/null", &null).unwrap();
    refused(
        "import-symlink-to-dev-null",
        &import(&null, &["--force"]),
        &dir,
    );
    assert_eq!(
        std::fs::read_link(&null).unwrap(),
        PathBuf::from("/dev/null")
    );
    let mut left = common::names_in(&dir);
    left.retain(|name| name != "fifo.yaml");
    assert_eq!(left, ["null.yaml"], "no temporary left");
}

#[test]
fn report_and_hunt_refuse_a_users_file_of_the_same_name() {
    let dir = common::temp_dir("out-report-user");
    let report = dir.join("report");
    std::fs::create_dir_all(&report).unwrap();
    std::fs::write(report.join("index.html"), "mine").unwrap();
    let output = common::plansim(&["run", SCENARIO, "--report", common::arg(&report)]);
    refused("report-user-index", &output, &dir);
    assert_eq!(common::names_in(&report), ["index.html"]);
    assert_eq!(std::fs::read(report.join("index.html")).unwrap(), b"mine");

    let found = dir.join("found");
    std::fs::create_dir_all(&found).unwrap();
    std::fs::write(found.join("validate-catches.yaml"), "mine").unwrap();
    let hunt = common::plansim(&[
        "hunt",
        "--property",
        "validate-catches",
        "--budget",
        "100",
        "--quiet",
        "-o",
        common::arg(&found),
    ]);
    refused("hunt-user-file", &hunt, &dir);
    assert_eq!(common::names_in(&found), ["validate-catches.yaml"]);
    assert_eq!(
        std::fs::read(found.join("validate-catches.yaml")).unwrap(),
        b"mine"
    );

    // --force writes a report beside the user's other files.
    std::fs::write(report.join("notes.txt"), "mine too").unwrap();
    std::fs::remove_file(report.join("index.html")).unwrap();
    let forced = common::plansim(&[
        "run",
        SCENARIO,
        "--report",
        common::arg(&report),
        "--force",
        "--quiet",
    ]);
    assert_eq!(forced.status.code(), Some(0));
    assert_eq!(
        common::names_in(&report),
        [
            "index.html",
            "notes.txt",
            "scenario-csi-single-reader-count2.html"
        ]
    );
    // The directory now holds plansim's report (its index.html says so, as
    // one from before markers would): it is written again without --force,
    // and the user's file stays.
    let again = common::plansim(&["run", SCENARIO, "--report", common::arg(&report)]);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(
        std::fs::read(report.join("notes.txt")).unwrap(),
        b"mine too"
    );
}

#[test]
fn a_refused_run_leaves_no_report_folder() {
    let dir = common::temp_dir("out-report-refused");
    let report = dir.join("new/report");
    let output = common::plansim(&[
        "run",
        SCENARIO,
        "tests/bounded/zero-time-loop.yaml",
        "--report",
        common::arg(&report),
    ]);
    common::assert_refused(&output, &report);
    assert!(!dir.join("new").exists(), "nothing is left behind");
    // A hunt that finds nothing leaves no directory either.
    let hunt_out = dir.join("hunt");
    let hunt = common::plansim(&[
        "hunt",
        "--property",
        "plan-aware-never-violates",
        "--budget",
        "5",
        "--quiet",
        "-o",
        common::arg(&hunt_out),
    ]);
    assert_eq!(hunt.status.code(), Some(0));
    assert!(!hunt_out.exists());
}

#[cfg(unix)]
#[test]
fn a_run_never_replaces_a_symlink_or_fifo_in_its_own_directory() {
    let dir = common::temp_dir("out-run-special");
    let out = dir.join("out");
    let first = common::plansim(&["run", SCENARIO, "--out", common::arg(&out), "--quiet"]);
    assert_eq!(first.status.code(), Some(0));
    assert!(common::names_in(&out).contains(&".plansim-output".to_string()));
    std::fs::remove_file(out.join("summary.csv")).unwrap();
    std::os::unix::fs::symlink("/dev/null", out.join("summary.csv")).unwrap();
    let output = common::plansim(&["run", SCENARIO, "--out", common::arg(&out), "--force"]);
    refused("run-symlinked-summary", &output, &dir);
    assert!(
        std::fs::symlink_metadata(out.join("summary.csv"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    std::fs::remove_file(out.join("summary.csv")).unwrap();
    std::fs::remove_file(out.join("comparison.md")).unwrap();
    if mkfifo(&out.join("comparison.md")) {
        let output = common::plansim(&["run", SCENARIO, "--out", common::arg(&out)]);
        refused("run-fifo-comparison", &output, &dir);
        assert!(is_fifo(&out.join("comparison.md")));
    }
    assert!(
        common::names_in(&out)
            .iter()
            .all(|name| !name.contains(".tmp-")),
        "no temporary left: {:?}",
        common::names_in(&out)
    );
}

#[test]
fn merge_refuses_an_interrupted_shard_and_a_shard_as_output() {
    let dir = common::temp_dir("out-merge");
    let experiment = "experiments/report-grid.yaml";
    let shard = |i: &str, name: &str| {
        let out = dir.join(name);
        let swept = common::plansim(&[
            "sweep",
            experiment,
            "--shard",
            i,
            "--out",
            common::arg(&out),
            "--quiet",
        ]);
        assert_eq!(swept.status.code(), Some(0));
        out
    };
    let (one, two) = (shard("1/2", "shard1"), shard("2/2", "shard2"));
    // Shard 2 interrupted before its last three runs (the highest-numbered:
    // the journal is in the order runs finished).
    let journal = two.join(".plansim-journal.csv");
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let run = |line: &&str| line.split(',').next().unwrap().parse::<usize>().unwrap();
    lines[1..].sort_by_key(run);
    lines.truncate(lines.len() - 3);
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();
    let merged = dir.join("merged");
    let output = common::plansim(&[
        "merge",
        common::arg(&one),
        common::arg(&two),
        "--out",
        common::arg(&merged),
    ]);
    refused("merge-interrupted-shard", &output, &dir);
    assert!(!merged.exists(), "no inputs/ or anything else left");

    let whole = shard("2/2", "shard2-whole");
    let before = common::files_under(&one);
    let output = common::plansim(&[
        "merge",
        common::arg(&one),
        common::arg(&whole),
        "--out",
        common::arg(&one),
        "--force",
    ]);
    refused("merge-into-a-shard", &output, &dir);
    assert_eq!(common::files_under(&one), before, "the shard is untouched");
}

#[cfg(unix)]
#[test]
fn stdout_that_cannot_be_written_exits_2_and_a_reader_that_left_is_quiet() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    for args in [
        vec!["run", SCENARIO],
        vec!["validate", "scenarios/"],
        vec!["diff", "results", "results"],
        vec!["--help"],
        vec!["man"],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_plansim"))
            .args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.ends_with("cannot write to stdout: No space left on device (os error 28)\n"),
            "{args:?}: {stderr}"
        );
    }
    // `plansim run scenarios/ --seeds 3 | head -1`: the reader goes after one
    // line; plansim finishes quietly.
    let mut child = Command::new(env!("CARGO_BIN_EXE_plansim"))
        .args(["run", "scenarios/", "--seeds", "3"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    drop(stdout);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
}

/// `plansim ... >&-`: a command started with stdout closed that prints
/// exits 2 saying so (Rust's runtime would have put /dev/null there and
/// exited 0), and one that prints nothing (`--quiet` with `--out`) is
/// unaffected; a file it opens never takes stdout's number.
#[cfg(target_os = "linux")]
#[test]
fn a_stdout_closed_at_start_is_an_error_when_printed_to() {
    let dir = common::temp_dir("out-closed-stdout");
    let closed = |args: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("exec \"$0\" {args} >&-"))
            .arg(env!("CARGO_BIN_EXE_plansim"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap()
    };
    for args in [format!("validate {SCENARIO}"), "--version".to_string()] {
        let output = closed(&args);
        assert_eq!(output.status.code(), Some(2), "{args}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.ends_with("cannot write to stdout: Bad file descriptor (os error 9)\n"),
            "{args}: {stderr}"
        );
    }
    let out = dir.join("out");
    let output = closed(&format!("run {SCENARIO} --quiet --out {}", out.display()));
    assert_eq!(output.status.code(), Some(0));
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(summary.starts_with("scenario,"), "{summary}");
}

/// `run --trace` of a thousand seeds holds no trace in memory: it runs
/// within a 1 GiB address space and leaves only its files.
#[cfg(target_os = "linux")]
#[test]
fn a_thousand_traced_seeds_fit_in_one_gib() {
    let dir = common::temp_dir("out-trace-memory");
    let out = dir.join("out");
    let output = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 1048576 && exec \"$0\" run {SCENARIO} --seeds 1000 --trace --out \"$1\" --quiet"
        ))
        .arg(env!("CARGO_BIN_EXE_plansim"))
        .arg(&out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let names = common::names_in(&out);
    let traces = names.iter().filter(|n| n.starts_with("trace-")).count();
    assert_eq!(traces, 3000, "1000 seeds x 3 policies");
    assert_eq!(
        names.len(),
        traces + 3,
        "summary.csv, comparison.md and the marker, nothing else"
    );
}

/// Names are data in the output rules' messages too: a directory name and
/// a file in it holding a newline and an ESC are printed escaped.
#[test]
fn a_refusal_quotes_odd_names_escaped() {
    let dir = common::temp_dir("out-odd-names");
    let out = dir.join("out\u{1b}[31m\nFORGED");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("mine\u{1b}[1m\nFORGED"), "the user's").unwrap();
    let output = common::plansim(&["run", SCENARIO, "--out", common::arg(&out)]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("out\\u{1b}[31m\\nFORGED"), "{stderr}");
    assert!(stderr.contains("mine\\u{1b}[1m\\nFORGED"), "{stderr}");
    assert!(!stderr.contains('\u{1b}'), "{stderr}");
    assert!(!stderr.lines().any(|l| l.starts_with("FORGED")), "{stderr}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_stderr_that_cannot_be_written_does_not_turn_an_error_into_a_crash() {
    // `eprintln!` panics on a full or closed stderr (a crash, exit 101):
    // every message goes through one writer that loses it instead.
    let dir = common::temp_dir("outputs-stderr-full");
    let bad = dir.join("bad.yaml");
    std::fs::write(&bad, "nodes: 3\n").unwrap();
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return; // no /dev/full on this system
    };
    let output = Command::new(env!("CARGO_BIN_EXE_plansim"))
        .args(["validate", common::arg(&bad)])
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "bad input, not a crash");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_interrupted_run_removes_what_it_had_not_finished_and_the_directory_it_created() {
    // SIGTERM (what a batch engine sends) in the middle of a traced run:
    // every trace being written is a temporary, and none is left behind.
    let dir = common::temp_dir("outputs-interrupt");
    let out = dir.join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_plansim"))
        .args(["run", &common::repo_path(SCENARIO).display().to_string()])
        .args(["--seeds", "100000", "--trace", "--quiet", "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let temporaries = |dir: &Path| -> usize {
        std::fs::read_dir(dir).map_or(0, |entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
                .count()
        })
    };
    // Polled every 2 ms for at most 2 minutes (a count, not a clock).
    let mut polls = 0;
    while temporaries(&out) == 0 {
        polls += 1;
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it was interrupted"
        );
        assert!(polls < 60_000, "no trace was ever written");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on our own child's pid, with a valid signal.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert_eq!(temporaries(&out), 0, "no temporary is left");
    // The run created `out`: an interrupted run leaves no directory either,
    // as a refused one leaves none (exit runs no Drop: outdir's registry).
    assert!(
        !out.exists(),
        "the output directory the run created is gone"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
