//! `expect:` assertions of a scenario and their evaluation.

use std::fmt;

use super::metrics::{Metric, MetricValue, Metrics};
use super::policy::Policy;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Comparison {
    pub fn symbol(self) -> &'static str {
        match self {
            Comparison::Eq => "==",
            Comparison::Ne => "!=",
            Comparison::Lt => "<",
            Comparison::Le => "<=",
            Comparison::Gt => ">",
            Comparison::Ge => ">=",
        }
    }

    fn holds(self, actual: f64, expected: f64) -> bool {
        match self {
            Comparison::Eq => actual == expected,
            Comparison::Ne => actual != expected,
            Comparison::Lt => actual < expected,
            Comparison::Le => actual <= expected,
            Comparison::Gt => actual > expected,
            Comparison::Ge => actual >= expected,
        }
    }
}

/// Parses `">= 1"`, `"== 2"`, `"< 5"`, or a bare number (equality).
pub fn parse_comparison(text: &str) -> Result<(Comparison, f64), String> {
    let trimmed = text.trim();
    let ops = [
        (">=", Comparison::Ge),
        ("<=", Comparison::Le),
        ("==", Comparison::Eq),
        ("!=", Comparison::Ne),
        (">", Comparison::Gt),
        ("<", Comparison::Lt),
    ];
    let (comparison, rest) = ops
        .iter()
        .find_map(|(symbol, cmp)| trimmed.strip_prefix(symbol).map(|rest| (*cmp, rest)))
        .unwrap_or((Comparison::Eq, trimmed));
    let number: f64 = rest.trim().parse().map_err(|_| {
        format!("invalid expectation \"{text}\": write a number or a comparison such as \">= 1\", \"<= 3\", \"== 2\", \"!= 0\"")
    })?;
    if !number.is_finite() {
        return Err(format!(
            "invalid expectation \"{text}\": the number must be finite"
        ));
    }
    Ok((comparison, number))
}

/// One assertion: under `policy`, `metric` must compare to `value`.
#[derive(Clone, Debug, PartialEq)]
pub struct Expectation {
    pub policy: Policy,
    pub metric: Metric,
    pub comparison: Comparison,
    pub value: f64,
}

impl Expectation {
    /// A metric that never happened (an empty `first_full_s`) satisfies nothing.
    pub fn holds(&self, actual: &Metrics) -> bool {
        actual
            .get(self.metric)
            .as_f64()
            .is_some_and(|value| self.comparison.holds(value, self.value))
    }
}

impl fmt::Display for Expectation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} {} {}",
            self.policy,
            self.metric.name(),
            self.comparison.symbol(),
            self.value
        )
    }
}

/// The outcome of one expectation, ready to print.
#[derive(Clone, Debug, PartialEq)]
pub struct ExpectationOutcome {
    pub expectation: Expectation,
    pub actual: MetricValue,
    pub held: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_comparisons() {
        assert_eq!(parse_comparison(">= 1"), Ok((Comparison::Ge, 1.0)));
        assert_eq!(parse_comparison("<=3"), Ok((Comparison::Le, 3.0)));
        assert_eq!(parse_comparison("> 0"), Ok((Comparison::Gt, 0.0)));
        assert_eq!(parse_comparison("< 5"), Ok((Comparison::Lt, 5.0)));
        assert_eq!(parse_comparison("== 2"), Ok((Comparison::Eq, 2.0)));
        assert_eq!(parse_comparison("!= 0"), Ok((Comparison::Ne, 0.0)));
        assert_eq!(parse_comparison("7"), Ok((Comparison::Eq, 7.0)));
        assert!(parse_comparison("about 3").is_err());
        assert!(parse_comparison(">= inf").is_err());
    }

    #[test]
    fn never_reached_satisfies_nothing() {
        let metrics = Metrics::default();
        let expectation = Expectation {
            policy: Policy::Naive,
            metric: Metric::FirstFullS,
            comparison: Comparison::Ge,
            value: 0.0,
        };
        assert!(!expectation.holds(&metrics));
        let reached = Metrics {
            first_full: Some(crate::model::time::Millis(2_500)),
            ..Metrics::default()
        };
        assert!(expectation.holds(&reached));
    }
}
