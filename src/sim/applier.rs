//! The plan applier: the single, serial place where plans become state.
//! Like Nomad's, it re-checks each node's part of a plan against the current
//! state (the worker planned against an older snapshot) and commits the
//! nodes that still fit, rejecting the rest. Under plan-aware it re-checks
//! volume claims too, so concurrent workers cannot double-claim.

use std::collections::BTreeMap;

use super::feasibility::{FilterReason, plan_aware_claim_check};
use super::scheduler::{Placement, Plan};
use super::state::{
    Alloc, AllocState, MaybeScore, MaybeSeq, MaybeStamp, RescheduleTracker, Stamp, count_up,
};
use super::trace::{TraceKind, TraceRecord};
use super::{Event, Simulation};
use crate::model::access::ClaimCounts;
use crate::model::ids::{AllocId, NodeId, VolumeId};

impl Simulation<'_> {
    /// Applies a plan; returns whether every part of it was committed.
    pub(super) fn apply_plan(&mut self, plan: Plan) -> bool {
        if plan.is_empty() {
            return true;
        }
        self.metrics.plans += 1;
        for &alloc in &plan.stops {
            if self.allocs[alloc.index()].is_live() {
                self.finish_alloc(alloc, AllocState::Stopped, "stopped by the scheduler");
            }
        }
        // Node plans in the order their first placement appears.
        let mut by_node: Vec<(NodeId, Vec<Placement>)> = Vec::new();
        for placement in plan.placements {
            let slot = &mut self.node_slot[placement.node.index()];
            if *slot == u32::MAX {
                *slot = by_node.len() as u32;
                by_node.push((placement.node, vec![placement]));
            } else {
                by_node[*slot as usize].1.push(placement);
            }
        }
        for (node, _) in &by_node {
            self.node_slot[node.index()] = u32::MAX;
        }
        let mut accepted_claims: BTreeMap<VolumeId, ClaimCounts> = BTreeMap::new();
        let mut fully_applied = true;
        for (node, placements) in by_node {
            if let Err(reason) = self.node_plan_fits(node, &placements, &accepted_claims) {
                fully_applied = false;
                self.metrics.plan_rejections += 1;
                let seen = placements
                    .iter()
                    .filter_map(|p| p.seen.as_deref().cloned())
                    .collect();
                self.record(|t| {
                    TraceRecord::new(t, TraceKind::PlanRejected)
                        .job(plan.job)
                        .node(node)
                        .detail(reason)
                        .seen(seen)
                });
                continue;
            }
            for placement in placements {
                for &(volume, mode) in placement.volumes() {
                    accepted_claims.entry(volume).or_default().add(mode);
                }
                self.commit_placement(placement);
            }
        }
        fully_applied
    }

    fn node_plan_fits(
        &self,
        node: NodeId,
        placements: &[Placement],
        accepted_claims: &BTreeMap<VolumeId, ClaimCounts>,
    ) -> Result<(), String> {
        let state = &self.nodes[node.index()];
        let spec = &self.scenario.nodes[node.index()];
        if !state.schedulable() {
            return Err(format!("node {} is not ready or is draining", spec.name));
        }
        let (mut cpu, mut memory) = (state.used_cpu, state.used_memory);
        for placement in placements {
            let group = &self.scenario.jobs[placement.group.job.index()]
                .groups_of(placement.version)[placement.group.group_index()];
            cpu += group.cpu;
            memory += group.memory;
        }
        if cpu > spec.cpu || memory > spec.memory {
            return Err(format!("allocations no longer fit on node {}", spec.name));
        }
        if self.policy.plan_aware_claims() {
            let mut mine: BTreeMap<VolumeId, ClaimCounts> = BTreeMap::new();
            for placement in placements {
                for (i, &(volume, mode)) in placement.volumes().iter().enumerate() {
                    let held = self.volumes[volume.index()]
                        .plan_aware_counts()
                        .plus(accepted_claims.get(&volume).copied().unwrap_or_default())
                        .plus(mine.get(&volume).copied().unwrap_or_default());
                    let claim = placement.claim_modes()[i];
                    let pinned = self.volumes[volume.index()].pinned_mode();
                    if pinned.is_some_and(|p| p != claim) {
                        return Err(FilterReason::CsiModeConflict(volume).describe(self.scenario));
                    }
                    plan_aware_claim_check(volume, claim.access_mode, held, mode)
                        .map_err(|reason| reason.describe(self.scenario))?;
                    mine.entry(volume).or_default().add(mode);
                }
            }
            self.attach_limits_hold(node, placements)?;
        }
        Ok(())
    }

    /// Plan-aware: the node's plugins can attach every volume this node plan
    /// adds to those already attached or promised there.
    fn attach_limits_hold(&self, node: NodeId, placements: &[Placement]) -> Result<(), String> {
        let state = &self.nodes[node.index()];
        let spec = &self.scenario.nodes[node.index()];
        let mut attached = state.held_or_promised_volumes();
        attached.extend(
            placements
                .iter()
                .flat_map(|p| p.volumes().iter().map(|&(v, _)| v)),
        );
        for plugin in spec.csi_plugins.iter().filter(|p| p.max_volumes > 0) {
            let count = self.count_of_plugin(attached.iter(), plugin.plugin);
            if count > plugin.max_volumes as usize {
                return Err(FilterReason::CsiPluginMaxVolumes {
                    plugin: plugin.plugin,
                    node,
                }
                .describe(self.scenario));
            }
        }
        Ok(())
    }

    fn commit_placement(&mut self, mut placement: Placement) {
        let now = self.now();
        let seen = placement.seen.take().map(|s| vec![*s]).unwrap_or_default();
        let id = AllocId::from_index(self.allocs.len());
        let group_spec = &self.scenario.jobs[placement.group.job.index()]
            .groups_of(placement.version)[placement.group.group_index()];
        let tracker = match placement.previous {
            Some(previous) if placement.reschedule => {
                // The replaced allocation is finished: its tracker moves to
                // the replacement (never copied), trimmed to Nomad's window.
                let old = &mut self.allocs[previous.index()];
                let old_node = old.node;
                let old_tracker = old.tracker_mut();
                let failed_at = old_tracker.failed_at;
                let mut history = std::mem::take(&mut old_tracker.history);
                let mut penalty_nodes = std::mem::take(&mut old_tracker.penalty_nodes);
                let delay =
                    super::reschedule::next_delay(&group_spec.reschedule, &history, failed_at);
                let keep = super::reschedule::tracker_window(&group_spec.reschedule, &history, now);
                history.drain(..history.len() - keep);
                penalty_nodes.drain(..penalty_nodes.len() - keep);
                history.push((now, delay));
                penalty_nodes.push(old_node);
                Some(Box::new(RescheduleTracker {
                    history,
                    penalty_nodes,
                    ..Default::default()
                }))
            }
            _ => None,
        };
        // The `reschedules` metric counts replacements of failures; an
        // unknown allocation (disconnected client) is replaced the same way
        // but has not failed.
        let replaces_unknown = placement
            .previous
            .is_some_and(|p| self.allocs[p.index()].state == AllocState::Unknown);
        if placement.reschedule && !replaces_unknown {
            self.metrics.reschedules += 1;
        }
        let node = &mut self.nodes[placement.node.index()];
        node.used_cpu += group_spec.cpu;
        node.used_memory += group_spec.memory;
        node.allocs.insert(id);
        self.live.insert(id, placement.group, placement.node);
        for &(volume, _) in placement.volumes() {
            count_up(&mut node.alloc_volumes, volume);
        }
        for volume in self.counted_sources(placement.group) {
            count_up(
                &mut self.nodes[placement.node.index()].counted_volumes,
                volume,
            );
        }
        for (&(volume, mode), &claim) in placement.volumes().iter().zip(placement.claim_modes()) {
            let state = &mut self.volumes[volume.index()];
            state.reserved.insert(id, mode);
            state.reserved_counts.add(mode);
            count_up(&mut state.reserved_caps, claim);
        }
        let slot = self.slot_key(placement.group, placement.index, placement.node);
        let job = &mut self.jobs[placement.group.job.index()];
        if placement.canary {
            // A canary runs beside the slot's allocation until promoted.
            job.canaries.push(id);
        } else {
            job.latest[placement.group.group_index()].insert(slot, id);
        }
        self.metrics.placed += 1;
        let detail = match placement.previous {
            _ if placement.canary => format!("canary of version {}", placement.version),
            Some(previous) if placement.reschedule => {
                format!("reschedule of alloc #{}", previous.0)
            }
            Some(previous) if placement.destructive => {
                format!(
                    "updates alloc #{} to version {}",
                    previous.0, placement.version
                )
            }
            Some(previous) => format!("replaces alloc #{}", previous.0),
            None => String::new(),
        };
        let (group, index, node_id) = (placement.group, placement.index, placement.node);
        self.record(|t| {
            TraceRecord::new(t, TraceKind::Placed)
                .alloc(group, index)
                .node(node_id)
                .detail(detail)
                .seen(seen)
        });
        self.mounts_placed += placement.volumes().len();
        self.allocs.push(Alloc {
            group: placement.group,
            index: placement.index,
            node: placement.node,
            state: AllocState::Pulling,
            claims: placement.claims,
            tracker,
            migrate: false,
            healthy_at: MaybeStamp::NONE,
            version: placement.version,
            placed_at: Stamp::new(now),
            deployment: MaybeSeq::NONE,
            deploy_health: None,
            score: MaybeScore::some(placement.score),
            running_since: MaybeStamp::NONE,
        });
        self.watch_deployment_alloc(id);
        self.after(self.scenario.cluster.pull_delay, Event::AllocPulled(id));
    }
}
