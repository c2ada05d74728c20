//! `expect:`: each policy's expected metrics.

use std::collections::BTreeMap;

use serde_saphyr::Spanned;

use crate::model::expect::{Expectation, parse_comparison};
use crate::model::policy::Policy;
use crate::scenario::error::{Fail, fail};
use crate::scenario::raw::RawExpectValue;

pub(super) fn resolve_expectations(
    raw: Option<BTreeMap<Policy, BTreeMap<crate::model::metrics::Metric, Spanned<RawExpectValue>>>>,
    policies: &[Policy],
) -> Result<Vec<Expectation>, Fail> {
    let mut expectations = Vec::new();
    for (policy, metrics) in raw.into_iter().flatten() {
        for (metric, value) in metrics {
            let path = format!("expect.{policy}.{}", metric.name());
            if !policies.contains(&policy) {
                return fail(
                    value.referenced,
                    format!("{path}: this scenario does not run {policy} (see schedulers)"),
                );
            }
            let (comparison, number) = match &value.value {
                RawExpectValue::Number(n) if n.is_finite() => {
                    (crate::model::expect::Comparison::Eq, *n)
                }
                RawExpectValue::Number(n) => {
                    return fail(
                        value.referenced,
                        format!("{path}: {n} is not a finite number"),
                    );
                }
                RawExpectValue::Text(text) => parse_comparison(text)
                    .map_err(|message| (Some(value.referenced), format!("{path}: {message}")))?,
            };
            expectations.push(Expectation {
                policy,
                metric,
                comparison,
                value: number,
            });
        }
    }
    Ok(expectations)
}
