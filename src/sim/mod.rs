//! The cluster simulation: Nomad's servers (registration, evaluation broker,
//! scheduler workers, plan applier) and clients (claims, plugin publishes,
//! claim release), driven by the discrete-event engine. Pure: it reads a
//! resolved scenario and returns metrics and, if asked, a trace.

mod alloc_parts;
mod applier;
mod broker;
pub mod claims;
mod client;
mod deployment;
mod disconnect;
mod distinct_invariants;
mod drain;
pub mod feasibility;
mod health;
mod hot;
mod initial;
mod invariants;
mod placement;
mod plugin_drain;
mod plugins;
pub mod rank;
pub mod reschedule;
mod scheduler;
mod seen;
mod slots;
mod stall;
pub mod state;
mod system_sched;
mod timeline;
pub mod trace;

use crate::engine::queue::EventQueue;
use crate::engine::rng::{SimRng, Stream};
use std::collections::{BTreeMap, BTreeSet};

use crate::model::ids::{AllocId, GroupRef, JobId, NodeId, PluginId, VolumeId};
use crate::model::metrics::Metrics;
use crate::model::policy::Policy;
use crate::model::release::Behaviour;
use crate::model::scenario::Scenario;
use crate::model::time::Millis;

use broker::EvalBroker;
use scheduler::Plan;
use state::*;
use trace::{TraceRecord, TraceSink};

/// What one run produces.
#[derive(Clone, Debug)]
pub struct RunOutput {
    pub metrics: Metrics,
    /// Present when the run was asked to trace.
    pub trace: Option<Vec<TraceRecord>>,
    /// Groups the latest evaluation could not place in full, in group order.
    pub placement_failures: Vec<feasibility::PlacementFailure>,
    /// Why the run stopped before its horizon, if it did (the event cap).
    pub stopped_early: Option<String>,
    /// Jobs refused at registration, with the registration error.
    pub rejections: Vec<(JobId, String)>,
}

/// Options of one run.
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    pub policy: Policy,
    pub seed: u64,
    pub trace: bool,
    /// Check every invariant after every event (slow; for tests).
    pub check_invariants: bool,
    /// Stop after this many events: a scenario that would spin forever is
    /// reported instead of hanging (see `RunOutput::stopped_early`).
    pub max_events: u64,
}

/// Most events one run may process (MAX_RUN_EVENTS): the C1M shape needs
/// about a million.
pub const MAX_RUN_EVENTS: u64 = 500_000_000;

impl RunOptions {
    /// A plain run: no trace, no invariant checks, the standard event cap.
    pub fn new(policy: Policy, seed: u64) -> Self {
        RunOptions {
            policy,
            seed,
            trace: false,
            check_invariants: false,
            max_events: MAX_RUN_EVENTS,
        }
    }
}

/// Replays `scenario` under one policy and seed.
pub fn simulate(scenario: &Scenario, options: RunOptions) -> RunOutput {
    simulate_observed(scenario, options, &mut |_, _| {})
}

/// Queue entries between two calls of a progress observer.
pub const PROGRESS_EVERY: u64 = 1 << 14;

/// As [`simulate`], calling `progress(simulated time, queue entries so far)`
/// every [`PROGRESS_EVERY`] entries, for a progress display. The observer
/// sees the run but cannot change it: results are the same bytes.
pub fn simulate_observed(
    scenario: &Scenario,
    options: RunOptions,
    progress: &mut dyn FnMut(Millis, u64),
) -> RunOutput {
    if !options.trace {
        return simulate_into(scenario, options, None, progress);
    }
    let mut records = Vec::new();
    let mut output = simulate_into(scenario, options, Some(&mut records), progress);
    output.trace = Some(records);
    output
}

/// As [`simulate_observed`], handing each trace row to `sink` as the run
/// produces it (whatever `options.trace` says); `RunOutput::trace` is `None`.
pub fn simulate_streamed(
    scenario: &Scenario,
    options: RunOptions,
    sink: &mut dyn TraceSink,
    progress: &mut dyn FnMut(Millis, u64),
) -> RunOutput {
    simulate_into(scenario, options, Some(sink), progress)
}

