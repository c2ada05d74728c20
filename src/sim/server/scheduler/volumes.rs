use std::collections::BTreeMap;

use crate::model::access::ClaimMode;
use crate::model::ids::{GroupRef, NodeId, VolumeId};
use crate::model::release::{MissingVolumes, TopologyMatch};
use crate::model::scenario::{Capability, VolumeSource};
use crate::sim::server::claims::{write_claims_exhausted, write_schedulable};
use crate::sim::server::scheduler::context::PlanContext;
use crate::sim::server::scheduler::feasibility::{FilterReason, plan_aware_claim_check};
use crate::sim::server::scheduler::plan::ResolvedVolume;
use crate::sim::simulation::Simulation;
impl Simulation<'_> {
    /// The volumes allocation `index` of `group` mounts, with the modes it
    /// claims them in. Two requests for the same volume make one claim, a
    /// write claim if either request writes.
    pub(crate) fn resolve_volumes(&self, group: GroupRef, index: u32) -> Vec<ResolvedVolume> {
        let job = &self.scenario.jobs[group.job.index()];
        let spec = &job.groups[group.group_index()];
        let mut resolved: Vec<ResolvedVolume> = Vec::with_capacity(spec.volumes.len());
        for request in &spec.volumes {
            let found = |id: VolumeId| {
                let volume = &self.scenario.volumes[id.index()];
                let (access_mode, attachment_mode) = request.modes_on(volume);
                // Registration refuses a request without an access mode; a
                // per_alloc volume it could not see falls back to its first
                // capability.
                let access_mode = access_mode.unwrap_or(volume.capabilities[0].access_mode);
                let claim = Capability {
                    access_mode,
                    attachment_mode,
                };
                ResolvedVolume::Found(id, request.mode, claim)
            };
            // A volume whose `register_at` has not come is not in the state
            // store yet: missing, as one never registered; so is one in
            // another namespace (CSIVolumeChecker looks the source up with
            // `CSIVolumeByID(ws, c.namespace, id)`, the job's namespace).
            let registered = |id: VolumeId| {
                !self.unregistered.contains(&id)
                    && self.scenario.volumes[id.index()].namespace == job.namespace
            };
            let volume = match &request.source {
                VolumeSource::Shared(id) if registered(*id) => found(*id),
                VolumeSource::Shared(id) => {
                    ResolvedVolume::Missing(self.scenario.volumes[id.index()].name.clone())
                }
                VolumeSource::PerAlloc { base } => {
                    let name = format!("{base}[{index}]");
                    match self.scenario.volume_by_name.get(&name) {
                        Some(&id) if registered(id) => found(id),
                        _ => ResolvedVolume::Missing(name),
                    }
                }
                VolumeSource::Missing { name } => ResolvedVolume::Missing(name.clone()),
            };
            let duplicate = resolved.iter_mut().find_map(|seen| match (seen, &volume) {
                (ResolvedVolume::Found(a, mode, _), ResolvedVolume::Found(b, _, _)) if a == b => {
                    Some(mode)
                }
                _ => None,
            });
            match (duplicate, &volume) {
                (Some(mode), ResolvedVolume::Found(_, requested, _)) => {
                    *mode = (*mode).max(*requested)
                }
                _ => resolved.push(volume),
            }
        }
        resolved
    }

    /// The volumes Nomad's CSIVolumesByNodeID finds for an allocation of
    /// `group`: each request's source looked up by name as written. A
    /// `per_alloc` source is its base name, which names no volume (unless
    /// one is called that), so per_alloc volumes go uncounted.
    pub(crate) fn counted_sources(&self, group: GroupRef) -> Vec<VolumeId> {
        let spec = &self.scenario.jobs[group.job.index()].groups[group.group_index()];
        let mut found: Vec<VolumeId> = spec
            .volumes
            .iter()
            .filter_map(|request| match &request.source {
                VolumeSource::Shared(id) => Some(*id),
                VolumeSource::PerAlloc { base } => self.scenario.volume_by_name.get(base).copied(),
                VolumeSource::Missing { .. } => None,
            })
            .collect();
        found.sort_unstable();
        found.dedup();
        found
    }

    /// The CSI volume checker for every request of the allocation. 2.0.5
    /// reports every missing volume at once; 1.2.6 the first it meets, in
    /// its own words.
    ///
    /// Inlined for its first line, as most groups mount no volume (see
    /// `score_node`).
    #[inline(always)]
    pub(crate) fn check_volumes(
        &self,
        ctx: &PlanContext,
        node: NodeId,
        volumes: &[ResolvedVolume],
    ) -> Result<(), FilterReason> {
        if volumes.is_empty() {
            return Ok(());
        }
        self.check_mounted_volumes(ctx, node, volumes)
    }

    /// [`Self::check_volumes`] for a group that mounts volumes.
    pub(crate) fn check_mounted_volumes(
        &self,
        ctx: &PlanContext,
        node: NodeId,
        volumes: &[ResolvedVolume],
    ) -> Result<(), FilterReason> {
        let missing: Vec<&str> = volumes
            .iter()
            .filter_map(|v| match v {
                ResolvedVolume::Missing(name) => Some(name.as_str()),
                ResolvedVolume::Found(..) => None,
            })
            .collect();
        if !missing.is_empty() {
            return Err(match self.behaviour.release.missing_volumes {
                MissingVolumes::First => {
                    FilterReason::CsiVolumeMissingLegacy(missing[0].to_string())
                }
                MissingVolumes::All => FilterReason::CsiVolumeMissing(missing.join(", ")),
            });
        }
        for (checked, volume) in volumes.iter().enumerate() {
            if let ResolvedVolume::Found(id, _, _) = volume {
                self.check_volume(ctx, node, checked, *id, &volumes[..checked])?;
            }
        }
        Ok(())
    }

    /// Nomad's CSI volume checker, in its order, with the claim check the
    /// policy prescribes.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn check_volume(
        &self,
        ctx: &PlanContext,
        node: NodeId,
        index: usize,
        volume: VolumeId,
        earlier: &[ResolvedVolume],
    ) -> Result<(), FilterReason> {
        let volume_spec = &self.scenario.volumes[volume.index()];
        let node_spec = &self.scenario.nodes[node.index()];
        let node_state = &self.nodes[node.index()];
        let plugin = volume_spec.plugin;
        let Some(slot) = node_spec.plugin_slot(plugin) else {
            return Err(FilterReason::CsiPluginMissing { plugin, node });
        };
        if !node_state.plugin_present[slot] {
            return Err(FilterReason::CsiPluginMissing { plugin, node });
        }
        if !node_state.plugin_healthy[slot] {
            return Err(FilterReason::CsiPluginUnhealthy { plugin, node });
        }
        let max_volumes = node_spec.csi_plugins[slot].max_volumes;
        if max_volumes > 0
            && !self.attach_slot_free(ctx, node, volume, earlier, max_volumes as usize)
        {
            return Err(FilterReason::CsiPluginMaxVolumes { plugin, node });
        }
        if self.behaviour.release.checks_topology
            && !volume_spec.topologies.is_empty()
            && !topology_matches(
                self.behaviour.release.topology_match,
                &node_spec.topology,
                &volume_spec.topologies,
            )
        {
            return Err(FilterReason::CsiTopology);
        }
        // What follows depends on the volume and the plan, not the node:
        // decided once per placement (`volume_verdicts`).
        ctx.volume_verdicts[index].clone()
    }

    /// Decides `volume_verdicts` for the placement about to be scored: the
    /// plan and the volumes do not change while its nodes are scored.
    pub(crate) fn prepare_volume_verdicts(
        &self,
        ctx: &mut PlanContext,
        group: GroupRef,
        volumes: &[ResolvedVolume],
    ) {
        let mut verdicts = std::mem::take(&mut ctx.volume_verdicts);
        verdicts.clear();
        verdicts.extend(volumes.iter().map(|v| match v {
            ResolvedVolume::Found(id, mode, claim) => {
                self.volume_verdict(ctx, group, *id, *mode, *claim)
            }
            // Never asked for: a missing volume fails every node first.
            ResolvedVolume::Missing(_) => Ok(()),
        }));
        ctx.volume_verdicts = verdicts;
    }

    /// The checks of a volume request that do not depend on the node, in
    /// Nomad's order (they follow the node's plugin and topology checks):
    /// what `check_volume` answers for every node that passes those.
    pub(crate) fn volume_verdict(
        &self,
        ctx: &PlanContext,
        group: GroupRef,
        volume: VolumeId,
        mode: ClaimMode,
        claim: Capability,
    ) -> Result<(), FilterReason> {
        let volume_spec = &self.scenario.volumes[volume.index()];
        let plugin = volume_spec.plugin;
        // A volume whose plugin needs a controller and has no healthy one
        // is not Schedulable: ReadSchedulable and WriteSchedulable fail.
        if self.controller_missing(plugin) {
            return Err(match mode {
                ClaimMode::Read => FilterReason::CsiNoReaderClaims(volume),
                ClaimMode::Write => FilterReason::CsiReadOnly(volume),
            });
        }
        let state = &self.volumes[volume.index()];
        if mode == ClaimMode::Write && !write_schedulable(state.claimed_mode, volume_spec) {
            return Err(FilterReason::CsiReadOnly(volume));
        }
        if self.behaviour.plan_aware_claims {
            // Every user of a volume claims in one mode, so whichever claims
            // first, the mode the checks assumed is the mode the volume gets.
            let pinned = state.pinned_mode().or(ctx.modes.get(&volume).copied());
            if pinned.is_some_and(|p| p != claim) {
                return Err(FilterReason::CsiModeConflict(volume));
            }
            let proposed = ctx.claims.get(&volume).copied().unwrap_or_default();
            return plan_aware_claim_check(
                volume,
                claim.access_mode,
                state.plan_aware_counts().plus(proposed),
                mode,
            );
        }
        // Nomad's own check (the same at both releases): readers only need a
        // schedulable volume; a writer, once the write claims are used up,
        // is refused only beside writers of another job.
        if mode == ClaimMode::Write
            && write_claims_exhausted(state.claimed_mode, state.ledger_counts)
            && state.other_job_writes(group.job)
        {
            return Err(FilterReason::CsiNoWriterClaims(volume));
        }
        Ok(())
    }

    /// Whether `node` can take `volume` under its plugin's `max_volumes`.
    /// Nomad counts the volumes CSIVolumesByNodeID finds there (see
    /// `NodeState::counted_volumes`) and refuses at the limit, even for a
    /// volume already attached. Plan-aware counts every volume that is or
    /// will be attached (claimed, mounted by live allocations, proposed by
    /// the plan, and this allocation's own earlier volumes) and refuses only
    /// if `volume` would push the node past the limit.
    pub(crate) fn attach_slot_free(
        &self,
        ctx: &PlanContext,
        node: NodeId,
        volume: VolumeId,
        earlier: &[ResolvedVolume],
        max_volumes: usize,
    ) -> bool {
        let plugin = self.scenario.volumes[volume.index()].plugin;
        let state = &self.nodes[node.index()];
        if !self.behaviour.plan_aware_claims {
            return self.count_of_plugin(state.counted_volumes.keys(), plugin) < max_volumes;
        }
        let mut attached = state.held_or_promised_volumes();
        attached.extend(ctx.node_volumes.get(&node).into_iter().flatten().copied());
        attached.extend(earlier.iter().filter_map(|v| match v {
            ResolvedVolume::Found(id, _, _) => Some(*id),
            ResolvedVolume::Missing(_) => None,
        }));
        attached.insert(volume);
        self.count_of_plugin(attached.iter(), plugin) <= max_volumes
    }
}

/// Nomad's `CSITopology.MatchFound` (nomad/structs/node.go): whether the
/// node plugin's accessible topology matches one of the volume's. A node
/// without topology segments is a plugin that reports none (nil), which
/// matches nothing. Up to 1.9.3 a match is `Equal` (the same segments);
/// from 1.9.4 (#24522) `Contains`: the node has each of the volume
/// topology's segments with the same value, and may have more.
pub(crate) fn topology_matches(
    rule: TopologyMatch,
    node: &BTreeMap<String, String>,
    volume: &[BTreeMap<String, String>],
) -> bool {
    if node.is_empty() {
        return false;
    }
    match rule {
        TopologyMatch::Equal => volume.iter().any(|t| t == node),
        TopologyMatch::Contains => volume
            .iter()
            .any(|t| t.iter().all(|(k, v)| node.get(k) == Some(v))),
    }
}
