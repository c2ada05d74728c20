//! A group's tasks when the model keeps them one by one (`GroupLifecycle`:
//! lifecycle hooks, kill timeouts, shutdown delays), written back so the
//! loader gives the same group.

use std::fmt::Write as _;

use crate::model::lifecycle::{GroupLifecycle, TaskPhase};
use crate::model::scenario::{CsiPluginType, GroupSpec};
use crate::model::time::Millis;

/// What the writer of the rest of the scenario gives: the group's drivers
/// and its plugins' names, quoted as YAML needs, and its duration format
/// (passed in, so this file does not import the writer back).
pub(super) struct Written<'a> {
    pub drivers: Vec<String>,
    pub plugin_names: Vec<String>,
    pub duration: &'a dyn Fn(Millis) -> String,
}

/// One line per task, in the model's order. The model keeps the group's
/// set of drivers, not each task's: task `i` takes the `i`-th driver (a
/// group has at least as many tasks as drivers), later ones the first, so
/// the set is the same.
pub(super) fn write_tasks(
    out: &mut String,
    written: &Written<'_>,
    group: &GroupSpec,
    lifecycle: &GroupLifecycle,
) {
    let duration = written.duration;
    if lifecycle.shutdown_delay > Millis::ZERO {
        let _ = writeln!(
            out,
            "        shutdown_delay: {}",
            duration(lifecycle.shutdown_delay)
        );
    }
    out.push_str("        tasks:\n");
    let drivers = &written.drivers;
    let mut plugins = group.csi_plugins.iter().zip(&written.plugin_names);
    for (i, task) in lifecycle.tasks.iter().enumerate() {
        let driver = drivers
            .get(i)
            .or(drivers.first())
            .map_or("docker", |d| d.as_str());
        let mut line = format!(
            "          - {{name: task{i}, driver: {driver}, cpu: {}, memory: {}",
            task.resources.cpu, task.resources.memory
        );
        if let Some(run_for) = task.run_for {
            let _ = write!(line, ", run_for: {}", duration(run_for));
        }
        if i == 0 && group.healthy_after > Millis::ZERO {
            let _ = write!(line, ", healthy_after: {}", duration(group.healthy_after));
        }
        let hook = match task.phase {
            TaskPhase::Main => None,
            TaskPhase::Prestart => Some(("prestart", false)),
            TaskPhase::PrestartSidecar => Some(("prestart", true)),
            TaskPhase::Poststart => Some(("poststart", false)),
            TaskPhase::PoststartSidecar => Some(("poststart", true)),
            TaskPhase::Poststop => Some(("poststop", false)),
        };
        if let Some((hook, sidecar)) = hook {
            let _ = write!(line, ", lifecycle: {{hook: {hook}, sidecar: {sidecar}}}");
        }
        if let Some(kill_timeout) = task.kill_timeout {
            let _ = write!(line, ", kill_timeout: {}", duration(kill_timeout));
        }
        if task.shutdown_delay > Millis::ZERO {
            let _ = write!(line, ", shutdown_delay: {}", duration(task.shutdown_delay));
        }
        if task.csi_plugin
            && let Some((plugin, name)) = plugins.next()
        {
            let kind = match plugin.kind {
                CsiPluginType::Node => "node",
                CsiPluginType::Controller => "controller",
                CsiPluginType::Monolith => "monolith",
            };
            let _ = write!(line, ", csi_plugin: {{id: {name}, type: {kind}}}");
        }
        line.push('}');
        let _ = writeln!(out, "{line}");
    }
}
