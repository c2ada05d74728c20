//! Reading a summary.csv back: the contract's columns checked, rows keyed by
//! (scenario, scheduler, seed).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::summary::{KEY_COLUMNS, VERSION_COLUMN};
use crate::model::metrics::Metric;
use crate::model::policy::Policy;

/// A row's identity, ordered as summary.csv sorts rows.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RowKey {
    pub scenario: String,
    pub policy: Policy,
    pub seed: u64,
}

impl std::fmt::Display for RowKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} / {} / {}", self.scenario, self.policy, self.seed)
    }
}

/// A parsed results file: value columns (every column after the keys) and
/// rows of their values.
#[derive(Clone, Debug, PartialEq)]
pub struct ResultsTable {
    pub source: String,
    pub columns: Vec<String>,
    pub rows: BTreeMap<RowKey, Vec<String>>,
}

impl ResultsTable {
    /// The value of `column` in `row`, if both exist.
    pub fn value<'a>(&'a self, row: &'a [String], column: &str) -> Option<&'a str> {
        self.columns
            .iter()
            .position(|c| c == column)
            .map(|i| row[i].as_str())
    }
}

/// A summary.csv path, or a directory holding one.
pub fn resolve_path(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join("summary.csv")
    } else {
        path.to_path_buf()
    }
}

/// Reads and checks a results file. Errors name the file and what is wrong.
pub fn read(path: &Path) -> Result<ResultsTable, String> {
    let file = resolve_path(path);
    let label = file.display().to_string();
    let bytes = std::fs::read(&file).map_err(|err| format!("{label}: cannot read: {err}"))?;
    parse(&bytes, &label)
}

/// Parses results text; `label` names it in errors.
pub fn parse(bytes: &[u8], label: &str) -> Result<ResultsTable, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(bytes);
    let header: Vec<String> = reader
        .headers()
        .map_err(|err| format!("{label}: not a CSV file: {err}"))?
        .iter()
        .map(str::to_string)
        .collect();
    let required: Vec<&str> = KEY_COLUMNS
        .iter()
        .copied()
        .chain(Metric::ALL.iter().map(|m| m.name()))
        .collect();
    for (index, expected) in required.iter().enumerate() {
        match header.get(index) {
            Some(actual) if actual == expected => {}
            Some(actual) => {
                return Err(format!(
                    "{label}: column {} is \"{actual}\" but summary.csv has \"{expected}\" there (required columns, in order: {}; see docs/results-format.md)",
                    index + 1,
                    required.join(",")
                ));
            }
            None => {
                return Err(format!(
                    "{label}: missing column \"{expected}\" (found {} columns)",
                    header.len()
                ));
            }
        }
    }
    let columns: Vec<String> = header[KEY_COLUMNS.len()..].to_vec();
    let mut rows = BTreeMap::new();
    for (index, record) in reader.records().enumerate() {
        let line = index + 2;
        let record = record.map_err(|err| format!("{label}:{line}: {err}"))?;
        if record.len() != header.len() {
            return Err(format!(
                "{label}:{line}: {} fields, the header has {}",
                record.len(),
                header.len()
            ));
        }
        let policy = Policy::from_name(&record[1])
            .ok_or_else(|| format!("{label}:{line}: unknown scheduler \"{}\"", &record[1]))?;
        let seed = record[2].parse::<u64>().map_err(|_| {
            format!(
                "{label}:{line}: seed \"{}\" is not a whole number",
                &record[2]
            )
        })?;
        let key = RowKey {
            scenario: record[0].to_string(),
            policy,
            seed,
        };
        let values: Vec<String> = record
            .iter()
            .skip(KEY_COLUMNS.len())
            .map(str::to_string)
            .collect();
        if rows.insert(key.clone(), values).is_some() {
            return Err(format!("{label}:{line}: row {key} appears twice"));
        }
    }
    Ok(ResultsTable {
        source: label.to_string(),
        columns,
        rows,
    })
}

/// Whether a column is provenance, not a result.
pub fn is_provenance(column: &str) -> bool {
    column == VERSION_COLUMN
}
