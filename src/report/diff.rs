//! Comparing two results files metric by metric: what `plansim diff` prints.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::results::{ResultsTable, RowKey, is_provenance};

/// Tolerances: a change within either bound is not a difference.
#[derive(Clone, Debug, Default)]
pub struct Tolerances {
    pub relative_all: Option<f64>,
    pub absolute_all: Option<f64>,
    pub relative: BTreeMap<String, f64>,
    pub absolute: BTreeMap<String, f64>,
}

impl Tolerances {
    fn accepts(&self, column: &str, old: f64, new: f64) -> bool {
        let delta = (new - old).abs();
        let absolute = self.absolute.get(column).copied().or(self.absolute_all);
        let relative = self.relative.get(column).copied().or(self.relative_all);
        absolute.is_some_and(|tolerance| delta <= tolerance)
            || relative.is_some_and(|tolerance| delta <= tolerance * old.abs())
    }
}

#[derive(Clone, Debug, Default)]
pub struct DiffOptions {
    pub tolerances: Tolerances,
    /// Compare only these columns (all when empty).
    pub only: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub row: RowKey,
    pub column: String,
    pub old: String,
    pub new: String,
}

impl Change {
    /// `(+12.5%)`, `(was 0)`, or nothing when a side is not a number.
    pub fn relative(&self) -> String {
        match (self.old.parse::<f64>(), self.new.parse::<f64>()) {
            (Ok(old), Ok(new)) => {
                if old == 0.0 {
                    "(was 0)".to_string()
                } else {
                    format!("({:+.1}%)", (new - old) / old.abs() * 100.0)
                }
            }
            _ => String::new(),
        }
    }
}

/// Everything that differs between two results files.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Diff {
    /// The first MAX_LISTED_CHANGES changes, in row order.
    pub changes: Vec<Change>,
    /// Changes found beyond those listed (counted, not kept: two large
    /// files that differ everywhere must not fill memory with the report).
    pub more_changes: usize,
    /// Rows with at least one change.
    pub rows_changed: usize,
    pub added: Vec<RowKey>,
    pub removed: Vec<RowKey>,
    pub columns_added: Vec<String>,
    pub columns_removed: Vec<String>,
    pub rows_compared: usize,
    /// Provenance that differs (versions), reported but not a difference.
    pub notes: Vec<String>,
}

impl Diff {
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
            && self.added.is_empty()
            && self.removed.is_empty()
            && self.columns_added.is_empty()
            && self.columns_removed.is_empty()
    }

    pub fn verdict(&self) -> String {
        if self.is_empty() {
            return format!("no differences ({} rows compared)", self.rows_compared);
        }
        let mut parts = vec![format!(
            "{} metric change(s) in {} of {} rows",
            self.changes.len() + self.more_changes,
            self.rows_changed,
            self.rows_compared
        )];
        if !self.added.is_empty() {
            parts.push(format!("{} row(s) added", self.added.len()));
        }
        if !self.removed.is_empty() {
            parts.push(format!("{} row(s) removed", self.removed.len()));
        }
        if !self.columns_added.is_empty() || !self.columns_removed.is_empty() {
            parts.push(format!(
                "{} column(s) added, {} removed",
                self.columns_added.len(),
                self.columns_removed.len()
            ));
        }
        format!("DIFFERS: {}", parts.join(", "))
    }
}

/// Most changes a diff lists one by one; the rest are counted.
pub const MAX_LISTED_CHANGES: usize = 10_000;

