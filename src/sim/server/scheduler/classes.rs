//! Nomad's computed node classes (nomad/structs/node_class.go): the key
//! under which feasibility results are cached for an evaluation, and which
//! constraints escape it.

use std::collections::BTreeMap;

use crate::model::scenario::{Constraint, ConstraintTarget, Scenario};

/// Nomad's computed node class (structs/node_class.go): nodes that agree on
/// datacenter, class and every non-unique attribute (drivers, CPU and
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
