//! What one evaluation produces: the plan a worker hands to the plan
//! applier (nomad/structs Plan: its stops and placements) and the slots the
//! reconciler wants filled (scheduler/reconcile.go's placement results).

use crate::model::access::ClaimMode;
use crate::model::ids::{AllocId, GroupRef, JobId, NodeId, VolumeId};
use crate::model::scenario::Capability;
use crate::sim::state::alloc_parts::{VolumeClaims, claim_modes_of, volumes_of};
use crate::sim::trace::PlacementSeen;

/// What a worker hands to the plan applier.
#[derive(Clone, Debug)]
pub struct Plan {
    pub job: JobId,
    /// How many times this evaluation was already retried after a rejection.
    pub attempt: u32,
    pub stops: Vec<AllocId>,
    pub placements: Vec<Placement>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.stops.is_empty() && self.placements.is_empty()
    }
}

/// Why a slot gets a new allocation, holding the allocation it takes over
/// from: the reconciler's place, reschedule, destructive-update and canary
/// results (scheduler/reconcile.go: computePlacements' `previousAlloc`,
/// `reschedule`, `computeDestructiveUpdates`, `computeCanaries`). A canary
/// never takes over from one: it runs beside the slot's allocation.
/// 8 bytes: a plan can hold millions of placements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlacementKind {
    /// A slot with no allocation.
    Fresh,
    /// Replaces a stopped, lost, finished or migrating allocation.
    Replaces(AllocId),
    /// Replaces a failed (or unknown) allocation under the reschedule policy.
    Reschedules(AllocId),
    /// Replaces the allocation with the job's new version (a destructive
    /// update: the old one is stopped in the same plan).
    Updates(AllocId),
    /// A canary of the job's new version, placed beside the slot's
    /// allocation rather than replacing it.
    Canary,
}

impl PlacementKind {
    /// The allocation this one takes over from, if any.
    pub fn previous(self) -> Option<AllocId> {
        match self {
            PlacementKind::Replaces(id)
            | PlacementKind::Reschedules(id)
            | PlacementKind::Updates(id) => Some(id),
            PlacementKind::Fresh | PlacementKind::Canary => None,
        }
    }

    /// A destructive update.
    pub fn is_update(self) -> bool {
        matches!(self, PlacementKind::Updates(_))
    }
}

#[derive(Clone, Debug)]
pub struct Placement {
    pub group: GroupRef,
    pub index: u32,
    pub node: NodeId,
    /// The volumes it mounts and their claim modes, if any: moved into the
    /// allocation (`volumes()`, `claim_modes()`; 8 bytes without volumes,
    /// as a plan can hold millions of placements).
    pub claims: Option<Box<VolumeClaims>>,
    /// Why it is placed, and the allocation it takes over from.
    pub kind: PlacementKind,
    /// The job version it runs.
    pub version: u32,
    /// What the scheduler saw when it chose the node (only when tracing).
    pub seen: Option<Box<PlacementSeen>>,
    /// The chosen node's final score (what a reconnect compares).
    pub score: f64,
}

impl Placement {
    /// The volumes the placement mounts, with the mode of each claim.
    pub fn volumes(&self) -> &[(VolumeId, ClaimMode)] {
        volumes_of(&self.claims)
    }

    /// The access and attachment mode each of `volumes()` is claimed in.
    pub fn claim_modes(&self) -> &[Capability] {
        claim_modes_of(&self.claims)
    }
}

/// A slot the reconciler wants filled, and why.
pub(crate) struct Want {
    pub(crate) group: GroupRef,
    pub(crate) index: u32,
    pub(crate) kind: PlacementKind,
}

impl Want {
    pub(crate) fn new(group: GroupRef, index: u32, kind: PlacementKind) -> Self {
        Want { group, index, kind }
    }
}

/// A volume request with its source resolved for one allocation index.
pub(crate) enum ResolvedVolume {
    Found(VolumeId, ClaimMode, Capability),
    Missing(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::state::store::Alloc;

    #[test]
    fn an_allocation_record_stays_small() {
        // 232 bytes before #16; C1M holds a million of these.
        assert!(
            std::mem::size_of::<Alloc>() <= 64,
            "{}",
            std::mem::size_of::<Alloc>()
        );
        // 96 before: a one-job plan of MAX_ALLOCATIONS placements is held whole.
        let placement = std::mem::size_of::<Placement>();
        assert!(placement <= 56, "{placement}");
        // The kind and the allocation it takes over from, in one word.
        assert_eq!(std::mem::size_of::<PlacementKind>(), 8);
    }
}
