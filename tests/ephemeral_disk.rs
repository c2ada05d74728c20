//! A group's `ephemeral_disk`: its size against the node's disk
//! (`AllocsFit`), and the node a sticky or migrating disk's replacement
//! tries first (`generic_sched.go` `findPreferredNode`), per release, from
//! YAML scenarios and Nomad job files alike.

mod common;

use plansim::model::ids::NodeId;
use plansim::model::policy::Policy;
use plansim::model::scenario::Scenario;
use plansim::sim::trace::TraceKind;

const SCENARIO: &str = "scenarios/ephemeral-disk.yaml";

fn shipped() -> Scenario {
    plansim::scenario::load_file(&common::repo_path(SCENARIO)).unwrap()
}

fn node_id(scenario: &Scenario, name: &str) -> NodeId {
    NodeId::from_index(scenario.nodes.iter().position(|n| n.name == name).unwrap())
}

/// The nodes the placements of `job` went to, in placement order.
fn placed_on(scenario: &Scenario, policy: Policy, seed: u64, job: &str) -> Vec<String> {
    let trace = common::run_checked(scenario, policy, seed).trace.unwrap();
    common::rows_of_job(scenario, &trace, TraceKind::Placed, job)
        .iter()
        .map(|r| scenario.nodes[r.node.unwrap().index()].name.clone())
        .collect()
}

/// At every seed: 1.2.6 moves a migrating (not sticky) disk's replacement
/// off its node, 2.0.5 brings it back; a sticky one comes back under both.
#[test]
fn a_replacement_returns_to_its_node_when_its_disk_is_sticky() {
    let scenario = shipped();
    for seed in 1..=12 {
        assert_eq!(
            placed_on(&scenario, Policy::Naive, seed, "web"),
            ["client-b"]
        );
        for policy in [Policy::Validate, Policy::PlanAware] {
            assert_eq!(placed_on(&scenario, policy, seed, "web"), ["client-a"]);
        }
        for policy in Policy::ALL {
            assert_eq!(placed_on(&scenario, policy, seed, "db"), ["client-c"]);
        }
    }
}

/// Without the block the reschedule penalty moves the replacement away
/// under every release: the preference is the block's doing.
#[test]
fn without_sticky_or_migrate_the_penalty_moves_the_replacement() {
    let yaml = std::fs::read_to_string(common::repo_path(SCENARIO))
        .unwrap()
        .replace("{size: 6000, migrate: true}", "{size: 6000}")
        .replace("{size: 6000, sticky: true}", "{size: 6000}");
    let scenario = common::load(yaml.split("expect:").next().unwrap());
    for policy in Policy::ALL {
        assert_eq!(placed_on(&scenario, policy, 1, "web"), ["client-b"]);
        assert_eq!(placed_on(&scenario, policy, 1, "db"), ["client-d"]);
    }
}

/// A preferred node that no longer fits is only a first try: the stack
/// runs again over every node.
#[test]
fn a_preferred_node_without_room_falls_back_to_the_others() {
    let yaml = std::fs::read_to_string(common::repo_path(SCENARIO))
        .unwrap()
        .replace(
            "  - {alloc: \"db.pg[0]\", node: client-c, status: running}\n",
            "  - {alloc: \"db.pg[0]\", node: client-c, status: running}\n  - {alloc: \"hog.fill[0]\", node: client-c, status: running}\n",
        )
        .replace(
            "initial_allocations:",
            "  - id: hog\n    datacenters: [dc2]\n    constraints: [{attribute: \"${node.unique.name}\", value: client-c}]\n    groups:\n      - name: fill\n        ephemeral_disk: {size: 4000}\n        tasks:\n          - {name: fill, cpu: 100, memory: 64}\n  - id: grow\n    datacenters: [dc2]\n    submit_at: 30s\n    constraints: [{attribute: \"${node.unique.name}\", value: client-c}]\n    groups:\n      - name: g\n        ephemeral_disk: {size: 6000}\n        tasks:\n          - {name: g, cpu: 100, memory: 64}\n\ninitial_allocations:",
        );
    let scenario = common::load(yaml.split("expect:").next().unwrap());
    // grow takes client-c's disk once db's first allocation has failed
    // and freed it; db's replacement must then go to client-d.
    for policy in Policy::ALL {
        assert_eq!(
            placed_on(&scenario, policy, 1, "db"),
            ["client-d"],
            "{policy:?}"
        );
    }
}

