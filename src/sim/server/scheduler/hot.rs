//! Indexes for the scheduler's hot path (issue #16): flat, vector-indexed
//! state that replaces per-node ordered maps on the per-node scoring loop.
//! Each index mirrors state kept elsewhere and changes with it; none
//! changes what the model decides, only how fast it looks things up.

use std::cell::Cell;

use crate::model::ids::{AllocId, GroupRef, NodeId};
use crate::model::scenario::Reserved;
use crate::sim::server::scheduler::rank;

/// The live allocations of every task group, with their nodes (what job
/// anti-affinity and `distinct_hosts` count per node). An evaluation turns
/// its job's lists into flat per-node counts once ([`GroupTally::count_live`])
/// instead of looking up an ordered map per node scored.
#[derive(Default)]
pub(crate) struct LiveAllocs {
    /// Per job, per group: live allocations and their nodes, unordered
    /// (only counts are read from it).
    groups: Vec<Vec<Vec<(AllocId, NodeId)>>>,
    /// Each allocation's position in its group's list; `u32::MAX` once it
    /// is no longer live. Indexed by allocation.
    position: Vec<u32>,
}

const GONE: u32 = u32::MAX;

impl LiveAllocs {
    /// Empty lists for jobs with the given group counts.
    pub(crate) fn new(groups_per_job: impl Iterator<Item = usize>) -> Self {
        LiveAllocs {
            groups: groups_per_job.map(|n| vec![Vec::new(); n]).collect(),
            position: Vec::new(),
        }
    }

    /// Allocation `id` (the newest one: ids are dense and increasing) of
    /// `group` now lives on `node`.
    pub(crate) fn insert(&mut self, id: AllocId, group: GroupRef, node: NodeId) {
        if self.position.len() <= id.index() {
            self.position.resize(id.index() + 1, GONE);
        }
        let list = &mut self.groups[group.job.index()][group.group_index()];
        self.position[id.index()] = u32::try_from(list.len()).expect("live allocations fit in u32");
        list.push((id, node));
    }

    /// Allocation `id` of `group` is no longer live.
    pub(crate) fn remove(&mut self, id: AllocId, group: GroupRef) {
        let at = std::mem::replace(&mut self.position[id.index()], GONE);
        assert!(at != GONE, "alloc #{} is live", id.0);
        let list = &mut self.groups[group.job.index()][group.group_index()];
        list.swap_remove(at as usize);
        if let Some(&(moved, _)) = list.get(at as usize) {
            self.position[moved.index()] = at;
        }
    }

    /// The live allocations of `group`, in no particular order.
    pub(crate) fn of_group(&self, group: GroupRef) -> &[(AllocId, NodeId)] {
        &self.groups[group.job.index()][group.group_index()]
    }
}

/// One group's allocations on one node during an evaluation.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(crate) struct GroupCounts {
    /// Live allocations there when the evaluation began.
    pub live: u32,
    /// Placements the plan under construction adds there.
    pub proposed: u32,
}

/// One group's [`GroupCounts`] on every node, for one evaluation at a
/// time. The vector keeps its full length from one evaluation to the next
/// and only the entries an evaluation made non-zero are zeroed after it: an
/// evaluation costs what the group has on the cluster, not a pass over
/// every node (320 kB written per evaluation at 40,000 nodes).
#[derive(Default)]
pub(crate) struct GroupTally {
    per_node: Vec<GroupCounts>,
    /// The nodes whose entry is not zero.
    touched: Vec<NodeId>,
    /// Whether this evaluation counted the group's live allocations.
    counted: bool,
}

impl GroupTally {
    /// Whether [`GroupTally::count_live`] ran since the last reset.
    #[inline(always)]
    pub(crate) fn is_counted(&self) -> bool {
        self.counted
    }

