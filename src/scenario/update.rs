//! Job versions and the `update` block: merging the job's and a group's
//! `update` as Nomad does, and turning each `update_job` event into a
//! version of the job (its groups as of that update).

use super::raw::{RawGroupOverride, RawUpdate};
use crate::model::scenario::{
    GroupOverride, GroupSpec, JobKind, JobSpec, JobUpdate, TimedEvent, TimelineAction,
    UpdateStrategy,
};
use crate::model::time::Millis;

/// A group's update strategy: Nomad's api TaskGroup.Canonicalize copies the
/// job's `update` and merges the group's over it field by field; a service
/// job without one gets DefaultUpdateStrategy (api Job.Canonicalize). A
/// batch job has none, and `max_parallel: 0` is Nomad's empty strategy
/// (UpdateStrategy.IsEmpty): both update every allocation at once, with no
/// deployment.
pub fn merge(
    kind: JobKind,
    job: Option<&RawUpdate>,
    group: Option<&RawUpdate>,
) -> Option<UpdateStrategy> {
    if kind == JobKind::Batch {
        return None;
    }
    let mut merged = UpdateStrategy::default();
    for raw in [job, group].into_iter().flatten() {
        let d = |v: Option<super::raw::RawDuration>, old: Millis| v.map_or(old, |d| d.0);
        merged.max_parallel = raw.max_parallel.map_or(merged.max_parallel, |c| c.0);
        merged.canary = raw.canary.map_or(merged.canary, |c| c.0);
        merged.min_healthy_time = d(raw.min_healthy_time, merged.min_healthy_time);
        merged.healthy_deadline = d(raw.healthy_deadline, merged.healthy_deadline);
        merged.progress_deadline = d(raw.progress_deadline, merged.progress_deadline);
        merged.auto_revert = raw.auto_revert.unwrap_or(merged.auto_revert);
        merged.auto_promote = raw.auto_promote.unwrap_or(merged.auto_promote);
        merged.stagger = d(raw.stagger, merged.stagger);
    }
    (merged.max_parallel > 0).then_some(merged)
}

/// A system job's own `update` block as the system scheduler reads it:
/// its `max_parallel` and `stagger`, with api UpdateStrategy.Canonicalize's
/// defaults (1, 30s); none without a block.
pub fn job_update(job: Option<&RawUpdate>) -> Option<JobUpdate> {
    let defaults = UpdateStrategy::default();
    job.map(|raw| JobUpdate {
        max_parallel: raw.max_parallel.map_or(defaults.max_parallel, |c| c.0),
        stagger: raw.stagger.map_or(defaults.stagger, |d| d.0),
    })
}

/// The override of one group as written (group index already resolved).
pub fn override_of(group: usize, raw: &RawGroupOverride) -> GroupOverride {
    GroupOverride {
        group,
        count: raw.count.map(|c| c.0),
        cpu: raw.cpu,
        memory: raw.memory,
        healthy_after: raw.healthy_after.map(|d| d.0),
    }
}

/// Numbers the versions the `update_job` events make, in the order they
/// happen (time, then file order), each on top of the one before: a bare
/// `update_job` (no groups) is a new version with nothing changed (a
/// destructive update, like a changed task config); one that changes only
/// counts is a new version too. Which allocations Nomad updates in place
/// (no task changed) is decided per group (`JobSpec::updates_in_place`).
pub fn assign_versions(jobs: &mut [JobSpec], events: &mut [TimedEvent]) {
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by_key(|&i| (events[i].at, i));
    for i in order {
        let TimelineAction::UpdateJob {
            job,
            version,
            overrides,
        } = &mut events[i].action
        else {
            continue;
        };
        let spec = &mut jobs[job.index()];
        let base: &[GroupSpec] = spec.groups_of(spec.versions.len() as u32);
        let mut groups = base.to_vec();
        for o in overrides.iter() {
            let group = &mut groups[o.group];
            group.count = o.count.unwrap_or(group.count);
            group.cpu = o.cpu.unwrap_or(group.cpu);
            group.memory = o.memory.unwrap_or(group.memory);
            group.healthy_after = o.healthy_after.unwrap_or(group.healthy_after);
        }
        spec.versions.push(groups);
        let number = spec.versions.len() as u32;
        if overrides.is_empty() {
            spec.bare_versions.insert(number);
        }
        *version = Some(number);
    }
}
