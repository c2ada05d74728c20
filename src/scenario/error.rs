//! Load errors: where in which file, and what is wrong.

use std::fmt;

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
        match self.position {
            Some(Position { line, column }) => {
                write!(f, "{}:{}:{}: {}", self.file, line, column, self.message)
            }
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for LoadError {}