    /// Counts `group`'s live allocations per node, once per evaluation.
    pub(crate) fn count_live(&mut self, live: &LiveAllocs, group: GroupRef, nodes: usize) {
        debug_assert!(!self.counted, "counted twice in one evaluation");
        if self.per_node.len() < nodes {
            self.per_node.resize(nodes, GroupCounts::default());
        }
        for &(_, node) in live.of_group(group) {
            self.entry(node).live += 1;
        }
        self.counted = true;
    }

    /// Notes a placement the plan proposes on `node`.
    pub(crate) fn propose(&mut self, node: NodeId) {
        self.entry(node).proposed += 1;
    }

    #[inline(always)]
    pub(crate) fn at(&self, node: NodeId) -> GroupCounts {
        self.per_node[node.index()]
    }

    /// Every node's entry, for prefetching.
    pub(crate) fn per_node(&self) -> &[GroupCounts] {
        &self.per_node
    }

    fn entry(&mut self, node: NodeId) -> &mut GroupCounts {
        let entry = &mut self.per_node[node.index()];
        if *entry == GroupCounts::default() {
            self.touched.push(node);
        }
        entry
    }

    /// Zeroes what this evaluation counted, for the next one.
    pub(crate) fn reset(&mut self) {
        for node in self.touched.drain(..) {
            self.per_node[node.index()] = GroupCounts::default();
        }
        self.counted = false;
        debug_assert!(self.per_node.iter().all(|c| *c == GroupCounts::default()));
    }
}

/// What scoring one node reads, in one cache line per node (issue #16:
/// on a 40,000-node cluster the scoring loop visits nodes in shuffled
/// order, and each separate per-node array it touched was a cache miss).
///
/// It is the single home of a node's resource usage; its capacity and
/// computed class are copies of the spec's, which never change; the
/// fitness cache and the proposal slot are scratch that never changes a
/// decision (see [`NodeTable::fitness`] and [`NodeTable::proposal_slot`]).
#[repr(C, align(64))]
struct HotNode {
    /// CPU and memory of the node's live allocations.
    used_cpu: u64,
    used_memory: u64,
    /// The spec's CPU and memory.
    cpu: u64,
    memory: u64,
    /// The last fitness computed here and the usage it was computed for:
    /// a node's capacity never changes, so the same usage gives the same
    /// bits, and a node scored again before anything is placed on it (most
    /// of them: each placement changes one node) skips the two `pow10`s.
    /// NaN: nothing cached (a computed NaN is simply never reused).
    fit_cpu: Cell<u64>,
    fit_memory: Cell<u64>,
    fit_score: Cell<f64>,
    /// The node's computed class (dense index).
    class: u32,
    /// Where the evaluation being built keeps what its plan proposes here
    /// (a sparse-set slot, valid only if the evaluation's own list agrees).
    proposal: Cell<u32>,
}

/// Per-node scoring state (see [`HotNode`]) and which nodes can take new
/// allocations, as flat arrays indexed by node.
pub(crate) struct NodeTable {
    nodes: Vec<HotNode>,
    /// Ready and eligible (`NodeState::schedulable`), mirrored here so an
    /// evaluation lists its candidates without touching every node's state.
    schedulable: Vec<bool>,
    /// Whether some node plugin of the node has a `max_volumes` (the
    /// spec's, which never changes).
    limits_attachments: Vec<bool>,
    /// Each node's disk, used and offered (MB): apart from [`HotNode`],
    /// which is one cache line already, because the scoring loop reads it
    /// only for a node whose CPU and memory fit.
    disk: Vec<DiskUse>,
}

/// A node's ephemeral disk: what its live allocations use, and the spec's.
#[derive(Clone, Copy)]
struct DiskUse {
    used: u64,
    capacity: u64,
}

