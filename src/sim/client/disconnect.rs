//! Disconnected clients: a client that loses its servers stops heartbeating
//! and keeps running its allocations. After `heartbeat_grace` the server
//! marks the node down (1.2.6, or no allocation may wait: every allocation
//! lost) or, from 1.3, disconnected (allocations with `max_client_disconnect`
//! become unknown, are replaced by the reschedule policy and kept running;
//! past the window they are lost). A client with
//! `stop_after_client_disconnect` stops its allocations itself. Claims are
//! released only by a client the servers can reach, or through the claim GC
//! of a down node (nomad/heartbeat.go, node_endpoint.go UpdateStatus,
//! scheduler/reconciler, client/heartbeatstop.go, csi_endpoint.go).

use std::collections::BTreeSet;

use crate::model::ids::{AllocId, GroupRef, JobId, NodeId};
use crate::model::time::Millis;
use crate::sim::simulation::{Event, Simulation};
use crate::sim::state::store::{AllocState, JobStatus, NodeStatus};
use crate::sim::trace::{TraceKind, TraceRecord};

/// Nomad's `DefaultKillTimeout`: a lost allocation whose client stops it
/// itself is replaced this long after the client's stop (`WaitClientStop`).
const KILL_TIMEOUT: Millis = Millis::from_secs(5);

