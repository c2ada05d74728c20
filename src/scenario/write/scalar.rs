//! YAML scalars as the scenario writer spells them: strings plain when
//! they are an unambiguous word, durations in their largest exact unit.

use std::collections::BTreeMap;

use crate::model::time::Millis;

/// A string as a YAML scalar: plain when it is an unambiguous word,
/// double-quoted otherwise.
pub fn text(value: &str) -> String {
    let plain = value
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        && !matches!(
            value.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n" | "inf" | "nan"
        );
    if plain {
        value.to_string()
    } else {
        serde_json::to_string(value).expect("a string serializes")
    }
}

/// A duration with the largest unit that divides it exactly.
pub fn duration(value: Millis) -> String {
    let ms = value.0;
    if ms == 0 {
        return "0s".to_string();
    }
    let units = [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1000, "s"),
    ];
    units
        .into_iter()
        .find(|&(size, _)| ms.is_multiple_of(size))
        .map_or_else(
            || format!("{ms}ms"),
            |(size, unit)| format!("{}{unit}", ms / size),
        )
}

pub(super) fn string_map(map: &BTreeMap<String, String>) -> String {
    let pairs: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{}: {}", text(k), text(v)))
        .collect();
    format!("{{{}}}", pairs.join(", "))
}