impl NodeTable {
    /// For nodes of the given capacity, computed class and whether a
    /// plugin limits their attachments, all schedulable and empty.
    pub(crate) fn new(nodes: impl Iterator<Item = (Reserved, u32, bool)>) -> Self {
        let mut limits_attachments = Vec::new();
        let mut disk = Vec::new();
        let nodes: Vec<HotNode> = nodes
            .map(|(capacity, class, limited)| {
                limits_attachments.push(limited);
                disk.push(DiskUse {
                    used: 0,
                    capacity: capacity.disk,
                });
                HotNode {
                    used_cpu: 0,
                    used_memory: 0,
                    cpu: capacity.cpu,
                    memory: capacity.memory,
                    fit_cpu: Cell::new(0),
                    fit_memory: Cell::new(0),
                    fit_score: Cell::new(f64::NAN),
                    class,
                    proposal: Cell::new(u32::MAX),
                }
            })
            .collect();
        let schedulable = vec![true; nodes.len()];
        NodeTable {
            nodes,
            schedulable,
            limits_attachments,
            disk,
        }
    }

    /// Whether some node plugin of `node` has a `max_volumes`.
    pub(crate) fn limits_attachments(&self, node: NodeId) -> bool {
        self.limits_attachments[node.index()]
    }

    /// `node`'s CPU and memory.
    pub(crate) fn capacity(&self, node: NodeId) -> (u64, u64) {
        let hot = &self.nodes[node.index()];
        (hot.cpu, hot.memory)
    }

    /// CPU and memory used by `node`'s live allocations.
    pub(crate) fn used(&self, node: NodeId) -> (u64, u64) {
        let hot = &self.nodes[node.index()];
        (hot.used_cpu, hot.used_memory)
    }

    /// Disk (MB) used by `node`'s live allocations, and the node's.
    pub(crate) fn disk(&self, node: NodeId) -> (u64, u64) {
        let disk = self.disk[node.index()];
        (disk.used, disk.capacity)
    }

    /// An allocation reserving `reserved` starts using `node`.
    pub(crate) fn take(&mut self, node: NodeId, reserved: Reserved) {
        let hot = &mut self.nodes[node.index()];
        hot.used_cpu += reserved.cpu;
        hot.used_memory += reserved.memory;
        self.disk[node.index()].used += reserved.disk;
    }

    /// An allocation reserving `reserved` stops using `node`.
    pub(crate) fn release(&mut self, node: NodeId, reserved: Reserved) {
        let hot = &mut self.nodes[node.index()];
        hot.used_cpu -= reserved.cpu;
        hot.used_memory -= reserved.memory;
        self.disk[node.index()].used -= reserved.disk;
    }

    /// Asks the CPU to start loading `node`'s record (see [`prefetch`]).
    #[inline(always)]
    pub(crate) fn prefetch(&self, node: NodeId) {
        prefetch(&self.nodes, node.index());
    }

    /// `node`'s computed class.
    pub(crate) fn class(&self, node: NodeId) -> u32 {
        self.nodes[node.index()].class
    }

    /// How many computed classes there are.
    pub(crate) fn class_count(&self) -> usize {
        self.nodes
            .iter()
            .map(|n| n.class as usize + 1)
            .max()
            .unwrap_or(0)
    }

    /// Whether `node` can take new allocations (mirrors `NodeState::schedulable`).
    pub(crate) fn schedulable(&self) -> &[bool] {
        &self.schedulable
    }

    pub(crate) fn set_schedulable(&mut self, node: NodeId, schedulable: bool) {
        self.schedulable[node.index()] = schedulable;
    }

    /// `compute()` for `node` at this usage, from the cache when the node
    /// was last scored with the same usage. Inlined into the scoring loop
    /// (see `Simulation::score_node`).
    #[inline(always)]
    pub(crate) fn fitness(
        &self,
        node: NodeId,
        used_cpu: u64,
        used_memory: u64,
        compute: impl FnOnce() -> f64,
    ) -> f64 {
        let hot = &self.nodes[node.index()];
        let cached = hot.fit_score.get();
        if hot.fit_cpu.get() == used_cpu && hot.fit_memory.get() == used_memory && !cached.is_nan()
        {
            return cached;
        }
        let score = compute();
        hot.fit_cpu.set(used_cpu);
        hot.fit_memory.set(used_memory);
        hot.fit_score.set(score);
        score
    }

