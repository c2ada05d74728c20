//! Delta debugging on the resolved model: try one simplification at a time
//! (drop a job, node, event, volume, plugin, group or volume request; lower
//! a count; shorten the horizon and the latencies; reset a field, a GC
//! setting, a request's modes or a volume's capabilities to the default or
//! the first; give everything short names), keep it when the property still
//! fails the same way, and repeat until a whole pass changes nothing.
//!
//! Deterministic: the simplifications are tried in a fixed order and the
//! first that keeps the failure wins. Every one makes the scenario strictly
//! smaller (fewer entities, lower numbers, or a default where there was
//! none), so the fixpoint exists; [`MAX_SHRINK_CHECKS`] bounds the work
//! anyway. Memory stays at a handful of copies of a small scenario.

use super::retarget::{Removed, normalized, refresh_derived, retarget};
use crate::model::ids::{GroupRef, JobId, NodeId, PluginId, VolumeId};
use crate::model::scenario::*;
use crate::model::time::Millis;

/// Most candidate scenarios one shrink checks (MAX_SHRINK_CHECKS). Each
/// check is at most six short simulations; a generated scenario reaches its
/// fixpoint in a few hundred.
pub const MAX_SHRINK_CHECKS: u32 = 5_000;

/// The outcome of a shrink.
pub struct Shrunk {
    pub scenario: Scenario,
    /// Candidates checked.
    pub checks: u32,
    /// False when MAX_SHRINK_CHECKS stopped it before the fixpoint.
    pub fixpoint: bool,
}

/// Shrinks `scenario` while `fails` holds.
pub fn shrink(scenario: Scenario, mut fails: impl FnMut(&Scenario) -> bool) -> Shrunk {
    let mut current = scenario;
    let mut checks = 0u32;
    loop {
        let mut changed = false;
        let mut position = 0;
        loop {
            let ops = operations(&current);
            let Some(op) = ops.get(position) else {
                break;
            };
            let Some(candidate) = apply(&current, op) else {
                position += 1;
                continue;
            };
            if checks >= MAX_SHRINK_CHECKS {
                return Shrunk {
                    scenario: current,
                    checks,
                    fixpoint: false,
                };
            }
            checks += 1;
            if fails(&candidate) {
                current = candidate;
                changed = true;
                // The same position now names the next operation.
            } else {
                position += 1;
            }
        }
        if !changed {
            return Shrunk {
                scenario: current,
                checks,
                fixpoint: true,
            };
        }
    }
}

/// One simplification.
#[derive(Clone, Debug)]
enum Op {
    RemoveJob(usize),
    RemoveNode(usize),
    RemoveEvent(usize),
    RemoveVolume(usize),
    RemovePlugin(usize),
    RemoveGroup(usize, usize),
    RemoveRequest(usize, usize, usize),
    RemoveNodePlugin(usize, usize),
    LowerCount(usize, usize),
    LowerScale(usize),
    OneWorker,
    HalveHorizon,
    EarlierEvent(usize),
    SubmitAtZero(usize),
    Latency(usize),
    PublishLatency(usize),
    DefaultReschedule(usize, usize),
    NoRunFor(usize, usize),
    DefaultNodePlugin(usize, usize),
    DefaultNodeResources(usize),
    DefaultGroupResources(usize, usize),
    DefaultGc(usize),
    NoRequestModes(usize, usize, usize),
    FirstCapability(usize),
    ShortNames,
}

fn operations(s: &Scenario) -> Vec<Op> {
    let mut ops = operations_of_every_job(s);
    // A periodic or dispatched child is the loader's copy of its parent:
    // what is simplified is the parent.
    let child = |j: usize| s.jobs[j].launch.parent().is_some();
    ops.retain(|op| match *op {
        Op::RemoveJob(j)
        | Op::RemoveGroup(j, _)
        | Op::RemoveRequest(j, _, _)
        | Op::LowerCount(j, _)
        | Op::SubmitAtZero(j)
        | Op::DefaultReschedule(j, _)
        | Op::NoRunFor(j, _)
        | Op::DefaultGroupResources(j, _)
        | Op::NoRequestModes(j, _, _) => !child(j),
        _ => true,
    });
    ops
}

