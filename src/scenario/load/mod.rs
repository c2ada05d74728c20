//! From YAML text to a resolved [`Scenario`](crate::model::scenario::Scenario):
//! parse, stamp out templates, resolve names to ids and check every
//! reference, one module per section of the file (`nodes`, `plugins`,
//! `volumes`, `jobs` and their `groups`, `events`, `initial`, `expect`,
//! `cluster`), driven in order by `scenario`. The first problem found is
//! returned as a [`LoadError`](crate::scenario::error::LoadError), built with
//! the helpers of `scenario::error`; nothing is partially loaded.

mod budget;
mod cluster;
pub mod compose;
mod entries;
mod event_spec;
mod events;
mod expect;
mod groups;
mod host_volumes;
mod initial;
mod jobs;
mod network;
mod nodes;
mod periodic;
mod plugins;
pub mod read;
pub mod scenario;
mod volumes;

pub use super::error::yaml_error;
pub use initial::{InitialChecker, InitialField, ScenarioParts};
pub use read::{read_limited, read_text, yaml_options};
pub use scenario::{load_file, load_file_with_warnings, load_str, load_variant};
