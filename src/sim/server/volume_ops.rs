//! The operator's volume commands: `nomad volume detach` (the
//! `volume_detach` event; command/volume_detach.go ->
//! nomad/csi_endpoint.go `CSIVolume.Unpublish`) and a volume registered
//! after the start (`register_at`; `nomad volume register` ->
//! nomad/fsm.go `applyCSIVolumeRegister`).

use crate::model::ids::{AllocId, GroupRef, JobId, NodeId, VolumeId};
use crate::model::scenario::VolumeSource;
use crate::sim::client::DetachRefusal;
use crate::sim::simulation::{Event, Simulation};
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
        match self.past_claim_detach(stuck[0], volume) {
            Ok(step) => {
                let latency = self.detach_latency(&step);
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
            Err(refusal) => {
                // The command fails; the claims wait for the claim GC as before.
                let error = match refusal {
                    DetachRefusal::PluginDown => {
                        let plugin = self.scenario.volumes[volume.index()].plugin;
                        format!(
                            "CSI plugin {} is not running on client {}",
                            self.scenario.plugins[plugin.index()].name,
                            self.node_name(node)
                        )
                    }
                    DetachRefusal::NoPath => "rpc error: No path to node".to_string(),
                };
                let detail = format!("Error detaching volume: could not detach from node: {error}");
                self.record_detach(volume, node, detail);
            }
        }
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
                        VolumeSource::Missing { .. } => false,
                    })
            })
    }
}
