//! Feasibility: can this node take this allocation? Checks run in Nomad's
//! order (constraints, drivers, CSI volumes, then resources) and a refused
//! node is tallied under the reason Nomad would give.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::model::access::{ClaimCounts, ClaimMode, Refusal, admit};
use crate::model::ids::{GroupRef, NodeId, PluginId, VolumeId};
use crate::model::release::{MissingAttribute, OrderedOperators, Release};
use crate::model::scenario::{
    Constraint, ConstraintOperator, ConstraintTarget, Matcher, NodeSpec, Scenario,
};
use crate::model::version::Version;

/// Why a node was filtered out. Ids, not names: rendering happens once, at
/// the edge, with [`FilterReason::describe`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FilterReason {
    /// A constraint, by its index in the job's then the group's list.
    Constraint {
        group: GroupRef,
        index: usize,
    },
    MissingDrivers,
    CsiVolumeMissing(String),
    CsiPluginMissing {
        plugin: PluginId,
        node: NodeId,
    },
    CsiPluginUnhealthy {
        plugin: PluginId,
        node: NodeId,
    },
    CsiPluginMaxVolumes {
        plugin: PluginId,
        node: NodeId,
    },
    CsiTopology,
    CsiNoReaderClaims(VolumeId),
    CsiReadOnly(VolumeId),
    CsiNoWriterClaims(VolumeId),
    CpuExhausted,
    MemoryExhausted,
    /// The group's ephemeral disk does not fit the node's free disk.
    DiskExhausted,
    /// No node is ready, eligible and in the job's datacenters.
    NoNodes,
    /// 1.2.6's wording of a missing volume.
    CsiVolumeMissingLegacy(String),
    /// The node's computed class already failed the job's or group's
    /// checks in this evaluation (Nomad's FeasibilityWrapper fast path).
    ComputedClassIneligible,
    /// Plan-aware: the volume is, or will be, claimed in another access or
    /// attachment mode (the fix's own words, not Nomad's).
    CsiModeConflict(VolumeId),
    /// The node already runs (or the plan places) an allocation of the job,
    /// or of the group, under a distinct_hosts constraint.
    DistinctHosts,
    /// A distinct_property constraint (its index as for `Constraint`): the
    /// node's value is used by `used` allocations, the allowed count.
    DistinctProperty {
        group: GroupRef,
        index: usize,
        value: String,
        used: u64,
    },
    /// The node lacks the distinct_property constraint's attribute.
    DistinctPropertyMissing {
        group: GroupRef,
        index: usize,
    },
    /// The ports the node's allocations (and the plan's) hold collide
    /// (`AddAllocs`): "network: port collision".
    PortCollision,
    /// A static port of the ask is reserved by the node or held
    /// (`AssignPorts`): "network: reserved port collision http=80".
    ReservedPortCollision {
        label: Box<str>,
        port: u16,
    },
    /// Too few free ports in the node's dynamic range (`AssignPorts`,
    /// `getDynamicPortsPrecise`): "network: dynamic port selection failed".
    DynamicPortsExhausted,
    /// The node lacks a host volume the group asks for, or cannot give it
    /// in the asked mode (`FilterConstraintHostVolumes`).
    HostVolumes,
    /// Plan-aware: a single-writer host volume already has a writer, or
    /// will have one by this plan (the fix's own words, not Nomad's).
    HostVolumeWriter,
}

