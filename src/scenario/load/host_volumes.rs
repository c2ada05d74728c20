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
use crate::model::release::NOMAD_2_0_5;
use crate::model::scenario::{AttachmentMode, NodeSpec};
use crate::scenario::error::{Fail, fail};
use crate::scenario::limits;
use crate::scenario::placement::resolve_constraints;
use crate::scenario::raw::*;
use crate::sim::server::scheduler::feasibility::constraint_holds_at;

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
/// The built-in `mkdir` plugin is there when a host volume uses it and
/// `plugins:` does not list it: it enforces nothing.
pub(super) fn resolve_host_plugins(
    raw: &[Spanned<RawPlugin>],
    csi: &[Spanned<RawPlugin>],
    volumes: &[Spanned<RawVolume>],
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
    let uses_default = volumes
        .iter()
        .any(|v| v.value.plugin_id.is_empty() || v.value.plugin_id == DEFAULT_HOST_VOLUME_PLUGIN);
    let declared =
        |id: &str| plugins.iter().any(|p| p.name == id) || csi.iter().any(|p| p.value.id == id);
    if uses_default && !declared(DEFAULT_HOST_VOLUME_PLUGIN) {
        plugins.push(HostPluginSpec {
            name: DEFAULT_HOST_VOLUME_PLUGIN.to_string(),
            enforces_access_mode: false,
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
    drivers: &[String],
) -> Result<Vec<HostVolumeSpec>, Fail> {
    let node_ids: BTreeMap<String, NodeId> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.clone(), NodeId::from_index(i)))
        .collect();
    if raw.is_empty() {
        return Ok(Vec::new());
    }
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
        let plugin_id = if volume.plugin_id.is_empty() {
            DEFAULT_HOST_VOLUME_PLUGIN
        } else {
            volume.plugin_id.as_str()
        };
        let Some(plugin) = plugins.iter().position(|p| p.name == plugin_id) else {
            return fail(
                at,
                format!(
                    "{path}.plugin_id: no host volume plugin (type: host) with id \"{}\" under plugins",
                    crate::names::shown(plugin_id)
                ),
            );
        };
        let constraints =
            resolve_constraints(volume.constraints.as_deref().unwrap_or(&[]), at, &path)?;
        let fits = |node: &NodeSpec| {
            constraints
                .iter()
                .all(|c| constraint_holds_at(c, node, drivers, &NOMAD_2_0_5))
        };
        let node = place(volume, nodes, &node_ids, &fits, (at, &path))?;
        let capabilities = host_capabilities(volume.capabilities.as_deref(), at, &path)?;
        add_dynamic(
            &mut nodes[node.index()].host_volumes,
            &volume.id,
            HostVolumeId::from_index(specs.len()),
        );
        specs.push(HostVolumeSpec {
            name: volume.id.clone(),
            namespace: resolve_namespace(volume.namespace.clone(), at, &path)?,
            plugin,
            node,
            capabilities,
        });
    }
    Ok(specs)
}

/// The node a host volume is created on (`placeHostVolume`): the one it
/// names, which must not have a host volume of that name yet; else the
/// first node, in file order, of its pool (or of any pool) that has none
/// (Nomad takes the first feasible node its state store lists).
fn place(
    volume: &RawVolume,
    nodes: &[NodeSpec],
    node_ids: &BTreeMap<String, NodeId>,
    fits: &dyn Fn(&NodeSpec) -> bool,
    (at, path): (Location, &str),
) -> Result<NodeId, Fail> {
    let free = |node: &NodeSpec| on_node(&node.host_volumes, &volume.id).is_none();
    match (&volume.node, &volume.node_pool) {
        (Some(name), _) => {
            let Some(&id) = node_ids.get(name.as_str()) else {
                return fail(
                    at,
                    format!(
                        "{path}.node: no node with id \"{}\" under nodes",
                        crate::names::shown(name)
                    ),
                );
            };
            if !fits(&nodes[id.index()]) {
                return fail(at, format!("{path}: node {name} is not feasible for volume"));
            }
            if !free(&nodes[id.index()]) {
                return fail(
                    at,
                    format!(
                        "{path}: node {name} already has a host volume named so (a name is unique on a node, static or dynamic)"
                    ),
                );
            }
            Ok(id)
        }
        (None, pool) => nodes
            .iter()
            .position(|n| pool.as_ref().is_none_or(|p| &n.node_pool == p) && free(n) && fits(n))
            .map(NodeId::from_index)
            .ok_or_else(|| {
                let pool = pool
                    .as_ref()
                    .map(|p| format!(" in pool \"{}\"", crate::names::shown(p)))
                    .unwrap_or_default();
                (
                    Some(at),
                    format!(
                        "{path}: no node meets constraints: no node{pool} meets the volume's constraints and is without a host volume of this name"
                    ),
                )
            }),
    }
}

/// A host volume's capabilities, each in a host volume mode
/// (`HostVolume.Validate`: "invalid access mode"); none is one
/// single-node-writer file-system capability, as Nomad fills it in.
fn host_capabilities(
    raw: Option<&[RawCapability]>,
    at: Location,
    path: &str,
) -> Result<Vec<(HostAccessMode, AttachmentMode)>, Fail> {
    let raw = raw.unwrap_or_default();
    if raw.is_empty() {
        // HostVolume.CanonicalizeForCreate's default.
        return Ok(vec![(
            HostAccessMode::SingleNodeWriter,
            AttachmentMode::FileSystem,
        )]);
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
        let per_alloc = raw.per_alloc.unwrap_or(false);
        let sticky = raw.sticky.unwrap_or(false);
        if per_alloc && sticky {
            // structs.VolumeRequest.Validate (2.0.5).
            return fail(
                request.referenced,
                format!("{request_path}: volume cannot be per_alloc and sticky at the same time"),
            );
        }
        requests.push(HostVolumeRequest {
            alias: alias.clone(),
            source: raw.source.clone(),
            read_only: raw.read_only.unwrap_or(false),
            per_alloc,
            access_mode,
            attachment_mode: raw.attachment_mode.map(attachment),
            sticky,
        });
    }
    Ok(requests)
}