    /// The slot `proposals` keeps for `node`, if it has one: a sparse set
    /// (the slot each node remembers is checked against the list itself),
    /// so an evaluation needs no per-node array and no clearing, and a slot
    /// left by an earlier evaluation is simply not found.
    pub(crate) fn proposal_slot(&self, node: NodeId, proposals: &[Proposed]) -> Option<usize> {
        let slot = self.nodes[node.index()].proposal.get() as usize;
        proposals
            .get(slot)
            .is_some_and(|p| p.node == node)
            .then_some(slot)
    }

    /// Adds `reserved` to what `proposals` holds for `node`.
    pub(crate) fn propose(&self, node: NodeId, proposals: &mut Vec<Proposed>, reserved: Reserved) {
        let slot = match self.proposal_slot(node, proposals) {
            Some(slot) => slot,
            None => {
                self.nodes[node.index()]
                    .proposal
                    .set(u32::try_from(proposals.len()).expect("proposals fit in u32"));
                proposals.push(Proposed {
                    node,
                    cpu: 0,
                    memory: 0,
                    disk: 0,
                });
                proposals.len() - 1
            }
        };
        let proposed = &mut proposals[slot];
        proposed.cpu += reserved.cpu;
        proposed.memory += reserved.memory;
        proposed.disk += reserved.disk;
    }
}

/// [`rank::free_term`] remembered by its inputs: a cluster's nodes share a
/// few capacities and its allocations a few sizes, so the same (used,
/// capacity) pairs recur across nodes, which the per-node fitness cache
/// cannot see. A direct-mapped table: a pure function's memo, so a
/// collision costs a recomputation and never a different value.
pub(crate) struct FreeTermMemo {
    entries: Vec<Cell<(u64, u64, f64)>>,
    /// log2 of `entries.len()`.
    bits: u32,
}

/// Most entries in [`FreeTermMemo`] (96 KiB: it stays in the core's cache).
const MEMO_MAX_BITS: u32 = 12;

impl FreeTermMemo {
    /// A memo sized to the cluster: 4 entries a node, 16 to 4,096 in all,
    /// so that a run of a small scenario (a sweep runs thousands) does not
    /// pay for a large table.
    pub(crate) fn for_nodes(nodes: usize) -> Self {
        let bits = (nodes
            .saturating_mul(4)
            .max(16)
            .next_power_of_two()
            .trailing_zeros())
        .min(MEMO_MAX_BITS);
        FreeTermMemo {
            // Capacity 0 is never looked up (a node has some CPU and
            // memory), so (0, 0) marks an empty entry.
            entries: vec![Cell::new((0, 0, 0.0)); 1 << bits],
            bits,
        }
    }

    pub(crate) fn term(&self, used: u64, capacity: u64) -> f64 {
        // Fibonacci hashing of both inputs to the table's bits.
        let mixed = (used ^ capacity.rotate_left(32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let cell = &self.entries[(mixed >> (64 - self.bits)) as usize];
        let (u, c, value) = cell.get();
        if u == used && c == capacity && capacity != 0 {
            return value;
        }
        let value = rank::free_term(used, capacity);
        cell.set((used, capacity, value));
        value
    }
}

/// Asks the CPU to start loading `items[index]` into its cache, if there is
/// one. The scoring loop visits nodes in shuffled order, so on a large
/// cluster each per-node record it reads is a cache miss unless it is
/// requested a few nodes ahead. A hint only: it changes no value.
#[inline(always)]
pub(crate) fn prefetch<T>(items: &[T], index: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(item) = items.get(index) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch reads nothing the program sees and cannot
        // fault, and the pointer is to a live element besides. (The
        // intrinsic is unsafe only because it names its `sse` feature,
        // which every x86_64 target has.)
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(item).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (items, index);
}

/// CPU and memory a plan under construction proposes on one node.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Proposed {
    pub node: NodeId,
    pub cpu: u64,
    pub memory: u64,
    pub disk: u64,
}

/// Each node's datacenter (or node pool) as a dense index, so an
/// evaluation compares names once per datacenter instead of once per node.
pub(crate) struct Datacenters {
    names: Vec<String>,
    of_node: Vec<u32>,
}

impl Datacenters {
    pub(crate) fn new<'a>(node_datacenters: impl Iterator<Item = &'a String>) -> Self {
        let mut names: Vec<String> = Vec::new();
        let of_node = node_datacenters
            .map(|dc| match names.iter().position(|n| n == dc) {
                Some(i) => i as u32,
                None => {
                    names.push(dc.clone());
                    (names.len() - 1) as u32
                }
            })
            .collect();
        Datacenters { names, of_node }
    }

