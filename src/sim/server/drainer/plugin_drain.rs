//! What a drain does to the CSI node plugins that plugin jobs run, and to
//! the volumes they serve.
//!
//! Nomad's drainer stops system jobs (and, from 1.3, every job running a
//! CSI plugin) last: only once every other allocation on the node has a
//! terminal *client* status (nomad/drainer/draining_node.go `IsDone`), so
//! that those allocations can still unmount through the plugin. But the
//! client reports its allocation terminal when the tasks stop, before its
//! csi_hook's Postrun unmounts the volumes (client/allocrunner
//! alloc_runner.go `Run`: `runTasks`, then `postrun`), and at a drain's
//! deadline, or in a forced drain, everything is stopped at once. So the
//! guarantee is the order of the stops, not of the unmounts:
//! - where the drainer stopped the plugin allocation because the node was
//!   done (no deadline reached, not forced, the plugin's job drained last),
//!   no live allocation of a job drained before it still has a volume of
//!   that plugin published there
//!   (asserted by `check_drain_plugin_invariant`);
//! - a stopped allocation's unmount that begins after the plugin stopped
//!   fails (`csimanager` finds no plugin), and the claim stays published
//!   until the claim GC's retry finds the plugin back or the node down.
//!   Each such failure is a `node_detach_failed` trace row: the run counts
//!   the condition rather than hiding it. An unmount that began before the
//!   plugin stopped completes: plansim stops a task at once when its plan
//!   commits, where Nomad's client kills it only after it has pulled the
//!   update, so checking at the end would lose every race.

use crate::model::ids::{AllocId, NodeId, PluginId, VolumeId};
use crate::sim::server::drainer::drain_state::PluginMark;
use crate::sim::simulation::Simulation;
use crate::sim::trace::{TraceKind, TraceRecord};

impl Simulation<'_> {
    /// Remembers why the drainer marked those of `allocs` that run a node
    /// plugin (other allocations are not looked at again).
    pub(crate) fn note_plugin_marks(&mut self, allocs: &[AllocId], why: PluginMark) {
        for &id in allocs {
            if self.runs_node_plugin(id) {
                self.plugin_marks.0.entry(id).or_insert(why);
            }
        }
    }

    pub(crate) fn runs_node_plugin(&self, id: AllocId) -> bool {
        let group = self.allocs[id.index()].group;
        self.scenario.jobs[group.job.index()].groups[group.group_index()]
            .csi_plugins
            .iter()
            .any(|t| t.kind.runs_node())
    }

    /// Whether the node unpublish of `volume` for the stopped allocation
    /// `id` fails because the plugin jobs' allocations that provided its
    /// node plugin there have all stopped (a plugin the node declares
    /// itself never stops), or because it is restarting (`plugin_restart`).
    /// Records a `node_detach_failed` row when so.
    pub(crate) fn node_plugin_stopped(&mut self, id: AllocId, volume: VolumeId) -> bool {
        let node = self.allocs[id.index()].node;
        let plugin = self.scenario.volumes[volume.index()].plugin;
        let Some((state, cause)) = self.node_plugin_down(node, plugin) else {
            return false;
        };
        let detail = format!(
            "CSI plugin {} is {state} on client {}{cause}",
            self.scenario.plugins[plugin.index()].name,
            self.node_name(node)
        );
        let alloc = &self.allocs[id.index()];
        let (group, index) = (alloc.group, alloc.index);
        self.record(|t| {
            TraceRecord::new(t, TraceKind::NodeDetachFailed)
                .alloc(group, index)
                .id(id)
                .node(node)
                .volume(volume)
                .detail(detail)
        });
        true
    }

    /// Why `plugin`'s node plugin on `node` cannot unpublish: restarting,
    /// or not running, with what stopped it if a drain did.
    fn node_plugin_down(
        &self,
        node: NodeId,
        plugin: PluginId,
    ) -> Option<(&'static str, &'static str)> {
        if self.node_plugin_restarting(node, plugin) {
            return Some(("restarting", ""));
        }
        let slot = self.scenario.nodes[node.index()]
            .csi_plugins
            .iter()
            .position(|p| p.plugin == plugin && p.from_job)?;
        if self.nodes[node.index()].plugin_providers[slot] > 0 {
            return None;
        }
        let cause = match self.plugin_stopped_by(node, plugin.index()) {
            Some(PluginMark::Done) => " (stopped by the drain once the node was done)",
            Some(PluginMark::Deadline) => " (stopped at the drain's deadline)",
            Some(PluginMark::Forced) => " (stopped by a forced drain)",
            Some(PluginMark::Migrating) => " (migrated by the drain)",
            None => "",
        };
        Some(("not running", cause))
    }

    /// Why the drainer stopped the latest terminal allocation that ran
    /// `plugin`'s node plugin on `node`, if a drain did.
    pub(crate) fn plugin_stopped_by(&self, node: NodeId, plugin: usize) -> Option<PluginMark> {
        self.plugin_marks
            .0
            .iter()
            .rev()
            .find(|(id, _)| {
                let alloc = &self.allocs[id.index()];
                alloc.node == node
                    && !alloc.is_live()
                    && self.scenario.jobs[alloc.group.job.index()].groups[alloc.group.group_index()]
                        .csi_plugins
                        .iter()
                        .any(|t| t.kind.runs_node() && t.plugin.index() == plugin)
            })
            .map(|(_, &why)| why)
    }

    /// Where Nomad guarantees it: a node plugin that a drain stopped once
    /// the node was done leaves no live allocation with a volume published
    /// through it (while no other allocation provides it there).
    pub(crate) fn check_drain_plugin_invariant(&self) {
        if self.plugin_marks.0.is_empty() {
            return;
        }
        for (v, volume) in self.volumes.iter().enumerate() {
            let plugin = self.scenario.volumes[v].plugin;
            for (alloc, claim) in &volume.ledger {
                let holder = &self.allocs[alloc.index()];
                // Allocations drained last themselves (system jobs) are
                // stopped with the plugin, in no guaranteed order.
                if !claim.published || !holder.is_live() || self.drained_last(holder.group.job) {
                    continue;
                }
                let node = claim.node;
                let slot = self.scenario.nodes[node.index()]
                    .csi_plugins
                    .iter()
                    .position(|p| p.plugin == plugin && p.from_job);
                let Some(slot) = slot else { continue };
                if self.nodes[node.index()].plugin_providers[slot] > 0 {
                    continue;
                }
                assert_ne!(
                    self.plugin_stopped_by(node, plugin.index()),
                    Some(PluginMark::Done),
                    "volume {} published on {} by a live allocation after the drain stopped its node plugin",
                    self.scenario.volumes[v].name,
                    self.scenario.nodes[node.index()].name
                );
            }
        }
    }
}
