//! From YAML text to a resolved [`Scenario`]: parse, stamp out templates,
//! resolve names to ids and check every reference. The first problem found is
//! returned as a [`LoadError`]; nothing is partially loaded.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_saphyr::{Location, Spanned};

use super::error::{LoadError, Position};
use super::limits;
use super::raw::*;
use super::template::{INDEX_PLACEHOLDER, Stamp, TemplateBudget};
use crate::model::access::ClaimMode;
use crate::model::expect::{Expectation, parse_comparison};
use crate::model::ids::{JobId, NodeId, PluginId, VolumeId};
use crate::model::policy::Policy;
use crate::model::scenario::*;
use crate::model::time::Millis;

const DEFAULT_HORIZON: Millis = Millis::from_secs(3600);
const DEFAULT_PUBLISH_LATENCY: Millis = Millis(500);
const DEFAULT_NODE_CPU: u64 = 4000;
const DEFAULT_NODE_MEMORY: u64 = 8192;
/// Nomad's defaults for a task's resources.
const DEFAULT_TASK_CPU: u64 = 100;
const DEFAULT_TASK_MEMORY: u64 = 300;
const DEFAULT_PRIORITY: u32 = 50;

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
    let context = super::nomad_files::FileContext {
        base: Some(path.parent().unwrap_or(Path::new("."))),
        scenario: &label,
    };
    load_text(&text, &stem, DanglingEvents::Refuse, &context)
}

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
    message
}

/// Parses and resolves scenario text. `file` labels errors; `default_name`
/// names the scenario when it has no `name:`.
pub fn load_str(text: &str, file: &str, default_name: &str) -> Result<Scenario, LoadError> {
    let context = super::nomad_files::FileContext {
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
    let context = super::nomad_files::FileContext {
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
    context: &super::nomad_files::FileContext,
) -> Result<(Scenario, Vec<LoadError>), LoadError> {
    let file = context.scenario;
    if text.trim().is_empty() {
        return Err(LoadError {
            file: file.to_string(),
            position: None,
            message: "the file is empty: a scenario needs at least nodes and jobs".to_string(),
        });
    }
    let mut raw: RawScenario = serde_saphyr::from_str_with_options(text, yaml_options())
        .map_err(|err| yaml_error(file, text, &err))?;
    let mut file_warnings = Vec::new();
    super::nomad_files::expand(&mut raw, context, &mut file_warnings)?;
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

/// An error message with the place it belongs to, before the file is attached.
pub(super) type Fail = (Option<Location>, String);

pub(super) fn fail<T>(location: Location, message: impl Into<String>) -> Result<T, Fail> {
    Err((Some(location), message.into()))
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

    declare_job_plugins(&mut raw.plugins, &raw.jobs);
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
        &mut drivers,
        &mut budget,
    )?;
    expand_datacenter_globs(&nodes, &mut jobs);
    super::plugin_jobs::place_job_plugins(&mut nodes, &jobs);
    let mut events = resolve_events(
        &raw.events,
        horizon,
        &nodes,
        &plugin_ids,
        &jobs,
        dangling,
        warnings,
    )?;
    super::update::assign_versions(&mut jobs, &mut events);
    check_allocation_budget(&jobs, &events, nodes.len())?;
    let expectations = resolve_expectations(raw.expect, &policies)?;

    let initial_allocations =
        resolve_initial_allocations(&raw.initial_allocations, &jobs, &nodes, &volume_by_name)?;
    super::plugin_jobs::note_job_controllers(&mut plugins, &jobs);
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
    })
}

/// Driver names seen so far; their positions are `DriverSet` bits.
#[derive(Default)]
struct DriverNames(Vec<String>);

impl DriverNames {
    fn set<'a>(
        &mut self,
        names: impl IntoIterator<Item = &'a str>,
        at: Location,
        path: &dyn Fn() -> String,
    ) -> Result<DriverSet, Fail> {
        let mut set = DriverSet::default();
        for name in names {
            let index = match self.0.iter().position(|known| known == name) {
                Some(index) => index,
                None if self.0.len() < DriverSet::CAPACITY => {
                    self.0.push(name.to_string());
                    self.0.len() - 1
                }
                None => {
                    return fail(
                        at,
                        format!(
                            "{}: more than {} distinct driver names in one scenario",
                            path(),
                            DriverSet::CAPACITY
                        ),
                    );
                }
            };
            set = set.with(index);
        }
        Ok(set)
    }
}

fn resolve_cluster(raw: RawCluster) -> Result<ClusterConfig, Fail> {
    let defaults = ClusterConfig::default();
    let workers = raw.scheduler_workers.unwrap_or(defaults.scheduler_workers);
    if workers == 0 || workers > limits::MAX_SCHEDULER_WORKERS {
        return Err((
            None,
            format!(
                "cluster.scheduler_workers: {workers} is out of range 1..={} (MAX_SCHEDULER_WORKERS)",
                limits::MAX_SCHEDULER_WORKERS
            ),
        ));
    }
    let or = |value: Option<RawDuration>, default: Millis| value.map_or(default, |d| d.0);
    Ok(ClusterConfig {
        scheduler_workers: workers,
        scheduler_algorithm: raw
            .scheduler_algorithm
            .unwrap_or(defaults.scheduler_algorithm),
        scheduler_latency: or(raw.scheduler_latency, defaults.scheduler_latency),
        pull_delay: or(raw.pull_delay, defaults.pull_delay),
        node_detach_latency: or(raw.node_detach_latency, defaults.node_detach_latency),
        controller_detach_latency: or(
            raw.controller_detach_latency,
            defaults.controller_detach_latency,
        ),
        claim_free_latency: or(raw.claim_free_latency, defaults.claim_free_latency),
        claim_retry_deadline: or(raw.claim_retry_deadline, defaults.claim_retry_deadline),
        csi_volume_claim_gc_interval: positive(
            "csi_volume_claim_gc_interval",
            or(
                raw.csi_volume_claim_gc_interval,
                defaults.csi_volume_claim_gc_interval,
            ),
        )?,
        csi_volume_claim_gc_threshold: or(
            raw.csi_volume_claim_gc_threshold,
            defaults.csi_volume_claim_gc_threshold,
        ),
        node_gc_threshold: or(raw.node_gc_threshold, defaults.node_gc_threshold),
        node_gc_interval: positive(
            "node_gc_interval",
            or(raw.node_gc_interval, defaults.node_gc_interval),
        )?,
        heartbeat_grace: or(raw.heartbeat_grace, defaults.heartbeat_grace),
    })
}

