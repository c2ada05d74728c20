use crate::model::access::ClaimMode;
use crate::model::ids::{GroupRef, NodeId, VolumeId};
use crate::model::scenario::{Capability, Reserved};
use crate::sim::server::scheduler::context::{Ask, HostCheck, PREFETCH_AHEAD, PlanContext};
use crate::sim::server::scheduler::feasibility::{
    FilterReason, PlacementFailure, constraint_holds_at, is_exhausted,
};
use crate::sim::server::scheduler::hot::GroupTally;
use crate::sim::server::scheduler::plan::ResolvedVolume;
use crate::sim::server::scheduler::rank::{MAX_SKIP, SKIP_THRESHOLD};
use crate::sim::server::scheduler::{hot, rank};
use crate::sim::simulation::Simulation;
use std::collections::BTreeMap;
/// Why a placement found no node: what its scan counted, for the group's
/// [`PlacementFailure`].
#[derive(Clone, Debug, Default)]
pub(crate) struct Rejection {
    /// Nodes per reason.
    pub(crate) filtered: BTreeMap<FilterReason, u32>,
    /// Nodes the scan visited (Nomad's NodesEvaluated).
    pub(crate) evaluated: u32,
    /// Per node class (an index of `NodeClasses`): nodes filtered, nodes
    /// exhausted.
    pub(crate) classes: Vec<(u32, u32, u32)>,
}

/// The stack's state for one placement: the static iterator's position
/// and counts, and the limit iterator's (scheduler/select.go).
struct Scan {
    total: usize,
    at: usize,
    ahead: usize,
    visited: usize,
    /// Filter reasons counted in a short list (a handful of distinct
    /// reasons, each met many times on a full cluster); the ordered map is
    /// built only if the placement fails.
    filtered: Vec<(FilterReason, u32)>,
    limit: usize,
    seen: usize,
    skipped: Vec<(NodeId, f64)>,
    skipped_index: usize,
}

