//! What one evaluation produces: the plan a worker hands to the plan
//! applier (nomad/structs Plan: its stops and placements) and the slots the
//! reconciler wants filled (scheduler/reconcile.go's placement results).

use crate::model::access::ClaimMode;
use crate::model::ids::{AllocId, GroupRef, JobId, NodeId, VolumeId};
use crate::model::scenario::Capability;
use crate::sim::state::alloc_parts::{claim_modes_of, volumes_of};

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

#[derive(Clone, Debug)]
pub struct Placement {
    pub group: GroupRef,
    pub index: u32,
    pub node: NodeId,
    /// The volumes it mounts and their claim modes, if any: moved into the
    /// allocation (`volumes()`, `claim_modes()`; 8 bytes without volumes,
    /// as a plan can hold millions of placements).
    pub claims: Option<Box<crate::sim::state::alloc_parts::VolumeClaims>>,
    /// The allocation this one replaces (failed, lost, stopped or migrating).
    pub previous: Option<AllocId>,
    /// It replaces a failed allocation under the reschedule policy.
    pub reschedule: bool,
    /// The job version it runs.
    pub version: u32,
    /// It replaces `previous` with a new version (a destructive update).
    pub destructive: bool,
    /// What the scheduler saw when it chose the node (only when tracing).
    pub seen: Option<Box<crate::sim::trace::PlacementSeen>>,
    /// The chosen node's final score (what a reconnect compares).
    pub score: f64,
    /// A canary of the job's new version, placed beside the slot's
    /// allocation rather than replacing it (reconcile computeCanaries).
    pub canary: bool,
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

/// A slot the reconciler wants filled.
pub(crate) struct Want {
    pub(crate) group: GroupRef,
    pub(crate) index: u32,
    pub(crate) previous: Option<AllocId>,
    pub(crate) reschedule: bool,
    pub(crate) destructive: bool,
    pub(crate) canary: bool,
}

impl Want {
    /// A slot with no allocation: a fresh placement.
    pub(crate) fn fresh(group: GroupRef, index: u32) -> Self {
        Want {
            group,
            index,
            previous: None,
            reschedule: false,
            destructive: false,
            canary: false,
        }
    }

    /// Replaces `previous` (stopped, lost, finished or migrating).
    pub(crate) fn replacing(group: GroupRef, index: u32, previous: AllocId) -> Self {
        Want {
            previous: Some(previous),
            ..Want::fresh(group, index)
        }
    }

    /// Replaces the failed (or unknown) `previous` under the reschedule policy.
    pub(crate) fn rescheduling(group: GroupRef, index: u32, previous: AllocId) -> Self {
        Want {
            reschedule: true,
            ..Want::replacing(group, index, previous)
        }
    }

    /// Replaces `previous` with the job's new version (a destructive update).
    pub(crate) fn updating(group: GroupRef, index: u32, previous: AllocId) -> Self {
        Want {
            destructive: true,
            ..Want::replacing(group, index, previous)
        }
    }

    /// A canary of the new version, placed beside the slot's allocation.
    pub(crate) fn canary(group: GroupRef, index: u32) -> Self {
        Want {
            canary: true,
            ..Want::fresh(group, index)
        }
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
    }
}
