//! The decisions a run made, read off its trace: registrations accepted or
//! rejected, placements (a node, none, or refused by the plan applier) and
//! server claims (granted, or refused with the allocation failing or the
//! client retrying). Two runs are compared decision by decision, so runs
//! whose event counts differ before they diverge still line up.

use std::collections::BTreeMap;

use crate::model::access::ClaimMode;
use crate::model::ids::{GroupRef, JobId, NodeId, VolumeId};
use crate::model::time::Millis;
use crate::sim::trace::{PlacementSeen, TraceKind, TraceRecord};

/// What a decision is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Subject {
    Registration(JobId),
    /// An allocation slot: the group and index of `<job>.<group>[<index>]`.
    Placement(GroupRef, u32),
    Claim(GroupRef, u32, VolumeId),
    /// The job's deployments: each promotion, success or failure is the
    /// next decision about them (the deployment watcher's).
    Deployment(JobId),
}

/// A decision's identity: its subject and how many decisions about that
/// subject came before it (from 1). Equal keys in two runs are the same
/// question, asked the same number of times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub subject: Subject,
    pub nth: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Accepted,
    Rejected,
    Placed(NodeId),
    NotPlaced,
    /// The scheduler picked the node; the plan applier refused it.
    PlanRejected(NodeId),
    Granted,
    /// Refused, and the client failed the allocation (Nomad 1.0-1.2 clients
    /// do not retry; later ones fail once the retry deadline passes).
    RefusedAllocFails,
    /// Refused, and the client keeps the allocation and retries.
    RefusedClientRetries,
    /// The deployment's canaries were promoted.
    Promoted,
    /// The deployment succeeded.
    Succeeded,
    /// The deployment failed (progress deadline or unhealthy allocations).
    Failed,
}

impl Outcome {
    /// A short, stable name for machine-readable output.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Rejected => "rejected",
            Outcome::Placed(_) => "placed",
            Outcome::NotPlaced => "not_placed",
            Outcome::PlanRejected(_) => "plan_rejected",
            Outcome::Granted => "granted",
            Outcome::RefusedAllocFails => "refused_alloc_fails",
            Outcome::RefusedClientRetries => "refused_client_retries",
            Outcome::Promoted => "promoted",
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Decision<'t> {
    pub key: Key,
    pub outcome: Outcome,
    /// When it was decided: for a placement, when its evaluation started.
    pub at: Millis,
    /// The trace row that records it.
    pub row: usize,
    /// For placements: what the scheduler saw.
    pub seen: Option<&'t PlacementSeen>,
}

