//! A job's `groups:`: count, volume requests, tasks (summed into the
//! group's resources and drivers), reschedule policy and the rest.

use std::collections::BTreeMap;

use serde_saphyr::{Location, Spanned};

use super::budget::check_allocation_count;
use super::entries::{DriverNames, UniqueIds};
use super::volumes::attachment;
use crate::model::access::ClaimMode;
use crate::model::ids::VolumeId;
use crate::model::lifecycle::{GroupLifecycle, Hook, Resources, TaskLifecycle, TaskPhase};
use crate::model::scenario::*;
use crate::model::time::Millis;
use crate::scenario::error::{Fail, fail};
use crate::scenario::limits;
use crate::scenario::placement::{resolve_affinities, resolve_constraints, resolve_spreads};
use crate::scenario::raw::*;

/// Nomad's defaults for a task's resources.
const DEFAULT_TASK_CPU: u64 = 100;
const DEFAULT_TASK_MEMORY: u64 = 300;

pub(super) fn resolve_group(
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
    let volumes = resolve_volume_requests(group, &path, volume_by_name)?;
    let host_volumes = super::host_volumes::resolve_host_requests(group, &path)?;
    let tasks = resolve_tasks(entry, &path, &volumes, &host_volumes, driver_names)?;
    let reschedule = resolve_reschedule(group.reschedule.as_ref(), kind, at, &path)?;
    Ok(GroupSpec {
        name: group.name.clone(),
        count,
        volumes,
        host_volumes,
        reschedule,
        cpu: tasks.cpu,
        memory: tasks.memory,
        drivers: tasks.drivers,
        run_for: tasks.run_for,
        max_run_duration: max_run_duration(group, kind, &path, at)?,
        healthy_after: tasks.healthy_after,
        update: None,
        constraints: resolve_constraints(group.constraints.as_deref().unwrap_or(&[]), at, &path)?,
        csi_plugins: Vec::new(),
        spreads: resolve_spreads(group.spread.as_deref(), &path)?,
        affinities: resolve_affinities(group.affinity.as_deref(), &path)?,
        disconnect: crate::scenario::nodes::disconnect(group),
        migrate: crate::scenario::nodes::migrate(group.migrate.as_ref(), count, at, &path)?,
        lifecycle: tasks.lifecycle,
        ports: super::network::resolve_ports(group, &path, at)?,
        ephemeral_disk: resolve_ephemeral_disk(group.ephemeral_disk.as_ref(), &path, at)?,
    })
}

/// The group's `ephemeral_disk:`, Nomad's defaults for what it leaves out
/// (`api.EphemeralDisk.Canonicalize`), its size checked as registration
/// checks it (`structs.EphemeralDisk.Validate`).
fn resolve_ephemeral_disk(
    raw: Option<&RawEphemeralDisk>,
    path: &str,
    at: Location,
) -> Result<EphemeralDisk, Fail> {
    let Some(raw) = raw else {
        return Ok(EphemeralDisk::DEFAULT);
    };
    let default = EphemeralDisk::DEFAULT;
    let size_mb = match raw.size {
        None => default.size_mb,
        Some(size) if size >= 10 => size.unsigned_abs(),
        Some(size) => {
            return fail(
                at,
                format!("{path}.ephemeral_disk.size: minimum DiskMB value is 10; got {size}"),
            );
        }
    };
    Ok(EphemeralDisk {
        size_mb,
        sticky: raw.sticky.unwrap_or(default.sticky),
        migrate: raw.migrate.unwrap_or(default.migrate),
    })
}

/// The group's `max_run_duration`, refused where Nomad's job validation
/// refuses it (`structs.go:TaskGroup.Validate` at v2.0.5, in its order):
/// a duration of 0s, and a job type other than batch and sysbatch. Nomad
/// 1.2.6 has no such field (its `naive` run ignores it); every release that
/// has it refuses these, so the scenario is refused for every policy.
fn max_run_duration(
    group: &RawGroup,
    kind: JobKind,
    path: &str,
    at: Location,
) -> Result<Option<Millis>, Fail> {
    let Some(RawDuration(duration)) = group.max_run_duration else {
        return Ok(None);
    };
    let refusal = if duration == Millis::ZERO {
        "MaxRunDuration must be greater than zero".to_string()
    } else if let Some(name) = kind.refuses_max_run_duration() {
        format!("Job type \"{name}\" does not allow max_run_duration")
    } else {
        return Ok(Some(duration));
    };
    fail(
        at,
        format!("{path}.max_run_duration: {refusal} (Nomad's job validation)"),
    )
}

