//! results/ holds golden results; they must be exactly what the documented
//! command produces, and `plansim diff` must catch any change to them.

mod common;

use plansim::model::metrics::Metric;

/// The documented command, minus `--out`: keep in step with results/README.md and .ci/run.
const GOLDEN_ARGS: [&str; 3] = ["run", "scenarios/", "--quiet"];

#[test]
fn results_are_reproduced_byte_for_byte() {
    let out = common::temp_dir("regen");
    let mut args = GOLDEN_ARGS.to_vec();
    args.extend(["--out", common::arg(&out)]);
    let run = common::plansim(&args);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let diff = common::plansim(&["diff", "results", common::arg(&out)]);
    for file in ["summary.csv", "comparison.md"] {
        let golden = std::fs::read(common::repo_path("results").join(file)).unwrap();
        let fresh = std::fs::read(out.join(file)).unwrap();
        assert!(
            golden == fresh,
            "results/{file} is stale; regenerate with `cargo run --release -- run scenarios/ --out results/`\n{}",
            String::from_utf8_lossy(&diff.stdout)
        );
    }
    assert_eq!(diff.status.code(), Some(0));
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
fn diff_names_every_changed_metric() {
    let golden = std::fs::read_to_string(common::repo_path("results/summary.csv")).unwrap();
    let dir = common::temp_dir("tamper");
    let header: Vec<&str> = golden.lines().next().unwrap().split(',').collect();
    for metric in Metric::ALL {
        let column = header.iter().position(|c| *c == metric.name()).unwrap();
        let mut lines: Vec<String> = golden.lines().map(str::to_string).collect();
        let mut fields: Vec<String> = lines[7].split(',').map(str::to_string).collect();
        fields[column] = if fields[column] == "9999" {
            "9998".into()
        } else {
            "9999".into()
        };
        lines[7] = fields.join(",");
        let copy = dir.join("summary.csv");
        std::fs::write(&copy, lines.join("\n") + "\n").unwrap();
        let output = common::plansim(&["diff", "results", common::arg(&copy)]);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(1), "{}: {stdout}", metric.name());
        assert!(
            stdout.contains(&format!(": {} ", metric.name())),
            "{}: {stdout}",
            metric.name()
        );
        assert!(
            stdout.contains("DIFFERS: 1 metric change(s) in 1 of"),
            "{stdout}"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn diff_rejects_bad_input_with_exit_2() {
    let dir = common::temp_dir("bad");
    let wrong = dir.join("wrong.csv");
    std::fs::write(&wrong, "scenario,policy,seed\n").unwrap();
    let output = common::plansim(&["diff", "results", common::arg(&wrong)]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("column 2 is \"policy\""));
    assert_eq!(
        common::plansim(&["diff", "results", "no/such/file.csv"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        common::plansim(&["diff", "results", "results", "--only", "nope"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        common::plansim(&["diff", "results", "results", "--rel-tol", "-1"])
            .status
            .code(),
        Some(2)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn diff_tolerance_and_markdown() {
    let golden = std::fs::read_to_string(common::repo_path("results/summary.csv")).unwrap();
    let dir = common::temp_dir("tolerance");
    let header: Vec<&str> = golden.lines().next().unwrap().split(',').collect();
    let events = header.iter().position(|c| *c == "events").unwrap();
    let mut lines: Vec<String> = golden.lines().map(str::to_string).collect();
    let mut fields: Vec<String> = lines[1].split(',').map(str::to_string).collect();
    let old: u64 = fields[events].parse().unwrap();
    fields[events] = (old + 1).to_string();
    lines[1] = fields.join(",");
    let copy = dir.join("summary.csv");
    std::fs::write(&copy, lines.join("\n") + "\n").unwrap();
    assert_eq!(
        common::plansim(&[
            "diff",
            "results",
            common::arg(&dir),
            "--abs-tol",
            "events=1"
        ])
        .status
        .code(),
        Some(0)
    );
    assert_eq!(
        common::plansim(&["diff", "results", common::arg(&dir), "--only", "violations"])
            .status
            .code(),
        Some(0)
    );
    let md = common::plansim(&["diff", "results", common::arg(&dir), "--format", "markdown"]);
    assert_eq!(md.status.code(), Some(1));
    let text = String::from_utf8_lossy(&md.stdout);
    assert!(text.starts_with("### plansim diff: DIFFERS"), "{text}");
    assert!(
        text.contains(&format!("| events | {old} | {} |", old + 1)),
        "{text}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// A summary.csv written before the deployment and availability columns
/// (it ends at `events`, then the version) is still read: `diff` compares
/// the columns both files have, and lists the new ones as added.
#[test]
fn diff_reads_a_summary_from_before_the_deployment_columns() {
    let golden = std::fs::read_to_string(common::repo_path("results/summary.csv")).unwrap();
    let header: Vec<&str> = golden.lines().next().unwrap().split(',').collect();
    let first_new = header.iter().position(|c| *c == "deployments").unwrap();
    let version = header.iter().position(|c| *c == "plansim_version").unwrap();
    assert_eq!(header[first_new - 1], "events");
    let old: Vec<String> = golden
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            let mut kept = fields[..first_new].to_vec();
            kept.extend(&fields[version..]);
            kept.join(",")
        })
        .collect();
    let dir = common::temp_dir("old-columns");
    let copy = dir.join("summary.csv");
    std::fs::write(&copy, old.join("\n") + "\n").unwrap();
    let output = common::plansim(&["diff", common::arg(&copy), "results"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("0 metric change(s)"), "{stdout}");
    assert!(stdout.contains("4 column(s) added, 0 removed"), "{stdout}");
    // Restricted to the columns both have, they are the same results.
    let same = common::plansim(&["diff", common::arg(&copy), "results", "--only", "events"]);
    assert_eq!(same.status.code(), Some(0));
    // A changed old metric is still found.
    let mut tampered = old.clone();
    let mut fields: Vec<String> = tampered[1].split(',').map(str::to_string).collect();
    let events = header.iter().position(|c| *c == "events").unwrap();
    fields[events] = "99999".into();
    tampered[1] = fields.join(",");
    std::fs::write(&copy, tampered.join("\n") + "\n").unwrap();
    let changed = common::plansim(&["diff", common::arg(&copy), "results"]);
    let stdout = String::from_utf8_lossy(&changed.stdout);
    assert!(stdout.contains("1 metric change(s)"), "{stdout}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// Every experiment's committed outputs are what `plansim sweep` produces.
#[test]
fn experiment_results_are_reproduced_byte_for_byte() {
    let experiments = common::yaml_files("experiments");
    assert!(
        experiments.len() >= 4,
        "the report grid and three capacity questions"
    );
    for experiment in experiments {
        let name = experiment
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let out = common::temp_dir(&format!("exp-{name}"));
        let fresh = out.join(&name);
        let output = common::plansim(&[
            "sweep",
            common::arg(&experiment),
            "--out",
            common::arg(&fresh),
            "--quiet",
        ]);
        assert!(
            output.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let golden = common::repo_path("results/experiments").join(&name);
        let (want, got) = (common::files_under(&golden), common::files_under(&fresh));
        assert_eq!(
            want.keys().collect::<Vec<_>>(),
            got.keys().collect::<Vec<_>>(),
            "{name}: regenerate results with scripts/regenerate-results.sh"
        );
        for (file, bytes) in want {
            assert!(
                bytes == got[&file],
                "results/experiments/{name}/{file} is stale: run scripts/regenerate-results.sh"
            );
        }
        std::fs::remove_dir_all(out).unwrap();
    }
}
