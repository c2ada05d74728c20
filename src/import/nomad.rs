//! `plansim import nomad DIR`: a scenario from JSON saved from a live
//! cluster's HTTP API. The saved responses are read into raw types by
//! `nomad::api` and written by the one scenario writer
//! (`scenario::write::raw`). Pure: the files come in as text and the
//! scenario goes out as YAML text plus notes on what was narrowed or assumed.

pub use crate::nomad::api::ExportFiles;
use crate::nomad::api::read;
use crate::scenario::error::LoadError;
use crate::scenario::write::raw::{WrittenScenario, to_yaml};

/// What an import produces.
pub struct Imported {
    pub yaml: String,
    /// What was left out, narrowed or assumed, one line each, for stderr.
    pub notes: Vec<String>,
}

/// Reads the export into a scenario named `name`.
pub fn import(files: &ExportFiles, name: &str) -> Result<Imported, LoadError> {
    let cluster = read(files)?;
    let yaml = to_yaml(&WrittenScenario {
        name: name.to_string(),
        description: "Imported from a Nomad cluster's HTTP API by plansim import nomad.".into(),
        nodes: cluster.nodes,
        plugins: cluster.plugins,
        volumes: cluster.volumes,
        jobs: cluster.jobs,
        initial_allocations: cluster.initial_allocations,
        start_events: cluster.start_events,
    })?;
    Ok(Imported {
        yaml,
        notes: cluster.notes,
    })
}
