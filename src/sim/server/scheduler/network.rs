//! Ports in scheduling: Nomad's `NetworkIndex` as the bin-pack iterator
//! and the plan applier use it (`nomad/structs/network.go`: `SetNode`,
//! `AddAllocs`, `AssignPorts`; `scheduler/rank.go` /
//! `scheduler/feasible/rank.go` `BinPackIterator.Next`;
//! `nomad/structs/funcs.go:AllocsFit`, called by
//! `nomad/plan_apply.go:evaluateNodePlan`).
//!
//! The scheduler answers from counts: a static port must be free of the
//! node's reserved ports, the ports its allocations hold and the static
//! ports the plan already puts there; a dynamic port needs a free port of
//! the range once the plan's earlier asks are served. The numbers of
//! dynamic ports are given when the plan is applied: the lowest free ports
//! of the range (Nomad draws them at random, so two workers' plans collide
//! on a dynamic port only by a rare chance, which plansim leaves out).

use std::collections::{BTreeMap, BTreeSet};

use crate::model::ids::{AllocId, NodeId};
use crate::model::ports::{PortAsk, dynamic_count, static_ports};
use crate::sim::server::scheduler::feasibility::FilterReason;
use crate::sim::simulation::Simulation;

/// What the plan under construction puts on one node's ports.
#[derive(Default)]
pub(crate) struct PlanPorts {
    /// Static ports of the plan's placements there.
    statics: Vec<u16>,
    /// Dynamic ports they take (numbered when applied).
    dynamic: u32,
    /// 1.2.6: a placement there got one dynamic port twice (see
    /// `Release::dynamic_ports_avoid_offer`), so every later placement
    /// on the node finds a collision.
    collided: bool,
}

/// The plan's ports per node, and the allocations it stops whose ports are
/// therefore free (Nomad's ProposedAllocs leaves them out).
#[derive(Default)]
pub(crate) struct PlanNetwork {
    nodes: BTreeMap<NodeId, PlanPorts>,
    pub(crate) stopped: BTreeSet<AllocId>,
    /// Some node's plan collided (1.2.6).
    collided: bool,
}

impl PlanNetwork {
    /// Whether a node must be asked even for a group without ports.
    #[inline]
    pub(crate) fn any_collision(&self) -> bool {
        self.collided
    }
}

impl Simulation<'_> {
    /// `BinPackIterator.Next`'s network part for `ports` on `node`: the
    /// node's existing ports (`AddAllocs`: "network: port collision"), then
    /// the ask (`AssignPorts`).
    #[cold]
    pub(crate) fn check_ports(
        &self,
        plan: &PlanNetwork,
        node: NodeId,
        ports: &[PortAsk],
    ) -> Result<(), FilterReason> {
        let reserved = &self.scenario.nodes[node.index()].reserved_ports;
        let here = plan.nodes.get(&node);
        if here.is_some_and(|p| p.collided)
            || (self.ports.any_collision() && self.ports.collides(node, reserved, &plan.stopped))
        {
            return Err(FilterReason::PortCollision);
        }
        if ports.is_empty() {
            return Ok(());
        }
        let statics = here.map_or(&[][..], |p| &p.statics[..]);
        let held = self.ports.held_except(node, &plan.stopped);
        let in_use = crate::model::ports::PortsInUse {
            reserved,
            held: &held,
        };
        for (label, port) in static_ports(ports) {
            if in_use.uses(port) || statics.contains(&port) {
                return Err(FilterReason::ReservedPortCollision {
                    label: label.into(),
                    port,
                });
            }
        }
        let wanted = dynamic_count(ports);
        if wanted > 0 {
            let free = self.free_dynamic(plan, node, ports);
            // Before #16401 one free port serves every dynamic ask.
            let needed = if self.behaviour.release.dynamic_ports_avoid_offer {
                wanted
            } else {
                1
            };
            if free < needed {
                return Err(FilterReason::DynamicPortsExhausted);
            }
        }
        Ok(())
    }

    /// Free dynamic ports on `node` once the plan's placements there and
    /// the static ports of `ports` are served.
    fn free_dynamic(&self, plan: &PlanNetwork, node: NodeId, ports: &[PortAsk]) -> u32 {
        let reserved = &self.scenario.nodes[node.index()].reserved_ports;
        let here = plan.nodes.get(&node);
        let mut taken: Vec<u16> = static_ports(ports).map(|(_, p)| p).collect();
        taken.extend(here.iter().flat_map(|p| p.statics.iter().copied()));
        let held = self.ports.held_except(node, &plan.stopped);
        let in_use = crate::model::ports::PortsInUse {
            reserved,
            held: &held,
        };
        in_use.free_dynamic(&taken, here.map_or(0, |p| p.dynamic))
    }

    /// The plan places an allocation asking `ports` on `node`.
    pub(crate) fn propose_ports(&self, plan: &mut PlanNetwork, node: NodeId, ports: &[PortAsk]) {
        if ports.is_empty() {
            return;
        }
        let wanted = dynamic_count(ports);
        let collided = wanted > 0
            && !self.behaviour.release.dynamic_ports_avoid_offer
            && self.free_dynamic(plan, node, ports) < wanted;
        let here = plan.nodes.entry(node).or_default();
        here.statics.extend(static_ports(ports).map(|(_, p)| p));
        here.dynamic += wanted;
        here.collided |= collided;
        plan.collided |= collided;
    }

    /// The plan stops (`stopped`) or no longer stops `id`: its ports are
    /// free, or held again, for the plan's placements.
    pub(crate) fn stop_ports(&self, plan: &mut PlanNetwork, id: AllocId, stopped: bool) {
        if stopped {
            plan.stopped.insert(id);
        } else {
            plan.stopped.remove(&id);
        }
    }

    /// The plan applier's port check of one node plan (`AllocsFit`'s
    /// `NetworkIndex.AddAllocs` over the node's allocations and the plan's):
    /// the ports each placement gets, static ones as asked and dynamic ones
    /// the lowest free, or why the node plan collides.
    pub(crate) fn assign_node_ports<'p>(
        &self,
        node: NodeId,
        asks: impl Iterator<Item = &'p [PortAsk]> + Clone,
    ) -> Result<Vec<Vec<u16>>, String> {
        let spec = &self.scenario.nodes[node.index()];
        let reserved = &spec.reserved_ports;
        let none = BTreeSet::new();
        if self.ports.any_collision() && self.ports.collides(node, reserved, &none) {
            return Err(format!(
                "reserved alloc port collision on node {}: its allocations' ports collide",
                spec.name
            ));
        }
        let in_use = self.ports.in_use(node, reserved);
        let mut taken: Vec<u16> = Vec::new();
        for ports in asks.clone() {
            for (_, port) in static_ports(ports) {
                if in_use.uses(port) || taken.contains(&port) {
                    return Err(format!(
                        "reserved alloc port collision on node {}: port {port} already in use",
                        spec.name
                    ));
                }
                taken.push(port);
            }
        }
        let mut assigned = Vec::new();
        for ports in asks {
            let wanted = dynamic_count(ports);
            let Some(dynamic) = in_use.lowest_dynamic(&taken, wanted) else {
                return Err(format!(
                    "reserved alloc port collision on node {}: no free dynamic port is left",
                    spec.name
                ));
            };
            taken.extend(&dynamic);
            let mut mine: Vec<u16> = static_ports(ports).map(|(_, p)| p).collect();
            mine.extend(dynamic);
            assigned.push(mine);
        }
        Ok(assigned)
    }
}