fn simulate_into<'s>(
    scenario: &'s Scenario,
    options: RunOptions,
    trace: Option<&'s mut dyn TraceSink>,
    progress: &mut dyn FnMut(Millis, u64),
) -> RunOutput {
    let mut sim = Simulation::new(scenario, options);
    sim.trace = trace;
    sim.seed_initial_allocations();
    sim.run(progress);
    sim.finish()
}

/// Everything that happens, as a closed set of events.
#[derive(Clone, Copy, Debug)]
enum Event {
    JobSubmit(JobId),
    Timeline(usize),
    /// The worker's plan reaches the plan applier.
    PlanSubmit {
        worker: usize,
    },
    /// A delayed evaluation (Nomad's reschedule "wait until" eval).
    RescheduleDue(JobId),
    AllocPulled(AllocId),
    ClaimAttempt(AllocId),
    PublishDone(AllocId),
    TaskComplete(AllocId),
    NodeDetach(AllocId, VolumeId),
    ControllerDetach(AllocId, VolumeId),
    ClaimFreed(AllocId, VolumeId),
    /// The leader's periodic claim GC (`csi_volume_claim_gc_interval`).
    ClaimGc,
    /// The leader's once-a-minute re-enqueue of evaluations blocked after
    /// exhausting their plan retries (blocked_evals.go UnblockFailed).
    UnblockFailed,
    /// The allocation has run for its `healthy_after` (see health.rs).
    AllocHealthy(AllocId),
    /// A deployment's allocation has been healthy for `min_healthy_time`.
    DeployHealthy(AllocId),
    /// A deployment's allocation reaches its `healthy_deadline`.
    HealthyDeadline(AllocId),
    /// A deployment may have reached its progress deadline.
    ProgressDeadline(JobId),
    /// The heartbeat timer of a client disconnected at the given time runs out.
    HeartbeatMissed(NodeId, Millis),
    /// A client disconnected at the given time stops its allocations
    /// (`stop_after_client_disconnect`).
    ClientHeartbeatStop(NodeId, Millis),
    /// An allocation unknown since the given time reaches `max_client_disconnect`.
    DisconnectExpired(AllocId, Millis),
    /// The drainer looks at every draining node (a deadline, a change of
    /// health it waits for).
    DrainPass,
    /// The drainer's batched migration marks are written (1s window).
    DrainBatch,
}

