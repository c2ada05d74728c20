//! What the scheduler carries through one evaluation: the plan under
//! construction as the feasibility and rank iterators see it (Nomad's
//! EvalContext and its plan, scheduler/context.go) and the node-independent
//! part of one placement's ask.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::access::ClaimCounts;
use crate::model::ids::{GroupRef, NodeId, VolumeId};
use crate::model::scenario::{Capability, GroupSpec, JobSpec, Reserved};
use crate::sim::server::scheduler::feasibility::FilterReason;
use crate::sim::server::scheduler::hot::{GroupTally, Proposed};
use crate::sim::server::scheduler::preferences::Preferences;

/// How many nodes ahead of the one being scored the scoring loop asks for
/// a node's record (`NodeTable::prefetch`): far enough for the load to
/// arrive before it is needed, near enough that it is still cached then.
pub(crate) const PREFETCH_AHEAD: usize = 4;

/// What the plan under construction already proposes, on top of the snapshot.
#[derive(Default)]
pub(crate) struct PlanContext {
    /// Candidate nodes in this evaluation's shuffled order.
    pub(crate) order: Vec<NodeId>,
    /// Where the next placement starts looking (Nomad's iterator offset).
    pub(crate) offset: usize,
    /// CPU and memory the plan proposes, per node it proposes something
    /// on (a sparse set: see `NodeTable::proposal_slot`).
    pub(crate) proposals: Vec<Proposed>,
    /// Per group of the job (by group index), its allocations on each
    /// node: live ones, counted from the job's live allocations when the
    /// group is first scored, and the plan's.
    pub(crate) group_counts: Vec<GroupTally>,
    pub(crate) claims: BTreeMap<VolumeId, ClaimCounts>,
    /// The mode the plan's first placement on each volume claims in.
    pub(crate) modes: BTreeMap<VolumeId, Capability>,
    pub(crate) node_volumes: BTreeMap<NodeId, BTreeSet<VolumeId>>,
    /// Nomad's EvalEligibility: whether the job's constraints, and each
    /// group's checks, passed on a computed class (absent: not yet known).
    /// Indexed by class, and by group then class (vectors: this is looked
    /// up for every node visited).
    pub(crate) job_classes: Vec<Option<bool>>,
    pub(crate) group_classes: Vec<Option<bool>>,
    /// Set when 1.2.6's wrapper ends the node iteration early.
    pub(crate) stop_iterating: bool,
    /// Spread, affinity and distinct_* state (only for jobs that have them).
    pub(crate) preferences: Option<Box<Preferences>>,
    /// The limit a group with spread or affinity raised: Nomad's stack keeps
    /// it for the rest of the evaluation.
    pub(crate) raised_limit: Option<usize>,
    /// What the plan's destructive-update stops free, per node.
    pub(crate) freed: BTreeMap<NodeId, Reserved>,
    /// The plan's stops per group and node, which Nomad's ProposedAllocs
    /// leaves out of the anti-affinity's collisions.
    pub(crate) stopped_in_group: BTreeMap<(GroupRef, NodeId), u32>,
    /// The ports the plan takes and frees (network.rs).
    pub(crate) network: super::network::PlanNetwork,
    /// The final score of the node the last placement chose.
    pub(crate) chosen_score: f64,
    /// For each volume request of the placement being scored, the verdict
    /// of its node-independent checks (see `volume_verdict`), decided once
    /// by `prepare_volume_verdicts` instead of once per node.
    pub(crate) volume_verdicts: Vec<Result<(), FilterReason>>,
    /// Scratch for the limit iterator's skips (kept for its capacity).
    pub(crate) skipped: Vec<(NodeId, f64)>,
    /// Per node class, the nodes one placement's scan filtered and found
    /// exhausted (zero outside `select_node`), and the classes it touched.
    pub(crate) class_tally: Vec<[u32; 2]>,
    pub(crate) class_touched: Vec<u32>,
    /// The allocation index of the placement being scored (a `per_alloc`
    /// host volume request's suffix).
    pub(crate) alloc_index: u32,
    /// Writers the plan adds to each dynamic host volume.
    pub(crate) host_writers: BTreeMap<crate::model::host_volume::HostVolumeId, u32>,
    /// The volumes of the job's sticky claims no allocation proposed on
    /// their node meets, for the placement being scored (the host volume
    /// checker's `unmetClaims`, set per placement and consumed by the scan).
    pub(crate) unmet_sticky: Vec<crate::model::host_volume::HostVolumeId>,
}

/// What scoring a node for one placement reads that does not depend on the
/// node: looked up once per placement instead of once per node visited.
/// The compiler cannot hoist these reads out of the scoring loop itself, as
/// the loop writes node records through `Cell`s.
pub(crate) struct Ask<'a> {
    pub(crate) group: GroupRef,
    pub(crate) job_spec: &'a JobSpec,
    /// The group at the job's current version.
    pub(crate) group_spec: &'a GroupSpec,
    /// Whether the job's constraints, and the group's, escape the computed
    /// class (then its eligibility is not cached).
    pub(crate) job_escaped: bool,
    pub(crate) group_escaped: bool,
    /// The group's count, for the anti-affinity penalty.
    pub(crate) count: u32,
    /// What one allocation of the group reserves (`Simulation::reserves`).
    pub(crate) reserved: Reserved,
    /// Bin-pack or spread fitness from the two free-resource terms.
    pub(crate) fitness: fn(f64, f64) -> f64,
    /// Where the host volume check runs for this group, decided once.
    pub(crate) host_check: HostCheck,
}

/// Where the host volume checker runs in the feasibility wrapper.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HostCheck {
    /// The group mounts no host volume.
    None,
    /// Among the group's checks cached per computed class (before 1.7).
    PerClass,
    /// On every node, beside the CSI check (1.7+, #18679).
    PerNode,
}
