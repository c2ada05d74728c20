//! A job's `periodic` and `parameterized` blocks, `dispatch` events, and
//! the child jobs they launch, stamped out at load (see model/periodic.rs
//! for why in advance). What Nomad refuses at registration or dispatch is
//! refused here, in Nomad's words, at the entry's position.

use std::collections::{BTreeMap, BTreeSet};

use serde_saphyr::Location;

use crate::model::cron::CronExpr;
use crate::model::ids::JobId;
use crate::model::periodic::{
    CronSpec, CronSpecs, DispatchRequest, JobLaunch, ParameterizedConfig, PayloadRule,
    PeriodicConfig, TimeZone, WallClock,
};
use crate::model::scenario::{JobKind, JobSpec, TimedEvent, TimelineAction};
use crate::model::time::Millis;
use crate::scenario::error::{Fail, fail};
use crate::scenario::limits;
use crate::scenario::raw::{RawDispatch, RawJob, RawParameterized, RawPeriodic};

/// The job's launch rule from its blocks (structs.go Job.Validate's
/// periodic and parameterized checks, PeriodicConfig.Validate,
/// ParameterizedJobConfig.Validate).
pub(super) fn resolve_launch(
    job: &RawJob,
    kind: JobKind,
    path: &str,
    at: Location,
) -> Result<JobLaunch, Fail> {
    let batch = matches!(kind, JobKind::Batch | JobKind::Sysbatch);
    match (&job.periodic, &job.parameterized) {
        (None, None) => Ok(JobLaunch::Plain),
        (Some(_), Some(_)) => fail(
            at,
            format!(
                "{path}: a job both periodic and parameterized is not modelled (Nomad launches such a job only by dispatch, and each dispatched child is periodic); give one of the two blocks"
            ),
        ),
        (Some(periodic), None) => {
            let config = resolve_periodic(periodic, &format!("{path}.periodic"), at)?;
            if config.enabled && !batch {
                return fail(
                    at,
                    format!(
                        "{path}.periodic: Periodic can only be used with \"batch\" or \"sysbatch\" scheduler (expected type: batch or sysbatch)"
                    ),
                );
            }
            Ok(JobLaunch::Periodic(Box::new(config)))
        }
        (None, Some(parameterized)) => {
            if !batch {
                return fail(
                    at,
                    format!(
                        "{path}.parameterized: Parameterized job can only be used with \"batch\" or \"sysbatch\" scheduler (expected type: batch or sysbatch)"
                    ),
                );
            }
            let config =
                resolve_parameterized(parameterized, &format!("{path}.parameterized"), at)?;
            Ok(JobLaunch::Parameterized(Box::new(config)))
        }
    }
}

fn resolve_periodic(raw: &RawPeriodic, path: &str, at: Location) -> Result<PeriodicConfig, Fail> {
    let enabled = raw.enabled.unwrap_or(true);
    let parse = |text: &String| -> Result<CronSpec, Fail> {
        match CronExpr::parse(text) {
            Ok(expr) => Ok(CronSpec {
                text: text.clone(),
                expr,
            }),
            Err(err) => fail(
                at,
                format!("{path}: {}", crate::model::cron::invalid_spec(text, &err)),
            ),
        }
    };
    // A disabled block is not validated (PeriodicConfig.Validate returns
    // at once), but plansim keeps its specs to write them back: they must
    // still read.
    let specs = match (&raw.cron, &raw.crons) {
        (Some(_), Some(list)) if !list.is_empty() => {
            return fail(
                at,
                format!("{path}: Only cron or crons may be used (expected one of the two)"),
            );
        }
        (Some(one), _) if !one.is_empty() => CronSpecs::Cron(parse(one)?),
        (_, Some(list)) if !list.is_empty() => {
            CronSpecs::Crons(list.iter().map(parse).collect::<Result<_, _>>()?)
        }
        _ => {
            return fail(
                at,
                format!("{path}: Must specify a spec (expected cron: \"<spec>\" or crons: [...])"),
            );
        }
    };
    let zone = raw.time_zone.as_deref().unwrap_or("UTC");
    let Some(time_zone) = TimeZone::parse(zone) else {
        return fail(
            at,
            format!(
                "{path}.time_zone: {zone:?} is not a time zone of the IANA database (expected a name such as UTC, Europe/Dublin or America/New_York)"
            ),
        );
    };
    Ok(PeriodicConfig {
        enabled,
        specs,
        prohibit_overlap: raw.prohibit_overlap.unwrap_or(false),
        time_zone,
    })
}

