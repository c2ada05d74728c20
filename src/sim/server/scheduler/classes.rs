//! Nomad's computed node classes (nomad/structs/node_class.go): the key
//! under which feasibility results are cached for an evaluation, and which
//! constraints escape it.

use std::collections::BTreeMap;

use crate::model::scenario::{Constraint, ConstraintTarget, Scenario};

/// Nomad's computed node class (structs/node_class.go): nodes that agree on
/// node pool (2.0.5's `HashInclude` lists NodePool), datacenter, class and
/// every non-unique attribute (drivers, CPU and
/// memory are attributes too) share one, as dense indices.
pub(crate) fn computed_classes(scenario: &Scenario) -> Vec<u32> {
    let mut classes = BTreeMap::new();
    scenario
        .nodes
        .iter()
        .map(|node| {
            let attributes: Vec<(&String, &String)> = node
                .attributes
                .iter()
                .filter(|(key, _)| !key.starts_with("unique."))
                .collect();
            let key = (
                &node.node_pool,
                &node.datacenter,
                &node.node_class,
                attributes,
                node.drivers.0,
                node.cpu,
                node.memory,
            );
            let next = classes.len() as u32;
            *classes.entry(key).or_insert(next)
        })
        .collect()
}

/// Each computed class's node class (Node.NodeClass), for AllocMetric's
/// ClassFiltered and ClassExhausted: nodes without a class are not counted.
pub(crate) struct NodeClasses {
    names: Vec<String>,
    of_computed: Vec<Option<u32>>,
}

impl NodeClasses {
    pub(crate) fn new(scenario: &Scenario) -> Self {
        let mut names: Vec<String> = Vec::new();
        let mut of_computed: Vec<Option<u32>> = Vec::new();
        for (node, class) in scenario.nodes.iter().zip(computed_classes(scenario)) {
            let class = class as usize;
            if of_computed.len() <= class {
                of_computed.resize(class + 1, None);
            }
            if node.node_class.is_empty() {
                continue;
            }
            let index = match names.iter().position(|n| *n == node.node_class) {
                Some(i) => i,
                None => {
                    names.push(node.node_class.clone());
                    names.len() - 1
                }
            };
            of_computed[class] = Some(index as u32);
        }
        NodeClasses { names, of_computed }
    }

    /// How many node classes there are.
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }

    /// The node class of a computed class, if its nodes have one.
    #[inline(always)]
    pub(crate) fn of(&self, computed: u32) -> Option<u32> {
        self.of_computed[computed as usize]
    }

    pub(crate) fn name(&self, class: u32) -> &str {
        &self.names[class as usize]
    }
}

/// A constraint on a unique attribute escapes the computed class: its
/// result cannot be cached per class.
pub(crate) fn escapes(constraints: &[Constraint]) -> bool {
    constraints.iter().any(|c| match &c.target {
        ConstraintTarget::NodeName => true,
        ConstraintTarget::Attribute(key) => key.starts_with("unique."),
        ConstraintTarget::Datacenter | ConstraintTarget::NodeClass | ConstraintTarget::Unset => {
            false
        }
    })
}
