//! The release table: one row per supported Nomad release, one field per
//! behaviour plansim models that changed between them. This is the only
//! place a release's behaviour is chosen: a policy resolves to a row
//! (`Policy::behaviour`), the simulation reads the row's fields, and nothing
//! in `sim` asks which release or policy it runs.
//!
//! Each field's doc names the Nomad change (pull request, and the
//! file:function at the tags; paths are v1.2.6's, with v2.0.5's after `/`
//! where it moved) and the release that shipped it. ARCHITECTURE's
//! "Nomad behaviours modelled, by pinned release" table describes each
//! behaviour at length. Adding a release is adding a row: a `static` here
//! and its place in [`RELEASES`].

use crate::model::lifecycle::TaskResourceRule;
use crate::model::time::Millis;

/// What one Nomad release does where releases differ.
#[derive(Debug, PartialEq, Eq)]
pub struct Release {
    /// The tag, without its `v`: "1.2.6".
    pub version: &'static str,

    // --- Scheduler: feasibility (scheduler/feasible.go / feasible/feasible.go)
    /// A node of a computed class already eligible for the group that fails
    /// the CSI check ends the whole node iteration
    /// (`FeasibilityWrapper.Next`; fixed by #13274 in 1.2.9 and 1.3.2).
    pub class_early_return: bool,
    /// The CSI checker requires the node's topology to be one of the
    /// volume's ("did not meet topology requirement"): #12129, 1.3.0
    /// (`CSIVolumeChecker.isFeasible`).
    pub checks_topology: bool,
    /// Which missing volumes the CSI checker names
    /// (`CSIVolumeChecker.SetVolumes`, `Feasible`: "missing CSI Volume X"
    /// up to 2.0.4, "missing CSI volume(s) X, Y" from #28275, backported
    /// to 2.0.5 as #28312).
    pub missing_volumes: MissingVolumes,

    // --- Scheduler: constraints (feasible.go / feasible/feasible.go:checkConstraint)
    /// How `<`, `<=`, `>`, `>=` compare (`checkLexicalOrder` at 1.2.6,
    /// `checkOrder` at 2.0.5).
    pub ordered_operators: OrderedOperators,
    /// What `!=` sees for an attribute the node lacks (`checkConstraint`,
    /// `resolveTarget`: 2.0.5 resolves it to "").
    pub missing_attribute: MissingAttribute,
    /// A `distinct_hosts` constraint's value is read as a boolean (`"false"`
    /// turns it off) instead of ignored (`DistinctHostsIterator.SetJob`,
    /// `SetTaskGroup`, 2.0.5's `strconv.ParseBool` of the value).
    pub distinct_hosts_reads_value: bool,

    // --- Scheduler: ranking (scheduler/spread.go / feasible/spread.go, rank.go / feasible/rank.go)
    /// Values of a spread attribute not among the targets count together as
    /// the implicit target `*` (`SpreadIterator.SetTaskGroup`'s
    /// `SetTargetValues`, `propertySet.targetedPropertyValue`, 2.0.5); a
    /// spread without targets keeps every value apart
    /// (`targetValues.Empty()`), so its even spread still sees each value.
    pub spread_pools_untargeted_values: bool,
    /// A target whose desired count is 0 scores the lowest boost seen in the
    /// evaluation (from -1) instead of dividing by zero
    /// (`SpreadIterator.Next`, `lowestSpreadBoost`, 2.0.5).
    pub spread_zero_desired_scores_lowest: bool,
    /// The node-affinity score is appended even when it is 0
    /// (`NodeAffinityIterator.Next`; 1.2.6 appends it only when not 0).
    pub affinity_score_always_appended: bool,

