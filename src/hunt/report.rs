//! A finding as a scenario file: a comment header (the property, the seed,
//! how it was found and shrunk, the policies' metrics, and the `plansim
//! explain` narrative once that command exists), then the minimal scenario
//! with an `expect` block that states the property, so `plansim run FILE`
//! exits 1 while the misbehaviour lasts.

use std::fmt::Write as _;

use super::property::{Property, Runs, check, not_slower_deadline};
use super::{Finding, Hunt, Source};
use crate::model::expect::{Comparison, Expectation};
use crate::model::metrics::{Metric, Metrics};
use crate::model::policy::Policy;
use crate::model::scenario::Scenario;
use crate::scenario::write::model::to_yaml;
use crate::scenario::{LoadError, load_str};

/// The `plansim explain` narrative for the minimal scenario, written into
/// the finding's header: naive against the policy the property is about
/// (validate for `validate-catches`, plan-aware otherwise), at the
/// scenario's seed. `None` when a run stops early.
pub fn explain_narrative(scenario: &Scenario, property: Property) -> Option<String> {
    let candidate = match property {
        Property::ValidateCatches => Policy::Validate,
        _ => Policy::PlanAware,
    };
    crate::explain::explain(scenario, Policy::Naive, candidate, scenario.seed)
        .ok()
        .map(|explanation| crate::explain::render_text(&explanation))
}

/// The file name of a finding in the output directory.
pub fn file_name(property: Property) -> String {
    format!("{}.yaml", property.name())
}

/// The expectations that state `property` for `scenario` (empty for
/// `no-lost-claims`, which needs the trace; `expect` keeps the scenario's).
fn property_expectations(property: Property, finding: &Finding) -> Vec<Expectation> {
    let e = |policy, metric, comparison, value| Expectation {
        policy,
        metric,
        comparison,
        value,
    };
    match property {
        Property::PlanAwareNeverViolates => vec![e(
            Policy::PlanAware,
            Metric::Violations,
            Comparison::Eq,
            0.0,
        )],
        Property::PlanAwareNeverRefused => vec![e(
            Policy::PlanAware,
            Metric::ClaimFailures,
            Comparison::Eq,
            0.0,
        )],
        Property::PlanAwareNotSlower => {
            let allowed = not_slower_deadline(&mut Runs::new(&finding.scenario))
                .map_or(0.0, |d| d.deadline.as_secs_f64());
            vec![
                e(Policy::Naive, Metric::Violations, Comparison::Eq, 0.0),
                e(
                    Policy::PlanAware,
                    Metric::FirstFullS,
                    Comparison::Le,
                    allowed,
                ),
            ]
        }
        Property::ValidateCatches => vec![
            e(Policy::Naive, Metric::Violations, Comparison::Ge, 1.0),
            e(Policy::Validate, Metric::RejectedJobs, Comparison::Ge, 1.0),
        ],
        Property::NoLostClaims => Vec::new(),
        Property::Expect => finding.scenario.expectations.clone(),
    }
}

fn metrics_table(metrics: &[(Policy, Metrics)]) -> String {
    let mut out = format!("{:<18}", "metric");
    for (policy, _) in metrics {
        let _ = write!(out, " {:>10}", policy.name());
    }
    out.push('\n');
    for metric in Metric::ALL {
        let _ = write!(out, "{:<18}", metric.name());
        for (_, m) in metrics {
            let value = m.get(metric).render();
            let _ = write!(out, " {:>10}", if value.is_empty() { "-" } else { &value });
        }
        out.push('\n');
    }
    out
}

fn size(s: &Scenario) -> String {
    format!(
        "{} node(s), {} plugin(s), {} volume(s), {} job(s), {} event(s)",
        s.nodes.len(),
        s.plugins.len(),
        s.volumes.len(),
        s.jobs.len(),
        s.events.len()
    )
}

/// The finding as the text of a scenario file.
pub fn render(hunt: &Hunt, finding: &Finding, from: Option<&str>) -> String {
    let property = finding.property;
    let mut scenario = finding.scenario.clone();
    scenario.name = format!("hunt-{}", property.name());
    scenario.description = format!(
        "Found by plansim hunt: breaks {}: {}.",
        property.name(),
        property.help()
    );
    scenario.expectations = property_expectations(property, finding);

    let mut header = String::new();
    let _ = writeln!(header, "plansim hunt finding: {}", property.name());
    let _ = writeln!(header, "Property: {}.", property.help());
    let _ = writeln!(
        header,
        "Found by: plansim hunt --property {} --seed {}{} (scenario #{} of the search)",
        property.name(),
        hunt.seed,
        from.map(|f| format!(" --from {f}")).unwrap_or_default(),
        finding.index
    );
    let _ = writeln!(header, "Found as: {}", finding.found.message);
    let _ = writeln!(
        header,
        "Shrunk from {} to {} in {} checks{}.",
        size(&finding.original),
        size(&finding.scenario),
        finding.checks,
        if finding.fixpoint {
            ", to a fixpoint"
        } else {
            ", stopped by MAX_SHRINK_CHECKS before the fixpoint"
        }
    );
    if let Source::From(base) = hunt.source {
        let list: Vec<String> = finding.mutations.iter().map(|m| m.describe(base)).collect();
        let _ = writeln!(
            header,
            "Mutations of the --from scenario: {}",
            if list.is_empty() {
                "none".to_string()
            } else {
                list.join("; ")
            }
        );
    }
    let _ = writeln!(header, "Failure: {}", finding.failure.message);
    let _ = writeln!(
        header,
        "\nMetrics at seed {}:\n{}",
        scenario.seed,
        metrics_table(&finding.metrics)
    );
    if let Some(narrative) = explain_narrative(&scenario, property) {
        let _ = writeln!(header, "Explain:\n{narrative}");
    }
    let _ = write!(
        header,
        "Reproduce: plansim hunt --from THIS_FILE --property {} --budget 1",
        property.name()
    );
    if !scenario.expectations.is_empty() {
        header.push_str(
            "\n(or plansim run THIS_FILE: the expect block states the property and fails)",
        );
    }
    to_yaml(&scenario, &header)
}

/// Loads a written finding back and checks the property again: `Ok(true)`
/// when it still fails the same way.
pub fn reproduces(text: &str, finding: &Finding) -> Result<bool, LoadError> {
    let scenario = load_str(text, "finding.yaml", "finding")?;
    Ok(check(finding.property, &mut Runs::new(&scenario))
        .is_some_and(|f| f.signature == finding.failure.signature))
}
