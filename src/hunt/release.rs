//! When the pinned Nomad release must have freed a claim whose allocation is
//! terminal, read off a run's trace. `no-lost-claims` calls a claim lost only
//! when it is still held at the horizon *after* that time: a claim waiting
//! for the claim GC or the node GC within their configured periods is how
//! Nomad works, not a leak.
//!
//! The release paths, at the pinned versions:
//! - the node is up: the client unpublishes on stop (`csi_hook.go:Postrun`
//!   -> `csi_endpoint.go:CSIVolume.Unpublish`): node detach, controller
//!   detach, claim freed (`node_detach_latency`, `controller_detach_latency`,
//!   `claim_free_latency`); the same when a down node comes back up;
//! - the node is down: nothing touches the volume until the leader's
//!   periodic claim GC (`core_sched.go:csiVolumeClaimGC`, every
//!   `csi_volume_claim_gc_interval`). In 2.0.5 it skips a volume whose
//!   ModifyTime is within `csi_volume_claim_gc_threshold` of the pass, and
//!   `csi_endpoint.go:nodeUnpublishVolume` skips the node detach of a down
//!   node, so the controller detach frees the claim. In 1.2.6
//!   `nodeUnpublishVolumeImpl` fails ("No path to node") until the node is
//!   gone, i.e. until `core_sched.go:nodeGC` removed it, `node_gc_threshold`
//!   after it went down, at a `node_gc_interval` tick.
//!
//! Wherever the trace does not say exactly (which detach steps modified the
//! volume, whether a node was down at the very millisecond of a detach), the
//! later time is taken, so a claim is never called lost early.

use std::collections::BTreeMap;

use crate::model::ids::{NodeId, VolumeId};
use crate::model::release::Release;
use crate::model::scenario::{ClusterConfig, Scenario};
use crate::model::time::Millis;
use crate::sim::trace::{TraceKind, TraceRecord};

/// What a release deadline is made of, for the failure's message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// The client's (or a returning node's) unpublish.
    Client,
    /// A claim GC pass.
    ClaimGc(Millis),
    /// A claim GC pass once the node GC had removed the down node (1.2.6).
    NodeGc(Millis),
}

impl Path {
    pub fn describe(self) -> String {
        match self {
            Path::Client => "node detach, controller detach and claim free".to_string(),
            Path::ClaimGc(t) => format!("the claim GC pass at {t}s, then the controller detach"),
            Path::NodeGc(t) => format!(
                "the claim GC pass at {t}s, after the node GC removed the down node, then the controller detach"
            ),
        }
    }
}

/// The node status changes and volume modifications of one run.
pub struct Releases<'s> {
    scenario: &'s Scenario,
    release: &'s Release,
    /// Per node, its `node_down` (false) and `node_up` (true) records in order.
    nodes: BTreeMap<NodeId, Vec<(Millis, bool)>>,
    /// Per volume, every time its claims may have changed (sorted): the
    /// volume's ModifyTime, which the 2.0.5 claim GC measures from.
    modified: BTreeMap<VolumeId, Vec<Millis>>,
}

/// When a claim's allocation became terminal, and when (if) it was freed.
pub struct ClaimLife {
    pub node: NodeId,
    pub volume: VolumeId,
    pub granted: Millis,
    pub terminal: Option<Millis>,
    /// The terminal row was `stopped`: the client kills the tasks first.
    pub stopped: bool,
    pub released: Option<Millis>,
    /// An unmount found the node plugin's allocations stopped
    /// (`node_detach_failed`), or the ControllerUnpublish found no healthy
    /// controller (`controller_detach_waiting`): the claim waits for the
    /// plugin or the controller to come back, which no release path here
    /// predicts, so it is never called lost.
    pub stranded: bool,
}

impl<'s> Releases<'s> {
    pub fn new(
        scenario: &'s Scenario,
        release: &'s Release,
        trace: &[TraceRecord],
        claims: &[ClaimLife],
    ) -> Self {
        let c = &scenario.cluster;
        let mut nodes: BTreeMap<NodeId, Vec<(Millis, bool)>> = BTreeMap::new();
        for record in trace {
            match (record.kind, record.node) {
                (TraceKind::NodeDown, Some(node)) => {
                    nodes.entry(node).or_default().push((record.time, false));
                }
                (TraceKind::NodeUp, Some(node)) => {
                    nodes.entry(node).or_default().push((record.time, true));
                }
                _ => {}
            }
        }
        let mut releases = Releases {
            scenario,
            release,
            nodes,
            modified: BTreeMap::new(),
        };
        let mut modified: BTreeMap<VolumeId, Vec<Millis>> = BTreeMap::new();
        for (v, _) in scenario.volumes.iter().enumerate() {
            // A volume exists from the start: its first ModifyTime is 0.
            modified.insert(VolumeId::from_index(v), vec![Millis::ZERO]);
        }
        for claim in claims {
            let times = modified.entry(claim.volume).or_default();
            times.push(claim.granted);
            match (claim.released, claim.terminal) {
                // Freed at r: the controller detach was at r - claim free, a
                // node detach (if any) a controller detach before.
                (Some(r), _) => {
                    let controller = r - c.claim_free_latency;
                    times.extend([r, controller, controller - c.controller_detach_latency]);
                }
                // Still being released at the horizon by a live node's
                // client: its detaches may have happened already. (A down
                // node's claim changes nothing while it waits for the GC.)
                (None, Some(t)) => {
                    let node = t + c.node_detach_latency;
                    if releases.up_throughout(claim.node, t, node) {
                        times.extend([node, node + c.controller_detach_latency]);
                    }
                }
                (None, None) => {}
            }
        }
        for times in modified.values_mut() {
            times.sort_unstable();
        }
        releases.modified = modified;
        releases
    }

