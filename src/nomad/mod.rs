//! Nomad's own formats: each module turns its source into the same raw types
//! (`scenario::raw`), which the one loader resolves and the one writer
//! (`scenario::write`) writes as a scenario file.
//!
//! - `hcl`: job files in HCL2, as Nomad's `jobspec2` package parses them
//!   (variables, locals, functions; runtime interpolations kept).
//! - `json`: job files and volume specs in JSON, the shapes of Nomad's `api`
//!   package (`api.Job`, `api.CSIVolume`), as `nomad job run -json` and the
//!   HTTP API take and return them.
//! - `volume`: CSI volume specs (`nomad volume register` / `create`) in
//!   HCL2, as `command/volume_register_csi.go` reads them.
//! - `job`: what both job front ends read, and how it becomes a raw job.
//! - `files`: a scenario's `jobs: - file:` and `volumes: - file:` entries,
//!   each file read by its front end.
//! - `api`: JSON saved from a cluster's HTTP API (the endpoints of
//!   `command/agent`: `/v1/nodes`, `/v1/node/:id`, `/v1/plugins?type=csi`,
//!   `/v1/volumes?type=csi`, `/v1/jobs`, `/v1/job/:id`, `/v1/allocations`),
//!   the input of `plansim import nomad DIR`.
//!
//! The same endpoints read over HTTP (`plansim import nomad --address`) and
//! a `nomad operator debug` bundle (`import::debug`) reach `api` through
//! its `ExportSource`, as the export directory does: one reader for all.

pub mod api;
pub mod files;
pub mod hcl;
pub mod job;
pub mod json;
mod json_keys;
pub mod volume;
