//! README's figures against the committed results: each number README quotes
//! from results/ is read back from results/ (part of tests/docs.rs).

use std::collections::{BTreeMap, BTreeSet};

use super::{common, read};

/// README's text with every run of whitespace made one space (it wraps lines).
fn flat_readme() -> String {
    read("README.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The numbers README quotes right after `before` (`18.2 ± 2.9` gives both).
fn quoted(readme: &str, before: &str) -> Vec<f64> {
    let at = readme
        .find(before)
        .unwrap_or_else(|| panic!("README no longer says \"{before}\"; update this test"))
        + before.len();
    let mut numbers = Vec::new();
    for word in readme[at..].trim_start().split(' ').take(3) {
        let word = word
            .trim_end_matches([',', ')', ';', '.'])
            .trim_start_matches('(');
        if word == "±" {
            continue;
        }
        match word.replace(',', "").trim_end_matches('s').parse::<f64>() {
            Ok(n) => numbers.push(n),
            Err(_) => break,
        }
    }
    assert!(!numbers.is_empty(), "no number after \"{before}\"");
    numbers
}

/// README's text from `from` to the next `to`.
fn section<'a>(readme: &'a str, from: &str, to: &str) -> &'a str {
    let start = readme
        .find(from)
        .unwrap_or_else(|| panic!("README no longer says \"{from}\"; update this test"));
    let end = readme[start..]
        .find(to)
        .map_or(readme.len(), |at| start + at);
    &readme[start..end]
}

/// Asserts `value` rounds to `shown` at the precision README wrote it with.
fn rounds_to(shown: f64, value: f64, what: &str) {
    let text = format!("{shown}");
    let decimals = text.split_once('.').map_or(0, |(_, d)| d.len());
    let step = 10f64.powi(-(decimals as i32));
    assert!(
        (value - shown).abs() <= step / 2.0 + 1e-9,
        "README says {shown} for {what}; the committed results give {value}"
    );
}

/// Rows of a committed CSV as maps from column to value.
fn rows(relative: &str) -> Vec<BTreeMap<String, String>> {
    let mut reader = csv::Reader::from_path(common::repo_path(relative)).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    reader
        .records()
        .map(|r| {
            header
                .iter()
                .cloned()
                .zip(r.unwrap().iter().map(String::from))
                .collect()
        })
        .collect()
}

fn number(row: &BTreeMap<String, String>, column: &str) -> f64 {
    row[column]
        .parse()
        .unwrap_or_else(|_| panic!("{column}: {row:?}"))
}

/// The enforcing scenario's numbers in README are results/summary.csv's.
#[test]
fn readme_enforcing_numbers_are_the_committed_results() {
    let readme = flat_readme();
    let summary = rows("results/summary.csv");
    let naive = summary
        .iter()
        .find(|r| {
            r["scenario"] == "csi-single-reader-count2-enforcing" && r["scheduler"] == "naive"
        })
        .unwrap();
    let enforcing = section(&readme, "keeps replacing it:", "in an hour");
    assert_eq!(quoted(enforcing, ":"), [number(naive, "claim_failures")]);
    assert_eq!(
        quoted(enforcing, "claim failures,"),
        [number(naive, "client_failures")]
    );
    assert_eq!(
        quoted(enforcing, "client failures and"),
        [number(naive, "reschedules")]
    );
}

/// report-grid in README: the pooled naive -> plan-aware differences are the
/// committed paired-pooled.csv's.
#[test]
fn readme_report_grid_numbers_are_the_committed_results() {
    let whole = flat_readme();
    let grid_runs = rows("results/experiments/report-grid/runs.csv").len();
    let readme = section(&whole, "**`report-grid`**", "**`churn-vs-count`**");
    assert_eq!(quoted(readme, "**`report-grid`** ("), [grid_runs as f64]);
    let pooled = rows("results/experiments/report-grid/paired-pooled.csv");
    let pooled = |metric: &str| {
        pooled
            .iter()
            .find(|r| {
                r["baseline"] == "naive" && r["candidate"] == "plan-aware" && r["metric"] == metric
            })
            .map(|r| (number(r, "mean_difference"), number(r, "ci95")))
            .unwrap()
    };
    for (before, metric, sign) in [
        ("plan-aware cuts claim failures by", "claim_failures", -1.0),
        ("and reschedules by", "reschedules", -1.0),
        ("and violation time by", "violation_seconds", -1.0),
        ("at the cost of", "infeasible", 1.0),
    ] {
        let shown = quoted(readme, before);
        let (mean, ci) = pooled(metric);
        rounds_to(shown[0], sign * mean, metric);
        rounds_to(shown[1], ci, metric);
    }
}