fn operations_of_every_job(s: &Scenario) -> Vec<Op> {
    let mut ops = Vec::new();
    ops.extend((0..s.jobs.len()).map(Op::RemoveJob));
    ops.extend((0..s.nodes.len()).map(Op::RemoveNode));
    ops.extend((0..s.events.len()).map(Op::RemoveEvent));
    ops.extend((0..s.volumes.len()).map(Op::RemoveVolume));
    ops.extend((0..s.plugins.len()).map(Op::RemovePlugin));
    for (j, job) in s.jobs.iter().enumerate() {
        if job.groups.len() > 1 {
            ops.extend((0..job.groups.len()).map(|g| Op::RemoveGroup(j, g)));
        }
        for (g, group) in job.groups.iter().enumerate() {
            ops.extend((0..group.volumes.len()).map(|r| Op::RemoveRequest(j, g, r)));
        }
    }
    // A plugin job's slots follow its job (`sync_job_plugins`), not these.
    let declared = |node: &NodeSpec| -> Vec<usize> {
        (0..node.csi_plugins.len())
            .filter(|&k| !node.csi_plugins[k].from_job)
            .collect()
    };
    for (n, node) in s.nodes.iter().enumerate() {
        ops.extend(
            declared(node)
                .into_iter()
                .map(|k| Op::RemoveNodePlugin(n, k)),
        );
    }
    for (j, job) in s.jobs.iter().enumerate() {
        ops.extend((0..job.groups.len()).map(|g| Op::LowerCount(j, g)));
    }
    ops.extend((0..s.events.len()).map(Op::LowerScale));
    ops.push(Op::OneWorker);
    ops.push(Op::HalveHorizon);
    ops.extend((0..s.events.len()).map(Op::EarlierEvent));
    ops.extend((0..s.jobs.len()).map(Op::SubmitAtZero));
    ops.extend((0..LATENCIES).map(Op::Latency));
    ops.extend((0..s.plugins.len()).map(Op::PublishLatency));
    for (j, job) in s.jobs.iter().enumerate() {
        for g in 0..job.groups.len() {
            ops.push(Op::DefaultReschedule(j, g));
            ops.push(Op::NoRunFor(j, g));
            ops.push(Op::DefaultGroupResources(j, g));
        }
    }
    for (n, node) in s.nodes.iter().enumerate() {
        ops.extend(
            declared(node)
                .into_iter()
                .map(|k| Op::DefaultNodePlugin(n, k)),
        );
        ops.push(Op::DefaultNodeResources(n));
    }
    ops.extend((0..GC_SETTINGS).map(Op::DefaultGc));
    for (j, job) in s.jobs.iter().enumerate() {
        for (g, group) in job.groups.iter().enumerate() {
            ops.extend((0..group.volumes.len()).map(|r| Op::NoRequestModes(j, g, r)));
        }
    }
    ops.extend((0..s.volumes.len()).map(Op::FirstCapability));
    ops.push(Op::ShortNames);
    ops
}

/// The cluster timings a shrink shortens, in `Op::Latency` order.
const LATENCIES: usize = 5;

pub(super) fn latency(cluster: &mut ClusterConfig, which: usize) -> &mut Millis {
    match which {
        0 => &mut cluster.scheduler_latency,
        1 => &mut cluster.pull_delay,
        2 => &mut cluster.node_detach_latency,
        3 => &mut cluster.controller_detach_latency,
        _ => &mut cluster.claim_free_latency,
    }
}

/// Nomad's GC settings a shrink resets to their defaults (not shortened:
/// an interval must stay positive, and the defaults are what a reader
/// knows), in `Op::DefaultGc` order.
const GC_SETTINGS: usize = 4;

fn gc_setting(cluster: &mut ClusterConfig, which: usize) -> &mut Millis {
    match which {
        0 => &mut cluster.csi_volume_claim_gc_interval,
        1 => &mut cluster.csi_volume_claim_gc_threshold,
        2 => &mut cluster.node_gc_threshold,
        _ => &mut cluster.node_gc_interval,
    }
}

