//! CSI plugins run by jobs (a task's `csi_plugin` block): which group runs
//! which plugin, the node slots where a plugin job's allocations could put
//! a node plugin, and which plugins get their controller from a job.

use std::collections::BTreeMap;

use super::raw::{RawCsiPluginType, RawGroup};
use crate::model::ids::PluginId;
use crate::model::release::NOMAD_2_0_5;
use crate::model::scenario::{
    CsiPluginType, JobSpec, NodePluginSpec, NodeSpec, PluginSpec, TaskPlugin,
};
use crate::sim::feasibility::constraint_holds_at;

/// The plugins a group's tasks run (every plugin a job names is declared
/// by then: `declare_job_plugins`).
pub(super) fn group_plugins(
    group: &RawGroup,
    plugin_ids: &BTreeMap<&str, PluginId>,
) -> Vec<TaskPlugin> {
    group
        .tasks
        .iter()
        .filter_map(|task| task.value.csi_plugin.as_ref())
        .filter_map(|plugin| {
            let id = *plugin_ids.get(plugin.id.as_str())?;
            let kind = match plugin.plugin_type {
                RawCsiPluginType::Node => CsiPluginType::Node,
                RawCsiPluginType::Controller => CsiPluginType::Controller,
                RawCsiPluginType::Monolith => CsiPluginType::Monolith,
            };
            Some(TaskPlugin { plugin: id, kind })
        })
        .collect()
}

/// Gives every node a group running a node (or monolith) plugin could run
/// on (the job's datacenters, its and the group's constraints, the group's
/// drivers) a slot for that plugin, missing until one of the group's
/// allocations runs there. A node that declares the plugin itself keeps
/// its declaration, which the job's allocations do not change.
pub fn place_job_plugins(nodes: &mut [NodeSpec], jobs: &[JobSpec], drivers: &[String]) {
    for job in jobs {
        for group in &job.groups {
            for task in group.csi_plugins.iter().filter(|p| p.kind.runs_node()) {
                for node in nodes.iter_mut() {
                    let fits = job.datacenters.contains(&node.datacenter)
                        && group.drivers.is_subset(node.drivers)
                        && job
                            .constraints
                            .iter()
                            .chain(&group.constraints)
                            .all(|c| constraint_holds_at(c, node, drivers, &NOMAD_2_0_5));
                    if fits && !node.csi_plugins.iter().any(|p| p.plugin == task.plugin) {
                        node.csi_plugins.push(NodePluginSpec {
                            plugin: task.plugin,
                            healthy: false,
                            max_volumes: 0,
                            from_job: true,
                        });
                    }
                }
            }
        }
    }
}

/// Marks the plugins whose controller some job runs.
pub fn note_job_controllers(plugins: &mut [PluginSpec], jobs: &[JobSpec]) {
    let controllers = jobs
        .iter()
        .flat_map(|job| job.groups.iter())
        .flat_map(|group| group.csi_plugins.iter())
        .filter(|task| task.kind.runs_controller());
    for task in controllers {
        plugins[task.plugin.index()].controller_from_jobs = true;
    }
}