/// Stamps out a template entry `count` times, or returns it once. Before
/// anything is stamped, the copies are checked against the entry kind's
/// limit (`have` entries so far) and charged to the template byte budget;
/// copies are then made one at a time, as the caller consumes them.
#[allow(clippy::too_many_arguments)]
fn expand<'e, T: Clone + Stamp>(
    entry: &'e Spanned<T>,
    id: &str,
    count: Option<RawCount>,
    what: &str,
    count_field: &str,
    (have, limit, limit_name): (usize, usize, &str),
    budget: &mut TemplateBudget,
) -> Result<impl Iterator<Item = T> + 'e, Fail> {
    let name = crate::names::shown(id);
    let count = count.map_or(1, |c| c.0);
    if count == 0 {
        return fail(
            entry.referenced,
            format!("{what}[{name}].{count_field}: must be at least 1"),
        );
    }
    if count > 1 && !id.contains(INDEX_PLACEHOLDER) {
        return fail(
            entry.referenced,
            format!(
                "{what}[{name}].{count_field}: {count} copies need distinct ids: put {{i}} in the id (e.g. \"{name}-{{i}}\")"
            ),
        );
    }
    if have.saturating_add(count as usize) > limit {
        return fail(
            entry.referenced,
            format!(
                "{what}[{name}].{count_field}: {count} copies would make {} {what}, more than the limit of {limit} ({limit_name})",
                have.saturating_add(count as usize)
            ),
        );
    }
    // Every string of the entry may reach a terminal, Markdown or CSV.
    let mut control = None;
    entry.value.strings(&mut |text| {
        if control.is_none() {
            control = crate::names::check_text(text, false)
                .err()
                .map(|problem| format!("\"{}\" {problem}", crate::names::shown(text)));
        }
    });
    if let Some(problem) = control {
        return fail(entry.referenced, format!("{what}[{name}]: {problem}"));
    }
    budget.charge(&entry.value, count).map_err(|message| {
        (
            Some(entry.referenced),
            format!("{what}[{name}].{count_field}: {message}"),
        )
    })?;
    Ok((0..count).map(move |i| {
        let mut copy = entry.value.clone();
        copy.stamp(&i.to_string());
        copy
    }))
}

/// Remembers ids seen so far and refuses the second of a pair.
struct UniqueIds<'a> {
    what: &'a str,
    /// Membership only, never iterated, so its order cannot reach any
    /// output: a hash set, because a 40,000-node snapshot inserts 40,000
    /// ids, which an ordered set compares string by string (a fifth of the
    /// whole load). Its seeded SipHash keeps hostile ids from colliding on
    /// purpose.
    #[allow(clippy::disallowed_types)]
    seen: std::collections::HashSet<String>,
}

impl<'a> UniqueIds<'a> {
    fn new(what: &'a str) -> Self {
        UniqueIds {
            what,
            seen: Default::default(),
        }
    }

    /// Room for `more` ids, counted against their limit by the caller.
    fn reserve(&mut self, more: usize) {
        self.seen.reserve(more);
    }

    fn insert(&mut self, id: &str, at: Location) -> Result<(), Fail> {
        if id.trim().is_empty() {
            return fail(at, format!("{}: an id must not be empty", self.what));
        }
        // The id as shown in a message is made only for a message: a
        // 40,000-node scenario checks 40,000 ids.
        let shown = || crate::names::shown(id);
        if let Err(problem) = crate::names::check(id) {
            return fail(at, format!("{}[{}]: the id {problem}", self.what, shown()));
        }
        if !self.seen.insert(id.to_string()) {
            let shown = shown();
            return fail(
                at,
                format!("{}[{shown}]: \"{shown}\" is used twice", self.what),
            );
        }
        Ok(())
    }
}

fn resolve_plugins(raw: &[Spanned<RawPlugin>]) -> Result<Vec<PluginSpec>, Fail> {
    let mut ids = UniqueIds::new("plugins");
    raw.iter()
        .map(|entry| {
            let plugin = &entry.value;
            ids.insert(&plugin.id, entry.referenced)?;
            Ok(PluginSpec {
                name: plugin.id.clone(),
                enforces_access_mode: plugin.enforces_access_mode,
                publish_latency: plugin
                    .publish_latency
                    .map_or(DEFAULT_PUBLISH_LATENCY, |d| d.0),
                controller_required: plugin.controller_required.unwrap_or(false),
                controller_publish_latency: plugin
                    .controller_publish_latency
                    .map_or(Millis::ZERO, |d| d.0),
                controller_healthy: plugin.controller_healthy.unwrap_or(true),
                // Set once the jobs are resolved (plugin_jobs::place_job_plugins).
                controller_from_jobs: false,
            })
        })
        .collect()
}

