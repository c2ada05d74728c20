//! The host volume checker (`scheduler/feasible.go:HostVolumeChecker` at
//! v1.2.6; `scheduler/feasible/feasible.go:HostVolumeChecker` at v2.0.5):
//! a node must have every host volume a group asks for; from 1.10 a
//! dynamic one must also offer the asked capability, and a single-writer
//! one must have no other writer among the allocations proposed on its
//! node, the plan's own included (#24684).

use std::borrow::Cow;

use crate::model::host_volume::{
    HostAccessMode, HostVolumeId, HostVolumeRequest, NodeHostVolume, on_node,
};
use crate::model::ids::{GroupRef, NodeId};
use crate::model::scenario::{AttachmentMode, GroupSpec, JobSpec};
use crate::sim::server::scheduler::context::PlanContext;
use crate::sim::server::scheduler::feasibility::FilterReason;
use crate::sim::simulation::Simulation;

impl Simulation<'_> {
    /// The source allocation `index` of a request looks up: `per_alloc`
    /// appends `[index]` from 1.10 (`SetVolumes`); 1.2.6 ignores it for
    /// host volumes.
    fn host_source<'r>(&self, request: &'r HostVolumeRequest, index: u32) -> Cow<'r, str> {
        if self.behaviour.release.dynamic_host_volumes {
            request.source_for(index)
        } else {
            Cow::Borrowed(&request.source)
        }
    }

    /// The node's entry for each of the group's requests (`None`: missing).
    pub(crate) fn host_entries<'n, 'g>(
        &'n self,
        group: &'g GroupSpec,
        index: u32,
        node: NodeId,
    ) -> impl Iterator<Item = (&'g HostVolumeRequest, Option<&'n NodeHostVolume>)> + 'g
    where
        'n: 'g,
    {
        let volumes = &self.scenario.nodes[node.index()].host_volumes;
        group
            .host_volumes
            .iter()
            .map(move |request| (request, on_node(volumes, &self.host_source(request, index))))
    }

    /// The dynamic host volumes allocation `index` of `group` uses on
    /// `node` at this release, each with the request that mounts it.
    ///
    /// It looks the entries up itself rather than through `host_entries`,
    /// whose items borrow `self` as long as the group: the callers change
    /// the host volume table while they walk the result.
    pub(crate) fn dynamic_host_uses<'g>(
        &self,
        group: &'g GroupSpec,
        index: u32,
        node: NodeId,
    ) -> Vec<(HostVolumeId, &'g HostVolumeRequest)> {
        if group.host_volumes.is_empty() || !self.behaviour.release.dynamic_host_volumes {
            return Vec::new();
        }
        let volumes = &self.scenario.nodes[node.index()].host_volumes;
        group
            .host_volumes
            .iter()
            .filter_map(|request| {
                let entry = on_node(volumes, &self.host_source(request, index))?;
                Some((entry.dynamic?, request))
            })
            .collect()
    }

    /// `HostVolumeChecker.SetVolumes` (2.0.5) for a group with a sticky
    /// request: the job's claims (any group's: the lookup is by namespace
    /// and job) that no allocation proposed on the volume's node meets: the
    /// claiming allocation, or another of its group there, live and not
    /// stopped by the plan, or one the plan places there
    /// (`proposedAllocMeetsClaim`).
    pub(crate) fn prepare_sticky_claims(
        &self,
        ctx: &mut PlanContext,
        group: GroupRef,
        spec: &GroupSpec,
    ) {
        ctx.unmet_sticky.clear();
        if !self.behaviour.release.dynamic_host_volumes
            || !spec.host_volumes.iter().any(|r| r.sticky)
        {
            return;
        }
        for claim in &self.host_volume_table.sticky_claims {
            if claim.group.job != group.job {
                continue;
            }
            let node = self.scenario.host_volumes[claim.volume.index()].node;
            let live_there = self
                .live
                .of_group(claim.group)
                .iter()
                .any(|&(alloc, on)| on == node && !ctx.network.stopped.contains(&alloc));
            let proposed_there = self.fill_group_counts(ctx, claim.group).at(node).proposed > 0;
            if !live_there && !proposed_there {
                ctx.unmet_sticky.push(claim.volume);
            }
        }
    }

    /// `HostVolumeChecker.Feasible` for the placement being scored.
    #[cold]
    pub(crate) fn check_host_volumes(
        &self,
        ctx: &mut PlanContext,
        node: NodeId,
        job: &JobSpec,
        group: &GroupSpec,
    ) -> Result<(), FilterReason> {
        let dynamic = self.behaviour.release.dynamic_host_volumes;
        for (request, entry) in self.host_entries(group, ctx.alloc_index, node) {
            let Some(entry) = entry else {
                return Err(FilterReason::HostVolumes);
            };
            let fits = match entry.dynamic {
                Some(volume) if dynamic => {
                    self.dynamic_host_volume_fits(ctx, job, request, volume)
                        && (!request.sticky || sticky_claim_met(ctx, volume))
                }
                // Sticky is only supported on dynamic host volumes.
                None if dynamic && request.sticky => false,
                // 1.2.6 has no dynamic volumes: the client's configuration
                // would give it as a static one.
                Some(volume) => {
                    request.read_only
                        || !self.scenario.host_volumes[volume.index()].as_static_read_only()
                }
                None => request.read_only || !entry.read_only,
            };
            if !fits {
                return Err(FilterReason::HostVolumes);
            }
        }
        Ok(())
    }

    /// `nodeIsFeasibleForRequest` and `hostVolumeIsAvailable` (v2.0.5)
    /// for a dynamic volume: in the job's namespace, offering the asked
    /// capability, in a mode the mount's read-only flag agrees with, and a
    /// single-writer volume with no other writer proposed on the node.
    fn dynamic_host_volume_fits(
        &self,
        ctx: &PlanContext,
        job: &JobSpec,
        request: &HostVolumeRequest,
        volume: HostVolumeId,
    ) -> bool {
        let spec = &self.scenario.host_volumes[volume.index()];
        if spec.namespace != job.namespace {
            return false;
        }
        let mode = request.mode();
        let attachment = request
            .attachment_mode
            .unwrap_or(AttachmentMode::FileSystem);
        if !spec.capabilities.contains(&(mode, attachment)) {
            return false;
        }
        match mode {
            HostAccessMode::SingleNodeReaderOnly => request.read_only,
            HostAccessMode::SingleNodeWriter => !request.read_only,
            HostAccessMode::SingleNodeSingleWriter => self.host_writers(ctx, volume) == 0,
            HostAccessMode::SingleNodeMultiWriter => true,
        }
    }
}