/// A shorter duration: zero, or half (in whole 100 ms steps, so the numbers
/// stay readable); `None` when already zero.
fn shorter(value: Millis, first_try_zero: bool) -> Option<Millis> {
    if value == Millis::ZERO {
        None
    } else if first_try_zero {
        Some(Millis::ZERO)
    } else {
        Some(Millis(value.0 / 2 / 100 * 100))
    }
}

/// The scenario with `op` applied; `None` when it does not apply (nothing
/// to simplify, or the result would not be a valid scenario).
///
/// Over 120 lines on purpose: one short arm per kind of simplification,
/// kept in one `match` so the arms read as the list of what the shrinker
/// may do, in `Op`'s order; the longer arms already call helpers.
fn apply(s: &Scenario, op: &Op) -> Option<Scenario> {
    let mut t = s.clone();
    match *op {
        Op::RemoveJob(j) => remove_job(&mut t, j),
        Op::RemoveNode(n) => remove_node(&mut t, n),
        Op::RemoveEvent(e) => {
            t.events.remove(e);
        }
        Op::RemoveVolume(v) => remove_volume(&mut t, v),
        Op::RemovePlugin(p) => remove_plugin(&mut t, p),
        Op::RemoveGroup(j, g) => remove_group(&mut t, j, g),
        Op::RemoveRequest(j, g, r) => {
            t.jobs[j].groups[g].volumes.remove(r);
        }
        Op::RemoveNodePlugin(n, k) => remove_node_plugin(&mut t, n, k),
        Op::LowerCount(j, g) => {
            let count = &mut t.jobs[j].groups[g].count;
            *count = count.checked_sub(1)?;
        }
        Op::LowerScale(e) => match &mut t.events[e].action {
            TimelineAction::Scale { count, .. } => *count = count.checked_sub(1)?,
            _ => return None,
        },
        Op::OneWorker => {
            if t.cluster.scheduler_workers <= 1 {
                return None;
            }
            t.cluster.scheduler_workers = 1;
        }
        Op::HalveHorizon => {
            let latest = t
                .events
                .iter()
                .map(|e| e.at)
                .chain(t.jobs.iter().map(|j| j.submit_at))
                .max()
                .unwrap_or(Millis::ZERO);
            // Whole minutes, and never before the last event.
            let half = Millis(t.horizon.0 / 2 / 60_000 * 60_000);
            if half < latest.max(Millis::from_secs(60)) {
                return None;
            }
            t.horizon = half;
        }
        Op::EarlierEvent(e) => {
            let at = &mut t.events[e].at;
            *at = Millis(at.0 / 2 / 1000 * 1000);
            if *at == s.events[e].at {
                return None;
            }
        }
        Op::SubmitAtZero(j) => {
            if t.jobs[j].submit_at == Millis::ZERO {
                return None;
            }
            t.jobs[j].submit_at = Millis::ZERO;
        }
        Op::Latency(which) => {
            let default = *latency(&mut ClusterConfig::default(), which);
            let slot = latency(&mut t.cluster, which);
            *slot = shorter(*slot, *slot <= default)?;
        }
        Op::PublishLatency(p) => {
            let slot = &mut t.plugins[p].publish_latency;
            *slot = shorter(*slot, false)?;
        }
        Op::DefaultReschedule(j, g) => {
            let default = ReschedulePolicy::default_for(t.jobs[j].kind);
            let policy = &mut t.jobs[j].groups[g].reschedule;
            if *policy == default {
                return None;
            }
            *policy = default;
        }
        Op::NoRunFor(j, g) => {
            // A lifecycle group's run time is its tasks' (see above).
            let group = &mut t.jobs[j].groups[g];
            if group.lifecycle.is_some() {
                return None;
            }
            group.run_for.take()?;
        }
        Op::DefaultNodePlugin(n, k) => {
            let plugin = &mut t.nodes[n].csi_plugins[k];
            if plugin.healthy && plugin.max_volumes == 0 {
                return None;
            }
            plugin.healthy = true;
            plugin.max_volumes = 0;
        }
        Op::DefaultNodeResources(n) => {
            let node = &mut t.nodes[n];
            if (node.cpu, node.memory) == (4000, 8192) {
                return None;
            }
            (node.cpu, node.memory) = (4000, 8192);
        }
        Op::DefaultGroupResources(j, g) => {
            let group = &mut t.jobs[j].groups[g];
            // A group with task lifecycles takes its resources and run
            // time from its tasks (what the writer writes), not these sums.
            if (group.cpu, group.memory) == (100, 300) || group.lifecycle.is_some() {
                return None;
            }
            (group.cpu, group.memory) = (100, 300);
        }
        Op::DefaultGc(which) => {
            let default = *gc_setting(&mut ClusterConfig::default(), which);
            let slot = gc_setting(&mut t.cluster, which);
            if *slot == default {
                return None;
            }
            *slot = default;
        }
        Op::NoRequestModes(j, g, r) => {
            let request = &mut t.jobs[j].groups[g].volumes[r];
            if (request.access_mode, request.attachment_mode) == (None, None) {
                return None;
            }
            (request.access_mode, request.attachment_mode) = (None, None);
        }
        Op::FirstCapability(v) => {
            let volume = &mut t.volumes[v];
            if volume.capabilities.len() <= 1 {
                return None;
            }
            volume.capabilities.truncate(1);
        }
        Op::ShortNames => {
            if !short_names(&mut t) {
                return None;
            }
        }
    }
    refresh_derived(&mut t);
    // Only what a file can say: an event about a job after its submission.
    if !t.events_follow_submissions() {
        return None;
    }
    normalized(t)
}

