//! Runtime state of the simulated cluster: nodes, volumes (claims), jobs and
//! allocations. Plain data with small helpers; the rules live in the modules
//! that change it (scheduler, applier, client).

use std::collections::{BTreeMap, BTreeSet};

use crate::model::access::{ClaimCounts, ClaimMode};
use crate::model::ids::{AllocId, GroupRef, JobId, NodeId, VolumeId};
use crate::model::scenario::Capability;
use crate::model::time::Millis;

use crate::sim::server::scheduler::hot;
use crate::sim::state::alloc_parts::{
    MaybeScore, MaybeSeq, MaybeStamp, RescheduleTracker, Stamp, VolumeClaims, claim_modes_of,
    volumes_of,
};
use crate::sim::state::slots::Slots;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeStatus {
    Ready,
    Down,
    /// Nomad 1.3+: the client missed its heartbeats and some allocation
    /// may wait for it (`max_client_disconnect`).
    Disconnected,
}

/// `repr(C)`, cache-line aligned, with what every placement and client
/// step reads first (status, eligibility, disconnection, the allocation
/// list), so that on a large cluster those cost one cache miss, not three.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct NodeState {
    pub status: NodeStatus,
    /// False once the node is drained: it keeps running nothing new.
    pub eligible: bool,
    /// When the client lost its servers (`node_disconnect`), while it has
    /// not reached them again: it sends no heartbeats and no updates.
    pub disconnected_at: Option<Millis>,
    /// Live allocations on this node.
    pub allocs: AllocSet,
    /// Health of each node plugin, parallel to the spec's `csi_plugins`.
    pub plugin_healthy: Vec<bool>,
    /// Server claims held on this node, per volume (Nomad's CSIVolumesByNodeID,
    /// which `max_volumes` is checked against).
    pub claimed_volumes: BTreeMap<VolumeId, u32>,
    /// Volumes mounted by live allocations on this node, claimed or not (what
    /// the fix's scheduler counts against `max_volumes`).
    pub alloc_volumes: BTreeMap<VolumeId, u32>,
    /// Volumes the node plugin has published here (what an enforcing plugin
    /// counts against `max_volumes`).
    pub published_volumes: BTreeMap<VolumeId, u32>,
    /// What Nomad's CSIVolumesByNodeID finds here, which the releases as shipped
    /// count against `max_volumes`: the sources of every allocation whose
    /// desired status is run (live, failed or complete; not lost or stopped),
    /// claimed or not. A `per_alloc` source is looked up by its base name,
    /// which names no volume, so it is not counted.
    pub counted_volumes: BTreeMap<VolumeId, u32>,
    /// When the node last went down (Nomad's node GC measures from it).
    pub down_since: Millis,
    /// Whether each node plugin has registered here (parallel to
    /// `plugin_healthy`): a declared one always has; a plugin job's slot
    /// once one of its allocations ran here (then it stays, unhealthy,
    /// after the allocation stops, as Nomad's last fingerprint leaves it).
    pub plugin_present: Vec<bool>,
    /// Running plugin-job allocations providing each node plugin here.
    pub plugin_providers: Vec<u32>,
}

/// Adds one reference to `key`.
pub fn count_up<K: Ord>(map: &mut BTreeMap<K, u32>, key: K) {
    *map.entry(key).or_default() += 1;
}

/// Drops one reference to `key`, forgetting it at zero. Dropping a reference
/// that is not there is a bookkeeping bug.
pub fn count_down<K: Ord + std::fmt::Debug>(map: &mut BTreeMap<K, u32>, key: K) {
    let refs = map
        .get_mut(&key)
        .unwrap_or_else(|| panic!("no reference to {key:?} to drop"));
    *refs -= 1;
    if *refs == 0 {
        map.remove(&key);
    }
}

impl NodeState {
    pub fn schedulable(&self) -> bool {
        self.status == NodeStatus::Ready && self.eligible
    }

    /// Volumes claimed here or mounted by a live allocation here: what the
    /// fix's scheduler and applier count against `max_volumes`.
    pub fn held_or_promised_volumes(&self) -> BTreeSet<VolumeId> {
        self.claimed_volumes
            .keys()
            .chain(self.alloc_volumes.keys())
            .copied()
            .collect()
    }
}

/// Where a server-side claim is in its lifecycle. A claim counts for every
/// check until it is freed, including while it is being released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimState {
    /// Granted to a live allocation, or its allocation stopped and the client
    /// has not unpublished yet.
    Taken,
    /// The client unpublished; the volume watcher has not controller-detached.
    NodeDetached,
    /// Detached everywhere; the volume watcher has not freed the claim yet.
    ControllerDetached,
}

