//! `plansim plan JOBFILE... [--cluster SOURCE] [-var NAME=VALUE]...
//! [-var-file FILE]... [--nomad X.Y.Z] [--event "AT KIND ARGS"]...
//! [--format text|json]`

use std::path::{Path, PathBuf};

use clap::Args;

use super::output::{EXIT_BAD_INPUT, errln, out};
use crate::model::policy::Policy;
use crate::scenario::load::compose::{Composition, compose};

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// The Nomad job files to plan (HCL2 or JSON), as `nomad job plan` takes them.
    #[arg(required = true, value_name = "JOBFILE")]
    job_files: Vec<PathBuf>,
    #[command(flatten)]
    given: JobFileArgs,
    /// The Nomad release to answer for: 1.2.6 (naive) or 2.0.5 (validate and plan-aware); all by default.
    #[arg(long, value_name = "X.Y.Z")]
    nomad: Option<String>,
    /// A what-if event, in the scenario's event names: "5m node_down client-3", "10m scale web=5", "0s drain client-2 deadline=1h" (repeat).
    #[arg(long = "event", value_name = "AT KIND ARGS")]
    events: Vec<String>,
    /// The seed of the node shuffle (default: the cluster scenario's).
    #[arg(short, long, value_name = "N")]
    seed: Option<u64>,
    /// Refuse job files with fields that can change placement and that plansim does not model.
    #[arg(long)]
    strict: bool,
    /// Output format: text (Nomad's plan wording, then the simulation's) or json.
    #[arg(long, value_enum, default_value_t = super::explain_cmd::Format::Text)]
    format: super::explain_cmd::Format,
}

/// How job files given on the command line become a scenario: the
/// cluster around them, their variables and when they are submitted
/// (`plan` and `run JOBFILE` alike).
#[derive(Args, Debug)]
pub struct JobFileArgs {
    /// The cluster for job files: a scenario file, a directory or a debug archive `plansim import nomad` reads; none: a small default cluster (said on stderr).
    #[arg(long, value_name = "SOURCE", conflicts_with = "address")]
    cluster: Option<PathBuf>,
    /// Read the cluster live over Nomad's HTTP API (NOMAD_TOKEN, NOMAD_NAMESPACE, NOMAD_CACERT honoured), as `plansim import nomad --address` does.
    #[arg(long, value_name = "URL")]
    address: Option<String>,
    /// A value for a job file variable, as `nomad job plan -var` (repeat; a later one wins).
    #[arg(long = "var", value_name = "NAME=VALUE")]
    vars: Vec<String>,
    /// A variables file in HCL, as `nomad job plan -var-file` (repeat; read before the -var values).
    #[arg(long = "var-file", value_name = "FILE")]
    var_files: Vec<PathBuf>,
    /// When the job files are submitted (default: 0s, or 30s after the cluster scenario's last job).
    #[arg(long, value_name = "DURATION", value_parser = crate::model::time::parse_duration)]
    at: Option<crate::model::time::Millis>,
}

impl JobFileArgs {
    /// Refuses what applies to job files when none is given.
    pub(super) fn check_used(&self, job_files: &[PathBuf]) -> Result<(), String> {
        let set = self.cluster.is_some()
            || self.address.is_some()
            || !self.vars.is_empty()
            || !self.var_files.is_empty()
            || self.at.is_some();
        if set && job_files.is_empty() {
            return Err(
                "--cluster, -var, -var-file and --at apply to Nomad job files (.hcl, .nomad, .json), and none is given"
                    .to_string(),
            );
        }
        Ok(())
    }
}

/// The paths that name Nomad job files (by name: `.hcl`, `.nomad`,
/// `.json`), and the others (scenarios and directories of them).
pub(super) fn split_job_files(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    paths.iter().cloned().partition(|path| {
        path == Path::new("-")
            || path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .is_some_and(|n| {
                    n.ends_with(".hcl") || n.ends_with(".nomad") || n.ends_with(".json")
                })
    })
}

pub fn run(args: PlanArgs) -> u8 {
    match plan(&args) {
        Ok(code) => code,
        Err(message) => {
            errln!("{message}");
            EXIT_BAD_INPUT
        }
    }
}

fn plan(args: &PlanArgs) -> Result<u8, String> {
    let policies = policies_for(args.nomad.as_deref())?;
    let composed = compose_job_files(&args.job_files, &args.given, &args.events, args.strict)?;
    let scenario = &composed.scenario;
    let seed = args.seed.unwrap_or(scenario.seed);
    let outcome = crate::plan_command::plan(scenario, &composed.planned, &policies, seed);
    match args.format {
        super::explain_cmd::Format::Text => out(&outcome.text(scenario)),
        super::explain_cmd::Format::Json => out(&outcome.json(scenario)),
    }
    Ok(outcome.exit_code())
}

