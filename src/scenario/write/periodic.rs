//! The `periodic` and `parameterized` blocks of a parent job, and
//! `dispatch` events, written back as the loader reads them. Children are
//! never written: the loader stamps them out again from their parent and
//! the dispatch events, under the same names and in the same order.

use std::fmt::Write as _;

use super::scalar::{string_map, text};
use crate::model::periodic::{CronSpecs, DispatchRequest, JobLaunch, PayloadRule};

/// The job's blocks, at the job's indentation (`    `).
pub(super) fn write_launch(out: &mut String, launch: &JobLaunch) {
    match launch {
        JobLaunch::Periodic(config) => {
            let mut fields = Vec::new();
            match &config.specs {
                CronSpecs::Cron(one) => fields.push(format!("cron: {}", quoted(&one.text))),
                CronSpecs::Crons(many) => {
                    let specs: Vec<String> = many.iter().map(|s| quoted(&s.text)).collect();
                    fields.push(format!("crons: [{}]", specs.join(", ")));
                }
            }
            if config.prohibit_overlap {
                fields.push("prohibit_overlap: true".to_string());
            }
            if config.time_zone.name != "UTC" {
                fields.push(format!("time_zone: {}", quoted(&config.time_zone.name)));
            }
            if !config.enabled {
                fields.push("enabled: false".to_string());
            }
            let _ = writeln!(out, "    periodic: {{{}}}", fields.join(", "));
        }
        JobLaunch::Parameterized(config) => {
            let mut fields = Vec::new();
            if config.payload != PayloadRule::Optional {
                fields.push(format!("payload: {}", config.payload.name()));
            }
            for (name, keys) in [
                ("meta_required", &config.meta_required),
                ("meta_optional", &config.meta_optional),
            ] {
                if !keys.is_empty() {
                    let keys: Vec<String> = keys.iter().map(|k| text(k)).collect();
                    fields.push(format!("{name}: [{}]", keys.join(", ")));
                }
            }
            let _ = writeln!(out, "    parameterized: {{{}}}", fields.join(", "));
        }
        JobLaunch::Plain | JobLaunch::PeriodicChild { .. } | JobLaunch::Dispatched { .. } => {}
    }
}

/// A cron spec always quoted: `*` and `@` start YAML syntax.
fn quoted(spec: &str) -> String {
    serde_json::to_string(spec).expect("a string serializes")
}

/// A `dispatch` event's action, `job` already written as a scalar.
pub(super) fn dispatch(job: &str, request: &DispatchRequest) -> String {
    let mut fields = vec![format!("job: {job}")];
    if !request.meta.is_empty() {
        fields.push(format!("meta: {}", string_map(&request.meta)));
    }
    if let Some(payload) = &request.payload {
        fields.push(format!("payload: {}", quoted(payload)));
    }
    format!("dispatch: {{{}}}", fields.join(", "))
}

#[cfg(test)]
mod tests {
    use crate::scenario::load_str;
    use crate::scenario::write::to_yaml;

    /// Parents, their children (stamped out again, not written), dispatch
    /// events and an event on a child survive write -> load.
    #[test]
    fn periodic_and_parameterized_round_trip() {
        let source = r#"
start_time: "2026-01-05T09:30:00+02:00"
horizon: 2h
nodes: [{id: c}]
jobs:
  - id: a
    type: batch
    periodic: {crons: ["*/30 * * * *", "@hourly"], prohibit_overlap: true, time_zone: Etc/GMT-3}
    groups: [{name: g, count: 1, tasks: [{name: t, run_for: 10m}]}]
  - id: b
    type: sysbatch
    periodic: {cron: "0 0 * * *", enabled: false}
    groups: [{name: g, count: 1, tasks: [{name: t, run_for: 10m}]}]
  - id: p
    type: batch
    parameterized: {payload: required, meta_required: [x], meta_optional: ["odd key"]}
    groups: [{name: g, count: 1, tasks: [{name: t, run_for: 10m}]}]
events:
  - {at: 1m, dispatch: {job: p, meta: {x: "1", "odd key": "a b"}, payload: "{}"}}
  - {at: 2m, dispatch: {job: p, meta: {x: "2"}, payload: p}}
  - {at: 40m, stop_job: a/periodic-1767600000}
"#;
        let scenario = load_str(source, "periodic.yaml", "periodic").unwrap();
        let names: Vec<&str> = scenario.jobs.iter().map(|j| j.name.as_str()).collect();
        // 07:30 UTC; launches every 30 minutes within two hours.
        assert_eq!(scenario.start_time.0, 1_767_598_200);
        assert_eq!(
            names[3..7],
            [
                "a/periodic-1767600000",
                "a/periodic-1767601800",
                "a/periodic-1767603600",
                "a/periodic-1767605400",
            ]
        );
        assert_eq!(names.len(), 9, "{names:?}");
        assert!(names[7].starts_with("p/dispatch-1767598260-"), "{names:?}");
        assert!(names[8].starts_with("p/dispatch-1767598320-"), "{names:?}");
        let yaml = to_yaml(&scenario, "");
        assert!(
            !yaml.contains("periodic-1767600000\n"),
            "children are not written:\n{yaml}"
        );
        let back =
            load_str(&yaml, "written.yaml", "unused").unwrap_or_else(|err| panic!("{err}\n{yaml}"));
        assert_eq!(format!("{back:?}"), format!("{scenario:?}"), "{yaml}");
    }
}
