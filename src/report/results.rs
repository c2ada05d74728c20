//! Reading a summary.csv back: the contract's columns checked, rows keyed by
//! (scenario, scheduler, seed).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::summary::{KEY_COLUMNS, VERSION_COLUMN};
use crate::model::metrics::{Metric, MetricValue};
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
    let label = crate::names::one_line_path(&file);
    let bytes =
        crate::fsio::read_limited(&file, crate::fsio::MAX_RESULTS_BYTES, "MAX_RESULTS_BYTES")
            .map_err(|err| format!("{label}: {}", err.message()))?;
    parse(&bytes, &label)
}

/// Parses results text; `label` names it in errors.
pub fn parse(bytes: &[u8], label: &str) -> Result<ResultsTable, String> {
    // plansim ends every line with a newline: a file without one was cut short.
    if !bytes.contains(&b'\n') {
        return Err(format!(
            "{label}: the file ends inside its header line (cut short?); expected a summary.csv written by plansim run"
        ));
    }
    if !bytes.ends_with(b"\n") {
        let line = bytes.iter().filter(|&&b| b == b'\n').count() + 1;
        return Err(format!(
            "{label}:{line}: the last row does not end with a newline (cut short?); expected a complete summary.csv"
        ));
    }
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
        .chain(Metric::ALL[..Metric::REQUIRED].iter().map(|m| m.name()))
        .collect();
    for (index, expected) in required.iter().enumerate() {
        match header.get(index) {
            Some(actual) if actual == expected => {}
            Some(actual) => {
                return Err(format!(
                    "{label}: column {} is {} but summary.csv has \"{expected}\" there (required columns, in order: {}; see docs/results-format.md)",
                    index + 1,
                    crate::names::echoed_key(actual),
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
        for (offset, (column, value)) in header.iter().zip(record.iter()).enumerate() {
            check_value(column, value)
                .map_err(|problem| format!("{label}:{line}:{}: {problem}", offset + 1))?;
        }
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

/// Checks one value: a count is a whole number of at least 0; seconds are
/// a finite number of at least 0 (`first_full_s`, `time_to_deploy_s` may be empty: never
/// reached); a column plansim does not know is empty or a finite number.
/// Keys and provenance are text. NaN, infinities, signs and words are
/// malformed input, not data to compare.
fn check_value(column: &str, value: &str) -> Result<(), String> {
    if KEY_COLUMNS.contains(&column) || is_provenance(column) {
        // Text that `diff` prints: no control characters.
        return crate::names::check_text(value, false)
            .map_err(|problem| format!("{column} \"{}\" {problem}", crate::names::shown(value)));
    }
    let seconds = |text: &str| {
        !text.starts_with(['-', '+'])
            && text.parse::<f64>().is_ok_and(|n| n.is_finite() && n >= 0.0)
    };
    let (ok, expected) = match Metric::from_name(column) {
        Some(metric) if metric.is_seconds() && !metric.may_be_never() => (
            seconds(value),
            "seconds, a number of at least 0 (e.g. 12.500)",
        ),
        Some(metric) if metric.is_seconds() => (
            value.is_empty() || seconds(value),
            "seconds, a number of at least 0 (e.g. 12.500), or nothing (never reached)",
        ),
        Some(metric) => (
            MetricValue::parse(metric, value).is_some(),
            "a whole number of at least 0",
        ),
        None => (
            value.is_empty() || value.parse::<f64>().is_ok_and(f64::is_finite),
            "a finite number or nothing",
        ),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{column} is \"{}\", expected {expected}",
            value.escape_debug()
        ))
    }
}

/// Whether a column is provenance, not a result.
pub fn is_provenance(column: &str) -> bool {
    column == VERSION_COLUMN
}
