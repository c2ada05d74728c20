//! The one place that writes scenario YAML, from either end of the loader:
//!
//! - `model`: a resolved [`Scenario`](crate::model::scenario::Scenario)
//!   back to YAML, only what differs from the loader's defaults, in flow
//!   style (`plansim hunt`'s found and shrunk scenarios).
//! - `raw`: the raw types a Nomad format produced (`crate::nomad`), every
//!   field they hold, in block style (`plansim import`).
//!
//! Both outputs load back into the scenario they came from (round-trip
//! tests in `model`; `plansim import` loads what it wrote before writing
//! it). They stay two entry points because their outputs are committed and
//! compared byte for byte: the model has lost what the raw types keep (a
//! job's own update block, the defaults Nomad filled in), and the raw types
//! lack what the model resolved.

mod host_volumes;
mod lifecycle;
pub mod model;
mod network;
mod periodic;
pub mod raw;
mod scalar;
mod timeline;

pub use model::to_yaml;
