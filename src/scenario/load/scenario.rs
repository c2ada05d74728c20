//! The top level: a scenario file's text through the Nomad `file:` entries
//! to the raw types, then each section resolved in order (each in the module
//! named after it), the first problem returned as a [`LoadError`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::budget::check_allocation_budget;
use super::cluster::resolve_cluster;
use super::entries::DriverNames;
use super::events::{DanglingEvents, resolve_events};
use super::expect::resolve_expectations;
use super::host_volumes::{resolve_host_plugins, resolve_host_volumes, take_host_entries};
use super::initial::resolve_initial_allocations;
use super::jobs::{expand_datacenter_globs, resolve_jobs};
use super::nodes::resolve_nodes;
use super::plugins::{declare_job_plugins, resolve_plugins};
use super::read::{read_text, yaml_options};
use super::volumes::resolve_volumes;
use crate::model::ids::{PluginId, VolumeId};
use crate::model::policy::Policy;
use crate::model::scenario::*;
use crate::model::time::Millis;
use crate::nomad::files::{FileContext, expand};
use crate::scenario::error::{Fail, LoadError, Position, yaml_error};
use crate::scenario::limits;
use crate::scenario::raw::*;
use crate::scenario::template::TemplateBudget;

const DEFAULT_HORIZON: Millis = Millis::from_secs(3600);

/// Reads and resolves a scenario file.
pub fn load_file(path: &Path) -> Result<Scenario, LoadError> {
    load_file_with_warnings(path).map(|(scenario, _)| scenario)
}

/// As [`load_file`], with the warnings: fields of Nomad files that could
/// change placement and that plansim does not model, and model
/// approximations the scenario relies on. `--strict` refuses a scenario
/// that has any.
pub fn load_file_with_warnings(path: &Path) -> Result<(Scenario, Vec<LoadError>), LoadError> {
    let label = path.display().to_string();
    let text = read_text(path)?;
    let stem = path
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scenario".to_string());
    let context = FileContext {
        base: Some(path.parent().unwrap_or(Path::new("."))),
        scenario: &label,
    };
    load_text(&text, &stem, DanglingEvents::Refuse, &context)
}

/// Parses and resolves scenario text. `file` labels errors; `default_name`
/// names the scenario when it has no `name:`.
pub fn load_str(text: &str, file: &str, default_name: &str) -> Result<Scenario, LoadError> {
    let context = FileContext {
        base: None,
        scenario: file,
    };
    load_text(text, default_name, DanglingEvents::Refuse, &context).map(|(scenario, _)| scenario)
}

/// As [`load_str`], for an experiment's variant of a scenario: a timeline
/// event that names a node or job the variant does not have is left out,
/// and said so in the returned warnings, instead of refusing the variant.
pub fn load_variant(
    text: &str,
    file: &str,
    default_name: &str,
) -> Result<(Scenario, Vec<String>), LoadError> {
    let context = FileContext {
        base: None,
        scenario: file,
    };
    load_text(text, default_name, DanglingEvents::Skip, &context)
        .map(|(scenario, warnings)| (scenario, warnings.into_iter().map(|w| w.message).collect()))
}

fn load_text(
    text: &str,
    default_name: &str,
    dangling: DanglingEvents,
    context: &FileContext,
) -> Result<(Scenario, Vec<LoadError>), LoadError> {
    let raw = parse_raw(text, context.scenario)?;
    finish(raw, default_name, dangling, context, |_| Ok(()))
}

/// The scenario text as the raw tree, not yet expanded or resolved.
pub(super) fn parse_raw(text: &str, file: &str) -> Result<RawScenario, LoadError> {
    if text.trim().is_empty() {
        return Err(LoadError {
            file: file.to_string(),
            position: None,
            message: "the file is empty: a scenario needs at least nodes and jobs".to_string(),
        });
    }
    serde_saphyr::from_str_with_options(text, yaml_options())
        .map_err(|err| yaml_error(file, text, &err))
}