    fn changes(&self, node: NodeId) -> &[(Millis, bool)] {
        self.nodes.get(&node).map_or(&[], Vec::as_slice)
    }

    /// The node's status once every record at or before `t` is applied
    /// (nodes start up).
    fn up_at(&self, node: NodeId, t: Millis) -> bool {
        self.changes(node)
            .iter()
            .take_while(|(at, _)| *at <= t)
            .last()
            .is_none_or(|&(_, up)| up)
    }

    /// Up at `from`, and not down at any moment up to `to` (a node down at
    /// the detach's very millisecond counts as down: the later path).
    fn up_throughout(&self, node: NodeId, from: Millis, to: Millis) -> bool {
        self.up_at(node, from)
            && !self
                .changes(node)
                .iter()
                .any(|&(at, up)| !up && at > from && at <= to)
    }

    fn first_up(&self, node: NodeId, after: Millis, until: Millis) -> Option<Millis> {
        self.changes(node)
            .iter()
            .find(|&&(at, up)| up && at > after && at <= until)
            .map(|&(at, _)| at)
    }

    fn down_since(&self, node: NodeId, t: Millis) -> Millis {
        self.changes(node)
            .iter()
            .rev()
            .find(|&&(at, up)| !up && at <= t)
            .map_or(Millis::ZERO, |&(at, _)| at)
    }

    /// The last modification of `volume` at or before `t`.
    fn last_modified(&self, volume: VolumeId, t: Millis) -> Millis {
        self.modified
            .get(&volume)
            .and_then(|times| times.iter().take_while(|&&m| m <= t).last().copied())
            .unwrap_or(Millis::ZERO)
    }

    /// The latest time the pinned release frees a claim on `volume`, made
    /// on `node`, whose allocation became terminal at `terminal`, and how;
    /// `None` when that is past the horizon.
    pub fn deadline(
        &self,
        node: NodeId,
        volume: VolumeId,
        terminal: Millis,
    ) -> Option<(Millis, Path)> {
        let c: &ClusterConfig = &self.scenario.cluster;
        let horizon = self.scenario.horizon;
        let tail = c.controller_detach_latency + c.claim_free_latency;
        let interval = c.csi_volume_claim_gc_interval.0.max(1);
        // The leader's GC ticker fires at whole multiples of the interval.
        let tick_at_or_after = |t: Millis| Millis(t.0.div_ceil(interval) * interval);
        let mut detach_from = terminal;
        loop {
            // csi_hook Postrun (or the node back up): the node detach.
            let detach = detach_from + c.node_detach_latency;
            if self.up_throughout(node, detach_from, detach) {
                return Some((detach + tail, Path::Client));
            }
            // Down: the claim waits for the claim GC, from the detach at latest.
            let waiting_from = detach;
            let mut tick = Millis((waiting_from.0 / interval + 1) * interval);
            loop {
                if let Some(up) = self.first_up(node, waiting_from, tick) {
                    detach_from = up;
                    break;
                }
                if tick > horizon {
                    return None;
                }
                if self.release.skips_down_node_detach {
                    // csiVolumeClaimGC skips a volume modified within the
                    // threshold: the next pass at least that long after.
                    let quiet = self.last_modified(volume, tick) + c.csi_volume_claim_gc_threshold;
                    if quiet > tick {
                        tick = tick_at_or_after(quiet).max(tick + Millis(interval));
                        continue;
                    }
                }
                if self.up_at(node, tick) {
                    // claim_gc on a live node: the node detach runs.
                    return Some((tick + c.node_detach_latency + tail, Path::ClaimGc(tick)));
                }
                if self.release.skips_down_node_detach {
                    return Some((tick + tail, Path::ClaimGc(tick)));
                }
                // 1.2.6: the node detach fails until nodeGC removed the node,
                // at the first node GC tick past node_gc_threshold.
                let gc_interval = c.node_gc_interval.0.max(1);
                let eligible = self.down_since(node, tick) + c.node_gc_threshold;
                let gone = Millis(eligible.0.div_ceil(gc_interval) * gc_interval);
                if tick >= gone {
                    return Some((tick + tail, Path::NodeGc(tick)));
                }
                tick = tick_at_or_after(gone).max(tick + Millis(interval));
            }
        }
    }
}
