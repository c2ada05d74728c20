//! Host volumes: a node's static ones (`nodes[].host_volumes`), dynamic
//! ones (`volumes:` of `type: host`) on the node they were created on, the
//! host volume plugins (`plugins:` of `type: host`) and a group's requests
//! of `type: host`.

use std::collections::BTreeMap;

use serde_saphyr::{Location, Spanned};

use super::entries::{UniqueIds, resolve_namespace};
use super::volumes::attachment;
use crate::model::host_volume::*;
use crate::model::ids::NodeId;
use crate::model::scenario::{AttachmentMode, NodeSpec};
use crate::scenario::error::{Fail, fail};
use crate::scenario::limits;
use crate::scenario::raw::*;

/// Takes the `type: host` entries out of `raw` (what the CSI resolvers see
/// is CSI only), keeping their order.
pub(super) fn take_host_entries<T>(
    raw: &mut Vec<Spanned<T>>,
    is_host: impl Fn(&T) -> bool,
) -> Vec<Spanned<T>> {
    let (host, other): (Vec<_>, Vec<_>) = std::mem::take(raw)
        .into_iter()
        .partition(|entry| is_host(&entry.value));
    *raw = other;
    host
}

/// The host volume plugins, by id; an id may not also be a CSI plugin's.
pub(super) fn resolve_host_plugins(
    raw: &[Spanned<RawPlugin>],
    csi: &[Spanned<RawPlugin>],
) -> Result<Vec<HostPluginSpec>, Fail> {
    let mut ids = UniqueIds::new("plugins");
    for plugin in csi {
        ids.insert(&plugin.value.id, plugin.referenced)?;
    }
    let mut plugins = Vec::with_capacity(raw.len());
    for entry in raw {
        let plugin = &entry.value;
        ids.insert(&plugin.id, entry.referenced)?;
        let csi_only = [
            ("publish_latency", plugin.publish_latency.is_some()),
            ("controller_required", plugin.controller_required.is_some()),
            (
                "controller_publish_latency",
                plugin.controller_publish_latency.is_some(),
            ),
            ("controller_healthy", plugin.controller_healthy.is_some()),
            (
                "controller_publish_failure",
                plugin.controller_publish_failure.is_some(),
            ),
            (
                "node_publish_failure",
                plugin.node_publish_failure.is_some(),
            ),
        ];
        if let Some((field, _)) = csi_only.iter().find(|(_, set)| *set) {
            return fail(
                entry.referenced,
                format!(
                    "plugins[{}].{field}: a host volume plugin (type: host) has no {field}; it is a CSI plugin's",
                    plugin.id
                ),
            );
        }
        plugins.push(HostPluginSpec {
            name: plugin.id.clone(),
            enforces_access_mode: plugin.enforces_access_mode,
        });
    }
    Ok(plugins)
}

/// A node's static host volumes, sorted by name, each named once.
pub(super) fn resolve_node_host_volumes(
    raw: Option<&[RawNodeHostVolume]>,
    at: Location,
    path: &impl Fn() -> String,
) -> Result<Vec<NodeHostVolume>, Fail> {
    let raw = raw.unwrap_or_default();
    if raw.len() > limits::MAX_HOST_VOLUMES_PER_NODE {
        return fail(
            at,
            format!(
                "{}.host_volumes: {} volumes exceed the limit of {} (MAX_HOST_VOLUMES_PER_NODE)",
                path(),
                raw.len(),
                limits::MAX_HOST_VOLUMES_PER_NODE
            ),
        );
    }
    let mut volumes: Vec<NodeHostVolume> = Vec::with_capacity(raw.len());
    for volume in raw {
        if volume.name.is_empty() {
            return fail(at, format!("{}.host_volumes: a name is required", path()));
        }
        volumes.push(NodeHostVolume {
            name: volume.name.clone(),
            read_only: volume.read_only.unwrap_or(false),
            dynamic: None,
        });
    }
    volumes.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(pair) = volumes.windows(2).find(|w| w[0].name == w[1].name) {
        return fail(
            at,
            format!(
                "{}.host_volumes[{}]: listed twice",
                path(),
                crate::names::shown(&pair[0].name)
            ),
        );
    }
    Ok(volumes)
}

