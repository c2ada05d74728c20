//! The client side of an allocation's life: pull, claim each volume from the
//! server, have the plugin publish it, run, stop; and the asynchronous claim
//! release that follows (node detach, then controller detach).

use crate::model::access::{ClaimMode, permits};
use crate::model::ids::{AllocId, GroupRef, JobId, NodeId, VolumeId};
use crate::model::scenario::{Capability, PublishStage};
use crate::model::time::Millis;
use crate::sim::client::publish_failures::ControllerFailure;
use crate::sim::server::claims::{ClaimError, server_check};
use crate::sim::simulation::{Event, Simulation};
use crate::sim::state::alloc_parts::MaybeStamp;
use crate::sim::state::store::{AllocState, Claim, ClaimState, NodeStatus, count_down, count_up};
use crate::sim::trace::{TraceKind, TraceRecord};

/// Where an allocation is in claiming and publishing its volumes.
#[derive(Clone, Copy)]
struct VolumeStep {
    volume: VolumeId,
    mode: ClaimMode,
    claim: Capability,
    group: GroupRef,
    index: u32,
    node: NodeId,
}

/// A 2.0.5 client retries a retryable claim refusal with a backoff that
/// starts at 1s and doubles *before* each wait (so 2s, 4s, ...), at most 1m
/// apart (csi_hook.go claimWithRetry).
const CLAIM_RETRY_FIRST: Millis = Millis::from_secs(1);
const CLAIM_RETRY_MAX: Millis = Millis::from_secs(60);

/// Why the node unpublish of a past claim fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DetachRefusal {
    /// The node plugin is stopped or restarting there.
    PluginDown,
    /// The servers cannot reach the client (down and not yet collected, or
    /// disconnected).
    NoPath,
}

/// The backoff after `backoff`: doubled, at most `CLAIM_RETRY_MAX`.
fn next_backoff(backoff: Millis) -> Millis {
    backoff.saturating_mul(2).min(CLAIM_RETRY_MAX)
}

