//! Loading placement preferences: constraint operators (with their values
//! compiled once: regexps, version constraints, distinct_property counts),
//! `spread` and `affinity` blocks, checked as Nomad's Constraint, Spread and
//! Affinity Validate functions check them.

use serde_saphyr::{Location, Spanned};

use super::limits;
use super::raw::{RawAffinity, RawConstraint, RawSpread};
use crate::model::scenario::{
    Affinity, Constraint, ConstraintOperator, ConstraintTarget, Matcher, Spread, SpreadTarget,
};
use crate::model::version::VersionConstraints;
use crate::scenario::error::Fail;

/// Nomad's default weight of a spread or affinity block.
const DEFAULT_WEIGHT: i64 = 50;

/// The operators Nomad's constraints know, in its spellings.
const OPERATORS: &str = "=, ==, is, !=, not, <, <=, >, >=, is_set, is_not_set, regexp, version, semver, set_contains, set_contains_all, set_contains_any, distinct_hosts, distinct_property";

fn operator(text: &str) -> Option<ConstraintOperator> {
    Some(match text {
        "=" | "==" | "is" => ConstraintOperator::Equal,
        "!=" | "not" => ConstraintOperator::NotEqual,
        "is_set" => ConstraintOperator::IsSet,
        "is_not_set" => ConstraintOperator::IsNotSet,
        "<" => ConstraintOperator::Less,
        "<=" => ConstraintOperator::LessEqual,
        ">" => ConstraintOperator::Greater,
        ">=" => ConstraintOperator::GreaterEqual,
        "regexp" => ConstraintOperator::Regexp,
        "version" => ConstraintOperator::Version,
        "semver" => ConstraintOperator::Semver,
        "set_contains" | "set_contains_all" => ConstraintOperator::SetContainsAll,
        "set_contains_any" => ConstraintOperator::SetContainsAny,
        "distinct_hosts" => ConstraintOperator::DistinctHosts,
        "distinct_property" => ConstraintOperator::DistinctProperty,
        _ => return None,
    })
}

