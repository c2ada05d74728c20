//! What the simulation remembers about clients that cannot reach their
//! servers (the servers' heartbeat view, nomad/heartbeat.go, and the
//! client's own, client/heartbeatstop.go); the rules are in disconnect.rs.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::ids::{AllocId, NodeId};

/// What the simulation remembers about disconnected clients.
#[derive(Default)]
pub(crate) struct Disconnects {
    /// Allocations a disconnected client runs (live when it disconnected).
    pub(crate) client_allocs: BTreeMap<NodeId, Vec<AllocId>>,
    /// Allocations whose next client step waits for the client's servers.
    pub(crate) stalled: BTreeSet<AllocId>,
    /// Unknown allocations whose client came back, until an evaluation
    /// decides between each and its replacement.
    pub(crate) reconnecting: BTreeSet<AllocId>,
    /// How many nodes' clients cannot reach their servers
    /// (`NodeState::disconnected_at` set).
    pub(crate) nodes: u32,
}