/// churn-vs-count in README: naive's churn per extra allocation holds at
/// every point of the committed aggregate.csv.
#[test]
fn readme_churn_numbers_are_the_committed_results() {
    let whole = flat_readme();
    let readme = section(
        &whole,
        "**`churn-vs-count`**",
        "**`double-write-after-node-failure`**",
    );
    let per_extra = quoted(readme, "grows linearly with the count,");
    let reschedules = quoted(readme, "claim failures and");
    for row in rows("results/experiments/churn-vs-count/aggregate.csv") {
        let extra = number(&row, "jobs[example].groups[cache].count") - 1.0;
        match row["scheduler"].as_str() {
            "naive" => {
                assert_eq!(
                    number(&row, "claim_failures_mean"),
                    per_extra[0] * extra,
                    "{row:?}"
                );
                assert_eq!(
                    number(&row, "reschedules_mean"),
                    reschedules[0] * extra,
                    "{row:?}"
                );
            }
            "plan-aware" => {
                // One infeasible placement per evaluation: Nomad coalesces
                // a group's placements after its first failure.
                assert!(readme.contains("one infeasible placement per"));
                assert_eq!(
                    number(&row, "infeasible_mean"),
                    extra.min(1.0),
                    "one infeasible placement when count > 1"
                );
                assert_eq!(number(&row, "reschedules_max"), 0.0);
            }
            _ => {}
        }
    }
}

/// double-write-after-node-failure in README: the violation times and the
/// refused claims are the committed runs.csv's.
#[test]
fn readme_double_write_numbers_are_the_committed_results() {
    let whole = flat_readme();
    let readme = section(
        &whole,
        "**`double-write-after-node-failure`**",
        "**`per-alloc-nodes-needed`**",
    );
    let runs = rows("results/experiments/double-write-after-node-failure/runs.csv");
    let mean_violation = |latency: &str| {
        let chosen: Vec<f64> = runs
            .iter()
            .filter(|r| {
                r["scheduler"] == "naive" && r["plugins[hostpath].publish_latency"] == latency
            })
            .map(|r| number(r, "violation_seconds"))
            .collect();
        chosen.iter().sum::<f64>() / chosen.len() as f64
    };
    rounds_to(
        quoted(readme, "for the rest of the run:")[0],
        mean_violation("100ms"),
        "100ms",
    );
    rounds_to(
        quoted(readme, "publish latency (")[0],
        mean_violation("60s"),
        "60s",
    );
    let refused: BTreeSet<u64> = runs
        .iter()
        .filter(|r| r["scheduler"] == "validate")
        .map(|r| number(r, "claim_failures") as u64)
        .collect();
    let shown = quoted(readme, "Validate's client retries instead (");
    let to = quoted(
        readme,
        &format!("Validate's client retries instead ({} to", shown[0]),
    );
    assert_eq!(
        (shown[0] as u64, to[0] as u64),
        (*refused.first().unwrap(), *refused.last().unwrap()),
        "refused claims under validate: {refused:?}"
    );
}

/// per-alloc-nodes-needed in README: the claim failures and the times to
/// full placement are the committed runs.csv's.
#[test]
fn readme_per_alloc_numbers_are_the_committed_results() {
    let whole = flat_readme();
    let readme = section(
        &whole,
        "**`per-alloc-nodes-needed`**",
        "**`rolling-update-duration`**",
    );
    let runs = rows("results/experiments/per-alloc-nodes-needed/runs.csv");
    let most = runs
        .iter()
        .map(|r| number(r, "claim_failures"))
        .fold(0.0, f64::max);
    assert_eq!(quoted(readme, "up to"), [most]);
    let full_at = |scheduler: &str| {
        runs.iter()
            .find(|r| {
                r["scheduler"] == scheduler
                    && r["nodes[client-{i}].count"] == "4"
                    && r["nodes[client-{i}].csi_plugins[ebs].max_volumes"] == "2"
            })
            .map(|r| number(r, "first_full_s"))
            .unwrap()
    };
    rounds_to(
        quoted(readme, "full placement takes")[0],
        full_at("naive"),
        "naive first_full_s",
    );
    rounds_to(
        quoted(readme, "instead of plan-aware's")[0],
        full_at("plan-aware"),
        "plan-aware first_full_s",
    );
}

