//! Scripted task failures (`alloc_fail`) and a node named by the
//! allocation it holds (`node_down: {node_of: ...}`).
//!
//! An `alloc_fail` is the allocation's *final* failure: Nomad's client
//! first restarts a failing task on the same node as its `restart` block
//! allows (client/allocrunner/taskrunner/restarts/restarts.go
//! `RestartTracker.GetState`: within `attempts` per `interval`, then
//! `mode = "fail"`), and only then does the task's state become failed;
//! the allocation's client status follows (client/allocrunner/alloc_runner.go
//! `getClientStatus`: any failed task makes it "failed"), and the client
//! reports it (node_endpoint.go `UpdateAlloc`). plansim does not model the
//! restarts (they keep the allocation on its node with its resources and
//! claims; the servers see only task events): the event's time is when the
//! last restart failed. From there on the failure is the one every other
//! client failure takes (`finish_alloc`).

use crate::model::ids::{AllocId, GroupRef};
use crate::sim::simulation::Simulation;
use crate::sim::state::store::AllocState;
use crate::sim::trace::{TraceKind, TraceRecord};

impl Simulation<'_> {
    /// The newest live allocation named `<job>.<group>[index]` (Nomad
    /// names a replacement, a reschedule and a canary after the allocation
    /// they follow: the newest is the one a user running
    /// `nomad alloc status` on the name would mean).
    pub(crate) fn live_alloc_named(&self, group: GroupRef, index: u32) -> Option<AllocId> {
        self.allocs
            .iter()
            .rposition(|a| a.group == group && a.index == index && a.is_live())
            .map(AllocId::from_index)
    }

    /// `alloc_fail`: the task of the newest live allocation of that name
    /// fails. With none live (never placed yet, already terminal, or the
    /// slot is past the count), nothing happens; the `alloc_fail` row says
    /// so. An allocation whose client is disconnected cannot report its
    /// failure to the servers until it reconnects: not modelled, the
    /// event is ignored (the row says so).
    pub(crate) fn alloc_fail(&mut self, group: GroupRef, index: u32) {
        let Some(id) = self.live_alloc_named(group, index) else {
            self.record(|t| {
                TraceRecord::new(t, TraceKind::AllocFail)
                    .alloc(group, index)
                    .detail("ignored: no live allocation of that name")
            });
            return;
        };
        let node = self.allocs[id.index()].node;
        if self.nodes[node.index()].disconnected_at.is_some() {
            self.record(|t| {
                TraceRecord::new(t, TraceKind::AllocFail)
                    .alloc(group, index)
                    .node(node)
                    .detail("ignored: its client is disconnected")
            });
            return;
        }
        let was = self.allocs[id.index()].state.name();
        self.record(|t| {
            TraceRecord::new(t, TraceKind::AllocFail)
                .alloc(group, index)
                .node(node)
                .detail(format!("alloc #{} was {was}", id.0))
        });
        self.finish_alloc(id, AllocState::Failed, "task failed (alloc_fail)");
    }

    /// `node_down: {node_of: ...}`: the node holding the newest live
    /// allocation of that name goes down; with none live, nothing happens
    /// (a `node_down` row without a node says so).
    pub(crate) fn node_down_of(&mut self, group: GroupRef, index: u32) {
        match self.live_alloc_named(group, index) {
            Some(id) => self.node_down(self.allocs[id.index()].node),
            None => self.record(|t| {
                TraceRecord::new(t, TraceKind::NodeDown)
                    .alloc(group, index)
                    .detail("ignored: no live allocation of that name holds a node")
            }),
        }
    }
}
