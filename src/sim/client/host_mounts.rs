//! The client's host volume hook: before an allocation's tasks start it
//! mounts the group's host volumes (1.2.6
//! `client/allocrunner/taskrunner/volume_hook.go:prepareHostVolumes`,
//! which fails the task when the node lacks one: "host volume validation
//! error: missing <source>"). A dynamic host volume's plugin that enforces
//! its access modes refuses a mount that would give the volume more
//! writers than its capabilities allow; a toy plugin (and any 1.2.6
//! client, which has no host volume plugins) mounts it, and the volume is
//! in violation until enough writers stop.

use crate::model::ids::AllocId;
use crate::sim::simulation::Simulation;
use crate::sim::state::host_volumes::writers_allowed;
use crate::sim::trace::{TraceKind, TraceRecord};

impl Simulation<'_> {
    /// Mounts allocation `id`'s host volumes on its node; `Err` says why
    /// the allocation fails instead. Without `enforce`, no plugin refuses.
    pub(crate) fn mount_host_volumes(&mut self, id: AllocId, enforce: bool) -> Result<(), String> {
        if !self.host_volume_table.in_use {
            return Ok(());
        }
        let alloc = &self.allocs[id.index()];
        let (group, index, node, version) = (alloc.group, alloc.index, alloc.node, alloc.version);
        let spec = &self.scenario.jobs[group.job.index()].groups_of(version)[group.group_index()];
        if spec.host_volumes.is_empty() {
            return Ok(());
        }
        let mut uses = Vec::with_capacity(spec.host_volumes.len());
        for (request, entry) in self.host_entries(spec, index, node) {
            let Some(entry) = entry else {
                return Err(format!(
                    "host volume validation error: missing {}",
                    request.source_for(index)
                ));
            };
            if let Some(volume) = entry.dynamic {
                uses.push((volume, !request.read_only));
            }
        }
        let enforcing = enforce && self.behaviour.release.dynamic_host_volumes;
        for &(volume, writes) in &uses {
            let spec = &self.scenario.host_volumes[volume.index()];
            let plugin = &self.scenario.host_plugins[spec.plugin];
            let writers = self.host_volume_table.mounts[volume.index()].writers;
            let allowed = writers_allowed(spec);
            if writes && writers >= allowed && enforcing && plugin.enforces_access_mode {
                return Err(format!(
                    "plugin {} refused to mount host volume {}: it allows {allowed} writer(s) and {writers} already write",
                    plugin.name, spec.name
                ));
            }
        }
        let now = self.now();
        for &(volume, writes) in &uses {
            let spec = &self.scenario.host_volumes[volume.index()];
            let mounts = &mut self.host_volume_table.mounts[volume.index()];
            if !writes {
                mounts.readers += 1;
                continue;
            }
            mounts.writers += 1;
            if mounts.writers > writers_allowed(spec) {
                self.metrics.violations += 1;
                mounts.violating_since.get_or_insert(now);
                let detail = format!(
                    "host volume {} mounted by {} writers",
                    spec.name, mounts.writers
                );
                self.record(|t| {
                    TraceRecord::new(t, TraceKind::Violation)
                        .alloc(group, index)
                        .node(node)
                        .detail(detail)
                });
            }
        }
        self.host_volume_table.mounted.insert(id, uses);
        Ok(())
    }

    /// The allocation stopped: its host volumes are unmounted, and it no
    /// longer writes any in the scheduler's view.
    pub(crate) fn unmount_host_volumes(&mut self, id: AllocId) {
        if !self.host_volume_table.in_use {
            return;
        }
        let alloc = &self.allocs[id.index()];
        let (group, index, node, version) = (alloc.group, alloc.index, alloc.node, alloc.version);
        let spec = &self.scenario.jobs[group.job.index()].groups_of(version)[group.group_index()];
        if spec.host_volumes.is_empty() {
            return;
        }
        for (volume, _) in self.dynamic_host_uses(spec, index, node) {
            self.host_volume_table.writers[volume.index()].remove(&id);
        }
        let Some(uses) = self.host_volume_table.mounted.remove(&id) else {
            return;
        };
        let now = self.now();
        for (volume, writes) in uses {
            let spec = &self.scenario.host_volumes[volume.index()];
            let mounts = &mut self.host_volume_table.mounts[volume.index()];
            if !writes {
                mounts.readers -= 1;
                continue;
            }
            mounts.writers -= 1;
            if mounts.writers <= writers_allowed(spec)
                && let Some(since) = mounts.violating_since.take()
            {
                self.metrics.violation_time += now - since;
                let detail = format!("host volume {}: {}s in violation", spec.name, now - since);
                self.record(|t| TraceRecord::new(t, TraceKind::ViolationEnded).detail(detail));
            }
        }
    }

    /// A placement committed (or an initial allocation): the scheduler
    /// counts its writes from now on.
    pub(crate) fn note_host_writers(&mut self, id: AllocId) {
        if !self.host_volume_table.in_use {
            return;
        }
        let alloc = &self.allocs[id.index()];
        let (group, index, node, version) = (alloc.group, alloc.index, alloc.node, alloc.version);
        let spec = &self.scenario.jobs[group.job.index()].groups_of(version)[group.group_index()];
        for (volume, request) in self.dynamic_host_uses(spec, index, node) {
            if !request.read_only {
                self.host_volume_table.writers[volume.index()].insert(id);
            }
        }
    }
}

impl Simulation<'_> {
    /// Every mount belongs to a running allocation, each volume's counts
    /// add up to its mounts, and every scheduler-side writer is live.
    pub(crate) fn check_host_volume_invariants(&self) {
        let table = &self.host_volume_table;
        let mut counts = vec![(0u32, 0u32); table.mounts.len()];
        for (id, uses) in &table.mounted {
            let alloc = &self.allocs[id.index()];
            assert!(alloc.is_live(), "a host volume mount of a live alloc");
            for &(volume, writes) in uses {
                let (writers, readers) = &mut counts[volume.index()];
                *if writes { writers } else { readers } += 1;
            }
        }
        for (mounts, (writers, readers)) in table.mounts.iter().zip(counts) {
            assert_eq!(
                (mounts.writers, mounts.readers),
                (writers, readers),
                "host mounts"
            );
        }
        for set in &table.writers {
            assert!(
                set.iter().all(|id| self.allocs[id.index()].is_live()),
                "host volume writers are live"
            );
        }
    }
}