fn remove_job(s: &mut Scenario, j: usize) {
    s.jobs.remove(j);
    retarget(s, Removed::Job(JobId::from_index(j)));
}

fn remove_node(s: &mut Scenario, n: usize) {
    s.nodes.remove(n);
    retarget(s, Removed::Node(NodeId::from_index(n)));
}

fn remove_group(s: &mut Scenario, j: usize, g: usize) {
    s.jobs[j].groups.remove(g);
    retarget(s, Removed::Group(GroupRef::new(JobId::from_index(j), g)));
}

fn remove_volume(s: &mut Scenario, v: usize) {
    s.volumes.remove(v);
    s.rebuild_volume_names();
    let gone = VolumeId::from_index(v);
    retarget(s, Removed::Volume(gone));
    let names: Vec<String> = s.volumes.iter().map(|v| v.name.clone()).collect();
    for group in s.jobs.iter_mut().flat_map(|j| j.groups.iter_mut()) {
        group.volumes.retain(|r| match &r.source {
            VolumeSource::Shared(id) => *id != gone,
            // The loader refuses a per_alloc source with no volume left.
            VolumeSource::PerAlloc { base } => {
                let prefix = format!("{base}[");
                names.iter().any(|n| n.starts_with(&prefix))
            }
            VolumeSource::Missing { .. } => true,
        });
        for request in &mut group.volumes {
            if let VolumeSource::Shared(id) = &mut request.source
                && *id > gone
            {
                id.0 -= 1;
            }
        }
    }
}

fn remove_plugin(s: &mut Scenario, p: usize) {
    let gone = PluginId::from_index(p);
    for v in (0..s.volumes.len()).rev() {
        if s.volumes[v].plugin == gone {
            remove_volume(s, v);
        }
    }
    s.plugins.remove(p);
    retarget(s, Removed::Plugin(gone));
    let shift = |id: &mut PluginId| {
        if *id > gone {
            id.0 -= 1;
        }
    };
    for node in &mut s.nodes {
        node.csi_plugins.retain(|np| np.plugin != gone);
        for np in &mut node.csi_plugins {
            shift(&mut np.plugin);
        }
    }
    for volume in &mut s.volumes {
        shift(&mut volume.plugin);
    }
    for group in s.jobs.iter_mut().flat_map(|j| j.groups.iter_mut()) {
        group.csi_plugins.retain(|t| t.plugin != gone);
        for task in &mut group.csi_plugins {
            shift(&mut task.plugin);
        }
    }
}

