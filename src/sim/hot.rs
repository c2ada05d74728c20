//! Indexes for the scheduler's hot path (issue #16): flat, vector-indexed
//! state that replaces per-node ordered maps on the per-node scoring loop.
//! Each index mirrors state kept elsewhere and changes with it; none
//! changes what the model decides, only how fast it looks things up.

use std::cell::Cell;

use crate::model::ids::{AllocId, GroupRef, NodeId};

/// The live allocations of every task group, with their nodes (what job
/// anti-affinity and `distinct_hosts` count per node). An evaluation turns
/// its job's lists into flat per-node counts once ([`LiveAllocs::count_on_nodes`])
/// instead of looking up an ordered map per node scored.
#[derive(Default)]
pub(super) struct LiveAllocs {
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
    pub(super) fn new(groups_per_job: impl Iterator<Item = usize>) -> Self {
        LiveAllocs {
            groups: groups_per_job.map(|n| vec![Vec::new(); n]).collect(),
            position: Vec::new(),
        }
    }

    /// Allocation `id` (the newest one: ids are dense and increasing) of
    /// `group` now lives on `node`.
    pub(super) fn insert(&mut self, id: AllocId, group: GroupRef, node: NodeId) {
        if self.position.len() <= id.index() {
            self.position.resize(id.index() + 1, GONE);
        }
        let list = &mut self.groups[group.job.index()][group.group_index()];
        self.position[id.index()] = u32::try_from(list.len()).expect("live allocations fit in u32");
        list.push((id, node));
    }

    /// Allocation `id` of `group` is no longer live.
    pub(super) fn remove(&mut self, id: AllocId, group: GroupRef) {
        let at = std::mem::replace(&mut self.position[id.index()], GONE);
        assert!(at != GONE, "alloc #{} is live", id.0);
        let list = &mut self.groups[group.job.index()][group.group_index()];
        list.swap_remove(at as usize);
        if let Some(&(moved, _)) = list.get(at as usize) {
            self.position[moved.index()] = at;
        }
    }

    /// The live allocations of `group`, in no particular order.
    pub(super) fn of_group(&self, group: GroupRef) -> &[(AllocId, NodeId)] {
        &self.groups[group.job.index()][group.group_index()]
    }

    /// Adds one to `counts[node]` for every live allocation of `group`.
    pub(super) fn count_on_nodes(&self, group: GroupRef, counts: &mut [GroupCounts]) {
        for &(_, node) in self.of_group(group) {
            counts[node.index()].live += 1;
        }
    }
}

/// One group's allocations on one node during an evaluation.
#[derive(Clone, Copy, Default)]
pub(super) struct GroupCounts {
    /// Live allocations there when the evaluation began.
    pub live: u32,
    /// Placements the plan under construction adds there.
    pub proposed: u32,
}

/// The last fitness computed for each node, keyed by the used CPU and
/// memory it was computed for: a node's capacity never changes, so the
/// same key gives the same bits, and a node scored again before anything
/// is placed on it (most of them: each placement changes one node) skips
/// the two `pow10`s.
pub(super) struct FitnessCache {
    entries: Vec<Cell<Fitness>>,
    /// Each node's CPU and memory (the spec's), beside its entry: a
    /// scoring reads one small record instead of the node's whole spec.
    capacity: Vec<(u64, u64)>,
}

#[derive(Clone, Copy)]
struct Fitness {
    used_cpu: u64,
    used_memory: u64,
    /// NaN: nothing cached (a computed NaN is simply never reused).
    score: f64,
}

impl FitnessCache {
    /// For nodes of the given CPU and memory.
    pub(super) fn new(capacity: Vec<(u64, u64)>) -> Self {
        let empty = Fitness {
            used_cpu: 0,
            used_memory: 0,
            score: f64::NAN,
        };
        FitnessCache {
            entries: vec![Cell::new(empty); capacity.len()],
            capacity,
        }
    }

    /// `node`'s CPU and memory.
    pub(super) fn capacity(&self, node: NodeId) -> (u64, u64) {
        self.capacity[node.index()]
    }

    /// `compute(used_cpu, used_memory)` for `node`, from the cache when
    /// the node was last scored with the same usage.
    pub(super) fn get(
        &self,
        node: NodeId,
        used_cpu: u64,
        used_memory: u64,
        compute: impl FnOnce() -> f64,
    ) -> f64 {
        let cell = &self.entries[node.index()];
        let cached = cell.get();
        if cached.used_cpu == used_cpu
            && cached.used_memory == used_memory
            && !cached.score.is_nan()
        {
            return cached.score;
        }
        let score = compute();
        cell.set(Fitness {
            used_cpu,
            used_memory,
            score,
        });
        score
    }
}

/// Each node's datacenter as a dense index, so an evaluation compares
/// datacenter names once per datacenter instead of once per node.
pub(super) struct Datacenters {
    names: Vec<String>,
    of_node: Vec<u32>,
}

impl Datacenters {
    pub(super) fn new<'a>(node_datacenters: impl Iterator<Item = &'a String>) -> Self {
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

    /// Each node's datacenter index.
    pub(super) fn of_node(&self) -> &[u32] {
        &self.of_node
    }

    /// Whether each datacenter index is one of `wanted`.
    pub(super) fn of_job(&self, wanted: &[String]) -> Vec<bool> {
        self.names.iter().map(|n| wanted.contains(n)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::JobId;

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
        let mut counts = vec![GroupCounts::default(); 8];
        live.count_on_nodes(group, &mut counts);
        let live_counts: Vec<u32> = counts.iter().map(|c| c.live).collect();
        assert_eq!(live_counts, vec![0, 0, 0, 1, 0, 1, 0, 0]);
        assert!(live.of_group(GroupRef::new(JobId(0), 0)).is_empty());
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
    fn alloc_set_keeps_id_order() {
        use super::super::state::AllocSet;
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

    #[test]
    fn fitness_is_recomputed_only_for_a_new_usage() {
        let cache = FitnessCache::new(vec![(4, 4); 2]);
        assert_eq!(cache.capacity(NodeId(1)), (4, 4));
        let calls = Cell::new(0);
        let score = |v: f64| {
            calls.set(calls.get() + 1);
            v
        };
        assert_eq!(cache.get(NodeId(0), 1, 2, || score(0.5)), 0.5);
        assert_eq!(cache.get(NodeId(0), 1, 2, || score(0.9)), 0.5);
        assert_eq!(cache.get(NodeId(1), 1, 2, || score(0.7)), 0.7);
        assert_eq!(cache.get(NodeId(0), 1, 3, || score(0.8)), 0.8);
        assert_eq!(calls.get(), 3);
    }
}
