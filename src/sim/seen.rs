//! What the scheduler saw when it decided a placement, recorded on trace
//! rows for `plansim explain` (only when tracing: it costs nothing otherwise).

use std::collections::BTreeMap;

use crate::model::access::{AccessMode, ClaimCounts, ClaimMode};
use crate::model::ids::{GroupRef, NodeId, VolumeId};
use crate::sim::server::scheduler::plan::Placement;
use crate::sim::simulation::Simulation;
use crate::sim::trace::{PlacementSeen, SEEN_HOLDERS, SeenClaims, VolumeSeen};

impl Simulation<'_> {
    /// The view of one placement decision: each volume's claims, the
    /// allocations that will claim it, the plan's earlier placements, and
    /// what the policy's check counted of them. `None` when not tracing (or
    /// the trace's sink does not keep it).
    pub(crate) fn placement_seen(
        &self,
        plan_claims: &BTreeMap<VolumeId, ClaimCounts>,
        planned: &[Placement],
        (group, index): (GroupRef, u32),
        node: Option<NodeId>,
        volumes: impl Iterator<Item = (VolumeId, ClaimMode)>,
    ) -> Option<Box<PlacementSeen>> {
        self.trace.as_ref().filter(|sink| sink.wants_seen())?;
        let volumes = volumes
            .map(|(volume, request)| {
                let state = &self.volumes[volume.index()];
                let claimed = SeenClaims {
                    counts: state.ledger_counts,
                    holders: state
                        .ledger
                        .iter()
                        .take(SEEN_HOLDERS)
                        .map(|(id, claim)| self.holder(*id, claim.mode))
                        .collect(),
                };
                let unclaimed = SeenClaims {
                    counts: state.reserved_counts,
                    holders: state
                        .reserved
                        .iter()
                        .take(SEEN_HOLDERS)
                        .map(|(id, mode)| self.holder(*id, *mode))
                        .collect(),
                };
                let in_plan_counts = plan_claims.get(&volume).copied().unwrap_or_default();
                let in_plan = SeenClaims {
                    counts: in_plan_counts,
                    // Scanned only when the plan holds the volume at all.
                    holders: if in_plan_counts == ClaimCounts::default() {
                        Vec::new()
                    } else {
                        planned
                            .iter()
                            .filter_map(|p| {
                                let (_, mode) = p.volumes().iter().find(|(v, _)| *v == volume)?;
                                Some((p.group, p.index, *mode))
                            })
                            .take(SEEN_HOLDERS)
                            .collect()
                    },
                };
                let counted = if self.behaviour.plan_aware_claims {
                    claimed.counts.plus(unclaimed.counts).plus(in_plan.counts)
                } else {
                    // Nomad's own check (`Simulation::check_volume`) looks
                    // only at a writer's request on a volume a claim has set
                    // to a single-writer mode, and then only at other jobs'
                    // writer claims.
                    let single_writer = matches!(
                        state.claimed_mode.map(|c| c.access_mode),
                        Some(AccessMode::SingleNodeWriter | AccessMode::MultiNodeSingleWriter)
                    );
                    let other_writers = state.ledger_counts.writers
                        - state.writers_by_job.get(&group.job).copied().unwrap_or(0);
                    ClaimCounts {
                        readers: 0,
                        writers: if request == ClaimMode::Write && single_writer {
                            other_writers
                        } else {
                            0
                        },
                    }
                };
                VolumeSeen {
                    volume,
                    request,
                    claimed,
                    unclaimed,
                    in_plan,
                    counted,
                }
            })
            .collect();
        Some(Box::new(PlacementSeen {
            group,
            index,
            eval: self.metrics.evals,
            node,
            volumes,
        }))
    }

    pub(crate) fn holder(
        &self,
        id: crate::model::ids::AllocId,
        mode: ClaimMode,
    ) -> (GroupRef, u32, ClaimMode) {
        let alloc = &self.allocs[id.index()];
        (alloc.group, alloc.index, mode)
    }
}
