//! The evaluation broker's queue (nomad/eval_broker.go): evaluations ready
//! for a worker, highest priority first and FIFO among equals. The rules
//! that feed and drain it (one evaluation per job waiting and one in
//! flight) are in worker.rs.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use crate::model::ids::JobId;

#[derive(Default)]
pub struct EvalBroker {
    /// (priority, arrival) -> job.
    pub(crate) ready: BTreeMap<(Reverse<u32>, u64), JobId>,
    pub(crate) next_seq: u64,
    /// True while a worker plans or its plan is applied. Both can enqueue
    /// evaluations (a stop the applier commits unblocks the node's class, a
    /// failed allocation is evaluated again); those wait in `ready` until
    /// the worker is done, and `dispatch` runs then. Handing them out at
    /// once would give the worker whose plan is being applied, an empty
    /// slot only while the applier holds its plan, a second evaluation
    /// (Nomad's worker holds its evaluation until the plan's result is
    /// back), or let another worker plan against a half-applied plan.
    pub(crate) held: bool,
}