#[derive(Clone, Debug)]
pub struct Claim {
    pub mode: ClaimMode,
    pub node: NodeId,
    pub job: JobId,
    pub state: ClaimState,
    /// The plugin published the volume for this claim and it is not yet unpublished.
    pub published: bool,
}

#[derive(Clone, Debug, Default)]
pub struct VolumeState {
    /// Claims the server has granted and not yet freed.
    pub ledger: BTreeMap<AllocId, Claim>,
    pub ledger_counts: ClaimCounts,
    /// Writer claims in the ledger, per job (Nomad's checks skip the
    /// requesting job's own writers).
    pub writers_by_job: BTreeMap<JobId, u32>,
    /// Live allocations that mount the volume but have not claimed it yet.
    /// Only the fix's scheduler looks at these.
    pub reserved: BTreeMap<AllocId, ClaimMode>,
    pub reserved_counts: ClaimCounts,
    /// The modes the `reserved` allocations will claim in, counted.
    pub reserved_caps: BTreeMap<Capability, u32>,
    /// What the plugin has published, the basis of "violation".
    pub published_counts: ClaimCounts,
    pub violating_since: Option<Millis>,
    /// The mode the first claim set (Nomad's setModesFromClaim); cleared
    /// when the last claim is freed. `None`: no claim, mode unknown.
    pub claimed_mode: Option<Capability>,
    /// When the claims last changed (the volume's ModifyTime, which the
    /// claim GC's threshold is measured from).
    pub modified_at: Millis,
    /// Scripted failures (`publish_failure` events) still to come: the
    /// next ControllerPublishes and NodePublishes of the volume that fail.
    pub failures_pending: PendingFailures,
}

/// Publishes of one volume a `publish_failure` event scripted to fail.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PendingFailures {
    pub controller: u32,
    pub node: u32,
}

impl PendingFailures {
    /// The count of one stage.
    pub fn of_mut(&mut self, stage: crate::model::scenario::PublishStage) -> &mut u32 {
        match stage {
            crate::model::scenario::PublishStage::Controller => &mut self.controller,
            crate::model::scenario::PublishStage::Node => &mut self.node,
        }
    }
}

impl VolumeState {
    /// The claims the fix's scheduler sees: every claim not yet freed
    /// plus every live allocation that will claim.
    pub fn plan_aware_counts(&self) -> ClaimCounts {
        self.ledger_counts.plus(self.reserved_counts)
    }

    /// The mode the volume has or, unclaimed, will have once a reserved
    /// allocation claims it (the fix keeps every user of a volume in
    /// one mode, so there is at most one).
    pub fn pinned_mode(&self) -> Option<Capability> {
        self.claimed_mode
            .or_else(|| self.reserved_caps.keys().next().copied())
    }

    /// Whether a job other than `job` holds a writer claim.
    pub fn other_job_writes(&self, job: JobId) -> bool {
        self.ledger_counts.writers > self.writers_by_job.get(&job).copied().unwrap_or(0)
    }
}

/// An allocation's one and only state. Pending phases are spelled out so a
/// stale event (for a phase the allocation already left) is recognisable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocState {
    /// Placed; the client is fetching it and pulling the image.
    Pulling,
    /// Asking the server for the claim of `volumes()[next_volume]`.
    Claiming,
    /// The plugin is publishing `volumes()[next_volume]`.
    Publishing,
    Running,
    Complete,
    Failed,
    Lost,
    Stopped,
    /// Nomad 1.3+: running on a disconnected client, waiting for it
    /// (client status unknown); live, not running.
    Unknown,
}