/// The dynamic host volumes, each added to its node's host volumes.
pub(super) fn resolve_host_volumes(
    raw: &[Spanned<RawVolume>],
    nodes: &mut [NodeSpec],
    plugins: &[HostPluginSpec],
) -> Result<Vec<HostVolumeSpec>, Fail> {
    let node_ids: BTreeMap<&str, NodeId> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), NodeId::from_index(i)))
        .collect();
    if raw.len() > limits::MAX_VOLUMES {
        return fail(
            raw[limits::MAX_VOLUMES].referenced,
            format!(
                "volumes: more than {} host volumes (MAX_VOLUMES)",
                limits::MAX_VOLUMES
            ),
        );
    }
    let mut specs = Vec::with_capacity(raw.len());
    let mut placed = Vec::with_capacity(raw.len());
    for entry in raw {
        let (at, volume) = (entry.referenced, &entry.value);
        let path = format!("volumes[{}]", volume.id);
        if volume.id.is_empty() {
            return fail(
                at,
                "volumes: a host volume needs an id (its name)".to_string(),
            );
        }
        let csi_only = [
            ("count", volume.count.is_some()),
            ("access_mode", volume.access_mode.is_some()),
            ("attachment_mode", volume.attachment_mode.is_some()),
            ("topologies", volume.topologies.is_some()),
            ("register_at", volume.register_at.is_some()),
        ];
        if let Some((field, _)) = csi_only.iter().find(|(_, set)| *set) {
            return fail(
                at,
                format!(
                    "{path}.{field}: a host volume (type: host) has no {field} (give capabilities, and node or node_pool)"
                ),
            );
        }
        let Some(plugin) = plugins.iter().position(|p| p.name == volume.plugin_id) else {
            return fail(
                at,
                format!(
                    "{path}.plugin_id: no host volume plugin (type: host) with id \"{}\" under plugins",
                    crate::names::shown(&volume.plugin_id)
                ),
            );
        };
        let node = match (&volume.node, &volume.node_pool) {
            (Some(name), None) => node_ids.get(name.as_str()).copied().ok_or_else(|| {
                (
                    Some(at),
                    format!(
                        "{path}.node: no node with id \"{}\" under nodes",
                        crate::names::shown(name)
                    ),
                )
            })?,
            (None, Some(pool)) => nodes
                .iter()
                .position(|n| &n.node_pool == pool)
                .map(NodeId::from_index)
                .ok_or_else(|| {
                    (
                        Some(at),
                        format!(
                            "{path}.node_pool: no node is in pool \"{}\"",
                            crate::names::shown(pool)
                        ),
                    )
                })?,
            _ => {
                return fail(
                    at,
                    format!(
                        "{path}: a host volume lives on one node: give node (or node_pool), not both"
                    ),
                );
            }
        };
        let capabilities = host_capabilities(volume.capabilities.as_deref(), at, &path)?;
        specs.push(HostVolumeSpec {
            name: volume.id.clone(),
            namespace: resolve_namespace(volume.namespace.clone(), at, &path)?,
            plugin,
            node,
            capabilities,
        });
        placed.push(at);
    }
    for (index, spec) in specs.iter().enumerate() {
        let volumes = &mut nodes[spec.node.index()].host_volumes;
        match volumes.binary_search_by(|v| v.name.as_str().cmp(&spec.name)) {
            Ok(_) => {
                return fail(
                    placed[index],
                    format!(
                        "volumes[{}]: node {} already has a host volume named so (a name is unique on a node, static or dynamic)",
                        spec.name,
                        nodes[spec.node.index()].name
                    ),
                );
            }
            Err(slot) => volumes.insert(
                slot,
                NodeHostVolume {
                    name: spec.name.clone(),
                    read_only: false,
                    dynamic: Some(HostVolumeId::from_index(index)),
                },
            ),
        }
    }
    Ok(specs)
}

/// A host volume's capabilities: at least one, each in a host volume mode
/// (`HostVolume.Validate`: "must include at least one capability block",
/// "invalid access mode").
fn host_capabilities(
    raw: Option<&[RawCapability]>,
    at: Location,
    path: &str,
) -> Result<Vec<(HostAccessMode, AttachmentMode)>, Fail> {
    let raw = raw.unwrap_or_default();
    if raw.is_empty() {
        return fail(
            at,
            format!("{path}.capabilities: must include at least one capability block"),
        );
    }
    raw.iter()
        .map(|c| match c.access_mode.host() {
            Some(mode) => Ok((mode, attachment(c.attachment_mode))),
            None => fail(
                at,
                format!(
                    "{path}.capabilities: invalid access mode: \"{}\" (a host volume's are single-node-reader-only, single-node-writer, single-node-single-writer and single-node-multi-writer)",
                    c.access_mode.name()
                ),
            ),
        })
        .collect()
}

/// A group's requests of `type: host`.
pub(super) fn resolve_host_requests(
    group: &RawGroup,
    path: &str,
) -> Result<Vec<HostVolumeRequest>, Fail> {
    let mut requests = Vec::new();
    for (alias, request) in group.volumes.iter().flatten() {
        let raw = &request.value;
        if raw.volume_type != RawVolumeType::Host {
            continue;
        }
        let request_path = format!("{path}.volumes[{alias}]");
        if raw.source.is_empty() {
            return fail(
                request.referenced,
                format!("{request_path}.source: volume has an empty source"),
            );
        }
        let access_mode = match raw.access_mode {
            None => None,
            Some(mode) => Some(mode.host().ok_or_else(|| {
                (
                    Some(request.referenced),
                    format!(
                        "{request_path}.access_mode: host volumes cannot be mounted with {} access mode",
                        mode.name()
                    ),
                )
            })?),
        };
        requests.push(HostVolumeRequest {
            alias: alias.clone(),
            source: raw.source.clone(),
            read_only: raw.read_only.unwrap_or(false),
            per_alloc: raw.per_alloc.unwrap_or(false),
            access_mode,
            attachment_mode: raw.attachment_mode.map(attachment),
        });
    }
    Ok(requests)
}
