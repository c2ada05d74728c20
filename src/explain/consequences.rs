//! The chain of consequences in one run after the divergence: the trace
//! rows about what the divergence concerns, in words, repeats folded.

use std::collections::{BTreeMap, VecDeque};

use super::explanation::{RunView, SideDecision, Step};
use super::followed::Followed;
use super::names::Names;
use super::windows::violation_windows;
use crate::model::ids::{GroupRef, VolumeId};
use crate::model::scenario::Scenario;
use crate::model::time::Millis;
use crate::sim::trace::{TraceKind, TraceRecord};

/// Steps of a chain of consequences shown before the rest is summarised.
const MAX_STEPS: usize = 14;

/// The chain of consequences in one run after the divergence.
pub(super) fn consequences(
    scenario: &Scenario,
    run: RunView,
    decision_row: Option<usize>,
    at: Millis,
    followed: &Followed,
    out: &mut SideDecision,
) {
    let names = Names(scenario);
    let start =
        decision_row.map_or_else(|| run.trace.partition_point(|r| r.time < at), |row| row + 1);
    let mut steps: Vec<Step> = Vec::new();
    let mut skipped: BTreeMap<&'static str, u32> = Default::default();
    let mut last_time = None;
    let mut generations = Generations::default();
    for (row, record) in run.trace.iter().enumerate() {
        let replaced = generations.replaced(record);
        if row < start || !followed.concerns(record) {
            continue;
        }
        let what = step_text(&names, record, replaced, steps.last());
        last_time = Some(record.time);
        // A step repeated (a retried claim, a placement retried while
        // blocked) reads as one step with a count.
        if let Some(prev) = steps.last_mut()
            && prev.event == record.kind.name()
            && prev.what == what
        {
            prev.repeats += 1;
            prev.last_s = Some(record.time.to_string());
            continue;
        }
        if steps.len() >= MAX_STEPS {
            *skipped.entry(record.kind.name()).or_default() += 1;
            continue;
        }
        steps.push(Step {
            time_s: record.time.to_string(),
            event: record.kind.name(),
            what,
            repeats: 0,
            last_s: None,
        });
    }
    if !skipped.is_empty() {
        let total: u32 = skipped.values().sum();
        let kinds: Vec<String> = skipped.iter().map(|(k, n)| format!("{n} {k}")).collect();
        out.more_steps = Some(format!(
            "{total} more step(s) until {} s: {}",
            last_time.unwrap_or(at),
            kinds.join(", ")
        ));
    }
    out.consequences = steps;
    out.violation_windows = violation_windows(scenario, run.trace)
        .into_iter()
        .filter(|w| followed.volumes.contains(&w.volume_id) && w.to > at)
        .collect();
}

/// One trace row about what the divergence concerns, in words; `replaced`
/// when it frees the claim of an allocation the row's one replaced, and
/// `previous` the step before it.
fn step_text(
    names: &Names,
    record: &TraceRecord,
    replaced: bool,
    previous: Option<&Step>,
) -> String {
    let alloc = record
        .group
        .zip(record.alloc_index)
        .map(|(g, i)| names.alloc(g, i))
        .unwrap_or_default();
    let volume = record.volume.map_or("", |v| names.volume(v));
    let node = record.node.map_or("", |n| names.node(n));
    match record.kind {
        TraceKind::Placed if record.detail.starts_with("reschedule") => {
            format!("{alloc} rescheduled: placed again on {node}")
        }
        TraceKind::Placed if record.detail.starts_with("replaces") => {
            format!("{alloc} replacement placed on {node}")
        }
        TraceKind::Placed if record.detail.starts_with("canary") => {
            format!("{alloc} placed on {node} ({})", record.detail)
        }
        TraceKind::Placed => format!("{alloc} placed on {node}"),
        TraceKind::DeploymentStarted
        | TraceKind::DeploymentPromoted
        | TraceKind::DeploymentSucceeded
        | TraceKind::DeploymentFailed
        | TraceKind::DeploymentReverted
        | TraceKind::PromoteDeployment => {
            format!("{}: {}", record.kind.name(), record.detail)
        }
        TraceKind::Infeasible => format!("{alloc} not placed: {}", record.detail),
        TraceKind::PlanRejected => {
            let refused: Vec<String> = record
                .seen
                .iter()
                .map(|s| names.alloc(s.group, s.index))
                .collect();
            format!(
                "plan applier refused {} on {node}: {}",
                refused.join(", "),
                record.detail
            )
        }
        TraceKind::ClaimGranted => {
            format!("{alloc} granted a {} claim on {volume}", record.detail)
        }
        TraceKind::ClaimRejected => {
            format!("{alloc}'s claim on {volume} refused: {}", record.detail)
        }
        TraceKind::Violation => format!("{volume} in violation: {}", record.detail),
        TraceKind::ViolationEnded => {
            format!("{volume} no longer in violation ({})", record.detail)
        }
        TraceKind::Running => format!("{alloc} running on {node}"),
        TraceKind::Failed if previous.is_some_and(|s| s.what.ends_with(&record.detail)) => {
            format!("{alloc} failed (for that reason)")
        }
        TraceKind::ClaimReleased if replaced => {
            format!("{alloc}'s claim on {volume} freed (the claim of the allocation it replaced)")
        }
        TraceKind::ClaimReleased => format!("{alloc}'s claim on {volume} freed"),
        TraceKind::JobSubmitted => "job registered".to_string(),
        TraceKind::JobRejected => format!("job rejected: {}", record.detail),
        kind if !alloc.is_empty() => {
            format!("{alloc} {}: {}", kind.name(), record.detail)
        }
        kind => format!("{} {node}", kind.name()),
    }
}

/// Allocation generations per slot, and the generation holding each claim
/// not yet freed (oldest first): a claim freed that belongs to an older
/// generation was the replaced allocation's.
#[derive(Default)]
struct Generations {
    generation: BTreeMap<(GroupRef, u32), u32>,
    holders: BTreeMap<(GroupRef, u32, VolumeId), VecDeque<u32>>,
}

impl Generations {
    /// Counts `record` in, and tells whether it frees the claim of an
    /// allocation its slot's newer one replaced.
    fn replaced(&mut self, record: &TraceRecord) -> bool {
        let (generation, holders) = (&mut self.generation, &mut self.holders);
        match (
            record.kind,
            record.group.zip(record.alloc_index),
            record.volume,
        ) {
            (TraceKind::Placed, Some(slot), _) => {
                *generation.entry(slot).or_default() += 1;
                false
            }
            (TraceKind::ClaimGranted, Some((g, i)), Some(v)) => {
                let current = generation.get(&(g, i)).copied().unwrap_or(0);
                holders.entry((g, i, v)).or_default().push_back(current);
                false
            }
            (TraceKind::ClaimReleased, Some((g, i)), Some(v)) => {
                let current = generation.get(&(g, i)).copied().unwrap_or(0);
                let held_by = holders.get_mut(&(g, i, v)).and_then(|q| q.pop_front());
                held_by.is_some_and(|older| older < current)
            }
            _ => false,
        }
    }
}
