//! The YAML side of the I/O shell: reading scenario files into the resolved
//! model, and Nomad's own job files and volume specs (`nomad_*`) into the
//! same raw types first. Nothing here runs a simulation.

pub mod error;
pub mod limits;
pub mod load;
mod nodes;
pub mod placement;
pub mod plugin_jobs;
pub mod raw;
mod system;
pub mod template;
pub mod update;
pub mod write;

pub use error::LoadError;
pub use load::{load_file, load_file_with_warnings, load_str};
