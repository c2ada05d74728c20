//! Nomad volume specs, the files of `nomad volume register` and `nomad
//! volume create` (HCL), mapped onto [`RawVolume`]. The JSON forms are read
//! by `nomad::json`, into the same [`NomadVolume`].

use std::collections::BTreeMap;

use hcl::edit::Span;
use hcl::edit::structure::{Block, Structure};

use super::hcl::file::HclFile;
use super::job::{parse_access_mode, parse_attachment_mode};
use crate::scenario::error::{LoadError, Position, file_error};
use crate::scenario::raw::*;

/// A volume spec's fields that plansim models.
#[derive(Clone, Debug, Default)]
pub struct NomadVolume {
    pub id: String,
    pub at: Option<Position>,
    pub volume_type: String,
    pub plugin_id: String,
    /// `capability { access_mode, attachment_mode }`, in file order.
    pub capabilities: Vec<(String, String)>,
    /// `topology_request { required { topology { segments {...} } } }`.
    pub topologies: Vec<BTreeMap<String, String>>,
    /// Nomad 1.0's top-level `access_mode`: the volume-level shorthand (a
    /// request naming no mode is made in it), not a capability list.
    pub legacy_mode: bool,
    /// The spec's `namespace`, if it names one.
    pub namespace: Option<String>,
    /// The spec's `name` (a host volume is mounted by it).
    pub name: String,
    /// A host volume spec's `node_id` and `node_pool`.
    pub node_id: Option<String>,
    pub node_pool: Option<String>,
    /// A host volume spec's `constraint` blocks: which node it is created on.
    pub constraints: Vec<super::job::NomadConstraint>,
    pub ignored: super::job::Ignored,
}

/// Volume specs are read by Nomad's HCL1 parser, which allows quoted keys
/// (`"topology.ebs.csi.aws.com/zone" = "us-east-1b"`); HCL2 does not. Such
/// a key becomes a placeholder identifier of the same length where it
/// fits, so every position in the file stays right.
fn unquote_keys(text: &str) -> (String, Vec<String>) {
    let mut keys = Vec::new();
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let indent = line.len() - line.trim_start().len();
        let rest = &line[indent..];
        let quoted = rest
            .strip_prefix('"')
            .and_then(|r| r.find('"').map(|end| (&r[..end], &r[end + 1..])));
        match quoted {
            Some((key, after)) if after.trim_start().starts_with('=') && !key.contains('\\') => {
                out.push_str(&line[..indent]);
                let placeholder = format!("q{}", keys.len());
                // Pad to the quoted key's width so the columns after it hold.
                let width = key.len() + 2;
                out.push_str(&format!("{placeholder:<width$}"));
                out.push_str(after);
                keys.push(key.to_string());
            }
            _ => out.push_str(line),
        }
    }
    (out, keys)
}

/// HCL1 separates a one-line block's attributes with commas
/// (`segments { rack = "R2", zone = "us-east-1a" }`, as Nomad's own
/// volume spec example writes it); HCL2 has no such block, but the same
/// text with `=` before the brace is an HCL2 object. The space before the
/// brace becomes the `=`, so every position in the file stays right.
fn one_line_objects(text: &str) -> String {
    static BLOCK: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?m)\b([A-Za-z_][A-Za-z0-9_-]*)[ \t]\{([^{}\n]*,[^{}\n]*)\}")
            .expect("a valid pattern")
    });
    // A one-line block inside another on the same line
    // (`topology { segments { rack = "R1" } }`, as `nomad volume init`
    // writes it) is not HCL2 either; the inner one as an object is.
    static NESTED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?m)(\{[ \t]*)([A-Za-z_][A-Za-z0-9_-]*)[ \t]\{([^{}\n]*)\}")
            .expect("a valid pattern")
    });
    let text = BLOCK.replace_all(text, "$1={$2}");
    NESTED.replace_all(&text, "$1$2={$3}").into_owned()
}

/// A `segments = { ... }` object: its keys and string values.
fn segments_object(
    hcl: &HclFile,
    attr: &hcl::edit::structure::Attribute,
) -> Result<BTreeMap<String, String>, LoadError> {
    let hcl::Value::Object(map) = hcl.eval(&attr.value)? else {
        return Err(hcl.error(
            attr.span(),
            "segments: expected an object of topology segments ({ rack = \"R2\" })".to_string(),
        ));
    };
    map.into_iter()
        .map(|(key, value)| match value {
            hcl::Value::String(text) => Ok((key, text)),
            _ => Err(hcl.error(
                attr.span(),
                format!(
                    "segments: {}: expected a string",
                    crate::names::echoed_key(&key)
                ),
            )),
        })
        .collect()
}

