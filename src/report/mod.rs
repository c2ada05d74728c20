//! The output side of the I/O shell: summary.csv, traces, terminal tables,
//! atomic file writes. It formats results; it never runs a simulation.

pub mod atomic;
pub mod csv_bytes;
pub mod diff;
pub mod journal;
pub mod outdir;
pub mod results;
pub mod run_report;
pub mod stale_traces;
pub mod summary;
pub mod sweep;
pub mod table;
pub mod trace_csv;
