//! CSI plugins as Nomad runs them: node plugins and controllers provided by
//! plugin jobs' allocations, whose health follows those allocations
//! (client/pluginmanager/csimanager: the plugin registers and fingerprints
//! healthy once its task runs; its last fingerprint, when the task stops,
//! marks it unhealthy), and the controller's part in a claim's life
//! (nomad/csi_endpoint.go `controllerPublishVolume` when a claim is made,
//! `controllerUnpublishVolume` when it is released, which the volume
//! watcher retries until a controller can do it).

use crate::model::ids::{AllocId, NodeId, PluginId, VolumeId};
use crate::sim::simulation::{Event, Simulation};
use crate::sim::state::store::{AllocState, ClaimState};
use crate::sim::trace::{CONTROLLER_PUBLISH_ERROR, TraceKind, TraceRecord};

impl Simulation<'_> {
    /// Whether the plugin has a healthy controller (Nomad's
    /// `ControllersHealthy > 0`): its health flag, and when jobs run the
    /// controller, one of their allocations running.
    pub(crate) fn controller_available(&self, plugin: PluginId) -> bool {
        let state = self.controllers[plugin.index()];
        state.healthy
            && (!self.scenario.plugins[plugin.index()].controller_from_jobs || state.running > 0)
    }

    /// Whether a volume of `plugin` needs a controller that is not there:
    /// Nomad's `CSIVolume.Schedulable` is false then
    /// (state_store.go `CSIVolumeDenormalizePlugins`), at both releases.
    pub(crate) fn controller_missing(&self, plugin: PluginId) -> bool {
        self.scenario.plugins[plugin.index()].controller_required
            && !self.controller_available(plugin)
    }

    /// An allocation became healthy (health.rs: running for its group's
    /// `healthy_after`): the plugins its group runs register, healthy (node
    /// plugins on its node, controllers for the whole cluster).
    pub(crate) fn plugin_alloc_healthy(&mut self, id: AllocId) {
        self.plugin_alloc_changed(id, true);
    }

    /// A healthy allocation stopped, failed, completed or was lost (called
    /// after its terminal state is recorded): its plugins turn unhealthy
    /// where no other allocation provides them.
    pub(crate) fn plugin_alloc_unhealthy(&mut self, id: AllocId) {
        self.plugin_alloc_changed(id, false);
    }

    pub(crate) fn plugin_alloc_changed(&mut self, id: AllocId, running: bool) {
        let alloc = &self.allocs[id.index()];
        let (group, node) = (alloc.group, alloc.node);
        let tasks = &self.scenario.jobs[group.job.index()].groups[group.group_index()].csi_plugins;
        if tasks.is_empty() {
            return;
        }
        for task in tasks.clone() {
            if task.kind.runs_node() {
                self.node_plugin_provider(node, task.plugin, running);
            }
            if task.kind.runs_controller() {
                let before = self.controller_available(task.plugin);
                let state = &mut self.controllers[task.plugin.index()];
                if running {
                    state.running += 1;
                } else {
                    state.running -= 1;
                }
                self.controller_changed(task.plugin, before, Some(node));
            }
        }
    }

    /// One more (or one fewer) running allocation provides `plugin` on
    /// `node`. A slot the node declares itself is not the job's to change.
    pub(crate) fn node_plugin_provider(&mut self, node: NodeId, plugin: PluginId, running: bool) {
        let spec = &self.scenario.nodes[node.index()];
        let Some(slot) = spec
            .csi_plugins
            .iter()
            .position(|p| p.plugin == plugin && p.from_job)
        else {
            return;
        };
        let state = &mut self.nodes[node.index()];
        if running {
            state.plugin_providers[slot] += 1;
        } else {
            state.plugin_providers[slot] -= 1;
        }
        let healthy = state.plugin_providers[slot] > 0;
        if healthy == state.plugin_healthy[slot] && state.plugin_present[slot] {
            return;
        }
        if self.plugin_restarts.contains(&(node, slot)) {
            // The restart's end reads the providers (plugin_restart.rs).
            return;
        }
        state.plugin_present[slot] = true;
        state.plugin_healthy[slot] = healthy;
        self.announce_plugin_health(node, plugin, healthy);
    }

    /// A node plugin's health as its trace rows say it: "ebs0 healthy".
    pub(crate) fn plugin_health_text(&self, plugin: PluginId, healthy: bool) -> String {
        format!(
            "{} {}",
            self.scenario.plugins[plugin.index()].name,
            if healthy { "healthy" } else { "unhealthy" }
        )
    }

    /// What follows a node plugin's health change, however it came (the
    /// `plugin_health` event or a plugin allocation): a trace row, and a
    /// plugin turning healthy unblocks evaluations (a node update).
    pub(crate) fn announce_plugin_health(&mut self, node: NodeId, plugin: PluginId, healthy: bool) {
        let detail = self.plugin_health_text(plugin, healthy);
        self.record(|t| {
            TraceRecord::new(t, TraceKind::PluginHealth)
                .node(node)
                .detail(detail)
        });
        if healthy {
            self.unblock_class(node);
        }
    }

    /// The `plugin_controller_health` event.
    pub(crate) fn set_controller_health(&mut self, plugin: PluginId, healthy: bool) {
        let before = self.controller_available(plugin);
        self.controllers[plugin.index()].healthy = healthy;
        let detail = format!(
            "{} controller {}",
            self.scenario.plugins[plugin.index()].name,
            if healthy { "healthy" } else { "unhealthy" }
        );
        self.record(|t| TraceRecord::new(t, TraceKind::PluginHealth).detail(detail));
        self.controller_changed(plugin, before, None);
    }

    /// The controller's availability may have changed: once it is back,
    /// the volume watcher's waiting ControllerUnpublish calls go through,
    /// and blocked jobs are evaluated again (their volumes are schedulable
    /// again). Nomad learns of a controller from its node's fingerprint,
    /// which unblocks that node's class; a health event names no node, so
    /// it unblocks every blocked job.
    pub(crate) fn controller_changed(
        &mut self,
        plugin: PluginId,
        before: bool,
        node: Option<NodeId>,
    ) {
        if before || !self.controller_available(plugin) {
            return;
        }
        let waiting: Vec<(VolumeId, AllocId)> = self
            .awaiting_controller
            .iter()
            .copied()
            .filter(|(volume, _)| self.scenario.volumes[volume.index()].plugin == plugin)
            .collect();
        let latency = self.scenario.cluster.controller_detach_latency;
        for (volume, id) in waiting {
            self.awaiting_controller.remove(&(volume, id));
            self.after(latency, Event::ControllerDetach(id, volume));
        }
        match node {
            Some(node) => self.unblock_class(node),
            None => self.unblock(),
        }
    }

    /// The server's ControllerPublish for a new claim, which Nomad makes
    /// after writing the claim: `Err` with the claim RPC's error when the
    /// plugin needs a controller and none is healthy. Neither release's
    /// client retries it (it is not one of the errors
    /// `isRetryableClaimRPCError` names, and 1.2.6 never retries).
    pub(crate) fn controller_publish(&self, volume: VolumeId) -> Result<(), String> {
        let plugin = self.scenario.volumes[volume.index()].plugin;
        if !self.controller_missing(plugin) {
            return Ok(());
        }
        let name = &self.scenario.plugins[plugin.index()].name;
        Err(
            if self.behaviour.release.controller_publish_skips_unhealthy {
                format!(
                    "{CONTROLLER_PUBLISH_ERROR}failed to find clients running controller plugin \"{name}\": no healthy controller"
                )
            } else {
                // 1.2.6 picks any controller on a ready node, healthy or not;
                // plansim has it fail as if none were found.
                format!(
                    "{CONTROLLER_PUBLISH_ERROR}failed to find clients running controller plugin \"{name}\""
                )
            },
        )
    }

    /// The ControllerUnpublish step of a release: `false` (and the claim
    /// waits) while the plugin needs a controller and none is healthy; the
    /// volume watcher retries it once one is.
    pub(crate) fn controller_can_detach(&mut self, id: AllocId, volume: VolumeId) -> bool {
        let plugin = self.scenario.volumes[volume.index()].plugin;
        if !self.controller_missing(plugin) {
            return true;
        }
        if self.awaiting_controller.insert((volume, id)) {
            let alloc = &self.allocs[id.index()];
            let (group, index, node) = (alloc.group, alloc.index, alloc.node);
            let detail = format!(
                "no healthy controller of plugin {}: the claim waits for one",
                self.scenario.plugins[plugin.index()].name
            );
            self.record(|t| {
                TraceRecord::new(t, TraceKind::ControllerDetachWaiting)
                    .alloc(group, index)
                    .id(id)
                    .node(node)
                    .volume(volume)
                    .detail(detail)
            });
        }
        false
    }

    /// The node plugin the client mounts through: present and healthy on
    /// the allocation's node, else the mount fails with the client's error.
    pub(crate) fn node_plugin_problem(&self, node: NodeId, volume: VolumeId) -> Option<String> {
        let plugin = self.scenario.volumes[volume.index()].plugin;
        let name = &self.scenario.plugins[plugin.index()].name;
        let slot = self.scenario.nodes[node.index()].plugin_slot(plugin);
        let state = &self.nodes[node.index()];
        match slot {
            Some(slot) if state.plugin_present[slot] && state.plugin_healthy[slot] => None,
            Some(slot) if state.plugin_present[slot] => Some(format!(
                "CSI plugin {name} is unhealthy on client {}",
                self.node_name(node)
            )),
            _ => Some(format!("plugin {name} for type csi-node not found")),
        }
    }

    /// Whole-state checks of plugins (run with the other invariants): a
    /// published volume's node has its plugin registered; each job slot's
    /// provider count is the number of healthy allocations providing it;
    /// a claim waiting for the controller belongs to a finished allocation
    /// of a plugin that requires one, and is not yet controller-detached.
    pub(crate) fn check_plugin_invariants(&self) {
        for (v, volume) in self.volumes.iter().enumerate() {
            let plugin = self.scenario.volumes[v].plugin;
            for claim in volume.ledger.values().filter(|c| c.published) {
                let spec = &self.scenario.nodes[claim.node.index()];
                let slot = spec.plugin_slot(plugin);
                // A restarting plugin may be deregistered: its mounts stay.
                assert!(
                    slot.is_some_and(|s| self.nodes[claim.node.index()].plugin_present[s]
                        || self.plugin_restarts.contains(&(claim.node, s))),
                    "volume {} published on {} without its plugin registered there",
                    self.scenario.volumes[v].name,
                    spec.name
                );
            }
        }
        let mut providers: Vec<Vec<u32>> = self
            .nodes
            .iter()
            .map(|n| vec![0; n.plugin_providers.len()])
            .collect();
        let mut controllers = vec![0u32; self.controllers.len()];
        for alloc in self
            .allocs
            .iter()
            .filter(|a| a.state == AllocState::Running && a.healthy_at.is_some())
        {
            let group =
                &self.scenario.jobs[alloc.group.job.index()].groups[alloc.group.group_index()];
            for task in &group.csi_plugins {
                let slots = &self.scenario.nodes[alloc.node.index()].csi_plugins;
                if let Some(slot) = slots
                    .iter()
                    .position(|p| p.plugin == task.plugin && p.from_job)
                    .filter(|_| task.kind.runs_node())
                {
                    providers[alloc.node.index()][slot] += 1;
                }
                if task.kind.runs_controller() {
                    controllers[task.plugin.index()] += 1;
                }
            }
        }
        for (n, node) in self.nodes.iter().enumerate() {
            assert_eq!(
                node.plugin_providers, providers[n],
                "node #{n} plugin providers"
            );
        }
        for (p, state) in self.controllers.iter().enumerate() {
            assert_eq!(
                state.running, controllers[p],
                "plugin #{p} running controllers"
            );
        }
        for &(node, slot) in &self.plugin_restarts {
            // Nothing mounts through a restarting plugin: neither a plugin
            // job's allocations nor a health event change it until it is back.
            let state = &self.nodes[node.index()];
            assert!(
                !(state.plugin_present[slot] && state.plugin_healthy[slot]),
                "node #{} plugin slot {slot} usable while restarting",
                node.index()
            );
        }
        for &(volume, alloc) in &self.awaiting_controller {
            let claim = &self.volumes[volume.index()].ledger[&alloc];
            let plugin = self.scenario.volumes[volume.index()].plugin;
            assert!(self.scenario.plugins[plugin.index()].controller_required);
            assert!(self.allocs[alloc.index()].state.is_terminal());
            assert_ne!(claim.state, ClaimState::ControllerDetached);
        }
    }
}
