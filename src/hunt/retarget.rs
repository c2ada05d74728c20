//! What else must change when the shrinker removes an entity: every event
//! and initial allocation that names a later entity of that kind moves
//! down one index, and every one that names the removed entity goes with
//! it. The matches below list every event kind without a wildcard, so a
//! new kind cannot be added without deciding what a removal does to it
//! (a forgotten kind kept a dangling index, and the simulation indexed
//! past the end: `hunt --from` exited 101).
//!
//! After any change, [`refresh_derived`] recomputes what the loader derives
//! from the events and jobs (the versions `update_job` events make, the
//! plugin slots plugin jobs give), so a shrunk or mutated scenario is the
//! one its written file would load as.

use crate::model::ids::{GroupRef, JobId, NodeId, PluginId, VolumeId};
use crate::model::scenario::*;
use crate::scenario::load::{InitialChecker, ScenarioParts};
use crate::scenario::plugin_jobs;

/// One entity the shrinker removed; the entities after it in their vector
/// move down one index.
#[derive(Clone, Copy, Debug)]
pub(super) enum Removed {
    Job(JobId),
    /// A task group: the groups after it in the same job move down one.
    Group(GroupRef),
    Node(NodeId),
    Volume(VolumeId),
    Plugin(PluginId),
}

/// Moves `id` down when it follows `gone`; false when it is `gone`.
fn keep<T: Copy + Ord>(id: &mut T, gone: T, down: impl FnOnce(&mut T)) -> bool {
    if *id == gone {
        return false;
    }
    if *id > gone {
        down(id);
    }
    true
}

impl Removed {
    fn job(self, job: &mut JobId) -> bool {
        match self {
            Removed::Job(gone) => keep(job, gone, |id| id.0 -= 1),
            _ => true,
        }
    }

    fn node(self, node: &mut NodeId) -> bool {
        match self {
            Removed::Node(gone) => keep(node, gone, |id| id.0 -= 1),
            _ => true,
        }
    }

    fn volume(self, volume: &mut VolumeId) -> bool {
        match self {
            Removed::Volume(gone) => keep(volume, gone, |id| id.0 -= 1),
            _ => true,
        }
    }

    fn plugin(self, plugin: &mut PluginId) -> bool {
        match self {
            Removed::Plugin(gone) => keep(plugin, gone, |id| id.0 -= 1),
            _ => true,
        }
    }

    /// Group `group` of `job` (a position in that job's groups).
    fn group_of(self, job: JobId, group: &mut usize) -> bool {
        match self {
            Removed::Group(gone) if gone.job == job => keep(group, gone.group_index(), |g| *g -= 1),
            _ => true,
        }
    }

    fn group(self, group: &mut GroupRef) -> bool {
        let mut index = group.group_index();
        let kept = self.group_of(group.job, &mut index) && self.job(&mut group.job);
        *group = GroupRef::new(group.job, index);
        kept
    }

    /// Whether `action` still applies after the removal; its indices are
    /// moved down where they must be. (When false, what it was changed to
    /// does not matter: it is dropped.)
    fn keeps(self, action: &mut TimelineAction) -> bool {
        match action {
            TimelineAction::NodeDown(node)
            | TimelineAction::NodeUp(node)
            | TimelineAction::NodeDrain(node)
            | TimelineAction::NodeDrainSpec(node, _)
            | TimelineAction::NodeDisconnect(node)
            | TimelineAction::NodeReconnect(node) => self.node(node),
            TimelineAction::Scale { job, group, .. } => self.group_of(*job, group) && self.job(job),
            TimelineAction::StopJob(job) | TimelineAction::PromoteDeployment(job) => self.job(job),
            TimelineAction::UpdateJob { job, overrides, .. } => {
                let owner = *job;
                overrides.retain_mut(|o| self.group_of(owner, &mut o.group));
                self.job(job)
            }
            TimelineAction::AllocFail { group, .. } | TimelineAction::NodeDownOf { group, .. } => {
                self.group(group)
            }
            TimelineAction::PluginHealth { plugin, node, .. }
            | TimelineAction::PluginRestart { plugin, node, .. } => {
                self.plugin(plugin) && self.node(node)
            }
            TimelineAction::PluginControllerHealth { plugin, .. } => self.plugin(plugin),
            TimelineAction::VolumeDetach { volume, node } => self.volume(volume) && self.node(node),
            TimelineAction::PublishFailure { volume, .. } => self.volume(volume),
            // The child is derived again from the parent (normalized).
            TimelineAction::Dispatch { job, .. } => self.job(job),
        }
    }

    /// Whether `initial` still exists after the removal (its group and
    /// node do), with its indices moved down.
    fn keeps_initial(self, initial: &mut InitialAllocation) -> bool {
        self.group(&mut initial.group) && self.node(&mut initial.node)
    }
}

