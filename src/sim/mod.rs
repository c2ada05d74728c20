//! The cluster simulation: a deterministic replay of what HashiCorp Nomad's
//! servers and clients do with a scenario's jobs, nodes and CSI volumes,
//! driven by the discrete-event engine. Pure: it reads a resolved scenario
//! and returns metrics and, if asked, a trace.
//!
//! Two sides, as in Nomad:
//! - [`server`]: what Nomad's servers do — job registration, the
//!   evaluation broker and its workers, blocked evaluations, the scheduler
//!   (reconcile, feasibility, rank, placement preferences, the system
//!   scheduler), the plan applier, deployments, the drainer, reschedules
//!   and the server's CSI claim checks (nomad/, scheduler/).
//! - [`client`]: what each node's client does with the allocations it is
//!   given — pull, claim and publish volumes, run, stop and unpublish;
//!   CSI plugins' health, disconnects and allocation health (client/).
//!
//! Beside them: the simulation's state (`simulation.rs`: one struct holding
//! the state store in [`state`], every part's bookkeeping and the event
//! queue), the event loop (`event_loop.rs`: pop the next event, hand it to
//! the part of Nomad it belongs to, until the horizon), the operator's
//! actions (`timeline.rs`), the scenario's initial allocations
//! (`initial.rs`), the invariants checked after every event in tests
//! (`invariants.rs`, `distinct_invariants.rs`), the run's caps (`stall.rs`)
//! and the trace ([`trace`], `seen.rs`).
//!
//! Every part changes the one `Simulation` (simulation.rs) through its own
//! `impl Simulation` block; the struct and the types it holds live in files
//! that import none of those handlers, so the file graph has no circle.

pub(crate) mod client;
mod distinct_invariants;
mod event_loop;
mod initial;
mod invariants;
mod seen;
pub(crate) mod server;
mod simulation;
mod stall;
pub mod state;
mod timeline;
pub mod trace;

pub use event_loop::{PROGRESS_EVERY, simulate, simulate_observed, simulate_streamed};
pub use server::claims;
pub use server::reschedule;
pub use server::scheduler::{feasibility, rank};
pub use simulation::{FirstPlan, MAX_RUN_EVENTS, RunOptions, RunOutput};
