//! `nodes:`: the clients, their resources, drivers and CSI node plugins.

use std::collections::{BTreeMap, BTreeSet};

use serde_saphyr::{Location, Spanned};

use super::entries::{DriverNames, UniqueIds, expand};
use crate::model::ids::PluginId;
use crate::model::scenario::{ALL_NODE_POOLS, DEFAULT_NODE_POOL, NodePluginSpec, NodeSpec};
use crate::scenario::error::{Fail, fail};
use crate::scenario::limits;
use crate::scenario::raw::RawNode;
use crate::scenario::template::TemplateBudget;

const DEFAULT_NODE_CPU: u64 = 4000;
const DEFAULT_NODE_MEMORY: u64 = 8192;

pub(super) fn resolve_nodes(
    raw: &[Spanned<RawNode>],
    plugin_ids: &BTreeMap<&str, PluginId>,
    driver_names: &mut DriverNames,
    budget: &mut TemplateBudget,
) -> Result<Vec<NodeSpec>, Fail> {
    let mut ids = UniqueIds::new("nodes");
    let mut nodes = Vec::new();
    for entry in raw {
        let at = entry.referenced;
        let limit = (nodes.len(), limits::MAX_NODES, "MAX_NODES");
        let copies = expand(
            entry,
            &entry.value.id,
            entry.value.count,
            "nodes",
            "count",
            limit,
            budget,
        )?;
        // `expand` checked the count against MAX_NODES.
        nodes.reserve(copies.size_hint().0);
        ids.reserve(copies.size_hint().0);
        for node in copies {
            ids.insert(&node.id, at)?;
            // Named for a message only: most nodes never need it.
            let path = || format!("nodes[{}]", node.id);
            let mut csi_plugins = Vec::new();
            let mut seen_plugins = BTreeSet::new();
            for plugin in node.csi_plugins.iter().flatten() {
                let Some(&id) = plugin_ids.get(plugin.id.as_str()) else {
                    return fail(
                        at,
                        format!(
                            "{}.csi_plugins[{}]: no plugin with id \"{}\" under plugins",
                            path(),
                            plugin.id,
                            plugin.id
                        ),
                    );
                };
                if !seen_plugins.insert(id) {
                    return fail(
                        at,
                        format!("{}.csi_plugins[{}]: listed twice", path(), plugin.id),
                    );
                }
                csi_plugins.push(NodePluginSpec {
                    plugin: id,
                    healthy: plugin.healthy.unwrap_or(true),
                    max_volumes: plugin.max_volumes.unwrap_or(0),
                    from_job: false,
                });
            }
            let cpu = node.cpu.unwrap_or(DEFAULT_NODE_CPU);
            let memory = node.memory.unwrap_or(DEFAULT_NODE_MEMORY);
            if cpu == 0 || memory == 0 {
                return fail(
                    at,
                    format!("{}: cpu and memory must be greater than 0", path()),
                );
            }
            let drivers = match &node.drivers {
                Some(list) => driver_names.set(list.iter().map(String::as_str), at, &path)?,
                None => driver_names.set(["docker", "exec"], at, &path)?,
            };
            let node_pool = resolve_node_pool(node.node_pool, at, &path)?;
            let host_volumes = super::host_volumes::resolve_node_host_volumes(
                node.host_volumes.as_deref(),
                at,
                &path,
            )?;
            let reserved_ports = super::network::resolve_reserved_ports(
                node.reserved_ports.as_deref(),
                &path(),
                at,
            )?;
            let disk = node.disk.unwrap_or(NodeSpec::DEFAULT_DISK_MB);
            nodes.push(NodeSpec {
                name: node.id,
                datacenter: node.datacenter.unwrap_or_else(|| "dc1".to_string()),
                node_class: node.node_class.unwrap_or_default(),
                attributes: node.attributes.unwrap_or_default(),
                cpu,
                memory,
                disk,
                drivers,
                topology: node.topology.unwrap_or_default(),
                csi_plugins,
                node_pool,
                reserved_ports,
                host_volumes,
            });
        }
    }
    Ok(nodes)
}

/// A node's `node_pool`: "default" unless given; never the built-in "all",
/// which Nomad's client refuses to join (`structs.NodePool.Validate`,
/// client config: a node's pool may not be "all").
fn resolve_node_pool(
    pool: Option<String>,
    at: Location,
    path: &impl Fn() -> String,
) -> Result<String, Fail> {
    let pool = pool.unwrap_or_else(|| DEFAULT_NODE_POOL.to_string());
    if pool == ALL_NODE_POOLS || pool.is_empty() {
        return fail(
            at,
            format!(
                "{}.node_pool: a node cannot be in \"{pool}\": expected a pool name other than the built-in \"all\"",
                path()
            ),
        );
    }
    Ok(pool)
}