/// Drops what names `removed` from the events and initial allocations and
/// moves the rest's indices down. The entity itself is already gone.
pub(super) fn retarget(s: &mut Scenario, removed: Removed) {
    s.events.retain_mut(|e| removed.keeps(&mut e.action));
    s.initial_allocations
        .retain_mut(|a| removed.keeps_initial(a));
    // A dynamic host volume lives on its node: it goes with it.
    s.host_volumes.retain_mut(|v| removed.node(&mut v.node));
}

/// Drops the initial allocations the loader would now refuse (a lowered
/// count, a removed per_alloc volume, smaller nodes or larger groups), in
/// list order as the loader checks them.
fn admit_initial_allocations(s: &mut Scenario) {
    let mut checker = InitialChecker::default();
    let parts = ScenarioParts {
        jobs: &s.jobs,
        nodes: &s.nodes,
        volume_by_name: &s.volume_by_name,
        volumes: &s.volumes,
    };
    s.initial_allocations
        .retain(|a| checker.admit(&parts, a).is_ok());
}

/// Recomputes what the loader derives after a change to jobs, nodes,
/// plugins or events: the plugin slots and controllers plugin jobs give
/// (scenario/plugin_jobs.rs) and the versions `update_job` events make
/// (scenario/update.rs `assign_versions`, which numbers them in time
/// order: moving or removing an update renumbers the ones after it), and
/// the driver names still in use, in the order the loader meets them; and
/// keeps the initial allocations the loader would still accept.
pub(super) fn refresh_derived(s: &mut Scenario) {
    for node in &mut s.nodes {
        node.csi_plugins.retain(|p| !p.from_job);
    }
    s.place_host_volumes();
    for plugin in &mut s.plugins {
        plugin.controller_from_jobs = false;
    }
    plugin_jobs::place_job_plugins(&mut s.nodes, &s.jobs, &s.driver_names);
    plugin_jobs::note_job_controllers(&mut s.plugins, &s.jobs);
    // A plugin_health or plugin_restart event needs the plugin on its node.
    let nodes = &s.nodes;
    s.events.retain(|e| match e.action {
        TimelineAction::PluginHealth { plugin, node, .. }
        | TimelineAction::PluginRestart { plugin, node, .. } => nodes[node.index()]
            .csi_plugins
            .iter()
            .any(|p| p.plugin == plugin),
        _ => true,
    });
    renumber_drivers(s);
    for job in &mut s.jobs {
        job.versions.clear();
        job.bare_versions.clear();
    }
    for event in &mut s.events {
        if let TimelineAction::UpdateJob { version, .. } = &mut event.action {
            *version = None;
        }
    }
    crate::scenario::update::assign_versions(&mut s.jobs, &mut s.events);
    admit_initial_allocations(s);
}

/// Keeps only the driver names some node or group still uses, numbered as
/// the loader numbers them: by first appearance, nodes before jobs, each
/// set in bit order (the order the writer lists a set's names in).
fn renumber_drivers(s: &mut Scenario) {
    let sets = || {
        let nodes = s.nodes.iter().map(|n| n.drivers);
        nodes.chain(
            s.jobs
                .iter()
                .flat_map(|j| j.groups.iter().map(|g| g.drivers)),
        )
    };
    let mut order: Vec<usize> = Vec::new();
    for set in sets() {
        for bit in 0..DriverSet::CAPACITY {
            if set.0 & (1 << bit) != 0 && !order.contains(&bit) {
                order.push(bit);
            }
        }
    }
    let remap = |set: &mut DriverSet| {
        let mut new = DriverSet::default();
        for (index, &bit) in order.iter().enumerate() {
            if set.0 & (1 << bit) != 0 {
                new = new.with(index);
            }
        }
        *set = new;
    };
    s.driver_names = order
        .iter()
        .map(|&bit| s.driver_names[bit].clone())
        .collect();
    for node in &mut s.nodes {
        remap(&mut node.drivers);
    }
    for group in s.jobs.iter_mut().flat_map(|j| j.groups.iter_mut()) {
        remap(&mut group.drivers);
    }
}

/// Whether some job launches children (a periodic or parameterized
/// parent) or is one (its parent perhaps just removed): the loader stamps them out from the parent, the horizon, the
/// start time and the dispatch events, and the writer leaves them out.
pub(super) fn has_launches(s: &Scenario) -> bool {
    s.jobs
        .iter()
        .any(|j| j.launch.is_parent() || j.launch.parent().is_some())
}

/// `s` as its written file loads: for a scenario with periodic or
/// parameterized parents, the children a change to a parent, the horizon
/// or a dispatch implies are the loader's to stamp out (scenario/load/
/// periodic.rs), so the candidate is written and read back; `None` when
/// the loader refuses it (a dispatch after its parent's stop, say).
pub(super) fn normalized(s: Scenario) -> Option<Scenario> {
    if !has_launches(&s) {
        return Some(s);
    }
    let yaml = crate::scenario::write::model::to_yaml(&s, "");
    crate::scenario::load_str(&yaml, "candidate.yaml", &s.name).ok()
}