struct Simulation<'s> {
    scenario: &'s Scenario,
    /// The policy resolved against the release table: what every behaviour
    /// that differs between releases reads.
    behaviour: Behaviour,
    options: RunOptions,
    queue: EventQueue<Event>,
    shuffle_rng: SimRng,
    /// The last evaluation's candidate list, kept for the next one: on a
    /// 40,000-node cluster it is 160 kB, which the allocator would map and
    /// unmap (and the kernel zero) once per evaluation.
    spare_order: Vec<NodeId>,
    /// The last evaluation's per-node group counts (one tally per group of
    /// its job, zeroed), reused for the same reason: at 40,000 nodes each
    /// is 320 kB. Never more than the largest job's groups times the nodes
    /// times 12 bytes (a count pair and a touched node each).
    spare_group_counts: Vec<hot::GroupTally>,
    nodes: Vec<NodeState>,
    volumes: Vec<VolumeState>,
    jobs: Vec<JobState>,
    allocs: Vec<Alloc>,
    broker: EvalBroker,
    /// The plan each busy worker will submit.
    workers: Vec<Option<Plan>>,
    metrics: Metrics,
    /// Where trace rows go; `None` when not tracing.
    trace: Option<&'s mut dyn TraceSink>,
    /// Jobs whose registration has been processed (registered or rejected).
    jobs_submitted: usize,
    /// Groups of registered jobs that are not fully placed.
    unsatisfied_groups: usize,
    /// Jobs whose last evaluation could not place everything (Nomad's blocked
    /// evaluations): re-evaluated when capacity or a volume frees up.
    blocked: BTreeSet<JobId>,
    placement_failures: BTreeMap<GroupRef, feasibility::PlacementFailure>,
    stopped_early: Option<String>,
    /// Queue entries handled, for the MAX_RUN_EVENTS cap.
    steps: u64,
    /// Jobs refused at registration, with the registration error.
    rejections: Vec<(JobId, String)>,
    /// Claims of stopped allocations on down nodes, waiting for a claim GC
    /// pass to release them.
    awaiting_claim_gc: BTreeSet<(VolumeId, AllocId)>,
    /// A `ClaimGc` tick is queued.
    claim_gc_scheduled: bool,
    /// How many distinct computed classes there are.
    class_count: usize,
    /// Jobs blocked because their evaluation exhausted its plan retries
    /// (Nomad's max-plans blocked evaluations), and whether a sweep is queued.
    max_plans_blocked: BTreeSet<JobId>,
    unblock_failed_scheduled: bool,
    /// For each blocked job, its evaluation's class eligibility (Nomad's
    /// ClassEligibility; `None`: not seen) and whether it escaped.
    blocked_classes: BTreeMap<JobId, (bool, Vec<Option<bool>>)>,
    /// Each plugin's controller (see plugins.rs).
    controllers: Vec<plugins::ControllerState>,
    /// Claims whose ControllerUnpublish waits for a healthy controller.
    awaiting_controller: BTreeSet<(VolumeId, AllocId)>,
    /// How long each successful deployment took (for `time_to_deploy_s`).
    deploy_times: Vec<Millis>,
    /// Disconnected clients and their allocations.
    disconnects: disconnect::Disconnects,
    /// Nodes being drained with a drain strategy, and pending marks.
    drains: drain::Drains,
    /// Every group's live allocations and their nodes (see hot.rs).
    live: hot::LiveAllocs,
    /// What scoring reads per node, one cache line each, and which nodes
    /// are schedulable (see hot.rs).
    node_table: hot::NodeTable,
    /// Bin-pack terms by (used, capacity), shared by every node (see hot.rs).
    free_terms: hot::FreeTermMemo,
    /// The applier's scratch index from node to its part of a plan
    /// (`u32::MAX`: none), reset after every plan.
    node_slot: Vec<u32>,
    /// Each node's datacenter as a dense index (see hot.rs).
    datacenters: hot::Datacenters,
    /// Node plugin allocations a drain marked, and why (plugin_drain.rs).
    plugin_marks: plugin_drain::PluginMarks,
    /// Volume mounts of every allocation made so far: with the
    /// allocations, what MAX_PLACEMENTS_PER_RUN counts (stall.rs).
    mounts_placed: usize,
}

