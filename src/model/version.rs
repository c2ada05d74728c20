//! Version constraints as Nomad's `version` and `semver` constraint operators
//! check them: versions and constraint lists as hashicorp/go-version parses
//! them (`version`), and as Nomad's helper/constraints/semver does
//! (`semver`: no `~>`, a `-` before any prerelease, no prerelease rule).
//! Parsed once, at load; checking is integer and string comparison only.

use std::cmp::Ordering;

/// A parsed version: numeric segments (padded to three with zeros, as
/// go-version pads them), the prerelease, and how many segments were written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    segments: Vec<i64>,
    written: usize,
    prerelease: String,
}

/// Characters of a prerelease or metadata identifier.
fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'~'
}

/// Length of the dot-separated identifiers at the start of `s`, after a
/// first identifier of `first` characters (zero if `s` starts with none).
fn dotted(s: &[u8], first: usize) -> usize {
    let mut end = first;
    while end < s.len() && ident_char(s[end]) {
        end += 1;
    }
    while end + 1 < s.len() && s[end] == b'.' && ident_char(s[end + 1]) {
        end += 1;
        while end < s.len() && ident_char(s[end]) {
            end += 1;
        }
    }
    end
}

impl Version {
    /// go-version's NewVersion (`loose`: a prerelease may follow the numbers
    /// without a `-`) or NewSemver (it may not). `None` for a malformed one.
    pub fn parse(text: &str, loose: bool) -> Option<Version> {
        let s = text.strip_prefix('v').unwrap_or(text).as_bytes();
        let mut segments = Vec::new();
        let mut at = 0;
        loop {
            let start = at;
            while at < s.len() && s[at].is_ascii_digit() {
                at += 1;
            }
            if at == start {
                return None;
            }
            // go-version parses each segment as an int64.
            segments.push(
                std::str::from_utf8(&s[start..at])
                    .ok()?
                    .parse::<i64>()
                    .ok()?,
            );
            if at + 1 < s.len() && s[at] == b'.' && s[at + 1].is_ascii_digit() {
                at += 1;
            } else {
                break;
            }
        }
        let written = segments.len();
        let rest = &s[at..];
        // The prerelease: `-` then an identifier starting with a digit, or
        // (`-`, optional when loose) one starting with a letter, `-` or `~`.
        let (prerelease, used) = if rest.len() > 1 && rest[0] == b'-' && rest[1].is_ascii_digit() {
            let end = dotted(&rest[1..], 1);
            (&rest[1..1 + end], 1 + end)
        } else {
            let skip = usize::from(rest.first() == Some(&b'-'));
            let starts = |i: usize| {
                rest.get(i)
                    .is_some_and(|&c| c.is_ascii_alphabetic() || c == b'-' || c == b'~')
            };
            if (skip == 1 || loose) && starts(skip) {
                let end = dotted(&rest[skip..], 1);
                (&rest[skip..skip + end], skip + end)
            } else if loose && skip == 1 {
                // `1.0-` or `1.0-.x`: the optional separator backs off and
                // the `-` itself starts the prerelease.
                let end = dotted(rest, 1);
                (&rest[..end], end)
            } else {
                (&rest[..0], 0)
            }
        };
        let rest = &rest[used..];
        let rest = match rest.first() {
            Some(b'+') if rest.get(1).copied().is_some_and(ident_char) => {
                &rest[1 + dotted(&rest[1..], 1)..]
            }
            _ => rest,
        };
        if !rest.is_empty() {
            return None;
        }
        while segments.len() < 3 {
            segments.push(0);
        }
        Some(Version {
            segments,
            written,
            prerelease: String::from_utf8_lossy(prerelease).into_owned(),
        })
    }

