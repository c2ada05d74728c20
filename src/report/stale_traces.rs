//! Trace files left in an output directory by an earlier `run --out`.
//! A directory reused with other scenarios, seeds or policies would
//! otherwise mix old event logs with new ones.

use std::collections::BTreeSet;
use std::path::Path;

use crate::model::policy::Policy;

/// Whether `name` is one plansim writes for `--trace`:
/// `trace-<scenario>-<scheduler>-<seed>.csv` with a known scheduler and a
/// whole-number seed. Anything else in the directory is the user's.
pub fn is_trace_file_name(name: &str) -> bool {
    let Some(middle) = name
        .strip_prefix("trace-")
        .and_then(|rest| rest.strip_suffix(".csv"))
    else {
        return false;
    };
    let Some((head, seed)) = middle.rsplit_once('-') else {
        return false;
    };
    if seed.is_empty() || !seed.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    Policy::ALL.iter().any(|policy| {
        head.strip_suffix(policy.name())
            .and_then(|scenario| scenario.strip_suffix('-'))
            .is_some_and(|scenario| !scenario.is_empty())
    })
}

/// Removes the trace files in `dir` that this run did not write; returns
/// their names. Only names [`is_trace_file_name`] recognises are touched.
pub fn remove_stale(dir: &Path, written: &BTreeSet<String>) -> Result<Vec<String>, String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|err| format!("{}: cannot read: {err}", crate::names::one_line_path(dir)))?;
    let mut stale: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| is_trace_file_name(name) && !written.contains(name))
        .collect();
    stale.sort();
    for name in &stale {
        let path = dir.join(name);
        std::fs::remove_file(&path).map_err(|err| {
            format!(
                "{}: cannot remove a stale trace: {err}",
                crate::names::one_line_path(&path)
            )
        })?;
    }
    Ok(stale)
}

#[cfg(test)]
mod tests {
    use super::is_trace_file_name;

    #[test]
    fn recognises_only_trace_names_plansim_writes() {
        assert!(is_trace_file_name("trace-report-naive-7.csv"));
        assert!(is_trace_file_name("trace-a-b-plan-aware-0.csv"));
        assert!(is_trace_file_name("trace-x-validate-123.csv"));
        assert!(!is_trace_file_name("trace-report-naive-.csv"));
        assert!(!is_trace_file_name("trace-report-greedy-7.csv"));
        assert!(!is_trace_file_name("trace-naive-7.csv"));
        assert!(!is_trace_file_name("trace-report-naive-7.csv.bak"));
        assert!(!is_trace_file_name("summary.csv"));
        assert!(!is_trace_file_name("my-trace-report-naive-7.csv"));
        assert!(!is_trace_file_name("trace-report-naive-7x.csv"));
    }
}
