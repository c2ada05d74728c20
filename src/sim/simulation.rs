//! The simulation's state as one struct: the cluster as Nomad's servers
//! know it (nodes, volumes, jobs, allocations: the state store), the
//! servers' own bookkeeping (broker, workers' plans, blocked evaluations,
//! deployments, drains), the clients' (disconnects, plugin marks), the
//! scheduler's hot indexes, and the event queue that drives them all. The
//! handlers that change it are `impl Simulation` blocks in the files of the
//! Nomad part they model (`server/`, `client/`); this file holds only the
//! struct, its events, its constructor and the small helpers every part
//! uses, and imports none of those handler files.

use crate::engine::queue::EventQueue;
use crate::engine::rng::{SimRng, Stream};
use std::collections::{BTreeMap, BTreeSet};

use crate::model::ids::{AllocId, GroupRef, JobId, NodeId, PluginId, VolumeId};
use crate::model::metrics::Metrics;
use crate::model::policy::Policy;
use crate::model::release::Behaviour;
use crate::model::scenario::{GroupSpec, Reserved, Scenario};
use crate::model::time::Millis;

use crate::sim::client::disconnect_state::Disconnects;
use crate::sim::server::drainer::drain_state::{Drains, PluginMarks};
use crate::sim::server::eval_broker::EvalBroker;
use crate::sim::server::scheduler::classes::{NodeClasses, computed_classes};
use crate::sim::server::scheduler::feasibility::PlacementFailure;
use crate::sim::server::scheduler::hot;
use crate::sim::server::scheduler::plan::Plan;
use crate::sim::state::alloc_parts;
use crate::sim::state::store::{
    Alloc, ControllerState, JobState, JobStatus, NodeState, NodeStatus, VolumeState,
};
use crate::sim::trace::{TraceRecord, TraceSink};

/// What one run produces.
#[derive(Clone, Debug)]
pub struct RunOutput {
    pub metrics: Metrics,
    /// Present when the run was asked to trace.
    pub trace: Option<Vec<TraceRecord>>,
    /// Groups the latest evaluation could not place in full, in group order.
    pub placement_failures: Vec<PlacementFailure>,
    /// Why the run stopped before its horizon, if it did (the event cap).
    pub stopped_early: Option<String>,
    /// Jobs refused at registration, with the registration error.
    pub rejections: Vec<(JobId, String)>,
    /// Each job's first evaluation, in job order: what `nomad job plan`
    /// shows for it before anything runs.
    pub first_plans: Vec<FirstPlan>,
}

/// A job's first evaluation: the allocations its plan creates per group,
/// and the groups it could not place in full.
#[derive(Clone, Debug)]
pub struct FirstPlan {
    pub job: JobId,
    pub created: Vec<u32>,
    pub failures: Vec<PlacementFailure>,
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

/// Everything that happens, as a closed set of events.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
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
    /// A restarting node plugin (the node, the slot in its `csi_plugins`)
    /// is back.
    PluginRestarted(NodeId, usize),
    /// A volume with a `register_at` is registered.
    VolumeRegistered(VolumeId),
    /// A system deployment's batched evaluation is created
    /// (deployment_watcher.go createBatchedUpdate: 1s after the first
    /// allocation health change it batches).
    DeploymentEvalBatch(JobId),
    /// A stopped allocation's client has killed its tasks and run its
    /// poststop tasks (`kill_timeout`, `shutdown_delay`), or killed those
    /// of an allocation past its `max_run_duration`.
    TasksKilled(AllocId),
    /// The allocation's `max_run_duration` since its creation is reached.
    RunDeadline(AllocId),
}

