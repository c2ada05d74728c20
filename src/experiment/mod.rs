//! Capacity-planning experiments: a grid of scenario variants x seeds x
//! policies, the statistics over their runs and charts of them. Pure: files
//! are read and written by the CLI.

pub mod aggregate;
pub mod grid;
pub mod path;
pub mod plot;
pub mod spec;
pub mod stats;
