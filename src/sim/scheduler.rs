//! The scheduler: one evaluation of one job. It reconciles what should run
//! with what does (missing, failed, lost, migrating and excess allocations)
//! and picks a node for each placement, one at a time, against a snapshot
//! of the cluster plus what the plan being built already proposes.

use std::collections::{BTreeMap, BTreeSet};

use super::feasibility::{
    FilterReason, PlacementFailure, constraint_holds, naive_claim_check, plan_aware_claim_check,
    top_reason,
};
use super::rank::{self, MAX_SKIP, SKIP_THRESHOLD};
use super::reschedule::{may_reschedule, next_delay};
use super::state::{AllocState, JobStatus};
use super::trace::{TraceKind, TraceRecord};
use super::{Event, Simulation};
use crate::model::access::{ClaimCounts, ClaimMode};
use crate::model::ids::{AllocId, GroupRef, JobId, NodeId, VolumeId};
use crate::model::scenario::{SchedulerAlgorithm, VolumeSource};

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
    pub volumes: Vec<(VolumeId, ClaimMode)>,
    /// The allocation this one replaces (failed, lost, stopped or migrating).
    pub previous: Option<AllocId>,
    /// It replaces a failed allocation under the reschedule policy.
    pub reschedule: bool,
    /// What the scheduler saw when it chose the node (only when tracing).
    pub seen: Option<Box<super::trace::PlacementSeen>>,
}

/// A slot the reconciler wants filled.
struct Want {
    group: GroupRef,
    index: u32,
    previous: Option<AllocId>,
    reschedule: bool,
}

/// What the plan under construction already proposes, on top of the snapshot.
#[derive(Default)]
struct PlanContext {
    /// Candidate nodes in this evaluation's shuffled order.
    order: Vec<NodeId>,
    /// Where the next placement starts looking (Nomad's iterator offset).
    offset: usize,
    /// CPU and memory the plan proposes on each node (indexed by node).
    resources: Vec<(u64, u64)>,
    group_on_node: BTreeMap<(NodeId, GroupRef), u32>,
    claims: BTreeMap<VolumeId, ClaimCounts>,
    node_volumes: BTreeMap<NodeId, BTreeSet<VolumeId>>,
}

/// A volume request with its source resolved for one allocation index.
pub(super) enum ResolvedVolume {
    Found(VolumeId, ClaimMode),
    Missing(String),
}

