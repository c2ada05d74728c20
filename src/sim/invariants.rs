//! Whole-state invariants, checked after every event when a run asks for it
//! (tests and property tests do). Cheap ones are asserted where state changes.

use std::collections::BTreeMap;

use crate::model::access::{ClaimCounts, ClaimMode, permits};
use crate::model::ids::{AllocId, NodeId, VolumeId};
use crate::model::scenario::Reserved;
use crate::sim::simulation::Simulation;
use crate::sim::state::store::{AllocState, ClaimState, VolumeState};

/// Per node: the CPU and memory its live allocations use.
/// What each node's live allocations reserve, added up from them.
type NodeUse = Vec<Reserved>;
/// Per job and group: running and healthy allocations.
type GroupCounts = (Vec<Vec<u32>>, Vec<Vec<u32>>);
/// Per node: volumes by count, as a node's own maps keep them.
type NodeVolumes = Vec<BTreeMap<VolumeId, u32>>;

impl Simulation<'_> {
    /// Every invariant, in turn (each part below checks one record kind
    /// against what the allocations imply).
    pub(crate) fn check_invariants(&self) {
        let (node_use, group_counts) = self.check_allocation_invariants();
        self.check_live_index();
        self.check_claim_gc_invariants();
        assert_eq!(
            self.disconnects.nodes as usize,
            self.nodes
                .iter()
                .filter(|n| n.disconnected_at.is_some())
                .count(),
            "the count of disconnected nodes"
        );
        self.check_node_invariants(&node_use);
        self.check_job_invariants(&group_counts);
        for (index, volume) in self.volumes.iter().enumerate() {
            self.check_volume_invariants(index, volume);
        }
        self.check_plugin_invariants();
        self.check_drain_plugin_invariant();
        self.check_distinct_invariants();
        self.check_port_invariants();
        self.check_host_volume_invariants();
    }

    /// Every port held belongs to a live allocation on that node whose
    /// group asks for ports, and no port collides unless an initial
    /// allocation brought the collision.
    fn check_port_invariants(&self) {
        for (node, alloc, _) in self.ports.held() {
            let a = &self.allocs[alloc.index()];
            assert!(
                a.is_live() && a.node == node,
                "ports held by a live alloc on its node"
            );
            let spec = &self.scenario.jobs[a.group.job.index()].groups_of(a.version)
                [a.group.group_index()];
            assert!(
                !spec.ports.is_empty(),
                "ports held by a group that asks for some"
            );
        }
        if self.scenario.initial_allocations.is_empty() {
            assert!(
                !self.ports.any_collision(),
                "no two allocations hold one port"
            );
        }
    }

    /// Each allocation's own invariants; returns what the nodes' and jobs'
    /// bookkeeping must add up to.
    fn check_allocation_invariants(&self) -> (NodeUse, GroupCounts) {
        let mut used = vec![Reserved::default(); self.nodes.len()];
        let mut running = vec![Vec::new(); self.jobs.len()];
        for (j, job) in self.jobs.iter().enumerate() {
            running[j] = vec![0u32; job.counts.len()];
        }
        let mut healthy = running.clone();
        for (index, alloc) in self.allocs.iter().enumerate() {
            let id = AllocId::from_index(index);
            let on_node = self.nodes[alloc.node.index()].allocs.contains(&id);
            assert_eq!(
                on_node,
                alloc.is_live(),
                "alloc #{index} ({}) node membership",
                alloc.state.name()
            );
            if alloc.is_live() {
                let group = &self.scenario.jobs[alloc.group.job.index()].groups_of(alloc.version)
                    [alloc.group.group_index()];
                let node = &mut used[alloc.node.index()];
                *node = node.plus(self.reserves(group));
            }
            if alloc.state == AllocState::Running {
                running[alloc.group.job.index()][alloc.group.group_index()] += 1;
            }
            assert!(
                alloc.healthy_at.is_none() || alloc.state == AllocState::Running,
                "alloc #{index} ({}) is healthy only while running",
                alloc.state.name()
            );
            if alloc.healthy_at.is_some() {
                healthy[alloc.group.job.index()][alloc.group.group_index()] += 1;
            }
            // No allocation of an older version is placed after a
            // deployment of a newer one succeeded.
            if let Some((at, version)) = self.jobs[alloc.group.job.index()].last_success {
                assert!(
                    alloc.placed_at.get() <= at || alloc.version >= version,
                    "alloc #{index} of version {} placed at {}s, after version {version} deployed at {at}s",
                    alloc.version,
                    alloc.placed_at.get()
                );
            }
        }
        (used, (running, healthy))
    }

    fn check_live_index(&self) {
        // The hot path's index of live allocations (hot.rs) lists exactly
        // the live allocations of each group, on their nodes.
        for (j, job) in self.jobs.iter().enumerate() {
            for g in 0..job.counts.len() {
                let group =
                    crate::model::ids::GroupRef::new(crate::model::ids::JobId::from_index(j), g);
                let mut indexed = self.live.of_group(group).to_vec();
                indexed.sort_unstable();
                let expected: Vec<_> = self
                    .allocs
                    .iter()
                    .enumerate()
                    .filter(|(_, a)| a.is_live() && a.group == group)
                    .map(|(i, a)| (AllocId::from_index(i), a.node))
                    .collect();
                assert_eq!(indexed, expected, "live allocations indexed for {group:?}");
            }
        }
    }

    fn check_claim_gc_invariants(&self) {
        for &(volume, alloc) in &self.awaiting_claim_gc {
            let claim = &self.volumes[volume.index()].ledger[&alloc];
            assert!(
                !self.allocs[alloc.index()].is_live() && claim.state == ClaimState::Taken,
                "claims awaiting GC belong to stopped allocations and are not being released"
            );
        }
        assert!(
            self.awaiting_claim_gc.is_empty() || self.claim_gc_scheduled,
            "claims awaiting GC have a GC pass coming"
        );
    }

    /// What each node's volume maps must hold: volumes its live
    /// allocations mount, volumes counted against `max_volumes`, volumes
    /// published there.
    fn expected_node_volumes(&self) -> (NodeVolumes, NodeVolumes, NodeVolumes) {
        let mut alloc_volumes = vec![BTreeMap::<VolumeId, u32>::new(); self.nodes.len()];
        for alloc in self.allocs.iter().filter(|a| a.is_live()) {
            for &(volume, _) in alloc.volumes() {
                *alloc_volumes[alloc.node.index()].entry(volume).or_default() += 1;
            }
        }
        // CSIVolumesByNodeID: allocations with desired status run (live,
        // failed, complete) count their sources.
        let mut counted_volumes = vec![BTreeMap::<VolumeId, u32>::new(); self.nodes.len()];
        for alloc in self
            .allocs
            .iter()
            .filter(|a| !matches!(a.state, AllocState::Lost | AllocState::Stopped))
        {
            for volume in self.counted_sources(alloc.group) {
                *counted_volumes[alloc.node.index()]
                    .entry(volume)
                    .or_default() += 1;
            }
        }
        let mut published_volumes = vec![BTreeMap::<VolumeId, u32>::new(); self.nodes.len()];
        for (volume, state) in self.volumes.iter().enumerate() {
            for claim in state.ledger.values().filter(|c| c.published) {
                *published_volumes[claim.node.index()]
                    .entry(VolumeId::from_index(volume))
                    .or_default() += 1;
            }
        }
        (alloc_volumes, counted_volumes, published_volumes)
    }

    fn check_node_invariants(&self, used: &NodeUse) {
        let (alloc_volumes, counted_volumes, published_volumes) = self.expected_node_volumes();
        for (index, node) in self.nodes.iter().enumerate() {
            let spec = &self.scenario.nodes[index];
            let id = NodeId::from_index(index);
            assert_eq!(
                self.node_table.schedulable()[index],
                node.schedulable(),
                "node {}: the node table's schedulable mirror",
                spec.name
            );
            // A volume is published only on a node that has (or had) its
            // node plugin; what a drain may do to a plugin job's plugin is
            // checked by `check_drain_plugin_invariant`.
            for volume in node.published_volumes.keys() {
                let plugin = self.scenario.volumes[volume.index()].plugin;
                assert!(
                    spec.csi_plugins.iter().any(|p| p.plugin == plugin),
                    "node {}: volume {} published without its node plugin",
                    spec.name,
                    self.scenario.volumes[volume.index()].name
                );
            }
            assert_eq!(
                node.alloc_volumes, alloc_volumes[index],
                "node {} alloc volumes",
                spec.name
            );
            assert_eq!(
                node.counted_volumes, counted_volumes[index],
                "node {} volumes counted against max_volumes",
                spec.name
            );
            assert_eq!(
                node.published_volumes, published_volumes[index],
                "node {} published volumes",
                spec.name
            );
            let (live_cpu, live_memory) = self.node_table.used(id);
            let (live_disk, _) = self.node_table.disk(id);
            let live = Reserved {
                cpu: live_cpu,
                memory: live_memory,
                disk: live_disk,
            };
            assert_eq!(live, used[index], "node {} resource bookkeeping", spec.name);
            assert!(
                self.node_table.used(id).0 <= spec.cpu,
                "node {} cpu over-committed",
                spec.name
            );
            assert!(
                self.node_table.used(id).1 <= spec.memory,
                "node {} memory over-committed",
                spec.name
            );
            assert!(
                live_disk <= spec.disk,
                "node {} disk over-committed",
                spec.name
            );
        }
    }

    fn check_job_invariants(&self, (running, healthy): &GroupCounts) {
        for (j, job) in self.jobs.iter().enumerate() {
            assert_eq!(
                job.running, running[j],
                "job {} running counts",
                self.scenario.jobs[j].name
            );
            assert_eq!(
                job.healthy, healthy[j],
                "job {} healthy counts",
                self.scenario.jobs[j].name
            );
            for (g, since) in job.unavailable_since.iter().enumerate() {
                assert!(
                    since.is_none() || job.ever_available[g],
                    "job {} group {g}: unavailable before it was ever available",
                    self.scenario.jobs[j].name
                );
            }
        }
    }

    /// One volume's claim bookkeeping against its ledger and reservations.
    fn check_volume_invariants(&self, index: usize, volume: &VolumeState) {
        let name = &self.scenario.volumes[index].name;
        let mut ledger = ClaimCounts::default();
        let mut published = ClaimCounts::default();
        for (alloc, claim) in &volume.ledger {
            ledger.add(claim.mode);
            if claim.published {
                published.add(claim.mode);
            }
            assert!(
                !volume.reserved.contains_key(alloc),
                "volume {name}: claimed and reserved at once"
            );
            let holder = &self.allocs[alloc.index()];
            let claiming_this = holder.state == AllocState::Claiming
                && holder
                    .claims
                    .as_deref()
                    .is_some_and(|claims| claims.volumes[claims.next_volume].0.index() == index);
            if claiming_this {
                // A claim written before a failed ControllerPublish, its
                // retry pending: taken and not published.
                assert!(
                    claim.state == ClaimState::Taken && !claim.published,
                    "volume {name}: a claim awaiting its retry is {:?}, published {}",
                    claim.state,
                    claim.published
                );
            }
        }
        let mut reserved = ClaimCounts::default();
        for (alloc, mode) in &volume.reserved {
            reserved.add(*mode);
            assert!(
                self.allocs[alloc.index()].is_live(),
                "volume {name}: reserved by a terminal alloc"
            );
        }
        assert_eq!(volume.ledger_counts, ledger, "volume {name} ledger counts");
        let mut writers = BTreeMap::new();
        for claim in volume
            .ledger
            .values()
            .filter(|c| c.mode == ClaimMode::Write)
        {
            *writers.entry(claim.job).or_insert(0u32) += 1;
        }
        assert_eq!(
            volume.writers_by_job, writers,
            "volume {name} writers by job"
        );
        assert_eq!(
            volume.reserved_counts, reserved,
            "volume {name} reserved counts"
        );
        let mut reserved_caps = BTreeMap::new();
        for alloc in volume.reserved.keys() {
            let alloc = &self.allocs[alloc.index()];
            let at = alloc
                .volumes()
                .iter()
                .position(|&(v, _)| v.index() == index)
                .expect("a reserving allocation mounts the volume");
            *reserved_caps.entry(alloc.claim_modes()[at]).or_insert(0u32) += 1;
        }
        assert_eq!(
            volume.reserved_caps, reserved_caps,
            "volume {name} reserved modes"
        );
        assert_eq!(
            volume.published_counts, published,
            "volume {name} published counts"
        );
        assert_eq!(
            volume.claimed_mode.is_some(),
            !volume.ledger.is_empty(),
            "volume {name}: a mode is set exactly while it has claims"
        );
        let violating = volume
            .claimed_mode
            .is_some_and(|mode| !permits(mode.access_mode, published));
        assert_eq!(
            volume.violating_since.is_some(),
            violating,
            "volume {name} violation tracking"
        );
    }
}