fn resolve_parameterized(
    raw: &RawParameterized,
    path: &str,
    at: Location,
) -> Result<ParameterizedConfig, Fail> {
    let payload = match raw.payload.as_deref() {
        None | Some("") => PayloadRule::Optional,
        Some(name) => match PayloadRule::from_name(name) {
            Some(rule) => rule,
            None => {
                return fail(
                    at,
                    format!(
                        "{path}.payload: Unknown payload requirement: {name:?} (expected optional, required or forbidden)"
                    ),
                );
            }
        },
    };
    let meta_required = raw.meta_required.clone().unwrap_or_default();
    let meta_optional = raw.meta_optional.clone().unwrap_or_default();
    let both: Vec<&String> = meta_required
        .iter()
        .filter(|k| meta_optional.contains(k))
        .collect();
    if !both.is_empty() {
        return fail(
            at,
            format!(
                "{path}: Required and optional meta keys should be disjoint. Following keys exist in both: {}",
                go_list(&both)
            ),
        );
    }
    Ok(ParameterizedConfig {
        payload,
        meta_required,
        meta_optional,
    })
}

/// Appends a child job for every launch of every enabled periodic parent
/// within the horizon, parent by parent, launch by launch: the leader's
/// dispatcher adds the parent at its registration and launches at each
/// `Next` strictly after the previous launch (periodic.go Add, dispatch).
pub(super) fn stamp_periodic_children(
    jobs: &mut Vec<JobSpec>,
    positions: &[Location],
    start: WallClock,
    horizon: Millis,
) -> Result<(), Fail> {
    let end = start.0 + (horizon.0 / 1000) as i64;
    let mut launches = 0usize;
    for index in 0..jobs.len() {
        let JobLaunch::Periodic(config) = &jobs[index].launch else {
            continue;
        };
        if !config.enabled {
            continue;
        }
        let config = config.clone();
        let registered = start.0 + (jobs[index].submit_at.0 / 1000) as i64;
        let mut from = registered;
        while let Some(launch) = config.next_launch(from).filter(|&t| t <= end) {
            launches += 1;
            if launches > limits::MAX_PERIODIC_LAUNCHES {
                return fail(
                    positions[index],
                    format!(
                        "jobs[{}].periodic: more than {} launches within the horizon (MAX_PERIODIC_LAUNCHES): launch less often or shorten the horizon",
                        jobs[index].name,
                        limits::MAX_PERIODIC_LAUNCHES
                    ),
                );
            }
            let name = format!("{}/periodic-{launch}", jobs[index].name);
            let at = Millis::from_secs((launch - start.0) as u64);
            jobs.push(child_of(&jobs[index], index, name, at, true));
            from = launch;
        }
    }
    Ok(())
}

/// A child: the parent's copy under a new id, neither periodic nor
/// parameterized (deriveJob; job_endpoint.go Dispatch).
fn child_of(parent: &JobSpec, index: usize, name: String, at: Millis, periodic: bool) -> JobSpec {
    let parent_id = JobId::from_index(index);
    JobSpec {
        name,
        submit_at: at,
        launch: if periodic {
            JobLaunch::PeriodicChild { parent: parent_id }
        } else {
            JobLaunch::Dispatched { parent: parent_id }
        },
        ..parent.clone()
    }
}

/// A `dispatch` event, checked as job_endpoint.go Dispatch and
/// validateDispatchRequest check it, in their order. The child is
/// stamped out by [`stamp_dispatched_children`].
pub(super) fn resolve_dispatch(
    jobs: &[JobSpec],
    job: JobId,
    raw: &RawDispatch,
    path: &str,
    at: Location,
) -> Result<TimelineAction, Fail> {
    let spec = &jobs[job.index()];
    let JobLaunch::Parameterized(config) = &spec.launch else {
        return fail(
            at,
            format!(
                "{path}.job: Specified job {:?} is not a parameterized job (expected a job with a parameterized block)",
                spec.name
            ),
        );
    };
    let has_payload = raw.payload.as_ref().is_some_and(|p| !p.is_empty());
    if config.payload == PayloadRule::Required && !has_payload {
        return fail(
            at,
            format!(
                "{path}.payload: Payload is not provided but required by parameterized job (expected a payload)"
            ),
        );
    }
    if config.payload == PayloadRule::Forbidden && has_payload {
        return fail(
            at,
            format!("{path}.payload: Payload provided but forbidden by parameterized job"),
        );
    }
    let meta = raw.meta.clone().unwrap_or_default();
    let unpermitted: Vec<&String> = meta
        .keys()
        .filter(|k| !config.meta_required.contains(k) && !config.meta_optional.contains(k))
        .collect();
    if !unpermitted.is_empty() {
        return fail(
            at,
            format!(
                "{path}.meta: Dispatch request included unpermitted metadata keys: {} (expected keys of meta_required or meta_optional)",
                go_list(&unpermitted)
            ),
        );
    }
    let missing: Vec<&String> = config
        .meta_required
        .iter()
        .filter(|k| !meta.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        return fail(
            at,
            format!(
                "{path}.meta: Dispatch did not provide required meta keys: {}",
                go_list(&missing)
            ),
        );
    }
    Ok(TimelineAction::Dispatch {
        job,
        // Set by stamp_dispatched_children.
        child: job,
        request: Box::new(DispatchRequest {
            meta,
            payload: raw.payload.clone(),
        }),
    })
}

