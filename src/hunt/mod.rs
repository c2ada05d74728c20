//! `plansim hunt`: search many scenarios for one where a policy misbehaves,
//! then shrink it to a minimal reproduction. Property-based testing aimed
//! at scheduling policies.
//!
//! - `command.rs`: `plansim hunt` as a library call (search, shrink,
//!   the files written, the summary printed);
//! - `generate.rs`: the default generator (seed-report-sized scenarios,
//!   straight into the model);
//! - `mutate.rs`: mutants of a given scenario (`--from`);
//! - `property.rs`: the properties, checked on the public run API;
//! - `release.rs`: when the pinned release must have freed a claim;
//! - `shrink.rs`: delta debugging to a fixpoint;
//! - `report.rs`: the YAML a finding is written as, with its header.
//!
//! Pure: no files, no terminal, no clock. Scenario `i` depends only on the
//! seed and `i`; scenarios are checked in batches of [`BATCH`], and a
//! budget in runs stops the search only between batches, so the same seed
//! finds and shrinks the same scenarios on any number of threads. A caller
//! with a wall-clock budget also gives [`Hunt::search_until`] a `stop` it
//! asks before each scenario, so a slow batch cannot outlast the budget.

pub mod command;
pub mod generate;
pub mod mutate;
pub mod property;
mod release;
pub mod report;
mod retarget;
mod rng;
pub mod shrink;

use rayon::prelude::*;

use crate::model::metrics::Metrics;
use crate::model::policy::Policy;
use crate::model::scenario::Scenario;
use mutate::Mutation;
pub use property::{Failure, Property};
use property::{Runs, check};

/// Scenarios checked between two looks at the budget and the progress bar.
pub const BATCH: u64 = 1024;

/// Where the scenarios come from.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// The default generator.
    Generated,
    /// Mutants of this scenario; mutant 0 is the scenario itself.
    From(&'a Scenario),
}

/// One search: its seed, what it checks and where its scenarios come from.
pub struct Hunt<'a> {
    pub seed: u64,
    /// In `Property::ALL` order, no repeats.
    pub properties: Vec<Property>,
    pub source: Source<'a>,
}

/// Where a search stands, after each batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    pub tried: u64,
    /// Scenarios that broke at least one property.
    pub failing: u64,
}

/// What a search found: per property, how many scenarios broke it and the
/// first one that did.
#[derive(Clone, Debug)]
pub struct Search {
    pub tried: u64,
    pub failing: u64,
    /// Per property, in `properties` order.
    pub results: Vec<PropertyResult>,
}

/// How one property fared in a search.
#[derive(Clone, Debug)]
pub struct PropertyResult {
    pub property: Property,
    /// Scenarios that broke it.
    pub failing: u64,
    /// The index and failure of the first.
    pub first: Option<(u64, Failure)>,
}

/// A failure shrunk to a minimal scenario.
#[derive(Clone, Debug)]
pub struct Finding {
    pub property: Property,
    /// The scenario of the search that first broke the property.
    pub index: u64,
    /// Its failure before shrinking.
    pub found: Failure,
    pub original: Scenario,
    /// The minimal scenario and its failure.
    pub scenario: Scenario,
    pub failure: Failure,
    /// For `--from`: the mutations that make `scenario` from the base.
    pub mutations: Vec<Mutation>,
    pub checks: u32,
    pub fixpoint: bool,
    /// The minimal scenario's metrics under each policy.
    pub metrics: Vec<(Policy, Metrics)>,
}

