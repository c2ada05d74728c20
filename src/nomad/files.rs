//! `jobs: - file:` and `volumes: - file:` entries: each file is read, parsed
//! by its front end (HCL2 or JSON) and put in place of its entry as the raw
//! job or volume it describes, before the one resolver (`scenario::load`)
//! runs.
//! A mistake inside such a file is reported at the entry that names it, with
//! the file's own `path:line:column` in the message.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_saphyr::Spanned;

use super::hcl::var_file::parse_var_file;
use super::hcl::vars::{Assignment, VarInputs};
use super::job::{NomadJob, ignored_warning, to_raw_job};
use super::volume::{NomadVolume, to_raw_volume};
use super::{hcl, json, volume};
use crate::scenario::error::LoadError;
use crate::scenario::limits::HCL_MAX_VAR_FILES;
use crate::scenario::raw::*;

/// Where `file:` paths are resolved from, and how errors name the scenario.
pub struct FileContext<'a> {
    /// The scenario's directory; `None` for text that is not a file (an
    /// experiment's variant, a test's string), which may not use `file:`.
    pub base: Option<&'a Path>,
    pub scenario: &'a str,
}

impl FileContext<'_> {
    fn path(
        &self,
        file: &str,
        at: serde_saphyr::Location,
        field: &str,
    ) -> Result<PathBuf, LoadError> {
        match self.base {
            Some(_) if file == STDIN => Ok(PathBuf::from(STDIN)),
            Some(base) => Ok(base.join(file)),
            None => Err(at_entry(
                self,
                at,
                format!(
                    "{field}: a `file:` entry is read relative to its scenario file; this scenario is not one"
                ),
            )),
        }
    }
}

/// Each file's text and what it parsed to, by canonical path, within one
/// load: fifty entries naming one file read and parse it once.
/// A job file is parsed once per set of values given to its variables.
#[derive(Default)]
struct Parsed {
    jobs: BTreeMap<(PathBuf, String), NomadJob>,
    volumes: BTreeMap<PathBuf, NomadVolume>,
    var_files: BTreeMap<PathBuf, Vec<Assignment>>,
}

/// Whether a file holds JSON (Nomad decides the same way: a leading `{`).
fn is_json(text: &str) -> bool {
    text.trim_start().starts_with('{')
}

/// Replaces every `file:` entry with what its file describes. Warnings (the
/// placement fields plansim does not model) are appended to `warnings`.
pub fn expand(
    raw: &mut RawScenario,
    context: &FileContext,
    warnings: &mut Vec<LoadError>,
) -> Result<(), LoadError> {
    let mut parsed = Parsed::default();
    for (index, entry) in raw.jobs.iter_mut().enumerate() {
        expand_job(index, entry, context, &mut parsed, warnings)?;
    }
    for (index, entry) in raw.volumes.iter_mut().enumerate() {
        expand_volume(index, entry, context, &mut parsed, warnings)?;
    }
    Ok(())
}

