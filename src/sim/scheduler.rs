//! The scheduler: one evaluation of one job. It reconciles what should run
//! with what does (missing, failed, lost, migrating and excess allocations)
//! and picks a node for each placement, one at a time, against a snapshot
//! of the cluster plus what the plan being built already proposes.

use std::collections::{BTreeMap, BTreeSet};

use super::claims::{write_claims_exhausted, write_schedulable};
use super::feasibility::{
    FilterReason, PlacementFailure, constraint_holds_at, plan_aware_claim_check, top_reason,
};
use super::hot::{self, GroupTally, Proposed};
use super::rank::{self, MAX_SKIP, SKIP_THRESHOLD};
use super::reschedule::{RESCHEDULE_WINDOW, followup_windows, reschedule_eligible};
use super::state::{AllocState, JobStatus};
use super::trace::{TraceKind, TraceRecord};
use super::{Event, Simulation};
use crate::model::access::{ClaimCounts, ClaimMode};
use crate::model::ids::{AllocId, GroupRef, JobId, NodeId, VolumeId};
use crate::model::release::MissingVolumes;
use crate::model::scenario::{
    Capability, Constraint, ConstraintTarget, GroupSpec, JobSpec, Scenario, SchedulerAlgorithm,
    VolumeSource,
};
use crate::model::time::Millis;

/// How many nodes ahead of the one being scored the scoring loop asks for
/// a node's record (`NodeTable::prefetch`): far enough for the load to
/// arrive before it is needed, near enough that it is still cached then.
const PREFETCH_AHEAD: usize = 4;

/// What a worker hands to the plan applier.
#[derive(Clone, Debug)]
pub struct Plan {
    pub job: JobId,
    /// How many times this evaluation was already retried after a rejection.
    pub attempt: u32,
    pub stops: Vec<AllocId>,
    pub placements: Vec<Placement>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.stops.is_empty() && self.placements.is_empty()
    }
}

#[derive(Clone, Debug)]
pub struct Placement {
    pub group: GroupRef,
    pub index: u32,
    pub node: NodeId,
    /// The volumes it mounts and their claim modes, if any: moved into the
    /// allocation (`volumes()`, `claim_modes()`; 8 bytes without volumes,
    /// as a plan can hold millions of placements).
    pub claims: Option<Box<super::state::VolumeClaims>>,
    /// The allocation this one replaces (failed, lost, stopped or migrating).
    pub previous: Option<AllocId>,
    /// It replaces a failed allocation under the reschedule policy.
    pub reschedule: bool,
    /// The job version it runs.
    pub version: u32,
    /// It replaces `previous` with a new version (a destructive update).
    pub destructive: bool,
    /// What the scheduler saw when it chose the node (only when tracing).
    pub seen: Option<Box<super::trace::PlacementSeen>>,
    /// The chosen node's final score (what a reconnect compares).
    pub score: f64,
    /// A canary of the job's new version, placed beside the slot's
    /// allocation rather than replacing it (reconcile computeCanaries).
    pub canary: bool,
}

/// A slot the reconciler wants filled.
pub(super) struct Want {
    pub(super) group: GroupRef,
    pub(super) index: u32,
    pub(super) previous: Option<AllocId>,
    pub(super) reschedule: bool,
    pub(super) destructive: bool,
    pub(super) canary: bool,
}

impl Want {
    /// A slot with no allocation: a fresh placement.
    pub(super) fn fresh(group: GroupRef, index: u32) -> Self {
        Want {
            group,
            index,
            previous: None,
            reschedule: false,
            destructive: false,
            canary: false,
        }
    }

    /// Replaces `previous` (stopped, lost, finished or migrating).
    pub(super) fn replacing(group: GroupRef, index: u32, previous: AllocId) -> Self {
        Want {
            previous: Some(previous),
            ..Want::fresh(group, index)
        }
    }

    /// Replaces the failed (or unknown) `previous` under the reschedule policy.
    pub(super) fn rescheduling(group: GroupRef, index: u32, previous: AllocId) -> Self {
        Want {
            reschedule: true,
            ..Want::replacing(group, index, previous)
        }
    }

    /// Replaces `previous` with the job's new version (a destructive update).
    pub(super) fn updating(group: GroupRef, index: u32, previous: AllocId) -> Self {
        Want {
            destructive: true,
            ..Want::replacing(group, index, previous)
        }
    }

    /// A canary of the new version, placed beside the slot's allocation.
    pub(super) fn canary(group: GroupRef, index: u32) -> Self {
        Want {
            canary: true,
            ..Want::fresh(group, index)
        }
    }
}

/// What the plan under construction already proposes, on top of the snapshot.
#[derive(Default)]
pub(super) struct PlanContext {
    /// Candidate nodes in this evaluation's shuffled order.
    order: Vec<NodeId>,
    /// Where the next placement starts looking (Nomad's iterator offset).
    offset: usize,
    /// CPU and memory the plan proposes, per node it proposes something
    /// on (a sparse set: see `NodeTable::proposal_slot`).
    proposals: Vec<Proposed>,
    /// Per group of the job (by group index), its allocations on each
    /// node: live ones, counted from the job's live allocations when the
    /// group is first scored, and the plan's.
    group_counts: Vec<GroupTally>,
    pub(super) claims: BTreeMap<VolumeId, ClaimCounts>,
    /// The mode the plan's first placement on each volume claims in.
    modes: BTreeMap<VolumeId, Capability>,
    node_volumes: BTreeMap<NodeId, BTreeSet<VolumeId>>,
    /// Nomad's EvalEligibility: whether the job's constraints, and each
    /// group's checks, passed on a computed class (absent: not yet known).
    /// Indexed by class, and by group then class (vectors: this is looked
    /// up for every node visited).
    job_classes: Vec<Option<bool>>,
    group_classes: Vec<Option<bool>>,
    /// Set when 1.2.6's wrapper ends the node iteration early.
    stop_iterating: bool,
    /// Spread, affinity and distinct_* state (only for jobs that have them).
    preferences: Option<Box<super::placement::Preferences>>,
    /// The limit a group with spread or affinity raised: Nomad's stack keeps
    /// it for the rest of the evaluation.
    raised_limit: Option<usize>,
    /// CPU and memory the plan's destructive-update stops free, per node.
    freed: BTreeMap<NodeId, (u64, u64)>,
    /// The final score of the node the last placement chose.
    chosen_score: f64,
    /// For each volume request of the placement being scored, the verdict
    /// of its node-independent checks (see `volume_verdict`), decided once
    /// by `prepare_volume_verdicts` instead of once per node.
    volume_verdicts: Vec<Result<(), FilterReason>>,
    /// Scratch for `select_node`'s picks and skips (kept for their capacity).
    taken: Vec<(NodeId, f64)>,
    skipped: Vec<(NodeId, f64)>,
}