impl FilterReason {
    /// The reason in Nomad's words.
    pub fn describe(&self, scenario: &Scenario) -> String {
        let plugin = |id: &PluginId| scenario.plugins[id.index()].name.as_str();
        let node = |id: &NodeId| scenario.nodes[id.index()].name.as_str();
        let volume = |id: &VolumeId| scenario.volumes[id.index()].name.as_str();
        match self {
            FilterReason::Constraint { group, index } => {
                let job = &scenario.jobs[group.job.index()];
                let constraint = job
                    .constraints
                    .iter()
                    .chain(job.groups[group.group_index()].constraints.iter())
                    .nth(*index)
                    .expect("constraint index is valid");
                constraint.text.clone()
            }
            FilterReason::MissingDrivers => "missing drivers".to_string(),
            FilterReason::CsiVolumeMissing(name) => format!("missing CSI volume(s) {name}"),
            FilterReason::CsiPluginMissing { plugin: p, node: n } => {
                format!(
                    "CSI plugin {} is missing from client {}",
                    plugin(p),
                    node(n)
                )
            }
            FilterReason::CsiPluginUnhealthy { plugin: p, node: n } => {
                format!(
                    "CSI plugin {} is unhealthy on client {}",
                    plugin(p),
                    node(n)
                )
            }
            FilterReason::CsiPluginMaxVolumes { plugin: p, node: n } => format!(
                "CSI plugin {} has the maximum number of volumes on client {}",
                plugin(p),
                node(n)
            ),
            FilterReason::CsiTopology => "did not meet topology requirement".to_string(),
            FilterReason::CsiNoReaderClaims(v) => format!(
                "CSI volume {} is unschedulable or has exhausted its available reader claims",
                volume(v)
            ),
            FilterReason::CsiReadOnly(v) => {
                format!("CSI volume {} is unschedulable or is read-only", volume(v))
            }
            FilterReason::CsiNoWriterClaims(v) => {
                format!(
                    "CSI volume {} has exhausted its available writer claims",
                    volume(v)
                )
            }
            FilterReason::CpuExhausted => "Dimension \"cpu\" exhausted".to_string(),
            FilterReason::MemoryExhausted => "Dimension \"memory\" exhausted".to_string(),
            FilterReason::DiskExhausted => "Dimension \"disk\" exhausted".to_string(),
            FilterReason::NoNodes => "No nodes were eligible for evaluation".to_string(),
            FilterReason::CsiVolumeMissingLegacy(name) => format!("missing CSI Volume {name}"),
            FilterReason::ComputedClassIneligible => "computed class ineligible".to_string(),
            FilterReason::CsiModeConflict(v) => format!(
                "CSI volume {} is claimed in another access or attachment mode",
                volume(v)
            ),
            FilterReason::DistinctHosts => "distinct_hosts".to_string(),
            FilterReason::HostVolumes => "missing compatible host volumes".to_string(),
            FilterReason::HostVolumeWriter => {
                "host volume is single-node-single-writer and already has a writer".to_string()
            }
            FilterReason::DistinctProperty {
                group,
                index,
                value,
                used,
            } => format!(
                "distinct_property: {}={value} used by {used} allocs",
                constraint_at(scenario, *group, *index).attribute
            ),
            FilterReason::DistinctPropertyMissing { group, index } => format!(
                "missing property {:?}",
                constraint_at(scenario, *group, *index).attribute
            ),
            FilterReason::PortCollision
            | FilterReason::ReservedPortCollision { .. }
            | FilterReason::DynamicPortsExhausted => {
                let dimension = exhausted_dimension(self).expect("a port reason is a dimension");
                format!("Dimension \"{dimension}\" exhausted")
            }
        }
    }

    pub fn from_refusal(refusal: Refusal, volume: VolumeId) -> FilterReason {
        match refusal {
            Refusal::ReadOnly => FilterReason::CsiReadOnly(volume),
            Refusal::NoFreeReaderClaims => FilterReason::CsiNoReaderClaims(volume),
            Refusal::NoFreeWriterClaims => FilterReason::CsiNoWriterClaims(volume),
        }
    }
}

/// A constraint by its index in the job's then the group's list.
fn constraint_at(scenario: &Scenario, group: GroupRef, index: usize) -> &Constraint {
    let job = &scenario.jobs[group.job.index()];
    job.constraints
        .iter()
        .chain(job.groups[group.group_index()].constraints.iter())
        .nth(index)
        .expect("constraint index is valid")
}

