//! `plansim import nomad DIR --out SCENARIO.yaml`

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::output::{EXIT_BAD_INPUT, EXIT_OK};
use crate::import::nomad::{ExportFiles, import};
use crate::report::outdir;
use crate::scenario::load::read_limited;

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

/// Most files one export may hold.
const MAX_EXPORT_FILES: usize = 100_000;

pub fn run(args: ImportArgs) -> u8 {
    let ImportSource::Nomad { dir, out, force } = args.source;
    let files = match read_export(&dir) {
        Ok(files) => files,
        Err(message) => {
            eprintln!("{message}");
            return EXIT_BAD_INPUT;
        }
    };
    // Every input is read: the output may be none of them.
    let claimed = match outdir::claim_file(&out, force) {
        Ok(claimed) => claimed,
        Err(message) => {
            eprintln!("{message}");
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
        eprintln!("the imported scenario does not load (please report this): {err}");
        return EXIT_BAD_INPUT;
    }
    for note in &imported.notes {
        eprintln!(
            "{}",
            note.strip_prefix("warning: ").map_or_else(
                || format!("note: {note}"),
                |w| format!("warning: {}", dir.join(w).display())
            )
        );
    }
    let text = outdir::stamp("import nomad", &imported.yaml);
    if let Err(message) = claimed.write(text.as_bytes()) {
        eprintln!("{message}");
        return EXIT_BAD_INPUT;
    }
    EXIT_OK
}

/// Every `*.json` directly in DIR and in its node/, plugin/, volume/ and
/// job/ subdirectories, each read up to MAX_FILE_BYTES.
fn read_export(dir: &Path) -> Result<ExportFiles, String> {
    if !dir.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    let mut files = ExportFiles::new();
    for sub in ["", "node", "plugin", "volume", "job"] {
        let path = dir.join(sub);
        if !path.is_dir() {
            continue;
        }
        let entries = std::fs::read_dir(&path)
            .map_err(|err| format!("{}: cannot read directory: {err}", path.display()))?;
        for entry in entries {
            let entry = entry.map_err(|err| format!("{}: {err}", path.display()))?;
            let file = entry.path();
            if !file.is_file() {
                continue;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let key = if sub.is_empty() {
                name
            } else {
                format!("{sub}/{name}")
            };
            if files.len() >= MAX_EXPORT_FILES {
                return Err(format!(
                    "{}: more than {MAX_EXPORT_FILES} files (MAX_EXPORT_FILES)",
                    dir.display()
                ));
            }
            let bytes =
                read_limited(&file).map_err(|message| format!("{}: {message}", file.display()))?;
            let text = String::from_utf8(bytes)
                .map_err(|_| format!("{}: not UTF-8 text", file.display()))?;
            files.insert(key, text);
        }
    }
    Ok(files)
}