    /// The datacenters' names, by index.
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// Each node's datacenter index.
    pub(crate) fn of_node(&self) -> &[u32] {
        &self.of_node
    }

    /// Whether each datacenter index is one of `wanted`.
    pub(crate) fn of_job(&self, wanted: &[String]) -> Vec<bool> {
        self.names.iter().map(|n| wanted.contains(n)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::JobId;

    fn ask(cpu: u64, memory: u64, disk: u64) -> Reserved {
        Reserved { cpu, memory, disk }
    }

    /// A node offering `n` of each dimension.
    fn node(n: u64) -> Reserved {
        ask(n, n, n)
    }

    #[test]
    fn live_allocs_follow_inserts_and_removals() {
        let group = GroupRef::new(JobId(1), 1);
        let mut live = LiveAllocs::new([1, 2].into_iter());
        for (i, node) in [3, 5, 3, 7].into_iter().enumerate() {
            live.insert(AllocId::from_index(i), group, NodeId(node));
        }
        live.remove(AllocId(0), group);
        live.remove(AllocId(3), group);
        let mut left: Vec<_> = live.of_group(group).to_vec();
        left.sort();
        assert_eq!(left, vec![(AllocId(1), NodeId(5)), (AllocId(2), NodeId(3))]);
        let mut tally = GroupTally::default();
        tally.count_live(&live, group, 8);
        let live_counts: Vec<u32> = tally.per_node().iter().map(|c| c.live).collect();
        assert_eq!(live_counts, vec![0, 0, 0, 1, 0, 1, 0, 0]);
        assert!(live.of_group(GroupRef::new(JobId(0), 0)).is_empty());
    }

    #[test]
    fn a_tally_starts_every_evaluation_from_zero() {
        let group = GroupRef::new(JobId(0), 0);
        let mut live = LiveAllocs::new([1].into_iter());
        live.insert(AllocId(0), group, NodeId(2));
        let mut tally = GroupTally::default();
        tally.count_live(&live, group, 6);
        tally.propose(NodeId(2));
        tally.propose(NodeId(4));
        tally.propose(NodeId(4));
        assert!(tally.is_counted());
        let counts = |t: &GroupTally| -> Vec<(u32, u32)> {
            t.per_node().iter().map(|c| (c.live, c.proposed)).collect()
        };
        assert_eq!(
            counts(&tally),
            [(0, 0), (0, 0), (1, 1), (0, 0), (0, 2), (0, 0)]
        );
        // The next evaluation sees the allocation moved and nothing proposed.
        tally.reset();
        assert!(!tally.is_counted());
        live.remove(AllocId(0), group);
        live.insert(AllocId(1), group, NodeId(5));
        tally.count_live(&live, group, 6);
        assert_eq!(
            counts(&tally),
            [(0, 0), (0, 0), (0, 0), (0, 0), (0, 0), (1, 0)]
        );
        assert_eq!(
            tally.at(NodeId(5)),
            GroupCounts {
                live: 1,
                proposed: 0
            }
        );
    }

    #[test]
    fn datacenters_are_indexed_once() {
        let names: Vec<String> = ["b", "a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let dcs = Datacenters::new(names.iter());
        assert_eq!(dcs.of_node(), &[0, 1, 0, 2]);
        assert_eq!(
            dcs.of_job(&["c".to_string(), "b".to_string()]),
            vec![true, false, true]
        );
    }

    #[test]
    fn the_free_term_memo_gives_the_function_s_bits() {
        let memo = FreeTermMemo::for_nodes(3);
        assert_eq!(memo.entries.len(), 16);
        assert_eq!(FreeTermMemo::for_nodes(100_000).entries.len(), 4096);
        for round in 0..2 {
            for used in (0..=10_000).step_by(37) {
                for capacity in [1, 3_000, 10_000, 123_457] {
                    let want = rank::free_term(used, capacity).to_bits();
                    assert_eq!(memo.term(used, capacity).to_bits(), want, "round {round}");
                }
            }
        }
    }

    #[test]
    fn fitness_is_recomputed_only_for_a_new_usage() {
        let table = NodeTable::new([(node(4), 0, false), (node(4), 1, true)].into_iter());
        assert!(table.limits_attachments(NodeId(1)) && !table.limits_attachments(NodeId(0)));
        assert_eq!(table.capacity(NodeId(1)), (4, 4));
        assert_eq!(table.class_count(), 2);
        let calls = Cell::new(0);
        let score = |v: f64| {
            calls.set(calls.get() + 1);
            v
        };
        assert_eq!(table.fitness(NodeId(0), 1, 2, || score(0.5)), 0.5);
        assert_eq!(table.fitness(NodeId(0), 1, 2, || score(0.9)), 0.5);
        assert_eq!(table.fitness(NodeId(1), 1, 2, || score(0.7)), 0.7);
        assert_eq!(table.fitness(NodeId(0), 1, 3, || score(0.8)), 0.8);
        assert_eq!(calls.get(), 3);
    }

    #[test]
    fn proposals_are_a_sparse_set_per_evaluation() {
        let table = NodeTable::new([(node(4), 0, false); 3].into_iter());
        let mut first = Vec::new();
        table.propose(NodeId(2), &mut first, ask(1, 2, 3));
        table.propose(NodeId(0), &mut first, ask(1, 1, 1));
        table.propose(NodeId(2), &mut first, ask(1, 1, 4));
        assert_eq!(first.len(), 2);
        let slot = table.proposal_slot(NodeId(2), &first).unwrap();
        assert_eq!(
            (first[slot].cpu, first[slot].memory, first[slot].disk),
            (2, 3, 7)
        );
        assert_eq!(table.proposal_slot(NodeId(1), &first), None);
        // A later evaluation starts empty: the slots the nodes remember
        // from the first are not found in its list.
        let mut second = Vec::new();
        assert_eq!(table.proposal_slot(NodeId(2), &second), None);
        table.propose(NodeId(0), &mut second, ask(5, 5, 5));
        assert_eq!(table.proposal_slot(NodeId(2), &second), None);
        assert_eq!(table.proposal_slot(NodeId(0), &second), Some(0));
    }

    #[test]
    fn disk_is_taken_and_released_with_the_rest() {
        let mut table = NodeTable::new([(node(10), 0, false)].into_iter());
        table.take(NodeId(0), ask(1, 2, 3));
        table.take(NodeId(0), ask(1, 1, 4));
        assert_eq!(
            (table.used(NodeId(0)), table.disk(NodeId(0))),
            ((2, 3), (7, 10))
        );
        table.release(NodeId(0), ask(1, 2, 3));
        assert_eq!(
            (table.used(NodeId(0)), table.disk(NodeId(0))),
            ((1, 1), (4, 10))
        );
    }

    #[test]
    fn a_hot_node_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<HotNode>(), 64);
    }
}
