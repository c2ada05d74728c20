//! `--event "AT KIND ARGS"`: a what-if event on the command line, in the
//! scenario's own event names, read as the `events:` entry it stands for.
//!
//! - `5m node_down client-3` is `{at: 5m, node_down: client-3}`;
//! - `0s drain client-2 deadline=1h` (or `node_drain`) is
//!   `{at: 0s, node_drain: {node: client-2, deadline: 1h}}`;
//! - `10m scale web=5` or `10m scale web.cache=5` is
//!   `{at: 10m, scale: {job: web, group: cache, count: 5}}` (a job's only
//!   group when none is named);
//! - any other kind with `key=value` pairs is the map of them.

use crate::scenario::raw::{RawEvent, RawScenario};

/// Longest `--event` text read.
const MAX_EVENT_SPEC_BYTES: usize = 1024;

pub(super) fn parse(spec: &str, raw: &RawScenario) -> Result<RawEvent, String> {
    let shown = || crate::names::one_line(spec).into_owned();
    if spec.len() > MAX_EVENT_SPEC_BYTES {
        return Err(format!(
            "--event: longer than {MAX_EVENT_SPEC_BYTES} bytes (MAX_EVENT_SPEC_BYTES)"
        ));
    }
    let mut words = spec.split_whitespace();
    let (Some(at), Some(kind)) = (words.next(), words.next()) else {
        return Err(format!(
            "--event {:?}: expected \"AT KIND ARGS\", e.g. \"5m node_down client-3\"",
            shown()
        ));
    };
    let kind = if kind == "drain" { "node_drain" } else { kind };
    let (pairs, bare): (Vec<&str>, Vec<&str>) = words.partition(|w| w.contains('='));
    let value = if kind == "scale" {
        scale(&pairs, &bare, raw).map_err(|m| format!("--event {:?}: {m}", shown()))?
    } else {
        match (bare.as_slice(), pairs.is_empty()) {
            ([one], true) => quote(one),
            (bare, _) if bare.len() <= 1 => {
                let mut fields: Vec<String> = bare
                    .iter()
                    .map(|b| format!("{}: {}", primary(kind), quote(b)))
                    .collect();
                for pair in &pairs {
                    let (k, v) = pair.split_once('=').expect("partitioned on '='");
                    fields.push(format!("{}: {}", quote(k), scalar(v)));
                }
                format!("{{{}}}", fields.join(", "))
            }
            _ => {
                return Err(format!(
                    "--event {:?}: one value, then key=value pairs, after the kind",
                    shown()
                ));
            }
        }
    };
    let text = format!("{{at: {}, {}: {value}}}", quote(at), quote(kind));
    serde_saphyr::from_str(&text).map_err(|err| {
        format!(
            "--event {:?}: {} (the events: entry {})",
            shown(),
            crate::names::one_line(&err.to_string()),
            crate::names::one_line(&text)
        )
    })
}

/// The field a kind's one bare value fills when key=value pairs follow.
fn primary(kind: &str) -> &'static str {
    match kind {
        "node_drain" => "node",
        "node_down" => "node_of",
        _ => "job",
    }
}

/// `scale JOB[.GROUP]=COUNT`, or `scale job=J group=G count=N`.
fn scale(pairs: &[&str], bare: &[&str], raw: &RawScenario) -> Result<String, String> {
    let (job, group, count) = match (pairs, bare) {
        ([one], []) if !one.starts_with("job=") && !one.starts_with("count=") => {
            let (target, count) = one.split_once('=').expect("a pair");
            match target.split_once('.') {
                Some((job, group)) => (job.to_string(), Some(group.to_string()), count),
                None => (target.to_string(), None, count),
            }
        }
        _ => {
            let field = |name: &str| {
                pairs
                    .iter()
                    .find_map(|p| p.strip_prefix(name)?.strip_prefix('='))
            };
            let job = field("job").ok_or("scale needs JOB=COUNT or job=J count=N")?;
            let count = field("count").ok_or("scale needs a count")?;
            (job.to_string(), field("group").map(str::to_string), count)
        }
    };
    let group = match group {
        Some(group) => group,
        None => {
            let entry = raw
                .jobs
                .iter()
                .find(|j| j.value.id == job)
                .ok_or_else(|| format!("no job {job:?}"))?;
            match entry.value.groups.as_slice() {
                [only] => only.value.name.clone(),
                _ => {
                    return Err(format!(
                        "job {job:?} has several groups: write {job}.GROUP=COUNT"
                    ));
                }
            }
        }
    };
    Ok(format!(
        "{{job: {}, group: {}, count: {}}}",
        quote(&job),
        quote(&group),
        scalar(count)
    ))
}

/// A YAML double-quoted string.
fn quote(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

/// A number or boolean as itself, anything else quoted.
fn scalar(text: &str) -> String {
    if text.parse::<i64>().is_ok() || text == "true" || text == "false" {
        text.to_string()
    } else {
        quote(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw() -> RawScenario {
        super::super::scenario::parse_raw(
            "nodes: [{id: c1}]\njobs:\n  - id: web\n    groups:\n      - name: cache\n        tasks: [{name: t}]\n",
            "t.yaml",
        )
        .unwrap()
    }

    #[test]
    fn the_spellings_read_as_their_events() {
        let raw = raw();
        let down = parse("5m node_down client-3", &raw).unwrap();
        assert_eq!(down.at.0.0, 300_000);
        assert!(down.node_down.is_some());
        assert!(
            parse("0s drain c1 deadline=1h", &raw)
                .unwrap()
                .node_drain
                .is_some()
        );
        let scale = parse("10m scale web=5", &raw).unwrap().scale.unwrap();
        assert_eq!(
            (scale.job.as_str(), scale.group.as_str(), scale.count.0),
            ("web", "cache", 5)
        );
        let named = parse("10m scale web.cache=2", &raw).unwrap().scale.unwrap();
        assert_eq!(named.count.0, 2);
    }

    #[test]
    fn a_bad_spelling_says_what_was_expected() {
        let raw = raw();
        for (spec, expected) in [
            ("5m", "expected \"AT KIND ARGS\""),
            ("5m node_up a b", "one value, then key=value pairs"),
            ("1m scale nope=3", "no job \"nope\""),
            ("1m explode c1", "the events: entry"),
        ] {
            let err = parse(spec, &raw).unwrap_err();
            assert!(err.contains(expected), "{spec}: {err}");
        }
    }
}
