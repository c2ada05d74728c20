//! A node plugin's task restarting (`plugin_restart`): the allocation that
//! runs it stays, its task is killed and started again, and for `down_for`
//! the client has no working node plugin.
//!
//! What the client does then (client/allocrunner/taskrunner/
//! plugin_supervisor_hook.go): from 1.10.0 (#25307) the supervisor loop runs
//! under the task's own context, so the kill ends it and its deferred
//! `deregisterPluginFn` takes the plugin out of the client's catalog; the
//! node's next fingerprint lacks it. Before, the loop runs until the Stop
//! hook only and outlives the restart: the plugin stays registered and the
//! csimanager's fingerprint reports it unhealthy. Either way, volumes
//! already mounted stay mounted (the plugin's mount directory is
//! bidirectionally propagated and no unpublish is sent), while a mount or
//! unmount through the plugin fails until it is back.

use crate::model::ids::{NodeId, PluginId};
use crate::model::time::Millis;
use crate::sim::simulation::{Event, Simulation};
use crate::sim::trace::{TraceKind, TraceRecord};

impl Simulation<'_> {
    /// The `plugin_restart` event.
    pub(crate) fn plugin_restart(&mut self, plugin: PluginId, node: NodeId, down_for: Millis) {
        let slot = self.scenario.nodes[node.index()]
            .plugin_slot(plugin)
            .expect("validated: the node runs the plugin");
        let name = self.scenario.plugins[plugin.index()].name.clone();
        let detail = if !self.nodes[node.index()].plugin_present[slot] {
            // A plugin job's slot no allocation has run yet: no task to restart.
            format!(
                "{name} is not running on client {}: nothing restarts",
                self.node_name(node)
            )
        } else if !self.plugin_restarts.insert((node, slot)) {
            // The one restart under way ends when it was due to.
            format!("{name} is already restarting")
        } else {
            let state = &mut self.nodes[node.index()];
            let how = if self.behaviour.release.plugin_restart_deregisters {
                state.plugin_present[slot] = false;
                "deregistered until it probes healthy"
            } else {
                state.plugin_healthy[slot] = false;
                "registered, unhealthy"
            };
            self.after(down_for, Event::PluginRestarted(node, slot));
            format!("{name} restarting for {down_for}s: {how}; mounted volumes stay mounted")
        };
        self.record(|t| {
            TraceRecord::new(t, TraceKind::PluginRestart)
                .node(node)
                .detail(detail)
        });
    }

    /// The restarted plugin probes healthy and registers again: the node's
    /// fingerprint carries it healthy, which unblocks evaluations (a node
    /// update). A plugin job's slot whose allocations all stopped meanwhile
    /// stays as they left it.
    pub(crate) fn plugin_restarted(&mut self, node: NodeId, slot: usize) {
        self.plugin_restarts.remove(&(node, slot));
        let spec = &self.scenario.nodes[node.index()].csi_plugins[slot];
        let plugin = spec.plugin;
        let state = &mut self.nodes[node.index()];
        let running = !spec.from_job || state.plugin_providers[slot] > 0;
        let name = &self.scenario.plugins[plugin.index()].name;
        // Registered again either way: healthy, or as the last fingerprint
        // of a plugin job whose allocations stopped meanwhile leaves it.
        state.plugin_present[slot] = true;
        state.plugin_healthy[slot] = running;
        let detail = if running {
            format!("{name} restarted")
        } else {
            format!("{name} did not come back: its allocations stopped")
        };
        self.record(|t| {
            TraceRecord::new(t, TraceKind::PluginRestart)
                .node(node)
                .detail(detail)
        });
        if running {
            self.announce_plugin_health(node, plugin, true);
        }
    }

    /// Whether the node plugin an unmount of `plugin` goes through on
    /// `node` is restarting: the NodeUnpublish fails.
    pub(crate) fn node_plugin_restarting(&self, node: NodeId, plugin: PluginId) -> bool {
        !self.plugin_restarts.is_empty()
            && self.scenario.nodes[node.index()]
                .plugin_slot(plugin)
                .is_some_and(|slot| self.plugin_restarts.contains(&(node, slot)))
    }
}