impl<'s> Simulation<'s> {
    fn new(scenario: &'s Scenario, options: RunOptions) -> Self {
        let nodes = scenario
            .nodes
            .iter()
            .map(|spec| NodeState {
                status: NodeStatus::Ready,
                eligible: true,
                plugin_healthy: spec.csi_plugins.iter().map(|p| p.healthy).collect(),
                allocs: Default::default(),
                claimed_volumes: Default::default(),
                alloc_volumes: Default::default(),
                published_volumes: Default::default(),
                counted_volumes: Default::default(),
                down_since: Millis::ZERO,
                plugin_present: spec.csi_plugins.iter().map(|p| !p.from_job).collect(),
                plugin_providers: vec![0; spec.csi_plugins.len()],
                disconnected_at: None,
            })
            .collect();
        let jobs = scenario
            .jobs
            .iter()
            .map(|spec| {
                let groups = spec.groups.len();
                JobState {
                    status: JobStatus::NotSubmitted,
                    counts: spec.groups.iter().map(|g| g.count).collect(),
                    latest: vec![Default::default(); groups],
                    running: vec![0; groups],
                    complete: vec![0; groups],
                    // Unregistered jobs count as satisfied; registration flips them.
                    satisfied: vec![true; groups],
                    eval_queued: false,
                    eval_in_flight: false,
                    eval_dirty: false,
                    healthy: vec![0; groups],
                    ever_available: vec![false; groups],
                    unavailable_since: vec![None; groups],
                    version: 0,
                    stable_version: 0,
                    deployment: None,
                    deployments_started: 0,
                    last_success: None,
                    canaries: Vec::new(),
                    displaced: Vec::new(),
                }
            })
            .collect();
        // Timeline events go in first, so at equal times the cluster changes
        // (say, a node down at 0s) before jobs arrive; ties keep file order.
        // Room for what is queued now: a sweep builds a simulation per run,
        // and a fixed 24 kB queue was the one allocation per run too large
        // for the allocator's per-thread cache (each made it sweep its fast
        // bins); the queue grows by doubling when a run needs more.
        let mut queue = EventQueue::with_capacity(scenario.events.len() + scenario.jobs.len() + 16);
        for (index, event) in scenario.events.iter().enumerate() {
            queue.schedule(event.at, Event::Timeline(index));
        }
        for (index, job) in scenario.jobs.iter().enumerate() {
            queue.schedule(job.submit_at, Event::JobSubmit(JobId::from_index(index)));
        }
        let node_table = hot::NodeTable::new(
            scenario
                .nodes
                .iter()
                .zip(scheduler::computed_classes(scenario))
                .map(|(n, class)| {
                    let limited = n.csi_plugins.iter().any(|p| p.max_volumes > 0);
                    (n.cpu, n.memory, class, limited)
                }),
        );
        Simulation {
            scenario,
            behaviour: options.policy.behaviour(),
            options,
            queue,
            shuffle_rng: SimRng::new(options.seed, Stream::NodeShuffle),
            spare_order: Vec::new(),
            spare_group_counts: Vec::new(),
            nodes,
            volumes: vec![VolumeState::default(); scenario.volumes.len()],
            jobs,
            allocs: Vec::with_capacity(alloc_parts::expected_allocations(scenario)),
            broker: EvalBroker::default(),
            workers: vec![None; scenario.cluster.scheduler_workers as usize],
            metrics: Metrics::default(),
            trace: None,
            jobs_submitted: 0,
            unsatisfied_groups: 0,
            blocked: Default::default(),
            placement_failures: Default::default(),
            stopped_early: None,
            steps: 0,
            rejections: Vec::new(),
            awaiting_claim_gc: Default::default(),
            claim_gc_scheduled: false,
            class_count: node_table.class_count(),
            max_plans_blocked: Default::default(),
            unblock_failed_scheduled: false,
            blocked_classes: Default::default(),
            controllers: scenario
                .plugins
                .iter()
                .map(|p| plugins::ControllerState {
                    healthy: p.controller_healthy,
                    running: 0,
                })
                .collect(),
            awaiting_controller: Default::default(),
            deploy_times: Vec::new(),
            disconnects: Default::default(),
            drains: Default::default(),
            live: hot::LiveAllocs::new(scenario.jobs.iter().map(|j| j.groups.len())),
            node_table,
            free_terms: hot::FreeTermMemo::for_nodes(scenario.nodes.len()),
            datacenters: hot::Datacenters::new(scenario.nodes.iter().map(|n| &n.datacenter)),
            node_slot: vec![u32::MAX; scenario.nodes.len()],
            plugin_marks: Default::default(),
            mounts_placed: 0,
        }
    }

    fn now(&self) -> Millis {
        self.queue.now()
    }

    /// Schedules `event` at `at`; an event past the horizon would never be
    /// processed, so it is not queued at all (which also keeps every queued
    /// time within the queue's range).
    fn at(&mut self, at: Millis, event: Event) {
        if at <= self.scenario.horizon {
            self.queue.schedule(at, event);
        }
    }

    /// Schedules `event` `delay` from now.
    fn after(&mut self, delay: Millis, event: Event) {
        self.at(self.now() + delay, event);
    }

