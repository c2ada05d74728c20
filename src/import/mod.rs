//! Scenarios from other systems' saved state (`plansim import`): a format
//! module of `crate::nomad` reads the source into raw types, and the one
//! scenario writer (`scenario::write`) writes them. Pure: the command reads
//! the files and writes the result.

pub mod debug;
pub mod nomad;