fn resolve_nodes(
    raw: &[Spanned<RawNode>],
    plugin_ids: &BTreeMap<&str, PluginId>,
    driver_names: &mut DriverNames,
    budget: &mut TemplateBudget,
) -> Result<Vec<NodeSpec>, Fail> {
    let mut ids = UniqueIds::new("nodes");
    let mut nodes = Vec::new();
    for entry in raw {
        let at = entry.referenced;
        let limit = (nodes.len(), limits::MAX_NODES, "MAX_NODES");
        let copies = expand(
            entry,
            &entry.value.id,
            entry.value.count,
            "nodes",
            "count",
            limit,
            budget,
        )?;
        // `expand` checked the count against MAX_NODES.
        nodes.reserve(copies.size_hint().0);
        ids.reserve(copies.size_hint().0);
        for node in copies {
            ids.insert(&node.id, at)?;
            // Named for a message only: most nodes never need it.
            let path = || format!("nodes[{}]", node.id);
            let mut csi_plugins = Vec::new();
            let mut seen_plugins = BTreeSet::new();
            for plugin in node.csi_plugins.iter().flatten() {
                let Some(&id) = plugin_ids.get(plugin.id.as_str()) else {
                    return fail(
                        at,
                        format!(
                            "{}.csi_plugins[{}]: no plugin with id \"{}\" under plugins",
                            path(),
                            plugin.id,
                            plugin.id
                        ),
                    );
                };
                if !seen_plugins.insert(id) {
                    return fail(
                        at,
                        format!("{}.csi_plugins[{}]: listed twice", path(), plugin.id),
                    );
                }
                csi_plugins.push(NodePluginSpec {
                    plugin: id,
                    healthy: plugin.healthy.unwrap_or(true),
                    max_volumes: plugin.max_volumes.unwrap_or(0),
                    from_job: false,
                });
            }
            let cpu = node.cpu.unwrap_or(DEFAULT_NODE_CPU);
            let memory = node.memory.unwrap_or(DEFAULT_NODE_MEMORY);
            if cpu == 0 || memory == 0 {
                return fail(
                    at,
                    format!("{}: cpu and memory must be greater than 0", path()),
                );
            }
            let drivers = match &node.drivers {
                Some(list) => driver_names.set(list.iter().map(String::as_str), at, &path)?,
                None => driver_names.set(["docker", "exec"], at, &path)?,
            };
            nodes.push(NodeSpec {
                name: node.id,
                datacenter: node.datacenter.unwrap_or_else(|| "dc1".to_string()),
                node_class: node.node_class.unwrap_or_default(),
                attributes: node.attributes.unwrap_or_default(),
                cpu,
                memory,
                drivers,
                topology: node.topology.unwrap_or_default(),
                csi_plugins,
            });
        }
    }
    Ok(nodes)
}

fn resolve_volumes(
    raw: &[Spanned<RawVolume>],
    plugin_ids: &BTreeMap<&str, PluginId>,
    budget: &mut TemplateBudget,
) -> Result<Vec<VolumeSpec>, Fail> {
    let mut ids = UniqueIds::new("volumes");
    let mut volumes = Vec::new();
    for entry in raw {
        let at = entry.referenced;
        let limit = (volumes.len(), limits::MAX_VOLUMES, "MAX_VOLUMES");
        let copies = expand(
            entry,
            &entry.value.id,
            entry.value.count,
            "volumes",
            "count",
            limit,
            budget,
        )?;
        for volume in copies {
            ids.insert(&volume.id, at)?;
            if volume.plugin_id.is_empty() {
                return fail(at, format!("volumes[{}].plugin_id: missing", volume.id));
            }
            let Some(&plugin) = plugin_ids.get(volume.plugin_id.as_str()) else {
                return fail(
                    at,
                    format!(
                        "volumes[{}].plugin_id: no plugin with id \"{}\" under plugins",
                        volume.id, volume.plugin_id
                    ),
                );
            };
            let attachment_mode = volume
                .attachment_mode
                .map_or(AttachmentMode::FileSystem, attachment);
            let capabilities = match (volume.access_mode, &volume.capabilities) {
                (Some(access_mode), None) => vec![Capability {
                    access_mode,
                    attachment_mode,
                }],
                (None, Some(list)) if !list.is_empty() => list
                    .iter()
                    .map(|c| Capability {
                        access_mode: c.access_mode,
                        attachment_mode: attachment(c.attachment_mode),
                    })
                    .collect(),
                (None, _) => {
                    return fail(
                        at,
                        format!(
                            "volumes[{}]: needs access_mode (one capability) or a non-empty capabilities list",
                            volume.id
                        ),
                    );
                }
                (Some(_), Some(_)) => {
                    return fail(
                        at,
                        format!(
                            "volumes[{}]: access_mode is a shorthand for capabilities; give one or the other, not both",
                            volume.id
                        ),
                    );
                }
            };
            volumes.push(VolumeSpec {
                name: volume.id.clone(),
                plugin,
                capabilities,
                shorthand: volume.access_mode,
                attachment_mode,
                topologies: volume.topologies.unwrap_or_default(),
            });
        }
    }
    Ok(volumes)
}

fn resolve_jobs(
    raw: &[Spanned<RawJob>],
    volume_by_name: &BTreeMap<String, VolumeId>,
    plugin_ids: &BTreeMap<&str, PluginId>,
    horizon: Millis,
    driver_names: &mut DriverNames,
    budget: &mut TemplateBudget,
) -> Result<Vec<JobSpec>, Fail> {
    let mut ids = UniqueIds::new("jobs");
    let mut jobs = Vec::new();
    for entry in raw {
        let at = entry.referenced;
        let limit = (jobs.len(), limits::MAX_JOBS, "MAX_JOBS");
        let copies = expand(
            entry,
            &entry.value.id,
            entry.value.replicas,
            "jobs",
            "replicas",
            limit,
            budget,
        )?;
        for job in copies {
            ids.insert(&job.id, at)?;
            let job = resolve_job(job, at, volume_by_name, plugin_ids, driver_names)?;
            if job.submit_at > horizon {
                return fail(
                    at,
                    format!(
                        "jobs[{}].submit_at: {}s is beyond the horizon of {horizon}s; the job would never be submitted",
                        job.name, job.submit_at
                    ),
                );
            }
            jobs.push(job);
        }
    }
    Ok(jobs)
}

