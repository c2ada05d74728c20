//! Reading input files within the size limit, and the YAML parser's options.

use std::path::Path;

use crate::scenario::error::LoadError;
use crate::scenario::limits;

/// Reads a file a scenario names (a Nomad job or volume file) or an import
/// file: a regular file, at most MAX_FILE_BYTES.
pub fn read_limited(path: &Path) -> Result<Vec<u8>, String> {
    crate::fsio::read_limited(path, limits::MAX_FILE_BYTES as u64, "MAX_FILE_BYTES")
        .map_err(|err| err.message())
}

/// Reads a scenario or experiment file: a regular file, at most
/// MAX_FILE_BYTES, UTF-8.
pub fn read_text(path: &Path) -> Result<String, LoadError> {
    crate::fsio::read_text_limited(path, limits::MAX_FILE_BYTES as u64, "MAX_FILE_BYTES").map_err(
        |err| LoadError {
            file: path.display().to_string(),
            position: None,
            message: err.message(),
        },
    )
}

/// Parses YAML options shared by scenario and experiment files: strict
/// booleans (`yes`/`no`/`on`/`off` are strings, never booleans), duplicate
/// keys refused, and a budget that stops alias bombs early.
pub fn yaml_options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_reader_input_bytes = Some(limits::MAX_FILE_BYTES);
    budget.max_nodes = limits::YAML_MAX_NODES;
    budget.max_events = limits::YAML_MAX_EVENTS;
    budget.max_aliases = limits::YAML_MAX_ALIASES;
    budget.max_anchors = limits::YAML_MAX_ANCHORS;
    budget.max_depth = limits::YAML_MAX_DEPTH;
    serde_saphyr::options! {
        strict_booleans: true,
        budget: Some(budget),
    }
}
