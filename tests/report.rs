//! `plansim run --report DIR`, the verdict lines and `--format json`:
//! the HTML's structure (lanes, shaded windows, marks, labels) checked
//! without a browser, escaping of names, size on thousands of allocations,
//! determinism, and nothing written on bad input.

mod common;

use std::path::Path;

use plansim::report::run_report::{MAX_BARS, esc};

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The part of a page inside one policy's figure.
fn figure<'a>(page: &'a str, policy: &str) -> &'a str {
    let start = page
        .find(&format!("<figure class=\"policy\" id=\"policy-{policy}\">"))
        .unwrap_or_else(|| panic!("no figure for {policy}"));
    let end = start + page[start..].find("</figure>").unwrap();
    &page[start..end]
}

#[test]
fn seed_scenario_page_has_lanes_windows_marks_and_narrative() {
    let out = common::temp_dir("report-seed");
    let output = common::plansim(&[
        "run",
        "scenarios/csi-single-reader-count2.yaml",
        "--report",
        common::arg(&out),
    ]);
    assert_eq!(output.status.code(), Some(0));
    let page = read(&out.join("scenario-csi-single-reader-count2.html"));
    let index = read(&out.join("index.html"));
    assert!(page.starts_with("<!DOCTYPE html>"));
    // Self-contained: no script, nothing fetched (the only URL is SVG's namespace).
    assert!(!page.contains("<script") && !index.contains("<script"));
    assert_eq!(
        page.matches("http").count(),
        page.matches("http://www.w3.org/2000/svg").count()
    );
    assert!(!page.contains("src=") && !page.contains("<link"));

    let naive = figure(&page, "naive");
    let plan_aware = figure(&page, "plan-aware");
    let validate = figure(&page, "validate");
    // naive runs both allocations on two nodes, plan-aware one.
    assert_eq!(naive.matches("class=\"lane node\"").count(), 2);
    assert_eq!(plan_aware.matches("class=\"lane node\"").count(), 1);
    assert_eq!(validate.matches("class=\"lane node\"").count(), 0);
    assert!(naive.contains("data-volume=\"test-volume0\""));
    assert_eq!(naive.matches("class=\"running\"").count(), 2);
    assert!(naive.contains(">example.cache[1]<"));
    // The violation window is shaded under naive only.
    assert_eq!(naive.matches("<rect class=\"violation\"").count(), 1);
    assert!(naive.contains("violation: test-volume0"));
    assert!(!plan_aware.contains("<rect class=\"violation\""));
    // The first divergence is marked on naive and plan-aware, the pair explained.
    assert!(naive.contains("first divergence (0.000 s)"));
    assert!(plan_aware.contains("first divergence (0.000 s)"));
    assert!(!validate.contains("class=\"divergence\""));
    // validate's registration error and plan-aware's failed placement are marked.
    assert!(validate.contains("rejected at registration"));
    assert!(plan_aware.contains("class=\"refusal\""));
    // Metrics: as many highlighted rows as the terminal table has `*` rows.
    let table = common::plansim(&["run", "scenarios/csi-single-reader-count2.yaml"]);
    let starred = String::from_utf8_lossy(&table.stdout)
        .lines()
        .filter(|l| l.starts_with(" * "))
        .count();
    assert_eq!(page.matches("<tr class=\"differs\">").count(), starred);
    assert!(page.contains("* Constraint &quot;CSI volume test-volume0 is unschedulable or has exhausted its available reader claims&quot;: 3 nodes excluded by filter"));
    assert!(page.contains("registration rejected: task group cache volume volume0"));
    assert!(page.contains("<pre class=\"narrative\">== csi-single-reader-count2 (seed 7): naive vs plan-aware\nFirst divergence at 0.000 s"));
    // The index links the page and gives each policy's verdict.
    assert!(index.contains(
        "<a href=\"scenario-csi-single-reader-count2.html\">csi-single-reader-count2</a>"
    ));
    assert!(
        index.contains(
            "<b>naive</b>: <span class=\"bad\">violates (1 violation, 3597.490 s)</span>"
        )
    );
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
fn operator_events_are_vertical_lines() {
    let out = common::temp_dir("report-events");
    let output = common::plansim(&[
        "run",
        "scenarios/node-failure-slow-detach.yaml",
        "scenarios/scale-up-bypasses-validation.yaml",
        "--report",
        common::arg(&out),
    ]);
    assert_eq!(output.status.code(), Some(0));
    let node_down = read(&out.join("scenario-node-failure-slow-detach.html"));
    assert!(figure(&node_down, "naive").contains("<g class=\"operator-event\">"));
    assert!(figure(&node_down, "naive").contains(">node_down "));
    assert!(figure(&node_down, "naive").contains("class=\"lost\""));
    let scale = read(&out.join("scenario-scale-up-bypasses-validation.html"));
    assert!(
        figure(&scale, "plan-aware").contains(">scale app web count 2<")
            || figure(&scale, "plan-aware").contains(">scale app count 2<"),
        "{}",
        figure(&scale, "plan-aware")
    );
    let index = read(&out.join("index.html"));
    assert_eq!(index.matches("<tr><td><a href=").count(), 2);
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
fn names_are_escaped() {
    assert_eq!(
        esc("<a href=\"x\">&'"),
        "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
    );
    let dir = common::temp_dir("report-escape");
    let file = dir.join("hostile.yaml");
    std::fs::write(
        &file,
        r#"
name: "<img src=x onerror=alert(1)>"
description: "a <b>bold</b> & \"quoted\" description"
nodes:
  - {id: "n<{i}>", count: 2, csi_plugins: [{id: p}]}
plugins: [{id: p, enforces_access_mode: false}]
volumes: [{id: "v&<svg>", plugin_id: p, access_mode: single-node-reader-only}]
jobs:
  - id: "j\"><script>x</script>"
    groups:
      - name: "g'"
        count: 2
        volumes: {a: {type: csi, source: "v&<svg>", read_only: true}}
        tasks: [{name: t}]
"#,
    )
    .unwrap();
    let out = dir.join("report");
    let output = common::plansim(&["run", common::arg(&file), "--report", common::arg(&out)]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let pages: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "html"))
        .collect();
    assert_eq!(pages.len(), 2, "{pages:?}");
    for page in pages {
        let html = read(&page);
        for raw in ["<img", "<script", "<b>bold", "<svg>", "n<0>", "j\"><"] {
            assert!(!html.contains(raw), "{}: unescaped {raw}", page.display());
        }
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)),
            "{name}"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn thousands_of_allocations_stay_small_and_say_what_is_left_out() {
    let dir = common::temp_dir("report-big");
    let file = dir.join("big.yaml");
    std::fs::write(
        &file,
        r#"
name: big
horizon: 30m
nodes:
  - {id: "n{i}", count: 60, cpu: 64000, memory: 262144, csi_plugins: [{id: p}]}
plugins: [{id: p, enforces_access_mode: false}]
volumes:
  - {id: "v[{i}]", count: 40, plugin_id: p, access_mode: single-node-writer}
jobs:
  - id: web
    groups:
      - {name: w, count: 3000, tasks: [{name: t, cpu: 10, memory: 10}]}
  - id: db
    groups:
      - name: d
        count: 40
        volumes: {x: {type: csi, source: v, per_alloc: true}}
        tasks: [{name: t, cpu: 10, memory: 10}]
"#,
    )
    .unwrap();
    let out = dir.join("report");
    let output = common::plansim(&[
        "run",
        common::arg(&file),
        "--report",
        common::arg(&out),
        "--quiet",
    ]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let page = read(&out.join("scenario-big.html"));
    assert!(page.len() < 3 * 1024 * 1024, "{} bytes", page.len());
    let naive = figure(&page, "naive");
    assert!(naive.matches("class=\"lane node\"").count() <= 30);
    assert!(naive.matches("class=\"running\"").count() <= MAX_BARS);
    assert!(naive.contains("not drawn"), "the cap is said");
    assert!(
        naive.contains("allocations, all nodes (peak 3040)"),
        "the aggregate counts all"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn report_is_deterministic_and_bad_input_writes_nothing() {
    let a = common::temp_dir("report-a");
    let b = common::temp_dir("report-b");
    for dir in [&a, &b] {
        let output =
            common::plansim(&["run", "scenarios/", "--report", common::arg(dir), "--quiet"]);
        assert_eq!(output.status.code(), Some(0));
    }
    assert_eq!(common::files_under(&a), common::files_under(&b));
    assert_eq!(
        common::files_under(&a).len(),
        // A page per scenario, the index and the output marker.
        common::all_scenario_files().len() + 2
    );
    let refused = a.join("refused");
    let output = common::plansim(&[
        "run",
        "tests/bad/bad-access-mode.yaml",
        "--report",
        common::arg(&refused),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(!refused.exists());
    std::fs::remove_dir_all(a).unwrap();
    std::fs::remove_dir_all(b).unwrap();
}

#[test]
fn run_ends_with_verdicts_and_speaks_json() {
    let output = common::plansim(&["run", "scenarios/"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let verdicts: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("verdict "))
        .collect();
    assert_eq!(verdicts.len(), common::all_scenario_files().len());
    let total = format!("total: {} scenario(s); ", verdicts.len());
    assert!(
        stdout
            .trim_end()
            .lines()
            .last()
            .unwrap()
            .starts_with(&total)
    );
    assert!(stdout.contains("verdict csi-single-reader-count2: naive violates (1 violation, 3597.490 s); validate rejects 1 job at registration; plan-aware leaves 1 allocation unplaced"));

    let output = common::plansim(&["run", "scenarios/", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let scenarios = json["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), verdicts.len());
    // The JSON holds the same numbers as summary.csv.
    let out = common::temp_dir("report-json");
    common::plansim(&["run", "scenarios/", "--out", common::arg(&out), "--quiet"]);
    let summary = read(&out.join("summary.csv"));
    let mut rows = 0;
    for s in scenarios {
        for run in s["runs"].as_array().unwrap() {
            let prefix = format!(
                "{},{},{},{}",
                s["scenario"].as_str().unwrap(),
                run["policy"].as_str().unwrap(),
                run["seed"],
                run["metrics"]["desired"]
            );
            assert!(summary.lines().any(|l| l.starts_with(&prefix)), "{prefix}");
            rows += 1;
        }
        assert_eq!(
            s["verdict"].as_str().unwrap(),
            verdicts
                .iter()
                .find(|v| v.starts_with(&format!("verdict {}:", s["scenario"].as_str().unwrap())))
                .unwrap()
                .to_string()
        );
    }
    assert_eq!(rows + 1, summary.lines().count());
    let validate = &scenarios
        .iter()
        .find(|s| s["scenario"] == "csi-single-reader-count2")
        .unwrap()["runs"][1];
    assert_eq!(validate["policy"], "validate");
    assert!(
        validate["registration_errors"][0]["error"]
            .as_str()
            .unwrap()
            .contains("allows only one reader")
    );

    // diff --format json: the same verdict as the text.
    let output = common::plansim(&["diff", "results", common::arg(&out), "--format", "json"]);
    assert_eq!(output.status.code(), Some(0));
    let diff: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(diff["same"], true);
    assert!(diff["changes"].as_array().unwrap().is_empty());
    std::fs::remove_dir_all(out).unwrap();
}