/// Parses an HCL volume spec.
pub fn parse_volume_hcl(text: &str, file: &str) -> Result<NomadVolume, LoadError> {
    let (text, keys) = unquote_keys(text);
    let text = one_line_objects(&text);
    let real_key = |key: &str| -> String {
        key.strip_prefix('q')
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| keys.get(n).cloned())
            .unwrap_or_else(|| key.to_string())
    };
    let hcl = HclFile::parse(&text, file, &Default::default())?;
    if hcl.body.blocks().any(|b| b.ident.as_str() == "job") {
        return Err(file_error(
            file,
            Some(Position { line: 1, column: 1 }),
            "not a volume spec: this file holds a job block (list it under jobs: as - file: ...)",
        ));
    }
    let mut volume = NomadVolume {
        at: Some(Position { line: 1, column: 1 }),
        volume_type: "csi".to_string(),
        ..NomadVolume::default()
    };
    // Nomad 1.0's spec gave the mode at the top level, not in capability blocks.
    let mut legacy = (None, String::new());
    for structure in hcl.body.iter() {
        match structure {
            Structure::Attribute(attr) => match attr.key.as_str() {
                "id" => volume.id = hcl.string(attr)?,
                "access_mode" => legacy.0 = Some(hcl.string(attr)?),
                "attachment_mode" => legacy.1 = hcl.string(attr)?,
                "type" => volume.volume_type = hcl.string(attr)?,
                "plugin_id" => volume.plugin_id = hcl.string(attr)?,
                "namespace" => volume.namespace = Some(hcl.string(attr)?),
                "name" => volume.name = hcl.string(attr)?,
                "node_id" => volume.node_id = Some(hcl.string(attr)?),
                "node_pool" => volume.node_pool = Some(hcl.string(attr)?),
                // Capacity, names, snapshots: nothing that decides placement.
                key if QUIET_SPEC_KEYS.contains(&key) => {}
                key => volume
                    .ignored
                    .push((not_a_spec_field(key), hcl.position(attr.span()))),
            },
            Structure::Block(block) => match block.ident.as_str() {
                "capability" => {
                    let mut access = String::new();
                    let mut attachment = String::new();
                    for attr in block.body.attributes() {
                        match attr.key.as_str() {
                            "access_mode" => access = hcl.string(attr)?,
                            "attachment_mode" => attachment = hcl.string(attr)?,
                            key => return Err(invalid_key(&hcl, attr.span(), "capability", key)),
                        }
                    }
                    volume.capabilities.push((access, attachment));
                }
                "topology_request" => {
                    if let Some(attr) = block.body.attributes().next() {
                        let key = attr.key.as_str();
                        return Err(invalid_key(&hcl, attr.span(), "topology_request", key));
                    }
                    for inner in block.body.blocks() {
                        let ident = inner.ident.as_str();
                        if !matches!(ident, "required" | "preferred") {
                            return Err(invalid_key(&hcl, inner.span(), "topology_request", ident));
                        }
                        let wanted = ident == "required";
                        if !wanted {
                            // Preferred topologies rank nodes: placement.
                            volume.ignored.push((
                                format!("topology_request {}", inner.ident.as_str()),
                                hcl.position(inner.span()),
                            ));
                            continue;
                        }
                        for topology in blocks(inner, "topology") {
                            for segments in blocks(topology, "segments") {
                                let map = hcl.string_map(&segments.body)?;
                                volume.topologies.push(
                                    map.into_iter().map(|(k, v)| (real_key(&k), v)).collect(),
                                );
                            }
                            // `segments = { rack = "R2", zone = "a" }`, and
                            // HCL1's one-line block with commas, rewritten so.
                            for attr in topology.body.attributes() {
                                if attr.key.as_str() != "segments" {
                                    continue;
                                }
                                volume.topologies.push(segments_object(&hcl, attr)?);
                            }
                        }
                    }
                }
                "constraint" => volume
                    .constraints
                    .push(super::hcl::job::parse_constraint(&hcl, block)?),
                "mount_options" => {
                    for attr in block.body.attributes() {
                        let key = attr.key.as_str();
                        if !matches!(key, "fs_type" | "mount_flags") {
                            return Err(invalid_key(&hcl, attr.span(), "mount_options", key));
                        }
                    }
                }
                ident if QUIET_SPEC_KEYS.contains(&ident) => {}
                ident => volume
                    .ignored
                    .push((not_a_spec_field(ident), hcl.position(block.span()))),
            },
        }
    }
    if volume.volume_type != "host"
        && let Some(first) = volume.constraints.first()
    {
        // A CSI volume spec has no constraints: Nomad's decoder drops them.
        volume
            .ignored
            .push((not_a_spec_field("constraint"), first.at));
    }
    if let (Some(access), attachment) = legacy {
        volume.capabilities.insert(0, (access, attachment));
        volume.legacy_mode = true;
    }
    if volume.id.is_empty() && hcl.body.is_empty() {
        return Err(file_error(
            file,
            Some(Position { line: 1, column: 1 }),
            "not a volume spec: the file is empty (expected id, plugin_id and capability blocks)",
        ));
    }
    Ok(volume)
}

