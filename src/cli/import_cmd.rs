//! `plansim import nomad [DIR | BUNDLE.tar.gz | --address URL] -o SCENARIO.yaml`:
//! a scenario from a Nomad cluster, read from saved HTTP API responses
//! (`export_dir.rs`), a `nomad operator debug` bundle (`bundle.rs`, laid
//! out by `import::debug`) or the live HTTP API (`http.rs`). Each source
//! is an `ExportSource` for `import::nomad::import`; the scenario is
//! checked to load before the output is claimed, and nothing is written
//! on any error.

mod bundle;
mod export_dir;
mod http;

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::output::{EXIT_BAD_INPUT, EXIT_OK, errln};
use crate::import::nomad::{Imported, import};
use crate::names::{one_line, one_line_path};
use crate::report::outdir;
use crate::scenario::error::LoadError;
use crate::scenario::limits::IMPORT_PER_PAGE;
use bundle::{BundleLimits, bundle_root, read_archive, read_bundle_dir};
use export_dir::{ImportLimits, list_export};
pub(super) use http::AddressOptions;
use http::{HttpExport, HttpLimits};

#[derive(Args, Debug)]
pub struct ImportArgs {
    #[command(subcommand)]
    source: ImportSource,
}

#[derive(Subcommand, Debug)]
enum ImportSource {
    /// A scenario from a Nomad cluster: saved HTTP API responses, a `nomad operator debug` archive, or the live API (see the README).
    Nomad {
        /// The directory of saved responses (nodes.json, node/<id>.json, plugins.json, ...), a `nomad operator debug` archive (BUNDLE.tar.gz) or the folder it unpacks to.
        #[arg(value_name = "DIR|BUNDLE.tar.gz", required = false)]
        source: Option<PathBuf>,
        /// Read the cluster over Nomad's HTTP API at this address (default: NOMAD_ADDR, when no DIR or BUNDLE is given).
        #[arg(long, value_name = "URL", conflicts_with = "source")]
        address: Option<String>,
        /// With --address: the namespace of the jobs, volumes and allocations read, or '*' for all (default: NOMAD_NAMESPACE, else default).
        #[arg(long, value_name = "NS", conflicts_with = "source")]
        namespace: Option<String>,
        /// With --address: a file holding the ACL token (default: NOMAD_TOKEN); sent as X-Nomad-Token.
        #[arg(long, value_name = "FILE", conflicts_with = "source")]
        token_file: Option<PathBuf>,
        /// With --address: entries asked for per page of a list (Nomad's per_page).
        #[arg(long, value_name = "N", default_value_t = IMPORT_PER_PAGE, value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "source")]
        per_page: u32,
        /// The scenario file to write (replaced only if plansim wrote it and it is unedited); '-' for standard output.
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
    let ImportSource::Nomad {
        source,
        address,
        namespace,
        token_file,
        per_page,
        out,
        force,
    } = args.source;
    let to_stdout = out.as_os_str() == "-";
    let name = match out.file_stem() {
        Some(stem) if !to_stdout => stem.to_string_lossy().into_owned(),
        _ => "imported".into(),
    };
    let file = if to_stdout {
        "<stdout>".to_string()
    } else {
        out.display().to_string()
    };
    // The environment is read only when no DIR or BUNDLE is given.
    let address = match &source {
        Some(_) => Ok(None),
        None => AddressOptions::from_env(
            address.as_deref(),
            namespace.as_deref(),
            token_file.as_deref(),
        )
        .map(|options| options.map(|o| AddressOptions { per_page, ..o })),
    };
    let imported = match address.and_then(|a| import_from(source.as_deref(), a, &name, &file)) {
        Ok(imported) => imported,
        Err(message) => {
            errln!("{}", one_line(&message));
            return EXIT_BAD_INPUT;
        }
    };
    // Every input is read (each file as it was parsed): the output may be none of them.
    let claimed = if to_stdout {
        None
    } else {
        match outdir::claim_file(&out, force) {
            Ok(claimed) => Some(claimed),
            Err(message) => {
                errln!("{}", one_line(&message));
                return EXIT_BAD_INPUT;
            }
        }
    };
    say_notes(&imported, source.as_deref());
    let text = outdir::stamp("import nomad", &imported.yaml);
    match claimed {
        Some(claimed) => {
            if let Err(message) = claimed.write(text.as_bytes()) {
                errln!("{}", one_line(&message));
                return EXIT_BAD_INPUT;
            }
        }
        None => super::output::out(&text),
    }
    EXIT_OK
}

/// The folder of saved responses `source` is, if it is one (not a debug
/// folder): its notes name its files relative to it.
fn export_dir(source: Option<&Path>) -> Option<&Path> {
    source.filter(|path| path.is_dir() && bundle_root(path).is_none())
}

/// The scenario a cluster source gives: an export folder, a debug archive
/// or folder, or, with no `source`, the live cluster `address` names.
pub(super) fn import_from(
    source: Option<&Path>,
    address: Option<AddressOptions>,
    name: &str,
    file: &str,
) -> Result<Imported, String> {
    match (source, export_dir(source)) {
        (_, Some(dir)) => import_dir(dir, name, file),
        (Some(path), None) => import_archive(path, name, file),
        (None, None) => match address {
            Some(options) => import_address(&options, name, file),
            None => Err("import nomad: give a DIR of saved responses, a BUNDLE.tar.gz of nomad operator debug, or --address URL (or set NOMAD_ADDR)".into()),
        },
    }
}

/// Says an import's notes on stderr: those naming files of an export
/// folder name them under it, the others as they are; names are data.
pub(super) fn say_notes(imported: &Imported, source: Option<&Path>) {
    for note in &imported.notes {
        let line = match (note.strip_prefix("warning: "), export_dir(source)) {
            (Some(w), Some(dir)) => format!("warning: {}", one_line_path(&dir.join(w))),
            (Some(_), None) => note.clone(),
            (None, _) => format!("note: {note}"),
        };
        errln!("{}", one_line(&line));
    }
}

/// The scenario named `name` an export directory gives, checked to load
/// (as `file`, the name its errors give it), or the message why not. Its
/// notes name the export's files relative to `dir` (`warning:
/// job/x.json:...`). A `nomad operator debug` folder is read as
/// [`import_archive`] reads it.
pub(super) fn import_dir(dir: &Path, name: &str, file: &str) -> Result<Imported, String> {
    if bundle_root(dir).is_some() {
        return import_archive(dir, name, file);
    }
    let files =
        list_export(dir, ImportLimits::REAL).map_err(|message| one_line(&message).into_owned())?;
    let imported = import(&files, name).map_err(|mut err| {
        err.file = dir.join(&err.file).display().to_string();
        err.to_string()
    })?;
    checked(imported, name, file, &one_line_path(dir))
}

/// The scenario a `nomad operator debug` archive (`.tar.gz`), or the
/// folder it unpacks to, gives: the latest capture in it, as
/// [`import_dir`]. Its notes are ready to print: a warning names the
/// bundle and its file (`warning: BUNDLE: interval/0003/...`).
pub(super) fn import_archive(path: &Path, name: &str, file: &str) -> Result<Imported, String> {
    let shown = one_line_path(path);
    let export = if path.is_dir() {
        let root = bundle_root(path).ok_or_else(|| {
            format!("{shown}: not a nomad operator debug folder (no cluster/ or interval/ in it) nor an export (no nodes.json)")
        })?;
        read_bundle_dir(&root, BundleLimits::REAL)?
    } else {
        read_archive(path, BundleLimits::REAL)?
    };
    let mut imported = import(&export, name).map_err(|mut err| {
        err.file = format!("{shown}: {}", export.shown(&err.file));
        err.to_string()
    })?;
    let mut notes = export.notes().to_vec();
    notes.extend(
        imported
            .notes
            .drain(..)
            .map(|note| shown_warning(&note, |path| format!("{shown}: {}", export.shown(path)))),
    );
    imported.notes = notes;
    checked(imported, name, file, &shown)
}

/// The scenario a live cluster gives, read over its HTTP API, as
/// [`import_dir`]. Its notes are ready to print: a warning names the URL
/// it was read from.
pub(super) fn import_address(
    options: &AddressOptions,
    name: &str,
    file: &str,
) -> Result<Imported, String> {
    let (export, mut notes) = HttpExport::new(options, HttpLimits::REAL)?;
    let mut imported = import(&export, name).map_err(|err| address_error(&export, err))?;
    notes.extend(
        imported
            .notes
            .drain(..)
            .map(|note| shown_warning(&note, |path| export.shown(path))),
    );
    imported.notes = notes;
    checked(imported, name, file, export.base())
}

/// An import error over HTTP: one that names its URL as it is, another
/// with the URL of the file it is about.
fn address_error(export: &HttpExport, err: LoadError) -> String {
    if err.file.is_empty() || err.message.starts_with(export.base()) {
        return err.message;
    }
    let mut err = err;
    err.file = export.shown(&err.file);
    err.to_string()
}

/// A `warning: <export path>:...` note with the path as `shown` names it.
fn shown_warning(note: &str, shown: impl Fn(&str) -> String) -> String {
    let Some(warning) = note.strip_prefix("warning: ") else {
        return note.to_string();
    };
    match warning.split_once(':') {
        Some((path, rest)) => format!("warning: {}:{rest}", shown(path)),
        None => note.to_string(),
    }
}

/// What is written must load: checked before anything is written.
fn checked(imported: Imported, name: &str, file: &str, source: &str) -> Result<Imported, String> {
    if let Err(err) = crate::scenario::load_str(&imported.yaml, file, name) {
        // A limit the export goes past (YAML_MAX_NODES, MAX_ALLOCATIONS, ...)
        // is the export's size; anything else is plansim's mistake.
        let message = err.to_string();
        return Err(
            if LIMIT_NAMES
                .iter()
                .any(|limit| message.contains(&format!("({limit})")))
            {
                format!(
                    "{source}: the export is too large for one scenario (nothing written): {err}"
                )
            } else {
                format!("the imported scenario does not load (please report this): {err}")
            },
        );
    }
    Ok(imported)
}
