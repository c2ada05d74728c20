//! Periodic and parameterized jobs (Nomad's `periodic` and `parameterized`
//! blocks) and the child jobs they launch. A parent is registered but never
//! evaluated (job_endpoint.go Register creates no evaluation for
//! `IsPeriodic() || IsParameterized()`); its children are ordinary jobs
//! named as Nomad names them (`<parent>/periodic-<unix>`,
//! `<parent>/dispatch-<unix>-<8 hex>`). The loader stamps every child out
//! in advance, since the model's job table is fixed for a run: a periodic
//! child for each cron launch within the horizon, a dispatched child for
//! each `dispatch` event; the simulation decides at each periodic launch
//! whether the dispatcher would skip it (`prohibit_overlap`, a stopped
//! parent).

use std::collections::BTreeMap;

use super::cron::CronExpr;
use super::ids::JobId;

/// How a job comes to be registered.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum JobLaunch {
    /// Registered at `submit_at` and evaluated: every ordinary job.
    #[default]
    Plain,
    /// A periodic parent: registered, tracked by the leader's periodic
    /// dispatcher (nomad/periodic.go PeriodicDispatch.Add).
    Periodic(Box<PeriodicConfig>),
    /// A parameterized parent: registered, placed only through dispatches.
    Parameterized(Box<ParameterizedConfig>),
    /// A periodic launch of `parent` (periodic.go deriveJob), at its
    /// `submit_at`; the wall-clock launch second is in its name.
    PeriodicChild { parent: JobId },
    /// The child a `dispatch` event made of `parent` (job_endpoint.go
    /// Dispatch).
    Dispatched { parent: JobId },
}

impl JobLaunch {
    /// Whether the job is a parent, never evaluated itself.
    pub fn is_parent(&self) -> bool {
        matches!(self, JobLaunch::Periodic(_) | JobLaunch::Parameterized(_))
    }

    /// The parent of a child job.
    pub fn parent(&self) -> Option<JobId> {
        match self {
            JobLaunch::PeriodicChild { parent } | JobLaunch::Dispatched { parent } => Some(*parent),
            _ => None,
        }
    }
}

/// Nomad's `periodic` block (structs.PeriodicConfig), canonicalized.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeriodicConfig {
    /// `enabled` (default true): a disabled parent is registered and never
    /// launches (IsPeriodicActive), and its specs are not validated.
    pub enabled: bool,
    /// The specs as written: `cron` (one) or `crons` (several, Nomad
    /// 1.6.2+, #17858); the launch is the soonest of them (Next).
    pub specs: CronSpecs,
    pub prohibit_overlap: bool,
    pub time_zone: TimeZone,
}

/// `cron = "..."` or `crons = [...]`: kept apart, because a release
/// without `crons` (before 1.6.2) registers a job that has only `crons`
/// with no spec at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CronSpecs {
    Cron(CronSpec),
    Crons(Vec<CronSpec>),
}

impl CronSpecs {
    pub fn all(&self) -> &[CronSpec] {
        match self {
            CronSpecs::Cron(one) => std::slice::from_ref(one),
            CronSpecs::Crons(many) => many,
        }
    }
}

/// One spec: the text as written and its parsed form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CronSpec {
    pub text: String,
    pub expr: CronExpr,
}

impl PeriodicConfig {
    /// PeriodicConfig.Next: the soonest launch of any spec strictly after
    /// the wall-clock second `after` (Unix seconds), read in the job's
    /// time zone.
    pub fn next_launch(&self, after: i64) -> Option<i64> {
        self.specs
            .all()
            .iter()
            .filter_map(|spec| self.time_zone.next_after(&spec.expr, after))
            .min()
    }
}

/// A periodic job's `time_zone`: UTC and the fixed-offset IANA zones
/// `Etc/GMT+N` / `Etc/GMT-N` (whose sign is POSIX's: `Etc/GMT+5` is five
/// hours *behind* UTC) as offsets; any other IANA name (`Europe/Dublin`,
/// `America/New_York`) by the time zone database built into plansim
/// (`jiff`'s bundled copy, the same on every machine, never the host's),
/// daylight saving included, as Nomad reads it with Go's `LoadLocation`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimeZone {
    /// As written (`UTC`, `Etc/GMT-2`, `Europe/Dublin`).
    pub name: String,
    /// Hours east of UTC (a fixed-offset zone; 0 for a named one).
    pub east_hours: i8,
    /// A zone of the database, whose offset changes.
    pub named: bool,
}

impl Default for TimeZone {
    fn default() -> Self {
        TimeZone {
            name: "UTC".to_string(),
            east_hours: 0,
            named: false,
        }
    }
}