impl AllocState {
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            AllocState::Complete | AllocState::Failed | AllocState::Lost | AllocState::Stopped
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            AllocState::Pulling => "pulling",
            AllocState::Claiming => "claiming",
            AllocState::Publishing => "publishing",
            AllocState::Running => "running",
            AllocState::Complete => "complete",
            AllocState::Failed => "failed",
            AllocState::Lost => "lost",
            AllocState::Stopped => "stopped",
            AllocState::Unknown => "unknown",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Alloc {
    pub group: GroupRef,
    pub index: u32,
    pub node: NodeId,
    pub state: AllocState,
    /// The volumes it mounts and the client's claim progress, if it mounts
    /// any (`volumes()`, `claim_modes()`, `claims_mut()`; alloc_parts.rs).
    pub claims: Option<Box<VolumeClaims>>,
    /// When it failed and its reschedule tracker, once it has either
    /// (`failed_at()`, `reschedule_history()`, `penalty_nodes()`,
    /// `followup_at()`; alloc_parts.rs).
    pub tracker: Option<Box<RescheduleTracker>>,
    /// The node is draining: the scheduler must move this allocation.
    pub migrate: bool,
    /// When the allocation became healthy (see health.rs), while it is.
    pub healthy_at: MaybeStamp,
    /// The job version it runs (its resources are that version's).
    pub version: u32,
    /// The deployment it was placed in (its sequence number), if any.
    pub deployment: MaybeSeq,
    /// When a plan placed it (0 for an initial allocation).
    pub placed_at: Stamp,
    /// Its health as the deployment sees it (Nomad's DeploymentStatus.Healthy):
    /// unknown, healthy (healthy for `min_healthy_time`) or unhealthy.
    pub deploy_health: Option<bool>,
    /// The final score of the node the scheduler chose (Nomad's
    /// MaxNormScore); none for an allocation that predates the run.
    pub score: MaybeScore,
    /// When it started running (kept while unknown).
    pub running_since: MaybeStamp,
}

impl Alloc {
    pub fn is_live(&self) -> bool {
        !self.state.is_terminal()
    }
}

impl Alloc {
    /// The volumes it mounts, with the mode of each claim.
    pub fn volumes(&self) -> &[(VolumeId, ClaimMode)] {
        volumes_of(&self.claims)
    }

    /// The access and attachment mode each of `volumes()` is claimed in.
    pub fn claim_modes(&self) -> &[Capability] {
        claim_modes_of(&self.claims)
    }

    /// The client's claim progress; only an allocation with volumes claims.
    pub fn claims_mut(&mut self) -> &mut VolumeClaims {
        self.claims
            .as_deref_mut()
            .expect("only an allocation with volumes claims")
    }

    /// When it failed, was lost or went unknown (0 if it never did).
    pub fn failed_at(&self) -> Millis {
        self.tracker.as_ref().map_or(Millis::ZERO, |t| t.failed_at)
    }

    pub fn reschedule_history(&self) -> &[(Millis, Millis)] {
        self.tracker.as_deref().map_or(&[], |t| &t.history)
    }

    pub fn penalty_nodes(&self) -> &[NodeId] {
        self.tracker.as_deref().map_or(&[], |t| &t.penalty_nodes)
    }

    pub fn followup_at(&self) -> Option<Millis> {
        self.tracker.as_ref().and_then(|t| t.followup_at)
    }

    /// The tracker, made empty if it has none yet.
    pub fn tracker_mut(&mut self) -> &mut RescheduleTracker {
        self.tracker.get_or_insert_default()
    }

    pub fn set_failed_at(&mut self, at: Millis) {
        self.tracker_mut().failed_at = at;
    }

