//! `initial_allocations:`: the cluster as it is at time 0.

use std::collections::{BTreeMap, BTreeSet};

use serde_saphyr::Spanned;

use crate::model::ids::{GroupRef, JobId, NodeId, VolumeId};
use crate::model::scenario::{
    InitialAllocation, InitialStatus, JobSpec, NodeSpec, VolumeSource, VolumeSpec,
};
use crate::model::time::Millis;
use crate::scenario::error::{Fail, fail};
use crate::scenario::raw::{RawInitialAllocation, RawInitialStatus};

/// `initial_allocations`: each names an allocation the Nomad way,
/// `<job>.<group>[<index>]`, of a job submitted at 0s, on a known node.
pub(super) fn resolve_initial_allocations(
    raw: &[Spanned<RawInitialAllocation>],
    jobs: &[JobSpec],
    nodes: &[NodeSpec],
    volume_by_name: &BTreeMap<String, VolumeId>,
    volumes: &[VolumeSpec],
) -> Result<Vec<InitialAllocation>, Fail> {
    let mut checker = InitialChecker::default();
    let mut out = Vec::with_capacity(raw.len());
    for (i, entry) in raw.iter().enumerate() {
        let (at, alloc) = (entry.referenced, &entry.value);
        let path = format!("initial_allocations[{i}]");
        let Some((name, index)) = split_alloc_name(&alloc.alloc) else {
            return fail(
                at,
                format!(
                    "{path}.alloc: \"{}\" is not an allocation name: expected <job>.<group>[<index>]",
                    alloc.alloc
                ),
            );
        };
        let Some((j, g)) = find_group(jobs, name) else {
            return fail(
                at,
                format!("{path}.alloc: no job and group under jobs match \"{name}\""),
            );
        };
        let Some(node) = nodes.iter().position(|n| n.name == alloc.node) else {
            return fail(
                at,
                format!(
                    "{path}.node: no node with id \"{}\" under nodes",
                    alloc.node
                ),
            );
        };
        let status = match alloc.status {
            RawInitialStatus::Running => InitialStatus::Running,
            RawInitialStatus::Pending => InitialStatus::Pending,
            RawInitialStatus::Failed => InitialStatus::Failed,
        };
        let initial = InitialAllocation {
            group: GroupRef::new(JobId::from_index(j), g),
            index,
            node: NodeId::from_index(node),
            status,
        };
        let parts = ScenarioParts {
            jobs,
            nodes,
            volume_by_name,
            volumes,
        };
        if let Err((field, problem)) = checker.admit(&parts, &initial) {
            let shown = match field {
                InitialField::Alloc => format!("{path}.alloc: {problem}"),
                InitialField::Node => format!("{path}.node: {problem}"),
            };
            return fail(at, shown);
        }
        out.push(initial);
    }
    Ok(out)
}

/// What an initial allocation is checked against.
pub struct ScenarioParts<'a> {
    pub jobs: &'a [JobSpec],
    pub nodes: &'a [NodeSpec],
    pub volume_by_name: &'a BTreeMap<String, VolumeId>,
    pub volumes: &'a [VolumeSpec],
}

/// The field of an initial allocation a problem is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitialField {
    Alloc,
    Node,
}

/// The rules a list of initial allocations keeps, one allocation at a
/// time in list order (each is checked against the ones before it). The
/// loader refuses the first that breaks one; the hunt's shrinker, after
/// removing or lowering something, drops the ones that now would, so its
/// candidates stay files the loader reads.
#[derive(Default)]
pub struct InitialChecker {
    seen: BTreeSet<(JobId, u32, u32)>,
    used: BTreeMap<NodeId, (u64, u64, u64)>,
}

impl InitialChecker {
    /// Admits `initial` after the ones admitted before it, or says why not.
    pub fn admit(
        &mut self,
        parts: &ScenarioParts,
        initial: &InitialAllocation,
    ) -> Result<(), (InitialField, String)> {
        let alloc = |problem: String| Err((InitialField::Alloc, problem));
        let (job, group) = (
            &parts.jobs[initial.group.job.index()],
            &parts.jobs[initial.group.job.index()].groups[initial.group.group_index()],
        );
        let index = initial.index;
        if job.submit_at != Millis::ZERO {
            return alloc(format!(
                "job \"{}\" is submitted at {}s; an allocation at time 0 needs its job submitted at 0s",
                job.name, job.submit_at
            ));
        }
        if index >= group.count {
            return alloc(format!(
                "index {index} is not below the group's count {}",
                group.count
            ));
        }
        for request in &group.volumes {
            let id = match &request.source {
                VolumeSource::Shared(id) => *id,
                VolumeSource::PerAlloc { base } => {
                    let name = format!("{base}[{index}]");
                    match parts.volume_by_name.get(&name) {
                        Some(id) => *id,
                        None => {
                            return alloc(format!(
                                "its volume \"{name}\" (per_alloc) is not under volumes"
                            ));
                        }
                    }
                }
                VolumeSource::Missing { name } => {
                    return alloc(format!("its volume \"{name}\" is not under volumes"));
                }
            };
            let volume = &parts.volumes[id.index()];
            if volume.register_at > Millis::ZERO {
                return alloc(format!(
                    "its volume \"{}\" is registered at {}s (register_at); an allocation cannot hold it from the start",
                    volume.name, volume.register_at
                ));
            }
        }
        // A system job runs `<job>.<group>[0]` on every node: its slot is the node.
        let slot = if job.is_system() {
            initial.node.0
        } else {
            index
        };
        if !self
            .seen
            .insert((initial.group.job, initial.group.group, slot))
        {
            return alloc(format!(
                "\"{}.{}[{index}]\" is listed twice",
                job.name, group.name
            ));
        }
        // A failed allocation holds no resources (AllocsFit skips
        // terminal client statuses).
        let node = &parts.nodes[initial.node.index()];
        let total = self.used.entry(initial.node).or_default();
        if initial.status != InitialStatus::Failed {
            total.0 += group.cpu;
            total.1 += group.memory;
            total.2 += group.ephemeral_disk.size_mb;
        }
        if total.0 > node.cpu || total.1 > node.memory || total.2 > node.disk {
            return Err((
                InitialField::Node,
                format!(
                    "node \"{}\" has {} MHz, {} MiB and {} MB of disk; its initial allocations need more",
                    node.name, node.cpu, node.memory, node.disk
                ),
            ));
        }
        Ok(())
    }
}

/// Nomad's allocation name `<job>.<group>[<index>]`, split into
/// `<job>.<group>` and the index.
pub(super) fn split_alloc_name(name: &str) -> Option<(&str, u32)> {
    name.strip_suffix(']')
        .and_then(|s| s.rsplit_once('['))
        .and_then(|(name, index)| Some((name, index.parse::<u32>().ok()?)))
}

/// The job and group (indices) that `<job>.<group>` names.
pub(super) fn find_group(jobs: &[JobSpec], name: &str) -> Option<(usize, usize)> {
    jobs.iter().enumerate().find_map(|(j, job)| {
        let group = name.strip_prefix(job.name.as_str())?.strip_prefix('.')?;
        let g = job.groups.iter().position(|g| g.name == group)?;
        Some((j, g))
    })
}
