//! plansim: a deterministic discrete-event simulator of Nomad's CSI volume
//! scheduling. See ARCHITECTURE.md for the codemap.

pub mod agreement;
pub mod cli;
pub mod engine;
pub mod experiment;
pub mod explain;
pub mod fsio;
pub mod hunt;
pub mod import;
pub mod model;
pub mod names;
pub mod nomad;
pub mod plan_command;
pub mod report;
pub mod run;
pub mod run_command;
pub mod scenario;
pub mod sim;
pub mod sweep;

#[cfg(test)]
mod test_dir;