fn resolve_job(
    job: RawJob,
    at: Location,
    volume_by_name: &BTreeMap<String, VolumeId>,
    plugin_ids: &BTreeMap<&str, PluginId>,
    driver_names: &mut DriverNames,
) -> Result<JobSpec, Fail> {
    let path = format!("jobs[{}]", job.id);
    let kind = match job.job_type.unwrap_or(RawJobType::Service) {
        RawJobType::Service => JobKind::Service,
        RawJobType::Batch => JobKind::Batch,
        RawJobType::System => JobKind::System,
        RawJobType::Sysbatch => JobKind::Sysbatch,
    };
    let datacenters = job
        .datacenters
        .clone()
        .unwrap_or_else(|| vec!["dc1".to_string()]);
    if datacenters.is_empty() {
        return fail(
            at,
            format!("{path}.datacenters: list at least one datacenter"),
        );
    }
    let priority = job.priority.unwrap_or(DEFAULT_PRIORITY);
    if !(1..=100).contains(&priority) {
        return fail(
            at,
            format!("{path}.priority: {priority} is outside Nomad's range 1..=100"),
        );
    }
    let constraints = resolve_constraints(job.constraints.as_deref().unwrap_or(&[]), at, &path)?;
    if job.groups.is_empty() {
        return fail(at, format!("{path}.groups: a job needs at least one group"));
    }
    let groups_path = format!("{path}.groups");
    let mut names = UniqueIds::new(&groups_path);
    let mut groups = Vec::new();
    for group in &job.groups {
        names.insert(&group.value.name, group.referenced)?;
        let mut resolved = resolve_group(group, &path, kind, volume_by_name, driver_names)?;
        resolved.csi_plugins = super::plugin_jobs::group_plugins(&group.value, plugin_ids);
        resolved.update =
            super::update::merge(kind, job.update.as_ref(), group.value.update.as_ref());
        groups.push(resolved);
    }
    Ok(JobSpec {
        name: job.id,
        kind,
        submit_at: job.submit_at.map_or(Millis::ZERO, |d| d.0),
        datacenters,
        priority,
        constraints,
        groups,
        spreads: super::placement::resolve_spreads(job.spread.as_deref(), &path)?,
        affinities: super::placement::resolve_affinities(job.affinity.as_deref(), &path)?,
        versions: Vec::new(),
        in_place_versions: Default::default(),
    })
}

fn resolve_constraints(
    raw: &[RawConstraint],
    at: Location,
    path: &str,
) -> Result<Vec<Constraint>, Fail> {
    raw.iter()
        .map(|c| super::placement::resolve_constraint(c, at, path))
        .collect()
}

/// `rack` and Nomad's `${attr.rack}` both name an attribute; `${node.*}`
/// names the node's own fields.
pub(super) fn parse_constraint_target(attribute: &str) -> Result<ConstraintTarget, String> {
    let trimmed = attribute.trim();
    let Some(inner) = trimmed.strip_prefix("${").and_then(|s| s.strip_suffix('}')) else {
        if trimmed.is_empty() {
            return Err("attribute must not be empty".to_string());
        }
        return Ok(ConstraintTarget::Attribute(trimmed.to_string()));
    };
    match inner {
        "node.datacenter" => Ok(ConstraintTarget::Datacenter),
        "node.class" => Ok(ConstraintTarget::NodeClass),
        "node.unique.name" | "node.unique.id" => Ok(ConstraintTarget::NodeName),
        other => match other
            .strip_prefix("attr.")
            .or_else(|| other.strip_prefix("meta."))
        {
            Some(key) if !key.is_empty() => Ok(ConstraintTarget::Attribute(key.to_string())),
            _ => Err(format!(
                "attribute \"{attribute}\" is not supported (use a plain name, ${{attr.NAME}}, ${{meta.NAME}}, ${{node.datacenter}}, ${{node.class}} or ${{node.unique.name}})"
            )),
        },
    }
}

