//! Every input that ever broke plansim (from fuzzing or property tests) is
//! kept in fuzz/regressions/ and replayed with the fuzz target's checks:
//! it loads or is refused cleanly, and if it loads every policy runs with
//! every invariant checked, plan-aware without violations or refused claims,
//! and `plansim hunt`'s `no-lost-claims` holds (some came from hunts).

mod common;

use plansim::hunt::Property;
use plansim::hunt::property::{Runs, check};
use plansim::model::policy::Policy;

#[test]
fn every_regression_input_stays_fixed() {
    let files = common::yaml_files("fuzz/regressions");
    assert!(files.len() >= 3, "regression inputs went missing");
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let Ok(scenario) = plansim::scenario::load_str(&text, "regression.yaml", "regression")
        else {
            continue;
        };
        for policy in Policy::ALL {
            let output = common::run_checked(&scenario, policy, 0);
            if policy == Policy::PlanAware {
                assert_eq!(output.metrics.violations, 0, "{}", file.display());
                assert_eq!(output.metrics.claim_failures, 0, "{}", file.display());
            }
        }
        let lost = check(Property::NoLostClaims, &mut Runs::new(&scenario));
        assert!(lost.is_none(), "{}: {lost:?}", file.display());
    }
}