impl Hunt<'_> {
    /// Scenario `index` of this hunt, and the mutations that made it.
    pub fn scenario(&self, index: u64) -> (Scenario, Vec<Mutation>) {
        match self.source {
            Source::Generated => (generate::generate(self.seed, index), Vec::new()),
            Source::From(base) => {
                let list = if index == 0 {
                    Vec::new()
                } else {
                    mutate::mutations(base, self.seed, index)
                };
                (mutate::apply(base, &list), list)
            }
        }
    }

    /// The properties `scenario` breaks, in `properties` order.
    pub fn check(&self, scenario: &Scenario) -> Vec<Failure> {
        let mut runs = Runs::new(scenario);
        if self.properties.contains(&Property::NoLostClaims) {
            // It traces every policy anyway: the traced runs' metrics serve
            // the other properties, so nothing is simulated twice.
            for policy in Policy::ALL {
                runs.trace(policy);
            }
        }
        self.properties
            .iter()
            .filter_map(|&p| check(p, &mut runs))
            .collect()
    }

    /// Checks scenarios 0, 1, ... in batches until `budget` scenarios are
    /// checked, every property has a failure, or `keep_going` (asked after
    /// each batch) says stop. Batches run on the current rayon pool.
    pub fn search(&self, budget: u64, keep_going: impl FnMut(Progress) -> bool) -> Search {
        self.search_until(budget, keep_going, &|| false)
    }

    /// [`Hunt::search`], also asking `stop` before each scenario: once it
    /// says stop, the scenarios of the batch not yet started are skipped
    /// (not counted as tried) and the search ends after the batch. Which
    /// scenarios were checked then depends on when `stop` turned, so only
    /// a `stop` that never does (a budget in runs) is reproducible.
    pub fn search_until(
        &self,
        budget: u64,
        mut keep_going: impl FnMut(Progress) -> bool,
        stop: &(dyn Fn() -> bool + Sync),
    ) -> Search {
        let mut results: Vec<PropertyResult> = self
            .properties
            .iter()
            .map(|&property| PropertyResult {
                property,
                failing: 0,
                first: None,
            })
            .collect();
        let mut progress = Progress {
            tried: 0,
            failing: 0,
        };
        let mut next = 0;
        while next < budget {
            let end = budget.min(next + BATCH);
            let checked: Vec<(u64, Option<Vec<Failure>>)> = (next..end)
                .into_par_iter()
                .map(|index| {
                    (
                        index,
                        (!stop()).then(|| self.check(&self.scenario(index).0)),
                    )
                })
                .collect();
            let stopped = checked.iter().any(|(_, found)| found.is_none());
            for (index, found) in checked {
                let Some(found) = found else { continue };
                progress.tried += 1;
                if !found.is_empty() {
                    progress.failing += 1;
                }
                for failure in found {
                    let slot = results
                        .iter_mut()
                        .find(|r| r.property == failure.property)
                        .expect("a checked property");
                    slot.failing += 1;
                    slot.first.get_or_insert((index, failure));
                }
            }
            next = end;
            let all_found = results.iter().all(|r| r.first.is_some());
            if !keep_going(progress) || all_found || stopped {
                break;
            }
        }
        Search {
            tried: progress.tried,
            failing: progress.failing,
            results,
        }
    }

    /// Shrinks the failure of `property` first seen in scenario `index`.
    pub fn shrink(&self, property: Property, index: u64, found: Failure) -> Finding {
        let (original, list) = self.scenario(index);
        let fails = |s: &Scenario| {
            property::check(property, &mut Runs::new(s))
                .is_some_and(|f| f.signature == found.signature)
        };
        let (scenario, mutations, checks, fixpoint) = match (property, self.source) {
            // The scenario's own expect block is the property: shrink the
            // changes, not the scenario (dropping a job would break any
            // expect block, and say nothing).
            (Property::Expect, Source::From(base)) => {
                let (list, checks) = mutate::shrink_list(list, |l| fails(&mutate::apply(base, l)));
                (mutate::apply(base, &list), list, checks, true)
            }
            _ => {
                let mut start = original.clone();
                if property != Property::Expect {
                    start.expectations.clear();
                    start.policies = Policy::ALL.to_vec();
                }
                let shrunk = shrink::shrink(start, fails);
                (shrunk.scenario, list, shrunk.checks, shrunk.fixpoint)
            }
        };
        let mut runs = Runs::new(&scenario);
        let failure = check(property, &mut runs).expect("the shrunk scenario still fails");
        let metrics = Policy::ALL
            .into_iter()
            .map(|p| (p, runs.metrics(p).clone()))
            .collect();
        Finding {
            property,
            index,
            found,
            original,
            scenario,
            failure,
            mutations,
            checks,
            fixpoint,
            metrics,
        }
    }

    /// Shrinks every first failure of a search, in parallel (each shrink is
    /// deterministic on its own), in property order.
    pub fn shrink_all(&self, search: &Search) -> Vec<Finding> {
        search
            .results
            .par_iter()
            .filter_map(|r| {
                r.first
                    .as_ref()
                    .map(|(index, failure)| self.shrink(r.property, *index, failure.clone()))
            })
            .collect()
    }
}