/// Compares `old` with `new`.
pub fn compare(old: &ResultsTable, new: &ResultsTable, options: &DiffOptions) -> Diff {
    let selected = |column: &String| options.only.is_empty() || options.only.contains(column);
    let shared: Vec<&String> = old
        .columns
        .iter()
        .filter(|c| new.columns.contains(c) && !is_provenance(c) && selected(c))
        .collect();
    let mut diff = Diff {
        columns_added: new
            .columns
            .iter()
            .filter(|c| !old.columns.contains(c) && selected(c))
            .cloned()
            .collect(),
        columns_removed: old
            .columns
            .iter()
            .filter(|c| !new.columns.contains(c) && selected(c))
            .cloned()
            .collect(),
        ..Diff::default()
    };
    let mut versions = (Vec::<&str>::new(), Vec::<&str>::new());
    for (key, old_row) in &old.rows {
        let Some(new_row) = new.rows.get(key) else {
            diff.removed.push(key.clone());
            continue;
        };
        diff.rows_compared += 1;
        let mut row_changed = false;
        for column in &shared {
            let (before, after) = (
                old.value(old_row, column).unwrap_or(""),
                new.value(new_row, column).unwrap_or(""),
            );
            if before == after {
                continue;
            }
            let tolerated = match (before.parse::<f64>(), after.parse::<f64>()) {
                (Ok(a), Ok(b)) => options.tolerances.accepts(column, a, b),
                _ => false,
            };
            if tolerated {
                continue;
            }
            row_changed = true;
            if diff.changes.len() < MAX_LISTED_CHANGES {
                diff.changes.push(Change {
                    row: key.clone(),
                    column: column.to_string(),
                    old: before.to_string(),
                    new: after.to_string(),
                });
            } else {
                diff.more_changes += 1;
            }
        }
        diff.rows_changed += usize::from(row_changed);
        for (table, row, seen) in [
            (old, old_row, &mut versions.0),
            (new, new_row, &mut versions.1),
        ] {
            if let Some(version) = table
                .columns
                .iter()
                .find(|c| is_provenance(c))
                .and_then(|c| table.value(row, c))
                && !seen.contains(&version)
            {
                seen.push(version);
            }
        }
    }
    diff.added = new
        .rows
        .keys()
        .filter(|k| !old.rows.contains_key(k))
        .cloned()
        .collect();
    if !versions.0.is_empty() && !versions.1.is_empty() && versions.0 != versions.1 {
        diff.notes.push(format!(
            "plansim versions differ: {} -> {}",
            versions.0.join(","),
            versions.1.join(",")
        ));
    }
    diff
}

fn show(value: &str) -> &str {
    if value.is_empty() { "-" } else { value }
}

/// Plain text, one line per change.
pub fn render_text(diff: &Diff) -> String {
    let mut out = String::new();
    for change in &diff.changes {
        let _ = writeln!(
            out,
            "{}: {} {} -> {} {}",
            change.row,
            change.column,
            show(&change.old),
            show(&change.new),
            change.relative()
        );
    }
    if diff.more_changes > 0 {
        let _ = writeln!(
            out,
            "... and {} more metric change(s) (only the first {MAX_LISTED_CHANGES} are listed)",
            diff.more_changes
        );
    }
    for row in &diff.added {
        let _ = writeln!(out, "{row}: row added");
    }
    for row in &diff.removed {
        let _ = writeln!(out, "{row}: row removed");
    }
    for column in &diff.columns_added {
        let _ = writeln!(out, "column added: {column}");
    }
    for column in &diff.columns_removed {
        let _ = writeln!(out, "column removed: {column}");
    }
    for note in &diff.notes {
        let _ = writeln!(out, "note: {note}");
    }
    let _ = writeln!(out, "{}", diff.verdict());
    out.lines()
        .map(|l| l.trim_end())
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// Markdown for a pull-request comment.
pub fn render_markdown(diff: &Diff) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### plansim diff: {}\n", diff.verdict());
    if !diff.changes.is_empty() {
        out.push_str("| scenario | policy | seed | metric | old | new | change |\n");
        out.push_str("|---|---|---|---|---:|---:|---:|\n");
        for change in &diff.changes {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                change.row.scenario,
                change.row.policy,
                change.row.seed,
                change.column,
                show(&change.old),
                show(&change.new),
                change.relative()
            );
        }
        if diff.more_changes > 0 {
            let _ = writeln!(
                out,
                "\n... and {} more metric change(s) (only the first {MAX_LISTED_CHANGES} are listed)",
                diff.more_changes
            );
        }
        out.push('\n');
    }
    for (title, rows) in [("Rows added", &diff.added), ("Rows removed", &diff.removed)] {
        if !rows.is_empty() {
            let _ = writeln!(out, "{title}:\n");
            for row in rows.iter() {
                let _ = writeln!(out, "- {row}");
            }
            out.push('\n');
        }
    }
    for (title, columns) in [
        ("Columns added", &diff.columns_added),
        ("Columns removed", &diff.columns_removed),
    ] {
        if !columns.is_empty() {
            let _ = writeln!(out, "{title}: {}\n", columns.join(", "));
        }
    }
    for note in &diff.notes {
        let _ = writeln!(out, "_Note: {note}_\n");
    }
    out.trim_end().to_string() + "\n"
}

