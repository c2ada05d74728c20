//! A scenario a command composes rather than one a user wrote: a cluster
//! (a scenario's text, or a small default one) with Nomad job files added
//! as jobs submitted at 0s, and what-if events, for `plansim plan`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_saphyr::{Location, Spanned};

use super::events::DanglingEvents;
use super::scenario::{finish, parse_raw};
use crate::model::ids::JobId;
use crate::model::scenario::Scenario;
use crate::model::time::Millis;
use crate::nomad::files::FileContext;
use crate::scenario::error::LoadError;
use crate::scenario::raw::{RawDuration, RawJob, RawScenario};

/// Nodes of the cluster a plan without `--cluster` runs on.
pub const DEFAULT_CLUSTER_NODES: u32 = 3;

/// What to compose.
pub struct Composition<'a> {
    /// The cluster's scenario text, or `None` for the default cluster.
    pub cluster: Option<&'a str>,
    /// Names the composed scenario in errors.
    pub label: &'a str,
    /// The scenario's name, unless the cluster's text gives one.
    pub name: &'a str,
    /// Where relative `file:` paths (the cluster's, and the job files
    /// below when relative) are read from.
    pub base: &'a Path,
    /// The job files to plan, in order.
    pub job_files: &'a [String],
    /// `-var NAME=VALUE`, in the order given (a later one wins).
    pub vars: &'a [(String, String)],
    /// `-var-file`s, in the order given, read before the `-var`s.
    pub var_files: &'a [String],
    /// `--event "AT KIND ARGS"`, in the order given.
    pub events: &'a [String],
    /// When the planned jobs are submitted; `None`: at 0s on a cluster
    /// whose jobs all start at 0s, else [`SETTLE`] after the last of them.
    pub submit_at: Option<Millis>,
}

/// How long after a cluster's last job submission the planned jobs come
/// by default: the cluster's own jobs have placed and started by then (a
/// CSI plugin job's allocations register their plugin healthy), as the
/// running cluster `nomad job plan` asks would be.
pub const SETTLE: Millis = Millis::from_secs(30);

/// The composed scenario, its warnings, and which of its jobs were planned.
pub struct Composed {
    pub scenario: Scenario,
    pub warnings: Vec<LoadError>,
    pub planned: Vec<JobId>,
    /// Said on stderr when the default cluster was used.
    pub default_cluster: Option<String>,
    /// When the planned jobs were submitted.
    pub submit_at: Millis,
}

pub fn compose(c: &Composition) -> Result<Composed, LoadError> {
    let error = |message: String| LoadError {
        file: c.label.to_string(),
        position: None,
        message,
    };
    let text = c.cluster.map_or_else(
        || format!("nodes:\n  - {{id: \"client-{{i}}\", count: {DEFAULT_CLUSTER_NODES}}}\n"),
        str::to_string,
    );
    let mut raw = parse_raw(&text, c.label)?;
    let cluster_jobs = raw.jobs.len();
    for file in c.job_files {
        raw.jobs.push(Spanned::new(
            job_entry(file, c)?,
            Location::UNKNOWN,
            Location::UNKNOWN,
        ));
    }
    let context = FileContext {
        base: Some(c.base),
        scenario: c.label,
    };
    let mut planned_ids = Vec::new();
    let mut default_cluster = None;
    let mut submit_at = Millis::ZERO;
    let (scenario, warnings) = finish(raw, c.name, DanglingEvents::Refuse, &context, |raw| {
        let last = raw.jobs[..cluster_jobs]
            .iter()
            .filter_map(|j| j.value.submit_at.map(|d| d.0))
            .max();
        submit_at = c.submit_at.unwrap_or_else(|| {
            if cluster_jobs == 0 {
                Millis::ZERO
            } else {
                last.unwrap_or(Millis::ZERO) + SETTLE
            }
        });
        for job in &mut raw.jobs[cluster_jobs..] {
            job.value.submit_at = Some(RawDuration(submit_at));
        }
        let (known, added) = raw.jobs.split_at(cluster_jobs);
        for job in added {
            let id = &job.value.id;
            if known.iter().any(|k| &k.value.id == id) || planned_ids.contains(id) {
                return Err(error(format!(
                    "job {:?} is already in the cluster: plansim plans new jobs, not updates of running ones",
                    crate::names::one_line(id)
                )));
            }
            planned_ids.push(id.clone());
        }
        if c.cluster.is_none() {
            default_cluster = Some(default_nodes(raw));
        }
        for spec in c.events {
            let event = super::event_spec::parse(spec, raw).map_err(&error)?;
            raw.events
                .push(Spanned::new(event, Location::UNKNOWN, Location::UNKNOWN));
        }
        Ok(())
    })?;
    let planned = planned_ids
        .iter()
        .map(|id| {
            let index = scenario
                .jobs
                .iter()
                .position(|j| &j.name == id)
                .expect("a planned job is in the scenario");
            JobId::from_index(index)
        })
        .collect();
    Ok(Composed {
        scenario,
        warnings,
        planned,
        default_cluster,
        submit_at,
    })
}

/// Puts the default cluster's nodes in the first planned job's first
/// datacenter (when it names one, not a glob), and says what they are.
fn default_nodes(raw: &mut RawScenario) -> String {
    let datacenter = raw
        .jobs
        .iter()
        .flat_map(|j| j.value.datacenters.iter().flatten())
        .find(|dc| !dc.contains(['*', '?', '[']))
        .cloned()
        .unwrap_or_else(|| "dc1".to_string());
    for node in &mut raw.nodes {
        node.value.datacenter = Some(datacenter.clone());
    }
    format!(
        "no --cluster given: planning against a default cluster of {DEFAULT_CLUSTER_NODES} nodes (client-0 to client-{}, datacenter {}, 4000 MHz, 8192 MiB, 100 GiB of disk, drivers docker and exec, no CSI plugins or volumes)",
        DEFAULT_CLUSTER_NODES - 1,
        crate::names::one_line(&datacenter)
    )
}

/// A `jobs:` entry naming `file`, with the command line's variables: as
/// the YAML a user would write beside `file:` (`vars`, `var_files`).
fn job_entry(file: &str, c: &Composition) -> Result<RawJob, LoadError> {
    let quote = |s: &str| serde_json::to_string(s).expect("a string serializes");
    let mut text = format!("{{file: {}", quote(file));
    if !c.vars.is_empty() {
        // Later wins, as Nomad takes the last -var of a name.
        let vars: BTreeMap<&str, &str> = c
            .vars
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let pairs: Vec<String> = vars
            .iter()
            .map(|(k, v)| format!("{}: {}", quote(k), quote(v)))
            .collect();
        text.push_str(&format!(", vars: {{{}}}", pairs.join(", ")));
    }
    if !c.var_files.is_empty() {
        let files: Vec<String> = c.var_files.iter().map(|f| quote(f)).collect();
        text.push_str(&format!(", var_files: [{}]", files.join(", ")));
    }
    text.push('}');
    serde_saphyr::from_str(&text).map_err(|err| LoadError {
        file: c.label.to_string(),
        position: None,
        message: format!("the job file entry for {file:?}: {err}"),
    })
}