/// Expands the raw tree's `file:` entries, lets `after_expand` change it
/// (a command composing a scenario adds what needs the jobs' groups), and
/// resolves it, with the warnings of both.
pub(super) fn finish(
    mut raw: RawScenario,
    default_name: &str,
    dangling: DanglingEvents,
    context: &FileContext,
    after_expand: impl FnOnce(&mut RawScenario) -> Result<(), LoadError>,
) -> Result<(Scenario, Vec<LoadError>), LoadError> {
    let file = context.scenario;
    let mut file_warnings = Vec::new();
    expand(&mut raw, context, &mut file_warnings)?;
    after_expand(&mut raw)?;
    let mut warnings = Vec::new();
    let scenario = resolve_scenario(raw, default_name, dangling, &mut warnings).map_err(
        |(location, message)| LoadError {
            file: file.to_string(),
            position: location.and_then(Position::from_location),
            message,
        },
    )?;
    file_warnings.extend(warnings.into_iter().map(|message| LoadError {
        file: file.to_string(),
        position: None,
        message,
    }));
    Ok((scenario, file_warnings))
}

fn resolve_scenario(
    mut raw: RawScenario,
    default_name: &str,
    dangling: DanglingEvents,
    warnings: &mut Vec<String>,
) -> Result<Scenario, Fail> {
    let name = raw.name.clone().unwrap_or_else(|| default_name.to_string());
    if name.trim().is_empty() {
        return Err((None, "name: must not be empty".to_string()));
    }
    crate::names::check(&name).map_err(|problem| (None, format!("name: the name {problem}")))?;
    if let Some(description) = &raw.description {
        crate::names::check_text(description, true)
            .map_err(|problem| (None, format!("description: {problem}")))?;
    }
    let horizon = raw.horizon.map_or(DEFAULT_HORIZON, |d| d.0);
    if horizon == Millis::ZERO {
        return Err((None, "horizon: must be longer than 0s".to_string()));
    }
    if horizon > limits::MAX_HORIZON {
        return Err((
            None,
            format!("horizon: {horizon}s exceeds the limit of 30d (MAX_HORIZON)"),
        ));
    }
    let policies = match &raw.schedulers {
        None => Policy::ALL.to_vec(),
        Some(listed) if listed.is_empty() => {
            return Err((
                None,
                "schedulers: list at least one policy (naive, validate, plan-aware)".into(),
            ));
        }
        Some(listed) => {
            let set: BTreeSet<Policy> = listed.iter().copied().collect();
            Policy::ALL
                .into_iter()
                .filter(|p| set.contains(p))
                .collect()
        }
    };
    let cluster = resolve_cluster(raw.cluster.unwrap_or_default())?;
    let start_time = match &raw.start_time {
        None => crate::model::periodic::WallClock::default(),
        Some(text) => crate::model::periodic::WallClock::parse(&text.value).ok_or_else(|| {
            (
                Some(text.referenced),
                format!(
                    "start_time: {:?} is not an RFC 3339 time in whole seconds (expected e.g. \"2026-01-05T00:00:00Z\")",
                    text.value
                ),
            )
        })?,
    };

    declare_job_plugins(&mut raw.plugins, &raw.jobs);
    let host_plugins = take_host_entries(&mut raw.plugins, |p| {
        p.plugin_type == Some(crate::scenario::raw::RawPluginType::Host)
    });
    let host_volumes = take_host_entries(&mut raw.volumes, |v| {
        v.volume_type == Some(crate::scenario::raw::RawVolumeType::Host)
    });
    let host_plugins = resolve_host_plugins(&host_plugins, &raw.plugins, &host_volumes)?;
    let mut plugins = resolve_plugins(&raw.plugins)?;
    let plugin_ids: BTreeMap<&str, PluginId> = plugins
        .iter()
        .enumerate()
        .map(|(i, p)| (p.name.as_str(), PluginId::from_index(i)))
        .collect();
    let mut drivers = DriverNames::default();
    let mut budget = TemplateBudget::default();
    let mut nodes = resolve_nodes(&raw.nodes, &plugin_ids, &mut drivers, &mut budget)?;
    let volumes = resolve_volumes(&raw.volumes, &plugin_ids, &mut budget)?;
    let host_volumes = resolve_host_volumes(&host_volumes, &mut nodes, &host_plugins, &drivers.0)?;
    let volume_by_name: BTreeMap<String, VolumeId> = volumes
        .iter()
        .enumerate()
        .map(|(i, v)| (v.name.clone(), VolumeId::from_index(i)))
        .collect();
    let mut jobs = resolve_jobs(
        &raw.jobs,
        &volume_by_name,
        &plugin_ids,
        horizon,
        start_time,
        &mut drivers,
        &mut budget,
    )?;
    expand_datacenter_globs(&nodes, &mut jobs);
    crate::scenario::plugin_jobs::place_job_plugins(&mut nodes, &jobs, &drivers.0);
    let (mut events, event_positions) = resolve_events(
        &raw.events,
        horizon,
        &nodes,
        &jobs,
        dangling,
        warnings,
        super::events::EventStorage {
            plugin_ids: &plugin_ids,
            volume_ids: &volume_by_name,
            volumes: &volumes,
            plugins: &plugins,
        },
    )?;
    super::periodic::stamp_dispatched_children(
        &mut jobs,
        &mut events,
        &event_positions,
        start_time,
    )?;
    super::periodic::check_unique_names(&jobs)?;
    crate::scenario::update::assign_versions(&mut jobs, &mut events);
    check_allocation_budget(&jobs, &events, nodes.len())?;
    let expectations = resolve_expectations(raw.expect, &policies)?;

    let mut initial = raw.initial_allocations;
    initial.extend(
        raw.initial_allocations_by_node
            .map(crate::scenario::raw::initial_by_node_entries)
            .unwrap_or_default(),
    );
    missing_volume_warnings(&jobs, &volume_by_name, warnings);
    let initial_allocations =
        resolve_initial_allocations(&initial, &jobs, &nodes, &volume_by_name, &volumes)?;
    crate::scenario::plugin_jobs::note_job_controllers(&mut plugins, &jobs);
    Ok(Scenario {
        name,
        description: raw.description.unwrap_or_default().trim().to_string(),
        seed: raw.seed.unwrap_or(0),
        horizon,
        policies,
        cluster,
        nodes,
        plugins,
        volumes,
        jobs,
        events,
        expectations,
        initial_allocations,
        volume_by_name,
        driver_names: drivers.0,
        start_time,
        host_volumes,
        host_plugins,
    })
}