fn resolve_group(
    entry: &Spanned<RawGroup>,
    job_path: &str,
    kind: JobKind,
    volume_by_name: &BTreeMap<String, VolumeId>,
    driver_names: &mut DriverNames,
) -> Result<GroupSpec, Fail> {
    let at = entry.referenced;
    let group = &entry.value;
    let path = format!("{job_path}.groups[{}]", group.name);
    let count = group.count.map_or(1, |c| c.0);
    check_allocation_count(count, &format!("{path}.count"), at)?;
    crate::scenario::system::check_system_group(kind, group, &path, at)?;
    let mut volumes = Vec::new();
    for (alias, request) in group.volumes.iter().flatten() {
        let request_path = format!("{path}.volumes[{alias}]");
        let raw = &request.value;
        if raw.volume_type == RawVolumeType::Host {
            return fail(
                request.referenced,
                format!(
                    "{request_path}.type: host volumes are out of scope; plansim models CSI volumes (type: csi)"
                ),
            );
        }
        let per_alloc = raw.per_alloc.unwrap_or(false);
        let source = if per_alloc {
            let prefix = format!("{}[", raw.source);
            // The first name at or after the prefix: a lookup, not a scan
            // (a scan per group is quadratic with many replicas and volumes).
            let found = volume_by_name
                .range(prefix.clone()..)
                .next()
                .is_some_and(|(name, _)| name.starts_with(&prefix));
            if !found {
                return fail(
                    request.referenced,
                    format!(
                        "{request_path}.source: per_alloc needs volumes named \"{0}[0]\", \"{0}[1]\", ...; none exists",
                        raw.source
                    ),
                );
            }
            VolumeSource::PerAlloc {
                base: raw.source.clone(),
            }
        } else {
            match volume_by_name.get(&raw.source) {
                Some(&id) => VolumeSource::Shared(id),
                None => {
                    return fail(
                        request.referenced,
                        format!(
                            "{request_path}.source: no volume with id \"{}\" under volumes",
                            raw.source
                        ),
                    );
                }
            }
        };
        volumes.push(VolumeRequest {
            alias: alias.clone(),
            source,
            mode: ClaimMode::from_read_only(raw.read_only.unwrap_or(false)),
            access_mode: raw.access_mode,
            attachment_mode: raw.attachment_mode.map(attachment),
        });
    }
    if group.tasks.is_empty() {
        return fail(at, format!("{path}.tasks: a group needs at least one task"));
    }
    let tasks_path = format!("{path}.tasks");
    let mut names = UniqueIds::new(&tasks_path);
    let (mut cpu, mut memory) = (0u64, 0u64);
    let mut drivers = DriverSet::default();
    let mut run_for = Some(Millis::ZERO);
    // The allocation is healthy once every task is: the longest wait.
    let mut healthy_after = Millis::ZERO;
    for task in &group.tasks {
        names.insert(&task.value.name, task.referenced)?;
        let task_path = format!("{path}.tasks[{}]", task.value.name);
        cpu = cpu.saturating_add(task.value.cpu.unwrap_or(DEFAULT_TASK_CPU));
        memory = memory.saturating_add(task.value.memory.unwrap_or(DEFAULT_TASK_MEMORY));
        let driver = task.value.driver.as_deref().unwrap_or("docker");
        drivers =
            drivers.union(driver_names.set([driver], task.referenced, &|| task_path.clone())?);
        run_for = match (run_for, task.value.run_for) {
            (Some(longest), Some(this)) => Some(longest.max(this.0)),
            _ => None,
        };
        healthy_after = healthy_after.max(task.value.healthy_after.map_or(Millis::ZERO, |d| d.0));
        for mount in task.value.volume_mounts.iter().flatten() {
            if !volumes.iter().any(|v| v.alias == mount.volume) {
                return fail(
                    task.referenced,
                    format!(
                        "{task_path}.volume_mounts: volume \"{}\" is not declared in the group's volumes",
                        mount.volume
                    ),
                );
            }
        }
    }
    if run_for == Some(Millis::ZERO) {
        return fail(at, format!("{path}.tasks: run_for must be longer than 0s"));
    }
    let mut reschedule = ReschedulePolicy::default_for(kind);
    if let Some(raw) = &group.reschedule {
        reschedule.attempts = raw.attempts.unwrap_or(reschedule.attempts);
        if reschedule.attempts > limits::MAX_RESCHEDULE_ATTEMPTS {
            return fail(
                at,
                format!(
                    "{path}.reschedule.attempts: {} exceeds the limit of {} (MAX_RESCHEDULE_ATTEMPTS); for no limit write unlimited: true",
                    reschedule.attempts,
                    limits::MAX_RESCHEDULE_ATTEMPTS
                ),
            );
        }
        reschedule.interval = raw.interval.map_or(reschedule.interval, |d| d.0);
        reschedule.delay = raw.delay.map_or(reschedule.delay, |d| d.0);
        reschedule.max_delay = raw.max_delay.map_or(reschedule.max_delay, |d| d.0);
        reschedule.unlimited = raw.unlimited.unwrap_or(reschedule.unlimited);
        if let Some(function) = raw.delay_function {
            reschedule.delay_function = match function {
                RawDelayFunction::Constant => DelayFunction::Constant,
                RawDelayFunction::Exponential => DelayFunction::Exponential,
                RawDelayFunction::Fibonacci => DelayFunction::Fibonacci,
            };
        }
    }
    Ok(GroupSpec {
        name: group.name.clone(),
        count,
        volumes,
        reschedule,
        cpu,
        memory,
        drivers,
        run_for,
        healthy_after,
        update: None,
        constraints: resolve_constraints(group.constraints.as_deref().unwrap_or(&[]), at, &path)?,
        csi_plugins: Vec::new(),
        spreads: super::placement::resolve_spreads(group.spread.as_deref(), &path)?,
        affinities: super::placement::resolve_affinities(group.affinity.as_deref(), &path)?,
        disconnect: super::nodes::disconnect(group),
        migrate: super::nodes::migrate(group.migrate.as_ref(), count, at, &path)?,
    })
}

/// How a timeline reference that names no node or job is treated.
#[derive(Clone, Copy, PartialEq, Eq)]
enum DanglingEvents {
    /// An error, as for any bad reference (scenario files as written).
    Refuse,
    /// The event is left out with a warning (experiment variants: shrinking
    /// a cluster can leave an event naming a node the variant lacks).
    Skip,
}

enum EventError {
    Invalid(Fail),
    /// The event names a node or job (or plugin on a node) that does not exist.
    Dangling(String),
}

impl From<Fail> for EventError {
    fn from(fail: Fail) -> Self {
        EventError::Invalid(fail)
    }
}

fn resolve_events(
    raw: &[Spanned<RawEvent>],
    horizon: Millis,
    nodes: &[NodeSpec],
    plugin_ids: &BTreeMap<&str, PluginId>,
    jobs: &[JobSpec],
    dangling: DanglingEvents,
    warnings: &mut Vec<String>,
) -> Result<Vec<TimedEvent>, Fail> {
    if raw.len() > limits::MAX_EVENTS {
        return Err((
            None,
            format!("events: more than {} (MAX_EVENTS)", limits::MAX_EVENTS),
        ));
    }
    if raw.is_empty() {
        // The name indexes below cost more than the rest of loading on a
        // 40,000-node snapshot; a scenario without events needs none.
        return Ok(Vec::new());
    }
    let node_ids: BTreeMap<&str, NodeId> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), NodeId::from_index(i)))
        .collect();
    let job_ids: BTreeMap<&str, JobId> = jobs
        .iter()
        .enumerate()
        .map(|(i, j)| (j.name.as_str(), JobId::from_index(i)))
        .collect();
    let context = EventContext {
        horizon,
        nodes,
        plugin_ids,
        jobs,
        node_ids,
        job_ids,
    };
    let mut events = Vec::with_capacity(raw.len());
    for (index, entry) in raw.iter().enumerate() {
        match context.resolve(index, entry) {
            Ok(event) => events.push(event),
            Err(EventError::Dangling(message)) if dangling == DanglingEvents::Skip => {
                warnings.push(format!("{message}; the event is left out"));
            }
            Err(EventError::Dangling(message)) => return fail(entry.referenced, message),
            Err(EventError::Invalid(failure)) => return Err(failure),
        }
    }
    Ok(events)
}

