//! The ports each node's allocations hold (Nomad's `NetworkIndex` as
//! `SetNode` and `AddAllocs` fill it, `nomad/structs/network.go`), kept
//! only for nodes where some allocation holds a port: a sorted list of
//! ports (a port twice when two allocations collide, which only
//! `initial_allocations` can bring) and which allocation holds each.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use crate::model::ids::{AllocId, NodeId};
use crate::model::ports::{PortRanges, PortsInUse};

#[derive(Default)]
struct NodePorts {
    /// Sorted; repeated when allocations collide.
    held: Vec<u16>,
    /// (allocation, port) in the order they were taken.
    owners: Vec<(AllocId, u16)>,
    /// Some held port is held twice or reserved by the node: Nomad's
    /// `AddAllocs` collision ("network: port collision").
    collides: bool,
}

impl NodePorts {
    fn recheck(&mut self, reserved: &PortRanges) {
        self.collides = self.held.windows(2).any(|w| w[0] == w[1])
            || self.held.iter().any(|&p| reserved.contains(p));
    }
}

/// Every node's held ports.
#[derive(Default)]
pub(crate) struct PortTable {
    nodes: BTreeMap<NodeId, NodePorts>,
    /// Nodes whose ports collide (see `NodePorts::collides`).
    colliding: usize,
}

impl PortTable {
    /// Whether any node's ports collide (then every scoring asks).
    #[inline]
    pub(crate) fn any_collision(&self) -> bool {
        self.colliding > 0
    }

    /// Whether `node`'s held ports collide, leaving out those of
    /// `stopped` (allocations the plan stops).
    pub(crate) fn collides(
        &self,
        node: NodeId,
        reserved: &PortRanges,
        stopped: &BTreeSet<AllocId>,
    ) -> bool {
        let Some(ports) = self.nodes.get(&node) else {
            return false;
        };
        if !ports.collides {
            return false;
        }
        let mut held = self.held_except(node, stopped).into_owned();
        held.sort_unstable();
        held.windows(2).any(|w| w[0] == w[1]) || held.iter().any(|&p| reserved.contains(p))
    }

    /// The ports held on `node` (sorted), less those of `stopped`.
    pub(crate) fn held_except(&self, node: NodeId, stopped: &BTreeSet<AllocId>) -> Cow<'_, [u16]> {
        let Some(ports) = self.nodes.get(&node) else {
            return Cow::Borrowed(&[]);
        };
        if stopped.is_empty() || !ports.owners.iter().any(|(a, _)| stopped.contains(a)) {
            return Cow::Borrowed(&ports.held);
        }
        let mut held: Vec<u16> = ports
            .owners
            .iter()
            .filter(|(a, _)| !stopped.contains(a))
            .map(|&(_, p)| p)
            .collect();
        held.sort_unstable();
        Cow::Owned(held)
    }

    /// What is in use on `node`: its reserved ports and those held.
    pub(crate) fn in_use<'a>(&'a self, node: NodeId, reserved: &'a PortRanges) -> PortsInUse<'a> {
        PortsInUse {
            reserved,
            held: self.nodes.get(&node).map_or(&[], |p| &p.held),
        }
    }

    /// `alloc` holds `ports` on `node`.
    pub(crate) fn hold(
        &mut self,
        node: NodeId,
        alloc: AllocId,
        ports: &[u16],
        reserved: &PortRanges,
    ) {
        if ports.is_empty() {
            return;
        }
        let entry = self.nodes.entry(node).or_default();
        let before = entry.collides;
        for &port in ports {
            let at = entry.held.partition_point(|&p| p <= port);
            entry.held.insert(at, port);
            entry.owners.push((alloc, port));
        }
        entry.recheck(reserved);
        self.colliding = self.colliding + usize::from(entry.collides) - usize::from(before);
    }

    /// `alloc` no longer holds its ports on `node`.
    pub(crate) fn release(&mut self, node: NodeId, alloc: AllocId, reserved: &PortRanges) {
        let Some(entry) = self.nodes.get_mut(&node) else {
            return;
        };
        if !entry.owners.iter().any(|&(a, _)| a == alloc) {
            return;
        }
        let before = entry.collides;
        entry.owners.retain(|&(a, port)| {
            if a == alloc {
                let at = entry
                    .held
                    .binary_search(&port)
                    .expect("a held port is listed");
                entry.held.remove(at);
            }
            a != alloc
        });
        entry.recheck(reserved);
        self.colliding = self.colliding + usize::from(entry.collides) - usize::from(before);
        if entry.owners.is_empty() {
            self.nodes.remove(&node);
        }
    }

    /// Every (node, allocation, port) held, for the invariant check.
    pub(crate) fn held(&self) -> impl Iterator<Item = (NodeId, AllocId, u16)> + '_ {
        self.nodes
            .iter()
            .flat_map(|(&node, ports)| ports.owners.iter().map(move |&(a, p)| (node, a, p)))
    }
}