/// The group's `volumes:`, each naming a volume (or, `per_alloc`, a family
/// of volumes) under `volumes:`.
fn resolve_volume_requests(
    group: &RawGroup,
    path: &str,
    volume_by_name: &BTreeMap<String, VolumeId>,
) -> Result<Vec<VolumeRequest>, Fail> {
    let mut volumes = Vec::new();
    for (alias, request) in group.volumes.iter().flatten() {
        let request_path = format!("{path}.volumes[{alias}]");
        let raw = &request.value;
        if raw.volume_type == RawVolumeType::Host {
            continue; // host_volumes::resolve_host_requests
        }
        let access_mode = match raw.access_mode {
            None => None,
            Some(mode) => Some(mode.csi().ok_or_else(|| {
                (
                    Some(request.referenced),
                    format!(
                        "{request_path}.access_mode: {} is a host volume access mode; a CSI volume is mounted in single-node-reader-only, single-node-writer, multi-node-reader-only, multi-node-single-writer or multi-node-multi-writer",
                        mode.name()
                    ),
                )
            })?),
        };
        let per_alloc = raw.per_alloc.unwrap_or(false);
        // A source no volume has is what Nomad registers and then cannot
        // place ("missing CSI volume"): kept, and warned about by the
        // scenario's resolver (`missing_volume_warnings`).
        let source = if per_alloc {
            VolumeSource::PerAlloc {
                base: raw.source.clone(),
            }
        } else {
            match volume_by_name.get(&raw.source) {
                Some(&id) => VolumeSource::Shared(id),
                None => VolumeSource::Missing {
                    name: raw.source.clone(),
                },
            }
        };
        volumes.push(VolumeRequest {
            alias: alias.clone(),
            source,
            mode: ClaimMode::from_read_only(raw.read_only.unwrap_or(false)),
            access_mode,
            attachment_mode: raw.attachment_mode.map(attachment),
        });
    }
    Ok(volumes)
}

/// What the model keeps of a group's tasks: their sums.
struct TaskSums {
    /// The main tasks' resources (the lifecycle tasks' are in `lifecycle`).
    cpu: u64,
    memory: u64,
    drivers: DriverSet,
    /// How long the allocation runs: its prestart, main and poststop
    /// phases one after the other; `None` when a task runs until stopped.
    run_for: Option<Millis>,
    /// The allocation is healthy once every task is: the longest wait.
    healthy_after: Millis,
    lifecycle: Option<Box<GroupLifecycle>>,
}

