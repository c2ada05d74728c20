//! The cluster as Nomad's servers know it (nomad/state/state_store.go and
//! the nomad/structs records it holds): nodes, CSI volumes and their
//! claims, jobs, allocations and deployments, as plain data with small
//! helpers. The rules that change them live in the server and client parts.
//!
//! - `store.rs`: the records (Node, CSIVolume, Job, Allocation,
//!   Deployment, CSIPlugin's controller health).
//! - `alloc_parts.rs`: the compact pieces an allocation record is built of
//!   (times, optional sequence numbers and scores, its volume claims, its
//!   reschedule tracker: structs.RescheduleTracker).
//! - `ports.rs`: the ports each node's allocations hold (NetworkIndex).
//! - `slots.rs`: a group's allocation per index (the alloc name's `[i]`).

pub mod alloc_parts;
pub mod host_volumes;
pub mod ports;
pub mod slots;
pub mod store;
