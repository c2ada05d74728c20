//! Scenarios from other systems' saved state (`plansim import`). Pure: the
//! command reads the files and writes the result.

pub mod nomad;