/// The disk is a dimension of the fit: the placement failure names it,
/// and no node ever holds more than its disk.
#[test]
fn a_full_disk_exhausts_the_node() {
    let scenario = shipped();
    let run = common::run_checked(&scenario, Policy::Naive, 1);
    assert_eq!(run.metrics.infeasible, 1);
    let lines = run.placement_failures[0].metric.lines().join("\n");
    assert!(
        lines.contains("Dimension \"disk\" exhausted on 1 nodes"),
        "{lines}"
    );
    let client_b = node_id(&scenario, "client-b");
    assert_eq!(scenario.nodes[client_b.index()].disk, 10_000);
    // Nodes without a `disk:` get the documented default, and groups
    // without the block Nomad's 300 MB.
    let plain = common::load(
        "nodes:\n  - {id: c1}\njobs:\n  - id: j\n    groups:\n      - name: g\n        tasks: [{name: t}]\n",
    );
    assert_eq!(plain.nodes[0].disk, 100 * 1024);
    assert_eq!(plain.jobs[0].groups[0].ephemeral_disk.size_mb, 300);
}

/// Registration refuses a disk under 10 MB, in Nomad's words.
#[test]
fn a_disk_under_ten_megabytes_is_refused() {
    let yaml = "nodes:\n  - {id: c1}\njobs:\n  - id: j\n    groups:\n      - name: g\n        ephemeral_disk: {size: 9}\n        tasks: [{name: t}]\n";
    let err = plansim::scenario::load_str(yaml, "t.yaml", "t").unwrap_err();
    assert!(
        err.to_string()
            .contains("ephemeral_disk.size: minimum DiskMB value is 10; got 9"),
        "{err}"
    );
}

/// A job file's `ephemeral_disk` block, an API job's `EphemeralDisk` and a
/// node's `NodeResources.Disk` less `ReservedResources.Disk` are read, not
/// warned about; the scenario writer gives them back.
#[test]
fn job_files_and_imports_carry_the_disk() {
    let dir = common::temp_dir("ephemeral-disk-job-file");
    let job = "job \"web\" {\n  datacenters = [\"dc1\"]\n  group \"app\" {\n    ephemeral_disk {\n      size    = 6000\n      sticky  = true\n      migrate = true\n    }\n    task \"app\" {\n      driver = \"docker\"\n      resources {\n        cpu    = 100\n        memory = 64\n      }\n    }\n  }\n}\n";
    std::fs::write(dir.join("web.nomad.hcl"), job).unwrap();
    let scenario =
        "nodes:\n  - {id: c1, disk: 5000}\n  - {id: c2}\njobs:\n  - file: web.nomad.hcl\n";
    std::fs::write(dir.join("s.yaml"), scenario).unwrap();
    let out = common::plansim(&["validate", "--strict", common::arg(&dir.join("s.yaml"))]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let loaded = plansim::scenario::load_file(&dir.join("s.yaml")).unwrap();
    let disk = loaded.jobs[0].groups[0].ephemeral_disk;
    assert_eq!(
        (disk.size_mb, disk.sticky, disk.migrate),
        (6000, true, true)
    );
    // 6000 MB does not fit c1's 5000: every policy places on c2.
    for policy in Policy::ALL {
        assert_eq!(placed_on(&loaded, policy, 1, "web"), ["c2"]);
    }
    let yaml = plansim::scenario::write::model::to_yaml(&loaded, "");
    assert!(yaml.contains("disk: 5000"), "{yaml}");
    assert!(
        yaml.contains("ephemeral_disk: {size: 6000, sticky: true, migrate: true}"),
        "{yaml}"
    );
    let again = common::load(&yaml);
    assert_eq!(again.jobs[0].groups[0].ephemeral_disk, disk);
}

/// A destructive update's stop is in the plan before its replacement is
/// scored, and Nomad's JobAntiAffinityIterator counts ProposedAllocs, which
/// leave the plan's stops out: the old node is not penalised, so with two
/// empty nodes the replacement stays as often as the shuffle puts its node
/// first.
#[test]
fn a_destructive_update_s_own_node_is_not_an_anti_affinity_collision() {
    let yaml = "nodes:\n  - {id: c0}\n  - {id: c1}\njobs:\n  - id: web\n    groups:\n      - name: app\n        tasks: [{name: t, cpu: 100, memory: 64}]\nevents:\n  - {at: 5m, update_job: {job: web}}\n";
    let scenario = common::load(yaml);
    let stays = (1..=20)
        .filter(|&seed| {
            let placed = placed_on(&scenario, Policy::Validate, seed, "web");
            placed[0] == placed[1]
        })
        .count();
    assert!((1..20).contains(&stays), "stays at {stays} of 20 seeds");
}