/// The group's `tasks:`, checked (unique names, mounts of declared volumes)
/// and summed.
fn resolve_tasks(
    entry: &Spanned<RawGroup>,
    path: &str,
    volumes: &[VolumeRequest],
    host_volumes: &[crate::model::host_volume::HostVolumeRequest],
    driver_names: &mut DriverNames,
) -> Result<TaskSums, Fail> {
    let (at, group) = (entry.referenced, &entry.value);
    if group.tasks.is_empty() {
        return fail(at, format!("{path}.tasks: a group needs at least one task"));
    }
    let tasks_path = format!("{path}.tasks");
    let mut names = UniqueIds::new(&tasks_path);
    let mut drivers = DriverSet::default();
    let mut healthy_after = Millis::ZERO;
    let mut tasks = Vec::with_capacity(group.tasks.len());
    for task in &group.tasks {
        names.insert(&task.value.name, task.referenced)?;
        let task_path = format!("{path}.tasks[{}]", task.value.name);
        let driver = task.value.driver.as_deref().unwrap_or("docker");
        drivers =
            drivers.union(driver_names.set([driver], task.referenced, &|| task_path.clone())?);
        healthy_after = healthy_after.max(task.value.healthy_after.map_or(Millis::ZERO, |d| d.0));
        for mount in task.value.volume_mounts.iter().flatten() {
            let declared = volumes.iter().any(|v| v.alias == mount.volume)
                || host_volumes.iter().any(|v| v.alias == mount.volume);
            if !declared {
                return fail(
                    task.referenced,
                    format!(
                        "{task_path}.volume_mounts: volume \"{}\" is not declared in the group's volumes",
                        mount.volume
                    ),
                );
            }
        }
        tasks.push(task_lifecycle(&task.value));
    }
    let main = |phase: TaskPhase| phase == TaskPhase::Main;
    let (mut cpu, mut memory) = (0u64, 0u64);
    for task in tasks.iter().filter(|t| main(t.phase)) {
        cpu = cpu.saturating_add(task.resources.cpu);
        memory = memory.saturating_add(task.resources.memory);
    }
    let run_for = run_time(&group.tasks, &tasks);
    if run_for == Some(Millis::ZERO) {
        return fail(at, format!("{path}.tasks: run_for must be longer than 0s"));
    }
    let shutdown_delay = group.shutdown_delay.map_or(Millis::ZERO, |d| d.0);
    let plain = shutdown_delay == Millis::ZERO
        && tasks
            .iter()
            .all(|t| main(t.phase) && t.kill_timeout.is_none() && t.shutdown_delay == Millis::ZERO);
    let lifecycle = (!plain).then(|| {
        Box::new(GroupLifecycle {
            tasks,
            shutdown_delay,
        })
    });
    Ok(TaskSums {
        cpu,
        memory,
        drivers,
        run_for,
        healthy_after,
        lifecycle,
    })
}

/// One task's phase, resources and stop timings.
fn task_lifecycle(task: &RawTask) -> TaskLifecycle {
    let phase = task.lifecycle.map_or(TaskPhase::Main, |l| {
        let hook = match l.hook {
            RawLifecycleHook::Prestart => Hook::Prestart,
            RawLifecycleHook::Poststart => Hook::Poststart,
            RawLifecycleHook::Poststop => Hook::Poststop,
        };
        TaskPhase::of(Some(hook), l.sidecar.unwrap_or(false))
    });
    TaskLifecycle {
        phase,
        resources: Resources {
            cpu: task.cpu.unwrap_or(DEFAULT_TASK_CPU),
            memory: task.memory.unwrap_or(DEFAULT_TASK_MEMORY),
        },
        shutdown_delay: task.shutdown_delay.map_or(Millis::ZERO, |d| d.0),
        kill_timeout: task.kill_timeout.map(|d| d.0),
        run_for: task.run_for.map(|d| d.0),
        csi_plugin: task.csi_plugin.is_some(),
    }
}

/// How long an allocation of these tasks runs before it completes: the
/// longest prestart task (non-sidecar; one without `run_for` exits at
/// once), then the longest main or poststart task (a sidecar is killed
/// once they are done; any of them without `run_for`: the allocation runs
/// until stopped, `None`), then the longest poststop task. A group with no
/// task but sidecars, prestart and poststop tasks never completes either.
fn run_time(raw: &[Spanned<RawTask>], tasks: &[TaskLifecycle]) -> Option<Millis> {
    let longest = |phases: &[TaskPhase]| {
        raw.iter()
            .zip(tasks)
            .filter(|(_, t)| phases.contains(&t.phase))
            .map(|(r, _)| r.value.run_for.map(|d| d.0))
            .collect::<Vec<_>>()
    };
    let main = longest(&[TaskPhase::Main, TaskPhase::Poststart]);
    if main.is_empty() || main.iter().any(Option::is_none) {
        return None;
    }
    let phase_max =
        |list: Vec<Option<Millis>>| list.into_iter().flatten().max().unwrap_or(Millis::ZERO);
    Some(
        phase_max(longest(&[TaskPhase::Prestart]))
            + phase_max(main)
            + phase_max(longest(&[TaskPhase::Poststop])),
    )
}

/// The group's `reschedule` block over the job type's defaults.
fn resolve_reschedule(
    raw: Option<&RawReschedule>,
    kind: JobKind,
    at: Location,
    path: &str,
) -> Result<ReschedulePolicy, Fail> {
    let mut reschedule = ReschedulePolicy::default_for(kind);
    let Some(raw) = raw else {
        return Ok(reschedule);
    };
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
    Ok(reschedule)
}