/// One warning per volume request whose source names no volume (a
/// periodic or dispatched child shares its parent's): Nomad registers such
/// a job, and every placement finds the volume missing.
fn missing_volume_warnings(
    jobs: &[JobSpec],
    volume_by_name: &BTreeMap<String, VolumeId>,
    warnings: &mut Vec<String>,
) {
    for job in jobs.iter().filter(|j| j.launch.parent().is_none()) {
        for group in &job.groups {
            for request in &group.volumes {
                let (missing, source) = match &request.source {
                    VolumeSource::Missing { name } => {
                        (format!("no volume with id \"{name}\""), name)
                    }
                    VolumeSource::PerAlloc { base } => {
                        let prefix = format!("{base}[");
                        let any = volume_by_name
                            .range(prefix.clone()..)
                            .next()
                            .is_some_and(|(name, _)| name.starts_with(&prefix));
                        if any {
                            continue;
                        }
                        let needs = format!(
                            "per_alloc needs volumes named \"{base}[0]\", \"{base}[1]\", ...; none"
                        );
                        (needs, base)
                    }
                    VolumeSource::Shared(_) => continue,
                };
                let path = format!(
                    "jobs[{}].groups[{}].volumes[{}].source",
                    job.name, group.name, request.alias
                );
                // jobspec2 keeps an interpolation it cannot resolve as
                // written, for a template tool to fill in.
                let hint = if source.contains("${") {
                    " (it looks like a placeholder the file leaves for a template tool: give the volume's id, e.g. with vars:)"
                } else {
                    ""
                };
                warnings.push(format!(
                    "{path}: {missing} is under volumes: Nomad registers the job, and its placements find the volume missing{hint}"
                ));
            }
        }
    }
}
