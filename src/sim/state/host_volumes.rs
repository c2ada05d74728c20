//! What the servers and clients know of dynamic host volumes: which live
//! allocations write each (the scheduler's view of the allocations proposed
//! on its node) and which mount it on the client (where a violation shows).

use std::collections::{BTreeMap, BTreeSet};

use crate::model::host_volume::{HostAccessMode, HostVolumeId, HostVolumeSpec};
use crate::model::ids::{AllocId, GroupRef};
use crate::model::time::Millis;

/// The writers a volume's capabilities allow at once: any if a capability
/// lets several allocations write, one for a single-writer volume, none
/// for a reader-only one. More is a violation of the volume's access modes.
pub(crate) fn writers_allowed(volume: &HostVolumeSpec) -> u32 {
    let modes = || volume.capabilities.iter().map(|(mode, _)| *mode);
    if modes().any(|m| m.permits_writers(2)) {
        u32::MAX
    } else if modes().any(|m| m == HostAccessMode::SingleNodeSingleWriter) {
        1
    } else {
        0
    }
}

/// Mounts of one volume on its client.
#[derive(Clone, Debug, Default)]
pub(crate) struct HostMounts {
    pub(crate) writers: u32,
    pub(crate) readers: u32,
    /// Since when more allocations write than the volume allows.
    pub(crate) violating_since: Option<Millis>,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct HostVolumeTable {
    /// Some group of the scenario mounts a host volume: without one, the
    /// hooks that keep this table return at once (an allocation's start
    /// and end are on every run's hot path).
    pub(crate) in_use: bool,
    /// Per dynamic host volume: the live allocations whose request writes it.
    pub(crate) writers: Vec<BTreeSet<AllocId>>,
    /// Per dynamic host volume: the client's mounts.
    pub(crate) mounts: Vec<HostMounts>,
    /// Per allocation that mounted some: the volumes, and whether it writes.
    pub(crate) mounted: BTreeMap<AllocId, Vec<(HostVolumeId, bool)>>,
    /// Sticky requests' claims, in the order they were made.
    pub(crate) sticky_claims: Vec<StickyClaim>,
}

/// A sticky request's claim (`structs.TaskGroupHostVolumeClaim`): one per
/// job, group and volume (the state store's unique index), naming the
/// allocation that made it or, once that one is replaced, its replacement.
/// Claims outlive a job's stop: only a purge deletes them, which plansim
/// does not model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StickyClaim {
    pub(crate) group: GroupRef,
    pub(crate) volume: HostVolumeId,
    pub(crate) alloc: AllocId,
}

impl HostVolumeTable {
    pub(crate) fn new(volumes: usize, in_use: bool) -> Self {
        HostVolumeTable {
            in_use,
            writers: vec![BTreeSet::new(); volumes],
            mounts: vec![HostMounts::default(); volumes],
            mounted: BTreeMap::new(),
            sticky_claims: Vec::new(),
        }
    }

    /// `alloc` of `group` was placed with a sticky request on `volume`
    /// (`updateStickyVolumeClaimsFromAlloc`): the group's claim of the
    /// volume names it, made now if the group had none.
    pub(crate) fn claim_sticky(&mut self, group: GroupRef, volume: HostVolumeId, alloc: AllocId) {
        match self
            .sticky_claims
            .iter_mut()
            .find(|c| c.group == group && c.volume == volume)
        {
            Some(claim) => claim.alloc = alloc,
            None => self.sticky_claims.push(StickyClaim {
                group,
                volume,
                alloc,
            }),
        }
    }

    /// Live writers of `volume` other than those in `stopped`.
    pub(crate) fn writers_except(&self, volume: HostVolumeId, stopped: &BTreeSet<AllocId>) -> u32 {
        let writers = &self.writers[volume.index()];
        if stopped.is_empty() {
            return writers.len() as u32;
        }
        writers.iter().filter(|a| !stopped.contains(a)).count() as u32
    }
}
