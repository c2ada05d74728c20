//! Raw types as scenario YAML: what a Nomad format read (`crate::nomad`),
//! serialised as it is, every field the raw types hold, so an imported
//! scenario says what Nomad said, defaults included.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::scenario::error::LoadError;
use crate::scenario::raw::*;

/// A scenario as raw types, ready to write.
pub struct WrittenScenario {
    pub name: String,
    pub description: String,
    pub cluster: RawCluster,
}

/// A cluster as a Nomad source describes it, in raw types: what every
/// reader of a live cluster's state (`crate::nomad::api`, and the debug
/// archive and live API to come) produces and this writer writes.
pub struct RawCluster {
    pub nodes: Vec<RawNode>,
    pub plugins: Vec<RawPlugin>,
    pub volumes: Vec<RawVolume>,
    pub jobs: Vec<RawJob>,
    pub initial_allocations: Vec<RawInitialAllocation>,
    /// Timeline events at 0s that put nodes in the state they are in.
    pub start_events: Vec<StartEvent>,
    /// RFC 3339: the cluster's wall clock at simulated 0s, if known.
    pub start_time: Option<String>,
}

/// A node's state at the start, written as a timeline event at 0s.
pub enum StartEvent {
    NodeDown(String),
    NodeDrain(String),
}

/// The scenario as written, in the order of its sections.
#[serde_with::skip_serializing_none]
#[derive(Serialize)]
struct Output<'s> {
    name: &'s str,
    description: &'s str,
    start_time: Option<&'s str>,
    nodes: &'s [RawNode],
    plugins: &'s [RawPlugin],
    volumes: &'s [RawVolume],
    jobs: &'s [RawJob],
    /// The compact form: one YAML node per allocation.
    initial_allocations_by_node: Option<ByNode<'s>>,
    events: Option<Vec<OutputEvent<'s>>>,
}

#[serde_with::skip_serializing_none]
#[derive(Serialize)]
struct OutputEvent<'s> {
    at: &'static str,
    node_down: Option<&'s str>,
    node_drain: Option<&'s str>,
}

/// `initial_allocations_by_node`: node -> status -> allocation names.
type ByNode<'s> = BTreeMap<&'s str, BTreeMap<RawInitialStatus, Vec<&'s str>>>;

/// The scenario as YAML text, ending in a newline.
pub fn to_yaml(scenario: &WrittenScenario) -> Result<String, LoadError> {
    let cluster = &scenario.cluster;
    let events: Vec<OutputEvent> = cluster
        .start_events
        .iter()
        .map(|event| match event {
            StartEvent::NodeDown(node) => OutputEvent {
                at: "0s",
                node_down: Some(node),
                node_drain: None,
            },
            StartEvent::NodeDrain(node) => OutputEvent {
                at: "0s",
                node_down: None,
                node_drain: Some(node),
            },
        })
        .collect();
    let mut by_node = ByNode::new();
    for alloc in &cluster.initial_allocations {
        by_node
            .entry(&alloc.node)
            .or_default()
            .entry(alloc.status)
            .or_default()
            .push(&alloc.alloc);
    }
    let output = Output {
        name: &scenario.name,
        description: &scenario.description,
        start_time: cluster.start_time.as_deref(),
        nodes: &cluster.nodes,
        plugins: &cluster.plugins,
        volumes: &cluster.volumes,
        jobs: &cluster.jobs,
        initial_allocations_by_node: (!by_node.is_empty()).then_some(by_node),
        events: (!events.is_empty()).then_some(events),
    };
    let mut yaml = serde_saphyr::to_string(&output).map_err(|err| LoadError {
        file: "scenario".to_string(),
        position: None,
        message: format!("cannot write YAML: {err}"),
    })?;
    if !yaml.ends_with('\n') {
        yaml.push('\n');
    }
    Ok(yaml)
}