/// rolling-update-duration in README: its table is the committed results'.
#[test]
fn readme_rolling_update_numbers_are_the_committed_results() {
    rolling_update_duration_numbers(&flat_readme());
}

/// The numbers in `text`, in order ("195 s (135 s)" gives 195 and 135).
fn numbers_in(text: &str) -> Vec<f64> {
    text.split(|c: char| !c.is_ascii_digit() && c != '.')
        .map(|word| word.trim_matches('.'))
        .filter(|word| !word.is_empty())
        .map(|word| word.parse().unwrap())
        .collect()
}

/// README's text after `from` up to the next `to`, `from` excluded.
fn between<'a>(text: &'a str, from: &str, to: &str) -> &'a str {
    let rest = &section(text, from, to)[from.len()..];
    rest.find(to).map_or(rest, |end| &rest[..end])
}

/// README's `rolling-update-duration` table (time to deploy and
/// unavailability per node detach latency, `max_parallel` 1) and the
/// figures around it are the committed aggregate's means.
fn rolling_update_duration_numbers(readme: &str) {
    let text = section(
        readme,
        "**`rolling-update-duration`**",
        "What changed when each policy",
    );
    let aggregate = rows("results/experiments/rolling-update-duration/aggregate.csv");
    let mean = |scheduler: &str, detach: &str, parallel: &str, metric: &str| {
        aggregate
            .iter()
            .find(|r| {
                r["scheduler"] == scheduler
                    && r["cluster.node_detach_latency"] == detach
                    && r["jobs[db].update.max_parallel"] == parallel
            })
            .map(|r| number(r, &format!("{metric}_mean")))
            .unwrap_or_else(|| panic!("no row for {scheduler} {detach} {parallel}"))
    };
    let mut table_rows = 0;
    let raw = read("README.md");
    let raw_text = section(
        &raw,
        "**`rolling-update-duration`**",
        "What changed when each policy",
    );
    for line in raw_text.lines() {
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        let detach = match cells.first().copied() {
            Some("1 s") => "1s",
            Some("10 s") => "10s",
            Some("30 s") => "30s",
            Some("1 min") => "1m",
            Some("2 min") => "2m",
            _ => continue,
        };
        assert_eq!(cells.len(), 4, "{line}");
        for (cell, policy) in cells[1..].iter().zip(["naive", "validate", "plan-aware"]) {
            let shown = numbers_in(cell);
            assert_eq!(shown.len(), 2, "{cell}");
            rounds_to(
                shown[0],
                mean(policy, detach, "1", "time_to_deploy_s"),
                cell,
            );
            rounds_to(shown[1], mean(policy, detach, "1", "unavailable_s"), cell);
        }
        table_rows += 1;
    }
    assert_eq!(table_rows, 5, "one row per node detach latency");
    let scaling = numbers_in(between(text, "1 / `max_parallel` (", " for plan-aware"));
    assert_eq!(scaling.len(), 4, "{scaling:?}");
    for (value, parallel) in scaling.iter().zip(["1", "2", "3", "6"]) {
        rounds_to(
            *value,
            mean("plan-aware", "2m", parallel, "time_to_deploy_s"),
            parallel,
        );
    }
    // The ranges over the grid, leaving out the points without any.
    let range = |scheduler: &str, metric: &str| {
        let values: Vec<f64> = aggregate
            .iter()
            .filter(|r| r["scheduler"] == scheduler)
            .map(|r| number(r, &format!("{metric}_mean")))
            .filter(|&v| v > 0.0)
            .collect();
        let low = values.iter().copied().fold(f64::MAX, f64::min);
        vec![low, values.iter().copied().fold(0.0, f64::max)]
    };
    assert_eq!(
        numbers_in(between(text, "waits):", "failed allocations")),
        range("naive", "reschedules")
    );
    assert_eq!(
        numbers_in(between(text, "retries the refused claim (", "refusals")),
        range("validate", "claim_failures")
    );
    assert!(
        aggregate
            .iter()
            .filter(|r| r["scheduler"] == "plan-aware")
            .all(|r| number(r, "claim_failures_max") == 0.0 && number(r, "reschedules_max") == 0.0),
        "README says plan-aware is never refused and never failed"
    );
}