    // --- Scheduler: failure metrics (scheduler/util.go readyNodesInDCs)
    /// AllocMetric's NodesAvailable lists every datacenter of the job, those
    /// without a ready node with 0 (`nomad job status`: "No nodes are
    /// available in datacenter"); from 1.5.0 (#11170, wildcard
    /// datacenters) only datacenters with a ready node are listed.
    pub lists_empty_datacenters: bool,
    /// Nodes and jobs are in node pools, and an evaluation considers only
    /// the nodes of the job's pool (every node for "all"); a job naming a
    /// pool no node is in is refused at registration ("job %q is in
    /// nonexistent node pool %q"). Node pools arrived in 1.6.0 (GH-11041:
    /// `scheduler/util.go:readyNodesInDCsAndPool`,
    /// `nomad/job_endpoint_hook_node_pool.go:Validate`); before, there is
    /// no pool and `node_pool` is ignored.
    pub node_pools: bool,
    /// Dynamic host volumes exist (1.10.0): a node's host volume can be a
    /// volume with access modes, which the HostVolumeChecker checks against
    /// every allocation proposed on the node, the plan's own included
    /// (`scheduler/feasible/feasible.go:HostVolumeChecker.hasVolumes`,
    /// `hostVolumeIsAvailable`; #24684, in 1.10.0). Before, every host
    /// volume is a static one of the client's configuration, checked only
    /// for presence and read-only (1.2.6 `HostVolumeChecker.hasVolumes`).
    pub dynamic_host_volumes: bool,
    /// The host volume check is one of a group's checks cached per computed
    /// class, which host volumes are not part of (1.2.6 `stack.go`:
    /// `taskGroupHostVolumes` in `tgs`): a class is judged by its first
    /// node. Fixed in 1.7.0 (#18679), which checks every node (`avail`).
    pub host_volumes_class_cached: bool,
    /// A group whose ephemeral disk has `migrate` but not `sticky` also
    /// prefers its previous allocation's node (`generic_sched.go`
    /// `findPreferredNode`: `Sticky || Migrate`, #16826 in 1.6.0; 1.2.6
    /// reads `Sticky` only).
    pub migrate_implies_sticky: bool,

    // --- Job registration (nomad/structs/volumes.go:VolumeRequest.Validate)
    /// Registration refuses a group with count > 1 that shares a
    /// single-node volume, or writes a multi-node-single-writer one, without
    /// `per_alloc` (1.3.0). The proposed fix turns this off again (see
    /// [`Behaviour::validates_registration`]).
    pub validates_shared_volume_count: bool,
    /// A group with both `max_client_disconnect` (`disconnect.lost_after`)
    /// and `stop_after_client_disconnect` (`disconnect.stop_on_client_after`)
    /// is refused ("Disconnect cannot be configured with both lost_after and
    /// stop_after", `nomad/structs/group.go:DisconnectStrategy.Validate`,
    /// 1.8.0's `disconnect` block).
    pub rejects_lost_and_stop_after: bool,

    // --- Server: claims (nomad/csi_endpoint.go:CSIVolume.Claim -> nomad/structs/csi.go)
    /// How the server checks a new claim (`claimRead`, `claimWrite`;
    /// #12112 and #12113, 1.2.7 and 1.3.0).
    pub server_claim_check: ServerClaimCheck,
    /// The server's claim refusals, as the client reports them
    /// (`claimRead`, `claimWrite`; reworded with #12112, #12113).
    pub claim_errors: ClaimErrorWording,
    /// The client retries a claim refused with "volume max claims reached"
    /// with backoff until `claim_retry_deadline`
    /// (`client/allocrunner/csi_hook.go:claimWithRetry`,
    /// `isRetryableClaimRPCError`; #12112, #12113, 1.2.7 and 1.3.0). Before,
    /// `claimVolumesFromAlloc` tries once.
    pub client_retries_claims: bool,
    /// The ControllerPublish looks only among healthy controllers, and the
    /// failure says so (": no healthy controller";
    /// `nomad/client_csi_endpoint.go:ClientCSI.clientIDsForController`).
    pub controller_publish_skips_unhealthy: bool,
    /// A down node's claim is freed by the claim GC: the pass skips a volume
    /// modified within `csi_volume_claim_gc_threshold`, and
    /// `nomad/csi_endpoint.go:nodeUnpublishVolume` skips the node detach of a
    /// down node (1.3.4). Before, `nodeUnpublishVolumeImpl` fails ("No path
    /// to node") until `core_sched.go:nodeGC` removed the node.
    pub skips_down_node_detach: bool,

