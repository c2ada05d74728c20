//! Agreement with Nomad's own scheduler: plansim's outcome sets beside the
//! sets Nomad's `scheduler` package produced for the same scenarios (a
//! corpus's `expected-nomad-*.json`, measured with Nomad's test `Harness`),
//! one class per scenario and policy. `tests/nomad_oracle.rs` runs every
//! corpus under `tests/fixtures/nomad-oracle/` and holds the results to
//! that folder's `known-differences.txt`.
//!
//! - `outcome`: one run's outcome and a scenario's outcome set over seeds;
//!   plansim's built from its runs (trace rows and placement failures).
//! - `expected`: an expected file, Nomad's outcome sets read.
//! - `classify`: the class of one comparison (agree, wording, report,
//!   dist, rare, real, skipped).
//! - `corpus`: a corpus folder run and classed; the known-differences file.

pub mod classify;
pub mod corpus;
pub mod expected;
pub mod outcome;

pub use classify::{Class, RESAMPLE_SEEDS, classify, classify_resampled};
pub use corpus::{
    Verdict, against_known, corpora, known_file, known_keys, run_corpus, summary_table,
};
pub use expected::Expected;
pub use outcome::{OutcomeSet, plansim_outcomes, scenario_outcomes};
