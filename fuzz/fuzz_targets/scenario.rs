//! Scenario parsing, validation and a short run under every policy, with
//! every invariant checked after every event. Run with `scripts/fuzz.sh`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plansim::model::policy::Policy;
use plansim::sim::{RunOptions, simulate};

/// Keeps each input fast: big clusters are for the benchmarks, not the fuzzer.
const MAX_FUZZ_NODES: usize = 200;
const MAX_FUZZ_ALLOCATIONS: u64 = 2_000;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(scenario) = plansim::scenario::load_str(text, "fuzz.yaml", "fuzz") else {
        return;
    };
    let allocations: u64 = scenario.jobs.iter().flat_map(|j| &j.groups).map(|g| u64::from(g.count)).sum();
    if scenario.nodes.len() > MAX_FUZZ_NODES || allocations > MAX_FUZZ_ALLOCATIONS {
        return;
    }
    for policy in Policy::ALL {
        let options = RunOptions { trace: true, check_invariants: true, max_events: 20_000, ..RunOptions::new(policy, 0) };
        let output = simulate(&scenario, options);
        if policy == Policy::PlanAware {
            assert_eq!(output.metrics.violations, 0, "plan-aware never violates an access mode");
        }
    }
});
