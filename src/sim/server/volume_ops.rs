//! The operator's volume commands: `nomad volume detach` (the
//! `volume_detach` event; command/volume_detach.go ->
//! nomad/csi_endpoint.go `CSIVolume.Unpublish`) and a volume registered
//! after the start (`register_at`; `nomad volume register` ->
//! nomad/fsm.go `applyCSIVolumeRegister`).

use crate::model::ids::{AllocId, GroupRef, JobId, NodeId, VolumeId};
use crate::model::scenario::VolumeSource;
use crate::sim::simulation::{Event, Simulation};
use crate::sim::state::store::NodeStatus;
use crate::sim::trace::{TraceKind, TraceRecord};

impl Simulation<'_> {
    /// `nomad volume detach <volume> <node>`: an Unpublish whose claim names
    /// the node and no allocation. Its node unpublish covers the volume's
    /// past claims on the node, those of terminal allocations
    /// (`nodeUnpublishVolume`); its controller unpublish is skipped while a
    /// live allocation on the node still claims the volume
    /// (`controllerUnpublishVolume`). A live allocation's claim is never
    /// released. plansim acts on the past claims that wait for the claim GC
    /// (a down or disconnected node, a stopped or restarting plugin): those
    /// the client or the volume watcher is already releasing go on as they
    /// are. Freeing a claim unblocks no evaluation at either release
    /// (fsm.go `applyCSIVolumeClaim` only writes the claim): a job blocked
    /// on the volume waits for a node update, as after any claim release.
    pub(crate) fn volume_detach(&mut self, volume: VolumeId, node: NodeId) {
        if self.unregistered.contains(&volume) {
            self.record_detach(volume, node, "no such volume".to_string());
            return;
        }
        let (mut past, mut live) = (Vec::new(), 0usize);
        for (&id, claim) in &self.volumes[volume.index()].ledger {
            if claim.node != node {
                continue;
            }
            if self.allocs[id.index()].state.is_terminal() {
                past.push(id);
            } else {
                live += 1;
            }
        }
        let kept = if live > 0 {
            format!("; {live} claim(s) of live allocations kept")
        } else {
            String::new()
        };
        let stuck: Vec<AllocId> = past
            .iter()
            .copied()
            .filter(|id| self.awaiting_claim_gc.contains(&(volume, *id)))
            .collect();
        if stuck.is_empty() {
            let detail = if past.is_empty() {
                format!("nothing to detach: no past claim on the node{kept}")
            } else {
                format!(
                    "nothing to detach: {} past claim(s) already being released{kept}",
                    past.len()
                )
            };
            self.record_detach(volume, node, detail);
            return;
        }
        match self.detach_step(volume, node, stuck[0]) {
            Ok(step) => {
                let latency = match step {
                    Event::NodeDetach(..) => self.scenario.cluster.node_detach_latency,
                    _ => self.scenario.cluster.controller_detach_latency,
                };
                for &id in &stuck {
                    self.awaiting_claim_gc.remove(&(volume, id));
                    let event = match step {
                        Event::NodeDetach(..) => Event::NodeDetach(id, volume),
                        _ => Event::ControllerDetach(id, volume),
                    };
                    self.after(latency, event);
                }
                let how = match step {
                    Event::NodeDetach(..) => "node unpublish",
                    _ => "node unpublish skipped (node down), controller unpublish",
                };
                let detail = format!("detaching {} past claim(s): {how}{kept}", stuck.len());
                self.record_detach(volume, node, detail);
            }
            Err(error) => {
                // The command fails; the claims wait for the claim GC as before.
                let detail = format!("Error detaching volume: could not detach from node: {error}");
                self.record_detach(volume, node, detail);
            }
        }
    }

    /// The first step of the detach of a past claim on `node`, or the error
    /// the node unpublish fails with. A client the servers reach unmounts
    /// through its node plugin. A down node's unpublish is skipped from
    /// 1.3.4 on (`nodeUnpublishVolume`: "skipping node unpublish for down
    /// or GC'd node"); before, the client RPC fails unless the node GC has
    /// removed the node (then `ErrUnknownNode` is ignored).
    fn detach_step(
        &mut self,
        volume: VolumeId,
        node: NodeId,
        id: AllocId,
    ) -> Result<Event, String> {
        let state = &self.nodes[node.index()];
        if self.client_reachable(node) {
            if self.node_plugin_stopped(id, volume) {
                let plugin = self.scenario.volumes[volume.index()].plugin;
                return Err(format!(
                    "CSI plugin {} is not running on client {}",
                    self.scenario.plugins[plugin.index()].name,
                    self.node_name(node)
                ));
            }
            return Ok(Event::NodeDetach(id, volume));
        }
        if state.status == NodeStatus::Down {
            let cluster = &self.scenario.cluster;
            let interval = cluster.node_gc_interval.0;
            let eligible = state.down_since + cluster.node_gc_threshold;
            let collected = self.now().0 >= eligible.0.div_ceil(interval) * interval;
            if self.behaviour.release.skips_down_node_detach || collected {
                return Ok(Event::ControllerDetach(id, volume));
            }
        }
        Err("rpc error: No path to node".to_string())
    }

    fn record_detach(&mut self, volume: VolumeId, node: NodeId, detail: String) {
        self.record(|t| {
            TraceRecord::new(t, TraceKind::VolumeDetach)
                .node(node)
                .volume(volume)
                .detail(detail)
        });
    }

    /// A volume with a `register_at` is registered. From #28275 (2.0.5)
    /// the FSM unblocks the evaluations whose `MissingNonNodeResources`
    /// name it (`BlockedEvals.UnblockNonNodeResources`), and one in flight
    /// is run again (its snapshot predates the registration, as
    /// `missedUnblock` sees). plansim takes an evaluation to have found the
    /// volume missing when its job is blocked with a failed group that
    /// mounts it. Before, a registration unblocks nothing.
    pub(crate) fn volume_registered(&mut self, volume: VolumeId) {
        self.unregistered.remove(&volume);
        let waiting: Vec<JobId> = (0..self.scenario.jobs.len())
            .map(JobId::from_index)
            .filter(|&job| self.missing_volume(job, volume))
            .collect();
        let unblocks = self.behaviour.release.unblocks_on_volume_register;
        let detail = match (unblocks, waiting.len()) {
            (_, 0) => "no evaluation waits for it".to_string(),
            (true, n) => format!("unblocks {n} evaluation(s) missing it"),
            (false, n) => {
                format!("{n} blocked evaluation(s) missing it stay blocked until a node update")
            }
        };
        self.record(|t| {
            TraceRecord::new(t, TraceKind::VolumeRegistered)
                .volume(volume)
                .detail(detail)
        });
        if unblocks {
            for job in waiting {
                self.blocked.remove(&job);
                self.enqueue_eval(job);
            }
        }
    }

    /// Whether `job`'s evaluation found `volume` missing: blocked (or being
    /// evaluated) with a group that failed to place and mounts it.
    fn missing_volume(&self, job: JobId, volume: VolumeId) -> bool {
        let state = &self.jobs[job.index()];
        if !self.blocked.contains(&job) && !state.eval_in_flight {
            return false;
        }
        let name = &self.scenario.volumes[volume.index()].name;
        let spec = &self.scenario.jobs[job.index()];
        spec.groups_of(state.version)
            .iter()
            .enumerate()
            .any(|(index, group)| {
                (state.eval_in_flight
                    || self
                        .placement_failures
                        .contains_key(&GroupRef::new(job, index)))
                    && group.volumes.iter().any(|request| match &request.source {
                        VolumeSource::Shared(id) => *id == volume,
                        VolumeSource::PerAlloc { base } => name
                            .strip_prefix(base.as_str())
                            .is_some_and(|rest| rest.starts_with('[')),
                    })
            })
    }
}