fn remove_node_plugin(s: &mut Scenario, n: usize, k: usize) {
    s.nodes[n].csi_plugins.remove(k);
    // refresh_derived drops the plugin's events on this node.
}

/// Renames nodes `client-N`, plugins `pluginN`, shared volumes `volN`,
/// jobs `jobN`, groups `gN` and volume aliases `vN` (a `per_alloc` family
/// keeps its names: they are what the requests resolve). False when every
/// name is already short.
fn short_names(s: &mut Scenario) -> bool {
    let mut changed = false;
    let mut rename = |name: &mut String, short: String| {
        if *name != short {
            *name = short;
            changed = true;
        }
    };
    for (i, node) in s.nodes.iter_mut().enumerate() {
        rename(&mut node.name, format!("client-{i}"));
    }
    for (i, plugin) in s.plugins.iter_mut().enumerate() {
        rename(&mut plugin.name, format!("plugin{i}"));
    }
    let mut shared = 0;
    for volume in &mut s.volumes {
        if !volume.name.contains('[') {
            // Skip a name a family member could collide with.
            rename(&mut volume.name, format!("vol{shared}"));
            shared += 1;
        }
    }
    for (j, job) in s.jobs.iter_mut().enumerate() {
        rename(&mut job.name, format!("job{j}"));
        for (g, group) in job.groups.iter_mut().enumerate() {
            rename(&mut group.name, format!("g{g}"));
            for (r, request) in group.volumes.iter_mut().enumerate() {
                rename(&mut request.alias, format!("v{r}"));
            }
        }
    }
    if changed {
        s.rebuild_volume_names();
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hunt::generate::generate;
    use crate::scenario::load_str;
    use crate::scenario::write::model::to_yaml;

    /// Every single simplification of many generated scenarios is still a
    /// valid scenario: it writes and loads back to the same model.
    #[test]
    fn every_simplification_stays_a_valid_scenario() {
        for index in 0..40 {
            let s = generate(3, index);
            for op in operations(&s) {
                let Some(t) = apply(&s, &op) else { continue };
                let yaml = to_yaml(&t, "");
                let back = load_str(&yaml, "shrunk.yaml", "x")
                    .unwrap_or_else(|e| panic!("{op:?} on scenario {index}: {e}\n{yaml}"));
                assert_eq!(format!("{back:?}"), format!("{t:?}"), "{op:?}\n{yaml}");
            }
        }
    }

    #[test]
    fn shrinking_with_an_always_failing_check_reaches_the_empty_fixpoint() {
        let shrunk = shrink(generate(5, 1), |_| true);
        assert!(shrunk.fixpoint);
        let s = &shrunk.scenario;
        assert!(s.jobs.is_empty() && s.nodes.is_empty() && s.events.is_empty());
        assert!(s.volumes.is_empty() && s.plugins.is_empty());
        assert_eq!(s.cluster.scheduler_workers, 1);
    }

    #[test]
    fn shrinking_keeps_what_the_check_needs() {
        // "Fails" while some job has a group of count >= 2: the minimum is
        // one job, one group, count 2, nothing else.
        let start = (0..100)
            .map(|i| generate(9, i))
            .find(|s| {
                s.jobs.len() > 1 && s.jobs.iter().any(|j| j.groups.iter().any(|g| g.count >= 2))
            })
            .expect("the generator makes such a scenario");
        let needs = |s: &Scenario| s.jobs.iter().any(|j| j.groups.iter().any(|g| g.count >= 2));
        let shrunk = shrink(start, needs);
        let s = &shrunk.scenario;
        assert_eq!(s.jobs.len(), 1);
        assert_eq!(s.jobs[0].groups.len(), 1);
        assert_eq!(s.jobs[0].groups[0].count, 2);
        assert!(s.nodes.is_empty() && s.volumes.is_empty());
        assert_eq!(s.jobs[0].name, "job0");
    }
}