struct EventContext<'a> {
    horizon: Millis,
    nodes: &'a [NodeSpec],
    plugin_ids: &'a BTreeMap<&'a str, PluginId>,
    jobs: &'a [JobSpec],
    node_ids: BTreeMap<&'a str, NodeId>,
    job_ids: BTreeMap<&'a str, JobId>,
}

impl EventContext<'_> {
    /// A `scale` or `stop_job` acts on a submitted job: one written for
    /// before the job's `submit_at` (or at the same instant: timeline
    /// events come first) is refused rather than silently ignored.
    fn check_submitted(
        &self,
        at_time: Millis,
        job: JobId,
        path: &str,
        at: Location,
    ) -> Result<(), Fail> {
        let spec = &self.jobs[job.index()];
        if at_time <= spec.submit_at {
            return fail(
                at,
                format!(
                    "{path}: at {at_time}s job \"{}\" is not submitted yet (submit_at: {}s; timeline events at the same instant come before submissions): move the event after {}s, or submit the job earlier",
                    spec.name, spec.submit_at, spec.submit_at
                ),
            );
        }
        Ok(())
    }

    fn resolve(&self, index: usize, entry: &Spanned<RawEvent>) -> Result<TimedEvent, EventError> {
        let at = entry.referenced;
        let event = &entry.value;
        let path = format!("events[{index}]");
        if event.at.0 > self.horizon {
            return Err(EventError::Invalid((
                Some(at),
                format!(
                    "{path}.at: {}s is beyond the horizon of {}s; the event would never happen",
                    event.at.0, self.horizon
                ),
            )));
        }
        let node = |name: &str, field: &str| {
            self.node_ids.get(name).copied().ok_or_else(|| {
                EventError::Dangling(format!(
                    "{path}.{field}: no node with id \"{name}\" under nodes"
                ))
            })
        };
        let job = |name: &str, field: &str| {
            self.job_ids.get(name).copied().ok_or_else(|| {
                EventError::Dangling(format!(
                    "{path}.{field}: no job with id \"{name}\" under jobs"
                ))
            })
        };
        // An unknown plugin is a bad event, not a dangling reference.
        let plugin = |name: &str, field: &str| {
            self.plugin_ids.get(name).copied().ok_or_else(|| {
                EventError::Invalid((
                    Some(at),
                    format!("{path}.{field}: no plugin with id \"{name}\" under plugins"),
                ))
            })
        };
        let group = |job_id: JobId, job_name: &str, name: &str, field: &str| {
            self.jobs[job_id.index()]
                .groups
                .iter()
                .position(|g| g.name == name)
                .ok_or_else(|| {
                    EventError::Invalid((
                        Some(at),
                        format!("{path}.{field}: job \"{job_name}\" has no group \"{name}\""),
                    ))
                })
        };
        let mut actions = Vec::new();
        if let Some(name) = &event.node_down {
            actions.push(TimelineAction::NodeDown(node(name, "node_down")?));
        }
        if let Some(name) = &event.node_up {
            actions.push(TimelineAction::NodeUp(node(name, "node_up")?));
        }
        match &event.node_drain {
            Some(RawNodeDrain::Node(name)) => {
                actions.push(TimelineAction::NodeDrain(node(name, "node_drain")?));
            }
            Some(RawNodeDrain::Spec(spec)) => actions.push(TimelineAction::NodeDrainSpec(
                node(&spec.node, "node_drain.node")?,
                super::nodes::drain_spec(spec),
            )),
            None => {}
        }
        if let Some(name) = &event.node_disconnect {
            actions.push(TimelineAction::NodeDisconnect(node(
                name,
                "node_disconnect",
            )?));
        }
        if let Some(name) = &event.node_reconnect {
            actions.push(TimelineAction::NodeReconnect(node(name, "node_reconnect")?));
        }
        if let Some(scale) = &event.scale {
            let job_id = job(&scale.job, "scale.job")?;
            let group = group(job_id, &scale.job, &scale.group, "scale.group")?;
            check_allocation_count(scale.count.0, &format!("{path}.scale.count"), at)?;
            self.check_submitted(event.at.0, job_id, &format!("{path}.scale"), at)?;
            super::system::check_system_scale(
                self.jobs[job_id.index()].kind,
                scale.count.0,
                &format!("{path}.scale"),
                at,
            )?;
            actions.push(TimelineAction::Scale {
                job: job_id,
                group,
                count: scale.count.0,
            });
        }
        if let Some(health) = &event.plugin_health {
            let plugin = plugin(&health.plugin, "plugin_health.plugin")?;
            let node_id = node(&health.node, "plugin_health.node")?;
            if !self.nodes[node_id.index()]
                .csi_plugins
                .iter()
                .any(|p| p.plugin == plugin)
            {
                return Err(EventError::Dangling(format!(
                    "{path}.plugin_health: node \"{}\" does not run plugin \"{}\"",
                    health.node, health.plugin
                )));
            }
            actions.push(TimelineAction::PluginHealth {
                plugin,
                node: node_id,
                healthy: health.healthy,
            });
        }
        if let Some(name) = &event.stop_job {
            let job_id = job(name, "stop_job")?;
            self.check_submitted(event.at.0, job_id, &format!("{path}.stop_job"), at)?;
            actions.push(TimelineAction::StopJob(job_id));
        }
        if let Some(health) = &event.plugin_controller_health {
            let plugin = plugin(&health.plugin, "plugin_controller_health.plugin")?;
            actions.push(TimelineAction::PluginControllerHealth {
                plugin,
                healthy: health.healthy,
            });
        }
        if let Some(update) = &event.update_job {
            let job_id = job(&update.job, "update_job.job")?;
            let mut overrides = Vec::new();
            for (name, raw) in update.groups.iter().flatten() {
                let group = group(job_id, &update.job, name, "update_job.groups")?;
                if let Some(count) = raw.count {
                    check_allocation_count(
                        count.0,
                        &format!("{path}.update_job.groups.{name}.count"),
                        at,
                    )?;
                }
                overrides.push(super::update::override_of(group, raw));
            }
            self.check_submitted(event.at.0, job_id, &format!("{path}.update_job"), at)?;
            actions.push(TimelineAction::UpdateJob {
                job: job_id,
                version: None,
                overrides,
            });
        }
        if let Some(name) = &event.promote_deployment {
            let job_id = job(name, "promote_deployment")?;
            self.check_submitted(
                event.at.0,
                job_id,
                &format!("{path}.promote_deployment"),
                at,
            )?;
            actions.push(TimelineAction::PromoteDeployment(job_id));
        }
        let action = match actions.len() {
            1 => actions.pop().expect("one action"),
            0 => {
                return Err(EventError::Invalid((
                    Some(at),
                    format!(
                        "{path}: no action; give one of node_down, node_up, node_drain, scale, plugin_health, stop_job, update_job, node_disconnect, node_reconnect, promote_deployment"
                    ),
                )));
            }
            n => {
                return Err(EventError::Invalid((
                    Some(at),
                    format!("{path}: give exactly one action per event, found {n}"),
                )));
            }
        };
        Ok(TimedEvent {
            at: event.at.0,
            action,
        })
    }
}

