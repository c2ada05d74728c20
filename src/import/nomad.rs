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
    let imported = read(files)?;
    let yaml = to_yaml(&WrittenScenario {
        name: name.to_string(),
        description: "Imported from a Nomad cluster's HTTP API by plansim import nomad.".into(),
        cluster: imported.cluster,
    })?;
    Ok(Imported {
        yaml,
        notes: imported.notes,
    })
}