    // --- Server: heartbeats (nomad/heartbeat.go)
    /// A node that missed its heartbeats while some allocation on it may
    /// wait (`max_client_disconnect`, 1.8+ `disconnect.lost_after`) is
    /// disconnected and those allocations unknown, instead of down and lost
    /// (`invalidateHeartbeat`, `disconnectState`; 1.3.0).
    pub disconnects_clients: bool,

    // --- Server: drainer (nomad/drainer/)
    /// An allocation already marked for migration counts among the healthy
    /// ones (`watch_jobs.go:handleTaskGroup`, until #26175, 1.11.0): with
    /// several draining nodes more than `max_parallel` can move at once.
    pub drain_counts_migrating_healthy: bool,
    /// Jobs that run a CSI plugin are drained with the system jobs, last
    /// (`draining_node.go:IsDone`, `RemainingAllocs`; #12324, 1.3.0).
    pub drains_plugin_jobs_last: bool,

    // --- Server: deployment watcher (nomad/deploymentwatcher/)
    /// A deployment with a progress deadline fails at an unhealthy
    /// allocation that has no reschedule attempt left, instead of waiting
    /// for the deadline (`deployment_watcher.go:shouldFailEarly`; #17341,
    /// 1.6.0). Before, only a group without a progress deadline fails at
    /// its first unhealthy allocation.
    pub fails_deployment_early: bool,

    // --- Scheduler: CSI topology (nomad/structs/node.go:CSITopology.MatchFound)
    /// How a node plugin's accessible topology matches one of the volume's
    /// once [`Release::checks_topology`] is set: `Equal` from 1.3.0
    /// (#12129) to 1.9.3, `Contains` (the node has the volume's segments)
    /// from 1.9.4 (#24522, `CSITopology.Contains`). 1.2.6 has no such check;
    /// its row names the first rule, which it never reaches.
    pub topology_match: TopologyMatch,

    // --- Job registration: system jobs (nomad/structs/structs.go)
    /// What validation calls a block in its refusals, such as a `system` job
    /// (not `sysbatch`) with an `affinity` or a `spread`, the job's or a
    /// group's: "System jobs may not have a spread stanza"
    /// (`Job.Validate`, `TaskGroup.Validate`; "stanza" became "block" in
    /// 1.5.0).
    pub validation_block_word: &'static str,

    // --- Scheduler: system jobs (scheduler/scheduler_system.go:computePlacements)
    /// A system group whose every placement was filtered out is reported
    /// failed only when it has no allocation it keeps elsewhere
    /// (`existingByTaskGroup`, #25850, 1.11.0); before, whenever its
    /// placements were all filtered.
    pub system_filtered_report_skips_kept: bool,
    /// The system stack forgets the evaluation's class eligibility before
    /// each node it tries (`SystemStack.Select`: "previous eligibility
    /// information is not applicable", 1.11.0), so no system placement is
    /// filtered as "computed class ineligible"; before, a class that failed
    /// the job's or a group's checks on one node filters the next.
    pub system_resets_eligibility: bool,

    // --- Scheduler: system job updates (scheduler/scheduler_system.go:computeJobAllocs, evictAndPlace)
    /// A system job's new version rolls out under a deployment: each group
    /// destructively updates at most its `max_parallel` (the group's
    /// strategy, else the job's `Update.MaxParallel`, else all) less the
    /// deployment's allocations not yet healthy, and the deployment
    /// watcher's evaluation on each healthy allocation goes on; no
    /// `stagger` evaluation (`NodeReconciler.createDeployment`,
    /// `SystemScheduler.evictAndPlace`; #26318 and #27007, 1.11.0). Before,
    /// no deployment: at most the job's `max_parallel` destructive updates
    /// per evaluation when its `update` is rolling (`Job.Update.Rolling`:
    /// `max_parallel` and `stagger` above 0), over all its groups, and an
    /// evaluation that reached the limit creates the next one `stagger`
    /// later (`process`, `Evaluation.NextRollingEval`); without a job
    /// `update` block, every update at once.
    pub system_deployments: bool,

