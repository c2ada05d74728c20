//! Simulated time: integer milliseconds. No wall clock ever enters the model.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point on the simulated timeline, or a span of simulated time, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Millis(pub u64);

impl Millis {
    pub const ZERO: Millis = Millis(0);

    pub const fn from_secs(secs: u64) -> Self {
        Millis(secs * 1000)
    }

    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    pub fn saturating_mul(self, factor: u64) -> Self {
        Millis(self.0.saturating_mul(factor))
    }

    pub fn min(self, other: Millis) -> Millis {
        Millis(self.0.min(other.0))
    }
}

impl Add for Millis {
    type Output = Millis;
    fn add(self, rhs: Millis) -> Millis {
        Millis(self.0.saturating_add(rhs.0))
    }
}

impl AddAssign for Millis {
    fn add_assign(&mut self, rhs: Millis) {
        *self = *self + rhs;
    }
}

impl Sub for Millis {
    type Output = Millis;
    fn sub(self, rhs: Millis) -> Millis {
        Millis(self.0.saturating_sub(rhs.0))
    }
}

/// Seconds with exactly three decimals, as every output of plansim prints time.
/// Integer arithmetic only, so the text never depends on float formatting.
impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}

/// Parses a duration written with units (`250ms`, `30s`, `5m`, `2h`, `1d`,
/// `1h30m`). A bare number is refused with a hint to add a unit.
pub fn parse_duration(text: &str) -> Result<Millis, String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err("empty duration: write it with a unit, e.g. 30s".to_string());
    }
    if trimmed.starts_with('-') {
        return Err(format!("duration \"{trimmed}\" is negative"));
    }
    if trimmed.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "duration \"{trimmed}\" has no unit: add a unit, e.g. {trimmed}s or {trimmed}ms"
        ));
    }
    let mut total: u64 = 0;
    let mut rest = trimmed;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(format!(
                "invalid duration \"{trimmed}\": expected a number before \"{rest}\" (units: ms, s, m, h, d)"
            ));
        }
        let number: u64 = rest[..digits]
            .parse()
            .map_err(|_| format!("invalid duration \"{trimmed}\": number too large"))?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let scale: u64 = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "" => {
                return Err(format!(
                    "duration \"{trimmed}\" has a number without a unit: add a unit (ms, s, m, h, d)"
                ));
            }
            other => {
                return Err(format!(
                    "invalid duration \"{trimmed}\": unknown unit \"{other}\" (units: ms, s, m, h, d)"
                ));
            }
        };
        let part = number
            .checked_mul(scale)
            .ok_or_else(|| format!("invalid duration \"{trimmed}\": too large"))?;
        total = total
            .checked_add(part)
            .ok_or_else(|| format!("invalid duration \"{trimmed}\": too large"))?;
    }
    Ok(Millis(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_and_combinations() {
        assert_eq!(parse_duration("250ms"), Ok(Millis(250)));
        assert_eq!(parse_duration("30s"), Ok(Millis(30_000)));
        assert_eq!(parse_duration("5m"), Ok(Millis(300_000)));
        assert_eq!(parse_duration("2h"), Ok(Millis(7_200_000)));
        assert_eq!(parse_duration("1d"), Ok(Millis(86_400_000)));
        assert_eq!(parse_duration("1h30m"), Ok(Millis(5_400_000)));
        assert_eq!(parse_duration("1m500ms"), Ok(Millis(60_500)));
    }

    #[test]
    fn refuses_bare_numbers_and_unknown_units() {
        assert!(parse_duration("30").unwrap_err().contains("add a unit"));
        assert!(parse_duration("5x").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("99999999999999999999s").is_err());
    }

    #[test]
    fn displays_three_decimals() {
        assert_eq!(Millis(0).to_string(), "0.000");
        assert_eq!(Millis(1_234).to_string(), "1.234");
        assert_eq!(Millis(60_005).to_string(), "60.005");
    }
}
