//! Host volumes: a directory on one client, mounted by allocations placed
//! there. Static ones come from the client's configuration
//! (`client { host_volume "name" { path, read_only } }`); dynamic ones
//! (Nomad 1.10+) are created on a node by a host volume plugin and carry
//! access modes, which Nomad's scheduler checks against every allocation
//! proposed on the node (`HostVolumeChecker`, #24684). Unlike CSI volumes
//! they have no claims in the state store and no controller.

use super::access::AttachmentMode;
use super::ids::NodeId;

/// The plugin a host volume spec that names none is created by
/// (`structs.DefaultHostVolumePlugin`), which makes a directory and
/// enforces nothing; a scenario need not declare it.
pub const DEFAULT_HOST_VOLUME_PLUGIN: &str = "mkdir";

/// An index into `Scenario::host_volumes` (dynamic host volumes only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostVolumeId(pub u32);

impl HostVolumeId {
    pub fn from_index(index: usize) -> Self {
        HostVolumeId(u32::try_from(index).expect("host volume count checked at load"))
    }

    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A dynamic host volume's access mode (`structs.HostVolumeAccessMode*`,
/// v2.0.5 `nomad/structs/host_volumes.go`). Every mode is single-node: the
/// volume lives on one client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum HostAccessMode {
    /// Readers only.
    SingleNodeReaderOnly,
    /// Writers (and readers) from any allocation on the node.
    SingleNodeWriter,
    /// One writing allocation at a time (readers besides).
    SingleNodeSingleWriter,
    /// Any allocation, reading or writing.
    SingleNodeMultiWriter,
}

impl HostAccessMode {
    pub const ALL: [HostAccessMode; 4] = [
        HostAccessMode::SingleNodeReaderOnly,
        HostAccessMode::SingleNodeWriter,
        HostAccessMode::SingleNodeSingleWriter,
        HostAccessMode::SingleNodeMultiWriter,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HostAccessMode::SingleNodeReaderOnly => "single-node-reader-only",
            HostAccessMode::SingleNodeWriter => "single-node-writer",
            HostAccessMode::SingleNodeSingleWriter => "single-node-single-writer",
            HostAccessMode::SingleNodeMultiWriter => "single-node-multi-writer",
        }
    }

    pub fn parse(text: &str) -> Option<HostAccessMode> {
        HostAccessMode::ALL.into_iter().find(|m| m.name() == text)
    }

    /// The mode a request that names none is made in
    /// (`hostVolumeIsAvailable`: reader for a read-only mount, else writer).
    pub fn default_for(read_only: bool) -> HostAccessMode {
        if read_only {
            HostAccessMode::SingleNodeReaderOnly
        } else {
            HostAccessMode::SingleNodeWriter
        }
    }

    /// Whether `writers` writing mounts (and any readers) keep to the mode:
    /// what an enforcing plugin allows, and what a violation breaks.
    pub fn permits_writers(self, writers: u32) -> bool {
        match self {
            HostAccessMode::SingleNodeReaderOnly => writers == 0,
            HostAccessMode::SingleNodeSingleWriter => writers <= 1,
            HostAccessMode::SingleNodeWriter | HostAccessMode::SingleNodeMultiWriter => true,
        }
    }
}

impl std::fmt::Display for HostAccessMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One entry of a node's host volumes (`Node.HostVolumes`): a static one
/// from the client's configuration, or a dynamic one the node fingerprints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeHostVolume {
    pub name: String,
    pub read_only: bool,
    /// The dynamic host volume this entry is (`ClientHostVolumeConfig.ID`).
    pub dynamic: Option<HostVolumeId>,
}

/// A dynamic host volume (`nomad volume create` with `type = "host"`).
#[derive(Clone, Debug)]
pub struct HostVolumeSpec {
    pub name: String,
    pub namespace: String,
    /// Index into `Scenario::host_plugins`.
    pub plugin: usize,
    /// The node it was created on.
    pub node: NodeId,
    pub capabilities: Vec<(HostAccessMode, AttachmentMode)>,
}

impl HostVolumeSpec {
    /// How Nomad 1.2.6, which has no dynamic host volumes, sees one: a
    /// static host volume of its node, read-only when no capability allows
    /// a writer (the closest client configuration).
    pub fn as_static_read_only(&self) -> bool {
        self.capabilities
            .iter()
            .all(|(mode, _)| *mode == HostAccessMode::SingleNodeReaderOnly)
    }
}

/// A host volume plugin (`plugins:` with `type: host`).
#[derive(Clone, Debug)]
pub struct HostPluginSpec {
    pub name: String,
    /// Whether a mount that breaks the volume's access mode is refused on
    /// the client (as an enforcing CSI plugin refuses a publish).
    pub enforces_access_mode: bool,
}

/// A group's `volume` block of `type = "host"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostVolumeRequest {
    pub alias: String,
    /// The name looked up in a node's host volumes.
    pub source: String,
    pub read_only: bool,
    /// `per_alloc` (2.0.5): allocation N mounts `<source>[N]`.
    pub per_alloc: bool,
    pub access_mode: Option<HostAccessMode>,
    pub attachment_mode: Option<AttachmentMode>,
    /// `sticky` (1.10+): the job's allocations are pinned to the dynamic
    /// volumes they claimed (`TaskGroupHostVolumeClaim`).
    pub sticky: bool,
}

impl HostVolumeRequest {
    /// The source allocation `index` looks up.
    pub fn source_for(&self, index: u32) -> std::borrow::Cow<'_, str> {
        if self.per_alloc {
            std::borrow::Cow::Owned(format!("{}[{index}]", self.source))
        } else {
            std::borrow::Cow::Borrowed(&self.source)
        }
    }

    /// The access mode the request is checked in.
    pub fn mode(&self) -> HostAccessMode {
        self.access_mode
            .unwrap_or_else(|| HostAccessMode::default_for(self.read_only))
    }
}

/// Adds dynamic host volume `id`, named `name`, to a node's host volumes,
/// keeping them sorted by name (the loader refuses a name twice).
pub fn add_dynamic(volumes: &mut Vec<NodeHostVolume>, name: &str, id: HostVolumeId) {
    let at = volumes.partition_point(|v| v.name.as_str() < name);
    volumes.insert(
        at,
        NodeHostVolume {
            name: name.to_string(),
            read_only: false,
            dynamic: Some(id),
        },
    );
}

/// A node's host volume named `name` (the list is sorted by name).
pub fn on_node<'n>(volumes: &'n [NodeHostVolume], name: &str) -> Option<&'n NodeHostVolume> {
    volumes
        .binary_search_by(|v| v.name.as_str().cmp(name))
        .ok()
        .map(|i| &volumes[i])
}