    // --- Job files: disconnect settings (command/agent/job_endpoint.go:ApiTgToStructsTG)
    /// Which spelling of a group's disconnect settings counts: the group
    /// fields `max_client_disconnect` (1.3.0) and
    /// `stop_after_client_disconnect` (0.11), deprecated in 1.8.0 and no
    /// longer copied into the job from 1.10.0; or the `disconnect` block
    /// (`lost_after`, `stop_on_client_after`; 1.8.0).
    pub disconnect_settings: DisconnectSettings,

    // --- Client: CSI plugin supervisor (client/allocrunner/taskrunner/plugin_supervisor_hook.go)
    /// A node plugin whose task restarts is deregistered from the client's
    /// plugin catalog until its task runs and probes healthy again, so the
    /// node's fingerprint loses it ("CSI plugin X is missing from client")
    /// and mounts fail with "plugin X for type csi-node not found": the
    /// supervisor loop runs under the task's own context joined with the
    /// Stop hook's (`Poststart`, `ensureSupervisorLoop`, deferred
    /// `deregisterPluginFn`; #25307, 1.10.0). Before, the loop runs under
    /// the Stop hook's context only and outlives a restart: the plugin stays
    /// registered and the csimanager fingerprint reports it unhealthy.
    pub plugin_restart_deregisters: bool,

    // --- Server: blocked evaluations (nomad/blocked_evals.go, nomad/fsm.go)
    /// Registering a CSI volume unblocks the evaluations that found it
    /// missing (`fsm.go:applyCSIVolumeRegister` ->
    /// `BlockedEvals.UnblockNonNodeResources`, `Evaluation.MissingNonNodeResources`),
    /// and a group that mounts a CSI volume escapes its computed class
    /// (`feasible/context.go:EvalEligibility.SetJob`): #28275, backported
    /// to 2.0.5 as #28312. Before, a registration unblocks nothing: an
    /// evaluation blocked on a missing volume waits for a node update of a
    /// class it was eligible for (the CSI checker is a transient "available"
    /// checker, `stack.go`, so the class stays eligible).
    pub unblocks_on_volume_register: bool,
    // --- Server: claims and ControllerPublish (nomad/csi_endpoint.go:CSIVolume.Claim)
    /// The server writes a new claim (raft apply) before it sends the
    /// ControllerPublish, so a failed publish leaves the claim written
    /// (`CSIVolume.Claim`, #12387 "CSI: reorder controller volume
    /// detachment", 1.2.7 and 1.3.0). Before, `controllerPublishVolume` ran
    /// first and a failure left no claim.
    pub claim_written_before_controller_publish: bool,
    /// A ControllerPublish refused with the gRPC code FailedPrecondition
    /// (the provider's "volume is still attached elsewhere") is returned as
    /// `ErrCSIClientRPCRetryable`, which the client's `claimWithRetry`
    /// retries (`controllerPublishVolume`, #12387, 1.2.7 and 1.3.0; with
    /// [`Release::client_retries_claims`]). Before, the claim RPC's error
    /// fails the allocation.
    pub controller_precondition_retryable: bool,

    // --- Scheduler and plan applier: task resources (nomad/structs/structs.go:AllocatedResources.Comparable)
    /// How an allocation's task resources add up with lifecycle tasks
    /// (`Comparable`, summed by `funcs.go:AllocsFit` in
    /// `rank.go:BinPackIterator.Next` / `feasible/rank.go` and the plan
    /// applier): #24304 (1.9.4) rewrote it, counting poststart tasks and
    /// no longer adding prestart sidecars to a larger poststop phase.
    pub task_resources: TaskResourceRule,