/// A regexp compiled with bounded size, so a hostile pattern cannot make
/// the loader or the scheduler take unbounded memory.
fn compile_regexp(pattern: &str) -> Result<regex::Regex, String> {
    if pattern.len() > limits::MAX_REGEXP_BYTES {
        return Err(format!(
            "is {} bytes, over the limit of {} (MAX_REGEXP_BYTES)",
            pattern.len(),
            limits::MAX_REGEXP_BYTES
        ));
    }
    regex::RegexBuilder::new(pattern)
        .size_limit(limits::MAX_REGEXP_COMPILED_BYTES)
        .dfa_size_limit(limits::MAX_REGEXP_COMPILED_BYTES)
        .nest_limit(limits::YAML_MAX_DEPTH as u32)
        .build()
        .map_err(|e| {
            format!(
                "does not compile ({}); expected a regular expression in Go's RE2 syntax",
                e.to_string()
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        })
}

/// One constraint (`what` is `constraints` or `affinity`, for messages).
pub(super) fn resolve_constraint(
    c: &RawConstraint,
    at: Location,
    path: &str,
) -> Result<Constraint, Fail> {
    resolve(
        &c.attribute,
        c.operator.as_deref(),
        c.value.as_deref(),
        at,
        &format!("{path}.constraints"),
        false,
    )
}

fn resolve(
    attribute: &str,
    operator_text: Option<&str>,
    value: Option<&str>,
    at: Location,
    path: &str,
    affinity: bool,
) -> Result<Constraint, Fail> {
    let fail = |message: String| -> Result<Constraint, Fail> {
        Err((Some(at), format!("{path}: {message}")))
    };
    let operator_text = operator_text.unwrap_or("=");
    let Some(op) = operator(operator_text) else {
        return fail(format!(
            "operator \"{operator_text}\" is not supported (use {OPERATORS})"
        ));
    };
    if affinity
        && matches!(
            op,
            ConstraintOperator::IsSet
                | ConstraintOperator::IsNotSet
                | ConstraintOperator::DistinctHosts
                | ConstraintOperator::DistinctProperty
        )
    {
        return fail(format!(
            "operator \"{operator_text}\" is not an affinity operator (Nomad: \"Unknown affinity operator\"); use =, !=, <, <=, >, >=, regexp, version, semver, set_contains, set_contains_all or set_contains_any"
        ));
    }
    let target = if op == ConstraintOperator::DistinctHosts {
        ConstraintTarget::Unset
    } else {
        parse_constraint_target(attribute)
            .map_err(|message| (Some(at), format!("{path}: {message}")))?
    };
    let needs_value = !matches!(
        op,
        ConstraintOperator::IsSet
            | ConstraintOperator::IsNotSet
            | ConstraintOperator::DistinctHosts
            | ConstraintOperator::DistinctProperty
    );
    if needs_value && value.is_none() {
        return fail(format!(
            "operator \"{operator_text}\" on \"{attribute}\" needs a value"
        ));
    }
    let text_value = value.unwrap_or_default();
    let matcher = match op {
        ConstraintOperator::SetContainsAll | ConstraintOperator::SetContainsAny
            if text_value.is_empty() =>
        {
            return fail(format!(
                "operator \"{operator_text}\" needs a non-empty value: a comma-separated list (Nomad: \"Set contains constraint requires an RTarget\")"
            ));
        }
        ConstraintOperator::Regexp => match compile_regexp(text_value) {
            Ok(re) => Matcher::Regexp(re),
            Err(why) => return fail(format!("regexp {text_value:?} {why}")),
        },
        ConstraintOperator::Version | ConstraintOperator::Semver => {
            let semver = op == ConstraintOperator::Semver;
            match VersionConstraints::parse(text_value, semver) {
                Ok(parsed) => Matcher::Version(parsed),
                Err(why) => {
                    return fail(format!(
                        "{operator_text} constraint {text_value:?} is invalid ({why}); expected comma-separated constraints like \">= 1.2, < 2.0\"{}",
                        if semver {
                            " (semver: no ~>, a prerelease after a -)"
                        } else {
                            ""
                        }
                    ));
                }
            }
        }
        ConstraintOperator::DistinctProperty => match value {
            None | Some("") => Matcher::AllowedCount(1),
            Some(count) => match count.parse::<u64>() {
                Ok(n) if n >= 1 => Matcher::AllowedCount(n),
                _ => {
                    return fail(format!(
                        "distinct_property value {count:?} must be a whole number of allocations, 1 or more (the allowed count)"
                    ));
                }
            },
        },
        _ => Matcher::None,
    };
    let head = if attribute.is_empty() {
        operator_text.to_string()
    } else {
        format!("{attribute} {operator_text}")
    };
    // nomad/structs Constraint.String: "%s %s %s" of LTarget, Operand and
    // RTarget, so a constraint without a value (is_set, is_not_set) ends in
    // a space.
    let text = if attribute.is_empty() {
        head
    } else {
        format!("{head} {text_value}")
    };
    Ok(Constraint {
        target,
        operator: op,
        value: text_value.to_string(),
        text,
        matcher,
        attribute: attribute.to_string(),
        operator_text: operator_text.to_string(),
    })
}

fn weight(
    raw: Option<i64>,
    range: std::ops::RangeInclusive<i64>,
    path: &str,
    at: Location,
    nomad: &str,
) -> Result<i64, Fail> {
    let weight = raw.unwrap_or(DEFAULT_WEIGHT);
    if !range.contains(&weight) || weight == 0 {
        return Err((
            Some(at),
            format!(
                "{path}.weight: {weight} is outside Nomad's range {}..={}{} ({nomad})",
                range.start(),
                range.end(),
                if range.contains(&0) { " and not 0" } else { "" }
            ),
        ));
    }
    Ok(weight)
}

/// `spread` blocks, as Spread.Validate checks them.
pub(super) fn resolve_spreads(
    raw: Option<&[Spanned<RawSpread>]>,
    path: &str,
) -> Result<Vec<Spread>, Fail> {
    let mut spreads = Vec::new();
    for (i, entry) in raw.unwrap_or_default().iter().enumerate() {
        let at = entry.referenced;
        let path = format!("{path}.spread[{i}]");
        let spread = &entry.value;
        let target = parse_constraint_target(&spread.attribute)
            .map_err(|m| (Some(at), format!("{path}.attribute: {m}")))?;
        let weight = weight(
            spread.weight,
            1..=100,
            &path,
            at,
            "Spread block must have a positive weight from 0 to 100",
        )?;
        let mut targets: Vec<SpreadTarget> = Vec::new();
        let mut sum = 0;
        for (j, t) in spread
            .targets
            .as_deref()
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            if !(0..=100).contains(&t.percent) {
                return Err((
                    Some(at),
                    format!(
                        "{path}.targets[{j}].percent: {} must be between 0 and 100",
                        t.percent
                    ),
                ));
            }
            if targets.iter().any(|seen| seen.value == t.value) {
                return Err((
                    Some(at),
                    format!(
                        "{path}.targets[{j}]: target value {:?} already defined",
                        t.value
                    ),
                ));
            }
            sum += t.percent;
            targets.push(SpreadTarget {
                value: t.value.clone(),
                percent: t.percent as u8,
            });
        }
        if sum > 100 {
            return Err((
                Some(at),
                format!(
                    "{path}.targets: the percents sum to {sum}; expected at most 100 (the rest goes to values not listed)"
                ),
            ));
        }
        spreads.push(Spread {
            target,
            attribute: spread.attribute.clone(),
            weight: weight as u8,
            targets,
        });
    }
    Ok(spreads)
}