    /// go-version's Compare: segments (a shorter list equals a longer one
    /// whose extra segments are zero), then the prerelease (none is newer).
    pub fn compare(&self, other: &Version) -> Ordering {
        if self.segments == other.segments {
            return match (self.prerelease.is_empty(), other.prerelease.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => compare_prereleases(&self.prerelease, &other.prerelease),
            };
        }
        let longest = self.segments.len().max(other.segments.len());
        for i in 0..longest {
            match (self.segments.get(i), other.segments.get(i)) {
                (Some(a), Some(b)) if a != b => return a.cmp(b),
                (Some(_), Some(_)) => {}
                (None, _) => {
                    return if other.segments[i..].iter().all(|&s| s == 0) {
                        Ordering::Equal
                    } else {
                        Ordering::Less
                    };
                }
                (_, None) => {
                    return if self.segments[i..].iter().all(|&s| s == 0) {
                        Ordering::Equal
                    } else {
                        Ordering::Greater
                    };
                }
            }
        }
        Ordering::Equal
    }
}

fn compare_prereleases(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    let left: Vec<&str> = a.split('.').collect();
    let right: Vec<&str> = b.split('.').collect();
    for i in 0..left.len().max(right.len()) {
        let order = compare_part(
            left.get(i).copied().unwrap_or(""),
            right.get(i).copied().unwrap_or(""),
        );
        if order != Ordering::Equal {
            return order;
        }
    }
    Ordering::Equal
}

/// One prerelease identifier against another, as go-version orders them
/// (numbers before words; a missing identifier decided by the other's kind).
fn compare_part(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    let (a_num, b_num) = (a.parse::<i64>().ok(), b.parse::<i64>().ok());
    if a.is_empty() {
        return if b_num.is_some() {
            Ordering::Less
        } else {
            Ordering::Greater
        };
    }
    if b.is_empty() {
        return if a_num.is_some() {
            Ordering::Greater
        } else {
            Ordering::Less
        };
    }
    match (a_num, b_num) {
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) if a > b => Ordering::Greater,
        (Some(x), Some(y)) if x > y => Ordering::Greater,
        _ => Ordering::Less,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Equal,
    NotEqual,
    Greater,
    Less,
    GreaterEqual,
    LessEqual,
    Pessimistic,
}

/// A comma-separated list of constraints, all of which must hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionConstraints {
    checks: Vec<(Op, Version)>,
    /// Nomad's `semver` operator: no prerelease rule.
    semver: bool,
}

/// Go's `\s`.
fn go_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0c')
}

impl VersionConstraints {
    /// go-version's NewConstraint (`semver` false) or Nomad's semver
    /// NewConstraint (true); the error names the malformed part.
    pub fn parse(text: &str, semver: bool) -> Result<VersionConstraints, String> {
        let mut checks = Vec::new();
        for single in text.split(',') {
            let trimmed = single.trim_matches(go_space);
            let operators: &[(&str, Op)] = &[
                ("<=", Op::LessEqual),
                (">=", Op::GreaterEqual),
                ("!=", Op::NotEqual),
                ("~>", Op::Pessimistic),
                ("<", Op::Less),
                (">", Op::Greater),
                ("=", Op::Equal),
            ];
            let (op, rest) = operators
                .iter()
                .filter(|(_, op)| !(semver && *op == Op::Pessimistic))
                .find_map(|(spelling, op)| trimmed.strip_prefix(spelling).map(|rest| (*op, rest)))
                .unwrap_or((Op::Equal, trimmed));
            let version = Version::parse(rest.trim_start_matches(go_space), !semver)
                .ok_or_else(|| format!("malformed constraint: {single}"))?;
            checks.push((op, version));
        }
        Ok(VersionConstraints { checks, semver })
    }

    /// Whether `version` (parsed loosely, as Nomad parses the node's) meets
    /// every constraint.
    pub fn check(&self, version: &Version) -> bool {
        self.checks.iter().all(|(op, c)| {
            let order = version.compare(c);
            let pre = self.semver || prerelease_check(version, c);
            match op {
                Op::Equal => order == Ordering::Equal,
                Op::NotEqual => order != Ordering::Equal,
                Op::Greater => pre && order == Ordering::Greater,
                Op::Less => pre && order == Ordering::Less,
                Op::GreaterEqual => pre && order != Ordering::Less,
                Op::LessEqual => pre && order != Ordering::Greater,
                Op::Pessimistic => pessimistic(version, c),
            }
        })
    }
}

