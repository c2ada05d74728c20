//! An expected file (`expected-nomad-X.json`): Nomad's outcome set per
//! scenario, as measured from its `scheduler` package at one release.
//!
//! ```text
//! {"nomad_release": "v1.2.6", "plansim_policy": "naive", "seeds_per_scenario": 100,
//!  "scenarios": {NAME: {"kind": KIND, "nomad": {"seeds": N,
//!     "outcomes": [{"outcome": OUTCOME, "count": C}, ...],
//!     "dist_support": [{"dist": [[JOB, GROUP, {DC: n}, {RACK: n}], ...], "count": C}, ...],
//!     "rejected": [MESSAGE, ...], "error": [MESSAGE, ...], ...}}}}
//! ```
//! where OUTCOME is `{"placed": {JOB: n}, "update": [placed, stopped] | null,
//! "failures": [[JOB, GROUP, unplaced, [LINE, ...]], ...]}`, `"REJECTED"`,
//! or `"ERROR <message>"`.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::outcome::{Dist, Failure, Outcome, OutcomeSet, Placement};

/// One expected file.
#[derive(Clone, Debug)]
pub struct Expected {
    pub nomad_release: String,
    /// The policy that models this release.
    pub plansim_policy: String,
    pub seeds_per_scenario: u64,
    /// By scenario name.
    pub scenarios: BTreeMap<String, ExpectedScenario>,
}

/// Nomad's outcome set for one scenario.
#[derive(Clone, Debug)]
pub struct ExpectedScenario {
    /// The generator's family (`multigroup`, `spread`, `update`, ...).
    pub kind: String,
    pub nomad: OutcomeSet,
}

#[derive(Deserialize)]
struct RawFile {
    nomad_release: String,
    plansim_policy: String,
    seeds_per_scenario: u64,
    scenarios: BTreeMap<String, RawScenario>,
}

#[derive(Deserialize)]
struct RawScenario {
    #[serde(default)]
    kind: String,
    nomad: RawSet,
}

#[derive(Deserialize)]
struct RawSet {
    seeds: u64,
    outcomes: Vec<RawCounted>,
    #[serde(default)]
    dist_support: Vec<RawDist>,
    #[serde(default)]
    rejected: Vec<String>,
    #[serde(default)]
    error: Vec<String>,
}

#[derive(Deserialize)]
struct RawCounted {
    outcome: RawOutcome,
    count: u64,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawOutcome {
    Text(String),
    Ran {
        placed: BTreeMap<String, u64>,
        update: Option<[u64; 2]>,
        failures: Vec<(String, String, u64, Vec<String>)>,
    },
}

#[derive(Deserialize)]
struct RawDist {
    dist: Dist,
    count: u64,
}

impl RawOutcome {
    fn outcome(self) -> Outcome {
        match self {
            RawOutcome::Text(text) => match text.strip_prefix("ERROR") {
                Some(error) => Outcome::Error(error.trim_start().to_string()),
                None => Outcome::Rejected,
            },
            RawOutcome::Ran {
                placed,
                update,
                failures,
            } => {
                let mut failures: Vec<Failure> = failures
                    .into_iter()
                    .map(|(job, group, unplaced, lines)| Failure {
                        job,
                        group,
                        unplaced,
                        lines,
                    })
                    .collect();
                failures.sort();
                Outcome::Ran(Placement {
                    placed,
                    update,
                    failures,
                })
            }
        }
    }
}

impl RawSet {
    fn set(self) -> OutcomeSet {
        let mut set = OutcomeSet {
            seeds: self.seeds,
            rejected: self.rejected.into_iter().collect(),
            error: self.error.into_iter().collect(),
            ..OutcomeSet::default()
        };
        for counted in self.outcomes {
            *set.outcomes.entry(counted.outcome.outcome()).or_default() += counted.count;
        }
        for counted in self.dist_support {
            *set.dist_support.entry(counted.dist).or_default() += counted.count;
        }
        set
    }
}

impl Expected {
    /// Parses an expected file's text.
    pub fn parse(text: &str) -> Result<Expected, String> {
        let raw: RawFile = serde_json::from_str(text).map_err(|err| err.to_string())?;
        Ok(Expected {
            nomad_release: raw.nomad_release,
            plansim_policy: raw.plansim_policy,
            seeds_per_scenario: raw.seeds_per_scenario,
            scenarios: raw
                .scenarios
                .into_iter()
                .map(|(name, s)| {
                    let scenario = ExpectedScenario {
                        kind: s.kind,
                        nomad: s.nomad.set(),
                    };
                    (name, scenario)
                })
                .collect(),
        })
    }
}