impl Simulation<'_> {
    /// Nomad's stack for one placement (stack.go GenericStack.Select): the
    /// MaxScoreIterator asks the LimitIterator until it has nothing more,
    /// which asks the chain of feasibility and rank iterators; the best
    /// score wins (the first on ties).
    pub(crate) fn select_node(
        &self,
        ctx: &mut PlanContext,
        group: GroupRef,
        volumes: &[ResolvedVolume],
        penalty: &[NodeId],
    ) -> Result<NodeId, Rejection> {
        let total = ctx.order.len();
        if total == 0 {
            return Err(Rejection {
                filtered: BTreeMap::from([(FilterReason::NoNodes, 0)]),
                evaluated: 0,
                classes: Vec::new(),
            });
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
        if ask.host_check != HostCheck::None {
            self.prepare_sticky_claims(ctx, group, ask.group_spec);
        }
        if ctx.class_tally.len() < self.node_classes.len() {
            ctx.class_tally.resize(self.node_classes.len(), [0, 0]);
        }
        let mut skipped = std::mem::take(&mut ctx.skipped);
        skipped.clear();
        let mut scan = Scan {
            total,
            at: ctx.offset,
            ahead: (ctx.offset + PREFETCH_AHEAD) % total,
            visited: 0,
            filtered: Vec::new(),
            limit,
            seen: 0,
            skipped,
            skipped_index: 0,
        };
        // select.go MaxScoreIterator.Next.
        let mut best: Option<(NodeId, f64)> = None;
        while let Some((node, score)) = self.limit_next(ctx, &mut scan, &ask, volumes, penalty) {
            if best.is_none_or(|(_, top)| score > top) {
                best = Some((node, score));
            }
        }
        ctx.offset = scan.at;
        ctx.skipped = scan.skipped;
        ctx.chosen_score = best.map_or(0.0, |(_, score)| score);
        let mut classes = Vec::new();
        for class in ctx.class_touched.drain(..) {
            let [filtered, exhausted] = std::mem::take(&mut ctx.class_tally[class as usize]);
            if best.is_none() {
                classes.push((class, filtered, exhausted));
            }
        }
        match best {
            Some((node, _)) => Ok(node),
            None => Err(Rejection {
                filtered: scan.filtered.into_iter().collect(),
                evaluated: scan.visited as u32,
                classes,
            }),
        }
    }

    /// select.go LimitIterator.Next: up to `limit` options, skipping up to
    /// MAX_SKIP whose score is at most SKIP_THRESHOLD while others come.
    fn limit_next(
        &self,
        ctx: &mut PlanContext,
        scan: &mut Scan,
        ask: &Ask,
        volumes: &[ResolvedVolume],
        penalty: &[NodeId],
    ) -> Option<(NodeId, f64)> {
        if scan.seen == scan.limit {
            return None;
        }
        let mut option = Some(self.next_option(ctx, scan, ask, volumes, penalty)?);
        if scan.skipped.len() < MAX_SKIP {
            while let Some(low) = option
                && low.1 <= SKIP_THRESHOLD
                && scan.skipped.len() < MAX_SKIP
            {
                scan.skipped.push(low);
                option = self.next_source(ctx, scan, ask, volumes, penalty);
            }
        }
        scan.seen += 1;
        // The source had nothing: a skipped option instead. In 1.2.6 the
        // source's "nothing" may be the feasibility wrapper's early return,
        // and asking again resumes the scan past the node that caused it.
        match option {
            None => self.next_option(ctx, scan, ask, volumes, penalty),
            Some(option) => Some(option),
        }
    }

    /// select.go LimitIterator.nextOption: the source's next option, or
    /// when it has none a skipped one.
    fn next_option(
        &self,
        ctx: &mut PlanContext,
        scan: &mut Scan,
        ask: &Ask,
        volumes: &[ResolvedVolume],
        penalty: &[NodeId],
    ) -> Option<(NodeId, f64)> {
        let option = self.next_source(ctx, scan, ask, volumes, penalty);
        if option.is_none() && scan.skipped_index < scan.skipped.len() {
            scan.skipped_index += 1;
            return Some(scan.skipped[scan.skipped_index - 1]);
        }
        option
    }

    /// The chain below the limit iterator: the next node of the shuffled
    /// order (StaticIterator, which wraps around and visits each node once
    /// per placement) that passes every check, with its score. None when
    /// every node was visited, or when 1.2.6's feasibility wrapper returned
    /// early (then the next call goes on with the next node).
    #[inline(always)]
    fn next_source(
        &self,
        ctx: &mut PlanContext,
        scan: &mut Scan,
        ask: &Ask,
        volumes: &[ResolvedVolume],
        penalty: &[NodeId],
    ) -> Option<(NodeId, f64)> {
        let total = scan.total;
        while scan.visited < total {
            let node = ctx.order[scan.at];
            let upcoming = ctx.order[scan.ahead];
            self.node_table.prefetch(upcoming);
            if let Some(tally) = ctx.group_counts.get(ask.group.group_index()) {
                hot::prefetch(tally.per_node(), upcoming.index());
            }
            if !volumes.is_empty() {
                // The CSI checker reads the node's plugins and their state.
                hot::prefetch(&self.scenario.nodes, upcoming.index());
                hot::prefetch(&self.nodes, upcoming.index());
            }
            // Positions wrap by a comparison, not a division per node.
            scan.at += 1;
            if scan.at == total {
                scan.at = 0;
            }
            scan.ahead += 1;
            if scan.ahead == total {
                scan.ahead = 0;
            }
            scan.visited += 1;
            ctx.stop_iterating = false;
            match self.score_node(ctx, node, ask, volumes, penalty) {
                Ok(score) => return Some((node, score)),
                Err(reason) => {
                    self.tally_class(ctx, node, is_exhausted(&reason));
                    match scan.filtered.iter_mut().find(|(seen, _)| *seen == reason) {
                        Some((_, count)) => *count += 1,
                        None => scan.filtered.push((reason, 1)),
                    }
                    if ctx.stop_iterating {
                        return None;
                    }
                }
            }
        }
        None
    }

    /// Counts a refused node under its node class (AllocMetric's
    /// ClassFiltered or ClassExhausted), if it has one.
    #[inline(always)]
    fn tally_class(&self, ctx: &mut PlanContext, node: NodeId, exhausted: bool) {
        let Some(class) = self.node_classes.of(self.node_table.class(node)) else {
            return;
        };
        let tally = &mut ctx.class_tally[class as usize];
        if *tally == [0, 0] {
            ctx.class_touched.push(class);
        }
        tally[usize::from(exhausted)] += 1;
    }

    /// The group's failure from its first refused placement's scan, with
    /// the ready nodes per datacenter of the job (generic_sched.go
    /// computePlacements sets NodesAvailable from readyNodesInDCs: every
    /// datacenter of the job at 1.2.6, only those with a ready node since
    /// 1.5.0's wildcard datacenters, #11170).
    pub(crate) fn placement_failure(
        &self,
        ctx: &PlanContext,
        group: GroupRef,
        rejection: &Rejection,
    ) -> PlacementFailure {
        self.failure_from(
            group,
            rejection,
            Some(&self.ready_by_datacenter(&ctx.order)),
        )
    }

    /// Ready nodes per datacenter (indexed as `Datacenters::names`), of
    /// `nodes`: readyNodesInDCs' count.
    pub(crate) fn ready_by_datacenter(&self, nodes: &[NodeId]) -> Vec<u32> {
        let mut ready = vec![0u32; self.datacenters.names().len()];
        for node in nodes {
            ready[self.datacenters.of_node()[node.index()] as usize] += 1;
        }
        ready
    }

    /// A group's failure from a rejection's counts. `ready`, per
    /// datacenter, becomes NodesAvailable; `None` where the metric never
    /// had it set (a system group's merged filter metrics).
    pub(crate) fn failure_from(
        &self,
        group: GroupRef,
        rejection: &Rejection,
        ready: Option<&[u32]>,
    ) -> PlacementFailure {
        let names = self.datacenters.names();
        let mut available: BTreeMap<&str, u32> = BTreeMap::new();
        if let Some(ready) = ready {
            for dc in &self.scenario.jobs[group.job.index()].datacenters {
                let count = names.iter().position(|n| n == dc).map_or(0, |i| ready[i]);
                if count > 0 || self.behaviour.release.lists_empty_datacenters {
                    available.insert(dc, count);
                }
            }
        }
        let classes = rejection
            .classes
            .iter()
            .map(|&(class, filtered, exhausted)| {
                (
                    self.node_classes.name(class).to_string(),
                    filtered,
                    exhausted,
                )
            })
            .collect();
        PlacementFailure::new(group, &rejection.filtered, self.scenario).with_nodes(
            rejection.evaluated,
            classes,
            available
                .into_iter()
                .map(|(dc, n)| (dc.to_string(), n))
                .collect(),
        )
    }

    /// Nomad's FeasibilityWrapper for one node: the job's constraints, then
    /// the group's drivers and constraints (both cached per computed class
    /// for the evaluation, unless a constraint escapes the class), then the
    /// CSI volumes (never cached). Inlined into `score_node`, for the
    /// reason given there.
    #[inline(always)]
    fn check_feasibility_wrapper(
        &self,
        ctx: &mut PlanContext,
        node: NodeId,
        ask: &Ask,
        volumes: &[ResolvedVolume],
    ) -> Result<(), FilterReason> {
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
                let failed = job_spec.constraints.iter().position(|c| {
                    !constraint_holds_at(
                        c,
                        node_spec(),
                        &self.scenario.driver_names,
                        self.behaviour.release,
                    )
                });
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
                // The class passed before: only the checks not cached per
                // class run (host volumes from 1.7, then CSI). In 1.2.6 a
                // node that fails the CSI check ends the iteration.
                if ask.host_check == HostCheck::PerNode {
                    self.check_host_volumes(ctx, node, job_spec, group_spec)?;
                }
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
                        .position(|c| {
                            !constraint_holds_at(
                                c,
                                node_spec(),
                                &self.scenario.driver_names,
                                self.behaviour.release,
                            )
                        })
                        .map(|i| FilterReason::Constraint {
                            group,
                            index: job_spec.constraints.len() + i,
                        })
                };
                // Before 1.7 (#18679) the host volume check is one of the
                // class-cached ones, though a class says nothing of a
                // node's host volumes: the first node judges its class.
                let problem = match problem {
                    None if ask.host_check == HostCheck::PerClass => self
                        .check_host_volumes(ctx, node, job_spec, group_spec)
                        .err(),
                    problem => problem,
                };
                if !group_escaped {
                    ctx.group_classes[group.group_index() * classes + class as usize] =
                        Some(problem.is_none());
                }
                if let Some(reason) = problem {
                    return Err(reason);
                }
                if ask.host_check == HostCheck::PerNode {
                    self.check_host_volumes(ctx, node, job_spec, group_spec)?;
                }
                self.check_volumes(ctx, node, volumes)?;
            }
        }
        Ok(())
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
    pub(crate) fn score_node(
        &self,
        ctx: &mut PlanContext,
        node: NodeId,
        ask: &Ask,
        volumes: &[ResolvedVolume],
        penalty: &[NodeId],
    ) -> Result<f64, FilterReason> {
        let Ask {
            group, job_spec, ..
        } = *ask;
        self.check_feasibility_wrapper(ctx, node, ask, volumes)?;
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
        // BinPackIterator.Next: the network index before the resources.
        if !ask.group_spec.ports.is_empty()
            || self.ports.any_collision()
            || ctx.network.any_collision()
        {
            self.check_ports(&ctx.network, node, &ask.group_spec.ports)?;
        }
        let slot = self.node_table.proposal_slot(node, &ctx.proposals);
        let plan = slot.map_or(Reserved::default(), |slot| {
            let p = &ctx.proposals[slot];
            Reserved {
                cpu: p.cpu,
                memory: p.memory,
                disk: p.disk,
            }
        });
        let freed = if ctx.freed.is_empty() {
            Reserved::default()
        } else {
            ctx.freed.get(&node).copied().unwrap_or_default()
        };
        let (live_cpu, live_memory) = self.node_table.used(node);
        let used_cpu = (live_cpu + plan.cpu + ask.reserved.cpu).saturating_sub(freed.cpu);
        let used_memory =
            (live_memory + plan.memory + ask.reserved.memory).saturating_sub(freed.memory);
        // The node's capacity from its hot record (the spec's values): the
        // spec itself is read only on a class-cache miss.
        let (cpu, memory) = self.node_table.capacity(node);
        if used_cpu > cpu {
            return Err(FilterReason::CpuExhausted);
        }
        if used_memory > memory {
            return Err(FilterReason::MemoryExhausted);
        }
        // ComparableResources.Superset compares the disk after the two.
        let (live_disk, disk) = self.node_table.disk(node);
        if (live_disk + plan.disk + ask.reserved.disk).saturating_sub(freed.disk) > disk {
            return Err(FilterReason::DiskExhausted);
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
        // JobAntiAffinityIterator counts ProposedAllocs: the plan's stops
        // on the node are not collisions.
        let stopped = if ctx.stopped_in_group.is_empty() {
            0
        } else {
            ctx.stopped_in_group
                .get(&(group, node))
                .copied()
                .unwrap_or(0)
        };
        let collisions = (here.live + here.proposed).saturating_sub(stopped);
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

    /// `group`'s allocations per node for this evaluation, counted from
    /// the group's live allocations the first time they are asked for.
    /// Every scoring asks, so the lookup is inlined (see `score_node`).
    #[inline(always)]
    pub(crate) fn fill_group_counts<'c>(
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
    pub(crate) fn count_group(&self, ctx: &mut PlanContext, group: GroupRef) {
        let g = group.group_index();
        if ctx.group_counts.len() <= g {
            ctx.group_counts.resize_with(g + 1, GroupTally::default);
        }
        ctx.group_counts[g].count_live(&self.live, group, self.nodes.len());
    }

    pub(crate) fn propose(
        &self,
        ctx: &mut PlanContext,
        node: NodeId,
        group: GroupRef,
        volumes: &[(VolumeId, ClaimMode)],
        claim_modes: &[Capability],
    ) {
        let spec = &self.scenario.jobs[group.job.index()]
            .groups_of(self.jobs[group.job.index()].version)[group.group_index()];
        let reserved = self.reserves(spec);
        self.node_table.propose(node, &mut ctx.proposals, reserved);
        self.fill_group_counts(ctx, group).propose(node);
        self.propose_ports(&mut ctx.network, node, &spec.ports);
        if !spec.host_volumes.is_empty() {
            self.propose_host_volumes(ctx, spec, ctx.alloc_index, node);
        }
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
