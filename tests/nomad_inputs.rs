//! Nomad's own files as scenario inputs: job files (HCL2 and JSON), volume
//! specs, plugin jobs, warnings for what plansim does not model, `--strict`.

mod common;

use std::path::Path;

use plansim::model::access::AccessMode;
use plansim::model::scenario::{ConstraintOperator, ConstraintTarget};
use plansim::scenario::{load_file, load_file_with_warnings};

const SEED_REPORT: &str = "scenarios/seed-report-nomad/seed-report-nomad.yaml";

/// Writes `yaml` as a scenario in `dir`, a temporary copy of the seed
/// report's directory, so relative `file:` paths resolve beside it. Returns
/// the directory's guard (keep it while the scenario is used) and the file.
fn seed_report_variant(
    name: &str,
    replace: &str,
    with: &str,
) -> (common::TempDir, std::path::PathBuf) {
    let dir = common::temp_dir(name);
    let source = common::repo_path("scenarios/seed-report-nomad");
    for entry in std::fs::read_dir(&source).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    for fixture in [
        "example.job.json",
        "example.api.json",
        "test-volume0.volume.json",
    ] {
        std::fs::copy(
            common::repo_path("tests/fixtures/nomad").join(fixture),
            dir.join(fixture),
        )
        .unwrap();
    }
    let text = std::fs::read_to_string(dir.join("seed-report-nomad.yaml")).unwrap();
    assert!(text.contains(replace), "{replace}");
    std::fs::write(
        dir.join("seed-report-nomad.yaml"),
        text.replace(replace, with),
    )
    .unwrap();
    let scenario = dir.join("seed-report-nomad.yaml");
    (dir, scenario)
}

