//! A group's `network:` ports and a node's `reserved_ports`, checked as
//! Nomad checks them (`nomad/structs/structs.go:TaskGroup.validateNetworks`,
//! `nomad/structs/funcs.go:ParsePortRanges`).

use serde_saphyr::Location;

use crate::model::ports::{PortAsk, PortRanges, parse_port_ranges};
use crate::scenario::error::{Fail, fail};
use crate::scenario::limits;
use crate::scenario::raw::RawGroup;

/// The group's ports: labels unique, static ports in 1..=65535 and not
/// asked twice, at most MAX_PORTS_PER_GROUP.
pub(super) fn resolve_ports(
    group: &RawGroup,
    path: &str,
    at: Location,
) -> Result<Vec<PortAsk>, Fail> {
    let Some(network) = &group.network else {
        return Ok(Vec::new());
    };
    if network.ports.len() > limits::MAX_PORTS_PER_GROUP {
        return fail(
            at,
            format!(
                "{path}.network.ports: {} ports exceed the limit of {} (MAX_PORTS_PER_GROUP)",
                network.ports.len(),
                limits::MAX_PORTS_PER_GROUP
            ),
        );
    }
    let mut ports: Vec<PortAsk> = Vec::with_capacity(network.ports.len());
    for entry in &network.ports {
        let port = &entry.value;
        let here = format!("{path}.network.ports[{}]", port.label);
        if port.label.is_empty() {
            return fail(
                entry.referenced,
                format!("{path}.network.ports: a port needs a label"),
            );
        }
        if ports.iter().any(|p| p.label == port.label) {
            return fail(
                entry.referenced,
                format!(
                    "{here}: Port label {} already in use by taskgroup network",
                    port.label
                ),
            );
        }
        let value = match port.static_port {
            None => None,
            Some(v) if (1..=65535).contains(&v) => Some(v as u16),
            Some(v) => {
                return fail(
                    entry.referenced,
                    format!(
                        "{here}.static: {v} is not a port: 1 to 65535 (leave static out for a dynamic port)"
                    ),
                );
            }
        };
        if let Some(v) = value
            && let Some(other) = ports.iter().find(|p| p.value == Some(v))
        {
            return fail(
                entry.referenced,
                format!(
                    "{here}: Static port {v} already reserved by taskgroup network:{}",
                    other.label
                ),
            );
        }
        ports.push(PortAsk {
            label: port.label.clone(),
            value,
        });
    }
    Ok(ports)
}

/// A node's `reserved_ports`, as the client parses its
/// `reserved.reserved_ports`.
pub(super) fn resolve_reserved_ports(
    spec: Option<&str>,
    path: &str,
    at: Location,
) -> Result<PortRanges, Fail> {
    match spec {
        None => Ok(PortRanges::default()),
        Some(text) => parse_port_ranges(text, limits::MAX_RESERVED_PORT_RANGES).or_else(|err| {
            fail(
                at,
                format!(
                    "{path}.reserved_ports \"{}\": {err}",
                    crate::names::shown(text)
                ),
            )
        }),
    }
}
