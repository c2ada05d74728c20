use crate::model::access::ClaimMode;
use crate::model::ids::{GroupRef, NodeId, VolumeId};
use crate::model::scenario::Capability;
use crate::sim::server::scheduler::context::{Ask, PREFETCH_AHEAD, PlanContext};
use crate::sim::server::scheduler::feasibility::{FilterReason, constraint_holds_at};
use crate::sim::server::scheduler::hot::GroupTally;
use crate::sim::server::scheduler::plan::ResolvedVolume;
use crate::sim::server::scheduler::rank::{MAX_SKIP, SKIP_THRESHOLD};
use crate::sim::server::scheduler::{hot, rank};
use crate::sim::simulation::Simulation;
use std::collections::BTreeMap;
impl Simulation<'_> {
    /// Nomad's stack for one placement: feasibility in order, then the limit
    /// iterator over bin-pack scores, then the best score (first on ties).
    pub(crate) fn select_node(
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
            group,
            job_spec,
            group_spec,
            ..
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
