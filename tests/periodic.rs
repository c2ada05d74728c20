//! Periodic and parameterized jobs end to end: what the dispatcher
//! launches and skips, what a parent is, and the release difference of
//! `crons` (see src/sim/server/periodic.rs).

mod common;

use plansim::model::periodic::{CronSpecs, JobLaunch};
use plansim::model::policy::Policy;
use plansim::sim::trace::{TraceKind, TraceRecord};

const NODES: &str = "nodes:\n  - {id: client-1, cpu: 4000, memory: 8192}\n";

fn scenario(job: &str, events: &str) -> plansim::model::scenario::Scenario {
    common::load(&format!(
        "start_time: \"2026-01-05T00:00:00Z\"\nhorizon: 1h\n{NODES}jobs:\n{job}{events}"
    ))
}

fn rows(trace: &[TraceRecord], kind: TraceKind) -> Vec<&TraceRecord> {
    trace.iter().filter(|r| r.kind == kind).collect()
}

fn job_names(
    scenario: &plansim::model::scenario::Scenario,
    records: &[&TraceRecord],
) -> Vec<String> {
    records
        .iter()
        .map(|r| {
            scenario.jobs[r.job.expect("a job row").index()]
                .name
                .clone()
        })
        .collect()
}

const BACKUP: &str = "  - id: backup
    type: batch
    periodic: {cron: \"*/15 * * * *\"}
    groups:
      - {name: run, count: 1, tasks: [{name: t, cpu: 500, memory: 256, run_for: 5m}]}
";

#[test]
fn a_stopped_parent_launches_nothing_more() {
    let s = scenario(BACKUP, "events:\n  - {at: 20m, stop_job: backup}\n");
    let output = common::run_checked(&s, Policy::Validate, 0);
    let trace = output.trace.unwrap();
    let submitted = job_names(&s, &rows(&trace, TraceKind::JobSubmitted));
    assert_eq!(submitted, ["backup", "backup/periodic-1767572100"]);
    let skipped = rows(&trace, TraceKind::LaunchSkipped);
    assert_eq!(skipped.len(), 3, "the 00:30, 00:45 and 01:00 launches");
    assert!(
        skipped
            .iter()
            .all(|r| r.detail == "parent backup is stopped")
    );
    // The parent itself places nothing: one allocation, the child's.
    assert_eq!(output.metrics.placed, 1);
    assert_eq!(output.metrics.desired, 1);
}

#[test]
fn a_disabled_parent_is_registered_and_launches_nothing() {
    let s = scenario(
        &BACKUP.replace("*/15 * * * *\"}", "*/15 * * * *\", enabled: false}"),
        "",
    );
    assert_eq!(s.jobs.len(), 1, "no child stamped out");
    let output = common::run_checked(&s, Policy::Validate, 0);
    assert_eq!(output.metrics.evals, 0);
    assert_eq!(output.metrics.placed, 0);
    assert_eq!(output.metrics.rejected_jobs, 0);
}

#[test]
fn a_blocked_child_counts_as_running_for_prohibit_overlap() {
    // No node can hold the task: the first child's evaluation blocks, and
    // a blocked evaluation is not terminal (RunningChildren).
    let job = BACKUP
        .replace("cpu: 500", "cpu: 9000")
        .replace("\"}", "\", prohibit_overlap: true}");
    let s = scenario(&job, "");
    let output = common::run_checked(&s, Policy::Validate, 0);
    let trace = output.trace.unwrap();
    let skipped = rows(&trace, TraceKind::LaunchSkipped);
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    assert!(
        skipped
            .iter()
            .all(|r| r.detail == "prohibit_overlap: backup/periodic-1767572100 is still running"),
        "{skipped:?}"
    );
    assert!(output.metrics.infeasible >= 1);
}

#[test]
fn crons_are_refused_before_1_6_2() {
    let job = BACKUP.replace(
        "cron: \"*/15 * * * *\"",
        "crons: [\"*/15 * * * *\", \"@hourly\"]",
    );
    let s = scenario(&job, "");
    let naive = common::run_checked(&s, Policy::Naive, 0);
    assert_eq!(naive.rejections.len(), 1);
    assert_eq!(naive.rejections[0].1, "Must specify a spec");
    assert_eq!(naive.metrics.placed, 0, "a refused parent launches nothing");
    let validate = common::run_checked(&s, Policy::Validate, 0);
    assert!(validate.rejections.is_empty());
    let trace = validate.trace.unwrap();
    let submitted = job_names(&s, &rows(&trace, TraceKind::JobSubmitted));
    assert_eq!(
        submitted.len(),
        5,
        "the parent and 00:15, 00:30, 00:45, 01:00: {submitted:?}"
    );
    // The 01:00 child registers at the horizon; its placement would come after.
    assert_eq!(validate.metrics.placed, 3);
}

#[test]
fn a_periodic_job_file_carries_its_block() {
    let file = common::repo_path("scenarios/periodic-nomad/periodic-nomad.yaml");
    let s = plansim::scenario::load_file(&file).unwrap();
    let JobLaunch::Periodic(config) = &s.jobs[0].launch else {
        panic!("the parent is periodic: {:?}", s.jobs[0].launch);
    };
    let CronSpecs::Crons(specs) = &config.specs else {
        panic!("crons: {:?}", config.specs);
    };
    let texts: Vec<&str> = specs.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(texts, ["0 2 * * *", "30 4 * * *"]);
    assert!(config.prohibit_overlap);
    assert_eq!(config.time_zone.east_hours, 1);
    // 02:00 and 04:30 at UTC+1 are 01:00 and 03:30 UTC.
    let children: Vec<&str> = s.jobs[1..].iter().map(|j| j.name.as_str()).collect();
    assert_eq!(
        children,
        [
            "nightly-export/periodic-1767574800",
            "nightly-export/periodic-1767583800"
        ]
    );
}

#[test]
fn a_json_job_carries_periodic_and_parameterized() {
    let dir = common::temp_dir("periodic-json");
    let job = |id: &str, block: &str| {
        format!(
            r#"{{"Job": {{"ID": "{id}", "Type": "batch", {block}, "TaskGroups": [{{"Name": "g", "Count": 1, "Tasks": [{{"Name": "t", "Driver": "docker"}}]}}]}}}}"#
        )
    };
    let periodic = r#""Periodic": {"Enabled": true, "Spec": "0 * * * *", "Specs": [], "SpecType": "cron", "ProhibitOverlap": false, "TimeZone": "UTC"}, "ParameterizedJob": null"#;
    let parameterized = r#""Periodic": null, "ParameterizedJob": {"Payload": "forbidden", "MetaRequired": ["k"], "MetaOptional": null}"#;
    std::fs::write(dir.join("p.json"), job("p", periodic)).unwrap();
    std::fs::write(dir.join("q.json"), job("q", parameterized)).unwrap();
    let yaml = "start_time: \"2026-01-05T00:30:00Z\"\nhorizon: 2h\nnodes: [{id: c}]\njobs:\n  - file: p.json\n  - file: q.json\nevents:\n  - {at: 1m, dispatch: {job: q, meta: {k: v}}}\n";
    std::fs::write(dir.join("s.yaml"), yaml).unwrap();
    let s = plansim::scenario::load_file(&dir.join("s.yaml")).unwrap();
    let names: Vec<&str> = s.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(
        names[..4],
        ["p", "q", "p/periodic-1767574800", "p/periodic-1767578400"]
    );
    assert!(names[4].starts_with("q/dispatch-1767573060-"), "{names:?}");
    assert_eq!(names.len(), 5);
    let JobLaunch::Parameterized(config) = &s.jobs[1].launch else {
        panic!("{:?}", s.jobs[1].launch);
    };
    assert_eq!(config.meta_required, ["k"]);
    assert_eq!(config.payload.name(), "forbidden");
}

/// A named zone's daylight saving moves the launches (America/New_York
/// springs forward on 2026-03-08): the children are named by the Unix
/// second of each launch, as Nomad names them.
#[test]
fn a_named_time_zone_launches_by_its_wall_clock() {
    let s = common::load(
        "start_time: \"2026-03-07T00:00:00Z\"
horizon: 72h
nodes:
  - {id: client-1}
jobs:
  - id: nightly
    type: batch
    periodic: {cron: \"0 2 * * *\", time_zone: America/New_York}
    groups:
      - {name: run, tasks: [{name: t, cpu: 100, memory: 64, run_for: 5m}]}
",
    );
    let children: Vec<&str> = s
        .jobs
        .iter()
        .map(|j| j.name.as_str())
        .filter(|n| n.starts_with("nightly/"))
        .collect();
    // 02:00 EST, then 03:00 EDT (02:00 does not exist), then 02:00 EDT.
    assert_eq!(
        children,
        [
            "nightly/periodic-1772866800",
            "nightly/periodic-1772953200",
            "nightly/periodic-1773036000"
        ]
    );
}
