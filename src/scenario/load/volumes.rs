//! `volumes:`: the CSI volumes, their plugin and capabilities.

use std::collections::BTreeMap;

use serde_saphyr::Spanned;

use super::entries::{UniqueIds, expand};
use crate::model::ids::PluginId;
use crate::model::scenario::{AttachmentMode, Capability, VolumeSpec};
use crate::model::time::Millis;
use crate::scenario::error::{Fail, fail};
use crate::scenario::limits;
use crate::scenario::raw::{RawAttachmentMode, RawVolume};
use crate::scenario::template::TemplateBudget;

pub(super) fn resolve_volumes(
    raw: &[Spanned<RawVolume>],
    plugin_ids: &BTreeMap<&str, PluginId>,
    budget: &mut TemplateBudget,
) -> Result<Vec<VolumeSpec>, Fail> {
    let mut ids = UniqueIds::new("volumes");
    let mut volumes = Vec::new();
    for entry in raw {
        let at = entry.referenced;
        let limit = (volumes.len(), limits::MAX_VOLUMES, "MAX_VOLUMES");
        let copies = expand(
            entry,
            &entry.value.id,
            entry.value.count,
            "volumes",
            "count",
            limit,
            budget,
        )?;
        for volume in copies {
            ids.insert(&volume.id, at)?;
            if volume.node.is_some() || volume.node_pool.is_some() || volume.constraints.is_some() {
                return fail(
                    at,
                    format!(
                        "volumes[{}]: node, node_pool and constraints place a host volume (type: host); a CSI volume has none",
                        volume.id
                    ),
                );
            }
            if volume.plugin_id.is_empty() {
                return fail(at, format!("volumes[{}].plugin_id: missing", volume.id));
            }
            let Some(&plugin) = plugin_ids.get(volume.plugin_id.as_str()) else {
                return fail(
                    at,
                    format!(
                        "volumes[{}].plugin_id: no plugin with id \"{}\" under plugins",
                        volume.id, volume.plugin_id
                    ),
                );
            };
            let attachment_mode = volume
                .attachment_mode
                .map_or(AttachmentMode::FileSystem, attachment);
            let capabilities = match (volume.access_mode, &volume.capabilities) {
                (Some(access_mode), None) => vec![Capability {
                    access_mode,
                    attachment_mode,
                }],
                (None, Some(list)) if !list.is_empty() => {
                    let mut capabilities = Vec::with_capacity(list.len());
                    for c in list {
                        let Some(access_mode) = c.access_mode.csi() else {
                            return fail(
                                at,
                                format!(
                                    "volumes[{}].capabilities: {} is a host volume access mode; give type: host for a host volume",
                                    volume.id,
                                    c.access_mode.name()
                                ),
                            );
                        };
                        capabilities.push(Capability {
                            access_mode,
                            attachment_mode: attachment(c.attachment_mode),
                        });
                    }
                    capabilities
                }
                (None, _) => {
                    return fail(
                        at,
                        format!(
                            "volumes[{}]: needs access_mode (one capability) or a non-empty capabilities list",
                            volume.id
                        ),
                    );
                }
                (Some(_), Some(_)) => {
                    return fail(
                        at,
                        format!(
                            "volumes[{}]: access_mode is a shorthand for capabilities; give one or the other, not both",
                            volume.id
                        ),
                    );
                }
            };
            volumes.push(VolumeSpec {
                name: volume.id.clone(),
                plugin,
                capabilities,
                shorthand: volume.access_mode,
                attachment_mode,
                topologies: volume.topologies.unwrap_or_default(),
                register_at: volume.register_at.map_or(Millis::ZERO, |d| d.0),
                namespace: super::entries::resolve_namespace(
                    volume.namespace.clone(),
                    at,
                    &format!("volumes[{}]", volume.id),
                )?,
            });
        }
    }
    Ok(volumes)
}

pub(super) fn attachment(raw: RawAttachmentMode) -> AttachmentMode {
    match raw {
        RawAttachmentMode::FileSystem => AttachmentMode::FileSystem,
        RawAttachmentMode::BlockDevice => AttachmentMode::BlockDevice,
    }
}
