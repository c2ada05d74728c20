//! `plansim import nomad DIR --out SCENARIO.yaml`

use std::cell::Cell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::output::{EXIT_BAD_INPUT, EXIT_OK};
use crate::fsio::{ReadError, human_bytes, read_text_limited};
use crate::import::nomad::{EXPORT_DIRS, ExportSource, import};
use crate::names::{one_line, one_line_path};
use crate::report::outdir;
use crate::scenario::error::{LoadError, file_error};
use crate::scenario::limits::{IMPORT_MAX_ENTRIES, IMPORT_MAX_TOTAL_BYTES, MAX_FILE_BYTES};

#[derive(Args, Debug)]
pub struct ImportArgs {
    #[command(subcommand)]
    source: ImportSource,
}

#[derive(Subcommand, Debug)]
enum ImportSource {
    /// A scenario from JSON saved from a Nomad cluster's HTTP API (see the README).
    Nomad {
        /// The directory of saved responses: nodes.json, node/<id>.json, plugins.json, ...
        dir: PathBuf,
        /// The scenario file to write (replaced only if plansim wrote it and it is unedited).
        #[arg(short, long, value_name = "SCENARIO.yaml")]
        out: PathBuf,
        /// Replace --out even if plansim did not write it, or it was edited (never an input, a symlink or a non-regular file).
        #[arg(long)]
        force: bool,
    },
}

/// The loader's size limits, as its messages name them.
const LIMIT_NAMES: [&str; 8] = [
    "YAML_MAX_NODES",
    "YAML_MAX_EVENTS",
    "YAML_MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "MAX_JOBS",
    "MAX_ALLOCATIONS",
    "MAX_TEMPLATE_BYTES",
];

pub fn run(args: ImportArgs) -> u8 {
    let ImportSource::Nomad { dir, out, force } = args.source;
    let files = match list_export(&dir) {
        Ok(files) => files,
        Err(message) => {
            eprintln!("{}", one_line(&message));
            return EXIT_BAD_INPUT;
        }
    };
    let name = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "imported".into());
    let imported = match import(&files, &name) {
        Ok(imported) => imported,
        Err(mut err) => {
            err.file = dir.join(&err.file).display().to_string();
            eprintln!("{err}");
            return EXIT_BAD_INPUT;
        }
    };
    // What is written must load: checked before anything is written.
    if let Err(err) = crate::scenario::load_str(&imported.yaml, &out.display().to_string(), &name) {
        // A limit the export goes past (YAML_MAX_NODES, MAX_ALLOCATIONS, ...)
        // is the export's size; anything else is plansim's mistake.
        let message = err.to_string();
        if LIMIT_NAMES
            .iter()
            .any(|limit| message.contains(&format!("({limit})")))
        {
            eprintln!(
                "{}: the export is too large for one scenario (nothing written): {err}",
                one_line_path(&dir)
            );
        } else {
            eprintln!("the imported scenario does not load (please report this): {err}");
        }
        return EXIT_BAD_INPUT;
    }
    // Every input is read (each file as it was parsed): the output may be none of them.
    let claimed = match outdir::claim_file(&out, force) {
        Ok(claimed) => claimed,
        Err(message) => {
            eprintln!("{}", one_line(&message));
            return EXIT_BAD_INPUT;
        }
    };
    // Notes name files of the export folder: names are data.
    for note in &imported.notes {
        let line = note.strip_prefix("warning: ").map_or_else(
            || format!("note: {note}"),
            |w| format!("warning: {}", dir.join(w).display()),
        );
        eprintln!("{}", one_line(&line));
    }
    let text = outdir::stamp("import nomad", &imported.yaml);
    if let Err(message) = claimed.write(text.as_bytes()) {
        eprintln!("{}", one_line(&message));
        return EXIT_BAD_INPUT;
    }
    EXIT_OK
}

/// An export directory: listed once (at most IMPORT_MAX_ENTRIES names),
/// and a file read only when the importer asks for it by one of the names
/// it uses, each through the size-limited reader, all of them together
/// within IMPORT_MAX_TOTAL_BYTES.
struct ExportDir {
    dir: PathBuf,
    listed: BTreeSet<String>,
    read_so_far: Cell<u64>,
}

/// Lists DIR and its node/, plugin/, volume/ and job/ subdirectories
/// (names only: nothing in them is opened or stat'ed).
fn list_export(dir: &Path) -> Result<ExportDir, String> {
    if !dir.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    let mut listed = BTreeSet::new();
    for sub in std::iter::once("").chain(EXPORT_DIRS) {
        let path = dir.join(sub);
        let entries = match std::fs::read_dir(&path) {
            Ok(entries) => entries,
            // A subdirectory not saved (or not a directory): listed as a name above.
            Err(_) if !sub.is_empty() => continue,
            Err(err) => {
                return Err(format!("{}: cannot read directory: {err}", path.display()));
            }
        };
        for entry in entries {
            let entry = entry.map_err(|err| format!("{}: {err}", path.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if sub.is_empty() && EXPORT_DIRS.contains(&name.as_str()) {
                continue;
            }
            if listed.len() >= IMPORT_MAX_ENTRIES {
                return Err(format!(
                    "{}: more than {IMPORT_MAX_ENTRIES} entries in it and its node/, plugin/, volume/ and job/ (IMPORT_MAX_ENTRIES)",
                    dir.display()
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
    })
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
        let left = IMPORT_MAX_TOTAL_BYTES.saturating_sub(self.read_so_far.get());
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
                    human_bytes(IMPORT_MAX_TOTAL_BYTES)
                )));
            }
            Err(ReadError::Refused(message)) => return Err(refused(message)),
        };
        self.read_so_far
            .set(self.read_so_far.get() + text.len() as u64);
        Ok(Some(text))
    }
}
