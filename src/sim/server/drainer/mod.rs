//! Nomad's node drainer (nomad/drainer): marks a draining node's
//! allocations for migration, batch by batch and group by group within
//! `migrate.max_parallel`, system and plugin jobs last.
//!
//! - `node_drain.rs`: drains with a strategy (drainer.go, watch_jobs.go,
//!   draining_node.go).
//! - `plugin_drain.rs`: what a drain does to CSI node plugins and the
//!   volumes they serve.
//! - `drain_state.rs`: what the drainer remembers between passes.

pub mod drain_state;
mod node_drain;
mod plugin_drain;