pub(crate) struct Simulation<'s> {
    pub(crate) scenario: &'s Scenario,
    /// The policy resolved against the release table: what every behaviour
    /// that differs between releases reads.
    pub(crate) behaviour: Behaviour,
    pub(crate) options: RunOptions,
    pub(crate) queue: EventQueue<Event>,
    pub(crate) shuffle_rng: SimRng,
    /// Draws the orders Nomad takes from ranging over Go maps: each
    /// evaluation's task-group order (`group_order`) and a system
    /// evaluation's placement order (`order_system_placements`).
    pub(crate) group_rng: SimRng,
    /// The nodes in the order of their random Nomad node IDs (the state
    /// store's node table), drawn at the first system evaluation that
    /// needs it; empty before.
    pub(crate) node_id_order: Vec<u32>,
    /// The last evaluation's candidate list, kept for the next one: on a
    /// 40,000-node cluster it is 160 kB, which the allocator would map and
    /// unmap (and the kernel zero) once per evaluation.
    pub(crate) spare_order: Vec<NodeId>,
    /// The last evaluation's per-node group counts (one tally per group of
    /// its job, zeroed), reused for the same reason: at 40,000 nodes each
    /// is 320 kB. Never more than the largest job's groups times the nodes
    /// times 12 bytes (a count pair and a touched node each).
    pub(crate) spare_group_counts: Vec<hot::GroupTally>,
    pub(crate) nodes: Vec<NodeState>,
    pub(crate) volumes: Vec<VolumeState>,
    pub(crate) jobs: Vec<JobState>,
    pub(crate) allocs: Vec<Alloc>,
    pub(crate) broker: EvalBroker,
    /// The plan each busy worker will submit.
    pub(crate) workers: Vec<Option<Plan>>,
    pub(crate) metrics: Metrics,
    /// Where trace rows go; `None` when not tracing.
    pub(crate) trace: Option<&'s mut dyn TraceSink>,
    /// Jobs whose registration has been processed (registered or rejected).
    pub(crate) jobs_submitted: usize,
    /// Groups of registered jobs that are not fully placed.
    pub(crate) unsatisfied_groups: usize,
    /// Jobs whose last evaluation could not place everything (Nomad's blocked
    /// evaluations): re-evaluated when capacity or a volume frees up.
    pub(crate) blocked: BTreeSet<JobId>,
    pub(crate) placement_failures: BTreeMap<GroupRef, PlacementFailure>,
    pub(crate) first_plans: BTreeMap<JobId, FirstPlan>,
    pub(crate) stopped_early: Option<String>,
    /// Queue entries handled, for the MAX_RUN_EVENTS cap.
    pub(crate) steps: u64,
    /// Jobs refused at registration, with the registration error.
    pub(crate) rejections: Vec<(JobId, String)>,
    /// Claims of stopped allocations on down nodes, waiting for a claim GC
    /// pass to release them.
    pub(crate) awaiting_claim_gc: BTreeSet<(VolumeId, AllocId)>,
    /// A `ClaimGc` tick is queued.
    pub(crate) claim_gc_scheduled: bool,
    /// How many distinct computed classes there are.
    pub(crate) class_count: usize,
    /// Each computed class's node class, for the failure metrics.
    pub(crate) node_classes: NodeClasses,
    /// Jobs blocked because their evaluation exhausted its plan retries
    /// (Nomad's max-plans blocked evaluations), and whether a sweep is queued.
    pub(crate) max_plans_blocked: BTreeSet<JobId>,
    pub(crate) unblock_failed_scheduled: bool,
    /// For each blocked job, its evaluation's class eligibility (Nomad's
    /// ClassEligibility; `None`: not seen) and whether it escaped.
    pub(crate) blocked_classes: BTreeMap<JobId, (bool, Vec<Option<bool>>)>,
    /// Each plugin's controller (see plugins.rs).
    pub(crate) controllers: Vec<ControllerState>,
    /// Claims whose ControllerUnpublish waits for a healthy controller.
    pub(crate) awaiting_controller: BTreeSet<(VolumeId, AllocId)>,
    /// How long each successful deployment took (for `time_to_deploy_s`).
    pub(crate) deploy_times: Vec<Millis>,
    /// Disconnected clients and their allocations.
    pub(crate) disconnects: Disconnects,
    /// Nodes being drained with a drain strategy, and pending marks.
    pub(crate) drains: Drains,
    /// Every group's live allocations and their nodes (see hot.rs).
    pub(crate) live: hot::LiveAllocs,
    /// What scoring reads per node, one cache line each, and which nodes
    /// are schedulable (see hot.rs).
    pub(crate) node_table: hot::NodeTable,
    /// Bin-pack terms by (used, capacity), shared by every node (see hot.rs).
    pub(crate) free_terms: hot::FreeTermMemo,
    /// The applier's scratch index from node to its part of a plan
    /// (`u32::MAX`: none), reset after every plan.
    pub(crate) node_slot: Vec<u32>,
    /// Each node's datacenter as a dense index (see hot.rs).
    pub(crate) datacenters: hot::Datacenters,
    /// Each node's node pool as a dense index, the same way.
    pub(crate) node_pools: hot::Datacenters,
    /// Node plugin allocations a drain marked, and why (plugin_drain.rs).
    pub(crate) plugin_marks: PluginMarks,
    /// Volume mounts of every allocation made so far: with the
    /// allocations, what MAX_PLACEMENTS_PER_RUN counts (stall.rs).
    pub(crate) mounts_placed: usize,
    /// Node plugins restarting (`plugin_restart`), by node and slot in its
    /// `csi_plugins`.
    pub(crate) plugin_restarts: BTreeSet<(NodeId, usize)>,
    /// Volumes whose `register_at` has not come yet: not in the state
    /// store, so missing to the scheduler.
    pub(crate) unregistered: BTreeSet<VolumeId>,
    /// Draws of storage provider failures (publish_failures.rs).
    pub(crate) publish_rng: SimRng,
    /// The ports allocations hold, per node that has any (state/ports.rs).
    pub(crate) ports: crate::sim::state::ports::PortTable,
    /// Writers and mounts of dynamic host volumes (state/host_volumes.rs).
    pub(crate) host_volume_table: crate::sim::state::host_volumes::HostVolumeTable,
    /// Per periodic parent, its launched children that may still be
    /// running (the `prohibit_overlap` check, server/periodic.rs).
    pub(crate) launched: BTreeMap<JobId, Vec<JobId>>,
}

