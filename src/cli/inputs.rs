//! Turning command-line paths into loaded scenarios.

use super::output::errln;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::model::scenario::Scenario;
use crate::scenario::{LoadError, load_file_with_warnings};

/// How deep `scenario_files` looks below a directory given on the command line.
const MAX_DIR_DEPTH: usize = 8;

/// Expands each path: a directory stands for every `*.yaml` and `*.yml`
/// file in it and in its subdirectories (sorted by path; hidden and
/// symlinked directories are skipped, at most MAX_DIR_DEPTH levels down),
/// so `plansim run scenarios/` also runs `scenarios/nomad/`.
pub fn scenario_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found = Vec::new();
            yaml_files_below(path, 0, &mut found)?;
            found.sort();
            if found.is_empty() {
                return Err(format!(
                    "{}: no *.yaml files in this directory",
                    crate::names::one_line_path(path)
                ));
            }
            files.extend(found);
        } else if path.exists() {
            files.push(path.clone());
        } else {
            return Err(format!(
                "{}: no such file or directory",
                crate::names::one_line_path(path)
            ));
        }
    }
    Ok(files)
}

fn yaml_files_below(dir: &Path, depth: usize, found: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|err| {
        format!(
            "{}: cannot read directory: {err}",
            crate::names::one_line_path(dir)
        )
    })?;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if kind.is_dir() && !hidden && depth < MAX_DIR_DEPTH {
            yaml_files_below(&path, depth + 1, found)?;
        } else if path.is_file()
            && matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml")
            )
        {
            found.push(path);
        }
    }
    Ok(())
}

/// Loads every file, reporting every bad one (not just the first).
/// Warnings go to stderr, or with `strict` are errors.
pub fn load_scenarios(files: &[PathBuf], strict: bool) -> Result<Vec<Scenario>, Vec<LoadError>> {
    let mut scenarios = Vec::new();
    let mut errors = Vec::new();
    for file in files {
        if file_kind(file) == FileKind::Experiment {
            errors.push(experiment_given(file));
            continue;
        }
        match load_checked(file, strict) {
            Ok(scenario) => scenarios.push((file.as_path(), scenario)),
            Err(mut errs) => errors.append(&mut errs),
        }
    }
    let mut seen: BTreeMap<String, &Path> = BTreeMap::new();
    let mut slugs: BTreeMap<String, (&str, &Path)> = BTreeMap::new();
    for (file, scenario) in &scenarios {
        let slug = crate::names::slug(&scenario.name);
        if let Some(&(other, first)) = slugs.get(&slug)
            && other != scenario.name
        {
            errors.push(LoadError {
                file: file.display().to_string(),
                position: None,
                message: format!(
                    "name: scenario names \"{}\" and \"{other}\" ({}) both become \"{slug}\" in file names, so their traces would overwrite each other; rename one",
                    scenario.name,
                    crate::names::one_line_path(first)
                ),
            });
        }
        slugs.entry(slug).or_insert((&scenario.name, file));
        if let Some(first) = seen.insert(scenario.name.clone(), file) {
            errors.push(LoadError {
                file: file.display().to_string(),
                position: None,
                message: format!(
                    "name: scenario name \"{}\" is also used by {}; results are keyed by name, so names must be unique",
                    scenario.name,
                    crate::names::one_line_path(first)
                ),
            });
        }
    }
    if errors.is_empty() {
        Ok(scenarios.into_iter().map(|(_, s)| s).collect())
    } else {
        Err(errors)
    }
}

/// What a YAML file holds, judged by its top-level keys: an experiment
/// names its scenario with `scenario:`, a scenario describes a cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    Experiment,
    Scenario,
    /// Neither: the loader's own error will say what is wrong.
    Unknown,
}

/// Top-level keys only a scenario has.
const SCENARIO_KEYS: [&str; 8] = [
    "nodes", "plugins", "volumes", "jobs", "events", "expect", "cluster", "horizon",
];

/// Reads the top-level keys of a block-style YAML mapping (lines that start
/// in column 0 with `key:`), enough to tell the two kinds of file apart
/// before either loader runs. A file it cannot read is `Unknown`.
pub fn file_kind(path: &Path) -> FileKind {
    // The one size-limited reader: a FIFO or device is refused unread.
    let limit = crate::scenario::limits::MAX_FILE_BYTES as u64;
    let Ok(text) = crate::fsio::read_text_limited(path, limit, "MAX_FILE_BYTES") else {
        return FileKind::Unknown;
    };
    let keys: Vec<&str> = text
        .lines()
        .filter(|line| !line.starts_with([' ', '\t', '#', '-']))
        .filter_map(|line| line.split_once(':'))
        .map(|(key, _)| key.trim().trim_matches(['"', '\'']))
        .collect();
    if keys.contains(&"scenario") {
        FileKind::Experiment
    } else if keys.iter().any(|key| SCENARIO_KEYS.contains(key)) {
        FileKind::Scenario
    } else {
        FileKind::Unknown
    }
}

/// The error for an experiment file given where a scenario is expected.
pub fn experiment_given(file: &Path) -> LoadError {
    LoadError {
        file: file.display().to_string(),
        position: None,
        message: format!(
            "this is an experiment file: use plansim sweep {} (or plansim validate to check its grid)",
            crate::names::one_line_path(file)
        ),
    }
}

/// Loads one scenario. Its warnings are printed to stderr; with `strict`
/// they are the errors that refuse it.
pub fn load_checked(file: &Path, strict: bool) -> Result<Scenario, Vec<LoadError>> {
    let (scenario, warnings) = load_file_with_warnings(file).map_err(|err| vec![err])?;
    if strict && !warnings.is_empty() {
        return Err(warnings
            .into_iter()
            .map(|mut w| {
                w.message = format!("{} (an error under --strict)", w.message);
                w
            })
            .collect());
    }
    for warning in warnings {
        errln!("warning: {warning}");
    }
    Ok(scenario)
}