/// Refuses a single count above MAX_ALLOCATIONS.
fn check_allocation_count(count: u32, path: &str, at: Location) -> Result<(), Fail> {
    if u64::from(count) > limits::MAX_ALLOCATIONS {
        return fail(
            at,
            format!(
                "{path}: {count} exceeds the limit of {} allocations (MAX_ALLOCATIONS)",
                limits::MAX_ALLOCATIONS
            ),
        );
    }
    Ok(())
}

/// Refuses scenarios whose desired allocations, at any moment, exceed
/// MAX_ALLOCATIONS. An allocation counts once, plus once per volume it
/// mounts: a mount costs about three times what an allocation without
/// volumes does (its claim, reservation and ledger entries; see
/// `limits.rs`), so the budget keeps volume-heavy scenarios within the
/// same memory.
fn check_allocation_budget(
    jobs: &[JobSpec],
    events: &[TimedEvent],
    nodes: usize,
) -> Result<(), Fail> {
    let weight = |job: &JobSpec, group: usize| 1 + job.groups[group].volumes.len() as u64;
    // A system job's group runs on every node.
    let mut total: u64 = jobs
        .iter()
        .flat_map(|job| {
            let copies = if job.is_system() { nodes as u64 } else { 1 };
            job.groups.iter().enumerate().map(move |(g, group)| {
                u64::from(group.count)
                    .saturating_mul(copies)
                    .saturating_mul(weight(job, g))
            })
        })
        .sum();
    for event in events {
        if let TimelineAction::Scale { job, group, count } = event.action {
            let added = u64::from(count).saturating_mul(weight(&jobs[job.index()], group));
            total = total.saturating_add(added);
        }
        if let TimelineAction::UpdateJob { job, overrides, .. } = &event.action {
            // A destructive update places a new allocation beside each old one.
            for o in overrides {
                let added = u64::from(o.count.unwrap_or(0))
                    .saturating_mul(weight(&jobs[job.index()], o.group));
                total = total.saturating_add(added);
            }
        }
    }
    if total > limits::MAX_ALLOCATIONS {
        return Err((
            None,
            format!(
                "jobs: {total} desired allocations and volume mounts (counts plus scale events; an allocation counts once and once more per volume it mounts) exceed the limit of {} (MAX_ALLOCATIONS)",
                limits::MAX_ALLOCATIONS
            ),
        ));
    }
    Ok(())
}

fn resolve_expectations(
    raw: Option<BTreeMap<Policy, BTreeMap<crate::model::metrics::Metric, Spanned<RawExpectValue>>>>,
    policies: &[Policy],
) -> Result<Vec<Expectation>, Fail> {
    let mut expectations = Vec::new();
    for (policy, metrics) in raw.into_iter().flatten() {
        for (metric, value) in metrics {
            let path = format!("expect.{policy}.{}", metric.name());
            if !policies.contains(&policy) {
                return fail(
                    value.referenced,
                    format!("{path}: this scenario does not run {policy} (see schedulers)"),
                );
            }
            let (comparison, number) = match &value.value {
                RawExpectValue::Number(n) if n.is_finite() => {
                    (crate::model::expect::Comparison::Eq, *n)
                }
                RawExpectValue::Number(n) => {
                    return fail(
                        value.referenced,
                        format!("{path}: {n} is not a finite number"),
                    );
                }
                RawExpectValue::Text(text) => parse_comparison(text)
                    .map_err(|message| (Some(value.referenced), format!("{path}: {message}")))?,
            };
            expectations.push(Expectation {
                policy,
                metric,
                comparison,
                value: number,
            });
        }
    }
    Ok(expectations)
}

/// A plugin that a job runs but `plugins:` does not list is declared with
/// the defaults: it does not enforce access modes (declare it to say it
/// does) and publishes in the default time.
fn declare_job_plugins(plugins: &mut Vec<Spanned<RawPlugin>>, jobs: &[Spanned<RawJob>]) {
    for job in jobs {
        for group in &job.value.groups {
            for task in &group.value.tasks {
                let Some(plugin) = &task.value.csi_plugin else {
                    continue;
                };
                if !plugins.iter().any(|p| p.value.id == plugin.id) {
                    plugins.push(Spanned::new(
                        RawPlugin {
                            id: plugin.id.clone(),
                            enforces_access_mode: false,
                            publish_latency: None,
                            controller_required: None,
                            controller_publish_latency: None,
                            controller_healthy: None,
                        },
                        job.referenced,
                        job.defined,
                    ));
                }
            }
        }
    }
}