impl<'s> Simulation<'s> {
    pub(crate) fn new(scenario: &'s Scenario, options: RunOptions) -> Self {
        let nodes = initial_nodes(scenario);
        let jobs = initial_jobs(scenario);
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
        // A volume registered at a job's submission time is there for it.
        let mut unregistered = BTreeSet::new();
        for (index, volume) in scenario.volumes.iter().enumerate() {
            if volume.register_at > Millis::ZERO {
                let id = VolumeId::from_index(index);
                unregistered.insert(id);
                queue.schedule(volume.register_at, Event::VolumeRegistered(id));
            }
        }
        for (index, job) in scenario.jobs.iter().enumerate() {
            queue.schedule(job.submit_at, Event::JobSubmit(JobId::from_index(index)));
        }
        let node_table =
            hot::NodeTable::new(scenario.nodes.iter().zip(computed_classes(scenario)).map(
                |(n, class)| {
                    let limited = n.csi_plugins.iter().any(|p| p.max_volumes > 0);
                    let capacity = Reserved {
                        cpu: n.cpu,
                        memory: n.memory,
                        disk: n.disk,
                    };
                    (capacity, class, limited)
                },
            ));
        Simulation {
            scenario,
            behaviour: options.policy.behaviour(),
            options,
            queue,
            shuffle_rng: SimRng::new(options.seed, Stream::NodeShuffle),
            group_rng: SimRng::new(options.seed, Stream::GroupOrder),
            node_id_order: Vec::new(),
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
            first_plans: BTreeMap::new(),
            stopped_early: None,
            steps: 0,
            rejections: Vec::new(),
            awaiting_claim_gc: Default::default(),
            claim_gc_scheduled: false,
            class_count: node_table.class_count(),
            node_classes: NodeClasses::new(scenario),
            max_plans_blocked: Default::default(),
            unblock_failed_scheduled: false,
            blocked_classes: Default::default(),
            controllers: scenario
                .plugins
                .iter()
                .map(|p| ControllerState {
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
            node_pools: hot::Datacenters::new(scenario.nodes.iter().map(|n| &n.node_pool)),
            node_slot: vec![u32::MAX; scenario.nodes.len()],
            plugin_marks: Default::default(),
            mounts_placed: 0,
            plugin_restarts: BTreeSet::new(),
            unregistered,
            publish_rng: SimRng::new(options.seed, Stream::PublishFailure),
            ports: Default::default(),
            host_volume_table: crate::sim::state::host_volumes::HostVolumeTable::new(
                scenario.host_volumes.len(),
                scenario.jobs.iter().any(|job| {
                    std::iter::once(&job.groups)
                        .chain(&job.versions)
                        .flatten()
                        .any(|group| !group.host_volumes.is_empty())
                }),
            ),
            launched: BTreeMap::new(),
        }
    }

    pub(crate) fn now(&self) -> Millis {
        self.queue.now()
    }

    /// What one allocation of `spec` reserves on its node, its lifecycle
    /// tasks counted by the release's rule (`AllocatedResources.Comparable`).
    #[inline]
    pub(crate) fn reserves(&self, spec: &GroupSpec) -> Reserved {
        spec.ask(self.behaviour.release.task_resources)
    }

    /// Schedules `event` at `at`; an event past the horizon would never be
    /// processed, so it is not queued at all (which also keeps every queued
    /// time within the queue's range).
    pub(crate) fn at(&mut self, at: Millis, event: Event) {
        if at <= self.scenario.horizon {
            self.queue.schedule(at, event);
        }
    }

    /// Schedules `event` `delay` from now.
    pub(crate) fn after(&mut self, delay: Millis, event: Event) {
        self.at(self.now() + delay, event);
    }

    /// Counts a simulation event (the `events` metric) and, when tracing,
    /// logs it: the trace has exactly one row per event counted. Queue
    /// entries that change nothing observable (an image pulled, a detach
    /// step) are mechanics, not events.
    pub(crate) fn record(&mut self, record: impl FnOnce(Millis) -> TraceRecord) {
        self.metrics.events += 1;
        if let Some(trace) = &mut self.trace {
            trace.record(record(self.queue.now()));
        }
    }

    /// Re-derives whether a group is fully placed and keeps the count of
    /// unsatisfied groups in step.
    pub(crate) fn refresh_group(&mut self, group: GroupRef) {
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

    pub(crate) fn refresh_job(&mut self, job: JobId) {
        for g in 0..self.jobs[job.index()].counts.len() {
            self.refresh_group(GroupRef::new(job, g));
        }
    }

    /// How many of `volumes` belong to `plugin` (`max_volumes` is per plugin).
    pub(crate) fn count_of_plugin<'v>(
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
    pub(crate) fn set_node_status(&mut self, node: NodeId, status: NodeStatus) {
        self.nodes[node.index()].status = status;
        self.sync_schedulable(node);
    }

    pub(crate) fn set_node_eligible(&mut self, node: NodeId, eligible: bool) {
        self.nodes[node.index()].eligible = eligible;
        self.sync_schedulable(node);
    }

    pub(crate) fn sync_schedulable(&mut self, node: NodeId) {
        let schedulable = self.nodes[node.index()].schedulable();
        self.node_table.set_schedulable(node, schedulable);
    }

    pub(crate) fn node_name(&self, node: NodeId) -> &str {
        &self.scenario.nodes[node.index()].name
    }
}

/// Every node as it starts: ready, eligible, its plugins as the scenario
/// declares them (a plugin a job provides is absent until the job runs it).
fn initial_nodes(scenario: &Scenario) -> Vec<NodeState> {
    scenario
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
        .collect()
}

/// Every job as it starts: not yet submitted, at its first version.
fn initial_jobs(scenario: &Scenario) -> Vec<JobState> {
    scenario
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
                eval_batch: false,
            }
        })
        .collect()
}