/// A `jobs:` entry: a `file:` one becomes the job its file describes, with
/// the entry's submit_at and per-group counts.
fn expand_job(
    index: usize,
    entry: &mut Spanned<RawJob>,
    context: &FileContext,
    parsed: &mut Parsed,
    warnings: &mut Vec<LoadError>,
) -> Result<(), LoadError> {
    let Some(file) = entry.value.file.clone() else {
        if entry.value.count.is_some() {
            return Err(at_entry(
                context,
                entry.referenced,
                format!(
                    "jobs[{}].count: per-group counts are overrides for a `file:` entry; set groups[].count instead",
                    entry.value.id
                ),
            ));
        }
        if entry.value.vars.is_some() || entry.value.var_files.is_some() {
            return Err(at_entry(
                context,
                entry.referenced,
                format!(
                    "jobs[{}].vars: vars and var_files give values to a job file's variables; they need a `file:` entry",
                    entry.value.id
                ),
            ));
        }
        if entry.value.run_for.is_some() {
            return Err(at_entry(
                context,
                entry.referenced,
                format!(
                    "jobs[{}].run_for: per-task run times are for a `file:` entry; set run_for on the task instead",
                    entry.value.id
                ),
            ));
        }
        return Ok(());
    };
    let job = &entry.value;
    let extra = [
        ("id", !job.id.is_empty()),
        ("replicas", job.replicas.is_some()),
        ("type", job.job_type.is_some()),
        ("datacenters", job.datacenters.is_some()),
        ("priority", job.priority.is_some()),
        ("constraints", job.constraints.is_some()),
        ("groups", !job.groups.is_empty()),
        ("periodic", job.periodic.is_some()),
        ("parameterized", job.parameterized.is_some()),
    ];
    let field = format!("jobs[{index}]");
    let path = entry_path(
        context,
        entry.referenced,
        &field,
        &file,
        &extra,
        "submit_at, count (per group), run_for (per task), vars and var_files; the job file",
    )?;
    let label = path.display().to_string();
    let nested =
        |err: LoadError| at_entry(context, entry.referenced, format!("{field}.file: {err}"));
    // Errors name the file as the scenario wrote it (relative to the
    // scenario, whose path starts the message); warnings, which stand
    // alone, name it as found.
    let inputs = var_inputs(entry, context, &field, parsed)?;
    let key = (canonical(&path), inputs.key());
    let job = parsed_once(&mut parsed.jobs, key, || {
        let text = entry_text(context, entry.referenced, &field, &file, &path)?;
        if is_json(&text) {
            if !inputs.is_empty() {
                return Err(at_entry(
                    context,
                    entry.referenced,
                    format!(
                        "{field}.vars: {file} is a JSON job, which has no variables to give values to (vars and var_files are for HCL2 job files)"
                    ),
                ));
            }
            json::parse_job(&text, &file)
        } else {
            hcl::job::parse_job(&text, &file, &inputs)
        }
        .map_err(nested)
    })?;
    warnings.extend(undeclared_warnings(&inputs, &job, &file, context, entry));
    let (job_id, job_at) = (job.id.clone(), job.at);
    let (mut raw_job, ignored) = to_raw_job(job, &file, entry.referenced).map_err(nested)?;
    warnings.extend(ignored_warning(
        &label,
        &format!("job \"{job_id}\""),
        job_at,
        &ignored,
    ));
    raw_job.submit_at = entry.value.submit_at;
    for (group, count) in entry.value.count.iter().flatten() {
        let Some(target) = raw_job.groups.iter_mut().find(|g| g.value.name == *group) else {
            let names: Vec<&str> = raw_job
                .groups
                .iter()
                .map(|g| g.value.name.as_str())
                .collect();
            return Err(at_entry(
                context,
                entry.referenced,
                format!(
                    "jobs[{job_id}].count: job \"{job_id}\" has no group \"{group}\" (its groups: {})",
                    names.join(", ")
                ),
            ));
        };
        target.value.count = Some(*count);
    }
    set_run_times(&mut raw_job, entry, context)?;
    entry.value = raw_job;
    Ok(())
}

/// The values an entry gives its job file's variables: its `var_files` in
/// order, then its `vars` (Nomad reads `-var-file`s, then `-var`s; the
/// last value given wins). Each var file is read and parsed once per load.
fn var_inputs(
    entry: &Spanned<RawJob>,
    context: &FileContext,
    field: &str,
    parsed: &mut Parsed,
) -> Result<VarInputs, LoadError> {
    let mut inputs = VarInputs::default();
    let files = entry.value.var_files.as_deref().unwrap_or_default();
    if files.len() > HCL_MAX_VAR_FILES {
        return Err(at_entry(
            context,
            entry.referenced,
            format!(
                "{field}.var_files: {} files, more than HCL_MAX_VAR_FILES ({HCL_MAX_VAR_FILES})",
                files.len()
            ),
        ));
    }
    for (index, file) in files.iter().enumerate() {
        let at = format!("{field}.var_files[{index}]");
        let path = context.path(file, entry.referenced, &at)?;
        let assignments = parsed_once(&mut parsed.var_files, canonical(&path), || {
            let text = entry_text(context, entry.referenced, &at, file, &path)?;
            parse_var_file(&text, file)
                .map_err(|err| at_entry(context, entry.referenced, format!("{at}: {err}")))
        })?;
        inputs.assignments.extend(assignments);
    }
    for (name, value) in entry.value.vars.iter().flatten() {
        inputs.assignments.push(Assignment {
            name: name.clone(),
            value: value.clone(),
            from: format!("{field}.vars.{}", crate::names::one_line(name)),
        });
    }
    Ok(inputs)
}