/// The diff as JSON (`plansim diff --format json`): the same content as the
/// text, for tools. Values are the summary.csv texts ("" for never).
pub fn render_json(diff: &Diff) -> String {
    use serde_json::json;
    let row = |key: &RowKey| json!({"scenario": key.scenario, "scheduler": key.policy.name(), "seed": key.seed});
    let document = json!({
        "same": diff.is_empty(),
        "rows_compared": diff.rows_compared,
        "changes": diff.changes.iter().map(|c| json!({
            "row": row(&c.row),
            "metric": c.column,
            "old": c.old,
            "new": c.new,
            "relative": c.relative(),
        })).collect::<Vec<_>>(),
        "rows_added": diff.added.iter().map(row).collect::<Vec<_>>(),
        "rows_removed": diff.removed.iter().map(row).collect::<Vec<_>>(),
        "columns_added": diff.columns_added,
        "columns_removed": diff.columns_removed,
        "notes": diff.notes,
        "verdict": diff.verdict(),
    });
    format!(
        "{}\n",
        serde_json::to_string_pretty(&document).expect("JSON values serialise")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::results::parse;

    const HEADER: &str = "scenario,scheduler,seed,desired,placed,running,infeasible,claim_failures,client_failures,\
reschedules,violations,violation_seconds,rejected_jobs,evals,plans,plan_rejections,first_full_s,events";

    fn table(rows: &[&str]) -> ResultsTable {
        let text = format!("{HEADER}\n{}\n", rows.join("\n"));
        parse(text.as_bytes(), "t.csv").unwrap()
    }

    const A: &str = "s,naive,0,2,2,2,0,0,0,0,1,3597.490,0,1,1,0,2.510,6";

    #[test]
    fn identical_tables_do_not_differ() {
        let diff = compare(&table(&[A]), &table(&[A]), &DiffOptions::default());
        assert!(diff.is_empty());
        assert_eq!(diff.verdict(), "no differences (1 rows compared)");
    }

    #[test]
    fn a_changed_metric_is_named_with_old_new_and_percent() {
        let b = A.replace(",3597.490,", ",1798.745,");
        let diff = compare(&table(&[A]), &table(&[&b]), &DiffOptions::default());
        assert_eq!(
            render_text(&diff),
            "s / naive / 0: violation_seconds 3597.490 -> 1798.745 (-50.0%)\n\
             DIFFERS: 1 metric change(s) in 1 of 1 rows\n"
        );
    }

    #[test]
    fn empty_first_full_and_zero_baselines_render() {
        let b = A
            .replace(",2.510,", ",,")
            .replace("s,naive,0,2,2,2,0,0,", "s,naive,0,2,2,2,0,3,");
        let text = render_text(&compare(
            &table(&[A]),
            &table(&[&b]),
            &DiffOptions::default(),
        ));
        assert!(text.contains("claim_failures 0 -> 3 (was 0)"), "{text}");
        assert!(text.contains("first_full_s 2.510 -> -"), "{text}");
    }

    #[test]
    fn rows_added_and_removed_are_listed() {
        let other = A.replace("s,naive,0", "s,naive,1");
        let diff = compare(&table(&[A]), &table(&[&other]), &DiffOptions::default());
        assert_eq!(diff.added.len(), 1);
        assert_eq!(diff.removed.len(), 1);
        let text = render_text(&diff);
        assert!(text.contains("s / naive / 1: row added"));
        assert!(text.contains("s / naive / 0: row removed"));
    }

    #[test]
    fn tolerances_and_only_filter_changes() {
        let b = A
            .replace(",6\n", ",7\n")
            .replace(",6", ",7")
            .replace(",3597.490,", ",3600.000,");
        let loose = DiffOptions {
            tolerances: Tolerances {
                relative_all: Some(0.01),
                absolute: BTreeMap::from([("events".to_string(), 1.0)]),
                ..Tolerances::default()
            },
            only: Vec::new(),
        };
        assert!(compare(&table(&[A]), &table(&[&b]), &loose).is_empty());
        let only = DiffOptions {
            only: vec!["events".to_string()],
            ..DiffOptions::default()
        };
        let diff = compare(&table(&[A]), &table(&[&b]), &only);
        assert_eq!(diff.changes.len(), 1);
        assert_eq!(diff.changes[0].column, "events");
    }

    #[test]
    fn wrong_columns_are_named() {
        let err = parse(b"scenario,policy,seed\n", "t.csv").unwrap_err();
        assert!(
            err.contains("column 2 is \"policy\" but summary.csv has \"scheduler\" there"),
            "{err}"
        );
        let err = parse(b"scenario,scheduler,seed,desired\n", "t.csv").unwrap_err();
        assert!(err.contains("missing column \"placed\""), "{err}");
        let twice = format!("{HEADER}\n{A}\n{A}\n");
        assert!(
            parse(twice.as_bytes(), "t.csv")
                .unwrap_err()
                .contains("appears twice")
        );
    }

    #[test]
    fn markdown_has_a_table() {
        let b = A.replace(",3597.490,", ",0.000,");
        let md = render_markdown(&compare(
            &table(&[A]),
            &table(&[&b]),
            &DiffOptions::default(),
        ));
        assert!(md.starts_with("### plansim diff: DIFFERS"));
        assert!(
            md.contains("| s | naive | 0 | violation_seconds | 3597.490 | 0.000 | (-100.0%) |"),
            "{md}"
        );
    }

    #[test]
    fn only_the_first_changes_are_listed_and_all_are_counted() {
        let rows = 700; // 700 rows x 15 metrics = 10,500 changes
        let old: Vec<String> = (0..rows)
            .map(|seed| format!("s,naive,{seed},1,1,1,1,1,1,1,1,1.000,1,1,1,1,1.000,1"))
            .collect();
        let new: Vec<String> = (0..rows)
            .map(|seed| format!("s,naive,{seed},2,2,2,2,2,2,2,2,2.000,2,2,2,2,2.000,2"))
            .collect();
        fn refs(rows: &[String]) -> Vec<&str> {
            rows.iter().map(String::as_str).collect()
        }
        let diff = compare(
            &table(&refs(&old)),
            &table(&refs(&new)),
            &DiffOptions::default(),
        );
        assert_eq!(diff.changes.len(), MAX_LISTED_CHANGES);
        assert_eq!(diff.more_changes, rows * 15 - MAX_LISTED_CHANGES);
        assert_eq!(
            diff.verdict(),
            "DIFFERS: 10500 metric change(s) in 700 of 700 rows"
        );
        assert!(
            render_text(&diff)
                .contains("... and 500 more metric change(s) (only the first 10000 are listed)")
        );
    }
}
