//! The YAML side of the I/O shell: scenario files into the resolved model
//! (`raw`: the file's types, which Nomad's own formats in `crate::nomad` fill
//! too; `load`: the resolver, one module per section; `error`: every load
//! error), and back to YAML (`write`). Nothing here runs a simulation.

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