impl Simulation<'_> {
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
        let wants = self.reconcile(job, &mut plan.stops);
        if wants.is_empty() {
            return plan;
        }
        let mut ctx = PlanContext {
            order: self.candidate_nodes(job),
            resources: vec![(0, 0); self.nodes.len()],
            ..PlanContext::default()
        };
        let mut failures: BTreeMap<GroupRef, PlacementFailure> = BTreeMap::new();
        for want in wants {
            let volumes = self.resolve_volumes(want.group, want.index);
            // A rescheduled allocation avoids the nodes its predecessors failed on.
            let penalty = match want.previous {
                Some(previous) if want.reschedule => {
                    let failed = &self.allocs[previous.index()];
                    let mut nodes = failed.penalty_nodes.clone();
                    nodes.push(failed.node);
                    nodes
                }
                _ => Vec::new(),
            };
            match self.select_node(&mut ctx, want.group, &volumes, &penalty) {
                Ok(node) => {
                    let volumes: Vec<(VolumeId, ClaimMode)> = volumes
                        .into_iter()
                        .map(|v| match v {
                            ResolvedVolume::Found(id, mode) => (id, mode),
                            ResolvedVolume::Missing(_) => {
                                unreachable!("a missing volume is infeasible")
                            }
                        })
                        .collect();
                    let seen = self.placement_seen(
                        &ctx.claims,
                        &plan.placements,
                        (want.group, want.index),
                        Some(node),
                        volumes.iter().copied(),
                    );
                    self.propose(&mut ctx, node, want.group, &volumes);
                    plan.placements.push(Placement {
                        group: want.group,
                        index: want.index,
                        node,
                        volumes,
                        previous: want.previous,
                        reschedule: want.reschedule,
                        seen,
                    });
                }
                Err(filtered) => {
                    self.metrics.infeasible += 1;
                    self.blocked.insert(job);
                    let detail = top_reason(&filtered).describe(self.scenario);
                    // Like Nomad, report the first failure of each group and
                    // count the rest as coalesced into it.
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
                            ResolvedVolume::Found(id, mode) => Some((*id, *mode)),
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
        plan
    }

    /// Keeps the failures of the latest evaluation of each group, as
    /// `nomad job status` shows them; a group placed in full has none.
    fn note_placement_failures(
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

    fn live_allocs_of(&self, job: JobId) -> impl Iterator<Item = AllocId> + '_ {
        self.jobs[job.index()]
            .latest
            .iter()
            .flat_map(|slots| slots.values().copied())
            .filter(|&id| self.allocs[id.index()].is_live())
    }

    /// Decides, slot by slot, what must be stopped and what must be placed.
    fn reconcile(&mut self, job: JobId, stops: &mut Vec<AllocId>) -> Vec<Want> {
        let now = self.now();
        let spec = &self.scenario.jobs[job.index()];
        let mut wants = Vec::new();
        let mut followups = Vec::new();
        for (g, group_spec) in spec.groups.iter().enumerate() {
            let group = GroupRef::new(job, g);
            let count = self.jobs[job.index()].counts[g];
            let slots: Vec<(u32, AllocId)> = self.jobs[job.index()].latest[g]
                .iter()
                .map(|(&index, &id)| (index, id))
                .collect();
            // Scale-down: Nomad stops the highest indices.
            for &(_, id) in slots.iter().filter(|(index, _)| *index >= count) {
                if self.allocs[id.index()].is_live() {
                    stops.push(id);
                }
            }
            let latest = &self.jobs[job.index()].latest[g];
            for index in 0..count {
                let Some(&id) = latest.get(&index) else {
                    wants.push(Want {
                        group,
                        index,
                        previous: None,
                        reschedule: false,
                    });
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
                            wants.push(Want {
                                group,
                                index,
                                previous: Some(id),
                                reschedule: false,
                            });
                        }
                    }
                    // A finished batch allocation is done.
                    AllocState::Complete if spec.is_batch() => {}
                    // A service should run until stopped: one that exits is
                    // replaced, like a lost or stopped allocation.
                    AllocState::Complete | AllocState::Lost | AllocState::Stopped => {
                        wants.push(Want {
                            group,
                            index,
                            previous: Some(id),
                            reschedule: false,
                        });
                    }
                    AllocState::Failed => {
                        let policy = &group_spec.reschedule;
                        let times: Vec<_> =
                            alloc.reschedule_history.iter().map(|&(at, _)| at).collect();
                        if !may_reschedule(policy, &times, now) {
                            continue;
                        }
                        let delays: Vec<_> =
                            alloc.reschedule_history.iter().map(|&(_, d)| d).collect();
                        let due = alloc.failed_at + next_delay(policy, &delays);
                        if due <= now {
                            wants.push(Want {
                                group,
                                index,
                                previous: Some(id),
                                reschedule: true,
                            });
                        } else if !alloc.followup_scheduled {
                            self.allocs[id.index()].followup_scheduled = true;
                            followups.push(due);
                        }
                    }
                }
            }
        }
        for due in followups {
            self.at(due, Event::RescheduleDue(job));
        }
        wants
    }

    /// Ready, eligible nodes in the job's datacenters, shuffled per evaluation
    /// (Nomad's random iterator) by the run's seeded stream.
    fn candidate_nodes(&mut self, job: JobId) -> Vec<NodeId> {
        let datacenters = &self.scenario.jobs[job.index()].datacenters;
        let mut order: Vec<NodeId> = self
            .scenario
            .nodes
            .iter()
            .enumerate()
            .filter(|(i, spec)| {
                self.nodes[*i].schedulable() && datacenters.contains(&spec.datacenter)
            })
            .map(|(i, _)| NodeId::from_index(i))
            .collect();
        self.shuffle_rng.shuffle(&mut order);
        order
    }

    /// The volumes allocation `index` of `group` mounts. Two requests for
    /// the same volume make one claim (Nomad keys claims by allocation), a
    /// write claim if either request writes.
    pub(super) fn resolve_volumes(&self, group: GroupRef, index: u32) -> Vec<ResolvedVolume> {
        let spec = &self.scenario.jobs[group.job.index()].groups[group.group_index()];
        let mut resolved: Vec<ResolvedVolume> = Vec::with_capacity(spec.volumes.len());
        for request in &spec.volumes {
            let volume = match &request.source {
                VolumeSource::Shared(id) => ResolvedVolume::Found(*id, request.mode),
                VolumeSource::PerAlloc { base } => {
                    let name = format!("{base}[{index}]");
                    match self.scenario.volume_by_name.get(&name) {
                        Some(&id) => ResolvedVolume::Found(id, request.mode),
                        None => ResolvedVolume::Missing(name),
                    }
                }
            };
            let duplicate = resolved.iter_mut().find_map(|seen| match (seen, &volume) {
                (ResolvedVolume::Found(a, mode), ResolvedVolume::Found(b, _)) if a == b => {
                    Some(mode)
                }
                _ => None,
            });
            match (duplicate, &volume) {
                (Some(mode), ResolvedVolume::Found(_, requested)) => {
                    *mode = (*mode).max(*requested)
                }
                _ => resolved.push(volume),
            }
        }
        resolved
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
        let batch = self.scenario.jobs[group.job.index()].is_batch();
        let limit = rank::score_limit(total, batch);
        let mut filtered: BTreeMap<FilterReason, u32> = BTreeMap::new();
        let mut taken: Vec<(NodeId, f64)> = Vec::with_capacity(limit);
        let mut skipped: Vec<(NodeId, f64)> = Vec::new();
        let mut visited = 0;
        while visited < total && taken.len() < limit {
            let node = ctx.order[(ctx.offset + visited) % total];
            visited += 1;
            match self.score_node(ctx, node, group, volumes, penalty) {
                Err(reason) => *filtered.entry(reason).or_default() += 1,
                Ok(score) if score <= SKIP_THRESHOLD && skipped.len() < MAX_SKIP => {
                    skipped.push((node, score));
                }
                Ok(score) => taken.push((node, score)),
            }
        }
        ctx.offset = (ctx.offset + visited) % total;
        let room = limit.saturating_sub(taken.len());
        taken.extend(skipped.into_iter().take(room));
        let mut best: Option<(NodeId, f64)> = None;
        for (node, score) in taken {
            if best.is_none_or(|(_, top)| score > top) {
                best = Some((node, score));
            }
        }
        best.map(|(node, _)| node).ok_or(filtered)
    }

    /// Feasibility of one node, then its score.
    fn score_node(
        &self,
        ctx: &PlanContext,
        node: NodeId,
        group: GroupRef,
        volumes: &[ResolvedVolume],
        penalty: &[NodeId],
    ) -> Result<f64, FilterReason> {
        let job_spec = &self.scenario.jobs[group.job.index()];
        let group_spec = &job_spec.groups[group.group_index()];
        let node_spec = &self.scenario.nodes[node.index()];
        let node_state = &self.nodes[node.index()];

        for (index, constraint) in job_spec
            .constraints
            .iter()
            .chain(&group_spec.constraints)
            .enumerate()
        {
            if !constraint_holds(constraint, node_spec) {
                return Err(FilterReason::Constraint { group, index });
            }
        }
        if !group_spec.drivers.is_subset(node_spec.drivers) {
            return Err(FilterReason::MissingDrivers);
        }
        for (checked, volume) in volumes.iter().enumerate() {
            let (id, mode) = match volume {
                ResolvedVolume::Found(id, mode) => (*id, *mode),
                ResolvedVolume::Missing(name) => {
                    return Err(FilterReason::CsiVolumeMissing(name.clone()));
                }
            };
            self.check_volume(ctx, node, group, id, mode, &volumes[..checked])?;
        }
        let (plan_cpu, plan_memory) = ctx.resources[node.index()];
        let used_cpu = node_state.used_cpu + plan_cpu + group_spec.cpu;
        let used_memory = node_state.used_memory + plan_memory + group_spec.memory;
        if used_cpu > node_spec.cpu {
            return Err(FilterReason::CpuExhausted);
        }
        if used_memory > node_spec.memory {
            return Err(FilterReason::MemoryExhausted);
        }

        let mut scores = [0.0; 3];
        let mut appended = 0;
        let fitness = match self.scenario.cluster.scheduler_algorithm {
            SchedulerAlgorithm::Binpack => rank::binpack_score,
            SchedulerAlgorithm::Spread => rank::spread_score,
        };
        scores[appended] = fitness(used_cpu, node_spec.cpu, used_memory, node_spec.memory);
        appended += 1;
        let collisions = node_state.group_allocs.get(&group).copied().unwrap_or(0)
            + ctx.group_on_node.get(&(node, group)).copied().unwrap_or(0);
        let count = self.jobs[group.job.index()].counts[group.group_index()];
        if let Some(penalty) = rank::anti_affinity_penalty(collisions, count) {
            scores[appended] = penalty;
            appended += 1;
        }
        if penalty.contains(&node) {
            scores[appended] = rank::RESCHEDULE_PENALTY;
            appended += 1;
        }
        Ok(rank::final_score(&scores[..appended]))
    }

    /// Nomad's CSI volume checker, in its order, with the claim check the
    /// policy prescribes.
    fn check_volume(
        &self,
        ctx: &PlanContext,
        node: NodeId,
        group: GroupRef,
        volume: VolumeId,
        mode: ClaimMode,
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
        if !node_state.plugin_healthy[slot] {
            return Err(FilterReason::CsiPluginUnhealthy { plugin, node });
        }
        let max_volumes = node_spec.csi_plugins[slot].max_volumes;
        if max_volumes > 0
            && !self.attach_slot_free(ctx, node, volume, earlier, max_volumes as usize)
        {
            return Err(FilterReason::CsiPluginMaxVolumes { plugin, node });
        }
        if !volume_spec.topologies.is_empty()
            && !volume_spec.topologies.contains(&node_spec.topology)
        {
            return Err(FilterReason::CsiTopology);
        }
        let state = &self.volumes[volume.index()];
        if self.policy.plan_aware_claims() {
            let proposed = ctx.claims.get(&volume).copied().unwrap_or_default();
            plan_aware_claim_check(
                volume,
                volume_spec.access_mode,
                state.plan_aware_counts().plus(proposed),
                mode,
            )
        } else {
            naive_claim_check(
                volume,
                volume_spec.access_mode,
                mode,
                state.other_job_writes(group.job),
            )
        }
    }

    /// Whether `node` can take `volume` under its plugin's `max_volumes`.
    /// Nomad counts the volumes claimed there and refuses at the limit, even
    /// for a volume already attached. Plan-aware counts every volume that is
    /// or will be attached (claimed, mounted by live allocations, proposed by
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
        if !self.policy.plan_aware_claims() {
            return self.count_of_plugin(state.claimed_volumes.keys(), plugin) < max_volumes;
        }
        let mut attached = state.held_or_promised_volumes();
        attached.extend(ctx.node_volumes.get(&node).into_iter().flatten().copied());
        attached.extend(earlier.iter().filter_map(|v| match v {
            ResolvedVolume::Found(id, _) => Some(*id),
            ResolvedVolume::Missing(_) => None,
        }));
        attached.insert(volume);
        self.count_of_plugin(attached.iter(), plugin) <= max_volumes
    }

    fn propose(
        &self,
        ctx: &mut PlanContext,
        node: NodeId,
        group: GroupRef,
        volumes: &[(VolumeId, ClaimMode)],
    ) {
        let spec = &self.scenario.jobs[group.job.index()].groups[group.group_index()];
        let entry = &mut ctx.resources[node.index()];
        entry.0 += spec.cpu;
        entry.1 += spec.memory;
        *ctx.group_on_node.entry((node, group)).or_default() += 1;
        for &(volume, mode) in volumes {
            ctx.claims.entry(volume).or_default().add(mode);
            ctx.node_volumes.entry(node).or_default().insert(volume);
        }
    }
}