    pub fn set_followup_at(&mut self, at: Option<Millis>) {
        if at.is_some() || self.tracker.is_some() {
            self.tracker_mut().followup_at = at;
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStatus {
    NotSubmitted,
    Registered,
    Rejected,
    Stopped,
    /// A periodic or parameterized parent: registered, never evaluated;
    /// it launches children (sim/server/periodic.rs).
    Tracked,
    /// A periodic launch the dispatcher skipped: never registered.
    Skipped,
}

#[derive(Clone, Debug)]
pub struct JobState {
    pub status: JobStatus,
    /// Desired count of each group (changed by `scale`).
    pub counts: Vec<u32>,
    /// The newest allocation of each (group, index) slot.
    pub latest: Vec<Slots>,
    pub running: Vec<u32>,
    pub complete: Vec<u32>,
    /// Whether each group is counted as fully placed (see the full-placement tracker).
    pub satisfied: Vec<bool>,
    /// An evaluation is waiting in the broker.
    pub eval_queued: bool,
    /// A worker is scheduling this job.
    pub eval_in_flight: bool,
    /// Something changed while a worker was busy with this job.
    pub eval_dirty: bool,
    /// Healthy allocations of each group (see health.rs).
    pub healthy: Vec<u32>,
    /// Whether each group has had its desired count healthy (the
    /// `unavailable_s` clock starts only then).
    pub ever_available: Vec<bool>,
    /// Since when each group has had fewer healthy allocations than desired.
    pub unavailable_since: Vec<Option<Millis>>,
    /// The version the job runs now (`update_job` changes it, a revert too).
    pub version: u32,
    /// The newest version whose deployment succeeded (Nomad's Stable);
    /// the registered version counts as stable.
    pub stable_version: u32,
    /// The latest deployment, active or not.
    pub deployment: Option<Deployment>,
    /// Deployments started, to number them.
    pub deployments_started: u32,
    /// When the latest successful deployment succeeded, and its version.
    pub last_success: Option<(Millis, u32)>,
    /// Canaries placed and not promoted (Nomad's PlacedCanaries), of any
    /// deployment: they run beside the slot's allocation, outside `latest`.
    pub canaries: Vec<AllocId>,
    /// Allocations a promotion displaced from their slot (the canary took
    /// it): the next evaluation stops them (computeStop's canary names).
    pub displaced: Vec<AllocId>,
    /// A system deployment's batched evaluation is pending
    /// (`Event::DeploymentEvalBatch`).
    pub eval_batch: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeploymentStatus {
    Running,
    Successful,
    Failed,
    /// Replaced by a newer version's deployment, or the job stopped.
    Cancelled,
}

/// A job's deployment (Nomad's structs.Deployment, one per version rolled out).
#[derive(Clone, Debug)]
pub struct Deployment {
    pub seq: u32,
    pub version: u32,
    pub started_at: Millis,
    pub status: DeploymentStatus,
    /// When the deployment fails unless it made progress (Nomad's
    /// RequireProgressBy); `None` without a progress deadline.
    pub require_progress_by: Option<Millis>,
    /// Canaries each group wants (Nomad's DesiredCanaries), set by the
    /// first evaluation that has destructive updates to make.
    pub desired_canaries: Vec<u32>,
    /// The canaries were promoted (Nomad's DeploymentState.Promoted).
    pub promoted: bool,
}

impl Deployment {
    pub fn is_active(&self) -> bool {
        self.status == DeploymentStatus::Running
    }

    /// Some group has canaries and they are not promoted yet (Nomad's
    /// RequiresPromotion; the reconciler's isCanarying).
    pub fn requires_promotion(&self) -> bool {
        !self.promoted && self.desired_canaries.iter().any(|&c| c > 0)
    }
}

/// A node's live allocations, in id order: a sorted vector, as a set.
/// A new allocation has the highest id yet, so inserting it is a push (an
/// ordered tree per node cost a cache miss per level on every placement).
#[derive(Clone, Debug, Default)]
pub struct AllocSet(Vec<AllocId>);

impl AllocSet {
    /// Asks the CPU to load the end of the list, where an insert goes.
    pub(crate) fn prefetch_end(&self) {
        hot::prefetch(&self.0, self.0.len().saturating_sub(1));
    }

    /// Adds `id`; false if it was there.
    pub fn insert(&mut self, id: AllocId) -> bool {
        if self.0.last().is_none_or(|&last| last < id) {
            self.0.push(id);
            return true;
        }
        match self.0.binary_search(&id) {
            Ok(_) => false,
            Err(at) => {
                self.0.insert(at, id);
                true
            }
        }
    }

    /// Removes `id`; false if it was not there.
    pub fn remove(&mut self, id: &AllocId) -> bool {
        match self.0.binary_search(id) {
            Ok(at) => {
                self.0.remove(at);
                true
            }
            Err(_) => false,
        }
    }

    pub fn contains(&self, id: &AllocId) -> bool {
        self.0.binary_search(id).is_ok()
    }

    /// In id order.
    pub fn iter(&self) -> std::slice::Iter<'_, AllocId> {
        self.0.iter()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'a> IntoIterator for &'a AllocSet {
    type Item = &'a AllocId;
    type IntoIter = std::slice::Iter<'a, AllocId>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// A plugin's controller: its health flag (`controller_healthy`, changed by
/// `plugin_controller_health` events) and, when jobs run it, how many of
/// their allocations are running (the state store's CSIPlugin
/// `ControllersHealthy`).
#[derive(Clone, Copy, Debug)]
pub struct ControllerState {
    pub healthy: bool,
    pub running: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_set_keeps_id_order() {
        let mut set = AllocSet::default();
        for id in [2, 5, 9] {
            assert!(set.insert(AllocId(id)));
        }
        assert!(set.insert(AllocId(4)), "an older id goes in its place");
        assert!(!set.insert(AllocId(5)));
        assert!(set.remove(&AllocId(2)));
        assert!(!set.remove(&AllocId(2)));
        assert!(set.contains(&AllocId(9)) && !set.contains(&AllocId(2)));
        let ids: Vec<u32> = set.iter().map(|id| id.0).collect();
        assert_eq!(ids, vec![4, 5, 9]);
        assert_eq!(set.len(), 3);
    }
}
