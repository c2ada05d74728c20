//! Host volumes written back: a node's static ones, the dynamic ones and
//! their plugins, and a group's requests of `type: host`.

use std::fmt::Write as _;

use super::scalar::text;
use crate::model::host_volume::NodeHostVolume;
use crate::model::scenario::{GroupSpec, Scenario};

/// A node's static host volumes (its dynamic ones come from `volumes:`).
pub(super) fn write_node_host_volumes(out: &mut String, volumes: &[NodeHostVolume]) {
    let statics: Vec<&NodeHostVolume> = volumes.iter().filter(|v| v.dynamic.is_none()).collect();
    if statics.is_empty() {
        return;
    }
    out.push_str("    host_volumes:\n");
    for volume in statics {
        let read_only = if volume.read_only {
            ", read_only: true"
        } else {
            ""
        };
        let _ = writeln!(out, "      - {{name: {}{read_only}}}", text(&volume.name));
    }
}

pub(super) fn write_host_plugins(out: &mut String, scenario: &Scenario) {
    for plugin in &scenario.host_plugins {
        let _ = writeln!(
            out,
            "  - {{id: {}, type: host, enforces_access_mode: {}}}",
            text(&plugin.name),
            plugin.enforces_access_mode
        );
    }
}

pub(super) fn write_host_volumes(out: &mut String, scenario: &Scenario) {
    for volume in &scenario.host_volumes {
        let capabilities: Vec<String> = volume
            .capabilities
            .iter()
            .map(|(mode, attach)| {
                format!(
                    "{{access_mode: {mode}, attachment_mode: {}}}",
                    attach.name()
                )
            })
            .collect();
        let mut line = format!(
            "  - {{id: {}, type: host, plugin_id: {}, node: {}, capabilities: [{}]",
            text(&volume.name),
            text(&scenario.host_plugins[volume.plugin].name),
            text(&scenario.nodes[volume.node.index()].name),
            capabilities.join(", ")
        );
        if volume.namespace != crate::model::scenario::DEFAULT_NAMESPACE {
            let _ = write!(line, ", namespace: {}", text(&volume.namespace));
        }
        line.push('}');
        let _ = writeln!(out, "{line}");
    }
}

/// The group's requests of `type: host`, under a `volumes:` header already
/// written.
pub(super) fn write_host_requests(out: &mut String, group: &GroupSpec) {
    for request in &group.host_volumes {
        let mut line = format!(
            "          {}: {{type: host, source: {}",
            text(&request.alias),
            text(&request.source)
        );
        if request.read_only {
            line.push_str(", read_only: true");
        }
        if request.sticky {
            line.push_str(", sticky: true");
        }
        if request.per_alloc {
            line.push_str(", per_alloc: true");
        }
        if let Some(mode) = request.access_mode {
            let _ = write!(line, ", access_mode: {mode}");
        }
        if let Some(mode) = request.attachment_mode {
            let _ = write!(line, ", attachment_mode: {}", mode.name());
        }
        line.push('}');
        let _ = writeln!(out, "{line}");
    }
}
