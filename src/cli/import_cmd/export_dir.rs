//! An export directory (`plansim import nomad DIR`): saved HTTP API
//! responses, each file read only when the importer asks for it.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::fsio::{LimitedFile, ReadError, human_bytes, open_limited, read_text_limited};
use crate::import::nomad::{EXPORT_DIRS, ExportSource};
use crate::names::one_line_path;
use crate::scenario::error::{LoadError, file_error};
use crate::scenario::limits::{IMPORT_MAX_ENTRIES, IMPORT_MAX_TOTAL_BYTES, MAX_FILE_BYTES};

/// An export directory: listed once (at most IMPORT_MAX_ENTRIES names),
/// and a file read only when the importer asks for it by one of the names
/// it uses, each through the size-limited reader, all of them together
/// within IMPORT_MAX_TOTAL_BYTES.
pub(super) struct ExportDir {
    dir: PathBuf,
    listed: BTreeSet<String>,
    read_so_far: Cell<u64>,
    limits: ImportLimits,
}

/// The import's own limits: the real ones, or smaller ones in the tests
/// (an export past the real ones is a gigabyte, or half a million files).
#[derive(Clone, Copy)]
pub(super) struct ImportLimits {
    pub(super) entries: usize,
    pub(super) total_bytes: u64,
}

impl ImportLimits {
    pub(super) const REAL: ImportLimits = ImportLimits {
        entries: IMPORT_MAX_ENTRIES,
        total_bytes: IMPORT_MAX_TOTAL_BYTES,
    };
}

/// Lists DIR and its node/, plugin/, volume/ and job/ subdirectories
/// (names only: nothing in them is opened or stat'ed).
pub(super) fn list_export(dir: &Path, limits: ImportLimits) -> Result<ExportDir, String> {
    if !dir.is_dir() {
        return Err(format!(
            "{}: not a directory",
            crate::names::one_line_path(dir)
        ));
    }
    let mut listed = BTreeSet::new();
    for sub in std::iter::once("").chain(EXPORT_DIRS) {
        let path = dir.join(sub);
        let entries = match std::fs::read_dir(&path) {
            Ok(entries) => entries,
            // A subdirectory not saved (or not a directory): listed as a name above.
            Err(_) if !sub.is_empty() => continue,
            Err(err) => {
                return Err(format!(
                    "{}: cannot read directory: {err}",
                    crate::names::one_line_path(&path)
                ));
            }
        };
        for entry in entries {
            let entry =
                entry.map_err(|err| format!("{}: {err}", crate::names::one_line_path(&path)))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if sub.is_empty() && EXPORT_DIRS.contains(&name.as_str()) {
                continue;
            }
            if listed.len() >= limits.entries {
                return Err(format!(
                    "{}: more than {} entries in it and its node/, plugin/, volume/ and job/ (IMPORT_MAX_ENTRIES)",
                    one_line_path(dir),
                    limits.entries
                ));
            }
            listed.insert(if sub.is_empty() {
                name
            } else {
                format!("{sub}/{name}")
            });
        }
    }
    Ok(ExportDir {
        dir: dir.to_path_buf(),
        listed,
        read_so_far: Cell::new(0),
        limits,
    })
}

impl ExportDir {
    /// What is left of IMPORT_MAX_TOTAL_BYTES.
    fn bytes_left(&self) -> u64 {
        self.limits
            .total_bytes
            .saturating_sub(self.read_so_far.get())
    }
}

impl ExportSource for ExportDir {
    fn listed(&self) -> Vec<String> {
        self.listed.iter().cloned().collect()
    }