/// A volume request with its source resolved for one allocation index.
pub(super) enum ResolvedVolume {
    Found(VolumeId, ClaimMode, Capability),
    Missing(String),
}

/// Nomad's computed node class (structs/node_class.go): nodes that agree on
/// datacenter, class and every non-unique attribute (drivers, CPU and
/// memory are attributes too) share one, as dense indices.
pub(super) fn computed_classes(scenario: &Scenario) -> Vec<u32> {
    let mut classes = BTreeMap::new();
    scenario
        .nodes
        .iter()
        .map(|node| {
            let attributes: Vec<(&String, &String)> = node
                .attributes
                .iter()
                .filter(|(key, _)| !key.starts_with("unique."))
                .collect();
            let key = (
                &node.datacenter,
                &node.node_class,
                attributes,
                node.drivers.0,
                node.cpu,
                node.memory,
            );
            let next = classes.len() as u32;
            *classes.entry(key).or_insert(next)
        })
        .collect()
}

/// A constraint on a unique attribute escapes the computed class: its
/// result cannot be cached per class.
fn escapes(constraints: &[Constraint]) -> bool {
    constraints.iter().any(|c| match &c.target {
        ConstraintTarget::NodeName => true,
        ConstraintTarget::Attribute(key) => key.starts_with("unique."),
        ConstraintTarget::Datacenter | ConstraintTarget::NodeClass | ConstraintTarget::Unset => {
            false
        }
    })
}

/// What scoring a node for one placement reads that does not depend on the
/// node: looked up once per placement instead of once per node visited.
/// The compiler cannot hoist these reads out of the scoring loop itself, as
/// the loop writes node records through `Cell`s.
pub(super) struct Ask<'a> {
    group: GroupRef,
    job_spec: &'a JobSpec,
    /// The group at the job's current version.
    group_spec: &'a GroupSpec,
    /// Whether the job's constraints, and the group's, escape the computed
    /// class (then its eligibility is not cached).
    job_escaped: bool,
    group_escaped: bool,
    /// The group's count, for the anti-affinity penalty.
    count: u32,
    /// Bin-pack or spread fitness from the two free-resource terms.
    fitness: fn(f64, f64) -> f64,
}