/// `plansim run --trace --out` of one scenario: every file it wrote.
fn run_outputs(scenario: &Path, name: &str) -> std::collections::BTreeMap<String, Vec<u8>> {
    let out = common::temp_dir(name);
    let run = common::plansim(&[
        "run",
        common::arg(scenario),
        "--trace",
        "--out",
        common::arg(&out),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let files = common::files_under(&out);
    std::fs::remove_dir_all(out).unwrap();
    files
}

#[test]
fn hcl_and_json_jobs_give_byte_identical_results() {
    let hcl = run_outputs(&common::repo_path(SEED_REPORT), "nomad-hcl");
    for (label, fixture) in [
        ("run -output", "example.job.json"),
        ("GET /v1/job", "example.api.json"),
    ] {
        let (_dir, scenario) = seed_report_variant(
            &format!("nomad-json-{fixture}"),
            "file: example.nomad.hcl",
            &format!("file: {fixture}"),
        );
        let json = run_outputs(&scenario, &format!("nomad-json-out-{fixture}"));
        assert!(hcl.len() >= 4, "summary, comparison and traces");
        assert_eq!(hcl, json, "{label}: the JSON job gives other bytes");
    }
}

#[test]
fn a_json_volume_is_the_same_volume_as_its_hcl_spec() {
    let hcl = load_file(&common::repo_path(SEED_REPORT)).unwrap();
    let (_dir, scenario) = seed_report_variant(
        "nomad-volume-json",
        "file: test-volume0.hcl",
        "file: test-volume0.volume.json",
    );
    let json = load_file(&scenario).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(json.volumes.len(), 1);
    assert_eq!(json.volumes[0].name, hcl.volumes[0].name);
    assert_eq!(
        json.volumes[0].nominal_access_mode(),
        AccessMode::SingleNodeReaderOnly
    );
    assert_eq!(json.volumes[0].capabilities, hcl.volumes[0].capabilities);
    assert_eq!(
        json.volumes[0].attachment_mode,
        hcl.volumes[0].attachment_mode
    );
}

#[test]
fn the_seed_report_from_nomad_files_reproduces_the_yaml_scenario() {
    let out = common::temp_dir("seed-report-both");
    for (file, dir) in [
        (SEED_REPORT, "nomad"),
        ("scenarios/csi-single-reader-count2.yaml", "yaml"),
    ] {
        let run = common::plansim(&[
            "run",
            common::arg(&common::repo_path(file)),
            "--quiet",
            "--out",
            common::arg(&out.join(dir)),
        ]);
        assert_eq!(
            run.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
    }
    // The columns of the verdict (summary.csv's order: desired, placed,
    // running, infeasible, claim_failures, client_failures, reschedules,
    // violations, violation_seconds, rejected_jobs, ...).
    let rows = |dir: &str| -> Vec<Vec<String>> {
        std::fs::read_to_string(out.join(dir).join("summary.csv"))
            .unwrap()
            .lines()
            .skip(1)
            .map(|line| line.split(',').map(str::to_string).collect())
            .collect()
    };
    let (nomad, yaml) = (rows("nomad"), rows("yaml"));
    assert_eq!(nomad.len(), 3);
    for (n, y) in nomad.iter().zip(&yaml) {
        assert_eq!(n[1..4], y[1..4], "policy and seed, desired");
        for column in [6, 7, 8, 9, 10, 12] {
            assert_eq!(n[column], y[column], "column {column}: {n:?} {y:?}");
        }
        // placed and running also count the three plugin allocations.
        for column in [4, 5] {
            let (n, y): (u32, u32) = (n[column].parse().unwrap(), y[column].parse().unwrap());
            assert_eq!(n, y + 3, "column {column}");
        }
    }
    std::fs::remove_dir_all(out).unwrap();
}

#[test]
fn the_plugin_job_runs_the_plugin_on_every_client() {
    let (scenario, warnings) = load_file_with_warnings(&common::repo_path(SEED_REPORT)).unwrap();
    // The system job is simulated: its allocations bring the plugin.
    assert_eq!(scenario.jobs.len(), 2);
    assert_eq!(scenario.jobs[0].name, "csi-plugin");
    assert!(scenario.jobs[0].is_system());
    // Every client has a slot for it, empty until an allocation runs there.
    assert!(
        scenario
            .nodes
            .iter()
            .all(|n| n.csi_plugins.len() == 1 && n.csi_plugins[0].from_job)
    );
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[test]
fn variables_locals_and_functions_are_evaluated() {
    let file = common::repo_path("tests/fixtures/nomad/evaluated.yaml");
    let (scenario, warnings) = load_file_with_warnings(&file).unwrap_or_else(|e| panic!("{e}"));
    let job = &scenario.jobs[0];
    assert_eq!(job.name, "evaluated");
    assert_eq!(job.priority, 70);
    assert_eq!(job.datacenters, vec!["dc1".to_string(), "dc2".to_string()]);
    assert_eq!(job.submit_at.0, 60_000);
    // `${attr.kernel.name}` was kept for the node to fill in.
    assert_eq!(
        job.constraints[0].target,
        ConstraintTarget::Attribute("kernel.name".into())
    );
    let group = &job.groups[0];
    assert_eq!(group.name, "cache");
    assert_eq!(group.count, 2, "the scenario's count override wins");
    // max(200, 150) + 50 for the server, 100 for the sidecar.
    assert_eq!(group.cpu, 350);
    // format("%d", 128 * 2) for the server, Nomad's 300 for the sidecar.
    assert_eq!(group.memory, 556);
    // One warning for the job, each field with its line; the config and
    // template blocks, and the unreadable local they use, are not in it.
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let warning = warnings[0].to_string();
    assert!(
        warning.contains("task \"sidecar\" resources device (line 75)"),
        "{warning}"
    );
    // The group network block's static port is modelled, not warned about.
    assert!(
        !warning.contains("static port") && !warning.contains("network port"),
        "{warning}"
    );
    assert_eq!(group.ports.len(), 1);
    assert_eq!(
        (group.ports[0].label.as_str(), group.ports[0].value),
        ("http", Some(8080))
    );
    // The job's spread and the group's `distinct_hosts = true` shorthand
    // are read, not warned about.
    assert!(!warning.contains("spread") && !warning.contains("distinct_hosts"));
    assert_eq!(job.spreads.len(), 1);
    assert_eq!(job.spreads[0].target, ConstraintTarget::Datacenter);
    assert_eq!(job.spreads[0].weight, 50, "Nomad's default weight");
    assert!(job.spreads[0].targets.is_empty());
    let distinct = &group.constraints[0];
    assert_eq!(distinct.operator, ConstraintOperator::DistinctHosts);
    assert_eq!(distinct.value, "true");
    assert!(!warning.contains("config") && !warning.contains("template"));
    assert!(warning.contains("evaluated.nomad.hcl:23:1:"), "{warning}");
}

#[test]
fn strict_turns_warnings_into_errors() {
    let file = common::repo_path("tests/fixtures/nomad/evaluated.yaml");
    let loose = common::plansim(&["validate", common::arg(&file)]);
    assert_eq!(loose.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&loose.stderr).starts_with("warning: "));
    for command in ["validate", "run"] {
        let strict = common::plansim(&[command, "--strict", common::arg(&file)]);
        assert_eq!(strict.status.code(), Some(2), "{command}");
        assert!(
            String::from_utf8_lossy(&strict.stderr).contains("(an error under --strict)"),
            "{command}"
        );
        assert!(strict.stdout.is_empty(), "{command}");
    }
}

#[test]
fn datacenter_globs_match_the_nodes_datacenters() {
    let scenario = common::load(
        "nodes:\n  - {id: a, datacenter: eu-west}\n  - {id: b, datacenter: eu-east}\n  - {id: c, datacenter: us-east}\n\
         jobs:\n  - id: j\n    datacenters: [\"eu-*\", \"*-east\", \"mars\"]\n    groups:\n      - name: g\n        tasks: [{name: t}]\n",
    );
    assert_eq!(
        scenario.jobs[0].datacenters,
        vec!["eu-west", "eu-east", "us-east", "mars"]
    );
}

const EXPORT: &str = "tests/fixtures/nomad/export";

/// `plansim import nomad` of the fixture export into `dir`.
fn import_into(dir: &Path) -> (std::process::Output, std::path::PathBuf) {
    let out = dir.join("imported.yaml");
    (import_export(&common::repo_path(EXPORT), &out), out)
}

#[test]
fn import_writes_a_scenario_that_validates_runs_and_starts_with_claims_held() {
    let dir = common::temp_dir("nomad-import");
    let (output, out) = import_into(&dir);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let validate = common::plansim(&["validate", common::arg(&out)]);
    assert_eq!(validate.status.code(), Some(0));
    let scenario = load_file(&out).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scenario.nodes.len(), 3);
    assert!(scenario.nodes.iter().all(|n| n.csi_plugins.len() == 1));
    // NodeResources.Disk.DiskMB less ReservedResources.Disk.DiskMB.
    assert!(scenario.nodes.iter().all(|n| n.disk == 50_000));
    // Simulated 0s is the snapshot's clock: the latest allocation change.
    assert_eq!(
        scenario.start_time.to_rfc3339(),
        "2025-12-04T00:00:00Z",
        "the latest ModifyTime, in whole seconds"
    );
    assert_eq!(
        scenario.volumes[0].nominal_access_mode(),
        AccessMode::SingleNodeReaderOnly
    );
    // The failed allocation is history; the running one is the start.
    assert_eq!(scenario.initial_allocations.len(), 1);
    let policy = plansim::model::policy::Policy::PlanAware;
    let held = common::run_checked(&scenario, policy, 0);
    // example.cache[0] runs on client-1 and holds the only reader claim, so
    // the plan-aware scheduler cannot place example.cache[1].
    assert_eq!(held.metrics.running, 1);
    assert_eq!(held.metrics.placed, 0);
    assert!(held.metrics.infeasible >= 1);
    // Without the starting state the same cluster places one allocation.
    let text = std::fs::read_to_string(&out).unwrap();
    let cut = text.find("initial_allocations_by_node:").unwrap();
    let end = text.find("events:").unwrap();
    let fresh_text = format!("{}{}", &text[..cut], &text[end..]);
    let fresh = plansim::scenario::load_str(&fresh_text, "fresh.yaml", "fresh").unwrap();
    assert_eq!(common::run_checked(&fresh, policy, 0).metrics.placed, 1);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn import_is_deterministic() {
    let (a, b) = (
        common::temp_dir("nomad-import-a"),
        common::temp_dir("nomad-import-b"),
    );
    let (first, out_a) = import_into(&a);
    let (second, out_b) = import_into(&b);
    assert!(first.status.success() && second.status.success());
    assert_eq!(
        std::fs::read(&out_a).unwrap(),
        std::fs::read(&out_b).unwrap()
    );
    assert_eq!(first.stderr, second.stderr);
    std::fs::remove_dir_all(a).unwrap();
    std::fs::remove_dir_all(b).unwrap();
}

#[test]
fn import_refuses_a_broken_export_and_writes_nothing() {
    let dir = common::temp_dir("nomad-import-bad");
    let export = dir.join("export");
    std::fs::create_dir_all(&export).unwrap();
    let out = dir.join("out.yaml");
    let attempt = || import_export(&export, &out);
    let missing = attempt();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("nodes.json"));
    std::fs::write(
        export.join("nodes.json"),
        "[{\"ID\": \"n1\",\n  \"Name\": }]",
    )
    .unwrap();
    let malformed = attempt();
    assert_eq!(malformed.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&malformed.stderr);
    assert!(stderr.contains("nodes.json:2:"), "{stderr}");
    assert!(stderr.contains("malformed JSON"), "{stderr}");
    std::fs::write(export.join("nodes.json"), "{\"Nodes\": []}").unwrap();
    let wrong = attempt();
    assert_eq!(wrong.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("expected a JSON list of nodes"));
    // A byte order mark is named, not reported as "something else".
    std::fs::write(export.join("nodes.json"), "\u{feff}[]").unwrap();
    let bom = attempt();
    assert_eq!(bom.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bom.stderr);
    assert!(
        stderr.contains("nodes.json:1:1: expected JSON, found a UTF-8 byte order mark"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing is written for bad input");
    std::fs::remove_dir_all(dir).unwrap();
}

/// `plansim import nomad EXPORT --out OUT`.
fn import_export(export: &Path, out: &Path) -> std::process::Output {
    common::plansim(&[
        "import",
        "nomad",
        common::arg(export),
        "--out",
        common::arg(out),
    ])
}

#[test]
fn import_opens_only_the_files_it_uses() {
    let dir = common::temp_dir("nomad-import-only-used");
    let export = dir.join("export");
    for (from, to) in common::files_under(&common::repo_path(EXPORT)) {
        let path = export.join(from);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, to).unwrap();
    }
    // Larger than any limit, and one never ends: reading either would fail.
    let sparse = std::fs::File::create(export.join("backup.tar")).unwrap();
    sparse.set_len(2 << 30).unwrap();
    let unlisted = std::fs::File::create(export.join("node/not-in-nodes-json.json")).unwrap();
    unlisted.set_len(2 << 30).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("/dev/zero", export.join("job/zero.json")).unwrap();
    let out = dir.join("imported.yaml");
    let output = import_export(&export, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("backup.tar: not a file plansim reads; ignored"),
        "{stderr}"
    );
    assert!(
        common::plansim(&["validate", common::arg(&out)])
            .status
            .success()
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// A file name of the export folder is data: a newline or an ESC in it is
/// printed escaped in the note that names it, never raw.
#[test]
fn import_notes_print_file_names_escaped() {
    let dir = common::temp_dir("nomad-import-odd-names");
    let export = dir.join("export");
    for (from, to) in common::files_under(&common::repo_path(EXPORT)) {
        let path = export.join(from);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, to).unwrap();
    }
    std::fs::write(export.join("z\u{1b}[31m\nFORGED.json"), "{}").unwrap();
    let output = import_export(&export, &dir.join("imported.yaml"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("note: z\\u{1b}[31m\\nFORGED.json: not a file plansim reads"),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}') && !stderr.lines().any(|l| l.starts_with("FORGED")),
        "{stderr}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// An export of `nodes` nodes and one job whose `allocations` allocations
/// all run, spread over the nodes.
fn large_export(export: &Path, nodes: usize, allocations: usize) {
    std::fs::create_dir_all(export.join("job")).unwrap();
    let node_list: Vec<String> = (0..nodes)
        .map(|i| {
            format!(
                r#"{{"ID": "id-{i}", "Name": "n{i}", "Status": "ready", "Datacenter": "dc1", "Drivers": {{"docker": {{"Detected": true, "Healthy": true}}}}, "NodeResources": {{"Cpu": {{"CpuShares": 100000}}, "Memory": {{"MemoryMB": 100000}}}}}}"#
            )
        })
        .collect();
    std::fs::write(
        export.join("nodes.json"),
        format!("[{}]", node_list.join(",\n")),
    )
    .unwrap();
    std::fs::write(
        export.join("jobs.json"),
        r#"[{"ID": "big", "Status": "running", "Stop": false}]"#,
    )
    .unwrap();
    std::fs::write(
        export.join("job/big.json"),
        format!(
            r#"{{"ID": "big", "Name": "big", "Type": "service", "Datacenters": ["dc1"], "TaskGroups": [{{"Name": "g", "Count": {allocations}, "Tasks": [{{"Name": "t", "Driver": "docker", "Resources": {{"CPU": 10, "MemoryMB": 10}}}}]}}]}}"#
        ),
    )
    .unwrap();
    let alloc_list: Vec<String> = (0..allocations)
        .map(|i| {
            format!(
                r#"{{"Name": "big.g[{i}]", "JobID": "big", "NodeID": "id-{}", "DesiredStatus": "run", "ClientStatus": "running"}}"#,
                i % nodes
            )
        })
        .collect();
    std::fs::write(
        export.join("allocations.json"),
        format!("[{}]", alloc_list.join(",\n")),
    )
    .unwrap();
}

#[test]
fn a_110000_allocation_export_imports_and_validates() {
    let dir = common::temp_dir("nomad-import-large");
    let export = dir.join("export");
    large_export(&export, 1000, 110_000);
    let out = dir.join("large.yaml");
    let output = import_export(&export, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    // One YAML entry per allocation (7 YAML nodes each) would pass
    // YAML_MAX_NODES; the compact form, one node each, loads.
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("\ninitial_allocations_by_node:\n"));
    assert!(!text.contains("\ninitial_allocations:"));
    let validate = common::plansim(&["validate", common::arg(&out)]);
    assert_eq!(
        validate.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&validate.stderr)
    );
    let scenario = load_file(&out).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scenario.initial_allocations.len(), 110_000);
    assert_eq!(scenario.nodes.len(), 1000);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_export_past_the_loaders_limits_is_refused_naming_the_limit() {
    let dir = common::temp_dir("nomad-import-too-large");
    let export = dir.join("export");
    std::fs::create_dir_all(&export).unwrap();
    let nodes = plansim::scenario::limits::MAX_NODES + 1;
    let list: Vec<String> = (0..nodes)
        .map(|i| format!(r#"{{"ID": "id-{i}", "Name": "n{i}", "Status": "ready"}}"#))
        .collect();
    std::fs::write(export.join("nodes.json"), format!("[{}]", list.join(",\n"))).unwrap();
    let out = dir.join("too-large.yaml");
    let output = import_export(&export, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("{nodes} nodes")), "{stderr}");
    assert!(stderr.contains("(MAX_NODES)"), "{stderr}");
    assert!(!stderr.contains("please report"), "{stderr}");
    assert!(!out.exists(), "nothing is written");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_file_entry_needs_a_scenario_file_to_be_relative_to() {
    let err = plansim::scenario::load_str(
        "nodes:\n  - id: a\njobs:\n  - file: /etc/hostname\n",
        "text.yaml",
        "text",
    )
    .expect_err("text that is not a file cannot name files");
    assert_eq!(err.position.map(|p| p.line), Some(4));
    assert!(err.message.starts_with("jobs[0].file: "), "{err}");
}

#[test]
fn one_volume_spec_stamped_out_with_an_id_override() {
    let (_dir, scenario) = seed_report_variant(
        "nomad-volume-count",
        "  - file: test-volume0.hcl\n",
        "  - file: test-volume0.hcl\n    id: \"disk[{i}]\"\n    count: 3\n  - file: test-volume0.hcl\n",
    );
    let loaded = load_file(&scenario).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = loaded.volumes.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["disk[0]", "disk[1]", "disk[2]", "test-volume0"]);
}

/// Nomad 1.10+ ignores a group's `max_client_disconnect` and
/// `stop_after_client_disconnect` (deprecated in 1.8; only the `disconnect`
/// block counts, command/agent/job_endpoint.go ApiTgToStructsTG), 1.2.6
/// reads the group fields and has no block: the importer keeps each
/// spelling apart and the release table picks one.
#[test]
fn disconnect_settings_keep_their_spelling_and_the_release_picks_one() {
    use plansim::model::release::{NOMAD_1_2_6, NOMAD_2_0_5};
    use plansim::model::scenario::DisconnectWindows;
    use plansim::model::time::Millis;
    use plansim::sim::trace::TraceKind;
    use plansim::sim::{RunOptions, simulate};
    let minutes = |m: u64| Some(Millis(m * 60_000));
    let fields = DisconnectWindows {
        max_client_disconnect: minutes(10),
        stop_after_client_disconnect: minutes(2),
    };
    let block = DisconnectWindows {
        max_client_disconnect: minutes(5),
        stop_after_client_disconnect: None,
    };
    for fixture in ["disconnect.yaml", "disconnect-json.yaml"] {
        let file = common::repo_path("tests/fixtures/nomad").join(fixture);
        let scenario = load_file(&file).unwrap_or_else(|e| panic!("{fixture}: {e}"));
        let groups = &scenario.jobs[0].groups;
        assert_eq!(groups[0].name, "fields");
        assert_eq!(groups[0].disconnect.group_fields, fields, "{fixture}");
        assert_eq!(groups[0].disconnect.block, DisconnectWindows::default());
        assert_eq!(
            groups[1].disconnect.group_fields,
            DisconnectWindows::default()
        );
        assert_eq!(groups[1].disconnect.block, block, "{fixture}");
        let old = NOMAD_1_2_6.disconnect_settings;
        let new = NOMAD_2_0_5.disconnect_settings;
        assert_eq!(groups[0].disconnect.counted(old), fields);
        assert_eq!(
            groups[0].disconnect.counted(new),
            DisconnectWindows::default()
        );
        assert_eq!(
            groups[1].disconnect.counted(old),
            DisconnectWindows::default()
        );
        assert_eq!(groups[1].disconnect.counted(new), block);
        // Under 2.0.5 only the block's window makes an allocation unknown
        // when both clients miss their heartbeats: the group fields' is
        // lost, though it also wrote a (longer) window.
        let run = simulate(
            &scenario,
            RunOptions {
                trace: true,
                ..RunOptions::new(plansim::model::policy::Policy::Validate, 1)
            },
        );
        let trace = run.trace.unwrap();
        let unknown: Vec<&str> = trace
            .iter()
            .filter(|r| r.kind == TraceKind::Unknown)
            .map(|r| groups[r.group.unwrap().group_index()].name.as_str())
            .collect();
        assert_eq!(unknown, ["block"], "{fixture}");
        let lost: Vec<&str> = trace
            .iter()
            .filter(|r| r.kind == TraceKind::Lost)
            .map(|r| groups[r.group.unwrap().group_index()].name.as_str())
            .collect();
        assert!(lost.contains(&"fields"), "{fixture}: {lost:?}");
    }
}

#[test]
fn a_large_allocations_json_is_streamed_keeping_only_what_starts_the_run() {
    // A real /v1/allocations entry carries task states, resources and
    // events: a few KiB each. 12,000 of them pass MAX_FILE_BYTES (16 MiB),
    // which no longer bounds this file: it is parsed as it is read.
    let dir = common::temp_dir("nomad-import-streamed");
    let export = dir.join("export");
    large_export(&export, 50, 6_000);
    let padding = "x".repeat(3_000);
    let alloc_list: Vec<String> = (0..12_000)
        .map(|i| {
            let (index, status) = if i % 2 == 0 {
                (i / 2, "running")
            } else {
                (i, "complete")
            };
            format!(
                r#"{{"Name": "big.g[{index}]", "JobID": "big", "NodeID": "id-{}", "DesiredStatus": "run", "ClientStatus": "{status}", "TaskStates": {{"t": {{"State": "dead", "Events": [{{"Message": "{padding}"}}]}}}}}}"#,
                i % 50
            )
        })
        .collect();
    let text = format!("[{}]", alloc_list.join(",\n"));
    assert!(text.len() > plansim::scenario::limits::MAX_FILE_BYTES);
    std::fs::write(export.join("allocations.json"), text).unwrap();
    let out = dir.join("streamed.yaml");
    let output = import_export(&export, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let scenario = load_file(&out).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scenario.initial_allocations.len(), 6_000);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_imported_name_holding_the_template_placeholder_keeps_it() {
    // `{i}` stamps only an entry with a count: a Nomad node named
    // `web-{i}` is imported, loads and holds its allocations as named.
    let dir = common::temp_dir("nomad-import-placeholder");
    let export = dir.join("export");
    large_export(&export, 2, 4);
    let nodes = std::fs::read_to_string(export.join("nodes.json")).unwrap();
    std::fs::write(
        export.join("nodes.json"),
        nodes.replace("\"Name\": \"n1\"", "\"Name\": \"web-{i}\""),
    )
    .unwrap();
    let out = dir.join("placeholder.yaml");
    let output = import_export(&export, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let scenario = load_file(&out).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = scenario.nodes.iter().map(|n| n.name.as_str()).collect();
    assert!(names.contains(&"web-{i}"), "{names:?}");
    assert!(!names.contains(&"web-0"), "{names:?}");
    assert_eq!(scenario.initial_allocations.len(), 4);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn dynamic_blocks_are_expanded_as_nomad_expands_them() {
    let file = common::repo_path("scenarios/dynamic-blocks-nomad/dynamic-blocks-nomad.yaml");
    let (scenario, warnings) = load_file_with_warnings(&file).unwrap_or_else(|e| panic!("{e}"));
    assert!(warnings.is_empty(), "nothing skipped: {warnings:?}");
    let group = &scenario.jobs[0].groups[0];
    let requests: Vec<(&str, String)> = group
        .volumes
        .iter()
        .map(|r| {
            let source = match &r.source {
                plansim::model::scenario::VolumeSource::Shared(id) => {
                    scenario.volumes[id.index()].name.clone()
                }
                other => format!("{other:?}"),
            };
            (r.alias.as_str(), source)
        })
        .collect();
    // A map is expanded in key order, each label from its key.
    assert_eq!(
        requests,
        [
            ("vol-a", "data-a".to_string()),
            ("vol-b", "data-b".to_string())
        ]
    );
}

/// Loads a scenario whose one job is `job` (HCL), written beside it.
fn load_job_text(name: &str, job: &str) -> Result<(), String> {
    let dir = common::temp_dir(name);
    std::fs::write(dir.join("job.nomad.hcl"), job).unwrap();
    std::fs::write(
        dir.join("s.yaml"),
        "nodes:\n  - id: a\njobs:\n  - file: job.nomad.hcl\n",
    )
    .unwrap();
    load_file(&dir.join("s.yaml"))
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[test]
fn a_dynamic_block_that_cannot_be_expanded_is_an_error_at_its_place() {
    let job = |dynamic: &str| {
        format!(
            "job \"j\" {{\n  datacenters = [\"dc1\"]\n  group \"g\" {{\n{dynamic}\n    task \"t\" {{\n      driver = \"docker\"\n    }}\n  }}\n}}\n"
        )
    };
    let cases = [
        (
            "    dynamic \"constraint\" {\n      for_each = \"x\"\n      content {}\n    }",
            "job.nomad.hcl:5:7: dynamic \"constraint\".for_each: expected a list or a map, found a string",
        ),
        (
            "    dynamic \"constraint\" {\n      for_each = [1]\n    }",
            "job.nomad.hcl:4:5: dynamic \"constraint\": expected a content block",
        ),
        (
            "    dynamic {\n      for_each = [1]\n      content {}\n    }",
            "job.nomad.hcl:4:5: a dynamic block needs one label",
        ),
    ];
    for (i, (dynamic, expected)) in cases.iter().enumerate() {
        let err =
            load_job_text(&format!("nomad-dynamic-bad-{i}"), &job(dynamic)).expect_err("refused");
        assert!(err.contains(expected), "{expected}\n  in: {err}");
    }
    // Nested expansions multiply: 400 x 400 blocks pass HCL_MAX_FOR_ITERATIONS
    // and are refused before they are made.
    let list = format!("[{}]", vec!["1"; 400].join(", "));
    let nested = format!(
        "    dynamic \"constraint\" {{\n      for_each = {list}\n      content {{\n        dynamic \"x\" {{\n          for_each = {list}\n          content {{}}\n        }}\n      }}\n    }}"
    );
    let err = load_job_text("nomad-dynamic-budget", &job(&nested)).expect_err("refused");
    assert!(err.contains("(HCL_MAX_FOR_ITERATIONS)"), "{err}");
}

/// The lifecycle job file in HCL and in JSON (`nomad job run -output`)
/// load to the same job: phases, kill timeout, run times from the entry.
#[test]
fn lifecycle_fields_read_the_same_from_hcl_and_json() {
    let dir = common::temp_dir("nomad-lifecycle-json");
    let scenario = common::repo_path("scenarios/nomad/lifecycle-batch-job-file.yaml");
    let text = std::fs::read_to_string(&scenario).unwrap();
    std::fs::write(
        dir.join("json.yaml"),
        text.replace("file: lifecycle/etl.nomad.hcl", "file: etl.job.json"),
    )
    .unwrap();
    std::fs::copy(
        common::repo_path("tests/fixtures/nomad/etl.job.json"),
        dir.join("etl.job.json"),
    )
    .unwrap();
    let hcl = load_file(&scenario).unwrap_or_else(|e| panic!("{e}"));
    let json = load_file(&dir.join("json.yaml")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(format!("{:?}", hcl.jobs), format!("{:?}", json.jobs));
    let group = &hcl.jobs[0].groups[0];
    use plansim::model::lifecycle::TaskResourceRule;
    for rule in [
        TaskResourceRule::SidecarsPlusLargestPhase,
        TaskResourceRule::LargestPhase,
    ] {
        let ask = group.ask(rule);
        assert_eq!(
            (ask.cpu, ask.memory, ask.disk),
            (1000, 256, 300),
            "{rule:?}"
        );
    }
    // 1m prestart, 10m main, 30s poststop.
    assert_eq!(
        group.run_for,
        Some(plansim::model::time::Millis::from_secs(690))
    );
    let lifecycle = group.lifecycle.as_deref().expect("lifecycle tasks");
    assert_eq!(
        lifecycle.tasks[1].kill_timeout,
        Some(plansim::model::time::Millis::from_secs(30))
    );
}

#[test]
fn ports_read_the_same_from_hcl_and_json() {
    let dir = common::temp_dir("nomad-ports-json");
    let scenario = common::repo_path("scenarios/nomad/ports-job-file.yaml");
    let text = std::fs::read_to_string(&scenario).unwrap();
    std::fs::write(
        dir.join("json.yaml"),
        text.replace("file: ports/web.nomad.hcl", "file: web.job.json"),
    )
    .unwrap();
    std::fs::copy(
        common::repo_path("tests/fixtures/nomad/web.job.json"),
        dir.join("web.job.json"),
    )
    .unwrap();
    let (hcl, hcl_warnings) = load_file_with_warnings(&scenario).unwrap_or_else(|e| panic!("{e}"));
    let (json, json_warnings) =
        load_file_with_warnings(&dir.join("json.yaml")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(format!("{:?}", hcl.jobs), format!("{:?}", json.jobs));
    assert!(hcl_warnings.is_empty(), "{hcl_warnings:?}");
    assert!(json_warnings.is_empty(), "{json_warnings:?}");
    let ports: Vec<_> = hcl.jobs[0].groups[0]
        .ports
        .iter()
        .map(|p| (p.label.as_str(), p.value))
        .collect();
    assert_eq!(ports, vec![("http", Some(80)), ("metrics", None)]);
}

#[test]
fn a_misspelt_volume_spec_key_is_named_and_strict_refuses_it() {
    // Nomad's volume register drops an unknown top-level key
    // (mapstructure.WeakDecode): a misspelt topology loses a constraint,
    // so plansim warns, and --strict refuses.
    let dir = common::temp_dir("nomad-volume-unknown-key");
    let specs = [
        (
            "v.json",
            r#"{"ID": "v0", "PluginID": "p", "AccessMode": "single-node-writer", "AttachmentMode": "file-system", "Toplogies": [{"Segments": {"rack": "r1"}}]}"#,
            "Toplogies",
        ),
        (
            "v.hcl",
            "id = \"v0\"\nplugin_id = \"p\"\ncapability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\ntopology_reqest {\n  required {\n    topology { segments = { rack = \"r1\" } }\n  }\n}\n",
            "topology_reqest",
        ),
    ];
    for (name, spec, key) in specs {
        std::fs::write(dir.join(name), spec).unwrap();
        let scenario = dir.join(format!("{name}.yaml"));
        std::fs::write(
            &scenario,
            format!(
                "nodes: [{{id: c-0, csi_plugins: [{{id: p}}]}}]\nplugins: [{{id: p, enforces_access_mode: true}}]\nvolumes:\n  - file: {name}\n"
            ),
        )
        .unwrap();
        let lenient = common::plansim(&["validate", common::arg(&scenario)]);
        let stderr = String::from_utf8_lossy(&lenient.stderr);
        assert_eq!(lenient.status.code(), Some(0), "{stderr}");
        assert!(
            stderr.contains(&format!("{key} (not a field of Nomad's volume spec")),
            "{stderr}"
        );
        let strict = common::plansim(&["validate", "--strict", common::arg(&scenario)]);
        let stderr = String::from_utf8_lossy(&strict.stderr);
        assert_eq!(strict.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(key), "{stderr}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_hcl1_volume_spec_with_one_line_segments_keeps_its_topology() {
    // Nomad reads volume specs with HCL1, where a one-line block separates
    // its attributes with commas (Nomad's own example); the topology must
    // constrain placement (from 1.3.0: `validate` runs 2.0.5), not be
    // dropped.
    let dir = common::temp_dir("nomad-volume-hcl1-segments");
    std::fs::write(
        dir.join("v.hcl"),
        "id = \"data\"\nplugin_id = \"p\"\ncapability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\ntopology_request {\n  required {\n    topology { segments { rack = \"R2\", zone = \"us-east-1a\" } }\n  }\n}\n",
    )
    .unwrap();
    for (rack, placed) in [("R2", 1), ("R1", 0)] {
        let scenario = dir.join(format!("{rack}.yaml"));
        std::fs::write(
            &scenario,
            format!(
                "nodes: [{{id: c-0, csi_plugins: [{{id: p}}], topology: {{rack: {rack}, zone: us-east-1a}}}}]\nplugins: [{{id: p, enforces_access_mode: true}}]\nvolumes:\n  - file: v.hcl\njobs:\n  - id: a\n    groups: [{{name: g, count: 1, volumes: {{d: {{type: csi, source: data, access_mode: single-node-writer, attachment_mode: file-system}}}}, tasks: [{{name: t}}]}}]\nexpect:\n  validate: {{placed: {placed}}}\n"
            ),
        )
        .unwrap();
        let output = common::plansim(&["run", "--quiet", common::arg(&scenario)]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "rack {rack}: {stderr}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}