/// go-version: a constraint with a prerelease matches only prereleases of
/// the same segments; one without matches no prerelease.
fn prerelease_check(v: &Version, c: &Version) -> bool {
    match (v.prerelease.is_empty(), c.prerelease.is_empty()) {
        (false, false) => v.segments == c.segments,
        (false, true) => false,
        _ => true,
    }
}

/// `~>`: at least the constraint, and the same in all but its last written
/// segment.
fn pessimistic(v: &Version, c: &Version) -> bool {
    if !prerelease_check(v, c) || (!c.prerelease.is_empty() && v.prerelease.is_empty()) {
        return false;
    }
    if v.compare(c) == Ordering::Less {
        return false;
    }
    let cs = c.segments.len();
    if cs > v.segments.len() {
        return false;
    }
    if (0..c.written.saturating_sub(1)).any(|i| v.segments[i] != c.segments[i]) {
        return false;
    }
    c.segments[cs - 1] <= v.segments[cs - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holds(version: &str, constraint: &str) -> bool {
        let v = Version::parse(version, true).expect("version parses");
        VersionConstraints::parse(constraint, false)
            .expect("constraint parses")
            .check(&v)
    }

    /// Cases from Nomad's TestCheckVersionConstraint and go-version's own
    /// constraint tests.
    #[test]
    fn go_version_constraints() {
        assert!(holds("1.2.3", "~> 1.0"));
        assert!(holds("1.2.3", ">= 1.0, < 1.4"));
        assert!(!holds("2.0.1", "~> 1.0"));
        assert!(!holds("1.4", ">= 1.0, < 1.4"));
        assert!(holds("1", "~> 1.0"));
        assert!(holds("1.4.0-beta1", ">= 1.4.0-alpha"));
        assert!(
            !holds("1.4.0-beta1", ">= 1.0"),
            "a prerelease needs a prerelease constraint"
        );
        assert!(holds("1.2.3", "1.2.3"));
        assert!(holds("1.2", "= 1.2.0"));
        assert!(holds("1.2.3-beta", "!= 1.2.3"));
        assert!(holds("v1.2.3", ">1.2"));
        assert!(!holds("1.2.3", "~> 1.2.4"));
        assert!(holds("1.2.5", "~> 1.2.4"));
        assert!(!holds("1.3.0", "~> 1.2.4"));
    }

    #[test]
    fn malformed_input_is_refused() {
        assert!(VersionConstraints::parse(">= 1.x", false).is_err());
        assert!(VersionConstraints::parse("", false).is_err());
        assert!(VersionConstraints::parse("=> 1.0", false).is_err());
        assert!(
            VersionConstraints::parse("~> 1.0", true).is_err(),
            "semver has no ~>"
        );
        assert!(Version::parse("1.2.", true).is_none());
        assert!(Version::parse("99999999999999999999", true).is_none());
        assert!(Version::parse("1.2.3beta", false).is_none());
        assert!(Version::parse("1.2.3beta", true).is_some());
    }

    #[test]
    fn prereleases_order_like_go_version() {
        let v = |s| Version::parse(s, true).unwrap();
        assert_eq!(v("1.0.0-alpha").compare(&v("1.0.0-beta")), Ordering::Less);
        assert_eq!(v("1.0.0-1").compare(&v("1.0.0-alpha")), Ordering::Less);
        assert_eq!(
            v("1.0.0-alpha.1").compare(&v("1.0.0-alpha")),
            Ordering::Greater
        );
        assert_eq!(v("1.0.0").compare(&v("1.0.0-rc1")), Ordering::Greater);
        assert_eq!(v("1.0").compare(&v("1.0.0.0")), Ordering::Equal);
        assert_eq!(v("1.0.0.1").compare(&v("1.0")), Ordering::Greater);
    }

    #[test]
    fn semver_checks_without_the_prerelease_rule() {
        let c = VersionConstraints::parse(">= 1.0.0", true).unwrap();
        assert!(c.check(&Version::parse("1.3.0-beta1", true).unwrap()));
        assert!(VersionConstraints::parse(">= 1.0.0beta", true).is_err());
    }
}