/// `affinity` blocks, as Affinity.Validate checks them.
pub(super) fn resolve_affinities(
    raw: Option<&[Spanned<RawAffinity>]>,
    path: &str,
) -> Result<Vec<Affinity>, Fail> {
    let mut affinities = Vec::new();
    for (i, entry) in raw.unwrap_or_default().iter().enumerate() {
        let at = entry.referenced;
        let path = format!("{path}.affinity[{i}]");
        let a: &RawAffinity = &entry.value;
        let constraint = resolve(
            &a.attribute,
            a.operator.as_deref(),
            a.value.as_deref(),
            at,
            &path,
            true,
        )?;
        let weight = weight(
            a.weight,
            -100..=100,
            &path,
            at,
            "Affinity weight must be within the range [-100,100] and cannot be zero",
        )?;
        affinities.push(Affinity {
            constraint,
            weight: weight as i8,
        });
    }
    Ok(affinities)
}

pub fn resolve_constraints(
    raw: &[RawConstraint],
    at: Location,
    path: &str,
) -> Result<Vec<Constraint>, Fail> {
    raw.iter()
        .map(|c| resolve_constraint(c, at, path))
        .collect()
}

/// `rack` and Nomad's `${attr.rack}` both name an attribute; `${node.*}`
/// names the node's own fields.
fn parse_constraint_target(attribute: &str) -> Result<ConstraintTarget, String> {
    let trimmed = attribute.trim();
    let Some(inner) = trimmed.strip_prefix("${").and_then(|s| s.strip_suffix('}')) else {
        if trimmed.is_empty() {
            return Err("attribute must not be empty".to_string());
        }
        return Ok(ConstraintTarget::Attribute(trimmed.to_string()));
    };
    match inner {
        "node.datacenter" => Ok(ConstraintTarget::Datacenter),
        "node.class" => Ok(ConstraintTarget::NodeClass),
        "node.unique.name" | "node.unique.id" => Ok(ConstraintTarget::NodeName),
        other => match other
            .strip_prefix("attr.")
            .or_else(|| other.strip_prefix("meta."))
        {
            Some(key) if !key.is_empty() => Ok(ConstraintTarget::Attribute(key.to_string())),
            _ => Err(format!(
                "attribute \"{attribute}\" is not supported (use a plain name, ${{attr.NAME}}, ${{meta.NAME}}, ${{node.datacenter}}, ${{node.class}} or ${{node.unique.name}})"
            )),
        },
    }
}