impl Simulation<'_> {
    /// The node-independent part of scoring `group`'s placements.
    pub(super) fn ask(&self, group: GroupRef) -> Ask<'_> {
        let job_spec = &self.scenario.jobs[group.job.index()];
        let job_state = &self.jobs[group.job.index()];
        let group_spec = &job_spec.groups_of(job_state.version)[group.group_index()];
        Ask {
            group,
            job_spec,
            group_spec,
            job_escaped: escapes(&job_spec.constraints),
            group_escaped: escapes(&group_spec.constraints),
            count: job_state.counts[group.group_index()],
            fitness: match self.scenario.cluster.scheduler_algorithm {
                SchedulerAlgorithm::Binpack => rank::binpack_from_terms,
                SchedulerAlgorithm::Spread => rank::spread_from_terms,
            },
        }
    }

    pub(super) fn schedule(&mut self, job: JobId, attempt: u32) -> Plan {
        let mut plan = Plan {
            job,
            attempt,
            stops: Vec::new(),
            placements: Vec::new(),
        };
        let status = self.jobs[job.index()].status;
        if status != JobStatus::Registered {
            plan.stops = self.live_allocs_of(job).collect();
            return plan;
        }
        if self.scenario.jobs[job.index()].is_system() {
            return self.schedule_system(plan);
        }
        let mut wants = self.reconcile(job, &mut plan.stops);
        // generic_sched.go computePlacements: destructive updates first (at
        // both tags), so their stops are discounted before other placements.
        if wants.iter().any(|w| w.destructive) {
            wants.sort_by_key(|w| !w.destructive);
        }
        if wants.is_empty() {
            // A complete evaluation with nothing to place has no placement
            // failures: Nomad's FSM untracks the job's blocked evaluation
            // (fsm.go handleUpsertedEval) and `nomad job status` shows none.
            self.note_placement_failures(job, BTreeMap::new());
            self.blocked.remove(&job);
            self.reconciled_deployment(job);
            return plan;
        }
        let order = self.candidate_nodes(job);
        let mut ctx = self.plan_context(job, order);
        // Zeroed by the last evaluation: fill_group_counts counts afresh,
        // into the same memory.
        ctx.group_counts = std::mem::take(&mut self.spare_group_counts);
        ctx.preferences = self.preferences(job, &plan.stops);
        let mut failures: BTreeMap<GroupRef, PlacementFailure> = BTreeMap::new();
        for want in wants {
            // generic_sched.go computePlacements: once a group failed to
            // place in this evaluation, its other placements are not tried,
            // only coalesced into the failure.
            if let Some(failure) = failures.get_mut(&want.group) {
                failure.unplaced += 1;
                self.blocked.insert(job);
                continue;
            }
            let volumes = self.resolve_volumes(want.group, want.index);
            // A rescheduled allocation avoids the nodes its predecessors failed on.
            let penalty = match want.previous {
                Some(previous) if want.reschedule => {
                    let failed = &self.allocs[previous.index()];
                    let mut nodes = failed.penalty_nodes().to_vec();
                    nodes.push(failed.node);
                    nodes
                }
                _ => Vec::new(),
            };
            if let (true, Some(previous)) = (want.destructive, want.previous) {
                // The stop is in the plan before the placement is tried, so
                // the old allocation's resources are free for the new one.
                let old = &self.allocs[previous.index()];
                let spec = &self.scenario.jobs[job.index()].groups_of(old.version)
                    [want.group.group_index()];
                let freed = ctx.freed.entry(old.node).or_default();
                freed.0 += spec.cpu;
                freed.1 += spec.memory;
            }
            match self.select_node(&mut ctx, want.group, &volumes, &penalty) {
                Ok(node) => {
                    let (volumes, claim_modes): (Vec<(VolumeId, ClaimMode)>, Vec<Capability>) =
                        volumes
                            .into_iter()
                            .map(|v| match v {
                                ResolvedVolume::Found(id, mode, claim) => ((id, mode), claim),
                                ResolvedVolume::Missing(_) => {
                                    unreachable!("a missing volume is infeasible")
                                }
                            })
                            .unzip();
                    let seen = self.placement_seen(
                        &ctx.claims,
                        &plan.placements,
                        (want.group, want.index),
                        Some(node),
                        volumes.iter().copied(),
                    );
                    self.propose(&mut ctx, node, want.group, &volumes, &claim_modes);
                    plan.placements.push(Placement {
                        group: want.group,
                        index: want.index,
                        node,
                        claims: super::state::VolumeClaims::boxed(volumes, claim_modes, 0),
                        previous: want.previous,
                        reschedule: want.reschedule,
                        version: self.jobs[job.index()].version,
                        destructive: want.destructive,
                        seen,
                        score: ctx.chosen_score,
                        canary: want.canary,
                    });
                }
                Err(filtered) => {
                    if let (true, Some(previous)) = (want.destructive, want.previous)
                        && !self.keeps_stop(previous, &volumes)
                    {
                        // generic_sched.go computePlacements: a destructive
                        // update that cannot be placed keeps the old one.
                        plan.stops.retain(|&s| s != previous);
                        let old = &self.allocs[previous.index()];
                        let spec = &self.scenario.jobs[job.index()].groups_of(old.version)
                            [want.group.group_index()];
                        if let Some(freed) = ctx.freed.get_mut(&old.node) {
                            freed.0 -= spec.cpu;
                            freed.1 -= spec.memory;
                        }
                    }
                    self.metrics.infeasible += 1;
                    self.blocked.insert(job);
                    let detail = top_reason(&filtered).describe(self.scenario);
                    failures
                        .entry(want.group)
                        .or_insert_with(|| {
                            PlacementFailure::new(want.group, &filtered, self.scenario)
                        })
                        .unplaced += 1;
                    let (group, index) = (want.group, want.index);
                    let seen = self.placement_seen(
                        &ctx.claims,
                        &plan.placements,
                        (group, index),
                        None,
                        volumes.iter().filter_map(|v| match v {
                            ResolvedVolume::Found(id, mode, _) => Some((*id, *mode)),
                            ResolvedVolume::Missing(_) => None,
                        }),
                    );
                    self.record(|t| {
                        TraceRecord::new(t, TraceKind::Infeasible)
                            .alloc(group, index)
                            .detail(detail)
                            .seen(seen.map(|s| vec![*s]).unwrap_or_default())
                    });
                }
            }
        }
        self.note_placement_failures(job, failures);
        if self.blocked.contains(&job) {
            let eligibility = self.class_eligibility(job, &ctx);
            self.blocked_classes.insert(job, eligibility);
        }
        self.spare_order = ctx.order;
        for tally in &mut ctx.group_counts {
            tally.reset();
        }
        self.spare_group_counts = ctx.group_counts;
        plan
    }

    /// An empty plan context for an evaluation of `job` over `order`.
    pub(super) fn plan_context(&self, job: JobId, order: Vec<NodeId>) -> PlanContext {
        PlanContext {
            order,
            job_classes: vec![None; self.class_count],
            group_classes: vec![
                None;
                self.class_count * self.scenario.jobs[job.index()].groups.len()
            ],
            ..PlanContext::default()
        }
    }

    /// The evaluation's class eligibility as a blocked evaluation keeps it
    /// (EvalEligibility.GetClasses: eligible for any group wins over
    /// ineligible; the job's constraints failing makes it ineligible), and
    /// whether a constraint escaped the classes (EvalEligibility.HasEscaped).
    pub(super) fn class_eligibility(
        &self,
        job: JobId,
        ctx: &PlanContext,
    ) -> (bool, Vec<Option<bool>>) {
        let spec = &self.scenario.jobs[job.index()];
        let count = self.class_count;
        let mut classes = vec![None; count];
        for group in ctx.group_classes.chunks(count.max(1)) {
            for (class, &seen) in classes.iter_mut().zip(group) {
                match seen {
                    Some(true) => *class = Some(true),
                    Some(false) if class.is_none() => *class = Some(false),
                    _ => {}
                }
            }
        }
        for (class, &seen) in classes.iter_mut().zip(&ctx.job_classes) {
            match seen {
                Some(true) if class.is_none() => *class = Some(true),
                Some(false) => *class = Some(false),
                _ => {}
            }
        }
        let escaped =
            escapes(&spec.constraints) || spec.groups.iter().any(|g| escapes(&g.constraints));
        (escaped, classes)
    }

    /// Keeps the failures of the latest evaluation of each group, as
    /// `nomad job status` shows them; a group placed in full has none.
    pub(super) fn note_placement_failures(
        &mut self,
        job: JobId,
        mut failures: BTreeMap<GroupRef, PlacementFailure>,
    ) {
        for g in 0..self.scenario.jobs[job.index()].groups.len() {
            let group = GroupRef::new(job, g);
            match failures.remove(&group) {
                Some(failure) => self.placement_failures.insert(group, failure),
                None => self.placement_failures.remove(&group),
            };
        }
    }

    pub(super) fn live_allocs_of(&self, job: JobId) -> impl Iterator<Item = AllocId> + '_ {
        let state = &self.jobs[job.index()];
        state
            .latest
            .iter()
            .flat_map(|slots| slots.values().copied())
            .chain(state.canaries.iter().copied())
            .chain(state.displaced.iter().copied())
            .filter(|&id| self.allocs[id.index()].is_live())
    }

    /// Decides, slot by slot, what must be stopped and what must be placed.
    fn reconcile(&mut self, job: JobId, stops: &mut Vec<AllocId>) -> Vec<Want> {
        self.resolve_reconnects(job, stops);
        let now = self.now();
        let spec = &self.scenario.jobs[job.index()];
        let mut wants = Vec::new();
        let mut followups = Vec::new();
        let mut stopping_later = Vec::new();
        for (g, group_spec) in spec.groups.iter().enumerate() {
            let group = GroupRef::new(job, g);
            let count = self.jobs[job.index()].counts[g];
            let slots: Vec<(u32, AllocId)> = self.jobs[job.index()].latest[g].iter().collect();
            // Scale-down: Nomad stops the highest indices.
            for &(_, id) in slots.iter().filter(|(index, _)| *index >= count) {
                if self.allocs[id.index()].is_live() {
                    stops.push(id);
                }
            }
            let latest = &self.jobs[job.index()].latest[g];
            let version = self.jobs[job.index()].version;
            let placing_before = wants.len();
            let mut outdated = Vec::new();
            let mut failed_untainted = Vec::new();
            for index in 0..count {
                let Some(&id) = latest.get(&index) else {
                    wants.push(Want::fresh(group, index));
                    continue;
                };
                let alloc = &self.allocs[id.index()];
                match alloc.state {
                    AllocState::Pulling
                    | AllocState::Claiming
                    | AllocState::Publishing
                    | AllocState::Running => {
                        if alloc.migrate {
                            stops.push(id);
                            wants.push(Want::replacing(group, index, id));
                        } else if alloc.version != version {
                            if spec.updates_in_place(alloc.version, version) {
                                // An in-place update: the allocation runs
                                // the new version as it is (and joins its
                                // deployment below).
                                self.allocs[id.index()].version = version;
                            } else {
                                outdated.push((index, id));
                            }
                        }
                    }
                    // A finished batch allocation is done.
                    AllocState::Complete if spec.is_batch() => {}
                    // A service should run until stopped: one that exits is
                    // replaced, like a lost or stopped allocation.
                    AllocState::Complete | AllocState::Lost | AllocState::Stopped => {
                        wants.push(Want::replacing(group, index, id));
                    }
                    // reconciler updateByReschedulable: now if due within
                    // 1s or this is the follow-up evaluation made for it;
                    // later (one follow-up evaluation) otherwise. An
                    // unknown allocation is replaced the same way, from
                    // the moment it became unknown (computeDisconnecting);
                    // it keeps running beside its replacement.
                    AllocState::Failed | AllocState::Unknown => {
                        let due = reschedule_eligible(
                            &group_spec.reschedule,
                            alloc.reschedule_history(),
                            alloc.failed_at(),
                        );
                        let followup_due = alloc.followup_at().is_some_and(|at| at <= now);
                        let now_due =
                            due.is_some_and(|due| followup_due || due <= now + RESCHEDULE_WINDOW);
                        // filterByRescheduleable keeps a failed allocation
                        // not rescheduled now among the untainted, which
                        // the destructive budget counts.
                        if !now_due && alloc.state == AllocState::Failed {
                            failed_untainted.push(id);
                        }
                        let Some(due) = due else {
                            continue;
                        };
                        if now_due {
                            wants.push(Want::rescheduling(group, index, id));
                        } else if alloc.followup_at().is_none() {
                            followups.push((id, due));
                        }
                    }
                }
            }
            // Destructive updates, lowest index first (computeDestructiveUpdates),
            // as many as the deployment allows: stop the old allocation and
            // place its replacement in the same plan.
            // Canaries first (computeCanaries): while the deployment waits
            // for them, nothing is updated and only replacements of lost or
            // failed allocations are placed.
            let canarying = self.reconcile_canaries(group, &outdated, &mut wants, stops);
            if canarying {
                let group_wants = wants.split_off(placing_before);
                wants.extend(
                    group_wants
                        .into_iter()
                        .filter(|w| w.canary || w.previous.is_some()),
                );
            }
            let placing = wants[placing_before..].iter().filter(|w| !w.canary).count();
            let budget = if canarying {
                0
            } else {
                self.destructive_budget(group, placing, &failed_untainted)
            };
            for (index, id) in outdated.into_iter().take(budget) {
                stops.push(id);
                wants.push(Want::updating(group, index, id));
            }
            self.join_in_place(group);
            // A lost allocation its client stops itself holds back the
            // group's placements until then (delayByStopAfter).
            if let Some((id, until)) = self.client_stop_pending(group) {
                wants.retain(|w| {
                    w.group != group || w.previous.is_some_and(|p| self.allocs[p.index()].migrate)
                });
                if self.allocs[id.index()].followup_at() != Some(until) {
                    stopping_later.push((id, until));
                }
            }
        }
        for (id, until) in stopping_later {
            self.allocs[id.index()].set_followup_at(Some(until));
            self.at(until, Event::RescheduleDue(job));
        }
        let dues: Vec<Millis> = followups.iter().map(|&(_, due)| due).collect();
        let windows = followup_windows(&dues);
        let mut evals = BTreeSet::new();
        for (&(id, _), &eval_at) in followups.iter().zip(&windows) {
            self.allocs[id.index()].set_followup_at(Some(eval_at));
            evals.insert(eval_at);
        }
        for eval_at in evals {
            self.at(eval_at, Event::RescheduleDue(job));
        }
        wants
    }

    /// Ready, eligible nodes in the job's datacenters, shuffled per evaluation
    /// (Nomad's random iterator) by the run's seeded stream.
    fn candidate_nodes(&mut self, job: JobId) -> Vec<NodeId> {
        let datacenters = &self.scenario.jobs[job.index()].datacenters;
        // Datacenters compared once per evaluation, not once per node.
        let in_job_dc = self.datacenters.of_job(datacenters);
        // Compact per-node arrays: listing 40,000 nodes reads 80 kB, not
        // every node's state.
        let schedulable = self.node_table.schedulable();
        // Every position below the kept count is written below, so the last
        // evaluation's list is reused as it is: cleared and refilled, it
        // cost a pass over every node (160 kB at 40,000 nodes) per
        // evaluation.
        let mut order = std::mem::take(&mut self.spare_order);
        order.resize(schedulable.len(), NodeId(0));
        // Branch-free: every node is written, and kept by advancing past it
        // (a filter's unpredictable branch costs more than the writes).
        let mut kept = 0;
        for (i, (&ready, &dc)) in schedulable
            .iter()
            .zip(self.datacenters.of_node())
            .enumerate()
        {
            order[kept] = NodeId::from_index(i);
            kept += usize::from(ready & in_job_dc[dc as usize]);
        }
        order.truncate(kept);
        self.shuffle_rng.shuffle(&mut order);
        order
    }

    /// The volumes allocation `index` of `group` mounts, with the modes it
    /// claims them in. Two requests for the same volume make one claim, a
    /// write claim if either request writes.
    pub(super) fn resolve_volumes(&self, group: GroupRef, index: u32) -> Vec<ResolvedVolume> {
        let spec = &self.scenario.jobs[group.job.index()].groups[group.group_index()];
        let mut resolved: Vec<ResolvedVolume> = Vec::with_capacity(spec.volumes.len());
        for request in &spec.volumes {
            let found = |id: VolumeId| {
                let volume = &self.scenario.volumes[id.index()];
                let (access_mode, attachment_mode) = request.modes_on(volume);
                // Registration refuses a request without an access mode; a
                // per_alloc volume it could not see falls back to its first
                // capability.
                let access_mode = access_mode.unwrap_or(volume.capabilities[0].access_mode);
                let claim = Capability {
                    access_mode,
                    attachment_mode,
                };
                ResolvedVolume::Found(id, request.mode, claim)
            };
            let volume = match &request.source {
                VolumeSource::Shared(id) => found(*id),
                VolumeSource::PerAlloc { base } => {
                    let name = format!("{base}[{index}]");
                    match self.scenario.volume_by_name.get(&name) {
                        Some(&id) => found(id),
                        None => ResolvedVolume::Missing(name),
                    }
                }
            };
            let duplicate = resolved.iter_mut().find_map(|seen| match (seen, &volume) {
                (ResolvedVolume::Found(a, mode, _), ResolvedVolume::Found(b, _, _)) if a == b => {
                    Some(mode)
                }
                _ => None,
            });
            match (duplicate, &volume) {
                (Some(mode), ResolvedVolume::Found(_, requested, _)) => {
                    *mode = (*mode).max(*requested)
                }
                _ => resolved.push(volume),
            }
        }
        resolved
    }

    /// The volumes Nomad's CSIVolumesByNodeID finds for an allocation of
    /// `group`: each request's source looked up by name as written. A
    /// `per_alloc` source is its base name, which names no volume (unless
    /// one is called that), so per_alloc volumes go uncounted.
    pub(super) fn counted_sources(&self, group: GroupRef) -> Vec<VolumeId> {
        let spec = &self.scenario.jobs[group.job.index()].groups[group.group_index()];
        let mut found: Vec<VolumeId> = spec
            .volumes
            .iter()
            .filter_map(|request| match &request.source {
                VolumeSource::Shared(id) => Some(*id),
                VolumeSource::PerAlloc { base } => self.scenario.volume_by_name.get(base).copied(),
            })
            .collect();
        found.sort_unstable();
        found.dedup();
        found
    }

    /// Nomad's stack for one placement: feasibility in order, then the limit
    /// iterator over bin-pack scores, then the best score (first on ties).
    fn select_node(
        &self,
        ctx: &mut PlanContext,
        group: GroupRef,
        volumes: &[ResolvedVolume],
        penalty: &[NodeId],
    ) -> Result<NodeId, BTreeMap<FilterReason, u32>> {
        let total = ctx.order.len();
        if total == 0 {
            return Err(BTreeMap::from([(FilterReason::NoNodes, 0)]));
        }
        let ask = self.ask(group);
        if let Some(prefs) = ctx.preferences.as_deref_mut() {
            // stack.go Select: spread or affinity scores max(count, 100) nodes.
            if self.prepare_group(prefs, group) {
                ctx.raised_limit = Some(rank::preference_limit(ask.count));
            }
        }
        let limit = ctx
            .raised_limit
            .unwrap_or_else(|| rank::score_limit(total, ask.job_spec.is_batch()));
        self.prepare_volume_verdicts(ctx, group, volumes);
        // Filter reasons counted in a short list (a handful of distinct
        // reasons, each met many times on a full cluster); the ordered map
        // is built only if the placement fails.
        let mut filtered: Vec<(FilterReason, u32)> = Vec::new();
        // The limit iterator's picks and skips, in visiting order, in
        // buffers the evaluation reuses for every placement.
        let mut taken = std::mem::take(&mut ctx.taken);
        let mut skipped = std::mem::take(&mut ctx.skipped);
        taken.clear();
        skipped.clear();
        let mut visited = 0;
        // Positions wrap by a comparison, not a division per node.
        let mut at = ctx.offset;
        let mut ahead = (ctx.offset + PREFETCH_AHEAD) % total;
        ctx.stop_iterating = false;
        while visited < total && taken.len() < limit && !ctx.stop_iterating {
            let node = ctx.order[at];
            let upcoming = ctx.order[ahead];
            self.node_table.prefetch(upcoming);
            if let Some(tally) = ctx.group_counts.get(group.group_index()) {
                hot::prefetch(tally.per_node(), upcoming.index());
            }
            if !volumes.is_empty() {
                // The CSI checker reads the node's plugins and their state.
                hot::prefetch(&self.scenario.nodes, upcoming.index());
                hot::prefetch(&self.nodes, upcoming.index());
            }
            at += 1;
            if at == total {
                at = 0;
            }
            ahead += 1;
            if ahead == total {
                ahead = 0;
            }
            visited += 1;
            match self.score_node(ctx, node, &ask, volumes, penalty) {
                Err(reason) => match filtered.iter_mut().find(|(seen, _)| *seen == reason) {
                    Some((_, count)) => *count += 1,
                    None => filtered.push((reason, 1)),
                },
                Ok(score) if score <= SKIP_THRESHOLD && skipped.len() < MAX_SKIP => {
                    skipped.push((node, score));
                }
                Ok(score) => taken.push((node, score)),
            }
        }
        ctx.offset = at;
        let room = limit.saturating_sub(taken.len());
        taken.extend(skipped.iter().take(room));
        let mut best: Option<(NodeId, f64)> = None;
        for &(node, score) in &taken {
            if best.is_none_or(|(_, top)| score > top) {
                best = Some((node, score));
            }
        }
        ctx.taken = taken;
        ctx.skipped = skipped;
        ctx.chosen_score = best.map_or(0.0, |(_, score)| score);
        best.map(|(node, _)| node)
            .ok_or_else(|| filtered.into_iter().collect())
    }

    /// Feasibility of one node, then its score. The checks run as Nomad's
    /// FeasibilityWrapper runs them: job constraints, then the group's
    /// drivers and constraints (both cached per computed class for the
    /// evaluation, unless a constraint escapes the class), then the CSI
    /// volumes (never cached), then resources.
    ///
    /// Inlined into the scoring loop, as is everything it calls for every
    /// node (`fill_group_counts`, `check_volumes`'s first line,
    /// `NodeTable::fitness`, `rank::final_score`): as calls, they took a
    /// fifth of C1M's instructions (8.41 G against 6.73 G inlined) in
    /// registers saved and restored for a few lines of work.
    #[inline(always)]
    pub(super) fn score_node(
        &self,
        ctx: &mut PlanContext,
        node: NodeId,
        ask: &Ask,
        volumes: &[ResolvedVolume],
        penalty: &[NodeId],
    ) -> Result<f64, FilterReason> {
        let Ask {
            group,
            job_spec,
            group_spec,
            job_escaped,
            group_escaped,
            ..
        } = *ask;
        // Read only where the class's eligibility is not yet known.
        let node_spec = || &self.scenario.nodes[node.index()];
        let class = self.node_table.class(node);
        let classes = self.class_count;
        match ctx.job_classes[class as usize] {
            Some(false) => return Err(FilterReason::ComputedClassIneligible),
            Some(true) => {}
            None => {
                let failed = job_spec
                    .constraints
                    .iter()
                    .position(|c| !constraint_holds_at(c, node_spec(), self.behaviour.release));
                if !job_escaped {
                    ctx.job_classes[class as usize] = Some(failed.is_none());
                }
                if let Some(index) = failed {
                    return Err(FilterReason::Constraint { group, index });
                }
            }
        }
        let cached = if group_escaped {
            None
        } else {
            ctx.group_classes[group.group_index() * classes + class as usize]
        };
        match cached {
            Some(false) => return Err(FilterReason::ComputedClassIneligible),
            Some(true) => {
                // The class passed before: only the CSI check runs. In
                // 1.2.6 a node that fails it ends the iteration.
                if let Err(reason) = self.check_volumes(ctx, node, volumes) {
                    ctx.stop_iterating = self.behaviour.release.class_early_return;
                    return Err(reason);
                }
            }
            None => {
                let problem = if !group_spec.drivers.is_subset(node_spec().drivers) {
                    Some(FilterReason::MissingDrivers)
                } else {
                    group_spec
                        .constraints
                        .iter()
                        .position(|c| !constraint_holds_at(c, node_spec(), self.behaviour.release))
                        .map(|i| FilterReason::Constraint {
                            group,
                            index: job_spec.constraints.len() + i,
                        })
                };
                if !group_escaped {
                    ctx.group_classes[group.group_index() * classes + class as usize] =
                        Some(problem.is_none());
                }
                if let Some(reason) = problem {
                    return Err(reason);
                }
                self.check_volumes(ctx, node, volumes)?;
            }
        }
        if ctx.preferences.is_some() {
            // distinct_hosts may look at every group of the job.
            for g in 0..job_spec.groups.len() {
                self.fill_group_counts(ctx, GroupRef::new(group.job, g));
            }
        }
        if let Some(prefs) = ctx.preferences.as_deref() {
            // The distinct_hosts and distinct_property iterators follow the
            // feasibility wrapper, before bin-packing.
            self.check_distinct(prefs, node, group, |g| {
                ctx.group_counts[g.group_index()].at(node)
            })?;
        }
        let (plan_cpu, plan_memory) = self
            .node_table
            .proposal_slot(node, &ctx.proposals)
            .map_or((0, 0), |slot| {
                (ctx.proposals[slot].cpu, ctx.proposals[slot].memory)
            });
        let (freed_cpu, freed_memory) = if ctx.freed.is_empty() {
            (0, 0)
        } else {
            ctx.freed.get(&node).copied().unwrap_or_default()
        };
        let (live_cpu, live_memory) = self.node_table.used(node);
        let used_cpu = (live_cpu + plan_cpu + group_spec.cpu).saturating_sub(freed_cpu);
        let used_memory =
            (live_memory + plan_memory + group_spec.memory).saturating_sub(freed_memory);
        // The node's capacity from its hot record (the spec's values): the
        // spec itself is read only on a class-cache miss.
        let (cpu, memory) = self.node_table.capacity(node);
        if used_cpu > cpu {
            return Err(FilterReason::CpuExhausted);
        }
        if used_memory > memory {
            return Err(FilterReason::MemoryExhausted);
        }

        let mut scores = [0.0; 5];
        let mut appended = 0;
        scores[appended] = self.node_table.fitness(node, used_cpu, used_memory, || {
            (ask.fitness)(
                self.free_terms.term(used_cpu, cpu),
                self.free_terms.term(used_memory, memory),
            )
        });
        appended += 1;
        let here = self.fill_group_counts(ctx, group).at(node);
        let collisions = here.live + here.proposed;
        if let Some(penalty) = rank::anti_affinity_penalty(collisions, ask.count) {
            scores[appended] = penalty;
            appended += 1;
        }
        if penalty.contains(&node) {
            scores[appended] = rank::RESCHEDULE_PENALTY;
            appended += 1;
        }
        if let Some(prefs) = ctx.preferences.as_deref_mut() {
            self.preference_scores(prefs, node, group, |score| {
                scores[appended] = score;
                appended += 1;
            });
        }
        Ok(rank::final_score(&scores[..appended]))
    }

    /// The CSI volume checker for every request of the allocation. 2.0.5
    /// reports every missing volume at once; 1.2.6 the first it meets, in
    /// its own words.
    ///
    /// Inlined for its first line, as most groups mount no volume (see
    /// `score_node`).
    #[inline(always)]
    fn check_volumes(
        &self,
        ctx: &PlanContext,
        node: NodeId,
        volumes: &[ResolvedVolume],
    ) -> Result<(), FilterReason> {
        if volumes.is_empty() {
            return Ok(());
        }
        self.check_mounted_volumes(ctx, node, volumes)
    }

    /// [`Self::check_volumes`] for a group that mounts volumes.
    fn check_mounted_volumes(
        &self,
        ctx: &PlanContext,
        node: NodeId,
        volumes: &[ResolvedVolume],
    ) -> Result<(), FilterReason> {
        let missing: Vec<&str> = volumes
            .iter()
            .filter_map(|v| match v {
                ResolvedVolume::Missing(name) => Some(name.as_str()),
                ResolvedVolume::Found(..) => None,
            })
            .collect();
        if !missing.is_empty() {
            return Err(match self.behaviour.release.missing_volumes {
                MissingVolumes::First => {
                    FilterReason::CsiVolumeMissingLegacy(missing[0].to_string())
                }
                MissingVolumes::All => FilterReason::CsiVolumeMissing(missing.join(", ")),
            });
        }
        for (checked, volume) in volumes.iter().enumerate() {
            if let ResolvedVolume::Found(id, _, _) = volume {
                self.check_volume(ctx, node, checked, *id, &volumes[..checked])?;
            }
        }
        Ok(())
    }

    /// Nomad's CSI volume checker, in its order, with the claim check the
    /// policy prescribes.
    #[allow(clippy::too_many_arguments)]
    fn check_volume(
        &self,
        ctx: &PlanContext,
        node: NodeId,
        index: usize,
        volume: VolumeId,
        earlier: &[ResolvedVolume],
    ) -> Result<(), FilterReason> {
        let volume_spec = &self.scenario.volumes[volume.index()];
        let node_spec = &self.scenario.nodes[node.index()];
        let node_state = &self.nodes[node.index()];
        let plugin = volume_spec.plugin;
        let Some(slot) = node_spec
            .csi_plugins
            .iter()
            .position(|p| p.plugin == plugin)
        else {
            return Err(FilterReason::CsiPluginMissing { plugin, node });
        };
        if !node_state.plugin_present[slot] {
            return Err(FilterReason::CsiPluginMissing { plugin, node });
        }
        if !node_state.plugin_healthy[slot] {
            return Err(FilterReason::CsiPluginUnhealthy { plugin, node });
        }
        let max_volumes = node_spec.csi_plugins[slot].max_volumes;
        if max_volumes > 0
            && !self.attach_slot_free(ctx, node, volume, earlier, max_volumes as usize)
        {
            return Err(FilterReason::CsiPluginMaxVolumes { plugin, node });
        }
        if self.behaviour.release.checks_topology
            && !volume_spec.topologies.is_empty()
            && !volume_spec.topologies.contains(&node_spec.topology)
        {
            return Err(FilterReason::CsiTopology);
        }
        // What follows depends on the volume and the plan, not the node:
        // decided once per placement (`volume_verdicts`).
        ctx.volume_verdicts[index].clone()
    }

    /// Decides `volume_verdicts` for the placement about to be scored: the
    /// plan and the volumes do not change while its nodes are scored.
    pub(super) fn prepare_volume_verdicts(
        &self,
        ctx: &mut PlanContext,
        group: GroupRef,
        volumes: &[ResolvedVolume],
    ) {
        let mut verdicts = std::mem::take(&mut ctx.volume_verdicts);
        verdicts.clear();
        verdicts.extend(volumes.iter().map(|v| match v {
            ResolvedVolume::Found(id, mode, claim) => {
                self.volume_verdict(ctx, group, *id, *mode, *claim)
            }
            // Never asked for: a missing volume fails every node first.
            ResolvedVolume::Missing(_) => Ok(()),
        }));
        ctx.volume_verdicts = verdicts;
    }

    /// The checks of a volume request that do not depend on the node, in
    /// Nomad's order (they follow the node's plugin and topology checks):
    /// what `check_volume` answers for every node that passes those.
    fn volume_verdict(
        &self,
        ctx: &PlanContext,
        group: GroupRef,
        volume: VolumeId,
        mode: ClaimMode,
        claim: Capability,
    ) -> Result<(), FilterReason> {
        let volume_spec = &self.scenario.volumes[volume.index()];
        let plugin = volume_spec.plugin;
        // A volume whose plugin needs a controller and has no healthy one
        // is not Schedulable: ReadSchedulable and WriteSchedulable fail.
        if self.controller_missing(plugin) {
            return Err(match mode {
                ClaimMode::Read => FilterReason::CsiNoReaderClaims(volume),
                ClaimMode::Write => FilterReason::CsiReadOnly(volume),
            });
        }
        let state = &self.volumes[volume.index()];
        if mode == ClaimMode::Write && !write_schedulable(state.claimed_mode, volume_spec) {
            return Err(FilterReason::CsiReadOnly(volume));
        }
        if self.behaviour.plan_aware_claims {
            // Every user of a volume claims in one mode, so whichever claims
            // first, the mode the checks assumed is the mode the volume gets.
            let pinned = state.pinned_mode().or(ctx.modes.get(&volume).copied());
            if pinned.is_some_and(|p| p != claim) {
                return Err(FilterReason::CsiModeConflict(volume));
            }
            let proposed = ctx.claims.get(&volume).copied().unwrap_or_default();
            return plan_aware_claim_check(
                volume,
                claim.access_mode,
                state.plan_aware_counts().plus(proposed),
                mode,
            );
        }
        // Nomad's own check (the same at both releases): readers only need a
        // schedulable volume; a writer, once the write claims are used up,
        // is refused only beside writers of another job.
        if mode == ClaimMode::Write
            && write_claims_exhausted(state.claimed_mode, state.ledger_counts)
            && state.other_job_writes(group.job)
        {
            return Err(FilterReason::CsiNoWriterClaims(volume));
        }
        Ok(())
    }

    /// Whether `node` can take `volume` under its plugin's `max_volumes`.
    /// Nomad counts the volumes CSIVolumesByNodeID finds there (see
    /// `NodeState::counted_volumes`) and refuses at the limit, even for a
    /// volume already attached. Plan-aware counts every volume that is or
    /// will be attached (claimed, mounted by live allocations, proposed by
    /// the plan, and this allocation's own earlier volumes) and refuses only
    /// if `volume` would push the node past the limit.
    fn attach_slot_free(
        &self,
        ctx: &PlanContext,
        node: NodeId,
        volume: VolumeId,
        earlier: &[ResolvedVolume],
        max_volumes: usize,
    ) -> bool {
        let plugin = self.scenario.volumes[volume.index()].plugin;
        let state = &self.nodes[node.index()];
        if !self.behaviour.plan_aware_claims {
            return self.count_of_plugin(state.counted_volumes.keys(), plugin) < max_volumes;
        }
        let mut attached = state.held_or_promised_volumes();
        attached.extend(ctx.node_volumes.get(&node).into_iter().flatten().copied());
        attached.extend(earlier.iter().filter_map(|v| match v {
            ResolvedVolume::Found(id, _, _) => Some(*id),
            ResolvedVolume::Missing(_) => None,
        }));
        attached.insert(volume);
        self.count_of_plugin(attached.iter(), plugin) <= max_volumes
    }

    /// `group`'s allocations per node for this evaluation, counted from
    /// the group's live allocations the first time they are asked for.
    /// Every scoring asks, so the lookup is inlined (see `score_node`).
    #[inline(always)]
    fn fill_group_counts<'c>(
        &self,
        ctx: &'c mut PlanContext,
        group: GroupRef,
    ) -> &'c mut GroupTally {
        let g = group.group_index();
        if !ctx.group_counts.get(g).is_some_and(GroupTally::is_counted) {
            self.count_group(ctx, group);
        }
        &mut ctx.group_counts[g]
    }

    /// Counts `group`'s live allocations per node into its tally.
    #[cold]
    fn count_group(&self, ctx: &mut PlanContext, group: GroupRef) {
        let g = group.group_index();
        if ctx.group_counts.len() <= g {
            ctx.group_counts.resize_with(g + 1, GroupTally::default);
        }
        ctx.group_counts[g].count_live(&self.live, group, self.nodes.len());
    }

    pub(super) fn propose(
        &self,
        ctx: &mut PlanContext,
        node: NodeId,
        group: GroupRef,
        volumes: &[(VolumeId, ClaimMode)],
        claim_modes: &[Capability],
    ) {
        let spec = &self.scenario.jobs[group.job.index()]
            .groups_of(self.jobs[group.job.index()].version)[group.group_index()];
        self.node_table
            .propose(node, &mut ctx.proposals, spec.cpu, spec.memory);
        self.fill_group_counts(ctx, group).propose(node);
        if let Some(prefs) = ctx.preferences.as_deref_mut() {
            self.note_proposed(prefs, node, group);
        }
        for (&(volume, mode), &claim) in volumes.iter().zip(claim_modes) {
            ctx.claims.entry(volume).or_default().add(mode);
            ctx.modes.entry(volume).or_insert(claim);
            ctx.node_volumes.entry(node).or_default().insert(volume);
        }
    }
}
