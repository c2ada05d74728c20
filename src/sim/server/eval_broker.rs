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
}
