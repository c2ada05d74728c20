//! The system scheduler (Nomad's scheduler_system.go, for `system` and
//! `sysbatch` jobs): one allocation of each group on every ready, eligible
//! node in the job's datacenters that passes the group's checks. Nomad's
//! reconciler for it (util.go `diffSystemAllocsForNode` in 1.2.6,
//! reconciler/reconcile_node.go `computeForNode` in 2.0.5; the same for
//! what plansim models) diffs node by node:
//! - a live allocation is kept, except when its group's count is 0 (stop),
//!   its node is draining (migrate: stopped, not replaced elsewhere), or its
//!   node left the job's datacenters (stop); on a node that is not ready
//!   it is left alone;
//! - a node without a live allocation gets one, except a down or not ready
//!   node, and, for sysbatch, a node where the allocation already ran
//!   (complete, failed or lost: a sysbatch allocation is not run again
//!   unless the job changes).
//!
//! A placement is tried on its node only. A node filtered out by the job's
//! or group's constraints, drivers or CSI volumes is skipped silently
//! ("filtered nodes are not reported to users"); a node whose resources are
//! exhausted is a placement failure, reported, and blocks the evaluation
//! (Nomad's `addBlocked`, unblocked by the node's class or the node itself).
//! Allocations are named `<job>.<group>[0]` on every node, as Nomad names
//! them; the job's slots are keyed by node.

use std::collections::BTreeMap;

use crate::model::access::ClaimMode;
use crate::model::ids::{AllocId, GroupRef, JobId, NodeId, VolumeId};
use crate::model::scenario::{Capability, JobKind};
use crate::sim::server::scheduler::feasibility::{FilterReason, PlacementFailure};
use crate::sim::server::scheduler::plan::{Placement, PlacementKind, Plan, ResolvedVolume};
use crate::sim::simulation::Simulation;
use crate::sim::state::alloc_parts::VolumeClaims;
use crate::sim::state::store::{JobStatus, NodeStatus};
use crate::sim::trace::{TraceKind, TraceRecord};

/// Nomad names every system allocation `<job>.<group>[0]`.
pub(crate) const SYSTEM_ALLOC_INDEX: u32 = 0;