    fn read(&self, path: &str) -> Result<Option<String>, LoadError> {
        // Only what the listing holds: an id such as `../x` names no file.
        if !self.listed.contains(path) {
            return Ok(None);
        }
        let left = self.bytes_left();
        let (limit, limit_name) = if left < MAX_FILE_BYTES as u64 {
            (left, "IMPORT_MAX_TOTAL_BYTES")
        } else {
            (MAX_FILE_BYTES as u64, "MAX_FILE_BYTES")
        };
        let refused = |message: String| file_error(path, None, message);
        let text = match read_text_limited(&self.dir.join(path), limit, limit_name) {
            Ok(text) => text,
            Err(ReadError::NotFound) => return Ok(None),
            Err(ReadError::Refused(message)) if limit_name == "IMPORT_MAX_TOTAL_BYTES" => {
                return Err(refused(format!(
                    "{message}: the files an import reads may hold {} in all (IMPORT_MAX_TOTAL_BYTES)",
                    human_bytes(self.limits.total_bytes)
                )));
            }
            Err(ReadError::Refused(message)) => return Err(refused(message)),
        };
        self.read_so_far
            .set(self.read_so_far.get() + text.len() as u64);
        Ok(Some(text))
    }

    /// Streamed within what is left of IMPORT_MAX_TOTAL_BYTES (not
    /// MAX_FILE_BYTES: only what is kept of it is held).
    fn open(&self, path: &str) -> Result<Option<Box<dyn Read + '_>>, LoadError> {
        if !self.listed.contains(path) {
            return Ok(None);
        }
        let left = self.bytes_left();
        match open_limited(&self.dir.join(path), left, "IMPORT_MAX_TOTAL_BYTES") {
            Ok(file) => Ok(Some(Box::new(Counted {
                file,
                total: &self.read_so_far,
            }))),
            Err(ReadError::NotFound) => Ok(None),
            Err(ReadError::Refused(message)) => Err(file_error(path, None, message)),
        }
    }
}

/// A streamed export file that adds what it reads to the export's total.
struct Counted<'a> {
    file: LimitedFile,
    total: &'a Cell<u64>,
}

impl Read for Counted<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        self.total.set(self.total.get() + n as u64);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dir::TempDir;

    const SMALL: ImportLimits = ImportLimits {
        entries: 5,
        total_bytes: 1000,
    };

    #[test]
    fn the_listing_is_refused_past_its_entry_limit() {
        let dir = TempDir::new("import-entries");
        std::fs::create_dir_all(dir.join("node")).unwrap();
        for i in 0..3 {
            std::fs::write(dir.join(format!("x{i}.json")), "[]").unwrap();
            std::fs::write(dir.join("node").join(format!("n{i}.json")), "{}").unwrap();
        }
        let err = list_export(&dir, SMALL).err().expect("6 entries, limit 5");
        assert!(err.contains("more than 5 entries"), "{err}");
        assert!(err.contains("(IMPORT_MAX_ENTRIES)"), "{err}");
        let listed = list_export(
            &dir,
            ImportLimits {
                entries: 6,
                ..SMALL
            },
        )
        .unwrap();
        assert_eq!(listed.listed().len(), 6);
    }

    #[test]
    fn every_file_read_counts_against_the_total_whole_or_streamed() {
        let dir = TempDir::new("import-total");
        std::fs::write(dir.join("nodes.json"), "n".repeat(600)).unwrap();
        std::fs::write(dir.join("jobs.json"), "j".repeat(300)).unwrap();
        std::fs::write(dir.join("allocations.json"), "a".repeat(200)).unwrap();
        let export = list_export(&dir, SMALL).unwrap();
        assert_eq!(export.read("nodes.json").unwrap().unwrap().len(), 600);
        assert_eq!(export.read("jobs.json").unwrap().unwrap().len(), 300);
        // 100 bytes are left: the streamed file fails on its 101st.
        let mut stream = export.open("allocations.json").unwrap().unwrap();
        let mut bytes = Vec::new();
        let err = stream.read_to_end(&mut bytes).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::FileTooLarge);
        assert!(err.to_string().contains("IMPORT_MAX_TOTAL_BYTES"), "{err}");
        drop(stream);
        // Nothing is left for a whole read either, and the message says why.
        let err = export.read("allocations.json").expect_err("over the total");
        assert!(err.to_string().contains("1000 bytes in all"), "{err}");
        // A name the listing does not hold is no file, whatever is on disk.
        assert!(export.read("../nodes.json").unwrap().is_none());
        assert!(export.open("node/../nodes.json").unwrap().is_none());
    }
}
