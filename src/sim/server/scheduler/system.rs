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
//! - a live allocation of an older version of the job, on a node it may
//!   stay on, is updated (the update bucket): in place when its group's
//!   tasks are as they were (`JobSpec::updates_in_place`, Nomad's
//!   `tasksUpdated` in `inplaceUpdate`), else destructively: stopped and
//!   replaced on the same node (`evictAndPlace`), as many as the
//!   release's limit allows (see `limit_system_updates`); the rest wait
//!   for a later evaluation. A sysbatch allocation that already ran is
//!   run again when its group changed destructively.
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
use crate::model::scenario::{Capability, JobKind, UpdateStrategy};
use crate::model::time::Millis;
use crate::sim::server::scheduler::feasibility::{FilterReason, PlacementFailure};
use crate::sim::server::scheduler::plan::{Placement, PlacementKind, Plan, ResolvedVolume};
use crate::sim::server::scheduler::reconcile::map_order;
use crate::sim::server::scheduler::select::Rejection;
use crate::sim::simulation::{Event, Simulation};
use crate::sim::state::alloc_parts::VolumeClaims;
use crate::sim::state::store::{JobStatus, NodeStatus};
use crate::sim::trace::{TraceKind, TraceRecord};

/// Nomad names every system allocation `<job>.<group>[0]`.
pub(crate) const SYSTEM_ALLOC_INDEX: u32 = 0;