/// Every decision in `trace`, in trace order.
pub fn decisions(trace: &[TraceRecord]) -> Vec<Decision<'_>> {
    let eval_times: Vec<Millis> = trace
        .iter()
        .filter(|r| r.kind == TraceKind::Eval)
        .map(|r| r.time)
        .collect();
    let mut counts: BTreeMap<Subject, u32> = BTreeMap::new();
    // Claims granted to the current allocation of a slot: a refusal that
    // follows one is the plugin's (at publish), not the server's.
    let mut granted: BTreeMap<(GroupRef, u32, VolumeId), bool> = BTreeMap::new();
    let mut out = Vec::new();
    let mut push = |subject: Subject, outcome, at, row, seen| {
        let nth = counts.entry(subject).or_default();
        *nth += 1;
        out.push(Decision {
            key: Key { subject, nth: *nth },
            outcome,
            at,
            row,
            seen,
        });
    };
    let eval_time = |seen: &PlacementSeen, fallback: Millis| {
        usize::try_from(seen.eval)
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| eval_times.get(i).copied())
            .unwrap_or(fallback)
    };
    for (row, record) in trace.iter().enumerate() {
        let slot = record.group.zip(record.alloc_index);
        match record.kind {
            TraceKind::JobSubmitted | TraceKind::JobRejected => {
                if let Some(job) = record.job {
                    let outcome = if record.kind == TraceKind::JobSubmitted {
                        Outcome::Accepted
                    } else {
                        Outcome::Rejected
                    };
                    push(Subject::Registration(job), outcome, record.time, row, None);
                }
            }
            TraceKind::Placed | TraceKind::Infeasible => {
                let Some((group, index)) = slot else { continue };
                let seen = record.seen.first();
                let outcome = match record.node {
                    Some(node) if record.kind == TraceKind::Placed => Outcome::Placed(node),
                    _ => Outcome::NotPlaced,
                };
                if record.kind == TraceKind::Placed {
                    granted.retain(|&(g, i, _), _| (g, i) != (group, index));
                }
                let at = seen.map_or(record.time, |s| eval_time(s, record.time));
                push(Subject::Placement(group, index), outcome, at, row, seen);
            }
            TraceKind::PlanRejected => {
                for seen in &record.seen {
                    let node = seen.node.or(record.node).unwrap_or(NodeId(0));
                    push(
                        Subject::Placement(seen.group, seen.index),
                        Outcome::PlanRejected(node),
                        eval_time(seen, record.time),
                        row,
                        Some(seen),
                    );
                }
            }
            TraceKind::ClaimGranted | TraceKind::ClaimRejected => {
                let (Some((group, index)), Some(volume)) = (slot, record.volume) else {
                    continue;
                };
                let claim = (group, index, volume);
                if record.kind == TraceKind::ClaimGranted {
                    granted.insert(claim, true);
                    push(
                        Subject::Claim(group, index, volume),
                        Outcome::Granted,
                        record.time,
                        row,
                        None,
                    );
                } else if !granted.get(&claim).copied().unwrap_or(false) {
                    // The client fails the allocation in the same step, so
                    // its `failed` row comes right after the refusal.
                    let fails = trace.get(row + 1).is_some_and(|next| {
                        next.kind == TraceKind::Failed
                            && next.group == Some(group)
                            && next.alloc_index == Some(index)
                    });
                    let outcome = if fails {
                        Outcome::RefusedAllocFails
                    } else {
                        Outcome::RefusedClientRetries
                    };
                    push(
                        Subject::Claim(group, index, volume),
                        outcome,
                        record.time,
                        row,
                        None,
                    );
                }
            }
            TraceKind::DeploymentPromoted
            | TraceKind::DeploymentSucceeded
            | TraceKind::DeploymentFailed => {
                let Some(job) = record.job else { continue };
                let outcome = match record.kind {
                    TraceKind::DeploymentPromoted => Outcome::Promoted,
                    TraceKind::DeploymentSucceeded => Outcome::Succeeded,
                    _ => Outcome::Failed,
                };
                push(Subject::Deployment(job), outcome, record.time, row, None);
            }
            _ => {}
        }
    }
    out
}

/// The earliest decision on which two runs differ: a key whose outcome
/// differs, or that only one run has. Returns each run's decision for
/// that key (one may be missing), or `None` when they never differ.
pub fn first_divergence<'a, 't>(
    baseline: &'a [Decision<'t>],
    candidate: &'a [Decision<'t>],
) -> Option<(Option<&'a Decision<'t>>, Option<&'a Decision<'t>>)> {
    let index = |list: &'a [Decision<'t>]| -> BTreeMap<Key, &'a Decision<'t>> {
        list.iter().map(|d| (d.key, d)).collect()
    };
    let (base, cand) = (index(baseline), index(candidate));
    let differs = |d: &Decision, other: &BTreeMap<Key, &Decision>| {
        other.get(&d.key).map(|o| o.outcome) != Some(d.outcome)
    };
    let first = baseline
        .iter()
        .filter(|d| differs(d, &cand))
        .chain(candidate.iter().filter(|d| differs(d, &base)))
        .min_by_key(|d| (d.at, d.row))?;
    Some((base.get(&first.key).copied(), cand.get(&first.key).copied()))
}

/// The claims the server held on `volume` just before trace row `row`,
/// rebuilt from the rows that change them (granted, released), oldest
/// first: (group, index, mode).
pub fn claims_before(
    trace: &[TraceRecord],
    row: usize,
    volume: VolumeId,
) -> Vec<(GroupRef, u32, ClaimMode)> {
    let mut held: Vec<(GroupRef, u32, ClaimMode)> = Vec::new();
    for record in trace[..row.min(trace.len())]
        .iter()
        .filter(|r| r.volume == Some(volume))
    {
        let (Some(group), Some(index)) = (record.group, record.alloc_index) else {
            continue;
        };
        let mode = if record.detail == ClaimMode::Write.name() {
            ClaimMode::Write
        } else {
            ClaimMode::Read
        };
        match record.kind {
            TraceKind::ClaimGranted => held.push((group, index, mode)),
            TraceKind::ClaimReleased => {
                if let Some(at) = held.iter().position(|h| *h == (group, index, mode)) {
                    held.remove(at);
                }
            }
            _ => {}
        }
    }
    held
}