    fn run(&mut self, progress: &mut dyn FnMut(Millis, u64)) {
        let horizon = self.scenario.horizon;
        // Queue entries handled at the current instant (see stall.rs).
        let (instant_limit, mut instant, mut at_instant) = (self.instant_limit(), Millis::ZERO, 0);
        while let Some((at, event)) = self.queue.pop_until(horizon) {
            (instant, at_instant) = if at == instant {
                (at, at_instant + 1)
            } else {
                (at, 1)
            };
            if at_instant > instant_limit {
                self.stopped_early = Some(self.describe_stall(event, at_instant - 1));
                return;
            }
            if self.allocs.len() + self.mounts_placed > stall::MAX_PLACEMENTS_PER_RUN {
                self.stopped_early = Some(self.describe_churn());
                return;
            }
            if let Some((max, name)) = self
                .trace
                .as_ref()
                .map(|t| (t.rows(), t.max_rows()))
                .and_then(|(rows, (max, name))| (rows >= max).then_some((max, name)))
            {
                self.stopped_early = Some(self.describe_long_trace(max, name));
                return;
            }
            if self.steps >= self.options.max_events {
                self.stopped_early = Some(format!(
                    "stopped after {} events at {}s of {}s (MAX_RUN_EVENTS): the scenario may loop",
                    self.steps,
                    self.now(),
                    horizon
                ));
                return;
            }
            self.steps += 1;
            if self.steps.is_multiple_of(PROGRESS_EVERY) {
                progress(self.now(), self.steps);
            }
            self.handle(event);
            self.note_full_placement();
            if self.options.check_invariants {
                self.check_invariants();
            }
        }
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::JobSubmit(job) => self.submit_job(job),
            Event::Timeline(index) => self.apply_timeline(index),
            Event::PlanSubmit { worker } => self.plan_submitted(worker),
            Event::RescheduleDue(job) => self.enqueue_eval(job),
            Event::AllocPulled(alloc) => self.alloc_pulled(alloc),
            Event::ClaimAttempt(alloc) => self.claim_attempt(alloc),
            Event::PublishDone(alloc) => self.publish_done(alloc),
            Event::TaskComplete(alloc) => self.task_complete(alloc),
            Event::NodeDetach(alloc, volume) => self.node_detach(alloc, volume),
            Event::ControllerDetach(alloc, volume) => self.controller_detach(alloc, volume),
            Event::ClaimFreed(alloc, volume) => self.claim_freed(alloc, volume),
            Event::ClaimGc => self.claim_gc(),
            Event::UnblockFailed => self.unblock_failed(),
            Event::AllocHealthy(alloc) => self.alloc_health_due(alloc),
            Event::DeployHealthy(alloc) => self.deploy_healthy_due(alloc),
            Event::HealthyDeadline(alloc) => self.healthy_deadline_due(alloc),
            Event::ProgressDeadline(job) => self.progress_deadline_due(job),
            Event::HeartbeatMissed(node, since) => self.heartbeat_missed(node, since),
            Event::ClientHeartbeatStop(node, since) => self.client_heartbeat_stop(node, since),
            Event::DisconnectExpired(alloc, since) => self.disconnect_expired(alloc, since),
            Event::DrainPass => self.drain_pass(),
            Event::DrainBatch => self.drain_batch(),
        }
    }

    /// Counts a simulation event (the `events` metric) and, when tracing,
    /// logs it: the trace has exactly one row per event counted. Queue
    /// entries that change nothing observable (an image pulled, a detach
    /// step) are mechanics, not events.
    fn record(&mut self, record: impl FnOnce(Millis) -> TraceRecord) {
        self.metrics.events += 1;
        if let Some(trace) = &mut self.trace {
            trace.record(record(self.queue.now()));
        }
    }

    fn finish(mut self) -> RunOutput {
        let horizon = self.scenario.horizon;
        self.close_availability();
        if !self.deploy_times.is_empty() {
            let total: u64 = self.deploy_times.iter().map(|t| t.0).sum();
            self.metrics.time_to_deploy = Some(Millis(total / self.deploy_times.len() as u64));
        }
        for volume in &mut self.volumes {
            if let Some(since) = volume.violating_since.take() {
                self.metrics.violation_time += horizon - since;
            }
        }
        // A system or sysbatch job's allocations are not in `desired`.
        self.metrics.desired = self
            .jobs
            .iter()
            .zip(&self.scenario.jobs)
            .filter(|(job, spec)| job.status == JobStatus::Registered && !spec.is_system())
            .flat_map(|(job, _)| job.counts.iter())
            .map(|&count| u64::from(count))
            .sum();
        self.metrics.running = self
            .allocs
            .iter()
            .filter(|alloc| alloc.state == AllocState::Running)
            .count() as u64;
        if let Some(trace) = &mut self.trace {
            trace.end();
        }
        RunOutput {
            metrics: self.metrics,
            // Filled by `simulate_observed` from its in-memory sink.
            trace: None,
            placement_failures: self.placement_failures.into_values().collect(),
            stopped_early: self.stopped_early,
            rejections: self.rejections,
        }
    }

    /// Records the first moment every live job has its desired count running
    /// (batch allocations that completed count as done). Checked only once
    /// every job has been submitted, so an early, partial cluster does not count.
    fn note_full_placement(&mut self) {
        if self.metrics.first_full.is_some() || self.jobs_submitted < self.jobs.len() {
            return;
        }
        let any_live = self
            .jobs
            .iter()
            .zip(&self.scenario.jobs)
            .any(|(job, spec)| job.status == JobStatus::Registered && !spec.is_system());
        if any_live && self.unsatisfied_groups == 0 {
            self.metrics.first_full = Some(self.now());
        }
    }

    /// Re-derives whether a group is fully placed and keeps the count of
    /// unsatisfied groups in step.
    fn refresh_group(&mut self, group: GroupRef) {
        let spec = &self.scenario.jobs[group.job.index()];
        let (batch, system) = (spec.is_batch(), spec.is_system());
        let job = &mut self.jobs[group.job.index()];
        let g = group.group_index();
        // A system job's groups never hold up full placement (`first_full_s`).
        let satisfied = job.status != JobStatus::Registered || system || {
            let done = job.running[g] + if batch { job.complete[g] } else { 0 };
            done >= job.counts[g]
        };
        if satisfied != job.satisfied[g] {
            job.satisfied[g] = satisfied;
            if satisfied {
                self.unsatisfied_groups -= 1;
            } else {
                self.unsatisfied_groups += 1;
            }
        }
        // The desired count, the job's status or the completed count may
        // have changed too.
        self.refresh_availability(group);
    }

    fn refresh_job(&mut self, job: JobId) {
        for g in 0..self.jobs[job.index()].counts.len() {
            self.refresh_group(GroupRef::new(job, g));
        }
    }

    /// Capacity or a volume freed up: every blocked job gets another evaluation.
    fn unblock(&mut self) {
        for job in std::mem::take(&mut self.blocked) {
            self.enqueue_eval(job);
        }
    }

    /// A node changed, or an allocation on it stopped: Nomad's
    /// blocked_evals.go Unblock(class) retries every blocked job except those
    /// whose evaluation found the node's computed class ineligible (and did
    /// not escape its class).
    fn unblock_class(&mut self, node: NodeId) {
        let class = self.node_table.class(node) as usize;
        let blocked = std::mem::take(&mut self.blocked);
        for job in blocked {
            let skip = self
                .blocked_classes
                .get(&job)
                .is_some_and(|(escaped, classes)| !escaped && classes[class] == Some(false));
            if skip {
                self.blocked.insert(job);
            } else {
                self.enqueue_eval(job);
            }
        }
    }

    /// How many of `volumes` belong to `plugin` (`max_volumes` is per plugin).
    fn count_of_plugin<'v>(
        &self,
        volumes: impl Iterator<Item = &'v VolumeId>,
        plugin: PluginId,
    ) -> usize {
        volumes
            .filter(|v| self.scenario.volumes[v.index()].plugin == plugin)
            .count()
    }

    /// Node status and eligibility change only here, so the node table's
    /// schedulable mirror follows them.
    fn set_node_status(&mut self, node: NodeId, status: NodeStatus) {
        self.nodes[node.index()].status = status;
        self.sync_schedulable(node);
    }

    fn set_node_eligible(&mut self, node: NodeId, eligible: bool) {
        self.nodes[node.index()].eligible = eligible;
        self.sync_schedulable(node);
    }

    fn sync_schedulable(&mut self, node: NodeId) {
        let schedulable = self.nodes[node.index()].schedulable();
        self.node_table.set_schedulable(node, schedulable);
    }

    fn node_name(&self, node: NodeId) -> &str {
        &self.scenario.nodes[node.index()].name
    }
}