/// The reason most nodes were filtered for (ties: the first in check order).
pub fn top_reason(filtered: &BTreeMap<FilterReason, u32>) -> &FilterReason {
    let mut top: Option<(&FilterReason, u32)> = None;
    for (reason, &nodes) in filtered {
        if top.is_none_or(|(_, most)| nodes > most) {
            top = Some((reason, nodes));
        }
    }
    top.expect("a failed placement has at least one reason").0
}

/// Nomad's AllocMetric (nomad/structs/structs.go) for a task group's first
/// failed placement in an evaluation, rendered with the scenario's names:
/// what `nomad job status` prints under the group (command/monitor.go
/// `formatAllocMetrics`). One per failed group, never one per node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllocMetric {
    /// Nodes the iterator handed to the checks (`EvaluateNode`).
    pub nodes_evaluated: u32,
    /// Nodes a check filtered out (`FilterNode`).
    pub nodes_filtered: u32,
    /// Ready nodes per datacenter of the job (`readyNodesInDCs`' map, set by
    /// generic_sched.go computePlacements), in name order.
    pub nodes_available: Vec<(String, u32)>,
    /// Filtered nodes per node class, for nodes that have one.
    pub class_filtered: Vec<(String, u32)>,
    /// Filtered nodes per check, in Nomad's words: most nodes first, check
    /// order on ties.
    pub constraint_filtered: Vec<(String, u32)>,
    /// Nodes whose resources could not take the allocation (`ExhaustedNode`).
    pub nodes_exhausted: u32,
    /// Exhausted nodes per node class, for nodes that have one.
    pub class_exhausted: Vec<(String, u32)>,
    /// Exhausted nodes per dimension ("cpu", "memory"), most first.
    pub dimension_exhausted: Vec<(String, u32)>,
}

impl AllocMetric {
    /// The lines `formatAllocMetrics` prints, in its order.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.nodes_evaluated == 0 {
            out.push("* No nodes were eligible for evaluation".to_string());
        }
        for (dc, available) in &self.nodes_available {
            if *available == 0 {
                out.push(format!("* No nodes are available in datacenter {dc:?}"));
            }
        }
        for (class, n) in &self.class_filtered {
            out.push(format!("* Class {class:?}: {n} nodes excluded by filter"));
        }
        for (constraint, n) in &self.constraint_filtered {
            out.push(format!(
                "* Constraint \"{constraint}\": {n} nodes excluded by filter"
            ));
        }
        if self.nodes_exhausted > 0 {
            out.push(format!(
                "* Resources exhausted on {} nodes",
                self.nodes_exhausted
            ));
        }
        for (class, n) in &self.class_exhausted {
            out.push(format!("* Class {class:?} exhausted on {n} nodes"));
        }
        for (dimension, n) in &self.dimension_exhausted {
            out.push(format!(
                "* Dimension \"{dimension}\" exhausted on {n} nodes"
            ));
        }
        out
    }
}

/// The dimension an exhausted node ran out of (`ExhaustedNode`'s), or none
/// for a node a check filtered (`FilterNode`).
pub fn exhausted_dimension(reason: &FilterReason) -> Option<std::borrow::Cow<'static, str>> {
    match reason {
        FilterReason::CpuExhausted => Some("cpu".into()),
        FilterReason::MemoryExhausted => Some("memory".into()),
        FilterReason::DiskExhausted => Some("disk".into()),
        FilterReason::PortCollision => Some("network: port collision".into()),
        FilterReason::ReservedPortCollision { label, port } => {
            Some(format!("network: reserved port collision {label}={port}").into())
        }
        FilterReason::DynamicPortsExhausted => {
            Some("network: dynamic port selection failed".into())
        }
        _ => None,
    }
}

/// Whether `reason` is an exhausted node (Nomad's ExhaustedNode) rather
/// than a filtered one.
#[inline]
pub fn is_exhausted(reason: &FilterReason) -> bool {
    matches!(
        reason,
        FilterReason::CpuExhausted
            | FilterReason::MemoryExhausted
            | FilterReason::DiskExhausted
            | FilterReason::PortCollision
            | FilterReason::ReservedPortCollision { .. }
            | FilterReason::DynamicPortsExhausted
    )
}

