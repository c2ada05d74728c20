//! Nomad's servers: what the leader and its schedulers do with jobs,
//! evaluations and plans (Nomad's nomad/ and scheduler/ packages).
//!
//! - `registration.rs`: the job register endpoint (nomad/job_endpoint.go
//!   Register): validation, the new job version, its evaluation.
//! - `eval_broker.rs`, `worker.rs`: the evaluation broker
//!   (nomad/eval_broker.go) and its scheduler workers (nomad/worker.go),
//!   which run one evaluation each and submit its plan.
//! - `blocked_evals.rs`: evaluations waiting for capacity
//!   (nomad/blocked_evals.go).
//! - [`scheduler`]: one evaluation of one job (scheduler/).
//! - `applier.rs`: the plan applier (nomad/plan_apply.go).
//! - `deployment.rs`: deployments, canaries and promotion
//!   (nomad/deploymentwatcher, scheduler/reconcile.go's deployment parts).
//! - [`drainer`]: node drains (nomad/drainer).
//! - [`reschedule`]: the reschedule policy's arithmetic
//!   (nomad/structs ReschedulePolicy, RescheduleTracker).
//! - `volume_ops.rs`: `nomad volume detach` (csi_endpoint.go Unpublish)
//!   and volumes registered after the start (fsm.go
//!   applyCSIVolumeRegister, blocked_evals.go UnblockNonNodeResources).
//! - [`claims`]: the servers' CSI claim checks (nomad/csi_endpoint.go
//!   Claim, nomad/state/state_store.go CSIVolumeClaim, structs/csi.go).

pub mod applier;
mod blocked_evals;
pub mod claims;
mod deployment;
pub mod drainer;
pub mod eval_broker;
mod periodic;
mod registration;
pub mod reschedule;
pub mod scheduler;
mod volume_ops;
mod worker;