impl Simulation<'_> {
    /// One evaluation of a registered system or sysbatch job.
    pub(crate) fn schedule_system(&mut self, mut plan: Plan) -> Plan {
        let job = plan.job;
        let (wants, mut filtered) = self.diff_system(&mut plan);
        let version = self.jobs[job.index()].version;
        if wants.is_empty() {
            self.note_placement_failures(&plan, BTreeMap::new());
            self.reconciled_deployment(job);
            return plan;
        }
        let mut ctx = self.plan_context(job, Vec::new());
        // ProposedAllocs: what the plan stops frees its node for the
        // plan's placements (a destructive update's replacement).
        for &stop in &plan.stops {
            self.free_stopped(&mut ctx, stop, true);
        }
        let mut failures: BTreeMap<GroupRef, PlacementFailure> = BTreeMap::new();
        // Ready nodes per datacenter (s.nodesByDC), counted at the first
        // exhausted node.
        let mut ready_by_dc: Option<Vec<u32>> = None;
        let resets_eligibility = self.behaviour.release.system_resets_eligibility;
        for (group, node, kind) in wants {
            if resets_eligibility {
                ctx.job_classes.fill(None);
                ctx.group_classes.fill(None);
            }
            let volumes = self.resolve_volumes(group, SYSTEM_ALLOC_INDEX);
            self.prepare_volume_verdicts(&mut ctx, group, &volumes);
            let ask = self.ask(group);
            ctx.alloc_index = SYSTEM_ALLOC_INDEX;
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
                        kind,
                        version,
                        seen,
                        // One allocation per node: no replacement to weigh.
                        score: 0.0,
                    });
                }
                // Filtered nodes are not reported, only left out, unless
                // they are all the group's placements.
                Err(reason) if !exhausts(&reason) => {
                    let skips_kept = self.behaviour.release.system_filtered_report_skips_kept;
                    let class = self.node_classes.of(self.node_table.class(node));
                    if let Some(merged) = filtered.note(group, reason, class, skips_kept) {
                        let mut failure = self.failure_from(group, merged, None);
                        failure.unplaced = 1;
                        self.report_filtered_group(node, failure, &mut failures);
                    }
                }
                Err(reason) => {
                    self.metrics.infeasible += 1;
                    self.blocked.insert(job);
                    let detail = reason.describe(self.scenario);
                    // The group's first exhausted node's metric; later
                    // ones are coalesced (CoalescedFailures).
                    let failure = failures.entry(group).or_insert_with(|| {
                        let ready = ready_by_dc.get_or_insert_with(|| self.system_ready_by_dc(job));
                        let class = self.node_classes.of(self.node_table.class(node));
                        self.failure_from(group, &exhausted_node(reason, class), Some(ready))
                    });
                    failure.unplaced += 1;
                    self.record(|t| {
                        TraceRecord::new(t, TraceKind::Infeasible)
                            .alloc(group, SYSTEM_ALLOC_INDEX)
                            .node(node)
                            .detail(detail)
                    });
                }
            }
        }
        // A group's metric is final only here (a filtered group's merge may
        // replace an exhausted node's): one row each, as the generic
        // scheduler writes at its group's first failure.
        for (&group, failure) in &failures {
            let lines = failure.metric.lines().join("; ");
            self.record(|t| {
                TraceRecord::new(t, TraceKind::PlacementFailure)
                    .group(group)
                    .detail(lines)
            });
        }
        self.note_placement_failures(&plan, failures);
        if self.blocked.contains(&job) {
            let eligibility = self.class_eligibility(job, &ctx);
            self.blocked_classes.insert(job, eligibility);
        }
        plan
    }

    /// The reconciler's diff of the job's allocations with the nodes
    /// (`diffSystemAllocs`), and the updates `evictAndPlace` lets through:
    /// the stops go in `plan`; returns the placements in the order they
    /// are tried and the group tallies `Filtered` starts from.
    fn diff_system(
        &mut self,
        plan: &mut Plan,
    ) -> (Vec<(GroupRef, NodeId, PlacementKind)>, Filtered) {
        let job = plan.job;
        let spec = &self.scenario.jobs[job.index()];
        let sysbatch = spec.kind == JobKind::Sysbatch;
        let version = self.jobs[job.index()].version;
        let mut wants: Vec<(GroupRef, NodeId, PlacementKind)> = Vec::new();
        let mut in_place: Vec<AllocId> = Vec::new();
        let mut filtered = Filtered::new(spec.groups.len());
        // readyNodesInDCsAndPool: a node outside the job's pool is not the
        // job's, as one outside its datacenters is not.
        let in_pool = self.job_pools(job);
        for g in 0..spec.groups.len() {
            let group = GroupRef::new(job, g);
            let wanted = self.jobs[job.index()].counts[g] > 0;
            let slots = &self.jobs[job.index()].latest[g];
            for (n, node_spec) in self.scenario.nodes.iter().enumerate() {
                let node = NodeId::from_index(n);
                let state = &self.nodes[n];
                let in_dcs = spec.datacenters.contains(&node_spec.datacenter)
                    && in_pool[self.node_pools.of_node()[n] as usize];
                let existing = slots.get(&(n as u32)).copied();
                match existing.map(|id| (id, &self.allocs[id.index()])) {
                    Some((id, alloc)) if alloc.is_live() => {
                        let ready = state.status == NodeStatus::Ready;
                        if !wanted || alloc.migrate || (ready && state.eligible && !in_dcs) {
                            plan.stops.push(id);
                        } else if alloc.version != version && state.schedulable() && in_dcs {
                            if spec.updates_in_place(g, alloc.version, version) {
                                in_place.push(id);
                                filtered.kept[g] = true;
                            } else {
                                wants.push((group, node, PlacementKind::Updates(id)));
                            }
                        } else {
                            filtered.kept[g] = true;
                        }
                    }
                    previous => {
                        if !wanted || !state.schedulable() || !in_dcs {
                            continue;
                        }
                        if sysbatch && let Some((id, old)) = previous {
                            // Ran already: left alone (the Ignore bucket)
                            // unless the job changed since, when it runs
                            // again (a terminal allocation's destructive
                            // update stops nothing).
                            if old.version == version {
                                filtered.kept[g] = true;
                            } else if spec.updates_in_place(g, old.version, version) {
                                in_place.push(id);
                                filtered.kept[g] = true;
                            } else {
                                wants.push((group, node, PlacementKind::Replaces(id)));
                                filtered.queued[g] += 1;
                            }
                            continue;
                        }
                        let kind = previous
                            .map_or(PlacementKind::Fresh, |(id, _)| PlacementKind::Replaces(id));
                        wants.push((group, node, kind));
                        filtered.queued[g] += 1;
                    }
                }
            }
        }
        if wants.len() > 1 {
            self.order_system_placements(job, &mut wants);
        }
        self.limit_system_updates(job, &mut wants);
        for id in in_place {
            self.allocs[id.index()].version = version;
        }
        if self.behaviour.release.system_deployments {
            for g in 0..spec.groups.len() {
                self.join_in_place(GroupRef::new(job, g));
            }
        }
        // evictAndPlace: each destructive update's stop goes in the plan
        // now, its placement after the others.
        if wants.iter().any(|w| w.2.is_update()) {
            wants.sort_by_key(|w| w.2.is_update());
        }
        for &(group, _, kind) in &wants {
            if let PlacementKind::Updates(id) = kind {
                plan.stops.push(id);
                filtered.queued[group.group_index()] += 1;
            }
        }
        (wants, filtered)
    }

    /// Nomad's order of a system evaluation's placements (1.2.6 util.go
    /// `diffSystemAllocs`, 2.0.5 reconciler/reconcile_node.go `Compute`,
    /// the same): it ranges over a Go map of nodes (those holding a live
    /// allocation of the job, inserted in allocation-ID order, then the
    /// ready nodes in node-ID order), and on each node over a map of the
    /// job's allocation names (`materializeTaskGroups`: the groups with a
    /// count, in file order), each range starting where Go's map order
    /// puts it ([`map_order`]). Allocation and node IDs are random UUIDs
    /// in Nomad: a random order of the allocations, and a node order drawn
    /// once per run (`node_id_order`).
    fn order_system_placements(
        &mut self,
        job: JobId,
        wants: &mut [(GroupRef, NodeId, PlacementKind)],
    ) {
        let spec = &self.scenario.jobs[job.index()];
        let state = &self.jobs[job.index()];
        let mut holding: Vec<usize> = state
            .latest
            .iter()
            .flat_map(|slots| slots.iter())
            .filter(|(_, id)| self.allocs[id.index()].is_live())
            .map(|(node, _)| node as usize)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        self.group_rng.shuffle(&mut holding);
        if self.node_id_order.is_empty() {
            let mut order: Vec<u32> = (0..self.scenario.nodes.len() as u32).collect();
            self.group_rng.shuffle(&mut order);
            self.node_id_order = order;
        }
        let mut node_rank = vec![u32::MAX; self.scenario.nodes.len()];
        for &n in &holding {
            node_rank[n] = 0;
        }
        let mut ready: Vec<usize> = self
            .node_id_order
            .iter()
            .map(|&n| n as usize)
            .filter(|&n| {
                node_rank[n] == u32::MAX
                    && self.nodes[n].schedulable()
                    && spec
                        .datacenters
                        .contains(&self.scenario.nodes[n].datacenter)
            })
            .collect();
        holding.append(&mut ready);
        let visit = map_order(holding, &mut self.group_rng);
        for (rank, &n) in visit.iter().enumerate() {
            node_rank[n] = rank as u32;
        }
        // Each node's range over the allocation names, drawn where it
        // decides something: on a node with two placements or more.
        let required: Vec<usize> = (0..spec.groups.len())
            .filter(|&g| state.counts[g] > 0)
            .collect();
        let mut per_node: BTreeMap<u32, u32> = BTreeMap::new();
        for (_, node, _) in wants.iter() {
            *per_node.entry(node_rank[node.index()]).or_default() += 1;
        }
        let mut group_rank: BTreeMap<(u32, usize), usize> = BTreeMap::new();
        for (&rank, _) in per_node.iter().filter(|(_, n)| **n > 1) {
            for (i, g) in map_order(required.clone(), &mut self.group_rng)
                .into_iter()
                .enumerate()
            {
                group_rank.insert((rank, g), i);
            }
        }
        wants.sort_by_key(|(group, node, _)| {
            let rank = node_rank[node.index()];
            let g = group.group_index();
            (rank, group_rank.get(&(rank, g)).copied().unwrap_or(g))
        });
    }

    /// How many of the evaluation's destructive updates (`wants` in visit
    /// order) it makes, the others left for a later evaluation
    /// (`evictAndPlace`'s limit). A sysbatch job has no update strategy
    /// (Nomad's validation refuses one: "does not allow update block"):
    /// all at once. Without the release's system deployments (1.2.6), the
    /// job's `max_parallel` when its `update` is rolling (`max_parallel`
    /// and `stagger` above 0), over all its groups, and an evaluation that
    /// reached it makes the next one `stagger` later (NextRollingEval);
    /// otherwise all. With them (2.0.5), each group's `max_parallel`, else
    /// the job's (api Job.Canonicalize's default of 1 when the job has no
    /// `update` block; a 0 is all), less the deployment's allocations not
    /// yet healthy (those it found unhealthy do not count); the deployment
    /// watcher's evaluations go on.
    fn limit_system_updates(
        &mut self,
        job: JobId,
        wants: &mut Vec<(GroupRef, NodeId, PlacementKind)>,
    ) {
        let spec = &self.scenario.jobs[job.index()];
        if spec.kind != JobKind::System || !wants.iter().any(|w| w.2.is_update()) {
            return;
        }
        let groups = spec.groups.len();
        let limits: Vec<Option<usize>> = if self.behaviour.release.system_deployments {
            let job_limit = match spec.job_update {
                None => Some(UpdateStrategy::default().max_parallel as usize),
                Some(u) => (u.max_parallel > 0).then_some(u.max_parallel as usize),
            };
            (0..groups)
                .map(|g| {
                    let group = GroupRef::new(job, g);
                    let limit = self.update_strategy(group).map(|u| u.max_parallel as usize);
                    limit
                        .or(job_limit)
                        .map(|l| l.saturating_sub(self.system_updates_in_flight(group)))
                })
                .collect()
        } else {
            let Some(rolling) = spec
                .job_update
                .filter(|u| u.max_parallel > 0 && u.stagger > Millis::ZERO)
            else {
                return;
            };
            // One limit for the whole job.
            vec![Some(rolling.max_parallel as usize)]
        };
        let mut left = limits;
        let before = wants.len();
        wants.retain(|&(group, _, kind)| {
            if !kind.is_update() {
                return true;
            }
            let slot = if left.len() == 1 {
                0
            } else {
                group.group_index()
            };
            match &mut left[slot] {
                None => true,
                Some(0) => false,
                Some(n) => {
                    *n -= 1;
                    true
                }
            }
        });
        if wants.len() < before
            && !self.behaviour.release.system_deployments
            && let Some(u) = spec.job_update
        {
            // A delayed evaluation, as a reschedule's follow-up is.
            self.at(self.now() + u.stagger, Event::RescheduleDue(job));
        }
    }

    /// Live allocations of `group` its deployment placed (or updated in
    /// place) and has not yet found healthy or unhealthy.
    fn system_updates_in_flight(&self, group: GroupRef) -> usize {
        let state = &self.jobs[group.job.index()];
        let Some(seq) = state
            .deployment
            .as_ref()
            .filter(|d| d.version == state.version)
            .map(|d| d.seq)
        else {
            return 0;
        };
        state.latest[group.group_index()]
            .values()
            .map(|id| &self.allocs[id.index()])
            .filter(|a| a.is_live() && a.deployment.get() == Some(seq) && a.deploy_health.is_none())
            .count()
    }

    /// Ready nodes per datacenter of the job's (readyNodesInDCs' count,
    /// the system scheduler's `nodesByDC`).
    fn system_ready_by_dc(&self, job: JobId) -> Vec<u32> {
        let spec = &self.scenario.jobs[job.index()];
        let ready: Vec<NodeId> = (0..self.scenario.nodes.len())
            .filter(|&n| {
                self.nodes[n].schedulable()
                    && spec
                        .datacenters
                        .contains(&self.scenario.nodes[n].datacenter)
            })
            .map(NodeId::from_index)
            .collect();
        self.ready_by_datacenter(&ready)
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
/// reconciler's ignored allocations) and the filter metrics merged over
/// its filtered nodes so far (`filteredMetrics`, `mergeNodeFiltered`:
/// nodes evaluated, class and constraint counts; never NodesAvailable).
struct Filtered {
    queued: Vec<u32>,
    kept: Vec<bool>,
    merged: Vec<Rejection>,
}

impl Filtered {
    fn new(groups: usize) -> Filtered {
        Filtered {
            queued: vec![0; groups],
            kept: vec![false; groups],
            merged: vec![Rejection::default(); groups],
        }
    }

    /// A placement of `group` was filtered out by `reason` on a node of
    /// `class`; the group's merged metrics once none of its placements is
    /// left (and, where `skips_kept`, it keeps no allocation elsewhere).
    fn note(
        &mut self,
        group: GroupRef,
        reason: FilterReason,
        class: Option<u32>,
        skips_kept: bool,
    ) -> Option<&Rejection> {
        let g = group.group_index();
        self.queued[g] = self.queued[g].saturating_sub(1);
        let merged = &mut self.merged[g];
        *merged.filtered.entry(reason).or_default() += 1;
        merged.evaluated += 1;
        if let Some(class) = class {
            match merged.classes.iter_mut().find(|(c, ..)| *c == class) {
                Some((_, filtered, _)) => *filtered += 1,
                None => merged.classes.push((class, 1, 0)),
            }
        }
        if self.queued[g] > 0 || (skips_kept && self.kept[g]) {
            return None;
        }
        Some(&self.merged[g])
    }
}

/// One exhausted node's Select metric: the node evaluated and exhausted,
/// counted under its class when it has one (AllocMetric.ExhaustedNode).
fn exhausted_node(reason: FilterReason, class: Option<u32>) -> Rejection {
    Rejection {
        filtered: BTreeMap::from([(reason, 1)]),
        evaluated: 1,
        classes: class.map(|c| (c, 0, 1)).into_iter().collect(),
    }
}

/// A node whose resources cannot take the allocation (Nomad's
/// ExhaustedNode), as opposed to one filtered out by a check.
fn exhausts(reason: &FilterReason) -> bool {
    crate::sim::server::scheduler::feasibility::is_exhausted(reason)
}
