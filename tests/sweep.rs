//! `plansim sweep` and `plansim merge`: outputs never depend on thread
//! count, sharding or interruption; bad experiments exit 2 with a precise error.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

/// A small experiment beside a copy of the report's scenario.
fn experiment(dir: &Path, body: &str) -> PathBuf {
    std::fs::copy(
        common::repo_path("scenarios/csi-single-reader-count2.yaml"),
        dir.join("report.yaml"),
    )
    .unwrap();
    let path = dir.join("experiment.yaml");
    std::fs::write(&path, format!("scenario: report.yaml\n{body}")).unwrap();
    path
}

const GRID: &str = "seeds: 6\nvary:\n  \"jobs[example].groups[cache].count\": [1, 2, 4]\n  \"plugins[hostpath-plugin0].enforces_access_mode\": [true, false]\n";

fn sweep(experiment: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "sweep",
        common::arg(experiment),
        "--out",
        common::arg(out),
        "--quiet",
    ];
    args.extend_from_slice(extra);
    common::plansim(&args)
}

#[test]
fn output_is_identical_with_one_and_two_jobs() {
    let dir = common::temp_dir("jobs");
    let exp = experiment(&dir, GRID);
    let (one, two) = (dir.join("one"), dir.join("two"));
    assert!(sweep(&exp, &one, &["--jobs", "1"]).status.success());
    assert!(sweep(&exp, &two, &["--jobs", "2"]).status.success());
    let files = common::files_under(&one);
    for name in [
        "runs.csv",
        "aggregate.csv",
        "paired.csv",
        "index.html",
        ".plansim-journal.csv",
    ] {
        assert!(files.contains_key(name), "{name} missing");
    }
    assert_eq!(
        files.keys().filter(|k| k.starts_with("plots/")).count(),
        12,
        "2 keys x 6 metrics"
    );
    assert_eq!(files, common::files_under(&two));
    let runs = String::from_utf8(files["runs.csv"].clone()).unwrap();
    assert_eq!(
        runs.lines().count(),
        1 + 6 * 3 * 2 * 3,
        "header + points x policies x seeds"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn shards_partition_the_runs_and_merge_to_the_unsharded_output() {
    let dir = common::temp_dir("shards");
    let exp = experiment(&dir, GRID);
    let whole = dir.join("whole");
    assert!(sweep(&exp, &whole, &[]).status.success());
    let mut shard_dirs = Vec::new();
    let mut recorded = Vec::new();
    for i in 1..=3 {
        let shard = dir.join(format!("shard{i}"));
        let output = sweep(&exp, &shard, &["--shard", &format!("{i}/3")]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let journal = std::fs::read_to_string(shard.join(".plansim-journal.csv")).unwrap();
        recorded.extend(
            journal
                .lines()
                .skip(1)
                .map(|l| l.split(',').next().unwrap().to_string()),
        );
        assert!(
            !shard.join("runs.csv").exists(),
            "a shard alone writes no results"
        );
        shard_dirs.push(shard);
    }
    recorded.sort_by_key(|r| r.parse::<usize>().unwrap());
    let expected: Vec<String> = (0..108).map(|r| r.to_string()).collect();
    assert_eq!(recorded, expected, "every run in exactly one shard");
    let merged = dir.join("merged");
    let mut args = vec!["merge"];
    args.extend(shard_dirs.iter().map(|d| common::arg(d)));
    args.extend(["--out", common::arg(&merged), "--quiet"]);
    let output = common::plansim(&args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(common::files_under(&merged), common::files_under(&whole));
    // Two of three shards are not enough.
    let partial = common::plansim(&[
        "merge",
        common::arg(&shard_dirs[0]),
        common::arg(&shard_dirs[1]),
        "--out",
        common::arg(&dir.join("partial")),
    ]);
    assert_eq!(partial.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&partial.stderr).contains("shard 3/3 missing"));
    std::fs::remove_dir_all(dir).unwrap();
}

/// What `kill -9` can leave: the inputs and any prefix of the journal, a
/// torn last line included. `--resume` must end exactly where an
/// uninterrupted sweep does.
#[test]
fn resume_after_an_interruption_gives_identical_output() {
    let dir = common::temp_dir("resume");
    let exp = experiment(&dir, GRID);
    let whole = dir.join("whole");
    assert!(sweep(&exp, &whole, &[]).status.success());
    let journal = std::fs::read(whole.join(".plansim-journal.csv")).unwrap();
    for cut in [journal.len() / 7, journal.len() / 2 + 3, journal.len() - 5] {
        let killed = dir.join(format!("killed-{cut}"));
        std::fs::create_dir_all(&killed).unwrap();
        std::fs::write(killed.join(".plansim-journal.csv"), &journal[..cut]).unwrap();
        let inputs = common::files_under(&whole.join("inputs"));
        for (name, bytes) in inputs {
            let path = killed.join("inputs").join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        let again = sweep(&exp, &killed, &[]);
        assert_eq!(
            again.status.code(),
            Some(2),
            "an existing sweep needs --resume"
        );
        assert!(String::from_utf8_lossy(&again.stderr).contains("--resume"));
        let resumed = sweep(&exp, &killed, &["--resume"]);
        assert!(
            resumed.status.success(),
            "{}",
            String::from_utf8_lossy(&resumed.stderr)
        );
        assert_eq!(
            common::files_under(&killed),
            common::files_under(&whole),
            "cut at {cut}"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn resuming_with_other_inputs_is_refused() {
    let dir = common::temp_dir("other");
    let exp = experiment(&dir, GRID);
    let out = dir.join("out");
    assert!(sweep(&exp, &out, &[]).status.success());
    std::fs::write(
        &exp,
        format!(
            "scenario: report.yaml\n{}",
            GRID.replace("seeds: 6", "seeds: 7")
        ),
    )
    .unwrap();
    let output = sweep(&exp, &out, &["--resume"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("other inputs"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_experiments_exit_2_naming_the_key_and_what_exists() {
    let dir = common::temp_dir("bad");
    let cases = [
        (
            "vary:\n  \"jobs[exmaple].groups[cache].count\": [2]\n",
            "jobs has no item \"exmaple\" (items: example)",
        ),
        (
            "vary:\n  \"jobs[example].groups[db].count\": [2]\n",
            "jobs[example].groups has no item \"db\" (items: cache)",
        ),
        (
            "vary:\n  \"jobs[example].groups[cache].count\": [-1]\n",
            "count -1 is negative",
        ),
        (
            "vary:\n  \"jobs[example].groups[cache].cuont\": [2]\n",
            "unknown field `cuont`",
        ),
        ("vary:\n  \"horizon\": [30]\n", "add a unit"),
        ("vary:\n  \"jobs[example\": [2]\n", "unclosed '['"),
        ("vary:\n  \"horizon\": []\n", "list at least one value"),
        ("seeds: 0\n", "seeds: a count must be at least 1"),
        ("sedes: 3\n", "unknown field `sedes`"),
    ];
    for (index, (body, message)) in cases.iter().enumerate() {
        let exp = experiment(&dir, body);
        let output = sweep(&exp, &dir.join(format!("out{index}")), &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{body}: {stderr}");
        assert!(
            stderr.contains(message),
            "{body}: expected {message:?} in {stderr}"
        );
        assert!(!stderr.contains("panicked"));
    }
    let missing = dir.join("missing.yaml");
    std::fs::write(&missing, "scenario: nowhere.yaml\n").unwrap();
    assert_eq!(sweep(&missing, &dir.join("o"), &[]).status.code(), Some(2));
    std::fs::remove_dir_all(dir).unwrap();
}

/// Ctrl-C (SIGINT) stops a sweep cleanly: exit 130, every finished run kept,
/// and `--resume` ends with the output of an uninterrupted sweep.
#[test]
fn ctrl_c_keeps_every_finished_run() {
    let dir = common::temp_dir("sigint");
    let body = "seeds: 100\nschedulers: [naive, plan-aware]\nvary:\n  \"jobs[example].groups[cache].count\": [1, 2, 4, 8, 16]\n  \"nodes[client-{i}].count\": [2, 4, 8, 16, 32]\n  \"plugins[hostpath-plugin0].enforces_access_mode\": [true, false]\n";
    let exp = experiment(&dir, body);
    let out = dir.join("interrupted");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_plansim"))
        .args([
            "sweep",
            common::arg(&exp),
            "--out",
            common::arg(&out),
            "--jobs",
            "2",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until some runs are journaled, then interrupt.
    let journal = out.join(".plansim-journal.csv");
    while std::fs::read_to_string(&journal).map_or(0, |t| t.lines().count()) < 100 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("--resume"), "{stderr}");
    let recorded = std::fs::read_to_string(&journal).unwrap().lines().count() - 1;
    assert!(
        recorded > 0 && recorded < 10_000,
        "{recorded} runs recorded"
    );
    assert!(!out.join("runs.csv").exists(), "no partial results");
    assert!(sweep(&exp, &out, &["--resume"]).status.success());
    let whole = dir.join("whole");
    assert!(sweep(&exp, &whole, &[]).status.success());
    assert_eq!(common::files_under(&out), common::files_under(&whole));
    std::fs::remove_dir_all(dir).unwrap();
}

/// An experiment without `name:` is named after its file, in a merged sweep
/// as in an unsharded one: every file of the merge, index.html included,
/// is byte-identical to the unsharded sweep's. The merge names each shard
/// with its share of the runs, a missing shard, and a shard given twice.
#[test]
fn merged_shards_are_byte_identical_and_merge_names_its_shards() {
    let dir = common::temp_dir("merge-identity");
    std::fs::copy(
        common::repo_path("scenarios/csi-single-reader-count2.yaml"),
        dir.join("report.yaml"),
    )
    .unwrap();
    let exp = dir.join("grid-check.yaml");
    std::fs::write(&exp, format!("scenario: report.yaml\n{GRID}")).unwrap();
    let whole = dir.join("whole");
    assert!(sweep(&exp, &whole, &[]).status.success());
    let index = std::fs::read_to_string(whole.join("index.html")).unwrap();
    assert!(index.contains("<title>grid-check</title>"), "{index}");
    let mut shard_dirs = Vec::new();
    for i in 1..=3 {
        let shard = dir.join(format!("shard{i}"));
        let output = common::plansim(&[
            "sweep",
            common::arg(&exp),
            "-o",
            common::arg(&shard),
            "--shard",
            &format!("{i}/3"),
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        // 108 runs, 36 in each shard.
        assert!(
            stderr.contains(&format!("shard {i}/3: 36 of 108 runs recorded")),
            "{stderr}"
        );
        shard_dirs.push(shard);
    }
    let merged = dir.join("merged");
    let output = common::plansim(&[
        "merge",
        common::arg(&shard_dirs[0]),
        common::arg(&shard_dirs[1]),
        common::arg(&shard_dirs[2]),
        "-o",
        common::arg(&merged),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    for i in 1..=3 {
        assert!(
            stderr.contains(&format!("shard {i}/3: 36 of 108 runs")),
            "{stderr}"
        );
    }
    let (merged_files, whole_files) = (common::files_under(&merged), common::files_under(&whole));
    assert_eq!(
        merged_files.keys().collect::<Vec<_>>(),
        whole_files.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &whole_files {
        assert!(merged_files[name] == *bytes, "{name} differs after merge");
    }
    assert!(merged_files.contains_key("index.html"));
    assert!(merged_files.contains_key("inputs/grid-check.yaml"));

    let missing = common::plansim(&[
        "merge",
        common::arg(&shard_dirs[0]),
        common::arg(&shard_dirs[2]),
        "-o",
        common::arg(&dir.join("missing")),
    ]);
    assert_eq!(missing.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.contains("shard 2/3 missing: 72 of 108 runs present"),
        "{stderr}"
    );
    assert!(!dir.join("missing").exists(), "nothing written");

    let twice = common::plansim(&[
        "merge",
        common::arg(&shard_dirs[0]),
        common::arg(&shard_dirs[1]),
        common::arg(&shard_dirs[1]),
        "-o",
        common::arg(&dir.join("twice")),
    ]);
    assert_eq!(twice.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&twice.stderr);
    assert!(stderr.contains("shard 2/3 given twice"), "{stderr}");
    std::fs::remove_dir_all(dir).unwrap();
}

fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header = reader.headers().unwrap().iter().map(String::from).collect();
    let rows = reader
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect();
    (header, rows)
}

/// paired.csv holds only grid points, so every vary column is typed by
/// its values; the pooled rows are in paired-pooled.csv; aggregate-long.csv
/// holds exactly aggregate.csv's numbers, one per row.
#[test]
fn paired_and_long_outputs_load_cleanly() {
    let dir = common::temp_dir("long");
    let exp = experiment(&dir, GRID);
    let out = dir.join("out");
    assert!(sweep(&exp, &out, &[]).status.success());
    let (header, rows) = read_csv(&out.join("paired.csv"));
    let count = header
        .iter()
        .position(|c| c == "jobs[example].groups[cache].count")
        .unwrap();
    let enforcing = header
        .iter()
        .position(|c| c == "plugins[hostpath-plugin0].enforces_access_mode")
        .unwrap();
    assert!(!rows.is_empty());
    for row in &rows {
        assert!(row[count].parse::<u32>().is_ok(), "{row:?}");
        assert!(
            row[enforcing] == "true" || row[enforcing] == "false",
            "{row:?}"
        );
    }
    let (pooled_header, pooled) = read_csv(&out.join("paired-pooled.csv"));
    assert_eq!(
        pooled_header,
        [
            "scenario",
            "baseline",
            "candidate",
            "metric",
            "pairs",
            "mean_difference",
            "ci95",
            "min",
            "max"
        ]
    );
    // Pooled over 6 grid points x 6 seeds: 36 pairs each (first_full_s and
    // time_to_deploy_s: only the pairs where both runs reached it).
    for row in &pooled {
        let pairs: u32 = row[4].parse().unwrap();
        assert!(
            pairs == 36
                || (["first_full_s", "time_to_deploy_s"].contains(&row[3].as_str()) && pairs <= 36),
            "{row:?}"
        );
    }
    assert_eq!(
        pooled.len() * 6,
        rows.len(),
        "one pooled row per (pair, metric), one per point in paired.csv"
    );

    let (wide_header, wide) = read_csv(&out.join("aggregate.csv"));
    let (long_header, long) = read_csv(&out.join("aggregate-long.csv"));
    assert_eq!(
        long_header[long_header.len() - 3..],
        ["metric", "stat", "value"]
    );
    let vary = 2;
    let mut from_long = std::collections::BTreeMap::new();
    for row in &long {
        // scenario, point, vary..., scheduler, runs, metric, stat, value
        let point: usize = row[1].parse().unwrap();
        let scheduler = row[2 + vary].clone();
        let column = if row[5 + vary] == "reached" {
            format!("{}_reached", row[4 + vary])
        } else {
            format!("{}_{}", row[4 + vary], row[5 + vary])
        };
        assert!(
            from_long
                .insert((point, scheduler, column), row[6 + vary].clone())
                .is_none(),
            "a repeated row: {row:?}"
        );
    }
    let first_stat = 3 + vary;
    for (index, row) in wide.iter().enumerate() {
        let point = index / 3;
        for (column, value) in wide_header.iter().zip(row).skip(first_stat) {
            let key = (point, row[1].clone(), column.clone());
            assert_eq!(from_long.get(&key), Some(value), "{key:?}");
        }
    }
    assert_eq!(
        from_long.len(),
        wide.len() * (wide_header.len() - first_stat)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// The `cx` of every `<circle>` of one colour in an SVG, and the `x` of
/// every text that names a policy.
fn circles_and_legend(svg: &str, fill: &str) -> (Vec<f64>, Vec<f64>) {
    let attr = |tag: &str, name: &str| -> f64 {
        let start = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        tag[start..].split('"').next().unwrap().parse().unwrap()
    };
    let circles = svg
        .split('<')
        .filter(|t| t.starts_with("circle") && t.contains(&format!("fill=\"{fill}\"")))
        .map(|t| attr(t, "cx"))
        .collect();
    let legend = svg
        .split("<text")
        .skip(1)
        .filter(|t| {
            let body = t.split('>').nth(1).unwrap_or("").trim();
            body.starts_with("naive")
                || body.starts_with("plan-aware")
                || body.starts_with("validate")
        })
        .map(|t| attr(t, "x"))
        .collect();
    (circles, legend)
}

/// Numeric vary values sit on a numeric axis (1, 2, 4: the gap from 2 to 4
/// is twice the gap from 1 to 2); the legend is beside the data, never on it.
#[test]
fn charts_space_numbers_by_value_and_keep_the_legend_off_the_data() {
    let dir = common::temp_dir("charts");
    let exp = experiment(&dir, GRID);
    let out = dir.join("out");
    assert!(sweep(&exp, &out, &[]).status.success());
    let svg = std::fs::read_to_string(
        out.join("plots/1-jobs-example-groups-cache-count--violations.svg"),
    )
    .unwrap();
    // naive's colour; its points are drawn in grid order.
    let (circles, legend) = circles_and_legend(&svg, "#D62728");
    assert_eq!(circles.len(), 3, "{circles:?}");
    let (first, second) = (circles[1] - circles[0], circles[2] - circles[1]);
    assert!((second - 2.0 * first).abs() <= 2.0, "{circles:?}");
    assert_eq!(legend.len(), 3, "one legend entry per policy");
    let rightmost = circles.iter().copied().fold(0.0, f64::max);
    assert!(
        legend.iter().all(|&x| x > rightmost + 20.0),
        "{legend:?} vs {circles:?}"
    );
    // Every point of every policy is left of the legend.
    for fill in ["#D62728", "#FF7F0E", "#1F77B4"] {
        let (circles, _) = circles_and_legend(&svg, fill);
        let left_of_legend = legend.iter().copied().fold(f64::INFINITY, f64::min);
        assert!(
            circles.iter().all(|&x| x < left_of_legend),
            "{fill}: {circles:?}"
        );
    }
    // true/false are categories: evenly spaced.
    let svg = std::fs::read_to_string(
        out.join("plots/2-plugins-hostpath-plugin0-enforces_access_mode--violations.svg"),
    )
    .unwrap();
    let (circles, _) = circles_and_legend(&svg, "#D62728");
    assert_eq!(circles.len(), 2, "{circles:?}");
    std::fs::remove_dir_all(dir).unwrap();
}
