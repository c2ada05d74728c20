//! The plan applier: the single, serial place where plans become state.
//! Like Nomad's, it re-checks each node's part of a plan against the current
//! state (the worker planned against an older snapshot) and commits the
//! nodes that still fit, rejecting the rest. With the fix (`plan_aware_claims`) it re-checks
//! volume claims too, so concurrent workers cannot double-claim.

use std::collections::BTreeMap;

use crate::model::access::ClaimCounts;
use crate::model::ids::{AllocId, NodeId, VolumeId};
use crate::sim::server::reschedule;
use crate::sim::server::scheduler::feasibility::{FilterReason, plan_aware_claim_check};
use crate::sim::server::scheduler::hot;
use crate::sim::server::scheduler::plan::{Placement, PlacementKind, Plan};
use crate::sim::simulation::{Event, Simulation};
use crate::sim::state::alloc_parts::{MaybeScore, MaybeSeq, MaybeStamp, RescheduleTracker, Stamp};
use crate::sim::state::store::{Alloc, AllocState, count_up};
use crate::sim::trace::{TraceKind, TraceRecord};

impl Simulation<'_> {
    /// Applies a plan; returns whether every part of it was committed.
    pub(crate) fn apply_plan(&mut self, plan: Plan) -> bool {
        if plan.is_empty() {
            return true;
        }
        self.metrics.plans += 1;
        for &alloc in &plan.stops {
            if self.allocs[alloc.index()].is_live() {
                self.finish_alloc(alloc, AllocState::Stopped, "stopped by the scheduler");
            }
        }
        // Node plans in the order their first placement appears, each
        // node's placements in plan order: a stable sort by the node's
        // first appearance, needed only when a node appears twice (most
        // plans spread over distinct nodes and are already in order).
        let mut nodes: Vec<NodeId> = Vec::new();
        let mut slots: Vec<u32> = Vec::with_capacity(plan.placements.len());
        for placement in &plan.placements {
            let slot = &mut self.node_slot[placement.node.index()];
            if *slot == u32::MAX {
                *slot = nodes.len() as u32;
                nodes.push(placement.node);
            }
            slots.push(*slot);
        }
        for node in &nodes {
            self.node_slot[node.index()] = u32::MAX;
        }
        let mut run_lengths = vec![0usize; nodes.len()];
        for &slot in &slots {
            run_lengths[slot as usize] += 1;
        }
        let grouped: Vec<Placement> = if nodes.len() == slots.len() {
            plan.placements
        } else {
            // Sort (node, position) keys, not the placements themselves
            // (large records a merge sort would move many times); each key
            // is unique, so the order is the stable one.
            let mut keys: Vec<u64> = slots
                .iter()
                .enumerate()
                .map(|(i, &slot)| (u64::from(slot) << 32) | i as u64)
                .collect();
            keys.sort_unstable();
            let mut pending: Vec<Option<Placement>> =
                plan.placements.into_iter().map(Some).collect();
            keys.iter()
                .map(|&key| {
                    pending[key as u32 as usize]
                        .take()
                        .expect("each placement is taken once")
                })
                .collect()
        };
        let mut rest = grouped.into_iter();
        let mut accepted_claims: BTreeMap<VolumeId, ClaimCounts> = BTreeMap::new();
        let mut fully_applied = true;
        for (k, &run) in run_lengths.iter().enumerate() {
            let node = nodes[k];
            // On a large cluster each node's state is a cache miss: ask for
            // the state two node plans ahead, and for the end of the next
            // one's allocation list (its state has arrived by then).
            if let Some(&far) = nodes.get(k + 2) {
                hot::prefetch(&self.nodes, far.index());
                self.node_table.prefetch(far);
            }
            if let Some(&near) = nodes.get(k + 1) {
                self.nodes[near.index()].allocs.prefetch_end();
            }
            let placements = &rest.as_slice()[..run];
            let fits = self.node_plan_fits(node, placements, &mut accepted_claims);
            let ports = match fits {
                Ok(ports) => ports,
                Err(reason) => {
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
                    rest.nth(run - 1);
                    continue;
                }
            };
            for (i, placement) in rest.by_ref().take(run).enumerate() {
                let held = ports.get(i).map_or(&[][..], Vec::as_slice);
                self.commit_placement(placement, held);
            }
        }
        fully_applied
    }

    /// Whether `node`'s part of a plan still fits, given what the node plans
    /// accepted before it claim (`accepted_claims`, with the fix only: the
    /// node plan's own claims are added to it when it fits). When it fits,
    /// the ports each placement gets (none when no placement asks any).
    pub(crate) fn node_plan_fits(
        &self,
        node: NodeId,
        placements: &[Placement],
        accepted_claims: &mut BTreeMap<VolumeId, ClaimCounts>,
    ) -> Result<Vec<Vec<u16>>, String> {
        let spec = &self.scenario.nodes[node.index()];
        let (node_cpu, node_memory) = self.node_table.capacity(node);
        let (mut disk, node_disk) = self.node_table.disk(node);
        if !self.node_table.schedulable()[node.index()] {
            return Err(format!("node {} is not ready or is draining", spec.name));
        }
        let (mut cpu, mut memory) = self.node_table.used(node);
        for placement in placements {
            let group = &self.scenario.jobs[placement.group.job.index()]
                .groups_of(placement.version)[placement.group.group_index()];
            let reserved = self.reserves(group);
            cpu += reserved.cpu;
            memory += reserved.memory;
            disk += reserved.disk;
        }
        if cpu > node_cpu || memory > node_memory || disk > node_disk {
            return Err(format!("allocations no longer fit on node {}", spec.name));
        }
        // AllocsFit: the network index over the node's allocations and the
        // plan's, after the resources.
        let asks = placements.iter().map(|p| {
            &self.scenario.jobs[p.group.job.index()].groups_of(p.version)[p.group.group_index()]
                .ports[..]
        });
        let ports = if asks.clone().any(|a| !a.is_empty()) || self.ports.any_collision() {
            self.assign_node_ports(node, asks)?
        } else {
            Vec::new()
        };
        if self.behaviour.plan_aware_claims {
            self.host_writers_hold(placements)?;
            // Each claim is checked against the volume's claims, the
            // accepted node plans' and this node plan's earlier ones (added
            // to `accepted_claims` as they pass, taken back if the node plan
            // does not fit).
            let mut added = 0;
            let checked = self
                .node_plan_claims_hold(placements, accepted_claims, &mut added)
                .and_then(|()| self.attach_limits_hold(node, placements));
            if checked.is_err() {
                let claims = placements.iter().flat_map(|p| p.volumes().iter());
                for &(volume, mode) in claims.take(added) {
                    accepted_claims
                        .get_mut(&volume)
                        .expect("added above")
                        .remove(mode);
                }
            }
            checked?;
        }
        Ok(ports)
    }

    /// Plan-aware: no placement of the node plan asks a single-writer host
    /// volume in that mode while another allocation writes it, counting
    /// the writers committed and the node plan's earlier placements (a
    /// host volume lives on one node, so no other node plan can add one).
    fn host_writers_hold(&self, placements: &[Placement]) -> Result<(), String> {
        use crate::model::host_volume::HostAccessMode;
        let mut added: BTreeMap<crate::model::host_volume::HostVolumeId, u32> = BTreeMap::new();
        for placement in placements {
            let spec = &self.scenario.jobs[placement.group.job.index()]
                .groups_of(placement.version)[placement.group.group_index()];
            if spec.host_volumes.is_empty() {
                continue;
            }
            for (volume, request) in self.dynamic_host_uses(spec, placement.index, placement.node) {
                let writers = self.host_volume_table.writers[volume.index()].len() as u32
                    + added.get(&volume).copied().unwrap_or(0);
                if request.mode() == HostAccessMode::SingleNodeSingleWriter && writers > 0 {
                    return Err(FilterReason::HostVolumeWriter.describe(self.scenario));
                }
                if !request.read_only {
                    *added.entry(volume).or_default() += 1;
                }
            }
        }
        Ok(())
    }

    /// Plan-aware: every claim of the node plan passes the check against
    /// the claims held and accepted so far; each that passes is added to
    /// `accepted_claims` and counted in `added`.
    pub(crate) fn node_plan_claims_hold(
        &self,
        placements: &[Placement],
        accepted_claims: &mut BTreeMap<VolumeId, ClaimCounts>,
        added: &mut usize,
    ) -> Result<(), String> {
        for placement in placements {
            for (&(volume, mode), &claim) in placement.volumes().iter().zip(placement.claim_modes())
            {
                let state = &self.volumes[volume.index()];
                let accepted = accepted_claims.entry(volume).or_default();
                let held = state.plan_aware_counts().plus(*accepted);
                if state.pinned_mode().is_some_and(|p| p != claim) {
                    return Err(FilterReason::CsiModeConflict(volume).describe(self.scenario));
                }
                plan_aware_claim_check(volume, claim.access_mode, held, mode)
                    .map_err(|reason| reason.describe(self.scenario))?;
                accepted.add(mode);
                *added += 1;
            }
        }
        Ok(())
    }

    /// Plan-aware: the node's plugins can attach every volume this node plan
    /// adds to those already attached or promised there.
    pub(crate) fn attach_limits_hold(
        &self,
        node: NodeId,
        placements: &[Placement],
    ) -> Result<(), String> {
        if !self.node_table.limits_attachments(node) {
            // No plugin here has a `max_volumes`: nothing to count (and no
            // set of the node's volumes to build for every node plan).
            return Ok(());
        }
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

    /// Commits one placement; its allocation holds `ports` on its node.
    pub(crate) fn commit_placement(&mut self, mut placement: Placement, ports: &[u16]) {
        let now = self.now();
        let seen = placement.seen.take().map(|s| vec![*s]).unwrap_or_default();
        let id = AllocId::from_index(self.allocs.len());
        let group_spec = &self.scenario.jobs[placement.group.job.index()]
            .groups_of(placement.version)[placement.group.group_index()];
        let reserved = self.reserves(group_spec);
        let tracker = match placement.kind {
            PlacementKind::Reschedules(previous) => {
                // The replaced allocation is finished: its tracker moves to
                // the replacement (never copied), trimmed to Nomad's window.
                let old = &mut self.allocs[previous.index()];
                let old_node = old.node;
                let old_tracker = old.tracker_mut();
                let failed_at = old_tracker.failed_at;
                let mut history = std::mem::take(&mut old_tracker.history);
                let mut penalty_nodes = std::mem::take(&mut old_tracker.penalty_nodes);
                let delay = reschedule::next_delay(&group_spec.reschedule, &history, failed_at);
                let keep = reschedule::tracker_window(&group_spec.reschedule, &history, now);
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
            .kind
            .previous()
            .is_some_and(|p| self.allocs[p.index()].state == AllocState::Unknown);
        if matches!(placement.kind, PlacementKind::Reschedules(_)) && !replaces_unknown {
            self.metrics.reschedules += 1;
        }
        self.node_table.take(placement.node, reserved);
        if group_spec.host_volumes.iter().any(|r| r.sticky) {
            // The state store's upsert of a new allocation claims the
            // dynamic volumes of its sticky requests
            // (`updateStickyVolumeClaimsFromAlloc`, 1.10+).
            for (volume, request) in
                self.dynamic_host_uses(group_spec, placement.index, placement.node)
            {
                if request.sticky {
                    self.host_volume_table
                        .claim_sticky(placement.group, volume, id);
                }
            }
        }
        let node_spec = &self.scenario.nodes[placement.node.index()];
        self.ports
            .hold(placement.node, id, ports, &node_spec.reserved_ports);
        let node = &mut self.nodes[placement.node.index()];
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
        let rescheduled_canary = match placement.kind {
            PlacementKind::Reschedules(previous) => {
                job.canaries.iter().position(|&c| c == previous)
            }
            _ => None,
        };
        if placement.kind == PlacementKind::Canary {
            // A canary runs beside the slot's allocation until promoted.
            job.canaries.push(id);
        } else if let Some(at) = rescheduled_canary {
            // A failed canary's reschedule is a canary in its place
            // (computePlacements: `canary: IsCanary()`).
            job.canaries[at] = id;
        } else {
            job.latest[placement.group.group_index()].insert(slot, id);
        }
        self.metrics.placed += 1;
        let detail = match placement.kind {
            PlacementKind::Canary => format!("canary of version {}", placement.version),
            PlacementKind::Reschedules(previous) => {
                format!("reschedule of alloc #{}", previous.0)
            }
            PlacementKind::Updates(previous) => {
                format!(
                    "updates alloc #{} to version {}",
                    previous.0, placement.version
                )
            }
            PlacementKind::Replaces(previous) => format!("replaces alloc #{}", previous.0),
            PlacementKind::Fresh => String::new(),
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
        self.note_host_writers(id);
        self.after(self.scenario.cluster.pull_delay, Event::AllocPulled(id));
        self.arm_run_deadline(id);
    }
}
