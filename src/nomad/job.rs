//! A Nomad job as plansim reads it, whichever file it came from: the HCL2
//! front end (`nomad::hcl`) and the JSON front end (`nomad::json`) both fill a
//! [`NomadJob`], and [`to_raw_job`] maps it onto the scenario's own raw
//! types, so every job, written in YAML or in Nomad's files, goes through
//! the one resolver (`scenario::load`).

use std::collections::{BTreeMap, BTreeSet};

use serde_saphyr::{Location, Spanned};

use crate::model::access::AccessMode;
use crate::model::time::Millis;
use crate::scenario::error::{LoadError, Position, file_error};
use crate::scenario::raw::*;

/// Fields plansim does not model that could change placement: what, and where.
pub type Ignored = Vec<(String, Option<Position>)>;

/// A job's fields that plansim models, with where they were written.
#[derive(Clone, Debug, Default)]
pub struct NomadJob {
    pub id: String,
    pub at: Option<Position>,
    /// Nomad's `type`; empty means service.
    pub job_type: String,
    pub priority: Option<i64>,
    pub datacenters: Option<Vec<String>>,
    pub constraints: Vec<NomadConstraint>,
    pub groups: Vec<NomadGroup>,
    pub spreads: Vec<NomadSpread>,
    pub affinities: Vec<NomadAffinity>,
    /// The job's `update` block (`Update`), which groups inherit.
    pub update: Option<crate::scenario::raw::RawUpdate>,
    /// The variables an HCL2 job file declares (a JSON job has none).
    pub variables: Vec<String>,
    /// The job's `node_pool` (`NodePool`), if it names one.
    pub node_pool: Option<String>,
    /// The job's `namespace` (`Namespace`), if it names one.
    pub namespace: Option<String>,
    /// The job's `migrate` block (`Migrate`): every group's defaults,
    /// field by field (api/tasks.go `TaskGroup.Canonicalize`).
    pub migrate: Option<NomadMigrate>,
    /// The job's `periodic` block (`Periodic`).
    pub periodic: Option<RawPeriodic>,
    /// The job's `parameterized` block (`ParameterizedJob`).
    pub parameterized: Option<RawParameterized>,
    /// Fields that could change placement and that plansim does not model:
    /// what, and where.
    pub ignored: Ignored,
}

/// Nomad's `spread` block.
#[derive(Clone, Debug, Default)]
pub struct NomadSpread {
    pub attribute: String,
    pub weight: Option<i64>,
    /// (value, percent) per `target` block.
    pub targets: Vec<(String, i64)>,
    pub at: Option<Position>,
}

/// Nomad's `affinity` block.
#[derive(Clone, Debug, Default)]
pub struct NomadAffinity {
    pub attribute: String,
    pub operator: String,
    pub value: String,
    pub weight: Option<i64>,
    pub at: Option<Position>,
}

#[derive(Clone, Debug, Default)]
pub struct NomadConstraint {
    pub attribute: String,
    pub operator: String,
    pub value: String,
    pub at: Option<Position>,
}

#[derive(Clone, Debug, Default)]
pub struct NomadGroup {
    pub name: String,
    pub at: Option<Position>,
    pub count: Option<i64>,
    pub volumes: Vec<NomadVolumeRequest>,
    pub reschedule: Option<NomadReschedule>,
    pub constraints: Vec<NomadConstraint>,
    pub tasks: Vec<NomadTask>,
    pub spreads: Vec<NomadSpread>,
    pub affinities: Vec<NomadAffinity>,
    /// The group's `update` block, merged over the job's by the resolver.
    pub update: Option<crate::scenario::raw::RawUpdate>,
    pub migrate: Option<NomadMigrate>,
    /// The group field `max_client_disconnect` (1.3-1.9; deprecated in
    /// 1.8 and ignored from 1.10, which reads only the `disconnect` block).
    pub max_client_disconnect: Option<Millis>,
    /// The group field `stop_after_client_disconnect` (the same).
    pub stop_after_client_disconnect: Option<Millis>,
    /// 1.8+'s `disconnect.lost_after`.
    pub lost_after: Option<Millis>,
    /// 1.8+'s `disconnect.stop_on_client_after`.
    pub stop_on_client_after: Option<Millis>,
    /// The group's `shutdown_delay`.
    pub shutdown_delay: Option<Millis>,
    /// The group's `max_run_duration` (2.0.3+), above 0s (each front end
    /// refuses 0s and less as Nomad does), and where it was written.
    pub max_run_duration: Option<(Millis, Option<Position>)>,
    /// The group `network` block's ports: label and static value (`None`:
    /// dynamic), in the order Nomad's API lists them (ReservedPorts, then
    /// DynamicPorts).
    pub ports: Vec<(String, Option<i64>)>,
    /// Group `network` blocks read so far (only the first counts).
    pub networks_seen: u32,
    /// The group's `ephemeral_disk` block, as written.
    pub ephemeral_disk: Option<crate::scenario::raw::RawEphemeralDisk>,
}

