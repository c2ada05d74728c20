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