/// A task group that could not be fully placed in an evaluation: Nomad's
/// failed-allocation metrics, rendered with the scenario's names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacementFailure {
    pub group: GroupRef,
    /// Allocations of the group the evaluation could not place (Nomad's
    /// `CoalescedFailures` + 1).
    pub unplaced: u32,
    /// The first failed placement's metric.
    pub metric: AllocMetric,
}

impl PlacementFailure {
    /// From the reasons alone: every node counted was evaluated; no node
    /// classes or datacenters (see [`PlacementFailure::with_nodes`]).
    pub fn new(
        group: GroupRef,
        filtered: &BTreeMap<FilterReason, u32>,
        scenario: &Scenario,
    ) -> Self {
        let mut metric = AllocMetric::default();
        for (reason, &nodes) in filtered {
            match (reason, exhausted_dimension(reason)) {
                (FilterReason::NoNodes, _) => {}
                (_, Some(dimension)) => {
                    metric.nodes_exhausted += nodes;
                    metric.nodes_evaluated += nodes;
                    metric
                        .dimension_exhausted
                        .push((dimension.to_string(), nodes));
                }
                (_, None) => {
                    metric.nodes_filtered += nodes;
                    metric.nodes_evaluated += nodes;
                    metric
                        .constraint_filtered
                        .push((reason.describe(scenario), nodes));
                }
            }
        }
        // Most nodes first; check order breaks ties.
        metric
            .constraint_filtered
            .sort_by_key(|r| std::cmp::Reverse(r.1));
        metric
            .dimension_exhausted
            .sort_by_key(|r| std::cmp::Reverse(r.1));
        PlacementFailure {
            group,
            unplaced: 0,
            metric,
        }
    }

    /// Adds what the reasons do not say: how many nodes the scan visited,
    /// the filtered and exhausted nodes per node class (name, filtered,
    /// exhausted), and the ready nodes per datacenter of the job.
    pub fn with_nodes(
        mut self,
        evaluated: u32,
        classes: Vec<(String, u32, u32)>,
        available: Vec<(String, u32)>,
    ) -> Self {
        self.metric.nodes_evaluated = evaluated;
        for (class, filtered, exhausted) in classes {
            if filtered > 0 {
                self.metric.class_filtered.push((class.clone(), filtered));
            }
            if exhausted > 0 {
                self.metric.class_exhausted.push((class, exhausted));
            }
        }
        self.metric.nodes_available = available;
        self
    }
}

/// Whether a node satisfies one constraint, as `release` checks it.
pub fn constraint_holds_at(
    constraint: &Constraint,
    node: &NodeSpec,
    drivers: &[String],
    release: &Release,
) -> bool {
    let actual = target_value(&constraint.target, node, drivers);
    operator_holds(constraint, actual.as_deref(), release)
}

/// The fix's check (`plan_aware_claims`): the exact access-mode rule over every claim that is
/// or will be held.
pub fn plan_aware_claim_check(
    volume: VolumeId,
    access_mode: crate::model::access::AccessMode,
    held: ClaimCounts,
    request: ClaimMode,
) -> Result<(), FilterReason> {
    admit(access_mode, held, request).map_err(|refusal| FilterReason::from_refusal(refusal, volume))
}

/// The value a constraint, spread or affinity target has on a node.
pub fn target_value<'n>(
    target: &ConstraintTarget,
    node: &'n NodeSpec,
    drivers: &[String],
) -> Option<Cow<'n, str>> {
    match target {
        ConstraintTarget::Attribute(key) => node.attribute(key, drivers),
        ConstraintTarget::Datacenter => Some(Cow::Borrowed(&node.datacenter)),
        ConstraintTarget::NodeClass => Some(Cow::Borrowed(&node.node_class)),
        ConstraintTarget::NodeName => Some(Cow::Borrowed(&node.name)),
        ConstraintTarget::Unset => None,
    }
}

