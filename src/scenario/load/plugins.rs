//! `plugins:`: the CSI plugins, and those only a job's task declares.

use serde_saphyr::Spanned;

use super::entries::UniqueIds;
use crate::model::scenario::PluginSpec;
use crate::model::time::Millis;
use crate::scenario::error::Fail;
use crate::scenario::raw::{RawJob, RawPlugin};

const DEFAULT_PUBLISH_LATENCY: Millis = Millis(500);

pub(super) fn resolve_plugins(raw: &[Spanned<RawPlugin>]) -> Result<Vec<PluginSpec>, Fail> {
    let mut ids = UniqueIds::new("plugins");
    raw.iter()
        .map(|entry| {
            let plugin = &entry.value;
            ids.insert(&plugin.id, entry.referenced)?;
            let path = format!("plugins[{}]", plugin.id);
            let controller_publish_failure = probability(
                plugin.controller_publish_failure,
                &format!("{path}.controller_publish_failure"),
                entry,
            )?;
            let node_publish_failure = probability(
                plugin.node_publish_failure,
                &format!("{path}.node_publish_failure"),
                entry,
            )?;
            Ok(PluginSpec {
                name: plugin.id.clone(),
                enforces_access_mode: plugin.enforces_access_mode,
                publish_latency: plugin
                    .publish_latency
                    .map_or(DEFAULT_PUBLISH_LATENCY, |d| d.0),
                controller_required: plugin.controller_required.unwrap_or(false),
                controller_publish_latency: plugin
                    .controller_publish_latency
                    .map_or(Millis::ZERO, |d| d.0),
                controller_healthy: plugin.controller_healthy.unwrap_or(true),
                // Set once the jobs are resolved (plugin_jobs::place_job_plugins).
                controller_from_jobs: false,
                controller_publish_failure,
                node_publish_failure,
            })
        })
        .collect()
}

/// A probability field: absent is 0; anything outside 0..=1 (or not a
/// number) is refused at the plugin's entry.
fn probability(value: Option<f64>, path: &str, entry: &Spanned<RawPlugin>) -> Result<f64, Fail> {
    let p = value.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&p) {
        return Err((
            Some(entry.referenced),
            format!("{path}: {p} is not a probability; give a number from 0 to 1"),
        ));
    }
    Ok(p)
}

/// A plugin that a job runs but `plugins:` does not list is declared with
/// the defaults: it does not enforce access modes (declare it to say it
/// does) and publishes in the default time.
pub(super) fn declare_job_plugins(plugins: &mut Vec<Spanned<RawPlugin>>, jobs: &[Spanned<RawJob>]) {
    for job in jobs {
        for group in &job.value.groups {
            for task in &group.value.tasks {
                let Some(plugin) = &task.value.csi_plugin else {
                    continue;
                };
                if !plugins.iter().any(|p| p.value.id == plugin.id) {
                    plugins.push(Spanned::new(
                        RawPlugin {
                            id: plugin.id.clone(),
                            plugin_type: None,
                            enforces_access_mode: false,
                            publish_latency: None,
                            controller_required: None,
                            controller_publish_latency: None,
                            controller_healthy: None,
                            controller_publish_failure: None,
                            node_publish_failure: None,
                        },
                        job.referenced,
                        job.defined,
                    ));
                }
            }
        }
    }
}