/// The spec's keys (`api.CSIVolume`'s `hcl` tags, as
/// `command/volume_register_csi.go:csiDecodeVolume` decodes them at
/// v2.0.5) that cannot change placement, skipped without a word.
const QUIET_SPEC_KEYS: &[&str] = &[
    "external_id",
    "capacity_min",
    "capacity_max",
    "clone_id",
    "snapshot_id",
    "secrets",
    "parameters",
    "context",
];

/// A key Nomad's decoder has no field for: its top level is decoded by
/// `mapstructure.WeakDecode`, which drops unknown keys, so Nomad ignores
/// it; plansim says so (a misspelt `topology_reqest` loses a constraint).
fn not_a_spec_field(key: &str) -> String {
    let key = if crate::names::is_field_name(key) {
        key.to_string()
    } else {
        crate::names::echoed_key(key)
    };
    format!("{key} (not a field of Nomad's volume spec: Nomad ignores it)")
}

/// Nomad's refusal of a key inside `capability`, `mount_options` or
/// `topology_request` (`helper.CheckHCLKeys`: "invalid key: X").
fn invalid_key(
    hcl: &HclFile,
    span: Option<std::ops::Range<usize>>,
    block: &str,
    key: &str,
) -> LoadError {
    let expected = match block {
        "capability" => "access_mode and attachment_mode",
        "mount_options" => "fs_type and mount_flags",
        _ => "required and preferred",
    };
    hcl.error(
        span,
        format!(
            "{block}: invalid key: {}: expected only {expected}, as Nomad's volume register checks",
            crate::names::echoed_key(key)
        ),
    )
}

/// The keys of `api.CSIVolume` (its JSON names, v2.0.5 `api/csi.go`) and
/// of the spec (`capability`, `topology_request`, ...), folded by
/// [`fold_key`].
const VOLUME_JSON_KEYS: &[&str] = &[
    "id",
    "name",
    "externalid",
    "namespace",
    "requestedtopologies",
    "topologies",
    "accessmode",
    "attachmentmode",
    "mountoptions",
    "secrets",
    "parameters",
    "context",
    "capacity",
    "requestedcapacitymin",
    "requestedcapacitymax",
    "requestedcapabilities",
    "cloneid",
    "snapshotid",
    "readallocs",
    "writeallocs",
    "allocations",
    "schedulable",
    "pluginid",
    "provider",
    "providerversion",
    "controllerrequired",
    "controllershealthy",
    "controllersexpected",
    "nodeshealthy",
    "nodesexpected",
    "resourceexhausted",
    "createindex",
    "modifyindex",
    "createtime",
    "modifytime",
    "type",
    "capability",
    "topologyrequest",
    "capacitymin",
    "capacitymax",
    "nodeid",
    "nodepool",
    "hostpath",
    "state",
    "constraints",
];

/// A JSON volume's key as both its shapes share it: the API writes
/// CamelCase (`PluginID`), the spec snake_case (`plugin_id`).
pub(super) fn fold_key(key: &str) -> String {
    key.to_ascii_lowercase().replace('_', "")
}

/// Warns about every key of a JSON volume that no field takes (Go's
/// decoder drops it), at the line `position` finds.
pub(super) fn unknown_json_keys(
    map: &serde_json::Map<String, serde_json::Value>,
    position: &dyn Fn(&str) -> Option<Position>,
    ignored: &mut super::job::Ignored,
) {
    let unknown = map
        .keys()
        .filter(|key| !VOLUME_JSON_KEYS.contains(&fold_key(key).as_str()));
    for key in unknown.take(MAX_UNKNOWN_VOLUME_KEYS) {
        ignored.push((not_a_spec_field(key), position(key)));
    }
}

/// Unknown keys of one JSON volume named, at most.
const MAX_UNKNOWN_VOLUME_KEYS: usize = 20;