impl Simulation<'_> {
    /// One evaluation of a registered system or sysbatch job.
    pub(crate) fn schedule_system(&mut self, mut plan: Plan) -> Plan {
        let job = plan.job;
        let spec = &self.scenario.jobs[job.index()];
        let sysbatch = spec.kind == JobKind::Sysbatch;
        let mut wants: Vec<(GroupRef, NodeId, Option<AllocId>)> = Vec::new();
        let mut filtered = Filtered::new(spec.groups.len());
        for g in 0..spec.groups.len() {
            let group = GroupRef::new(job, g);
            let wanted = self.jobs[job.index()].counts[g] > 0;
            let slots = &self.jobs[job.index()].latest[g];
            for (n, node_spec) in self.scenario.nodes.iter().enumerate() {
                let node = NodeId::from_index(n);
                let state = &self.nodes[n];
                let in_dcs = spec.datacenters.contains(&node_spec.datacenter);
                let existing = slots.get(&(n as u32)).copied();
                match existing.map(|id| (id, &self.allocs[id.index()])) {
                    Some((id, alloc)) if alloc.is_live() => {
                        let ready = state.status == NodeStatus::Ready;
                        if !wanted || alloc.migrate || (ready && state.eligible && !in_dcs) {
                            plan.stops.push(id);
                        } else {
                            filtered.kept[g] = true;
                        }
                    }
                    previous => {
                        let ran = previous.is_some();
                        if !wanted || !state.schedulable() || !in_dcs {
                            continue;
                        }
                        if sysbatch && ran {
                            // Left alone: the reconciler's Ignore bucket.
                            filtered.kept[g] = true;
                            continue;
                        }
                        wants.push((group, node, previous.map(|(id, _)| id)));
                        filtered.queued[g] += 1;
                    }
                }
            }
        }
        if wants.is_empty() {
            self.note_placement_failures(job, BTreeMap::new());
            return plan;
        }
        let mut ctx = self.plan_context(job, Vec::new());
        let mut failures: BTreeMap<GroupRef, PlacementFailure> = BTreeMap::new();
        for (group, node, previous) in wants {
            let volumes = self.resolve_volumes(group, SYSTEM_ALLOC_INDEX);
            self.prepare_volume_verdicts(&mut ctx, group, &volumes);
            let ask = self.ask(group);
            match self.score_node(&mut ctx, node, &ask, &volumes, &[]) {
                Ok(_) => {
                    let (volumes, claim_modes): (Vec<(VolumeId, ClaimMode)>, Vec<Capability>) =
                        volumes
                            .into_iter()
                            .filter_map(|v| match v {
                                ResolvedVolume::Found(id, mode, claim) => Some(((id, mode), claim)),
                                ResolvedVolume::Missing(_) => None,
                            })
                            .unzip();
                    let seen = self.placement_seen(
                        &ctx.claims,
                        &plan.placements,
                        (group, SYSTEM_ALLOC_INDEX),
                        Some(node),
                        volumes.iter().copied(),
                    );
                    self.propose(&mut ctx, node, group, &volumes, &claim_modes);
                    plan.placements.push(Placement {
                        group,
                        index: SYSTEM_ALLOC_INDEX,
                        node,
                        claims: VolumeClaims::boxed(volumes, claim_modes, 0),
                        kind: previous.map_or(PlacementKind::Fresh, PlacementKind::Replaces),
                        // System jobs are not updated by deployments here:
                        // every placement runs the job's current version.
                        version: self.jobs[job.index()].version,
                        seen,
                        // One allocation per node: no replacement to weigh.
                        score: 0.0,
                    });
                }
                // Filtered nodes are not reported, only left out, unless
                // they are all the group's placements.
                Err(reason) if !exhausts(&reason) => {
                    let skips_kept = self.behaviour.release.system_filtered_report_skips_kept;
                    if let Some(failure) = filtered.note(group, reason, skips_kept, self.scenario) {
                        self.report_filtered_group(node, failure, &mut failures);
                    }
                }
                Err(reason) => {
                    self.metrics.infeasible += 1;
                    self.blocked.insert(job);
                    let detail = reason.describe(self.scenario);
                    let filtered = BTreeMap::from([(reason, 1)]);
                    failures
                        .entry(group)
                        .or_insert_with(|| PlacementFailure::new(group, &filtered, self.scenario))
                        .unplaced += 1;
                    self.record(|t| {
                        TraceRecord::new(t, TraceKind::Infeasible)
                            .alloc(group, SYSTEM_ALLOC_INDEX)
                            .node(node)
                            .detail(detail)
                    });
                }
            }
        }
        self.note_placement_failures(job, failures);
        if self.blocked.contains(&job) {
            let eligibility = self.class_eligibility(job, &ctx);
            self.blocked_classes.insert(job, eligibility);
        }
        plan
    }

    /// Every placement of a system group was filtered out: Nomad reports
    /// the group failed with the filters merged over its nodes
    /// (scheduler_system.go `computePlacements`, `mergeNodeFiltered`), one
    /// allocation unplaced, and blocks nothing (no `addBlocked`).
    fn report_filtered_group(
        &mut self,
        node: NodeId,
        failure: PlacementFailure,
        failures: &mut BTreeMap<GroupRef, PlacementFailure>,
    ) {
        let group = failure.group;
        self.metrics.infeasible += 1;
        // Every node filtered it: the check that filtered the most.
        let detail = failure
            .metric
            .constraint_filtered
            .first()
            .map(|(text, _)| text.clone())
            .unwrap_or_default();
        failures.insert(group, failure);
        self.record(|t| {
            TraceRecord::new(t, TraceKind::Infeasible)
                .alloc(group, SYSTEM_ALLOC_INDEX)
                .node(node)
                .detail(detail)
        });
    }

    /// A node changed in a way the system scheduler cares about (it came
    /// up, or became eligible): Nomad's node update creates an evaluation
    /// for every system and sysbatch job (node_endpoint.go createNodeEvals).
    pub(crate) fn evaluate_system_jobs(&mut self) {
        for (j, spec) in self.scenario.jobs.iter().enumerate() {
            if spec.is_system() && self.jobs[j].status == JobStatus::Registered {
                self.enqueue_eval(JobId::from_index(j));
            }
        }
    }

    /// The key of a placement's slot in its job's `latest`: the index for a
    /// counted job, the node for a system job (whose allocations all have
    /// index 0).
    pub(crate) fn slot_key(&self, group: GroupRef, index: u32, node: NodeId) -> u32 {
        if self.scenario.jobs[group.job.index()].is_system() {
            node.index() as u32
        } else {
            index
        }
    }
}

/// What Nomad's system scheduler tracks of filtered placements, per group
/// of the job: its placements still queued (`queuedAllocs`), whether it
/// keeps an allocation on some node (`existingByTaskGroup`: the
/// reconciler's ignored allocations) and the filters met so far
/// (`filteredMetrics`).
struct Filtered {
    queued: Vec<u32>,
    kept: Vec<bool>,
    reasons: Vec<BTreeMap<FilterReason, u32>>,
}

impl Filtered {
    fn new(groups: usize) -> Filtered {
        Filtered {
            queued: vec![0; groups],
            kept: vec![false; groups],
            reasons: vec![BTreeMap::new(); groups],
        }
    }

    /// A placement of `group` was filtered out by `reason`; the group's
    /// failure once none of its placements is left (and, where
    /// `skips_kept`, it keeps no allocation elsewhere).
    fn note(
        &mut self,
        group: GroupRef,
        reason: FilterReason,
        skips_kept: bool,
        scenario: &crate::model::scenario::Scenario,
    ) -> Option<PlacementFailure> {
        let g = group.group_index();
        self.queued[g] = self.queued[g].saturating_sub(1);
        *self.reasons[g].entry(reason).or_default() += 1;
        if self.queued[g] > 0 || (skips_kept && self.kept[g]) {
            return None;
        }
        let mut failure = PlacementFailure::new(group, &self.reasons[g], scenario);
        failure.unplaced = 1;
        Some(failure)
    }
}

/// A node whose resources cannot take the allocation (Nomad's
/// ExhaustedNode), as opposed to one filtered out by a check.
fn exhausts(reason: &FilterReason) -> bool {
    matches!(
        reason,
        FilterReason::CpuExhausted | FilterReason::MemoryExhausted
    )
}
