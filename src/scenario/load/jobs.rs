//! `jobs:`: each job's type, datacenters, priority, constraints and
//! preferences; its groups in `groups`.

use std::collections::{BTreeMap, BTreeSet};

use serde_saphyr::{Location, Spanned};

use super::entries::{DriverNames, UniqueIds, expand};
use super::groups::resolve_group;
use crate::model::ids::{PluginId, VolumeId};
use crate::model::scenario::{DEFAULT_NODE_POOL, JobKind, JobSpec, NodeSpec};
use crate::model::time::Millis;
use crate::scenario::error::{Fail, fail};
use crate::scenario::limits;
use crate::scenario::placement::{resolve_affinities, resolve_constraints, resolve_spreads};
use crate::scenario::raw::{RawJob, RawJobType};
use crate::scenario::template::TemplateBudget;

const DEFAULT_PRIORITY: u32 = 50;

pub(super) fn resolve_jobs(
    raw: &[Spanned<RawJob>],
    volume_by_name: &BTreeMap<String, VolumeId>,
    plugin_ids: &BTreeMap<&str, PluginId>,
    horizon: Millis,
    start: crate::model::periodic::WallClock,
    driver_names: &mut DriverNames,
    budget: &mut TemplateBudget,
) -> Result<Vec<JobSpec>, Fail> {
    let mut ids = UniqueIds::new("jobs");
    let mut jobs = Vec::new();
    let mut positions = Vec::new();
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
            positions.push(at);
        }
    }
    super::periodic::stamp_periodic_children(&mut jobs, &positions, start, horizon)?;
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
    let kind = job.job_type.unwrap_or(RawJobType::Service).kind();
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
        resolved.csi_plugins =
            crate::scenario::plugin_jobs::group_plugins(&group.value, plugin_ids);
        resolved.update =
            crate::scenario::update::merge(kind, job.update.as_ref(), group.value.update.as_ref());
        groups.push(resolved);
    }
    let launch = super::periodic::resolve_launch(&job, kind, &path, at)?;
    Ok(JobSpec {
        launch,
        name: job.id,
        kind,
        submit_at: job.submit_at.map_or(Millis::ZERO, |d| d.0),
        datacenters,
        priority,
        constraints,
        groups,
        spreads: resolve_spreads(job.spread.as_deref(), &path)?,
        affinities: resolve_affinities(job.affinity.as_deref(), &path)?,
        versions: Vec::new(),
        bare_versions: Default::default(),
        job_update: (kind == JobKind::System)
            .then(|| crate::scenario::update::job_update(job.update.as_ref()))
            .flatten(),
        node_pool: job
            .node_pool
            .unwrap_or_else(|| DEFAULT_NODE_POOL.to_string()),
        namespace: super::entries::resolve_namespace(job.namespace, at, &path)?,
    })
}

/// Nomad (1.5+) reads a job's datacenters as glob patterns, and a job file
/// without datacenters gets `["*"]`: each pattern with a `*` becomes the
/// datacenters of the nodes it matches (a pattern that matches none stays,
/// and matches no node, as in Nomad).
pub(super) fn expand_datacenter_globs(nodes: &[NodeSpec], jobs: &mut [JobSpec]) {
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