/// Nomad's `migrate` block as a job file writes it.
#[derive(Clone, Debug, Default)]
pub struct NomadMigrate {
    pub max_parallel: Option<i64>,
    pub health_check: Option<String>,
    pub min_healthy_time: Option<Millis>,
    pub healthy_deadline: Option<Millis>,
}

impl NomadMigrate {
    /// The job's block with the group's fields over it
    /// (`MigrateStrategy.Merge`: each field the group sets wins).
    fn merged_with(&self, group: Option<&NomadMigrate>) -> NomadMigrate {
        let Some(group) = group else {
            return self.clone();
        };
        NomadMigrate {
            max_parallel: group.max_parallel.or(self.max_parallel),
            health_check: group.health_check.clone().or(self.health_check.clone()),
            min_healthy_time: group.min_healthy_time.or(self.min_healthy_time),
            healthy_deadline: group.healthy_deadline.or(self.healthy_deadline),
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct NomadVolumeRequest {
    pub alias: String,
    pub at: Option<Position>,
    pub volume_type: String,
    pub source: String,
    pub read_only: bool,
    pub per_alloc: bool,
    pub access_mode: Option<String>,
    pub attachment_mode: Option<String>,
    /// `sticky`: a host request's claim pins it to its dynamic volume.
    pub sticky: bool,
}

#[derive(Clone, Debug, Default)]
pub struct NomadReschedule {
    pub attempts: Option<i64>,
    pub interval: Option<Millis>,
    pub delay: Option<Millis>,
    pub delay_function: Option<String>,
    pub max_delay: Option<Millis>,
    pub unlimited: Option<bool>,
}

#[derive(Clone, Debug, Default)]
pub struct NomadTask {
    pub name: String,
    pub at: Option<Position>,
    /// The task's `affinity` blocks: scored with its group's, after them
    /// (scheduler/rank.go `NodeAffinityIterator.SetTaskGroup`).
    pub affinities: Vec<NomadAffinity>,
    pub driver: Option<String>,
    pub cpu: Option<i64>,
    pub memory: Option<i64>,
    /// `csi_plugin { id, type }`.
    pub csi_plugin: Option<(String, String)>,
    pub volume_mounts: Vec<(String, String)>,
    /// `lifecycle { hook, sidecar }`, the hook as written.
    pub lifecycle: Option<(String, bool)>,
    pub kill_timeout: Option<Millis>,
    pub shutdown_delay: Option<Millis>,
    /// The ports of the task's `resources { network {} }` (deprecated
    /// since 0.12, still placed): label and static value, as a group's.
    pub ports: Vec<(String, Option<i64>)>,
    /// Task-level `network` blocks read so far (only the first counts).
    pub networks_seen: u32,
}

/// Constraint operators the resolver models (Nomad's spellings).
const MODELLED_OPERATORS: [&str; 19] = [
    "=",
    "==",
    "is",
    "!=",
    "not",
    "is_set",
    "is_not_set",
    "<",
    "<=",
    ">",
    ">=",
    "regexp",
    "version",
    "semver",
    "set_contains",
    "set_contains_all",
    "set_contains_any",
    "distinct_hosts",
    "distinct_property",
];

/// Whether plansim can check a constraint target: node attributes and meta,
/// and the node's datacenter, class and name.
fn modelled_target(attribute: &str) -> bool {
    let Some(inner) = attribute
        .trim()
        .strip_prefix("${")
        .and_then(|s| s.strip_suffix('}'))
    else {
        return false;
    };
    matches!(
        inner,
        "node.datacenter" | "node.class" | "node.unique.name" | "node.unique.id"
    ) || inner.strip_prefix("attr.").is_some_and(|k| !k.is_empty())
        || inner.strip_prefix("meta.").is_some_and(|k| !k.is_empty())
}

/// Maps a job onto the raw scenario types. Constraints plansim cannot check
/// are added to `job.ignored` (and so warned about) instead of refused: the
/// job still runs, without them.
pub fn to_raw_job(
    mut job: NomadJob,
    file: &str,
    location: Location,
) -> Result<(RawJob, Ignored), LoadError> {
    let job_type = match job.job_type.as_str() {
        "" | "service" => RawJobType::Service,
        "batch" => RawJobType::Batch,
        "system" => RawJobType::System,
        "sysbatch" => RawJobType::Sysbatch,
        other => {
            return Err(file_error(
                file,
                job.at,
                format!(
                    "job \"{}\": type \"{other}\" is not a Nomad job type (expected service, batch, system or sysbatch)",
                    job.id
                ),
            ));
        }
    };
    let priority = match job.priority {
        None => None,
        Some(p) => Some(u32::try_from(p).map_err(|_| {
            file_error(
                file,
                job.at,
                format!("job \"{}\": priority {p} is outside 1..=100", job.id),
            )
        })?),
    };
    let mut ignored = std::mem::take(&mut job.ignored);
    let constraints = map_constraints(&job.constraints, &mut ignored);
    refuse_max_run_duration(&job, job_type, file)?;
    let mut groups = Vec::with_capacity(job.groups.len());
    for group in &job.groups {
        let merged;
        let group = match &job.migrate {
            None => group,
            Some(job_migrate) => {
                merged = NomadGroup {
                    migrate: Some(job_migrate.merged_with(group.migrate.as_ref())),
                    ..group.clone()
                };
                &merged
            }
        };
        groups.push(raw_group(file, group, location, &mut ignored)?);
    }
    let raw = RawJob {
        id: job.id.clone(),
        replicas: None,
        job_type: Some(job_type),
        submit_at: None,
        // Nomad gives a job without datacenters `["*"]` (every datacenter).
        datacenters: Some(
            job.datacenters
                .clone()
                .unwrap_or_else(|| vec!["*".to_string()]),
        ),
        priority,
        constraints: non_empty(constraints),
        groups,
        file: None,
        count: None,
        run_for: None,
        vars: None,
        var_files: None,
        node_pool: job.node_pool.clone(),
        namespace: job.namespace.clone(),
        spread: raw_spreads(&job.spreads, location),
        affinity: raw_affinities(&job.affinities, location),
        update: job.update.clone(),
        periodic: job.periodic.clone(),
        parameterized: job.parameterized.clone(),
    };
    Ok((raw, ignored))
}

/// Nomad's job validation refuses `max_run_duration` in a group of a
/// service or system job (`structs.go:TaskGroup.Validate`, v2.0.5: "Job
/// type %q does not allow max_run_duration"), the first such group's.
fn refuse_max_run_duration(
    job: &NomadJob,
    job_type: RawJobType,
    file: &str,
) -> Result<(), LoadError> {
    let Some(kind) = job_type.kind().refuses_max_run_duration() else {
        return Ok(());
    };
    match job
        .groups
        .iter()
        .find_map(|g| Some((g, g.max_run_duration?.1)))
    {
        None => Ok(()),
        Some((group, at)) => Err(file_error(
            file,
            at,
            format!(
                "group \"{}\": max_run_duration: Job type \"{kind}\" does not allow max_run_duration",
                group.name
            ),
        )),
    }
}

/// One group: its count, CSI volume requests (others are ignored, and
/// warned about), tasks and the blocks plansim reads.
fn raw_group(
    file: &str,
    group: &NomadGroup,
    location: Location,
    ignored: &mut Ignored,
) -> Result<Spanned<RawGroup>, LoadError> {
    let count = match group.count {
        None => None,
        Some(n) => Some(RawCount(u32::try_from(n).map_err(|_| {
            file_error(
                file,
                group.at,
                format!(
                    "group \"{}\": count {n} is out of range: expected a whole number from 0 to {}",
                    group.name,
                    u32::MAX
                ),
            )
        })?)),
    };
    let mut volumes = BTreeMap::new();
    for request in &group.volumes {
        if request.volume_type != "csi" && request.volume_type != "host" {
            return Err(file_error(
                file,
                request.at,
                format!(
                    "group \"{}\" volume \"{}\": volume has unrecognized type {} (expected csi or host)",
                    group.name, request.alias, request.volume_type
                ),
            ));
        }
        volumes.insert(
            request.alias.clone(),
            Spanned::new(raw_volume_request(file, request)?, location, location),
        );
    }
    let mut tasks = Vec::with_capacity(group.tasks.len());
    for task in &group.tasks {
        tasks.push(Spanned::new(
            raw_task(file, task, &volumes)?,
            location,
            location,
        ));
    }
    Ok(Spanned::new(
        RawGroup {
            name: group.name.clone(),
            count,
            volumes: (!volumes.is_empty()).then_some(volumes),
            reschedule: group
                .reschedule
                .as_ref()
                .map(|r| raw_reschedule(file, group, r))
                .transpose()?,
            constraints: non_empty(map_constraints(&group.constraints, ignored)),
            tasks,
            spread: raw_spreads(&group.spreads, location),
            affinity: raw_affinities(&group.affinities, location),
            update: group.update.clone(),
            migrate: group
                .migrate
                .as_ref()
                .map(|m| raw_migrate(file, group, m))
                .transpose()?,
            max_client_disconnect: group.max_client_disconnect.map(RawDuration),
            stop_after_client_disconnect: group.stop_after_client_disconnect.map(RawDuration),
            // Each spelling kept apart: the release decides which counts.
            disconnect: (group.lost_after.is_some() || group.stop_on_client_after.is_some()).then(
                || RawDisconnect {
                    lost_after: group.lost_after.map(RawDuration),
                    stop_on_client_after: group.stop_on_client_after.map(RawDuration),
                },
            ),
            shutdown_delay: group.shutdown_delay.map(RawDuration),
            max_run_duration: group.max_run_duration.map(|(d, _)| RawDuration(d)),
            network: network_ports(group, location),
            ephemeral_disk: group.ephemeral_disk.clone(),
        },
        location,
        location,
    ))
}

/// The ports the group's allocations take on their node: the group
/// network's, then each task network's (deprecated since 0.12), which the
/// bin-packer assigns from the same NetworkIndex (rank.go
/// `BinPackIterator.Next`: `AssignTaskNetwork` at 2.0.5, `AssignNetwork`
/// at 1.2.6), so a static port of either collides with the other's. Two
/// tasks may use one label (`TaskGroup.validateNetworks` checks a task's
/// labels against the group's only): a repeated one is named after its
/// task, `task.label`.
fn network_ports(group: &NomadGroup, location: Location) -> Option<RawNetwork> {
    let labels: BTreeSet<&str> = group.ports.iter().map(|(l, _)| l.as_str()).collect();
    let mut ports: Vec<(String, Option<i64>)> = group.ports.clone();
    let mut task_labels = BTreeSet::new();
    for task in &group.tasks {
        for (label, value) in &task.ports {
            // A clash with the group's is Nomad's refusal: left to the resolver.
            let label = if labels.contains(label.as_str()) || task_labels.insert(label.as_str()) {
                label.clone()
            } else {
                format!("{}.{label}", task.name)
            };
            ports.push((label, *value));
        }
    }
    (!ports.is_empty()).then(|| RawNetwork {
        ports: ports
            .into_iter()
            .map(|(label, static_port)| {
                Spanned::new(RawPort { label, static_port }, location, location)
            })
            .collect(),
    })
}

fn raw_migrate(file: &str, group: &NomadGroup, m: &NomadMigrate) -> Result<RawMigrate, LoadError> {
    let max_parallel = match m.max_parallel {
        None => None,
        Some(n) => Some(u32::try_from(n).map_err(|_| {
            file_error(
                file,
                group.at,
                format!(
                    "group \"{}\": migrate max_parallel {n} is out of range: expected a whole number from 0 to {}",
                    group.name,
                    u32::MAX
                ),
            )
        })?),
    };
    let health_check = match m.health_check.as_deref() {
        None | Some("") => None,
        Some("checks") => Some(RawHealthCheck::Checks),
        Some("task_states") => Some(RawHealthCheck::TaskStates),
        Some(other) => {
            return Err(file_error(
                file,
                group.at,
                format!(
                    "group \"{}\": migrate health_check \"{other}\" is not one of checks, task_states",
                    group.name
                ),
            ));
        }
    };
    Ok(RawMigrate {
        max_parallel,
        health_check,
        min_healthy_time: m.min_healthy_time.map(RawDuration),
        healthy_deadline: m.healthy_deadline.map(RawDuration),
    })
}

fn non_empty<T>(list: Vec<T>) -> Option<Vec<T>> {
    (!list.is_empty()).then_some(list)
}

pub(crate) fn map_constraints(
    list: &[NomadConstraint],
    ignored: &mut Ignored,
) -> Vec<RawConstraint> {
    let mut out = Vec::new();
    for c in list {
        let operator = if c.operator.is_empty() {
            "="
        } else {
            c.operator.as_str()
        };
        // distinct_hosts takes no attribute.
        let target_ok = operator == "distinct_hosts" || modelled_target(&c.attribute);
        if MODELLED_OPERATORS.contains(&operator) && target_ok {
            let valueless = matches!(operator, "is_set" | "is_not_set")
                || (matches!(operator, "distinct_hosts" | "distinct_property")
                    && c.value.is_empty());
            let needs_value = !valueless;
            out.push(RawConstraint {
                attribute: c.attribute.trim().to_string(),
                operator: Some(operator.to_string()),
                value: needs_value.then(|| c.value.clone()),
            });
        } else {
            ignored.push((
                format!("constraint {} {operator} {}", c.attribute, c.value)
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" "),
                c.at,
            ));
        }
    }
    out
}

fn raw_spreads(list: &[NomadSpread], location: Location) -> Option<Vec<Spanned<RawSpread>>> {
    let spreads: Vec<Spanned<RawSpread>> = list
        .iter()
        .map(|s| {
            let targets: Vec<RawSpreadTarget> = s
                .targets
                .iter()
                .map(|(value, percent)| RawSpreadTarget {
                    value: value.clone(),
                    percent: *percent,
                })
                .collect();
            let spread = RawSpread {
                attribute: s.attribute.trim().to_string(),
                weight: s.weight,
                targets: non_empty(targets),
            };
            Spanned::new(spread, location, location)
        })
        .collect();
    non_empty(spreads)
}

fn raw_affinities(list: &[NomadAffinity], location: Location) -> Option<Vec<Spanned<RawAffinity>>> {
    let affinities: Vec<Spanned<RawAffinity>> = list
        .iter()
        .map(|a| {
            let affinity = RawAffinity {
                attribute: a.attribute.trim().to_string(),
                operator: (!a.operator.is_empty()).then(|| a.operator.clone()),
                value: Some(a.value.clone()),
                weight: a.weight,
            };
            Spanned::new(affinity, location, location)
        })
        .collect();
    non_empty(affinities)
}

/// One place that builds a volume request, so a field added to
/// `RawVolumeRequest` needs one edit here.
fn raw_volume_request(
    file: &str,
    request: &NomadVolumeRequest,
) -> Result<RawVolumeRequest, LoadError> {
    let host = request.volume_type == "host";
    let access_mode = match &request.access_mode {
        Some(mode) if host => Some(parse_any_access_mode(file, request.at, mode)?),
        Some(mode) => Some(RawAccessMode::from_csi(parse_access_mode(
            file, request.at, mode,
        )?)),
        None => None,
    };
    let attachment_mode = match &request.attachment_mode {
        Some(mode) => Some(parse_attachment_mode(file, request.at, mode)?),
        None => None,
    };
    if request.source.is_empty() {
        return Err(file_error(
            file,
            request.at,
            format!("volume \"{}\": volume has an empty source", request.alias),
        ));
    }
    Ok(RawVolumeRequest {
        volume_type: if host {
            RawVolumeType::Host
        } else {
            RawVolumeType::Csi
        },
        source: request.source.clone(),
        read_only: request.read_only.then_some(true),
        per_alloc: request.per_alloc.then_some(true),
        access_mode,
        attachment_mode,
        // The CSI checker never reads `sticky`: only a host request keeps it.
        sticky: (host && request.sticky).then_some(true),
    })
}

pub fn parse_access_mode(
    file: &str,
    at: Option<Position>,
    text: &str,
) -> Result<AccessMode, LoadError> {
    AccessMode::ALL
        .into_iter()
        .find(|mode| mode.name() == text)
        .ok_or_else(|| {
            file_error(
                file,
                at,
                format!(
                    "access_mode \"{text}\" is not a CSI access mode (expected single-node-reader-only, single-node-writer, multi-node-reader-only, multi-node-single-writer or multi-node-multi-writer)"
                ),
            )
        })
}

/// An access mode of either family (a host volume request or spec may
/// name a CSI mode, which the resolver then refuses in Nomad's words).
pub fn parse_any_access_mode(
    file: &str,
    at: Option<Position>,
    text: &str,
) -> Result<RawAccessMode, LoadError> {
    use crate::model::host_volume::HostAccessMode;
    if let Some(mode) = HostAccessMode::parse(text) {
        return Ok(RawAccessMode::from_host(mode));
    }
    match AccessMode::ALL.into_iter().find(|mode| mode.name() == text) {
        Some(mode) => Ok(RawAccessMode::from_csi(mode)),
        None => Err(file_error(
            file,
            at,
            format!(
                "access_mode \"{text}\" is not an access mode (expected single-node-reader-only, single-node-writer, single-node-single-writer or single-node-multi-writer for a host volume)"
            ),
        )),
    }
}

pub fn parse_attachment_mode(
    file: &str,
    at: Option<Position>,
    text: &str,
) -> Result<RawAttachmentMode, LoadError> {
    match text {
        "file-system" => Ok(RawAttachmentMode::FileSystem),
        "block-device" => Ok(RawAttachmentMode::BlockDevice),
        other => Err(file_error(
            file,
            at,
            format!(
                "attachment_mode \"{other}\" is not a CSI attachment mode (expected file-system or block-device)"
            ),
        )),
    }
}

fn raw_task(
    file: &str,
    task: &NomadTask,
    volumes: &BTreeMap<String, Spanned<RawVolumeRequest>>,
) -> Result<RawTask, LoadError> {
    let amount = |value: Option<i64>, what: &str| -> Result<Option<u64>, LoadError> {
        value
            .map(|n| {
                u64::try_from(n).map_err(|_| {
                    file_error(
                        file,
                        task.at,
                        format!(
                            "task \"{}\": {what} {n} is out of range: expected a whole number from 0 to {}",
                            task.name,
                            i64::MAX
                        ),
                    )
                })
            })
            .transpose()
    };
    let csi_plugin = match &task.csi_plugin {
        None => None,
        Some((id, kind)) => Some(RawCsiPlugin {
            id: id.clone(),
            plugin_type: match kind.as_str() {
                "node" => RawCsiPluginType::Node,
                "controller" => RawCsiPluginType::Controller,
                "monolith" => RawCsiPluginType::Monolith,
                other => {
                    return Err(file_error(
                        file,
                        task.at,
                        format!(
                            "task \"{}\": csi_plugin type \"{other}\" is not one of node, controller, monolith",
                            task.name
                        ),
                    ));
                }
            },
        }),
    };
    // Mounts of volumes plansim left out (host volumes) are left out too.
    let mounts: Vec<RawVolumeMount> = task
        .volume_mounts
        .iter()
        .filter(|(volume, _)| volumes.contains_key(volume))
        .map(|(volume, destination)| RawVolumeMount {
            volume: volume.clone(),
            destination: destination.clone(),
        })
        .collect();
    Ok(RawTask {
        name: task.name.clone(),
        driver: task.driver.clone(),
        cpu: amount(task.cpu, "cpu")?,
        memory: amount(task.memory, "memory")?,
        run_for: None,
        healthy_after: None,
        volume_mounts: non_empty(mounts),
        csi_plugin,
        lifecycle: raw_lifecycle(file, task)?,
        kill_timeout: task.kill_timeout.map(RawDuration),
        shutdown_delay: task.shutdown_delay.map(RawDuration),
    })
}

/// A task's `lifecycle` block, with Nomad's refusals of a bad hook
/// (`structs.go:TaskLifecycleConfig.Validate`, both tags).
fn raw_lifecycle(file: &str, task: &NomadTask) -> Result<Option<RawLifecycle>, LoadError> {
    let Some((hook, sidecar)) = &task.lifecycle else {
        return Ok(None);
    };
    let hook = match hook.as_str() {
        "prestart" => RawLifecycleHook::Prestart,
        "poststart" => RawLifecycleHook::Poststart,
        "poststop" => RawLifecycleHook::Poststop,
        "" => {
            return Err(file_error(
                file,
                task.at,
                format!("task \"{}\": no lifecycle hook provided", task.name),
            ));
        }
        other => {
            return Err(file_error(
                file,
                task.at,
                format!(
                    "task \"{}\": invalid hook: {} (expected prestart, poststart or poststop)",
                    task.name,
                    crate::names::one_line(other)
                ),
            ));
        }
    };
    Ok(Some(RawLifecycle {
        hook,
        sidecar: Some(*sidecar),
    }))
}

fn raw_reschedule(
    file: &str,
    group: &NomadGroup,
    r: &NomadReschedule,
) -> Result<RawReschedule, LoadError> {
    let delay_function = match r.delay_function.as_deref() {
        None => None,
        Some("constant") => Some(RawDelayFunction::Constant),
        Some("exponential") => Some(RawDelayFunction::Exponential),
        Some("fibonacci") => Some(RawDelayFunction::Fibonacci),
        Some(other) => {
            return Err(file_error(
                file,
                group.at,
                format!(
                    "group \"{}\": reschedule delay_function \"{other}\" is not one of constant, exponential, fibonacci",
                    group.name
                ),
            ));
        }
    };
    let attempts = r
        .attempts
        .map(|n| {
            u32::try_from(n).map_err(|_| {
                file_error(
                    file,
                    group.at,
                    format!(
                        "group \"{}\": reschedule attempts {n} must be at least 0",
                        group.name
                    ),
                )
            })
        })
        .transpose()?;
    Ok(RawReschedule {
        attempts,
        interval: r.interval.map(RawDuration),
        delay: r.delay.map(RawDuration),
        delay_function,
        max_delay: r.max_delay.map(RawDuration),
        unlimited: r.unlimited,
    })
}

/// The one warning per job (or volume) that lists every placement field
/// plansim left out, each with its line.
pub fn ignored_warning(
    file: &str,
    what: &str,
    at: Option<Position>,
    ignored: &[(String, Option<Position>)],
) -> Option<LoadError> {
    if ignored.is_empty() {
        return None;
    }
    let items: Vec<String> = ignored
        .iter()
        .map(|(what, at)| match at {
            Some(p) => format!("{what} (line {})", p.line),
            None => what.clone(),
        })
        .collect();
    Some(file_error(
        file,
        at,
        format!(
            "{what}: plansim does not model these fields, which can change placement, and ignores them: {}",
            items.join("; ")
        ),
    ))
}
