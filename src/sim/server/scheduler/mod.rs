//! Nomad's scheduler (the scheduler/ package): one evaluation of one job,
//! against a snapshot of the cluster plus what the plan being built
//! already proposes.
//!
//! - `generic.rs`: the service and batch scheduler's evaluation
//!   (generic_sched.go process / computeJobAllocs / computePlacements).
//! - `reconcile.rs`: what should run against what does, slot by slot
//!   (reconcile.go, reconcile_util.go).
//! - `select.rs`: picking a node for one placement: the stack
//!   (stack.go Select), the feasibility wrapper and the rank iterators over
//!   each node (feasible.go, rank.go, select.go's limit and max-score).
//! - `volumes.rs`: the CSI volume checker (feasible.go CSIVolumeChecker)
//!   and resolving a group's volume requests for one allocation.
//! - `feasibility.rs`: filter reasons, constraint operators
//!   (feasible.go checkConstraint) and placement failures as
//!   `nomad job status` shows them (structs AllocMetric).
//! - `preferences.rs`: spread, affinity, distinct_hosts and
//!   distinct_property (spread.go, rank.go NodeAffinityIterator,
//!   feasible.go Distinct*Iterator, propertyset.go).
//! - `rank.rs`: the scores (rank.go, structs/funcs.go ScoreFit*).
//! - `hot.rs`: the indexes scoring reads for every node visited.
//! - `classes.rs`: computed node classes (structs/node_class.go).
//! - `context.rs`: the plan under construction as the iterators see it
//!   (context.go EvalContext) and one placement's ask.
//! - `plan.rs`: the plan handed to the applier, its placements and the
//!   reconciler's wants.
//! - `network.rs`: ports (structs/network.go NetworkIndex as rank.go's
//!   BinPackIterator and the plan applier's AllocsFit use it).
//! - `system.rs`: system and sysbatch jobs (scheduler_system.go).

pub mod classes;
pub mod context;
pub mod feasibility;
mod generic;
mod host_volumes;
pub mod hot;
mod network;
pub mod plan;
pub mod preferences;
pub mod rank;
mod reconcile;
mod select;
mod system;
mod volumes;