impl TimeZone {
    /// Reads a zone name; `None` for one plansim cannot model.
    pub fn parse(name: &str) -> Option<TimeZone> {
        let east_hours = match name {
            "UTC" | "Etc/UTC" | "Etc/GMT" | "GMT" | "Etc/Universal" | "Etc/Zulu" => 0,
            _ if !name.starts_with("Etc/GMT") => {
                // Go's LoadLocation refuses "Local" as a job's zone would
                // mean the server's: a name of the database, or nothing.
                let known = name != "Local" && jiff::tz::db().get(name).is_ok();
                return known.then(|| TimeZone {
                    name: name.to_string(),
                    east_hours: 0,
                    named: true,
                });
            }
            _ => {
                let rest = name.strip_prefix("Etc/GMT")?;
                let (sign, digits) = rest.split_at_checked(1)?;
                let hours: i8 = (!digits.is_empty()
                    && digits.len() <= 2
                    && !digits.starts_with('0')
                    && digits.bytes().all(|b| b.is_ascii_digit()))
                .then(|| digits.parse().ok())
                .flatten()?;
                match sign {
                    "+" if hours <= 12 => -hours,
                    "-" if hours <= 14 => hours,
                    _ => return None,
                }
            }
        };
        Some(TimeZone {
            name: name.to_string(),
            east_hours,
            named: false,
        })
    }

    /// The first second strictly after `after` (Unix seconds) whose wall
    /// clock in this zone `expr` matches. A named zone's wall clock skips
    /// an hour in spring (a time in the gap is taken an hour later, as Go's
    /// `time.Date` normalises it) and repeats one in autumn (a time there
    /// launches once, at its first occurrence).
    pub fn next_after(&self, expr: &super::cron::CronExpr, after: i64) -> Option<i64> {
        if !self.named {
            let offset = i64::from(self.east_hours) * 3600;
            return expr.next_after(after + offset).map(|local| local - offset);
        }
        let zone = jiff::tz::db().get(&self.name).ok()?;
        let offset = |t: i64| {
            jiff::Timestamp::from_second(t)
                .ok()
                .map(|t| i64::from(zone.to_offset(t).seconds()))
        };
        let mut local = after + offset(after)?;
        // A wall-clock match that falls before `after` (the repeated hour)
        // is passed over; a bounded number of times, then no launch.
        for _ in 0..MAX_WALL_CLOCK_RETRIES {
            let next = expr.next_after(local)?;
            let civil = jiff::tz::Offset::UTC.to_datetime(jiff::Timestamp::from_second(next).ok()?);
            let instant = zone
                .to_ambiguous_timestamp(civil)
                .compatible()
                .ok()?
                .as_second();
            if instant > after {
                return Some(instant);
            }
            local = next;
        }
        None
    }
}

/// How many wall-clock matches before `after` a named zone's repeated hour
/// may pass over (an hour holds at most 3,600 matching seconds).
const MAX_WALL_CLOCK_RETRIES: usize = 3_601;

/// Nomad's `parameterized` block (structs.ParameterizedJobConfig).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParameterizedConfig {
    pub payload: PayloadRule,
    pub meta_required: Vec<String>,
    pub meta_optional: Vec<String>,
}

/// `payload` (default optional, ParameterizedJobConfig.Canonicalize).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PayloadRule {
    Optional,
    Required,
    Forbidden,
}

impl PayloadRule {
    pub fn name(self) -> &'static str {
        match self {
            PayloadRule::Optional => "optional",
            PayloadRule::Required => "required",
            PayloadRule::Forbidden => "forbidden",
        }
    }

    pub fn from_name(name: &str) -> Option<PayloadRule> {
        [
            PayloadRule::Optional,
            PayloadRule::Required,
            PayloadRule::Forbidden,
        ]
        .into_iter()
        .find(|rule| rule.name() == name)
    }
}

/// What a `dispatch` event passes (`nomad job dispatch -meta k=v [input]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatchRequest {
    pub meta: BTreeMap<String, String>,
    /// Only its presence is modelled (validateDispatchRequest checks
    /// `len(req.Payload) != 0`).
    pub payload: Option<String>,
}

/// The wall-clock time of simulated 0s (`start_time`), in Unix seconds:
/// what cron specs are read against and child names carry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct WallClock(pub i64);

