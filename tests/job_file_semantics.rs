//! What parts of real job and volume files mean, as Nomad reads them:
//! job-level `migrate`, task-level `affinity` and `network`, host volume
//! specs without a node, plugin or capability, and HCL1's nested one-line
//! blocks.

mod common;

use std::path::Path;

use plansim::model::host_volume::HostAccessMode;
use plansim::model::scenario::Scenario;

/// Loads `scenario` (YAML) beside `files` (name, text) in a fresh directory.
fn load_with(name: &str, scenario: &str, files: &[(&str, &str)]) -> Scenario {
    let dir = common::temp_dir(name);
    for (file, text) in files {
        std::fs::write(dir.join(file), text).unwrap();
    }
    let path = dir.join("scenario.yaml");
    std::fs::write(&path, scenario).unwrap();
    plansim::scenario::load_file(Path::new(&path)).unwrap_or_else(|e| panic!("{e}"))
}

const JOB: &str = r#"
job "web" {
  migrate {
    max_parallel     = 3
    min_healthy_time = "20s"
  }
  group "a" {
    migrate {
      max_parallel = 2
    }
    task "t" {
      driver = "docker"
      affinity {
        attribute = "${attr.cpu.arch}"
        value     = "arm64"
        weight    = 50
      }
    }
  }
  group "b" {
    affinity {
      attribute = "${node.datacenter}"
      value     = "dc1"
      weight    = 20
    }
    task "t" {
      driver = "docker"
      affinity {
        attribute = "${attr.kernel.name}"
        value     = "linux"
        weight    = 30
      }
    }
  }
}
"#;

#[test]
fn a_job_migrate_block_is_every_group_s_default_field_by_field() {
    let s = load_with(
        "job-migrate",
        "nodes: [{id: c1}]\njobs:\n  - file: web.nomad.hcl\n",
        &[("web.nomad.hcl", JOB)],
    );
    let groups = &s.jobs[0].groups;
    // api/tasks.go TaskGroup.Canonicalize: the job's block, the group's fields over it.
    assert_eq!(groups[0].migrate.max_parallel, 2);
    assert_eq!(groups[0].migrate.min_healthy_time.0, 20_000);
    assert_eq!(groups[1].migrate.max_parallel, 3);
    assert_eq!(groups[1].migrate.min_healthy_time.0, 20_000);
}

#[test]
fn a_task_s_affinities_score_its_group_after_the_group_s_own() {
    let s = load_with(
        "task-affinity",
        "nodes: [{id: c1}]\njobs:\n  - file: web.nomad.hcl\n",
        &[("web.nomad.hcl", JOB)],
    );
    let weights = |g: usize| -> Vec<i8> {
        s.jobs[0].groups[g]
            .affinities
            .iter()
            .map(|a| a.weight)
            .collect()
    };
    assert_eq!(weights(0), [50]);
    assert_eq!(weights(1), [20, 30]);
}

#[test]
fn a_host_volume_spec_without_node_plugin_or_capability_is_placed_as_nomad_places_it() {
    let spec = "name = \"scratch\"\ntype = \"host\"\n\nconstraint {\n  attribute = \"${meta.disk}\"\n  value     = \"ssd\"\n}\n";
    let s = load_with(
        "host-volume-defaults",
        "nodes:\n  - {id: c0}\n  - {id: c1, attributes: {disk: ssd}}\n  - {id: c2, attributes: {disk: ssd}}\nvolumes:\n  - file: scratch.volume.hcl\n  - file: scratch.volume.hcl\n",
        &[("scratch.volume.hcl", spec)],
    );
    // The built-in mkdir plugin, single-node-writer file-system, and the
    // first feasible node without a volume of that name, for each copy.
    assert_eq!(s.host_plugins[0].name, "mkdir");
    assert!(!s.host_plugins[0].enforces_access_mode);
    let nodes: Vec<&str> = s
        .host_volumes
        .iter()
        .map(|v| s.nodes[v.node.index()].name.as_str())
        .collect();
    assert_eq!(nodes, ["c1", "c2"]);
    assert_eq!(
        s.host_volumes[0].capabilities[0].0,
        HostAccessMode::SingleNodeWriter
    );
}

#[test]
fn a_nested_one_line_block_in_a_volume_spec_reads_as_nomad_s_hcl1_reads_it() {
    // As `nomad volume init` writes it (command/asset/volume.csi.hcl).
    let spec = "id = \"data\"\ntype = \"csi\"\nplugin_id = \"ebs\"\n\ncapability {\n  access_mode = \"single-node-writer\"\n  attachment_mode = \"file-system\"\n}\n\ntopology_request {\n  required {\n    topology { segments { rack = \"R1\" } }\n  }\n}\n";
    let s = load_with(
        "nested-one-line",
        "nodes: [{id: c1, csi_plugins: [{id: ebs}]}]\nplugins: [{id: ebs, enforces_access_mode: true}]\nvolumes:\n  - file: data.volume.hcl\n",
        &[("data.volume.hcl", spec)],
    );
    assert_eq!(
        s.volumes[0].topologies[0].get("rack").map(String::as_str),
        Some("R1")
    );
}