impl Simulation<'_> {
    /// A node's `disconnected_at` changes only here, so the count of
    /// disconnected nodes follows it.
    pub(crate) fn set_disconnected_at(&mut self, node: NodeId, at: Option<Millis>) {
        let was = std::mem::replace(&mut self.nodes[node.index()].disconnected_at, at);
        match (was.is_some(), at.is_some()) {
            (false, true) => self.disconnects.nodes += 1,
            (true, false) => self.disconnects.nodes -= 1,
            _ => {}
        }
    }

    /// Whether the servers can reach the node's client (it is up and
    /// heartbeating): only then do node-side claim steps (unpublish) run.
    pub(crate) fn client_reachable(&self, node: NodeId) -> bool {
        let state = &self.nodes[node.index()];
        state.status == NodeStatus::Ready && state.disconnected_at.is_none()
    }

    /// A client step that needs the servers waits while the client cannot
    /// reach them; returns whether it must wait.
    pub(crate) fn stall_if_disconnected(&mut self, alloc: AllocId) -> bool {
        // Most runs never disconnect a client: then no node's state is read
        // (on a large cluster, a cache miss per client step).
        if self.disconnects.nodes == 0 {
            return false;
        }
        let node = self.allocs[alloc.index()].node;
        let stalled = self.nodes[node.index()].disconnected_at.is_some();
        if stalled {
            self.disconnects.stalled.insert(alloc);
        }
        stalled
    }

    pub(crate) fn node_disconnect(&mut self, node: NodeId) {
        let state = &self.nodes[node.index()];
        if state.disconnected_at.is_some() || state.status != NodeStatus::Ready {
            self.record(|t| {
                TraceRecord::new(t, TraceKind::NodeDisconnect)
                    .node(node)
                    .detail("ignored: the node is not up and connected")
            });
            return;
        }
        let now = self.now();
        self.set_disconnected_at(node, Some(now));
        self.record(|t| TraceRecord::new(t, TraceKind::NodeDisconnect).node(node));
        let live = self.live_allocs_on(node);
        // The client's heartbeat-stop watcher (heartbeatstop.go): one check
        // per distinct duration among the allocations it runs.
        let stops: BTreeSet<Millis> = live
            .iter()
            .filter_map(|id| {
                self.group_disconnect(self.allocs[id.index()].group)
                    .stop_after_client_disconnect
            })
            .collect();
        for after in stops {
            self.at(now + after, Event::ClientHeartbeatStop(node, now));
        }
        self.disconnects.client_allocs.insert(node, live);
        self.after(
            self.scenario.cluster.heartbeat_grace,
            Event::HeartbeatMissed(node, now),
        );
    }

    /// The group's disconnect windows in the spelling the release reads.
    pub(crate) fn group_disconnect(
        &self,
        group: GroupRef,
    ) -> crate::model::scenario::DisconnectWindows {
        self.scenario.jobs[group.job.index()].groups[group.group_index()]
            .disconnect
            .counted(self.behaviour.release.disconnect_settings)
    }

    /// The heartbeat timer of a client that disconnected at `since` ran out
    /// (heartbeat.go invalidateHeartbeat): the node is down, or from 1.3
    /// disconnected if some allocation on it may wait (`disconnectState`).
    pub(crate) fn heartbeat_missed(&mut self, node: NodeId, since: Millis) {
        let state = &self.nodes[node.index()];
        if state.disconnected_at != Some(since) || state.status != NodeStatus::Ready {
            return;
        }
        let may_wait = self.behaviour.release.disconnects_clients
            && self.nodes[node.index()].allocs.iter().any(|id| {
                self.group_disconnect(self.allocs[id.index()].group)
                    .max_client_disconnect
                    .is_some()
            });
        if !may_wait {
            self.node_down(node);
            return;
        }
        self.set_node_status(node, NodeStatus::Disconnected);
        self.record(|t| TraceRecord::new(t, TraceKind::NodeDisconnected).node(node));
        let now = self.now();
        let live = self.live_allocs_on(node);
        for &id in &live {
            let alloc = &self.allocs[id.index()];
            let window = self.group_disconnect(alloc.group).max_client_disconnect;
            match window {
                // reconciler filters.go: a running allocation with a window
                // becomes unknown; a pending one, or one without a window,
                // is lost and replaced at once.
                Some(window) if alloc.state == AllocState::Running => {
                    let group = alloc.group;
                    let index = alloc.index;
                    let alloc = &mut self.allocs[id.index()];
                    alloc.state = AllocState::Unknown;
                    alloc.set_failed_at(now);
                    alloc.set_followup_at(None);
                    self.jobs[group.job.index()].running[group.group_index()] -= 1;
                    self.refresh_group(group);
                    self.on_alloc_unhealthy(id);
                    self.record(|t| {
                        TraceRecord::new(t, TraceKind::Unknown)
                            .alloc(group, index)
                            .node(node)
                            .detail(format!("max_client_disconnect {window}s"))
                    });
                    self.at(now + window, Event::DisconnectExpired(id, now));
                }
                _ => {
                    let detail = format!("node {} is disconnected", self.node_name(node));
                    self.finish_alloc(id, AllocState::Lost, &detail);
                }
            }
        }
        self.evaluate_jobs_of(&live);
    }

    /// An unknown allocation's `max_client_disconnect` ran out: it is lost
    /// (its follow-up evaluation, createTimeoutLaterEvals, finds it expired).
    /// The node is marked down once nothing on it may wait any longer (at
    /// its next missed heartbeat in Nomad).
    pub(crate) fn disconnect_expired(&mut self, id: AllocId, since: Millis) {
        let alloc = &self.allocs[id.index()];
        if alloc.state != AllocState::Unknown || alloc.failed_at() != since {
            return;
        }
        let (node, job) = (alloc.node, alloc.group.job);
        self.finish_alloc(id, AllocState::Lost, "max_client_disconnect expired");
        self.enqueue_eval(job);
        let waiting = self.nodes[node.index()]
            .allocs
            .iter()
            .any(|a| self.allocs[a.index()].state == AllocState::Unknown);
        if !waiting && self.nodes[node.index()].status == NodeStatus::Disconnected {
            self.node_down(node);
        }
    }

    /// stop_after_client_disconnect ran out on a client disconnected since
    /// `since`: it stops those allocations itself and unmounts their volumes
    /// through its own node plugin (csi_hook Postrun); the servers, which it
    /// cannot reach, keep the claims until they release them.
    pub(crate) fn client_heartbeat_stop(&mut self, node: NodeId, since: Millis) {
        if self.nodes[node.index()].disconnected_at != Some(since) {
            return;
        }
        let elapsed = self.now() - since;
        let allocs = self
            .disconnects
            .client_allocs
            .get(&node)
            .cloned()
            .unwrap_or_default();
        for id in allocs {
            let group = self.allocs[id.index()].group;
            if self.group_disconnect(group).stop_after_client_disconnect != Some(elapsed) {
                continue;
            }
            let index = self.allocs[id.index()].index;
            let volumes: Vec<_> = self.allocs[id.index()].volumes().to_vec();
            for (volume, _) in volumes {
                self.unmount_locally(id, volume);
            }
            self.record(|t| {
                TraceRecord::new(t, TraceKind::ClientStopped)
                    .alloc(group, index)
                    .node(node)
                    .detail(format!("stop_after_client_disconnect {elapsed}s"))
            });
        }
    }

    /// The client reaches its servers again. A node marked down comes back
    /// up (its lost allocations are stopped and unpublished); a disconnected
    /// one's unknown allocations run again and an evaluation picks between
    /// each and its replacement; within the grace period nothing changed.
    pub(crate) fn node_reconnect(&mut self, node: NodeId) {
        if self.nodes[node.index()].disconnected_at.is_none() {
            self.record(|t| {
                TraceRecord::new(t, TraceKind::NodeReconnect)
                    .node(node)
                    .detail("ignored: the node is connected")
            });
            return;
        }
        self.set_disconnected_at(node, None);
        self.disconnects.client_allocs.remove(&node);
        self.record(|t| TraceRecord::new(t, TraceKind::NodeReconnect).node(node));
        let status = self.nodes[node.index()].status;
        let mut reconnected = Vec::new();
        if status == NodeStatus::Disconnected {
            for id in self.live_allocs_on(node) {
                let alloc = &mut self.allocs[id.index()];
                if alloc.state != AllocState::Unknown {
                    continue;
                }
                alloc.state = AllocState::Running;
                alloc.set_followup_at(None);
                let (group, index) = (alloc.group, alloc.index);
                self.jobs[group.job.index()].running[group.group_index()] += 1;
                self.refresh_group(group);
                self.begin_health(id);
                self.disconnects.reconnecting.insert(id);
                self.record(|t| {
                    TraceRecord::new(t, TraceKind::Reconnected)
                        .alloc(group, index)
                        .node(node)
                });
                reconnected.push(id);
            }
        }
        self.set_node_status(node, NodeStatus::Ready);
        self.resume_stalled(node);
        self.node_back_up(node);
        self.evaluate_jobs_of(&reconnected);
        if status != NodeStatus::Ready {
            self.unblock_class(node);
        }
    }

    /// Client steps that waited for the servers go ahead.
    pub(crate) fn resume_stalled(&mut self, node: NodeId) {
        let stalled: Vec<AllocId> = self
            .disconnects
            .stalled
            .iter()
            .copied()
            .filter(|id| self.allocs[id.index()].node == node)
            .collect();
        for id in stalled {
            self.disconnects.stalled.remove(&id);
            // The client's max_run_duration timer ran while it was away.
            if self.run_deadline_overdue(id) {
                self.after(Millis::ZERO, Event::RunDeadline(id));
                continue;
            }
            let event = match self.allocs[id.index()].state {
                AllocState::Pulling => Event::AllocPulled(id),
                AllocState::Claiming => Event::ClaimAttempt(id),
                AllocState::Running => Event::TaskComplete(id),
                _ => continue,
            };
            self.after(Millis::ZERO, event);
        }
    }

    /// The reconciler's reconnect step (reconcileReconnecting with the
    /// default `best_score` picker): an allocation back from a disconnected
    /// client is kept unless its replacement runs on a better-scored node;
    /// the other one is stopped.
    pub(crate) fn resolve_reconnects(&mut self, job: JobId, stops: &mut Vec<AllocId>) {
        if self.disconnects.reconnecting.is_empty() {
            return;
        }
        let mine: Vec<AllocId> = self
            .disconnects
            .reconnecting
            .iter()
            .copied()
            .filter(|id| self.allocs[id.index()].group.job == job)
            .collect();
        for original in mine {
            self.disconnects.reconnecting.remove(&original);
            let alloc = &self.allocs[original.index()];
            if !alloc.is_live() || self.jobs[job.index()].status != JobStatus::Registered {
                continue;
            }
            let (group, index) = (alloc.group, alloc.index);
            let slots = &self.jobs[job.index()].latest[group.group_index()];
            let Some(&replacement) = slots.get(&index).filter(|&&r| r != original) else {
                continue;
            };
            let other = &self.allocs[replacement.index()];
            if !other.is_live() {
                self.jobs[job.index()].latest[group.group_index()].insert(index, original);
                continue;
            }
            let better = match (other.score.get(), alloc.score.get()) {
                (Some(r), Some(o)) => r > o,
                (Some(_), None) => true,
                _ => false,
            };
            if better && other.state == AllocState::Running {
                stops.push(original);
            } else {
                stops.push(replacement);
                self.jobs[job.index()].latest[group.group_index()].insert(index, original);
            }
        }
    }

    /// A lost allocation of `group` whose client stops it itself
    /// (`stop_after_client_disconnect`) and the moment it will have (plus
    /// the kill timeout), if that is still to come: the group's placements
    /// wait for the latest (reconciler delayByStopAfter).
    pub(crate) fn client_stop_pending(&self, group: GroupRef) -> Option<(AllocId, Millis)> {
        let after = self.group_disconnect(group).stop_after_client_disconnect?;
        let now = self.now();
        self.jobs[group.job.index()].latest[group.group_index()]
            .values()
            .map(|&id| (id, &self.allocs[id.index()]))
            .filter(|(_, a)| a.state == AllocState::Lost)
            .map(|(id, a)| (id, a.failed_at() + after + KILL_TIMEOUT))
            .filter(|&(_, until)| until > now)
            .max_by_key(|&(id, until)| (until, std::cmp::Reverse(id)))
    }

    /// Nomad 2.0.5 refuses a group with both settings in its `disconnect`
    /// block (structs/group.go DisconnectStrategy.Validate).
    pub(crate) fn disconnect_problem(&self, job: JobId) -> Option<String> {
        if !self.behaviour.release.rejects_lost_and_stop_after {
            return None;
        }
        self.scenario.jobs[job.index()].groups.iter().find_map(|group| {
            let d = group
                .disconnect
                .counted(self.behaviour.release.disconnect_settings);
            (d.max_client_disconnect.is_some() && d.stop_after_client_disconnect.is_some()).then(
                || {
                    format!(
                        "task group {}: Disconnect cannot be configured with both lost_after and stop_after",
                        group.name
                    )
                },
            )
        })
    }
}