/// Appends the child of every dispatch, in event order, and points the
/// event at it. A dispatch of a parent a `stop_job` stopped before is
/// refused ("Specified job %q is stopped"). The 8 hex digits Nomad draws
/// from a random UUID are a hash of the parent, the launch second and the
/// dispatch's number, so names are the same on every run.
pub(super) fn stamp_dispatched_children(
    jobs: &mut Vec<JobSpec>,
    events: &mut [TimedEvent],
    positions: &[Location],
    start: WallClock,
) -> Result<(), Fail> {
    // Each parent's first stop, as (time, file order): at one instant
    // events run in file order.
    let mut stopped: BTreeMap<JobId, (Millis, usize)> = BTreeMap::new();
    for (index, event) in events.iter().enumerate() {
        if let TimelineAction::StopJob(job) = event.action {
            let first = stopped.entry(job).or_insert((event.at, index));
            *first = (*first).min((event.at, index));
        }
    }
    let mut nth: BTreeMap<JobId, u32> = BTreeMap::new();
    for (index, event) in events.iter_mut().enumerate() {
        let TimelineAction::Dispatch { job, child, .. } = &mut event.action else {
            continue;
        };
        let parent = &jobs[job.index()];
        if stopped
            .get(job)
            .is_some_and(|&stop| stop < (event.at, index))
        {
            return fail(
                positions[index],
                format!(
                    "events[{index}].dispatch.job: Specified job {:?} is stopped (a stop_job event before this dispatch stopped it; expected a dispatch before the stop)",
                    parent.name
                ),
            );
        }
        let number = nth.entry(*job).or_insert(0);
        *number += 1;
        let unix = start.0 + (event.at.0 / 1000) as i64;
        let suffix = fnv1a(&format!("{}\n{unix}\n{number}", parent.name));
        let name = format!("{}/dispatch-{unix}-{suffix:08x}", parent.name);
        let spec = child_of(parent, job.index(), name, event.at, false);
        *child = JobId::from_index(jobs.len());
        jobs.push(spec);
    }
    Ok(())
}

/// Go's `%v` of a list of strings: `[a b]`.
fn go_list(keys: &[&String]) -> String {
    let words: Vec<&str> = keys.iter().map(|k| k.as_str()).collect();
    format!("[{}]", words.join(" "))
}

/// A stamped-out child may not take a name a job already has.
pub(super) fn check_unique_names(jobs: &[JobSpec]) -> Result<(), Fail> {
    let mut seen = BTreeSet::new();
    for job in jobs {
        if !seen.insert(job.name.as_str()) {
            return Err((
                None,
                format!(
                    "jobs: {:?} is both a job's id and the name of a periodic or dispatched child Nomad would launch; rename the job",
                    job.name
                ),
            ));
        }
    }
    Ok(())
}

/// FNV-1a, 32 bits: a stable stand-in for a random UUID's first 8 hex digits.
fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

/// Events that act on a job's own allocations are refused on a parent:
/// it has none, and plansim does not model re-registering one.
pub(super) fn refuse_parent(
    jobs: &[JobSpec],
    job: JobId,
    field: &str,
    at: Location,
) -> Result<(), Fail> {
    let spec = &jobs[job.index()];
    if spec.launch.is_parent() {
        return fail(
            at,
            format!(
                "{field}: job {:?} is periodic or parameterized: it places nothing itself (expected a job that is neither, or one of its children)",
                spec.name
            ),
        );
    }
    Ok(())
}