/// Nomad's checkConstraint for one operator, given the node's value.
pub fn operator_holds(c: &Constraint, actual: Option<&str>, release: &Release) -> bool {
    let value = c.value.as_str();
    match c.operator {
        ConstraintOperator::Equal => actual == Some(value),
        // 2.0.5 resolves a missing attribute to "" before comparing.
        ConstraintOperator::NotEqual => match release.missing_attribute {
            MissingAttribute::Nil => actual != Some(value),
            MissingAttribute::Empty => actual.unwrap_or("") != value,
        },
        ConstraintOperator::IsSet => actual.is_some(),
        ConstraintOperator::IsNotSet => actual.is_none(),
        ConstraintOperator::Less
        | ConstraintOperator::LessEqual
        | ConstraintOperator::Greater
        | ConstraintOperator::GreaterEqual => {
            actual.is_some_and(|a| ordered(c.operator, a, value, release.ordered_operators))
        }
        ConstraintOperator::Regexp => match (&c.matcher, actual) {
            (Matcher::Regexp(re), Some(a)) => re.is_match(a),
            _ => false,
        },
        ConstraintOperator::Version | ConstraintOperator::Semver => match (&c.matcher, actual) {
            (Matcher::Version(constraints), Some(a)) => {
                Version::parse(a, true).is_some_and(|v| constraints.check(&v))
            }
            _ => false,
        },
        ConstraintOperator::SetContainsAll => {
            actual.is_some_and(|a| value.split(',').all(|r| set_of(a).any(|l| l == r.trim())))
        }
        ConstraintOperator::SetContainsAny => {
            actual.is_some_and(|a| value.split(',').any(|r| set_of(a).any(|l| l == r.trim())))
        }
        // Their own iterators check these; the constraint checker passes them.
        ConstraintOperator::DistinctHosts | ConstraintOperator::DistinctProperty => true,
    }
}

fn set_of(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim)
}

/// `<`, `<=`, `>`, `>=`: 1.2.6 compares strings; 2.0.5 integers if both
/// parse, else floats if both parse, else strings.
fn ordered(op: ConstraintOperator, left: &str, right: &str, how: OrderedOperators) -> bool {
    use std::cmp::Ordering;
    let order: Option<Ordering> = match how {
        OrderedOperators::Lexical => Some(left.cmp(right)),
        OrderedOperators::Numeric => match (left.parse::<i64>(), right.parse::<i64>()) {
            (Ok(l), Ok(r)) => Some(l.cmp(&r)),
            _ => match (left.parse::<f64>(), right.parse::<f64>()) {
                // NaN compares false whichever way, as in Go.
                (Ok(l), Ok(r)) => l.partial_cmp(&r),
                _ => Some(left.cmp(right)),
            },
        },
    };
    let Some(order) = order else {
        return false;
    };
    match op {
        ConstraintOperator::Less => order == Ordering::Less,
        ConstraintOperator::LessEqual => order != Ordering::Greater,
        ConstraintOperator::Greater => order == Ordering::Greater,
        _ => order != Ordering::Less,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::access::AccessMode;

    fn volume() -> VolumeId {
        VolumeId(0)
    }

    #[test]
    fn plan_aware_counts_everything_held() {
        let one_reader = ClaimCounts {
            readers: 1,
            writers: 0,
        };
        assert_eq!(
            plan_aware_claim_check(
                volume(),
                AccessMode::SingleNodeReaderOnly,
                one_reader,
                ClaimMode::Read
            ),
            Err(FilterReason::CsiNoReaderClaims(volume()))
        );
        let one_writer = ClaimCounts {
            readers: 0,
            writers: 1,
        };
        assert_eq!(
            plan_aware_claim_check(
                volume(),
                AccessMode::SingleNodeWriter,
                one_writer,
                ClaimMode::Write
            ),
            Err(FilterReason::CsiNoWriterClaims(volume()))
        );
        assert!(
            plan_aware_claim_check(
                volume(),
                AccessMode::MultiNodeSingleWriter,
                one_writer,
                ClaimMode::Read
            )
            .is_ok()
        );
    }
}
