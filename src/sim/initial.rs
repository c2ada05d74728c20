//! The cluster as it is at time 0 (`initial_allocations`, what `plansim
//! import nomad` writes for a live cluster). A running allocation holds its
//! claims, granted and published, from the start, as the server and the
//! node plugin record them for an allocation that is already running; a
//! pending one was placed and has yet to pull and claim; a failed one
//! failed before 0s and awaits its reschedule. None counts as `placed` (no
//! plan of this run created it).

use crate::model::access::{ClaimMode, permits};
use crate::model::ids::{AllocId, GroupRef, NodeId, VolumeId};
use crate::model::ports::{PortAsk, dynamic_count, static_ports};
use crate::model::scenario::{Capability, InitialAllocation, InitialStatus};
use crate::model::time::Millis;
use crate::sim::server::scheduler::plan::ResolvedVolume;
use crate::sim::simulation::{Event, Simulation};
use crate::sim::state::alloc_parts::{MaybeScore, MaybeSeq, MaybeStamp, Stamp, VolumeClaims};
use crate::sim::state::store::*;
use crate::sim::trace::{TraceKind, TraceRecord};

impl Simulation<'_> {
    /// The volumes an initial allocation mounts and the capability each is
    /// claimed in (the loader refuses a missing per_alloc volume).
    fn initial_volumes(
        &self,
        group: GroupRef,
        index: u32,
    ) -> (Vec<(VolumeId, ClaimMode)>, Vec<Capability>) {
        self.resolve_volumes(group, index)
            .into_iter()
            .filter_map(|v| match v {
                ResolvedVolume::Found(volume, mode, claim) => Some(((volume, mode), claim)),
                ResolvedVolume::Missing(_) => None,
            })
            .unzip()
    }

    /// An initial allocation holds its static ports as asked, colliding or
    /// not (Nomad's state holds what the clients run), and the lowest free
    /// dynamic ports (none if the range is full).
    fn hold_initial_ports(&mut self, id: AllocId, node: NodeId, ports: &[PortAsk]) {
        if ports.is_empty() {
            return;
        }
        let reserved = &self.scenario.nodes[node.index()].reserved_ports;
        let mut held: Vec<u16> = static_ports(ports).map(|(_, p)| p).collect();
        let dynamic = self
            .ports
            .in_use(node, reserved)
            .lowest_dynamic(&held, dynamic_count(ports))
            .unwrap_or_default();
        held.extend(dynamic);
        self.ports.hold(node, id, &held, reserved);
    }

    pub(crate) fn seed_initial_allocations(&mut self) {
        for initial in &self.scenario.initial_allocations {
            if initial.status == InitialStatus::Failed {
                self.seed_failed_allocation(initial);
                continue;
            }
            let running = initial.status == InitialStatus::Running;
            let id = AllocId::from_index(self.allocs.len());
            let (group, index, node) = (initial.group, initial.index, initial.node);
            let (volumes, claim_modes) = self.initial_volumes(group, index);
            let spec = &self.scenario.jobs[group.job.index()].groups[group.group_index()];
            let reserved = self.reserves(spec);
            self.node_table.take(node, reserved);
            self.hold_initial_ports(id, node, &spec.ports);
            let node_state = &mut self.nodes[node.index()];
            node_state.allocs.insert(id);
            for &(volume, _) in &volumes {
                count_up(&mut node_state.alloc_volumes, volume);
            }
            // As a committed placement: the node's max_volumes count.
            for volume in self.counted_sources(group) {
                count_up(&mut self.nodes[node.index()].counted_volumes, volume);
            }
            self.live.insert(id, group, node);
            let slot = self.slot_key(group, index, node);
            self.jobs[group.job.index()].latest[group.group_index()].insert(slot, id);
            let state = if running {
                for (&(volume, mode), &claim) in volumes.iter().zip(&claim_modes) {
                    self.hold_initial_claim(id, group.job, node, volume, mode, claim);
                }
                self.jobs[group.job.index()].running[group.group_index()] += 1;
                if let Some(run_for) = spec.run_for {
                    self.at(run_for, Event::TaskComplete(id));
                }
                AllocState::Running
            } else {
                for (&(volume, mode), &claim) in volumes.iter().zip(&claim_modes) {
                    let state = &mut self.volumes[volume.index()];
                    state.reserved.insert(id, mode);
                    state.reserved_counts.add(mode);
                    count_up(&mut state.reserved_caps, claim);
                }
                self.at(self.scenario.cluster.pull_delay, Event::AllocPulled(id));
                AllocState::Pulling
            };
            let next_volume = if running { volumes.len() } else { 0 };
            self.mounts_placed += volumes.len();
            self.allocs.push(initial_alloc(
                initial,
                state,
                VolumeClaims::boxed(volumes, claim_modes, next_volume),
                running.then_some(Millis::ZERO).into(),
            ));
            self.note_host_writers(id);
            self.arm_run_deadline(id);
            if running {
                // Running before the run began: its checks have passed,
                // and its host volumes are mounted, whatever a plugin
                // would have refused (a cluster's state is taken as it is;
                // one the node lacks is left unmounted).
                let _ = self.mount_host_volumes(id, false);
                self.on_alloc_healthy(id);
            }
            let kind = if running {
                TraceKind::Running
            } else {
                TraceKind::Placed
            };
            self.record(|t| {
                TraceRecord::new(t, kind)
                    .alloc(group, index)
                    .node(node)
                    .detail("initial allocation")
            });
        }
    }

    /// An allocation whose task failed before the run began (client status
    /// failed, desired status run, not yet rescheduled: no
    /// `NextAllocation`), failed at 0s with an empty reschedule tracker.
    /// It holds no resources (a terminal client status, `AllocsFit`) and
    /// no claim: the client's unpublish and the volume watcher released it
    /// before the run began (`volumewatcher` `volumeReapImpl` frees the
    /// claims of terminal allocations). With desired status run its group's
    /// sources still count against the node's `max_volumes`
    /// (`CSIVolumesByNodeID`). The first evaluation of its job sees it as
    /// any failed allocation (`filterByRescheduleable`,
    /// `updateByReschedulable`): due at 0s + the policy's delay.
    fn seed_failed_allocation(&mut self, initial: &InitialAllocation) {
        let id = AllocId::from_index(self.allocs.len());
        let (group, index, node) = (initial.group, initial.index, initial.node);
        let (volumes, claim_modes) = self.initial_volumes(group, index);
        for volume in self.counted_sources(group) {
            count_up(&mut self.nodes[node.index()].counted_volumes, volume);
        }
        let slot = self.slot_key(group, index, node);
        self.jobs[group.job.index()].latest[group.group_index()].insert(slot, id);
        let mut alloc = initial_alloc(
            initial,
            AllocState::Failed,
            VolumeClaims::boxed(volumes, claim_modes, 0),
            MaybeStamp::NONE,
        );
        alloc.set_failed_at(Millis::ZERO);
        self.allocs.push(alloc);
        self.record(|t| {
            TraceRecord::new(t, TraceKind::Failed)
                .alloc(group, index)
                .id(id)
                .node(node)
                .detail("initial allocation")
        });
    }

    /// A claim granted and published before time 0. A volume that already
    /// breaks its access mode is in violation from 0s (counted in
    /// `violation_seconds`, not in `violations`, which counts grants this
    /// run made).
    pub(crate) fn hold_initial_claim(
        &mut self,
        id: AllocId,
        job: crate::model::ids::JobId,
        node: crate::model::ids::NodeId,
        volume: VolumeId,
        mode: ClaimMode,
        claim: Capability,
    ) {
        let state = &mut self.volumes[volume.index()];
        // The first claim sets the volume's mode (setModesFromClaim).
        let access_mode = state.claimed_mode.get_or_insert(claim).access_mode;
        state.ledger.insert(
            id,
            Claim {
                mode,
                node,
                job,
                state: ClaimState::Taken,
                published: true,
            },
        );
        state.ledger_counts.add(mode);
        if mode == ClaimMode::Write {
            count_up(&mut state.writers_by_job, job);
        }
        state.published_counts.add(mode);
        if !permits(access_mode, state.published_counts) && state.violating_since.is_none() {
            state.violating_since = Some(Millis::ZERO);
        }
        let node_state = &mut self.nodes[node.index()];
        count_up(&mut node_state.claimed_volumes, volume);
        count_up(&mut node_state.published_volumes, volume);
    }
}

/// An allocation that exists at time 0, of version 0, placed at 0s.
fn initial_alloc(
    initial: &InitialAllocation,
    state: AllocState,
    claims: Option<Box<VolumeClaims>>,
    running_since: MaybeStamp,
) -> Alloc {
    Alloc {
        group: initial.group,
        index: initial.index,
        node: initial.node,
        state,
        claims,
        tracker: None,
        migrate: false,
        healthy_at: MaybeStamp::NONE,
        version: 0,
        placed_at: Stamp::ZERO,
        deployment: MaybeSeq::NONE,
        deploy_health: None,
        score: MaybeScore::NONE,
        running_since,
    }
}