impl Simulation<'_> {
    pub(crate) fn alloc_pulled(&mut self, id: AllocId) {
        if self.allocs[id.index()].state != AllocState::Pulling || self.stall_if_disconnected(id) {
            return;
        }
        if self.allocs[id.index()].volumes().is_empty() {
            self.start_tasks(id);
        } else {
            self.begin_claiming(id);
            self.claim_attempt(id);
        }
    }

    pub(crate) fn begin_claiming(&mut self, id: AllocId) {
        let deadline = self.now() + self.scenario.cluster.claim_retry_deadline;
        let alloc = &mut self.allocs[id.index()];
        alloc.state = AllocState::Claiming;
        let claims = alloc.claims_mut();
        claims.claim_backoff = CLAIM_RETRY_FIRST;
        claims.claim_deadline = deadline;
    }

    /// The volume an allocation is claiming or publishing, if it is still in
    /// `phase` (an event for a phase the allocation has left is stale).
    fn volume_step(&self, id: AllocId, phase: AllocState) -> Option<VolumeStep> {
        let alloc = &self.allocs[id.index()];
        (alloc.state == phase).then(|| {
            let claims = alloc
                .claims
                .as_deref()
                .expect("a claiming allocation has volumes");
            let (volume, mode) = claims.volumes[claims.next_volume];
            VolumeStep {
                volume,
                mode,
                claim: claims.claim_modes[claims.next_volume],
                group: alloc.group,
                index: alloc.index,
                node: alloc.node,
            }
        })
    }

    /// A claim refused, by the server or by the plugin.
    fn claim_refused(&mut self, step: &VolumeStep, detail: &str) {
        self.metrics.claim_failures += 1;
        let step = *step;
        self.record(|t| {
            TraceRecord::new(t, TraceKind::ClaimRejected)
                .alloc(step.group, step.index)
                .node(step.node)
                .volume(step.volume)
                .detail(detail)
        });
    }

    /// The client asks the server to claim its next volume.
    pub(crate) fn claim_attempt(&mut self, id: AllocId) {
        let Some(step) = self.volume_step(id, AllocState::Claiming) else {
            return;
        };
        if self.stall_if_disconnected(id) {
            return;
        }
        let VolumeStep {
            volume,
            mode,
            claim,
            group,
            ..
        } = step;
        let release = self.behaviour.release;
        let volume_name = &self.scenario.volumes[volume.index()].name;
        let claims = self.allocs[id.index()].claims_mut();
        if self.queue.now() >= claims.claim_deadline {
            // The retry's context expired while it waited: the last refusal stands.
            let reason = claims
                .retry_error
                .take()
                .unwrap_or_else(|| ClaimError::MaxClaims.message(release).to_string());
            let failure = format!("could not claim volume {volume_name}: {reason}");
            self.finish_alloc(id, AllocState::Failed, &failure);
            return;
        }
        if self.volumes[volume.index()].ledger.contains_key(&id) {
            // A retry after a failed ControllerPublish: the claim is written,
            // and claimRead / claimWrite return at once for an allocation
            // that holds it, so the server goes straight to the publish.
            self.allocs[id.index()].state = AllocState::Publishing;
            self.publish_written_claim(id, volume);
            return;
        }
        match self.server_claim_check(volume, mode, claim, group.job) {
            Ok(()) => self.grant_claim(id, volume, mode, claim),
            Err(error) => {
                let reason = error.message(release);
                let failure = format!("could not claim volume {volume_name}: {reason}");
                self.claim_refused(&step, reason);
                if !release.client_retries_claims || !error.retryable() {
                    // 1.2.6 clients never retry; 2.0.5 clients retry only
                    // the errors isRetryableClaimRPCError names.
                    self.finish_alloc(id, AllocState::Failed, &failure);
                    return;
                }
                self.retry_claim(id, None);
            }
        }
    }

    /// The client waits out its backoff and retries the claim RPC
    /// (claimWithRetry). `reason`: the refusal to report if the deadline
    /// passes first (`None`: "volume max claims reached").
    fn retry_claim(&mut self, id: AllocId, reason: Option<String>) {
        let now = self.now();
        let claims = self.allocs[id.index()].claims_mut();
        claims.retry_error = reason;
        claims.claim_backoff = next_backoff(claims.claim_backoff);
        let retry_at = (now + claims.claim_backoff).min(claims.claim_deadline);
        self.at(retry_at, Event::ClaimAttempt(id));
    }

    /// The server's claim check at the policy's Nomad release.
    pub(crate) fn server_claim_check(
        &self,
        volume: VolumeId,
        mode: ClaimMode,
        claim: Capability,
        job: JobId,
    ) -> Result<(), ClaimError> {
        let state = &self.volumes[volume.index()];
        server_check(
            self.behaviour.release.server_claim_check,
            &self.scenario.volumes[volume.index()],
            state.claimed_mode,
            state.ledger_counts,
            mode,
            claim,
            state.other_job_writes(job),
        )
    }

    /// The server grants a claim: it writes the claim and makes the
    /// controller publish it, in the release's order
    /// (`claim_written_before_controller_publish`); then the node publishes.
    pub(crate) fn grant_claim(
        &mut self,
        id: AllocId,
        volume: VolumeId,
        mode: ClaimMode,
        claim: Capability,
    ) {
        if self
            .behaviour
            .release
            .claim_written_before_controller_publish
        {
            self.write_claim(id, volume, mode, claim);
            self.publish_written_claim(id, volume);
            return;
        }
        // controllerPublishVolume runs before the claim's raft apply: a
        // failure writes no claim.
        if let Err(failure) = self.controller_publish_attempt(volume) {
            self.controller_publish_failed(id, volume, failure);
            return;
        }
        self.write_claim(id, volume, mode, claim);
        self.node_publish_after_latency(id, volume);
    }

    /// A claim already written is published by the controller, then the node.
    fn publish_written_claim(&mut self, id: AllocId, volume: VolumeId) {
        match self.controller_publish_attempt(volume) {
            Ok(()) => self.node_publish_after_latency(id, volume),
            Err(failure) => self.controller_publish_failed(id, volume, failure),
        }
    }

    /// The claim RPC failed in its ControllerPublish: a FailedPrecondition
    /// from the provider is retried where the release retries it (the
    /// written claim stays); anything else fails the allocation, which
    /// releases a written claim as on any stop.
    fn controller_publish_failed(
        &mut self,
        id: AllocId,
        volume: VolumeId,
        failure: ControllerFailure,
    ) {
        let phase = self.allocs[id.index()].state;
        let step = self
            .volume_step(id, phase)
            .expect("the allocation is claiming a volume");
        let release = self.behaviour.release;
        let reason = match failure {
            ControllerFailure::Missing(reason) => {
                self.claim_refused(&step, &reason);
                reason
            }
            ControllerFailure::Provider => {
                self.metrics.claim_failures += 1;
                let reason = self.provider_refusal(volume);
                let written = self.volumes[volume.index()].ledger.contains_key(&id);
                let retried =
                    release.controller_precondition_retryable && release.client_retries_claims;
                let outcome = if retried {
                    let backoff = next_backoff(self.allocs[id.index()].claims_mut().claim_backoff);
                    format!("the claim stays written; the client retries in {backoff}s")
                } else if written {
                    "the claim stays written; the allocation fails".to_string()
                } else {
                    "no claim is written; the allocation fails".to_string()
                };
                self.record_publish_failure(id, volume, PublishStage::Controller, &outcome);
                if retried {
                    self.allocs[id.index()].state = AllocState::Claiming;
                    self.retry_claim(id, Some(reason));
                    return;
                }
                reason
            }
        };
        let volume_name = &self.scenario.volumes[volume.index()].name;
        let failure = format!("could not claim volume {volume_name}: {reason}");
        self.finish_alloc(id, AllocState::Failed, &failure);
    }

    /// The server writes the claim (the state store's CSIVolumeClaim).
    fn write_claim(&mut self, id: AllocId, volume: VolumeId, mode: ClaimMode, claim: Capability) {
        let now = self.now();
        let alloc = &mut self.allocs[id.index()];
        alloc.state = AllocState::Publishing;
        let (group, index, node) = (alloc.group, alloc.index, alloc.node);
        let state = &mut self.volumes[volume.index()];
        // The first claim sets the volume's mode (setModesFromClaim).
        state.claimed_mode.get_or_insert(claim);
        state.modified_at = now;
        if state.reserved.remove(&id).is_some() {
            state.reserved_counts.remove(mode);
            count_down(&mut state.reserved_caps, claim);
        }
        state.ledger.insert(
            id,
            Claim {
                mode,
                node,
                job: group.job,
                state: ClaimState::Taken,
                published: false,
            },
        );
        state.ledger_counts.add(mode);
        if mode == ClaimMode::Write {
            count_up(&mut state.writers_by_job, group.job);
        }
        count_up(&mut self.nodes[node.index()].claimed_volumes, volume);
        self.record(|t| {
            TraceRecord::new(t, TraceKind::ClaimGranted)
                .alloc(group, index)
                .id(id)
                .node(node)
                .volume(volume)
                .detail(mode.name())
        });
    }

    /// The controller published the claim: the node publishes it after the
    /// plugin's latencies.
    fn node_publish_after_latency(&mut self, id: AllocId, volume: VolumeId) {
        let plugin = &self.scenario.plugins[self.scenario.volumes[volume.index()].plugin.index()];
        let latency = if plugin.controller_required {
            plugin.controller_publish_latency + plugin.publish_latency
        } else {
            plugin.publish_latency
        };
        self.after(latency, Event::PublishDone(id));
    }

    /// The node plugin finished publishing: an enforcing plugin refuses a
    /// publish that breaks the access mode; a toy plugin grants it.
    pub(crate) fn publish_done(&mut self, id: AllocId) {
        let Some(step) = self.volume_step(id, AllocState::Publishing) else {
            return;
        };
        let VolumeStep {
            volume,
            mode,
            group,
            index,
            node,
            ..
        } = step;
        // The client mounts through its node plugin, which must be there.
        if let Some(problem) = self.node_plugin_problem(node, volume) {
            let detail = format!("failed to mount volume: {problem}");
            self.finish_alloc(id, AllocState::Failed, &detail);
            return;
        }
        if self.provider_fails(volume, PublishStage::Node) {
            self.node_publish_failed(id, volume);
            return;
        }
        let volume_spec = &self.scenario.volumes[volume.index()];
        let plugin = &self.scenario.plugins[volume_spec.plugin.index()];
        let state = &self.volumes[volume.index()];
        let access_mode = state
            .claimed_mode
            .expect("a volume being published is claimed")
            .access_mode;
        let mut after = state.published_counts;
        after.add(mode);
        let legal = permits(access_mode, after);
        if plugin.enforces_access_mode {
            let refusal = if let Some(attached) = self.over_attach_limit(node, volume) {
                Some(format!(
                    "plugin {} refused to publish: client {} already has {attached} of its volumes attached (max_volumes)",
                    plugin.name,
                    self.node_name(node)
                ))
            } else if !legal {
                Some(format!(
                    "plugin {} refused to publish: {} volume {} is already published ({} readers, {} writers)",
                    plugin.name,
                    access_mode,
                    volume_spec.name,
                    state.published_counts.readers,
                    state.published_counts.writers
                ))
            } else {
                None
            };
            if let Some(detail) = refusal {
                self.claim_refused(&step, &detail);
                self.finish_alloc(id, AllocState::Failed, &detail);
                return;
            }
        }
        count_up(&mut self.nodes[node.index()].published_volumes, volume);
        let state = &mut self.volumes[volume.index()];
        state.published_counts = after;
        state
            .ledger
            .get_mut(&id)
            .expect("a publishing allocation holds its claim")
            .published = true;
        if !legal {
            self.metrics.violations += 1;
            if state.violating_since.is_none() {
                state.violating_since = Some(self.queue.now());
            }
            let detail = format!(
                "{} volume {} published to {} readers and {} writers",
                access_mode, volume_spec.name, after.readers, after.writers
            );
            self.record(|t| {
                TraceRecord::new(t, TraceKind::Violation)
                    .alloc(group, index)
                    .node(node)
                    .volume(volume)
                    .detail(detail)
            });
        }
        let claims = self.allocs[id.index()].claims_mut();
        claims.next_volume += 1;
        if claims.next_volume < claims.volumes.len() {
            self.begin_claiming(id);
            self.claim_attempt(id);
        } else {
            self.start_tasks(id);
        }
    }

    /// An enforcing plugin attaches at most `max_volumes` distinct volumes
    /// per node: `Some(attached)` when publishing `volume` would exceed it.
    pub(crate) fn over_attach_limit(&self, node: NodeId, volume: VolumeId) -> Option<usize> {
        let plugin = self.scenario.volumes[volume.index()].plugin;
        let spec = self.scenario.nodes[node.index()]
            .csi_plugins
            .iter()
            .find(|p| p.plugin == plugin)?;
        let published = &self.nodes[node.index()].published_volumes;
        if spec.max_volumes == 0 || published.contains_key(&volume) {
            return None;
        }
        let attached = self.count_of_plugin(published.keys(), plugin);
        (attached >= spec.max_volumes as usize).then_some(attached)
    }

    /// The claims are in place: the host volume hook mounts the host
    /// volumes, then the tasks start.
    fn start_tasks(&mut self, id: AllocId) {
        if let Err(detail) = self.mount_host_volumes(id, true) {
            self.finish_alloc(id, AllocState::Failed, &detail);
            return;
        }
        self.start_running(id);
    }

    pub(crate) fn start_running(&mut self, id: AllocId) {
        let now = self.now();
        let alloc = &mut self.allocs[id.index()];
        alloc.state = AllocState::Running;
        alloc.running_since = MaybeStamp::some(now);
        let (group, index, node) = (alloc.group, alloc.index, alloc.node);
        self.jobs[group.job.index()].running[group.group_index()] += 1;
        self.record(|t| {
            TraceRecord::new(t, TraceKind::Running)
                .alloc(group, index)
                .node(node)
        });
        self.refresh_group(group);
        self.begin_health(id);
        let version = self.allocs[id.index()].version;
        let run_for =
            self.scenario.jobs[group.job.index()].groups_of(version)[group.group_index()].run_for;
        if let Some(run_for) = run_for {
            self.after(run_for, Event::TaskComplete(id));
        }
        self.drain_watch();
    }

    pub(crate) fn task_complete(&mut self, id: AllocId) {
        if self.allocs[id.index()].state == AllocState::Running && !self.stall_if_disconnected(id) {
            self.finish_alloc(id, AllocState::Complete, "all tasks completed");
        }
    }

    /// Moves a live allocation to a terminal state: frees its resources,
    /// drops its unclaimed reservations and starts releasing its claims.
    pub(crate) fn finish_alloc(&mut self, id: AllocId, terminal: AllocState, detail: &str) {
        // A stop the client carries out on running tasks: it kills them
        // (shutdown delays, kill timeouts, poststop tasks) before its CSI
        // hook's Postrun releases the claims.
        let alloc = &self.allocs[id.index()];
        let stopping = if terminal == AllocState::Stopped && alloc.state == AllocState::Running {
            let (group, release) = (alloc.group, self.behaviour.release);
            self.scenario.jobs[group.job.index()].groups_of(alloc.version)[group.group_index()]
                .stop_time(release.kills_sidecars_last, release.max_kill_timeout)
        } else {
            Millis::ZERO
        };
        self.end_alloc(id, terminal, detail, stopping);
    }

    /// [`Simulation::finish_alloc`] with the time its client takes to stop
    /// the tasks given (`stopping`; 0s: they are gone at once): the claims
    /// are released, and the client's report unblocks the node's class,
    /// that long after. The servers free the CPU and memory at once
    /// (AllocsFit skips desired-stop and client-terminal allocations).
    pub(crate) fn end_alloc(
        &mut self,
        id: AllocId,
        terminal: AllocState,
        detail: &str,
        stopping: Millis,
    ) {
        assert!(
            terminal.is_terminal(),
            "finish_alloc needs a terminal state"
        );
        let now = self.now();
        let alloc = &mut self.allocs[id.index()];
        assert!(alloc.is_live(), "alloc #{} finished twice", id.0);
        let was_running = alloc.state == AllocState::Running;
        let was_healthy = alloc.healthy_at.is_some();
        alloc.state = terminal;
        self.on_alloc_unhealthy(id);
        let alloc = &mut self.allocs[id.index()];
        if matches!(terminal, AllocState::Failed | AllocState::Lost) {
            // When it failed, or was lost (what stop_after_client_disconnect
            // delays a replacement from).
            alloc.set_failed_at(now);
        }
        let (group, index, node) = (alloc.group, alloc.index, alloc.node);
        let volumes = alloc.volumes().to_vec();
        let claim_modes = alloc.claim_modes().to_vec();
        let job = &mut self.jobs[group.job.index()];
        if was_running {
            job.running[group.group_index()] -= 1;
        }
        if terminal == AllocState::Complete {
            job.complete[group.group_index()] += 1;
        }
        let version = self.allocs[id.index()].version;
        let group_spec =
            &self.scenario.jobs[group.job.index()].groups_of(version)[group.group_index()];
        let reserved = self.reserves(group_spec);
        self.node_table.release(node, reserved);
        if !group_spec.ports.is_empty() {
            let reserved = &self.scenario.nodes[node.index()].reserved_ports;
            self.ports.release(node, id, reserved);
        }
        let node_state = &mut self.nodes[node.index()];
        assert!(node_state.allocs.remove(&id), "a live alloc is on its node");
        self.live.remove(id, group);
        for &(volume, _) in &volumes {
            count_down(&mut node_state.alloc_volumes, volume);
        }
        self.unmount_host_volumes(id);
        if matches!(terminal, AllocState::Lost | AllocState::Stopped) {
            // Desired status stop: CSIVolumesByNodeID stops counting it. A
            // failed or completed allocation keeps desired status run.
            for volume in self.counted_sources(group) {
                count_down(&mut self.nodes[node.index()].counted_volumes, volume);
            }
        }
        for ((volume, mode), claim) in volumes.into_iter().zip(claim_modes) {
            let state = &mut self.volumes[volume.index()];
            if state.reserved.remove(&id).is_some() {
                state.reserved_counts.remove(mode);
                count_down(&mut state.reserved_caps, claim);
            }
            if state.ledger.contains_key(&id) && stopping == Millis::ZERO {
                self.begin_release(id, volume);
            }
        }
        let kind = match terminal {
            AllocState::Failed => {
                self.metrics.client_failures += 1;
                TraceKind::Failed
            }
            AllocState::Complete => TraceKind::Complete,
            AllocState::Lost => TraceKind::Lost,
            _ => TraceKind::Stopped,
        };
        let detail: std::borrow::Cow<'_, str> = if stopping > Millis::ZERO {
            format!("{detail}; its client stops its tasks in {stopping}s").into()
        } else {
            detail.into()
        };
        self.record(|t| {
            TraceRecord::new(t, kind)
                .alloc(group, index)
                .id(id)
                .node(node)
                .detail(detail.as_ref())
        });
        self.refresh_group(group);
        if was_healthy {
            self.plugin_alloc_unhealthy(id);
        }
        if terminal == AllocState::Failed {
            // A deployment's allocation that fails before it is healthy is
            // unhealthy (allochealth).
            self.deploy_alloc_unhealthy(id);
        }
        if terminal == AllocState::Failed && self.failure_evaluated(id) {
            self.enqueue_eval(group.job);
        }
        if stopping > Millis::ZERO {
            self.after(stopping, Event::TasksKilled(id));
        } else if terminal != AllocState::Lost {
            // fsm.go applyAllocClientUpdate unblocks the node's class when
            // the client reports an allocation complete or failed (a stopped
            // one is reported complete once its task is killed). A lost
            // allocation is marked by the servers (node down, plan), not
            // reported by its client: nothing is unblocked.
            self.unblock_class(node);
        }
        self.drain_watch();
    }

    /// The client has stopped every task of the stopped allocation `id`
    /// (`alloc_runner.go:killTasks`, then the poststop tasks), or of one
    /// past its `max_run_duration` (`max_run_duration.rs`): its CSI hook's
    /// Postrun releases the claims (`csi_hook.go:Postrun`), and the client
    /// reports the allocation complete, which unblocks the node's class
    /// (`fsm.go:applyAllocClientUpdate`).
    pub(crate) fn tasks_killed(&mut self, id: AllocId) {
        let node = self.allocs[id.index()].node;
        let volumes: Vec<VolumeId> = self.allocs[id.index()]
            .volumes()
            .iter()
            .map(|&(volume, _)| volume)
            .collect();
        for volume in volumes {
            if self.volumes[volume.index()].ledger.contains_key(&id) {
                self.begin_release(id, volume);
            }
        }
        self.unblock_class(node);
    }

    /// Whether the servers evaluate the job when the client reports `id`
    /// failed (node_endpoint.go `UpdateAlloc`, v1.2.6 and v2.0.5): only if
    /// its reschedule policy leaves it an attempt now
    /// (`Allocation.RescheduleEligible`) and it has no follow-up
    /// evaluation yet. A system job has no reschedule policy: its failed
    /// allocation waits for the job's next evaluation.
    fn failure_evaluated(&self, id: AllocId) -> bool {
        let alloc = &self.allocs[id.index()];
        let job = &self.scenario.jobs[alloc.group.job.index()];
        !job.is_system()
            && alloc.followup_at().is_none()
            && crate::sim::server::reschedule::attempts_left(
                &job.groups[alloc.group.group_index()].reschedule,
                alloc.reschedule_history(),
                self.now(),
            )
    }

    /// Claims are released asynchronously. A live client unpublishes its
    /// volumes when the allocation stops (csi_hook Postrun). A down node's
    /// claims wait for the server: nothing touches the volume, so the volume
    /// watcher does not look at it until the claim GC does (see `claim_gc`).
    pub(crate) fn begin_release(&mut self, id: AllocId, volume: VolumeId) {
        let node = self.volumes[volume.index()].ledger[&id].node;
        if self.client_reachable(node) {
            self.begin_node_detach(id, volume);
        } else {
            self.await_claim_gc(id, volume);
        }
    }

    /// The client starts unmounting through its node plugin: if the plugin
    /// jobs' allocations that provided it there have stopped, the unmount
    /// fails at once and the claim waits for the claim GC to retry it;
    /// an unmount that began completes (plugin_drain.rs).
    pub(crate) fn begin_node_detach(&mut self, id: AllocId, volume: VolumeId) {
        if self.node_plugin_stopped(id, volume) {
            self.await_claim_gc(id, volume);
        } else {
            let latency = self.scenario.cluster.node_detach_latency;
            self.after(latency, Event::NodeDetach(id, volume));
        }
    }

    pub(crate) fn node_detach(&mut self, id: AllocId, volume: VolumeId) {
        let claim = &self.volumes[volume.index()].ledger[&id];
        if !self.client_reachable(claim.node) {
            // The node went down, or its client lost the servers, before
            // it could unpublish.
            self.await_claim_gc(id, volume);
            return;
        }
        self.detach(id, volume, ClaimState::NodeDetached);
        let controller = self.scenario.cluster.controller_detach_latency;
        self.after(controller, Event::ControllerDetach(id, volume));
    }

    /// A claim of a stopped allocation on a down node waits for the next
    /// claim GC pass (the periodic `csi_volume_claim_gc_interval` job).
    pub(crate) fn await_claim_gc(&mut self, id: AllocId, volume: VolumeId) {
        self.awaiting_claim_gc.insert((volume, id));
        if !self.claim_gc_scheduled {
            self.claim_gc_scheduled = true;
            let interval = self.scenario.cluster.csi_volume_claim_gc_interval;
            // The leader's ticker fires at whole multiples of the interval.
            let next = Millis((self.now().0 / interval.0 + 1) * interval.0);
            self.at(next, Event::ClaimGc);
        }
    }

    /// A down node came back: its client stops the allocations it should
    /// no longer run and unpublishes their volumes, as on any stop.
    pub(crate) fn node_back_up(&mut self, node: NodeId) {
        let waiting: Vec<(VolumeId, AllocId)> = self
            .awaiting_claim_gc
            .iter()
            .copied()
            .filter(|(volume, id)| self.volumes[volume.index()].ledger[id].node == node)
            .collect();
        for (volume, id) in waiting {
            self.awaiting_claim_gc.remove(&(volume, id));
            self.begin_node_detach(id, volume);
        }
    }

    /// The claim GC pass (core_sched.go csiVolumeClaimGC): every volume not
    /// modified within `csi_volume_claim_gc_threshold` that has claims of
    /// terminal allocations gets a GC claim, and the volume watcher releases
    /// them. The node detach of a claim on a down node is skipped from 1.3.4
    /// on; before, it fails ("No path to node") until the node GC has
    /// removed the node (`node_gc_threshold` after it went down, at the node
    /// GC's next `node_gc_interval` tick). A node that came back up detaches
    /// normally.
    pub(crate) fn claim_gc(&mut self) {
        self.claim_gc_scheduled = false;
        let now = self.now();
        let threshold = self.scenario.cluster.csi_volume_claim_gc_threshold;
        let release = self.behaviour.release;
        let waiting: Vec<(VolumeId, AllocId)> = self.awaiting_claim_gc.iter().copied().collect();
        for (volume, id) in waiting {
            let state = &self.volumes[volume.index()];
            if release.skips_down_node_detach && now - state.modified_at < threshold {
                continue;
            }
            if let Ok(step) = self.past_claim_detach(id, volume) {
                self.awaiting_claim_gc.remove(&(volume, id));
                self.after(self.detach_latency(&step), step);
            }
        }
        if !self.awaiting_claim_gc.is_empty() {
            self.claim_gc_scheduled = true;
            let interval = self.scenario.cluster.csi_volume_claim_gc_interval;
            self.after(interval, Event::ClaimGc);
        }
    }

    /// The first step of the server's release of the past claim `id` holds
    /// on `volume` (a claim GC pass, or `nomad volume detach`), or why its
    /// node unpublish fails, leaving the claim to the next pass. A client
    /// the servers reach unpublishes through its node plugin, which fails
    /// while that plugin is stopped or restarting there; one they cannot
    /// reach (disconnected, or within its grace period) cannot unpublish.
    /// A down node's unpublish is skipped from 1.3.4 on
    /// (`nodeUnpublishVolume`: "skipping node unpublish for down or GC'd
    /// node"); before, the client RPC fails ("No path to node") until the
    /// node GC has removed the node (`node_gc_threshold` after it went
    /// down, at the node GC's next `node_gc_interval` tick).
    pub(crate) fn past_claim_detach(
        &mut self,
        id: AllocId,
        volume: VolumeId,
    ) -> Result<Event, DetachRefusal> {
        let node = self.volumes[volume.index()].ledger[&id].node;
        if self.client_reachable(node) {
            if self.node_plugin_stopped(id, volume) {
                return Err(DetachRefusal::PluginDown);
            }
            return Ok(Event::NodeDetach(id, volume));
        }
        let state = &self.nodes[node.index()];
        if state.status == NodeStatus::Down {
            let cluster = &self.scenario.cluster;
            let interval = cluster.node_gc_interval.0;
            let eligible = state.down_since + cluster.node_gc_threshold;
            let collected = self.now().0 >= eligible.0.div_ceil(interval) * interval;
            if self.behaviour.release.skips_down_node_detach || collected {
                return Ok(Event::ControllerDetach(id, volume));
            }
        }
        Err(DetachRefusal::NoPath)
    }

    /// How long a detach step takes.
    pub(crate) fn detach_latency(&self, step: &Event) -> Millis {
        match step {
            Event::NodeDetach(..) => self.scenario.cluster.node_detach_latency,
            _ => self.scenario.cluster.controller_detach_latency,
        }
    }

    /// The volume watcher detached the volume from the node's controller:
    /// a volume a down node never unpublished is unpublished now.
    pub(crate) fn controller_detach(&mut self, id: AllocId, volume: VolumeId) {
        if !self.controller_can_detach(id, volume) {
            return;
        }
        self.detach(id, volume, ClaimState::ControllerDetached);
        self.after(
            self.scenario.cluster.claim_free_latency,
            Event::ClaimFreed(id, volume),
        );
    }

    /// Moves a claim being released to `state`, unpublishing the volume if
    /// it is still published.
    pub(crate) fn detach(&mut self, id: AllocId, volume: VolumeId, state: ClaimState) {
        let claim = self.volumes[volume.index()]
            .ledger
            .get_mut(&id)
            .expect("claim being released");
        claim.state = state;
        let (mode, node, was_published) =
            (claim.mode, claim.node, std::mem::take(&mut claim.published));
        // Each step is checkpointed on the volume.
        self.volumes[volume.index()].modified_at = self.queue.now();
        if was_published {
            self.unpublish(volume, mode, node);
        }
    }

    /// The claim is gone: the volume may be claimed again.
    pub(crate) fn claim_freed(&mut self, id: AllocId, volume: VolumeId) {
        let claim = self.volumes[volume.index()]
            .ledger
            .remove(&id)
            .expect("claim being released");
        assert_eq!(
            claim.state,
            ClaimState::ControllerDetached,
            "claims are freed after the controller detach"
        );
        assert!(!claim.published, "a freed claim is not published");
        let now = self.now();
        let state = &mut self.volumes[volume.index()];
        state.ledger_counts.remove(claim.mode);
        if claim.mode == ClaimMode::Write {
            count_down(&mut state.writers_by_job, claim.job);
        }
        state.modified_at = now;
        if state.ledger.is_empty() {
            // The last claim is gone: the volume's mode is unknown again.
            state.claimed_mode = None;
        }
        count_down(&mut self.nodes[claim.node.index()].claimed_volumes, volume);
        let alloc = &self.allocs[id.index()];
        let (group, index) = (alloc.group, alloc.index);
        self.record(|t| {
            TraceRecord::new(t, TraceKind::ClaimReleased)
                .alloc(group, index)
                .id(id)
                .node(claim.node)
                .volume(volume)
                .detail(claim.mode.name())
        });
        // Nomad unblocks evaluations on node updates and on allocations
        // reaching a terminal client status (fsm.go), never on a freed
        // claim: a job blocked on a claim waits for the next such event.
        // Re-evaluating on the claim's release is part of the proposed fix.
        if self.behaviour.plan_aware_claims {
            self.unblock();
        }
    }

    /// The client unmounts `volume` of its stopped allocation through its
    /// own node plugin, without the servers: published no more, the claim
    /// still held.
    pub(crate) fn unmount_locally(&mut self, id: AllocId, volume: VolumeId) {
        let Some(claim) = self.volumes[volume.index()].ledger.get_mut(&id) else {
            return;
        };
        if std::mem::take(&mut claim.published) {
            let (mode, node) = (claim.mode, claim.node);
            self.unpublish(volume, mode, node);
        }
    }

    pub(crate) fn unpublish(&mut self, volume: VolumeId, mode: ClaimMode, node: NodeId) {
        count_down(&mut self.nodes[node.index()].published_volumes, volume);
        let now = self.now();
        let state = &mut self.volumes[volume.index()];
        state.published_counts.remove(mode);
        let access_mode = state
            .claimed_mode
            .expect("a published volume is claimed")
            .access_mode;
        if let Some(since) = state.violating_since
            && permits(access_mode, state.published_counts)
        {
            state.violating_since = None;
            self.metrics.violation_time += now - since;
            self.record(|t| {
                TraceRecord::new(t, TraceKind::ViolationEnded)
                    .volume(volume)
                    .detail(format!("{}s in violation", now - since))
            });
        }
    }
}
