//! A group's `network:` ports and a node's `reserved_ports`, written back
//! as the loader reads them.

use std::fmt::Write as _;

use crate::model::ports::{PortAsk, PortRanges};

/// `    reserved_ports: "22,8500-8600"` under a node, if it has any.
pub(super) fn write_reserved_ports(out: &mut String, reserved: &PortRanges) {
    if !reserved.is_empty() {
        let _ = writeln!(out, "    reserved_ports: \"{}\"", reserved.spelled());
    }
}

/// `        network: {ports: [...]}` under a group, if it asks for ports.
pub(super) fn write_ports(out: &mut String, ports: &[PortAsk]) {
    if ports.is_empty() {
        return;
    }
    let items: Vec<String> = ports
        .iter()
        .map(|p| match p.value {
            Some(v) => format!("{{label: {}, static: {v}}}", super::scalar::text(&p.label)),
            None => format!("{{label: {}}}", super::scalar::text(&p.label)),
        })
        .collect();
    let _ = writeln!(out, "        network: {{ports: [{}]}}", items.join(", "));
}
