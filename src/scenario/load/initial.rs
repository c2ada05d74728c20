//! `initial_allocations:`: the cluster as it is at time 0.

use std::collections::{BTreeMap, BTreeSet};

use serde_saphyr::Spanned;

use crate::model::ids::{JobId, NodeId, VolumeId};
use crate::model::scenario::{InitialAllocation, InitialStatus, JobSpec, NodeSpec, VolumeSource};
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
    volumes: &[crate::model::scenario::VolumeSpec],
) -> Result<Vec<InitialAllocation>, Fail> {
    let mut seen = BTreeSet::new();
    let mut used: BTreeMap<NodeId, (u64, u64)> = BTreeMap::new();
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
            let id = match &request.source {
                VolumeSource::Shared(id) => *id,
                VolumeSource::PerAlloc { base } => volume_by_name[&format!("{base}[{index}]")],
            };
            let volume = &volumes[id.index()];
            if volume.register_at > crate::model::time::Millis::ZERO {
                return fail(
                    at,
                    format!(
                        "{path}.alloc: its volume \"{}\" is registered at {}s (register_at); an allocation cannot hold it from the start",
                        volume.name, volume.register_at
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
        let status = match alloc.status {
            RawInitialStatus::Running => InitialStatus::Running,
            RawInitialStatus::Pending => InitialStatus::Pending,
            RawInitialStatus::Failed => InitialStatus::Failed,
        };
        // A failed allocation holds no resources (AllocsFit skips
        // terminal client statuses).
        let total = used.entry(node_id).or_default();
        if status != InitialStatus::Failed {
            total.0 += group.cpu;
            total.1 += group.memory;
        }
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
            status,
        });
    }
    Ok(out)
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
