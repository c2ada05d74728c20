//! Nomad's clients: what each node's client does with the allocations the
//! servers give it (Nomad's client/ package), and the server-side view of
//! a client that stops heartbeating.
//!
//! - `alloc_runner.rs`: an allocation's life on its client: pull, claim
//!   and publish its CSI volumes, run, complete, stop, unpublish and
//!   release its claims (client/allocrunner, csi_hook.go; the claim RPCs
//!   of nomad/csi_endpoint.go; the volume watcher's claim release).
//! - `plugins.rs`: CSI plugins run by plugin jobs and their health
//!   (client/pluginmanager/csimanager), and the controller's part in a
//!   claim's life (csi_endpoint.go controllerPublishVolume /
//!   controllerUnpublishVolume).
//! - `disconnect.rs`, `disconnect_state.rs`: clients that lose their
//!   servers (nomad/heartbeat.go, node_endpoint.go UpdateStatus,
//!   client/heartbeatstop.go).
//! - `plugin_restart.rs`: a node plugin's task restarting
//!   (plugin_supervisor_hook.go): deregistered or unhealthy for a while,
//!   mounts kept, mounts and unmounts through it failing.
//! - `health.rs`: allocation health (client/allochealth) and the
//!   availability metrics it feeds.
//! - `max_run_duration.rs`: a group's `max_run_duration`, the deadline
//!   the client stops an allocation at (max_run_duration_hook.go,
//!   alloc_runner.go EnforceMaxRunDurationTimeout).
//! - `task_failure.rs`: scripted task failures (`alloc_fail`, the task's
//!   final failure after its restarts) and `node_down: {node_of: ...}`.
//! - `publish_failures.rs`: ControllerPublish and NodePublish failures at
//!   the storage provider, and each release's retry of them (csi_hook.go
//!   claimWithRetry, csi_endpoint.go controllerPublishVolume).

mod alloc_runner;
mod disconnect;
pub mod disconnect_state;
mod health;
mod host_mounts;
mod max_run_duration;
mod plugin_restart;
mod plugins;
mod publish_failures;
mod task_failure;

pub(crate) use alloc_runner::DetachRefusal;
