//! The YAML side of the I/O shell: reading scenario files into the resolved
//! model. Nothing here runs a simulation.

pub mod error;
pub mod limits;
pub mod load;
pub mod raw;
pub mod template;
pub mod write;

pub use error::LoadError;
pub use load::{load_file, load_str};