    // --- Client: stopping an allocation (client/allocrunner/alloc_runner.go:killTasks)
    /// The sidecar tasks are killed after the other tasks have stopped
    /// (`killTasks`, #13055, 1.4.0); before, every task but the leader and
    /// the poststop tasks is killed at once.
    pub kills_sidecars_last: bool,
    /// The client caps a task's `kill_timeout` at its `max_kill_timeout`
    /// (30s by default, `command/agent/config.go`; enforced from 1.4.0,
    /// "client: enforce max_kill_timeout client configuration",
    /// `taskrunner/driver_handle.go:NewDriverHandle`); before, the task's
    /// own `kill_timeout` is passed to the driver as written.
    pub max_kill_timeout: Option<Millis>,
    /// A batch or sysbatch group's `max_run_duration` is enforced: the
    /// client's `max_run_duration` alloc-runner hook arms a timer for the
    /// allocation's `CreateTime` (the plan's commit) plus the duration and,
    /// when it fires, kills the tasks (poststop ones are not started) and
    /// reports the allocation complete, "allocation exceeded
    /// max_run_duration" (`client/allocrunner/max_run_duration_hook.go`,
    /// `alloc_runner.go:EnforceMaxRunDurationTimeout`, `killTasks`,
    /// `clientAlloc`; `nomad/structs/alloc.go:Allocation.MaxRunDuration`;
    /// #27803, 2.0.3). Before, `TaskGroup` has no such field: it is ignored.
    pub enforces_max_run_duration: bool,

    // --- Scheduler: network ports (nomad/structs/network.go:NetworkIndex.AssignPorts)
    /// A group's dynamic ports are picked so that none repeats a port the
    /// same offer already took (`portsInOffer`, #16401 "prevent
    /// self-collision in dynamic port network offerings", 1.4.x/1.5.x
    /// backports and 1.6.0). Before, each dynamic port is drawn from the
    /// node's free ports alone: with fewer free ports than the group asks
    /// for (but one at least), `getDynamicPortsPrecise` hands the same port
    /// out twice, the offer collides with itself, and the plan applier
    /// rejects the node plan (`AllocsFit`: "reserved alloc port
    /// collision"); later placements of the evaluation on that node find a
    /// "network: port collision". From #16401 the scheduler refuses the
    /// node: "network: dynamic port selection failed".
    pub dynamic_ports_avoid_offer: bool,

    // --- Periodic jobs (nomad/structs/structs.go:PeriodicConfig)
    /// A `periodic` block may list several specs (`crons`, #17858, 1.6.2):
    /// the next launch is the soonest of them (PeriodicConfig.Next).
    /// Before, PeriodicConfig has only `Spec`: a job giving only `crons`
    /// has no spec, and registration refuses it ("Must specify a spec").
    pub periodic_crons: bool,
}

/// How a node's CSI topology matches a volume's (`CSITopology.MatchFound`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopologyMatch {
    /// The same segments (`CSITopology.Equal`).
    Equal,
    /// The node has every segment of the volume's topology, with the same
    /// value, and may have more (`CSITopology.Contains`).
    Contains,
}

/// Which spelling of the disconnect settings a release reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DisconnectSettings {
    /// The group's `max_client_disconnect` and `stop_after_client_disconnect`.
    GroupFields,
    /// The group's `disconnect` block.
    Block,
}

/// How the server checks a new claim against the volume's current mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerClaimCheck {
    /// 1.2.6: reads are always granted; a write is refused only while a
    /// write claim of another job is held (`WriteFreeClaims`).
    OtherJobsWriters,
    /// `HasFreeReadClaims` (single-node-reader-only: no reader;
    /// single-node-writer: no claim) and `HasFreeWriteClaims` (single-writer
    /// modes: no write claim, whichever job holds it).
    FreeClaims,
}