/// Nomad (1.5+) reads a job's datacenters as glob patterns, and a job file
/// without datacenters gets `["*"]`: each pattern with a `*` becomes the
/// datacenters of the nodes it matches (a pattern that matches none stays,
/// and matches no node, as in Nomad).
fn expand_datacenter_globs(nodes: &[NodeSpec], jobs: &mut [JobSpec]) {
    let known: Vec<&str> = {
        let mut seen = BTreeSet::new();
        nodes
            .iter()
            .map(|n| n.datacenter.as_str())
            .filter(|dc| seen.insert(*dc))
            .collect()
    };
    for job in jobs {
        if !job.datacenters.iter().any(|dc| dc.contains('*')) {
            continue;
        }
        let mut expanded: Vec<String> = Vec::new();
        for pattern in &job.datacenters {
            let matches: Vec<&str> = if pattern.contains('*') {
                known
                    .iter()
                    .copied()
                    .filter(|dc| glob_match(pattern, dc))
                    .collect()
            } else {
                vec![pattern.as_str()]
            };
            if matches.is_empty() {
                expanded.push(pattern.clone());
            }
            for dc in matches {
                if !expanded.iter().any(|e| e == dc) {
                    expanded.push(dc.to_string());
                }
            }
        }
        job.datacenters = expanded;
    }
}

/// `*` matches any run of characters; everything else matches itself.
fn glob_match(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(index) => rest = &rest[index + middle.len()..],
            None => return false,
        }
    }
    true
}

/// `initial_allocations`: each names an allocation the Nomad way,
/// `<job>.<group>[<index>]`, of a job submitted at 0s, on a known node.
fn resolve_initial_allocations(
    raw: &[Spanned<RawInitialAllocation>],
    jobs: &[JobSpec],
    nodes: &[NodeSpec],
    volume_by_name: &BTreeMap<String, VolumeId>,
) -> Result<Vec<InitialAllocation>, Fail> {
    let mut seen = BTreeSet::new();
    let mut used: BTreeMap<NodeId, (u64, u64)> = BTreeMap::new();
    let mut out = Vec::with_capacity(raw.len());
    for (i, entry) in raw.iter().enumerate() {
        let (at, alloc) = (entry.referenced, &entry.value);
        let path = format!("initial_allocations[{i}]");
        let parsed = alloc
            .alloc
            .strip_suffix(']')
            .and_then(|s| s.rsplit_once('['))
            .and_then(|(name, index)| Some((name, index.parse::<u32>().ok()?)));
        let Some((name, index)) = parsed else {
            return fail(
                at,
                format!(
                    "{path}.alloc: \"{}\" is not an allocation name: expected <job>.<group>[<index>]",
                    alloc.alloc
                ),
            );
        };
        let found = jobs.iter().enumerate().find_map(|(j, job)| {
            let group = name.strip_prefix(job.name.as_str())?.strip_prefix('.')?;
            let g = job.groups.iter().position(|g| g.name == group)?;
            Some((j, g))
        });
        let Some((j, g)) = found else {
            return fail(
                at,
                format!("{path}.alloc: no job and group under jobs match \"{name}\""),
            );
        };
        let (job, group) = (&jobs[j], &jobs[j].groups[g]);
        if job.submit_at != Millis::ZERO {
            return fail(
                at,
                format!(
                    "{path}.alloc: job \"{}\" is submitted at {}s; an allocation at time 0 needs its job submitted at 0s",
                    job.name, job.submit_at
                ),
            );
        }
        if index >= group.count {
            return fail(
                at,
                format!(
                    "{path}.alloc: index {index} is not below the group's count {}",
                    group.count
                ),
            );
        }
        for request in &group.volumes {
            if let VolumeSource::PerAlloc { base } = &request.source
                && !volume_by_name.contains_key(&format!("{base}[{index}]"))
            {
                return fail(
                    at,
                    format!(
                        "{path}.alloc: its volume \"{base}[{index}]\" (per_alloc) is not under volumes"
                    ),
                );
            }
        }
        let Some(node) = nodes.iter().position(|n| n.name == alloc.node) else {
            return fail(
                at,
                format!(
                    "{path}.node: no node with id \"{}\" under nodes",
                    alloc.node
                ),
            );
        };
        let node_id = NodeId::from_index(node);
        // A system job runs `<job>.<group>[0]` on every node: its slot is the node.
        let slot = if job.is_system() { node as u32 } else { index };
        if !seen.insert((j, g, slot)) {
            return fail(
                at,
                format!("{path}.alloc: \"{}\" is listed twice", alloc.alloc),
            );
        }
        let total = used.entry(node_id).or_default();
        total.0 += group.cpu;
        total.1 += group.memory;
        if total.0 > nodes[node].cpu || total.1 > nodes[node].memory {
            return fail(
                at,
                format!(
                    "{path}.node: node \"{}\" has {} MHz and {} MiB; its initial allocations need more",
                    alloc.node, nodes[node].cpu, nodes[node].memory
                ),
            );
        }
        out.push(InitialAllocation {
            group: crate::model::ids::GroupRef::new(JobId::from_index(j), g),
            index,
            node: node_id,
            running: alloc.status == RawInitialStatus::Running,
        });
    }
    Ok(out)
}

fn attachment(raw: RawAttachmentMode) -> AttachmentMode {
    match raw {
        RawAttachmentMode::FileSystem => AttachmentMode::FileSystem,
        RawAttachmentMode::BlockDevice => AttachmentMode::BlockDevice,
    }
}

/// A periodic server job's interval: zero would run it forever at one instant.
fn positive(field: &str, interval: Millis) -> Result<Millis, Fail> {
    if interval == Millis::ZERO {
        return Err((
            None,
            format!(
                "cluster.{field}: must be longer than 0s (it is how often a periodic job runs)"
            ),
        ));
    }
    Ok(interval)
}
