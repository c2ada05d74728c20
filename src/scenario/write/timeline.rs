//! A scenario's timeline written back: the allocations it starts with, its
//! events and its expectations, each in the loader's flow style.

use std::fmt::Write as _;

use super::scalar::{duration, text};
use crate::model::expect::Comparison;
use crate::model::policy::Policy;
use crate::model::scenario::*;
use crate::model::time::Millis;

pub(super) fn write_initial_allocations(out: &mut String, scenario: &Scenario) {
    if scenario.initial_allocations.is_empty() {
        return;
    }
    out.push_str("\ninitial_allocations:\n");
    for initial in &scenario.initial_allocations {
        let job = &scenario.jobs[initial.group.job.index()];
        let alloc = format!(
            "{}.{}[{}]",
            job.name, job.groups[initial.group.group as usize].name, initial.index
        );
        let status = initial.status.name();
        let _ = writeln!(
            out,
            "  - {{alloc: {}, node: {}, status: {status}}}",
            text(&alloc),
            text(&scenario.nodes[initial.node.index()].name)
        );
    }
}

/// Nomad's name of an allocation, `<job>.<group>[<index>]`.
fn alloc_name(scenario: &Scenario, group: crate::model::ids::GroupRef, index: u32) -> String {
    let job = &scenario.jobs[group.job.index()];
    format!(
        "{}.{}[{index}]",
        job.name,
        job.groups[group.group_index()].name
    )
}

pub(super) fn write_events(out: &mut String, scenario: &Scenario) {
    if scenario.events.is_empty() {
        return;
    }
    out.push_str("\nevents:\n");
    let node = |id: crate::model::ids::NodeId| text(&scenario.nodes[id.index()].name);
    let job = |id: crate::model::ids::JobId| text(&scenario.jobs[id.index()].name);
    for event in &scenario.events {
        let action = match &event.action {
            TimelineAction::NodeDown(id) => format!("node_down: {}", node(*id)),
            TimelineAction::NodeUp(id) => format!("node_up: {}", node(*id)),
            TimelineAction::NodeDrain(id) => format!("node_drain: {}", node(*id)),
            TimelineAction::Scale {
                job: id,
                group,
                count,
            } => format!(
                "scale: {{job: {}, group: {}, count: {count}}}",
                job(*id),
                text(&scenario.jobs[id.index()].groups[*group].name)
            ),
            TimelineAction::PluginHealth {
                plugin,
                node: id,
                healthy,
            } => format!(
                "plugin_health: {{plugin: {}, node: {}, healthy: {healthy}}}",
                text(&scenario.plugins[plugin.index()].name),
                node(*id)
            ),
            TimelineAction::StopJob(id) => format!("stop_job: {}", job(*id)),
            TimelineAction::PluginControllerHealth { plugin, healthy } => format!(
                "plugin_controller_health: {{plugin: {}, healthy: {healthy}}}",
                text(&scenario.plugins[plugin.index()].name)
            ),
            TimelineAction::UpdateJob {
                job: id, overrides, ..
            } => {
                let groups = &scenario.jobs[id.index()].groups;
                let written: Vec<String> = overrides
                    .iter()
                    .map(|o| {
                        let mut fields = Vec::new();
                        if let Some(count) = o.count {
                            fields.push(format!("count: {count}"));
                        }
                        if let Some(cpu) = o.cpu {
                            fields.push(format!("cpu: {cpu}"));
                        }
                        if let Some(memory) = o.memory {
                            fields.push(format!("memory: {memory}"));
                        }
                        if let Some(wait) = o.healthy_after {
                            fields.push(format!("healthy_after: {}", duration(wait)));
                        }
                        format!("{}: {{{}}}", text(&groups[o.group].name), fields.join(", "))
                    })
                    .collect();
                if written.is_empty() {
                    format!("update_job: {{job: {}}}", job(*id))
                } else {
                    format!(
                        "update_job: {{job: {}, groups: {{{}}}}}",
                        job(*id),
                        written.join(", ")
                    )
                }
            }
            TimelineAction::NodeDrainSpec(id, spec) => format!(
                "node_drain: {{node: {}, deadline: {}, ignore_system_jobs: {}}}",
                node(*id),
                duration(spec.deadline.unwrap_or(Millis::ZERO)),
                spec.ignore_system_jobs
            ),
            TimelineAction::NodeDisconnect(id) => format!("node_disconnect: {}", node(*id)),
            TimelineAction::NodeReconnect(id) => format!("node_reconnect: {}", node(*id)),
            TimelineAction::PromoteDeployment(id) => format!("promote_deployment: {}", job(*id)),
            TimelineAction::Dispatch {
                job: id, request, ..
            } => super::periodic::dispatch(&job(*id), request),
            TimelineAction::AllocFail { group, index } => {
                format!(
                    "alloc_fail: {}",
                    text(&alloc_name(scenario, *group, *index))
                )
            }
            TimelineAction::NodeDownOf { group, index } => format!(
                "node_down: {{node_of: {}}}",
                text(&alloc_name(scenario, *group, *index))
            ),
            TimelineAction::PluginRestart {
                plugin,
                node: id,
                down_for,
            } => format!(
                "plugin_restart: {{plugin: {}, node: {}, down_for: {}}}",
                text(&scenario.plugins[plugin.index()].name),
                node(*id),
                duration(*down_for)
            ),
            TimelineAction::VolumeDetach { volume, node: id } => format!(
                "volume_detach: {{volume: {}, node: {}}}",
                text(&scenario.volumes[volume.index()].name),
                node(*id)
            ),
            TimelineAction::PublishFailure {
                volume,
                stage,
                count,
            } => format!(
                "publish_failure: {{volume: {}, stage: {}, count: {count}}}",
                text(&scenario.volumes[volume.index()].name),
                stage.name()
            ),
        };
        let _ = writeln!(out, "  - {{at: {}, {action}}}", duration(event.at));
    }
}

pub(super) fn write_expect(out: &mut String, scenario: &Scenario) {
    if scenario.expectations.is_empty() {
        return;
    }
    out.push_str("\nexpect:\n");
    for policy in Policy::ALL {
        let items: Vec<String> = scenario
            .expectations
            .iter()
            .filter(|e| e.policy == policy)
            .map(|e| {
                let op = match e.comparison {
                    Comparison::Eq => "==",
                    other => other.symbol(),
                };
                format!("{}: \"{op} {}\"", e.metric.name(), e.value)
            })
            .collect();
        if !items.is_empty() {
            let _ = writeln!(out, "  {}: {{{}}}", policy.name(), items.join(", "));
        }
    }
}
