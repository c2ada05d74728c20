//! Publishes that fail at the storage provider: a plugin's
//! `controller_publish_failure` / `node_publish_failure` probabilities and
//! scripted `publish_failure` events, and what each release does with them.
//!
//! A ControllerPublish is made by the server inside the claim RPC
//! (`nomad/csi_endpoint.go:CSIVolume.Claim` -> `controllerPublishVolume` ->
//! `client/csi_endpoint.go:ControllerAttachVolume` on a client running the
//! controller). A provider failure is modelled as the gRPC code
//! FailedPrecondition, what attach-style providers answer while the volume is
//! still attached elsewhere (the CSI spec's ControllerPublishVolume errors;
//! the EBS and Hetzner logs in Nomad's #17756 and #12118).
//! `plugins/csi/client.go:ControllerPublishVolume` words it
//! "volume ... is already published on another node and does not have
//! MULTI_NODE volume capability". From #12387 (1.2.7, 1.3.0) the server
//! writes the claim first and returns a FailedPrecondition as
//! `ErrCSIClientRPCRetryable`, which the client's `csi_hook.go:claimWithRetry`
//! retries; 1.2.6 publishes before writing the claim, and its
//! `claimVolumesFromAlloc` fails the allocation at the first error.
//!
//! A NodePublish (NodeStage + NodePublish, `client/pluginmanager/csimanager/
//! volume.go:MountVolume`) that fails fails the allocation's prerun at every
//! release (`csi_hook.go` `Prerun` / `mountVolumes` has no retry; gRPC's own
//! three quick retries of Unavailable and ResourceExhausted are inside one
//! call). Its Postrun then unpublishes the claim like any stop.

use crate::model::ids::{AllocId, VolumeId};
use crate::model::scenario::PublishStage;
use crate::sim::simulation::Simulation;
use crate::sim::state::store::AllocState;
use crate::sim::trace::{TraceKind, TraceRecord};

/// Why a claim's ControllerPublish failed.
pub(crate) enum ControllerFailure {
    /// No (healthy) controller to send it to: the claim RPC's error.
    Missing(String),
    /// The storage provider refused it (FailedPrecondition).
    Provider,
}

impl Simulation<'_> {
    /// A `publish_failure` event: the next `count` publishes of `volume` at
    /// `stage` fail.
    pub(crate) fn script_publish_failures(
        &mut self,
        volume: VolumeId,
        stage: PublishStage,
        count: u32,
    ) {
        let pending = self.volumes[volume.index()].failures_pending.of_mut(stage);
        *pending = pending.saturating_add(count);
    }

    /// Whether this publish of `volume` at `stage` fails at the provider: a
    /// scripted failure first, else one draw from the publish stream when
    /// the plugin's probability is above 0 (none otherwise, so runs without
    /// such plugins see the same numbers as before).
    pub(crate) fn provider_fails(&mut self, volume: VolumeId, stage: PublishStage) -> bool {
        let pending = self.volumes[volume.index()].failures_pending.of_mut(stage);
        if *pending > 0 {
            *pending -= 1;
            return true;
        }
        let plugin = &self.scenario.plugins[self.scenario.volumes[volume.index()].plugin.index()];
        let p = match stage {
            PublishStage::Controller => plugin.controller_publish_failure,
            PublishStage::Node => plugin.node_publish_failure,
        };
        p > 0.0 && self.publish_rng.chance(p)
    }

    /// The server's ControllerPublish of a new claim: a plugin without a
    /// controller makes none; a missing controller fails the claim RPC
    /// (`controller_publish`); else the provider may refuse it.
    pub(crate) fn controller_publish_attempt(
        &mut self,
        volume: VolumeId,
    ) -> Result<(), ControllerFailure> {
        self.controller_publish(volume)
            .map_err(ControllerFailure::Missing)?;
        let plugin = self.scenario.volumes[volume.index()].plugin;
        if self.scenario.plugins[plugin.index()].controller_required
            && self.provider_fails(volume, PublishStage::Controller)
        {
            return Err(ControllerFailure::Provider);
        }
        Ok(())
    }

    /// The claim RPC's error for a provider's refusal, as the client
    /// reports it after "could not claim volume X: ". 1.2.6 wraps the
    /// client RPC's error as "attach volume: ..."; from #12387 a
    /// FailedPrecondition is prefixed with `ErrCSIClientRPCRetryable`.
    pub(crate) fn provider_refusal(&self, volume: VolumeId) -> String {
        let wrap = if self.behaviour.release.controller_precondition_retryable {
            "CSI client error (retryable)"
        } else {
            "attach volume"
        };
        format!(
            "controller publish: {wrap}: CSI.ControllerAttachVolume: volume \"{}\" is already published on another node and does not have MULTI_NODE volume capability: rpc error: code = FailedPrecondition desc = the storage provider refused the attachment",
            self.scenario.volumes[volume.index()].name
        )
    }

    /// Records a provider's failure of `stage` for the allocation's volume.
    pub(crate) fn record_publish_failure(
        &mut self,
        id: AllocId,
        volume: VolumeId,
        stage: PublishStage,
        outcome: &str,
    ) {
        let alloc = &self.allocs[id.index()];
        let (group, index, node) = (alloc.group, alloc.index, alloc.node);
        let detail = format!("{}: {outcome}", stage.name());
        self.record(|t| {
            TraceRecord::new(t, TraceKind::PublishFailure)
                .alloc(group, index)
                .node(node)
                .volume(volume)
                .detail(detail)
        });
    }

    /// The client's NodePublish failed at the provider: the allocation's
    /// prerun fails (no retry at any release) and its claim is released as
    /// on any stop (`csi_hook.go:Postrun`).
    pub(crate) fn node_publish_failed(&mut self, id: AllocId, volume: VolumeId) {
        let name = &self.scenario.volumes[volume.index()].name;
        let detail = format!(
            "failed to mount volume {name}: rpc error: code = Internal desc = NodePublishVolume failed at the storage provider"
        );
        self.record_publish_failure(id, volume, PublishStage::Node, "the allocation fails");
        self.finish_alloc(id, AllocState::Failed, &detail);
    }
}