/// A sticky request on `volume`: feasible if the job has no unmet claim
/// left, or one of `volume`, which this node then meets (removed for the
/// rest of the scan, as `nodeIsFeasibleForRequest` deletes it, so the
/// nodes scanned after it see no claim).
fn sticky_claim_met(ctx: &mut PlanContext, volume: HostVolumeId) -> bool {
    if ctx.unmet_sticky.is_empty() {
        return true;
    }
    if !ctx.unmet_sticky.contains(&volume) {
        return false;
    }
    ctx.unmet_sticky.retain(|&v| v != volume);
    true
}

impl Simulation<'_> {
    /// Writers of `volume` among the allocations proposed on its node: the
    /// live ones the plan does not stop, and the plan's placements.
    pub(crate) fn host_writers(&self, ctx: &PlanContext, volume: HostVolumeId) -> u32 {
        self.host_volume_table
            .writers_except(volume, &ctx.network.stopped)
            + ctx.host_writers.get(&volume).copied().unwrap_or(0)
    }

    /// The plan places allocation `index` of `group` on `node`: its writes
    /// count for the rest of the evaluation.
    pub(crate) fn propose_host_volumes(
        &self,
        ctx: &mut PlanContext,
        group: &GroupSpec,
        index: u32,
        node: NodeId,
    ) {
        for (volume, request) in self.dynamic_host_uses(group, index, node) {
            if !request.read_only {
                *ctx.host_writers.entry(volume).or_default() += 1;
            }
        }
    }
}