/// The scenario `job_files` make with what `given` says around them, its
/// warnings and notes said on stderr; under `strict` a warning refuses it.
pub(super) fn compose_job_files(
    job_files: &[PathBuf],
    given: &JobFileArgs,
    events: &[String],
    strict: bool,
) -> Result<crate::scenario::load::compose::Composed, String> {
    let vars = given
        .vars
        .iter()
        .map(|pair| {
            pair.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| {
                    format!(
                        "-var {:?}: expected NAME=VALUE",
                        crate::names::one_line(pair)
                    )
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let cwd = std::env::current_dir()
        .map_err(|err| format!("cannot read the current directory: {err}"))?;
    // `-` stays itself: standard input.
    let absolute = |path: &Path| {
        if path == Path::new("-") {
            "-".to_string()
        } else {
            cwd.join(path).display().to_string()
        }
    };
    let files: Vec<String> = job_files.iter().map(|p| absolute(p)).collect();
    let var_files: Vec<String> = given.var_files.iter().map(|p| absolute(p)).collect();
    let (cluster_text, base, label) = cluster_source(given, &cwd)?;
    let name = job_files
        .first()
        .and_then(|f| f.file_name())
        .map(|f| {
            f.to_string_lossy()
                .split('.')
                .next()
                .unwrap_or("plan")
                .to_string()
        })
        .unwrap_or_else(|| "plan".to_string());
    let composition = Composition {
        cluster: cluster_text.as_deref(),
        label: &label,
        name: &name,
        base: &base,
        job_files: &files,
        vars: &vars,
        var_files: &var_files,
        events,
        submit_at: given.at,
    };
    let composed = compose(&composition).map_err(|err| err.to_string())?;
    for warning in &composed.warnings {
        errln!("warning: {warning}");
    }
    if strict && !composed.warnings.is_empty() {
        return Err(format!(
            "{} warning(s), refused under --strict (nothing run)",
            composed.warnings.len()
        ));
    }
    if let Some(note) = &composed.default_cluster {
        errln!("note: {note}");
    }
    if given.at.is_none() && composed.submit_at > crate::model::time::Millis::ZERO {
        errln!(
            "note: the job files are submitted at {} s, 30 s after the cluster's last job (--at to change)",
            composed.submit_at
        );
    }
    Ok(composed)
}

/// The policies that answer for `--nomad`: each modelled release's.
fn policies_for(nomad: Option<&str>) -> Result<Vec<Policy>, String> {
    let policies: Vec<Policy> = match nomad {
        None => Policy::ALL.to_vec(),
        Some(version) => Policy::ALL
            .into_iter()
            .filter(|p| p.behaviour().release.version == version)
            .collect(),
    };
    if policies.is_empty() {
        let mut versions: Vec<&str> = Policy::ALL
            .iter()
            .map(|p| p.behaviour().release.version)
            .collect();
        versions.dedup();
        return Err(format!(
            "--nomad {:?}: plansim models Nomad {} (expected one of them)",
            crate::names::one_line(nomad.unwrap_or_default()),
            versions.join(" and ")
        ));
    }
    Ok(policies)
}

/// The cluster's scenario text, where its `file:` entries are read from,
/// and the name its errors give it: a scenario file as it is; an import
/// folder, a debug archive or a live `--address` as `plansim import nomad`
/// would write it; or none.
fn cluster_source(
    given: &JobFileArgs,
    cwd: &Path,
) -> Result<(Option<String>, PathBuf, String), String> {
    let (source, address, shown) = match (given.cluster.as_deref(), &given.address) {
        (None, None) => return Ok((None, cwd.to_path_buf(), "plan".to_string())),
        (None, Some(address)) => (
            None,
            super::import_cmd::AddressOptions::from_env(Some(address), None, None)?,
            crate::names::one_line(address).into_owned(),
        ),
        (Some(source), _) => {
            let name = source.to_string_lossy();
            let archive = name.ends_with(".tar.gz") || name.ends_with(".tgz");
            if !archive && !source.is_dir() {
                let text =
                    crate::scenario::load::read_text(source).map_err(|err| err.to_string())?;
                let base = cwd.join(source.parent().unwrap_or(Path::new(".")));
                return Ok((Some(text), base, crate::names::one_line_path(source)));
            }
            (Some(source), None, crate::names::one_line_path(source))
        }
    };
    let imported = super::import_cmd::import_from(source, address, "cluster", &shown)?;
    super::import_cmd::say_notes(&imported, source);
    Ok((Some(imported.yaml), cwd.to_path_buf(), shown))
}
