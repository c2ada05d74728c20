//! The scheduler: one evaluation of one job. It reconciles what should run
//! with what does (missing, failed, lost, migrating and excess allocations)
//! and picks a node for each placement, one at a time, against a snapshot
//! of the cluster plus what the plan being built already proposes.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use crate::model::access::ClaimMode;
use crate::model::ids::{AllocId, GroupRef, JobId, NodeId, VolumeId};
use crate::model::scenario::{ALL_NODE_POOLS, Capability, SchedulerAlgorithm};
use crate::sim::server::scheduler::classes::escapes;
use crate::sim::server::scheduler::context::{Ask, HostCheck, PlanContext};
use crate::sim::server::scheduler::feasibility::{PlacementFailure, top_reason};
use crate::sim::server::scheduler::plan::{Placement, PlacementKind, Plan, ResolvedVolume, Want};
use crate::sim::server::scheduler::rank;
use crate::sim::server::scheduler::select::Rejection;
use crate::sim::simulation::{FirstPlan, Simulation};
use crate::sim::state::alloc_parts::VolumeClaims;
use crate::sim::state::store::JobStatus;
use crate::sim::trace::{TraceKind, TraceRecord};

impl Simulation<'_> {
    /// The node-independent part of scoring `group`'s placements.
    pub(crate) fn ask(&self, group: GroupRef) -> Ask<'_> {
        let job_spec = &self.scenario.jobs[group.job.index()];
        let job_state = &self.jobs[group.job.index()];
        let group_spec = &job_spec.groups_of(job_state.version)[group.group_index()];
        Ask {
            group,
            job_spec,
            group_spec,
            job_escaped: escapes(&job_spec.constraints),
            // From #28275 (2.0.5) a group that mounts a CSI volume escapes
            // its computed class (EvalEligibility.SetJob).
            group_escaped: escapes(&group_spec.constraints)
                || (self.behaviour.release.unblocks_on_volume_register
                    && !group_spec.volumes.is_empty()),
            count: job_state.counts[group.group_index()],
            reserved: self.reserves(group_spec),
            fitness: match self.scenario.cluster.scheduler_algorithm {
                SchedulerAlgorithm::Binpack => rank::binpack_from_terms,
                SchedulerAlgorithm::Spread => rank::spread_from_terms,
            },
            host_check: if group_spec.host_volumes.is_empty() {
                HostCheck::None
            } else if self.behaviour.release.host_volumes_class_cached {
                HostCheck::PerClass
            } else {
                HostCheck::PerNode
            },
        }
    }

    pub(crate) fn schedule(&mut self, job: JobId, attempt: u32) -> Plan {
        let mut plan = Plan {
            job,
            attempt,
            stops: Vec::new(),
            placements: Vec::new(),
        };
        let status = self.jobs[job.index()].status;
        if status != JobStatus::Registered {
            plan.stops = self.live_allocs_of(job);
            return plan;
        }
        if self.scenario.jobs[job.index()].is_system() {
            return self.schedule_system(plan);
        }
        let mut wants = self.reconcile(job, &mut plan.stops);
        // generic_sched.go computePlacements: destructive updates first (at
        // both tags), so their stops are discounted before other placements.
        if wants.iter().any(|w| w.kind.is_update()) {
            wants.sort_by_key(|w| !w.kind.is_update());
        }
        if wants.is_empty() {
            // A complete evaluation with nothing to place has no placement
            // failures: Nomad's FSM untracks the job's blocked evaluation
            // (fsm.go handleUpsertedEval) and `nomad job status` shows none.
            self.note_placement_failures(&plan, BTreeMap::new());
            self.blocked.remove(&job);
            self.reconciled_deployment(job);
            return plan;
        }
        let order = self.candidate_nodes(job);
        let mut ctx = self.plan_context(job, order);
        // Nomad's ProposedAllocs (context.go): a node's allocations less the
        // plan's stops (NodeUpdate) plus its placements, so what the
        // reconciler stops (a count reduction, a migration, a lost
        // allocation) frees room for this plan's placements.
        for &stop in &plan.stops {
            self.free_stopped(&mut ctx, stop, true);
        }
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
                // Nomad never appends the stop of an update it does not
                // try: the old allocation keeps running.
                if let PlacementKind::Updates(previous) = want.kind
                    && self.keeps_stop(previous, &self.resolve_volumes(want.group, want.index))
                {
                    plan.stops.push(previous);
                }
                continue;
            }
            let volumes = self.resolve_volumes(want.group, want.index);
            // A rescheduled allocation avoids the nodes its predecessors failed on.
            let penalty = match want.kind {
                PlacementKind::Reschedules(previous) => {
                    let failed = &self.allocs[previous.index()];
                    let mut nodes = failed.penalty_nodes().to_vec();
                    nodes.push(failed.node);
                    nodes
                }
                _ => Vec::new(),
            };
            if let PlacementKind::Updates(previous) = want.kind {
                // computePlacements appends the stop just before the
                // placement is tried, so the old allocation's resources
                // (and its place for distinct_hosts and distinct_property)
                // are free for the new one.
                self.append_stop(&mut ctx, &mut plan, previous);
            }
            ctx.alloc_index = want.index;
            let chosen = match self.preferred_node(&want) {
                Some(node) => self.select_preferring(&mut ctx, node, &want, &volumes, &penalty),
                None => self.select_node(&mut ctx, want.group, &volumes, &penalty),
            };
            match chosen {
                Ok(node) => self.add_placement(&mut ctx, &mut plan, &want, node, volumes),
                Err(rejection) => self.note_unplaced(
                    &mut ctx,
                    &mut plan,
                    &mut failures,
                    &want,
                    &volumes,
                    rejection,
                ),
            }
        }
        self.note_placement_failures(&plan, failures);
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

    /// The node `want` tries alone before the others (`generic_sched.go`
    /// `findPreferredNode`): the node of the allocation it takes over
    /// from, if the group's ephemeral disk is sticky (or, from 1.6.0,
    /// migrates) and that node is ready and eligible (`Node.Ready`). The
    /// check 2.0.5 adds for a job whose node pool or datacenters changed
    /// (#26662) never applies: a job's versions keep both.
    fn preferred_node(&self, want: &Want) -> Option<NodeId> {
        let previous = want.kind.previous()?;
        let job = &self.scenario.jobs[want.group.job.index()];
        let disk = job.groups_of(self.jobs[want.group.job.index()].version)
            [want.group.group_index()]
        .ephemeral_disk;
        let prefers =
            disk.sticky || (disk.migrate && self.behaviour.release.migrate_implies_sticky);
        let node = self.allocs[previous.index()].node;
        (prefers && self.node_table.schedulable()[node.index()]).then_some(node)
    }

    /// `GenericStack.Select` with `PreferredNodes`: the stack runs over the
    /// preferred node alone, and over every candidate only if that fails
    /// (its failure is forgotten: `Select` resets the metrics). Either way
    /// `SetNodes` put the candidates back with the iterator's offset at 0,
    /// so the evaluation's later placements scan from the first node.
    fn select_preferring(
        &self,
        ctx: &mut PlanContext,
        preferred: NodeId,
        want: &Want,
        volumes: &[ResolvedVolume],
        penalty: &[NodeId],
    ) -> Result<NodeId, Rejection> {
        let candidates = std::mem::replace(&mut ctx.order, vec![preferred]);
        ctx.offset = 0;
        let alone = self.select_node(ctx, want.group, volumes, penalty);
        ctx.order = candidates;
        ctx.offset = 0;
        match alone {
            Ok(node) => Ok(node),
            Err(_) => self.select_node(ctx, want.group, volumes, penalty),
        }
    }

    /// Adds the placement `want` found on `node` to the plan and to what
    /// the rest of the evaluation sees. Inlined, as the loop body it was
    /// (see `score_node`).
    #[inline(always)]
    fn add_placement(
        &self,
        ctx: &mut PlanContext,
        plan: &mut Plan,
        want: &Want,
        node: NodeId,
        volumes: Vec<ResolvedVolume>,
    ) {
        let (volumes, claim_modes): (Vec<(VolumeId, ClaimMode)>, Vec<Capability>) = volumes
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
        self.propose(ctx, node, want.group, &volumes, &claim_modes);
        plan.placements.push(Placement {
            group: want.group,
            index: want.index,
            node,
            claims: VolumeClaims::boxed(volumes, claim_modes, 0),
            kind: want.kind,
            version: self.jobs[plan.job.index()].version,
            seen,
            score: ctx.chosen_score,
        });
    }

    /// `want` found no node: the failure counted for its group, the
    /// evaluation blocked, an `infeasible` trace row. A destructive update
    /// that cannot be placed keeps the allocation it would have replaced.
    #[inline(always)]
    fn note_unplaced(
        &mut self,
        ctx: &mut PlanContext,
        plan: &mut Plan,
        failures: &mut BTreeMap<GroupRef, PlacementFailure>,
        want: &Want,
        volumes: &[ResolvedVolume],
        rejection: Rejection,
    ) {
        if let PlacementKind::Updates(previous) = want.kind
            && !self.keeps_stop(previous, volumes)
        {
            // generic_sched.go computePlacements: a destructive
            // update that cannot be placed keeps the old one (PopUpdate).
            self.pop_stop(ctx, plan, previous);
        }
        self.metrics.infeasible += 1;
        self.blocked.insert(plan.job);
        let detail = top_reason(&rejection.filtered).describe(self.scenario);
        let failure = match failures.entry(want.group) {
            Entry::Occupied(known) => known.into_mut(),
            Entry::Vacant(first) => {
                let failure = self.placement_failure(ctx, want.group, &rejection);
                let lines = failure.metric.lines().join("; ");
                self.record(|t| {
                    TraceRecord::new(t, TraceKind::PlacementFailure)
                        .group(want.group)
                        .detail(lines)
                });
                first.insert(failure)
            }
        };
        failure.unplaced += 1;
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

    /// plan.go AppendStoppedAlloc for a destructive update's old
    /// allocation: the plan stops `id`, and what the evaluation's later
    /// checks see follows (its resources and its place for distinct_hosts,
    /// distinct_property and spread are free).
    fn append_stop(&self, ctx: &mut PlanContext, plan: &mut Plan, id: AllocId) {
        plan.stops.push(id);
        if let Some(prefs) = ctx.preferences.as_deref_mut() {
            self.note_plan_stop(prefs, id, true);
        }
        self.free_stopped(ctx, id, true);
    }

    /// plan.go PopUpdate: undoes [`Simulation::append_stop`] of `id`, the
    /// plan's last stop, when its replacement found no node.
    fn pop_stop(&self, ctx: &mut PlanContext, plan: &mut Plan, id: AllocId) {
        let popped = plan.stops.pop();
        debug_assert_eq!(popped, Some(id), "the update's stop is the plan's last");
        if let Some(prefs) = ctx.preferences.as_deref_mut() {
            self.note_plan_stop(prefs, id, false);
        }
        self.free_stopped(ctx, id, false);
    }

    /// The plan stops (`stopped`) or no longer stops live allocation `id`:
    /// its CPU and memory are free, or taken again, for the plan's
    /// placements on its node.
    pub(crate) fn free_stopped(&self, ctx: &mut PlanContext, id: AllocId, stopped: bool) {
        let alloc = &self.allocs[id.index()];
        if !alloc.is_live() {
            return;
        }
        let spec = &self.scenario.jobs[alloc.group.job.index()].groups_of(alloc.version)
            [alloc.group.group_index()];
        let reserved = self.reserves(spec);
        // The plan's stops, which the port and host volume checks leave out
        // of the node's proposed allocations.
        if !spec.ports.is_empty() || !spec.host_volumes.is_empty() {
            self.stop_ports(&mut ctx.network, id, stopped);
        }
        let in_group = ctx
            .stopped_in_group
            .entry((alloc.group, alloc.node))
            .or_default();
        let freed = ctx.freed.entry(alloc.node).or_default();
        if stopped {
            *in_group += 1;
            *freed = freed.plus(reserved);
        } else {
            *in_group -= 1;
            *freed = freed.less(reserved);
        }
    }

    /// An empty plan context for an evaluation of `job` over `order`.
    pub(crate) fn plan_context(&self, job: JobId, order: Vec<NodeId>) -> PlanContext {
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
    pub(crate) fn class_eligibility(
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
        let csi_escapes = self.behaviour.release.unblocks_on_volume_register;
        let escaped = escapes(&spec.constraints)
            || spec
                .groups
                .iter()
                .any(|g| escapes(&g.constraints) || (csi_escapes && !g.volumes.is_empty()));
        (escaped, classes)
    }

    /// Keeps the failures of the latest evaluation of each group, as
    /// `nomad job status` shows them; a group placed in full has none.
    pub(crate) fn note_placement_failures(
        &mut self,
        plan: &Plan,
        mut failures: BTreeMap<GroupRef, PlacementFailure>,
    ) {
        let job = plan.job;
        if let Entry::Vacant(first) = self.first_plans.entry(job) {
            // What `nomad job plan` would have shown: the job's first
            // evaluation, against the cluster as it was.
            let mut created = vec![0u32; self.scenario.jobs[job.index()].groups.len()];
            for placement in &plan.placements {
                created[placement.group.group_index()] += 1;
            }
            first.insert(FirstPlan {
                job,
                created,
                failures: failures.values().cloned().collect(),
            });
        }
        for g in 0..self.scenario.jobs[job.index()].groups.len() {
            let group = GroupRef::new(job, g);
            match failures.remove(&group) {
                Some(failure) => self.placement_failures.insert(group, failure),
                None => self.placement_failures.remove(&group),
            };
        }
    }

    /// Ready, eligible nodes in the job's datacenters and node pool
    /// (`readyNodesInDCsAndPool`), shuffled per evaluation (Nomad's random
    /// iterator) by the run's seeded stream.
    pub(crate) fn candidate_nodes(&mut self, job: JobId) -> Vec<NodeId> {
        let datacenters = &self.scenario.jobs[job.index()].datacenters;
        // Datacenters compared once per evaluation, not once per node.
        let in_job_dc = self.datacenters.of_job(datacenters);
        let in_job_pool = self.job_pools(job);
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
        for (i, ((&ready, &dc), &pool)) in schedulable
            .iter()
            .zip(self.datacenters.of_node())
            .zip(self.node_pools.of_node())
            .enumerate()
        {
            order[kept] = NodeId::from_index(i);
            kept += usize::from(ready & in_job_dc[dc as usize] & in_job_pool[pool as usize]);
        }
        order.truncate(kept);
        self.shuffle_rng.shuffle(&mut order);
        order
    }

    /// Which node pools (indexed as `node_pools`) the job's evaluations
    /// consider: its own, or every pool for "all" and at a release without
    /// pools (`readyNodesInDCsAndPool`: `NodePoolAll` or "" lists every node).
    pub(crate) fn job_pools(&self, job: JobId) -> Vec<bool> {
        let pool = &self.scenario.jobs[job.index()].node_pool;
        if !self.behaviour.release.node_pools || pool == ALL_NODE_POOLS {
            return vec![true; self.node_pools.names().len()];
        }
        self.node_pools.of_job(std::slice::from_ref(pool))
    }
}
