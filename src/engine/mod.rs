//! The discrete-event engine: a timed queue and seeded randomness. It knows
//! nothing of clusters, schedulers or files.

pub mod queue;
pub mod rng;