/// The messages of the server's claim refusals (the attachment-mode one is
/// the same at every release).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClaimErrorWording {
    /// The volume's mode has no room for this kind of claim.
    pub unschedulable: &'static str,
    /// The claims the mode allows are taken.
    pub max_claims: &'static str,
}

/// How `<`, `<=`, `>`, `>=` compare a node's value with the constraint's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderedOperators {
    /// As strings.
    Lexical,
    /// As integers if both parse, else as floats if both parse, else as
    /// strings.
    Numeric,
}

/// What a constraint sees for an attribute the node does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissingAttribute {
    /// Nothing: nil differs from every value, so `!=` holds.
    Nil,
    /// The empty string: `!=` fails when the value is "".
    Empty,
}

/// Which missing volumes the CSI checker's failure names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissingVolumes {
    /// `missing CSI Volume <id>`, the first.
    First,
    /// `missing CSI volume(s) <id>, <id>`, all.
    All,
}

/// v1.2.6: the last 1.2 release before the CSI fixes #12112, #12113 and
/// #12337 (shipped in 1.1.13, 1.2.7 and 1.3.0). The `naive` policy.
pub static NOMAD_1_2_6: Release = Release {
    version: "1.2.6",
    class_early_return: true,
    checks_topology: false,
    missing_volumes: MissingVolumes::First,
    ordered_operators: OrderedOperators::Lexical,
    missing_attribute: MissingAttribute::Nil,
    distinct_hosts_reads_value: false,
    spread_pools_untargeted_values: false,
    spread_zero_desired_scores_lowest: false,
    affinity_score_always_appended: false,
    lists_empty_datacenters: true,
    node_pools: false,
    dynamic_host_volumes: false,
    host_volumes_class_cached: true,
    migrate_implies_sticky: false,
    validates_shared_volume_count: false,
    rejects_lost_and_stop_after: false,
    server_claim_check: ServerClaimCheck::OtherJobsWriters,
    claim_errors: ClaimErrorWording {
        unschedulable: "unschedulable",
        max_claims: "volume max claim reached",
    },
    client_retries_claims: false,
    controller_publish_skips_unhealthy: false,
    skips_down_node_detach: false,
    disconnects_clients: false,
    drain_counts_migrating_healthy: true,
    drains_plugin_jobs_last: false,
    fails_deployment_early: false,
    topology_match: TopologyMatch::Equal,
    validation_block_word: "stanza",
    system_filtered_report_skips_kept: false,
    system_resets_eligibility: false,
    system_deployments: false,
    disconnect_settings: DisconnectSettings::GroupFields,
    plugin_restart_deregisters: false,
    unblocks_on_volume_register: false,
    claim_written_before_controller_publish: false,
    controller_precondition_retryable: false,
    task_resources: TaskResourceRule::SidecarsPlusLargestPhase,
    kills_sidecars_last: false,
    max_kill_timeout: None,
    enforces_max_run_duration: false,
    dynamic_ports_avoid_offer: false,
    periodic_crons: false,
};

