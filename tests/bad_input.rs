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
