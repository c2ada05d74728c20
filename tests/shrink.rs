//! The shrinker and the mutations on every scenario the project ships:
//! whatever they remove or move, what is left is a scenario a file can say
//! (it writes and loads back to the same model) and the simulation runs it.
//! Each shipped scenario holds event kinds the hunt's generator never
//! makes (updates, canary promotions, allocation failures, disconnects,
//! publish failures, controller health), which is where a removal used to
//! leave an index pointing past the end.

mod common;

use plansim::hunt::mutate;
use plansim::hunt::shrink::shrink;
use plansim::model::policy::Policy;
use plansim::model::scenario::Scenario;
use plansim::scenario::load_file;
use plansim::scenario::write::model::to_yaml;

/// A deterministic coin for a candidate: keeps about two in three, so a
/// shrink takes many different paths through the simplifications instead
/// of the one straight to the empty scenario.
fn coin(yaml: &str, salt: u64) -> bool {
    // FNV-1a: stable across runs and platforms.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325 ^ salt;
    for byte in yaml.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    !hash.is_multiple_of(3)
}

fn assert_round_trips(candidate: &Scenario, origin: &str) -> String {
    let yaml = to_yaml(candidate, "");
    let back = plansim::scenario::load_str(&yaml, "candidate.yaml", "x")
        .unwrap_or_else(|e| panic!("{origin}: a candidate does not load: {e}\n{yaml}"));
    let (got, want) = (format!("{back:#?}"), format!("{candidate:#?}"));
    if got != want {
        let first = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        let around = |text: &str| {
            text.lines()
                .skip(first.saturating_sub(3))
                .take(30)
                .collect::<Vec<_>>()
                .join("\n")
        };
        panic!(
            "{origin}: a candidate loads as another model\n{yaml}\nloaded:\n{}\nshrunk:\n{}",
            around(&got),
            around(&want)
        );
    }
    yaml
}

fn run_every_policy(scenario: &Scenario) {
    for policy in [Policy::Naive, Policy::Validate, Policy::PlanAware] {
        common::run_checked(scenario, policy, 1);
    }
}

#[test]
fn every_candidate_of_every_shipped_scenario_is_a_valid_scenario() {
    let mut checked = 0u32;
    for path in common::all_scenario_files() {
        let Ok(scenario) = load_file(&path) else {
            continue; // an experiment or a job-file fixture, not a scenario
        };
        let origin = path.display().to_string();
        for salt in 0..2 {
            let mut kept = 0u32;
            let shrunk = shrink(scenario.clone(), |candidate| {
                checked += 1;
                let yaml = assert_round_trips(candidate, &origin);
                let fails = coin(&yaml, salt);
                if fails {
                    kept += 1;
                    // Every tenth kept candidate is simulated too.
                    if kept % 10 == 1 {
                        run_every_policy(candidate);
                    }
                }
                fails
            });
            run_every_policy(&shrunk.scenario);
        }
    }
    assert!(checked > 1000, "only {checked} candidates were checked");
}

#[test]
fn every_mutant_of_every_shipped_scenario_is_a_valid_scenario() {
    for path in common::all_scenario_files() {
        let Ok(scenario) = load_file(&path) else {
            continue;
        };
        let origin = path.display().to_string();
        for index in 0..8 {
            let list = mutate::mutations(&scenario, 7, index);
            let mutant = mutate::apply(&scenario, &list);
            assert_round_trips(&mutant, &format!("{origin} mutant {index} {list:?}"));
        }
    }
}

/// The safety properties hold on every shipped scenario and 32 of its
/// mutants. Each scenario states Nomad behaviour the properties must
/// allow: a stopped allocation's slow tasks (kill_timeout) delay its
/// release, a claim waits for a controller that is gone, a storage
/// provider fails publishes. Before the properties knew these, they failed
/// here (kill-timeout-single-writer, controller-unavailable,
/// publish-failure-churn).
#[test]
fn the_safety_properties_hold_on_every_shipped_scenario_and_its_mutants() {
    use plansim::hunt::{Hunt, Property, Source};
    let properties = [
        Property::PlanAwareNeverViolates,
        Property::PlanAwareNeverRefused,
        Property::NoLostClaims,
    ];
    for path in common::all_scenario_files() {
        let Ok(scenario) = load_file(&path) else {
            continue;
        };
        let hunt = Hunt {
            seed: 0,
            properties: properties.to_vec(),
            source: Source::From(&scenario),
        };
        let search = hunt.search(32, |_| true);
        for result in &search.results {
            assert_eq!(
                result.failing,
                0,
                "{}: {:?} fails: {:?}",
                path.display(),
                result.property,
                result.first
            );
        }
    }
}