/// v2.0.5: the newest tag, "current Nomad". The `validate` policy, and
/// `plan-aware` with the proposed fix.
pub static NOMAD_2_0_5: Release = Release {
    version: "2.0.5",
    class_early_return: false,
    checks_topology: true,
    missing_volumes: MissingVolumes::All,
    ordered_operators: OrderedOperators::Numeric,
    missing_attribute: MissingAttribute::Empty,
    distinct_hosts_reads_value: true,
    spread_pools_untargeted_values: true,
    spread_zero_desired_scores_lowest: true,
    affinity_score_always_appended: true,
    lists_empty_datacenters: false,
    node_pools: true,
    dynamic_host_volumes: true,
    host_volumes_class_cached: false,
    migrate_implies_sticky: true,
    validates_shared_volume_count: true,
    rejects_lost_and_stop_after: true,
    server_claim_check: ServerClaimCheck::FreeClaims,
    claim_errors: ClaimErrorWording {
        unschedulable: "volume is currently unschedulable",
        max_claims: "volume max claims reached",
    },
    client_retries_claims: true,
    controller_publish_skips_unhealthy: true,
    skips_down_node_detach: true,
    disconnects_clients: true,
    drain_counts_migrating_healthy: false,
    drains_plugin_jobs_last: true,
    fails_deployment_early: true,
    topology_match: TopologyMatch::Contains,
    validation_block_word: "block",
    system_filtered_report_skips_kept: true,
    system_resets_eligibility: true,
    system_deployments: true,
    disconnect_settings: DisconnectSettings::Block,
    plugin_restart_deregisters: true,
    unblocks_on_volume_register: true,
    claim_written_before_controller_publish: true,
    controller_precondition_retryable: true,
    task_resources: TaskResourceRule::LargestPhase,
    kills_sidecars_last: true,
    max_kill_timeout: Some(Millis::from_secs(30)),
    enforces_max_run_duration: true,
    dynamic_ports_avoid_offer: true,
    periodic_crons: true,
};

/// Every supported release, oldest first.
pub static RELEASES: [&Release; 2] = [&NOMAD_1_2_6, &NOMAD_2_0_5];

impl Release {
    /// The row of a release, by its version ("2.0.5").
    pub fn find(version: &str) -> Option<&'static Release> {
        RELEASES
            .iter()
            .copied()
            .find(|release| release.version == version)
    }
}

/// A policy resolved against the table: the release whose code it follows
/// and whether the proposed fix for #10157 is applied. The simulation holds
/// this and reads its fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Behaviour {
    pub release: &'static Release,
    /// The proposed fix: the scheduler counts the claims of every live
    /// allocation, committed or in the plan, keeps every user of a volume in
    /// one mode, and the plan applier re-checks claims and attach limits; a
    /// freed claim unblocks evaluations.
    pub plan_aware_claims: bool,
    /// The release's registration count check
    /// ([`Release::validates_shared_volume_count`]), unless the fix
    /// replaces it: plan-aware's scheduler places what the access mode
    /// allows and blocks the rest, so it keeps only the per-request
    /// validation of every release.
    pub validates_registration: bool,
}

impl Behaviour {
    /// A release as it ships.
    pub fn of(release: &'static Release) -> Behaviour {
        Behaviour {
            release,
            plan_aware_claims: false,
            validates_registration: release.validates_shared_volume_count,
        }
    }

    /// The release with the proposed fix applied.
    pub fn with_plan_aware_fix(self) -> Behaviour {
        Behaviour {
            plan_aware_claims: true,
            validates_registration: false,
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(version: &str) -> Vec<u32> {
        version
            .split('.')
            .map(|part| part.parse().expect("a numeric version"))
            .collect()
    }

    #[test]
    fn releases_are_sorted_unique_and_found_by_version() {
        let versions: Vec<Vec<u32>> = RELEASES.iter().map(|r| numbers(r.version)).collect();
        assert!(versions.iter().all(|v| v.len() == 3), "{versions:?}");
        assert!(
            versions.windows(2).all(|pair| pair[0] < pair[1]),
            "oldest first, each once: {versions:?}"
        );
        for release in RELEASES {
            assert!(std::ptr::eq(
                Release::find(release.version).unwrap(),
                release
            ));
        }
        assert!(Release::find("1.3.0").is_none());
    }

    #[test]
    fn the_fix_replaces_the_registration_check_and_keeps_the_release() {
        let shipped = Behaviour::of(&NOMAD_2_0_5);
        assert!(shipped.validates_registration && !shipped.plan_aware_claims);
        let fixed = shipped.with_plan_aware_fix();
        assert!(std::ptr::eq(fixed.release, &NOMAD_2_0_5));
        assert!(fixed.plan_aware_claims && !fixed.validates_registration);
        assert!(!Behaviour::of(&NOMAD_1_2_6).validates_registration);
    }
}