/// A source no volume has is registered and cannot be placed, as in Nomad,
/// with a warning that names it (a volume made elsewhere, or a placeholder
/// a template tool was to fill in); `--strict` refuses it.
#[test]
fn a_source_no_volume_has_is_missing_at_every_placement() {
    let dir = common::temp_dir("missing-source");
    let path = dir.join("scenario.yaml");
    std::fs::write(
        &path,
        "nodes: [{id: c1, csi_plugins: [{id: p}]}]
plugins: [{id: p, enforces_access_mode: true}]
volumes: [{id: v, plugin_id: p, access_mode: single-node-writer}]
jobs:
  - id: j
    groups:
      - name: g
        volumes:
          data: {type: csi, source: \"${volume_id}\", access_mode: single-node-writer}
        tasks: [{name: t}]
",
    )
    .unwrap();
    let (scenario, warnings) = plansim::scenario::load_file_with_warnings(&path).unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let warning = warnings[0].to_string();
    assert!(
        warning.contains("no volume with id \"${volume_id}\"") && warning.contains("placeholder"),
        "{warning}"
    );
    for policy in plansim::model::policy::Policy::ALL {
        let run = common::run_checked(&scenario, policy, 1);
        assert_eq!(run.metrics.placed, 0, "{policy:?}");
        let lines = run.placement_failures[0].metric.lines().join("\n");
        assert!(lines.contains("${volume_id}"), "{lines}");
    }
    let strict = common::plansim(&["validate", "--strict", common::arg(&path)]);
    assert_eq!(strict.status.code(), Some(2));
}

/// A legacy job: a task-level network (deprecated since 0.12) with static
/// port 80 in each of two tasks that share the label, beside a group port.
const LEGACY_PORTS: &str = r#"
job "legacy" {
  group "web" {
    count = 2
    network {
      port "admin" {}
    }
    task "a" {
      driver = "docker"
      resources {
        network {
          port "http" { static = 80 }
        }
      }
    }
    task "b" {
      driver = "docker"
      resources {
        network {
          port "http" { static = 81 }
        }
      }
    }
  }
}
"#;

/// Nomad's bin-packer assigns a task network's ports from the node's one
/// NetworkIndex, as the group's (rank.go `BinPackIterator.Next`), so the
/// second allocation finds port 80 taken on a one-node cluster.
#[test]
fn a_task_network_s_static_port_collides_on_the_node() {
    let s = load_with(
        "task-network",
        "nodes: [{id: c1}]\njobs:\n  - file: legacy.nomad.hcl\n",
        &[("legacy.nomad.hcl", LEGACY_PORTS)],
    );
    let labels: Vec<(String, Option<u16>)> = s.jobs[0].groups[0]
        .ports
        .iter()
        .map(|p| (p.label.clone(), p.value))
        .collect();
    assert_eq!(
        labels,
        [
            ("admin".to_string(), None),
            ("http".to_string(), Some(80)),
            ("b.http".to_string(), Some(81)),
        ]
    );
    for policy in plansim::model::policy::Policy::ALL {
        let run = common::run_checked(&s, policy, 1);
        assert_eq!(
            (run.metrics.placed, run.metrics.infeasible),
            (1, 1),
            "{policy:?}"
        );
        let lines = run.placement_failures[0].metric.lines().join("\n");
        assert!(
            lines.contains("network: reserved port collision http=80"),
            "{lines}"
        );
    }
}

/// The JSON form (an API job's Task.Resources.Networks) reads the same,
/// and a task label the group network already uses is Nomad's refusal.
#[test]
fn a_task_network_in_json_reads_as_in_hcl_and_a_clashing_label_is_refused() {
    let json = r#"{"Job": {"ID": "legacy", "Type": "service", "Datacenters": ["dc1"], "TaskGroups": [{"Name": "web", "Count": 2, "Networks": [{"DynamicPorts": [{"Label": "admin"}]}], "Tasks": [{"Name": "a", "Driver": "docker", "Resources": {"CPU": 100, "MemoryMB": 300, "Networks": [{"ReservedPorts": [{"Label": "http", "Value": 80}]}]}}, {"Name": "b", "Driver": "docker", "Resources": {"CPU": 100, "MemoryMB": 300, "Networks": [{"ReservedPorts": [{"Label": "http", "Value": 81}]}]}}]}]}}"#;
    let scenario = "nodes: [{id: c1}]\njobs:\n  - file: legacy.json\n";
    let from_json = load_with("task-network-json", scenario, &[("legacy.json", json)]);
    let from_hcl = load_with(
        "task-network-hcl",
        "nodes: [{id: c1}]\njobs:\n  - file: legacy.nomad.hcl\n",
        &[("legacy.nomad.hcl", LEGACY_PORTS)],
    );
    assert_eq!(
        format!("{:?}", from_json.jobs[0].groups[0].ports),
        format!("{:?}", from_hcl.jobs[0].groups[0].ports)
    );
    let dir = common::temp_dir("task-network-clash");
    std::fs::write(
        dir.join("legacy.nomad.hcl"),
        LEGACY_PORTS.replace("port \"admin\"", "port \"http\""),
    )
    .unwrap();
    std::fs::write(
        dir.join("scenario.yaml"),
        "nodes: [{id: c1}]\njobs:\n  - file: legacy.nomad.hcl\n",
    )
    .unwrap();
    let err = plansim::scenario::load_file(&dir.join("scenario.yaml")).unwrap_err();
    assert!(
        err.to_string().contains("Port label http already in use"),
        "{err}"
    );
}
