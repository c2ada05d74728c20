//! A policy's run, read off its trace for drawing: each allocation's life,
//! each claim, the operator events, the refusals and the violation windows.

use std::collections::{BTreeMap, VecDeque};

use crate::explain::{self, Window};
use crate::model::access::ClaimMode;
use crate::model::ids::{GroupRef, NodeId, VolumeId};
use crate::model::scenario::Scenario;
use crate::model::time::Millis;
use crate::sim::trace::{TraceKind, TraceRecord};

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    Failed,
    Complete,
    Lost,
    Stopped,
}

/// One allocation's life on its node.
pub(super) struct AllocBar {
    pub(super) node: NodeId,
    pub(super) name: String,
    pub(super) placed: Millis,
    pub(super) claiming: Option<Millis>,
    pub(super) running: Option<Millis>,
    pub(super) end: Option<(Millis, End)>,
}

/// One claim on a volume: held, then being released once its allocation stopped.
pub(super) struct ClaimBar {
    pub(super) volume: VolumeId,
    pub(super) holder: String,
    pub(super) mode: ClaimMode,
    pub(super) granted: Millis,
    pub(super) releasing: Option<Millis>,
    pub(super) freed: Option<Millis>,
}

/// A policy's run, read off its trace for drawing.
pub(super) struct Timeline {
    pub(super) allocs: Vec<AllocBar>,
    pub(super) claims: Vec<ClaimBar>,
    /// Operator events: (time, label).
    pub(super) marks: Vec<(Millis, String)>,
    /// Failed placements and refused node plans: (time, label).
    pub(super) refusals: Vec<(Millis, String)>,
    pub(super) windows: Vec<Window>,
}

fn alloc_name(scenario: &Scenario, group: GroupRef, index: u32) -> String {
    let job = &scenario.jobs[group.job.index()];
    format!(
        "{}.{}[{index}]",
        job.name,
        job.groups[group.group_index()].name
    )
}

impl Timeline {
    pub(super) fn read(scenario: &Scenario, trace: &[TraceRecord]) -> Timeline {
        let mut t = Timeline {
            allocs: Vec::new(),
            claims: Vec::new(),
            marks: Vec::new(),
            refusals: Vec::new(),
            windows: explain::violation_windows(scenario, trace),
        };
        let mut open: BTreeMap<(GroupRef, u32), usize> = BTreeMap::new();
        let mut open_claims: BTreeMap<(GroupRef, u32, VolumeId), VecDeque<usize>> = BTreeMap::new();
        for r in trace {
            let slot = r.group.zip(r.alloc_index);
            match (r.kind, slot) {
                (TraceKind::Placed, Some((g, i))) => {
                    open.insert((g, i), t.allocs.len());
                    t.allocs.push(AllocBar {
                        node: r.node.unwrap_or(NodeId(0)),
                        name: alloc_name(scenario, g, i),
                        placed: r.time,
                        claiming: None,
                        running: None,
                        end: None,
                    });
                }
                (TraceKind::ClaimGranted | TraceKind::ClaimRejected, Some(s)) => {
                    if let Some(&a) = open.get(&s) {
                        t.allocs[a].claiming.get_or_insert(r.time);
                    }
                    if let (TraceKind::ClaimGranted, Some(v)) = (r.kind, r.volume) {
                        open_claims
                            .entry((s.0, s.1, v))
                            .or_default()
                            .push_back(t.claims.len());
                        t.claims.push(ClaimBar {
                            volume: v,
                            holder: alloc_name(scenario, s.0, s.1),
                            mode: if r.detail == "write" {
                                ClaimMode::Write
                            } else {
                                ClaimMode::Read
                            },
                            granted: r.time,
                            releasing: None,
                            freed: None,
                        });
                    }
                }
                (TraceKind::ClaimReleased, Some(s)) => {
                    if let Some(v) = r.volume
                        && let Some(c) = open_claims
                            .get_mut(&(s.0, s.1, v))
                            .and_then(VecDeque::pop_front)
                    {
                        t.claims[c].freed = Some(r.time);
                    }
                }
                (TraceKind::Running, Some(s)) => {
                    if let Some(&a) = open.get(&s) {
                        t.allocs[a].running = Some(r.time);
                    }
                }
                (
                    TraceKind::Failed | TraceKind::Complete | TraceKind::Lost | TraceKind::Stopped,
                    Some(s),
                ) => {
                    let end = match r.kind {
                        TraceKind::Failed => End::Failed,
                        TraceKind::Complete => End::Complete,
                        TraceKind::Lost => End::Lost,
                        _ => End::Stopped,
                    };
                    if let Some(a) = open.remove(&s) {
                        t.allocs[a].end = Some((r.time, end));
                    }
                    for (_, claims) in
                        open_claims.range((s.0, s.1, VolumeId(0))..=(s.0, s.1, VolumeId(u32::MAX)))
                    {
                        for &c in claims {
                            t.claims[c].releasing.get_or_insert(r.time);
                        }
                    }
                }
                _ => t.note(scenario, r),
            }
        }
        t
    }
    /// A refusal (a placement not made, a job or a node plan rejected) or
    /// an operator event, from its trace row.
    fn note(&mut self, scenario: &Scenario, r: &TraceRecord) {
        let t = self;
        let node = |n: Option<NodeId>| n.map_or("", |n| scenario.nodes[n.index()].name.as_str());
        match (r.kind, r.group.zip(r.alloc_index)) {
            (TraceKind::Infeasible, Some((g, i))) => {
                t.refusals.push((
                    r.time,
                    format!("{} not placed: {}", alloc_name(scenario, g, i), r.detail),
                ));
            }
            (TraceKind::JobRejected, _) => {
                let job = r.job.map_or("", |j| scenario.jobs[j.index()].name.as_str());
                t.refusals.push((
                    r.time,
                    format!("job {job} rejected at registration: {}", r.detail),
                ));
            }
            (TraceKind::PlanRejected, _) => {
                t.refusals.push((
                    r.time,
                    format!("plan for {} refused: {}", node(r.node), r.detail),
                ));
            }
            (
                TraceKind::NodeDown
                | TraceKind::NodeUp
                | TraceKind::NodeDrain
                | TraceKind::PluginHealth
                | TraceKind::PluginRestart
                | TraceKind::VolumeDetach,
                _,
            ) => {
                let detail = if r.detail.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", r.detail)
                };
                t.marks.push((
                    r.time,
                    format!("{} {}{detail}", r.kind.name(), node(r.node)),
                ));
            }
            (TraceKind::Scale, _) | (TraceKind::StopJob, _) => {
                let job = r.job.map_or("", |j| scenario.jobs[j.index()].name.as_str());
                t.marks.push((
                    r.time,
                    format!("{} {job} {}", r.kind.name(), r.detail)
                        .trim_end()
                        .to_string(),
                ));
            }
            _ => {}
        }
    }
}
