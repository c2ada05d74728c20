//! What the drainer remembers between its passes (nomad/drainer's
//! NodeDrainer: its draining nodes and the batch of allocation updates it
//! is collecting), and why it marked each node plugin allocation
//! (see plugin_drain.rs).

use std::collections::{BTreeMap, BTreeSet};

use crate::model::ids::{AllocId, NodeId};
use crate::model::scenario::DrainSpec;
use crate::model::time::Millis;

/// The drainer's state.
#[derive(Default)]
pub(crate) struct Drains {
    /// Draining nodes, with their strategy and when the drain began.
    pub(crate) nodes: BTreeMap<NodeId, (DrainSpec, Millis)>,
    /// Allocations marked in the batch being collected.
    pub(crate) batch: Vec<AllocId>,
    /// Times a drainer pass is queued for.
    pub(crate) passes: BTreeSet<Millis>,
    /// The job watcher sent marks and waits for them to be written; then
    /// it waits for the next allocation update after its own write
    /// (watch_jobs.go watch: `waitIndex = req.Resp.Index()`).
    pub(crate) watcher_waiting: bool,
}

/// Why the drainer marked a node plugin allocation for migration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PluginMark {
    /// The node was done: everything else on it had stopped.
    Done,
    /// The drain's deadline was reached: everything left at once.
    Deadline,
    /// A forced drain (the short form): everything at once.
    Forced,
    /// Like any other job's allocation (1.2.6: a plugin run by a service
    /// job is not left for last).
    Migrating,
}

/// The node plugin allocations the drainer marked, and why.
#[derive(Default)]
pub(crate) struct PluginMarks(pub(crate) BTreeMap<AllocId, PluginMark>);