/// A value given to a variable the job file does not declare: a warning
/// (an error under `--strict`), as Nomad's "Undefined -var variable" and
/// "Undefined variable" are (`collectInputVariableValues`).
fn undeclared_warnings(
    inputs: &VarInputs,
    job: &NomadJob,
    file: &str,
    context: &FileContext,
    entry: &Spanned<RawJob>,
) -> Vec<LoadError> {
    let declared = if job.variables.is_empty() {
        "none".to_string()
    } else {
        job.variables.join(", ")
    };
    inputs
        .assignments
        .iter()
        .filter(|given| !job.variables.contains(&given.name))
        .map(|given| {
            at_entry(
                context,
                entry.referenced,
                format!(
                    "{}: a value for variable \"{}\", which {file} does not declare (its variables: {declared}): it is ignored, as Nomad ignores it",
                    given.from,
                    crate::names::one_line(&given.name),
                ),
            )
        })
        .collect()
}

/// The entry's `run_for: {task: duration}`: each named task, in whichever
/// group, runs that long (a job file cannot say). A name no task has is an
/// error listing the job's tasks.
fn set_run_times(
    raw_job: &mut RawJob,
    entry: &Spanned<RawJob>,
    context: &FileContext,
) -> Result<(), LoadError> {
    for (task, run_for) in entry.value.run_for.iter().flatten() {
        let mut found = false;
        for group in &mut raw_job.groups {
            for target in group
                .value
                .tasks
                .iter_mut()
                .filter(|t| t.value.name == *task)
            {
                target.value.run_for = Some(*run_for);
                found = true;
            }
        }
        if !found {
            let names: Vec<String> = raw_job
                .groups
                .iter()
                .flat_map(|g| g.value.tasks.iter())
                .map(|t| crate::names::one_line(&t.value.name).into_owned())
                .collect();
            return Err(at_entry(
                context,
                entry.referenced,
                format!(
                    "jobs[{}].run_for: job \"{}\" has no task \"{}\" (its tasks: {})",
                    crate::names::one_line(&raw_job.id),
                    crate::names::one_line(&raw_job.id),
                    crate::names::one_line(task),
                    names.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// A `volumes:` entry: a `file:` one becomes the volume its spec describes,
/// with the entry's id and count.
fn expand_volume(
    index: usize,
    entry: &mut Spanned<RawVolume>,
    context: &FileContext,
    parsed_files: &mut Parsed,
    warnings: &mut Vec<LoadError>,
) -> Result<(), LoadError> {
    let Some(file) = entry.value.file.clone() else {
        return Ok(());
    };
    let volume = &entry.value;
    let extra = [
        ("plugin_id", !volume.plugin_id.is_empty()),
        ("access_mode", volume.access_mode.is_some()),
        ("attachment_mode", volume.attachment_mode.is_some()),
        ("topologies", volume.topologies.is_some()),
        ("capabilities", volume.capabilities.is_some()),
        ("type", volume.volume_type.is_some()),
    ];
    let field = format!("volumes[{index}]");
    let path = entry_path(
        context,
        entry.referenced,
        &field,
        &file,
        &extra,
        "id, count, register_at, namespace, node and node_pool; the volume spec",
    )?;
    let label = path.display().to_string();
    let nested =
        |err: LoadError| at_entry(context, entry.referenced, format!("{field}.file: {err}"));
    let parsed = parsed_once(&mut parsed_files.volumes, canonical(&path), || {
        let text = entry_text(context, entry.referenced, &field, &file, &path)?;
        if is_json(&text) {
            json::parse_volume(&text, &file)
        } else {
            volume::parse_volume_hcl(&text, &file)
        }
        .map_err(nested)
    })?;
    warnings.extend(ignored_warning(
        &label,
        &format!(
            "volume \"{}\"",
            if parsed.id.is_empty() {
                &parsed.name
            } else {
                &parsed.id
            }
        ),
        parsed.at,
        &parsed.ignored,
    ));
    let mut raw_volume = to_raw_volume(parsed, &file).map_err(nested)?;
    if !entry.value.id.is_empty() {
        raw_volume.id = entry.value.id.clone();
    }
    if raw_volume.id.is_empty() {
        return Err(at_entry(
            context,
            entry.referenced,
            format!("volumes[{index}].id: {file} has no id; give one here"),
        ));
    }
    raw_volume.count = entry.value.count;
    // When it is registered is the scenario's, not the spec's; so are the
    // namespace (`nomad volume create -namespace`) and, for a host volume,
    // the node it is created on, when the entry gives them.
    raw_volume.register_at = entry.value.register_at;
    let given = |scenario: &Option<String>, spec: Option<String>| scenario.clone().or(spec);
    raw_volume.namespace = given(&entry.value.namespace, raw_volume.namespace.take());
    raw_volume.node = given(&entry.value.node, raw_volume.node.take());
    raw_volume.node_pool = given(&entry.value.node_pool, raw_volume.node_pool.take());
    entry.value = raw_volume;
    Ok(())
}

/// Checks that a `file:` entry sets no field but those it may (`extra`
/// lists the others, with whether each is set); returns its file's path.
fn entry_path(
    context: &FileContext,
    at: serde_saphyr::Location,
    field: &str,
    file: &str,
    extra: &[(&str, bool)],
    allowed: &str,
) -> Result<PathBuf, LoadError> {
    if let Some((name, _)) = extra.iter().find(|(_, set)| *set) {
        return Err(at_entry(
            context,
            at,
            format!("{field}.{name}: a `file:` entry takes only {allowed} says the rest"),
        ));
    }
    context.path(file, at, &format!("{field}.file"))
}

/// A file's key in [`Parsed`]: its canonical path, if it has one (a missing
/// file keeps its path, and its read fails).
fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// What `key` parsed to, parsed by `parse` only the first time.
fn parsed_once<K: Ord, T: Clone>(
    cache: &mut BTreeMap<K, T>,
    key: K,
    parse: impl FnOnce() -> Result<T, LoadError>,
) -> Result<T, LoadError> {
    if let Some(parsed) = cache.get(&key) {
        return Ok(parsed.clone());
    }
    let parsed = parse()?;
    cache.insert(key, parsed.clone());
    Ok(parsed)
}

/// Reads a `file:` entry's file. A UTF-8 byte order mark is refused, in
/// JSON as Nomad refuses it (`nomad job run -json` decodes with Go's
/// `encoding/json`, which takes no BOM: "invalid character 'ï' looking for
/// beginning of value"), and in HCL alike rather than guessed at: a file
/// saved by an editor that adds one is refused plainly, not as malformed.
fn entry_text(
    context: &FileContext,
    at: serde_saphyr::Location,
    field: &str,
    file: &str,
    path: &Path,
) -> Result<String, LoadError> {
    let text = read_text(path)
        .map_err(|message| at_entry(context, at, format!("{field}.file: {file}: {message}")))?;
    if text.starts_with('\u{feff}') {
        return Err(at_entry(
            context,
            at,
            format!(
                "{field}.file: {file}:1:1: expected JSON or HCL text, found a UTF-8 byte order mark (EF BB BF) first, which Nomad's JSON decoder refuses too: save the file without it"
            ),
        ));
    }
    Ok(text)
}

fn at_entry(context: &FileContext, at: serde_saphyr::Location, message: String) -> LoadError {
    LoadError {
        file: context.scenario.to_string(),
        position: crate::scenario::error::Position::from_location(at),
        message,
    }
}

/// A `file:` of `-` is standard input (`plansim plan -`, `run -`).
const STDIN: &str = "-";

fn read_text(path: &Path) -> Result<String, String> {
    if path == Path::new(STDIN) {
        return read_stdin();
    }
    // A FIFO or a device would block or never end: only regular files.
    if path.exists() && !path.is_file() {
        return Err("not a regular file".to_string());
    }
    let bytes = crate::scenario::load::read::read_limited(path)?;
    String::from_utf8(bytes).map_err(|err| {
        format!(
            "not UTF-8 text (invalid byte at offset {})",
            err.utf8_error().valid_up_to()
        )
    })
}

/// Standard input, at most MAX_FILE_BYTES of it.
fn read_stdin() -> Result<String, String> {
    use std::io::Read;
    let limit = crate::scenario::limits::MAX_FILE_BYTES as u64;
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("cannot read standard input: {err}"))?;
    if bytes.len() as u64 > limit {
        return Err(format!(
            "standard input holds more than {} (MAX_FILE_BYTES)",
            crate::fsio::human_bytes(limit)
        ));
    }
    String::from_utf8(bytes).map_err(|err| {
        format!(
            "not UTF-8 text (invalid byte at offset {})",
            err.utf8_error().valid_up_to()
        )
    })
}