fn blocks<'b>(block: &'b Block, ident: &'b str) -> impl Iterator<Item = &'b Block> + 'b {
    block
        .body
        .blocks()
        .filter(move |b| b.ident.as_str() == ident)
}

/// Maps a volume spec onto a raw volume entry.
pub fn to_raw_volume(mut volume: NomadVolume, file: &str) -> Result<RawVolume, LoadError> {
    let host = match volume.volume_type.as_str() {
        "csi" => false,
        "host" => true,
        other => {
            return Err(file_error(
                file,
                volume.at,
                format!("volume type \"{other}\": expected \"csi\" or \"host\""),
            ));
        }
    };
    if host && volume.id.is_empty() {
        // A host volume's id is a UUID Nomad gives it; jobs mount it by
        // name, which is what plansim keys it by.
        volume.id = std::mem::take(&mut volume.name);
    }
    let mut capabilities = Vec::with_capacity(volume.capabilities.len());
    for (access, attachment) in &volume.capabilities {
        let access = if host {
            super::job::parse_any_access_mode(file, volume.at, access)?
        } else {
            RawAccessMode::from_csi(parse_access_mode(file, volume.at, access)?)
        };
        let attachment = if attachment.is_empty() {
            None
        } else {
            Some(parse_attachment_mode(file, volume.at, attachment)?)
        };
        capabilities.push((access, attachment));
    }
    if host && capabilities.is_empty() {
        // HostVolume.CanonicalizeForCreate's default capability.
        capabilities.push((
            RawAccessMode::SingleNodeWriter,
            Some(RawAttachmentMode::FileSystem),
        ));
    }
    if host && volume.plugin_id.is_empty() {
        // CanonicalizeForCreate: structs.DefaultHostVolumePlugin.
        volume.plugin_id = crate::model::host_volume::DEFAULT_HOST_VOLUME_PLUGIN.to_string();
    }
    if capabilities.is_empty() {
        return Err(file_error(
            file,
            volume.at,
            format!(
                "volume \"{}\": expected at least one capability {{ access_mode, attachment_mode }} block",
                volume.id
            ),
        ));
    }
    if volume.plugin_id.is_empty() {
        return Err(file_error(
            file,
            volume.at,
            format!("volume \"{}\": expected a plugin_id", volume.id),
        ));
    }
    let mut raw = raw_volume(
        volume.id,
        volume.plugin_id,
        &capabilities,
        volume.legacy_mode,
        (!volume.topologies.is_empty()).then_some(volume.topologies),
    );
    raw.namespace = volume.namespace;
    if host {
        raw.volume_type = Some(RawVolumeType::Host);
        raw.node = volume.node_id;
        raw.node_pool = volume.node_pool;
        let constraints = super::job::map_constraints(&volume.constraints, &mut Vec::new());
        raw.constraints = (!constraints.is_empty()).then_some(constraints);
    }
    Ok(raw)
}

/// One place that builds a raw volume, so a field added to `RawVolume`
/// needs one edit here. Capability blocks become the volume's
/// `capabilities` (the first claim picks the mode); Nomad 1.0's top-level
/// mode becomes the `access_mode` shorthand.
pub fn raw_volume(
    id: String,
    plugin_id: String,
    capabilities: &[(RawAccessMode, Option<RawAttachmentMode>)],
    legacy_mode: bool,
    topologies: Option<Vec<BTreeMap<String, String>>>,
) -> RawVolume {
    let (access_mode, attachment_mode, capabilities) = match capabilities.first() {
        Some(&(access, attachment)) if legacy_mode => (access.csi(), attachment, None),
        _ => (
            None,
            None,
            Some(
                capabilities
                    .iter()
                    .map(|&(access_mode, attachment)| RawCapability {
                        access_mode,
                        // Nomad requires it; a spec without one reads as
                        // the default, file-system.
                        attachment_mode: attachment.unwrap_or(RawAttachmentMode::FileSystem),
                    })
                    .collect(),
            ),
        ),
    };
    RawVolume {
        id,
        count: None,
        plugin_id,
        access_mode,
        attachment_mode,
        topologies,
        capabilities,
        file: None,
        register_at: None,
        namespace: None,
        volume_type: None,
        node: None,
        node_pool: None,
        constraints: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_keys_keep_their_columns_and_come_back() {
        let (text, keys) = unquote_keys("  \"a.b/zone\" = \"x\"\nid = \"v\"\n");
        assert_eq!(keys, vec!["a.b/zone".to_string()]);
        let first = text.lines().next().unwrap();
        assert_eq!(first.find('='), Some(13));
        assert!(first.trim_start().starts_with("q0 "));
    }
}
