//! Turning command-line paths into loaded scenarios.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::model::scenario::Scenario;
use crate::scenario::{LoadError, load_file};

/// Expands each path: a directory stands for its `*.yaml` and `*.yml` files, sorted.
pub fn scenario_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = std::fs::read_dir(path)
                .map_err(|err| format!("{}: cannot read directory: {err}", path.display()))?;
            let mut found: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|p| {
                    p.is_file()
                        && matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"))
                })
                .collect();
            found.sort();
            if found.is_empty() {
                return Err(format!(
                    "{}: no *.yaml files in this directory",
                    path.display()
                ));
            }
            files.extend(found);
        } else if path.exists() {
            files.push(path.clone());
        } else {
            return Err(format!("{}: no such file or directory", path.display()));
        }
    }
    Ok(files)
}

/// Loads every file, reporting every bad one (not just the first).
pub fn load_scenarios(files: &[PathBuf]) -> Result<Vec<Scenario>, Vec<LoadError>> {
    let mut scenarios = Vec::new();
    let mut errors = Vec::new();
    for file in files {
        match load_file(file) {
            Ok(scenario) => scenarios.push((file.as_path(), scenario)),
            Err(err) => errors.push(err),
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
                    first.display()
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
                    first.display()
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
