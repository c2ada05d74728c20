//! Argument values several commands parse: a policy name (`--scheduler`,
//! `--baseline`, `--candidate`) and a list of seeds (`--seeds`).

use crate::model::policy::Policy;

/// Parses a policy name for `--scheduler`.
pub(super) fn parse_policy(name: &str) -> Result<Policy, String> {
    Policy::from_name(name).ok_or_else(|| {
        format!(
            "unknown scheduler \"{}\" (expected one of: naive, validate, plan-aware)",
            crate::names::one_line(name)
        )
    })
}

/// Most seeds one `--seeds` may ask for.
const MAX_SEEDS: u64 = 100_000;

/// A list of seeds from `--seeds` (a newtype: clap treats a bare `Vec` as
/// "the flag may repeat").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seeds(pub Vec<u64>);

/// Parses `--seeds`: a count `N` (seeds 0..N-1), a list `1,5,9`, a
/// half-open range `A..B` (B excluded, as in Rust) or `A..=B` (B included).
pub(super) fn parse_seeds(text: &str) -> Result<Seeds, String> {
    let number = |s: &str| {
        s.trim().parse::<u64>().map_err(|_| {
            format!(
                "\"{}\" is not a seed (a whole number of at least 0)",
                crate::names::one_line(s)
            )
        })
    };
    let seeds: Vec<u64> = if let Some((from, to)) = text.split_once("..") {
        let (from, to) = match to.strip_prefix('=') {
            // A..=B is A..B+1; B = u64::MAX has no successor, so it is refused.
            Some(last) => (
                number(from)?,
                number(last)?
                    .checked_add(1)
                    .ok_or_else(|| format!("seed range {text} ends past the largest seed"))?,
            ),
            None => (number(from)?, number(to)?),
        };
        if from >= to {
            return Err(format!(
                "empty seed range {text}: write A..B (B excluded) with A < B, or A..=B (B included) with A <= B"
            ));
        }
        if to - from > MAX_SEEDS {
            return Err(format!("seed range {text} is longer than {MAX_SEEDS}"));
        }
        (from..to).collect()
    } else if text.contains(',') {
        let seeds = text
            .split(',')
            .filter(|s| !s.trim().is_empty())
            .map(number)
            .collect::<Result<Vec<u64>, String>>()?;
        let mut unique = seeds.clone();
        unique.sort_unstable();
        unique.dedup();
        if unique.len() != seeds.len() {
            return Err(format!("seed list {text} repeats a seed"));
        }
        seeds
    } else {
        let count = number(text)?;
        if count == 0 || count > MAX_SEEDS {
            return Err(format!(
                "seed count {count} must be between 1 and {MAX_SEEDS}"
            ));
        }
        (0..count).collect()
    };
    if seeds.is_empty() {
        return Err("no seeds given".to_string());
    }
    Ok(Seeds(seeds))
}

#[cfg(test)]
mod tests {
    use super::{Seeds, parse_seeds};

    #[test]
    fn seeds_as_count_list_or_range() {
        assert_eq!(parse_seeds("3"), Ok(Seeds(vec![0, 1, 2])));
        assert_eq!(parse_seeds("1,5,9"), Ok(Seeds(vec![1, 5, 9])));
        assert_eq!(parse_seeds("7,"), Ok(Seeds(vec![7])));
        assert_eq!(parse_seeds("10..13"), Ok(Seeds(vec![10, 11, 12])));
        assert_eq!(parse_seeds("10..=13"), Ok(Seeds(vec![10, 11, 12, 13])));
        assert_eq!(parse_seeds("5..=5"), Ok(Seeds(vec![5])));
        assert!(parse_seeds("6..=5").is_err());
        assert!(parse_seeds("0..=18446744073709551615").is_err());
        assert!(parse_seeds("0").is_err());
        assert!(parse_seeds("5..5").is_err());
        assert!(parse_seeds("1,1").is_err());
        assert!(parse_seeds("-1").is_err());
        assert!(parse_seeds("a,b").is_err());
        assert!(parse_seeds("99999999").is_err());
    }
}
