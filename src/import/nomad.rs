//! `plansim import nomad DIR`: a scenario from JSON saved from a live
//! cluster's HTTP API. The saved responses are read into raw types by
//! `nomad::api` and written by the one scenario writer
//! (`scenario::write::raw`). Pure: the files come in as text and the
//! scenario goes out as YAML text plus notes on what was narrowed or assumed.

use crate::nomad::api::read;
pub use crate::nomad::api::{EXPORT_DIRS, EXPORT_FILES, ExportSource};
use crate::scenario::error::{LoadError, file_error};
use crate::scenario::limits;
use crate::scenario::write::raw::{WrittenScenario, to_yaml};

/// What an import produces.
pub struct Imported {
    pub yaml: String,
    /// What was left out, narrowed or assumed, one line each, for stderr.
    pub notes: Vec<String>,
}

/// Reads the export into a scenario named `name`.
pub fn import(files: &dyn ExportSource, name: &str) -> Result<Imported, LoadError> {
    let imported = read(files)?;
    let cluster = &imported.cluster;
    for (what, count, limit, name) in [
        ("nodes", cluster.nodes.len(), limits::MAX_NODES, "MAX_NODES"),
        (
            "volumes",
            cluster.volumes.len(),
            limits::MAX_VOLUMES,
            "MAX_VOLUMES",
        ),
        ("jobs", cluster.jobs.len(), limits::MAX_JOBS, "MAX_JOBS"),
        (
            "nodes down or draining (each a timeline event)",
            cluster.start_events.len(),
            limits::MAX_EVENTS,
            "MAX_EVENTS",
        ),
    ] {
        too_large(what, count, limit, name)?;
    }
    let yaml = to_yaml(&WrittenScenario {
        name: name.to_string(),
        description: "Imported from a Nomad cluster's HTTP API by plansim import nomad.".into(),
        cluster: imported.cluster,
    })?;
    too_large(
        "bytes of scenario",
        yaml.len(),
        limits::MAX_FILE_BYTES,
        "MAX_FILE_BYTES",
    )?;
    Ok(Imported {
        yaml,
        notes: imported.notes,
    })
}

/// Refuses, before anything is written, an export that makes a scenario
/// larger than the loader takes.
fn too_large(what: &str, count: usize, limit: usize, name: &str) -> Result<(), LoadError> {
    if count <= limit {
        return Ok(());
    }
    Err(file_error(
        "",
        None,
        format!(
            "the export is too large for one scenario: {count} {what}, more than {limit} ({name})"
        ),
    ))
}
