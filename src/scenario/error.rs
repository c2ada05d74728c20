//! Load errors: where in which file, and what is wrong.

use std::fmt;

use serde_saphyr::Location;

use super::limits;
use crate::names::{echoed_key, is_field_name, one_line};

/// A bad input. Printed as `FILE:LINE:COLUMN: message` when the position is
/// known, otherwise `FILE: message` with the field path inside the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    pub file: String,
    pub position: Option<Position>,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    pub line: u64,
    pub column: u64,
}

impl Position {
    /// `None` for serde-saphyr's "unknown" location (line 0).
    pub fn from_location(location: serde_saphyr::Location) -> Option<Position> {
        (location.line() > 0).then(|| Position {
            line: location.line(),
            column: location.column(),
        })
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // File names and messages quote user data: escaped here, once,
        // for every error and warning printed (names::one_line).
        let (file, message) = (one_line(&self.file), one_line(&self.message));
        match self.position {
            Some(Position { line, column }) => {
                write!(f, "{file}:{line}:{column}: {message}")
            }
            None => write!(f, "{file}: {message}"),
        }
    }
}

impl std::error::Error for LoadError {}

/// Turns a serde-saphyr error on `text` into a positioned, one-line [`LoadError`].
pub fn yaml_error(file: &str, text: &str, err: &serde_saphyr::Error) -> LoadError {
    let plain = err.without_snippet();
    let position = plain.location().and_then(Position::from_location);
    let mut message = plain.to_string();
    // serde-saphyr appends " at line L column C"; we print the position up front.
    if let Some(index) = message.rfind(" at line ") {
        message.truncate(index);
    }
    LoadError {
        file: file.to_string(),
        position,
        message: clean_yaml_message(&message, text.contains('*') && text.contains('&')),
    }
}

/// The first line of a serde-saphyr message, minus library advice that is
/// not ours to give, in words that say what is wrong in the file.
fn clean_yaml_message(message: &str, uses_aliases: bool) -> String {
    let mut message = message
        .lines()
        .next()
        .unwrap_or("invalid YAML")
        .trim()
        .to_string();
    if let Some(index) = message.find(", set DuplicateKeyPolicy") {
        message.truncate(index);
    }
    // serde's words for Rust types, in the file's words.
    let rewrites = [
        (
            "expected mapping start",
            "expected a mapping of fields (key: value) here",
        ),
        ("expected sequence start", "expected a list here"),
        ("invalid u64", "expected a whole number (0 or more)"),
        ("invalid u32", "expected a whole number (0 or more)"),
        (
            "cannot deserialize null into string; use Option<String>",
            "expected a value here, found nothing",
        ),
    ];
    if let Some((_, better)) = rewrites.iter().find(|(from, _)| message == *from) {
        message = (*better).to_string();
    }
    // The library's words for the YAML it refuses, in the file's words.
    let prefixed = [
        (
            "data did not match any variant of untagged enum RawExpectValue",
            "expected a number (e.g. 3 or 0.5) or a comparison in quotes (e.g. \">= 3\", \"< 0.5\"), found a list, mapping or boolean".to_string(),
        ),
        (
            "data did not match any variant of untagged enum RawNodeDown",
            "expected a node id (node_down: client-1) or the node of an allocation (node_down: {node_of: \"web.app[0]\"})".to_string(),
        ),
        (
            "data did not match any variant of untagged enum RawNodeDrain",
            "expected a node id (node_drain: client-1, a forced drain) or a drain spec (node_drain: {node: client-1, deadline: 10m, ignore_system_jobs: false})".to_string(),
        ),
        (
            "recursive references require weak recursion types",
            "an alias (*name) is used inside the anchor (&name) it refers to, which would make the value contain itself: copy the value instead, or anchor a smaller part".to_string(),
        ),
        (
            "multiple YAML documents detected",
            "a second YAML document starts here (a `---` line): a file holds one scenario; remove the `---` and what follows, or move it to a file of its own".to_string(),
        ),
        (
            "!!binary scalar is not valid UTF-8",
            "a !!binary value that is not UTF-8 text: names and other fields are text; write the text itself without !!binary".to_string(),
        ),
    ];
    if let Some((_, better)) = prefixed.iter().find(|(from, _)| message.starts_with(from)) {
        message.clone_from(better);
    } else if message.starts_with("data did not match any variant of untagged enum") {
        // A field with several forms the list above does not name yet: never
        // show the user a Rust type name.
        message = "this value has none of the forms the field takes: see the field's row in docs/scenario-format.md".to_string();
    }
    if let Some(found) = message
        .strip_prefix("non-finite float ")
        .and_then(|rest| rest.strip_suffix(" rejected by the configured policy"))
    {
        message = format!(
            "found {found}, which is not a finite number: write a duration with a unit (e.g. 30s or 5m) or a finite number"
        );
    }
    if let Some(breach) = message.strip_prefix("budget breached: ") {
        let kind = breach.split([' ', '{']).next().unwrap_or(breach);
        // Only a file that uses aliases can be an alias bomb.
        let cause = if uses_aliases {
            "too large, or aliases that expand too far"
        } else {
            "the file is too large: write repeated entries once, with count: or replicas:"
        };
        message = match kind {
            "Nodes" => format!(
                "more than {} YAML nodes once aliases are expanded (YAML_MAX_NODES): {cause}",
                limits::YAML_MAX_NODES
            ),
            "Events" => format!(
                "more than {} YAML events once aliases are expanded (YAML_MAX_EVENTS): {cause}",
                limits::YAML_MAX_EVENTS
            ),
            "Aliases" => format!(
                "more than {} aliases (YAML_MAX_ALIASES)",
                limits::YAML_MAX_ALIASES
            ),
            "Anchors" => format!(
                "more than {} anchors (YAML_MAX_ANCHORS)",
                limits::YAML_MAX_ANCHORS
            ),
            "Depth" => format!(
                "nested deeper than {} levels (YAML_MAX_DEPTH)",
                limits::YAML_MAX_DEPTH
            ),
            other => {
                format!("YAML budget exceeded ({other}): too large, or aliases that expand too far")
            }
        };
    }
    unechoed_key(message)
}

/// serde quotes an unknown key back (`unknown field `KEY`, expected ...`).
/// A key that is no field name (a line of some other file given as a
/// scenario: a password hash, an API key) is not repeated: only its length.
fn unechoed_key(message: String) -> String {
    for prefix in ["unknown field `", "unknown variant `"] {
        let Some(rest) = message.strip_prefix(prefix) else {
            continue;
        };
        let Some((key, after)) = rest.split_once('`') else {
            continue;
        };
        if is_field_name(key) {
            return message;
        }
        let what = prefix.trim_end_matches(" `");
        return format!("{what}: {}{after}", echoed_key(key));
    }
    message
}

/// An error message with the place it belongs to, before the file is attached.
pub(crate) type Fail = (Option<Location>, String);

pub(crate) fn fail<T>(location: Location, message: impl Into<String>) -> Result<T, Fail> {
    Err((Some(location), message.into()))
}

/// A mistake in a Nomad file: where, and what was expected.
pub fn file_error(file: &str, at: Option<Position>, message: impl Into<String>) -> LoadError {
    LoadError {
        file: file.to_string(),
        position: at,
        message: message.into(),
    }
}