impl WallClock {
    /// RFC 3339 (`2026-01-05T00:00:00Z`, `2026-01-05T09:00:00+02:00`,
    /// fractions of a second refused: launches are whole seconds).
    pub fn parse(text: &str) -> Option<WallClock> {
        let b = text.as_bytes();
        let num = |range: std::ops::Range<usize>| -> Option<i64> {
            let part = text.get(range)?;
            part.bytes()
                .all(|c| c.is_ascii_digit())
                .then(|| part.parse().ok())
                .flatten()
        };
        if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') {
            return None;
        }
        if b[13] != b':' || b[16] != b':' {
            return None;
        }
        let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
        let offset = match &text[19..] {
            "Z" | "z" => 0,
            zone if zone.len() == 6 && zone.as_bytes()[3] == b':' => {
                let sign = match zone.as_bytes()[0] {
                    b'+' => 1,
                    b'-' => -1,
                    _ => return None,
                };
                let (h, m) = (num(20..22)?, num(23..25)?);
                if h > 23 || m > 59 {
                    return None;
                }
                sign * (h * 3600 + m * 60)
            }
            _ => return None,
        };
        let valid = (1..=12).contains(&month)
            && (1..=super::cron::days_in_month(year, month)).contains(&day)
            && hour <= 23
            && minute <= 59
            && second <= 59;
        valid.then(|| {
            let days = super::cron::days_from_civil(year, month, day);
            WallClock(days * 86_400 + hour * 3600 + minute * 60 + second - offset)
        })
    }

    /// RFC 3339 in UTC (`2026-01-05T00:00:00Z`), as the writer writes it.
    pub fn to_rfc3339(self) -> String {
        let (days, secs) = (self.0.div_euclid(86_400), self.0.rem_euclid(86_400));
        let (y, m, d) = super::cron::civil_from_days(days);
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
            secs / 3600,
            secs / 60 % 60,
            secs % 60
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_clock_reads_rfc3339() {
        let utc = WallClock::parse("2026-01-05T00:00:00Z").unwrap();
        assert_eq!(utc.0, 1_767_571_200);
        assert_eq!(
            WallClock::parse("2026-01-05T02:00:00+02:00"),
            Some(utc),
            "an offset is subtracted"
        );
        assert_eq!(utc.to_rfc3339(), "2026-01-05T00:00:00Z");
        for bad in [
            "2026-01-05",
            "2026-02-30T00:00:00Z",
            "2026-01-05T24:00:00Z",
            "2026-01-05T00:00:00.5Z",
            "2026-01-05T00:00:00",
        ] {
            assert_eq!(WallClock::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn fixed_offset_zones() {
        assert_eq!(TimeZone::parse("UTC").unwrap().east_hours, 0);
        assert_eq!(TimeZone::parse("Etc/GMT+5").unwrap().east_hours, -5);
        assert_eq!(TimeZone::parse("Etc/GMT-14").unwrap().east_hours, 14);
        for bad in ["Europe/Pariss", "Etc/GMT+13", "Etc/GMT+05", "Local", ""] {
            assert_eq!(TimeZone::parse(bad), None, "{bad}");
        }
        let named = TimeZone::parse("Europe/Paris").unwrap();
        assert!(named.named);
    }

    /// America/New_York springs forward on 2026-03-08 (02:00 EST is 03:00
    /// EDT) and falls back on 2026-11-01 (01:00-02:00 twice).
    #[test]
    fn a_named_zone_follows_daylight_saving() {
        let spec = |text: &str| CronSpec {
            text: text.to_string(),
            expr: CronExpr::parse(text).unwrap(),
        };
        let daily = |text: &str| PeriodicConfig {
            enabled: true,
            specs: CronSpecs::Cron(spec(text)),
            prohibit_overlap: false,
            time_zone: TimeZone::parse("America/New_York").unwrap(),
        };
        let at = |text: &str| WallClock::parse(text).unwrap().0;
        let two = daily("0 2 * * *");
        // 02:00 EST is 07:00 UTC; on the 8th 02:00 does not exist and is
        // taken an hour later (03:00 EDT, 07:00 UTC); then 02:00 EDT.
        let first = two.next_launch(at("2026-03-07T00:00:00Z")).unwrap();
        assert_eq!(first, at("2026-03-07T07:00:00Z"));
        let second = two.next_launch(first).unwrap();
        assert_eq!(second, at("2026-03-08T07:00:00Z"));
        assert_eq!(two.next_launch(second), Some(at("2026-03-09T06:00:00Z")));
        // 01:30 happens twice on 2026-11-01: one launch, at the first (EDT).
        let half_past_one = daily("30 1 * * *");
        let fall = half_past_one
            .next_launch(at("2026-11-01T00:00:00Z"))
            .unwrap();
        assert_eq!(fall, at("2026-11-01T05:30:00Z"));
        assert_eq!(
            half_past_one.next_launch(fall),
            Some(at("2026-11-02T06:30:00Z"))
        );
    }

    #[test]
    fn crons_launch_at_the_soonest_spec_in_the_zone() {
        let spec = |text: &str| CronSpec {
            text: text.to_string(),
            expr: CronExpr::parse(text).unwrap(),
        };
        let config = PeriodicConfig {
            enabled: true,
            specs: CronSpecs::Crons(vec![spec("0 9 * * *"), spec("30 3 * * *")]),
            prohibit_overlap: false,
            time_zone: TimeZone::parse("Etc/GMT-2").unwrap(),
        };
        let midnight = 1_767_571_200;
        // 03:30 at UTC+2 is 01:30 UTC.
        assert_eq!(config.next_launch(midnight), Some(midnight + 5400));
        assert_eq!(
            config.next_launch(midnight + 5400),
            Some(midnight + 7 * 3600)
        );
    }
}
