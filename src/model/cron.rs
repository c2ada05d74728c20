//! Cron expressions as Nomad reads them: the `hashicorp/cronexpr` library
//! (a fork of gorhill/cronexpr) that `structs.PeriodicConfig.Next` calls.
//! Its grammar, its quirks and its refusals are reproduced here, so a spec
//! Nomad accepts launches at the same instants and a spec Nomad refuses is
//! refused with the library's own message:
//!
//! - 5 fields `minute hour day-of-month month day-of-week`; 6 fields add a
//!   trailing `year` (not a leading second); 7 fields are `second minute
//!   hour day-of-month month day-of-week year`; fields past the 7th are
//!   ignored; fewer than 5 are "missing field(s)".
//! - `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@hourly`
//!   (replaced wherever they occur, case-sensitively, before parsing).
//! - per entry (comma-separated): `*` or `?`, `v`, `a-b`, `*/n`, `v/n`
//!   (`v` to the field's maximum), `a-b/n`; month and day-of-week names
//!   (`jan`, `january`, `mon`, `monday`, any case); `7` is Sunday;
//!   day-of-month `L`, `LW`, `15W`; day-of-week `5L`, `1#3`.
//! - a step must be 1..=the field's maximum (`invalid interval`).
//! - a day matches when its day-of-month or its day-of-week matches if both
//!   fields are restricted (not `*`), as crontab(5) says.
//!
//! All arithmetic is on whole seconds of a wall clock at a fixed UTC offset
//! (see `periodic::TimeZone`); there is no daylight saving to model.

use std::fmt;

/// A parsed cron expression (cronexpr.Expression).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CronExpr {
    seconds: u64,
    minutes: u64,
    hours: u32,
    months: u16,
    /// Years 1970..=2099, bit `year - 1970` (two words: 130 years).
    years: [u128; 2],
    days: DaySpec,
}

/// The day-of-month and day-of-week fields together.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct DaySpec {
    dom_restricted: bool,
    dom: u32,
    last_dom: bool,
    last_workdom: bool,
    workdoms: u32,
    dow_restricted: bool,
    dow: u8,
    /// `5L`: the last such weekday of the month.
    last_week_dows: u8,
    /// `d#k`: bit `(k - 1) * 7 + d`.
    specific_week_dows: u64,
}

/// Why a spec is refused, in cronexpr's words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CronError(pub String);

impl fmt::Display for CronError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

const FIRST_YEAR: i64 = 1970;
const LAST_YEAR: i64 = 2099;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Second,
    Minute,
    Hour,
    Dom,
    Month,
    Dow,
    Year,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::Second => "second",
            Field::Minute => "minute",
            Field::Hour => "hour",
            Field::Dom => "day-of-month",
            Field::Month => "month",
            Field::Dow => "day-of-week",
            Field::Year => "year",
        }
    }

    fn range(self) -> (i64, i64) {
        match self {
            Field::Second | Field::Minute => (0, 59),
            Field::Hour => (0, 23),
            Field::Dom => (1, 31),
            Field::Month => (1, 12),
            Field::Dow => (0, 6),
            Field::Year => (FIRST_YEAR, LAST_YEAR),
        }
    }

    /// A single value as the field's value pattern accepts it (lowercased
    /// text), mapped as cronexpr's token tables map it.
    fn value(self, text: &str) -> Option<i64> {
        const MONTHS: [&str; 12] = [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ];
        const DAYS: [&str; 7] = [
            "sunday",
            "monday",
            "tuesday",
            "wednesday",
            "thursday",
            "friday",
            "saturday",
        ];
        let named = |names: &[&str], base: i64| {
            names
                .iter()
                .position(|full| text == *full || text == &full[..3])
                .map(|i| i as i64 + base)
        };
        let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
        match self {
            Field::Month => {
                if let Some(month) = named(&MONTHS, 1) {
                    return Some(month);
                }
            }
            Field::Dow => {
                if let Some(day) = named(&DAYS, 0) {
                    return Some(day);
                }
                // `0?[0-7]`: the token table knows "0".."7" only, so a
                // two-digit "01".."07" matches the pattern and maps to 0
                // (Sunday), as in Nomad.
                return match (digits, text.len()) {
                    (true, 1) => text.parse::<i64>().ok().filter(|d| *d <= 7).map(|d| d % 7),
                    (true, 2) if text.starts_with('0') && text.as_bytes()[1] <= b'7' => Some(0),
                    _ => None,
                };
            }
            Field::Year => {
                return (digits && text.len() == 4)
                    .then(|| text.parse::<i64>().ok())
                    .flatten()
                    .filter(|y| (FIRST_YEAR..=LAST_YEAR).contains(y));
            }
            _ => {}
        }
        let (min, max) = self.range();
        (digits && text.len() <= 2)
            .then(|| text.parse::<i64>().ok())
            .flatten()
            .filter(|v| (min..=max).contains(v))
    }
}

/// A step (`\d+`) read through cronexpr's generic token table: only
/// 0..=59 (and years) are in it; anything else reads as 0.
fn step_value(text: &str) -> i64 {
    let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    match (digits, text.len()) {
        (true, 1 | 2) => text.parse::<i64>().ok().filter(|v| *v <= 59).unwrap_or(0),
        (true, 4) => text
            .parse::<i64>()
            .ok()
            .filter(|y| (FIRST_YEAR..=LAST_YEAR).contains(y))
            .unwrap_or(0),
        _ => 0,
    }
}

/// One comma-separated entry of a field, classified (cronDirective).
enum Directive {
    All,
    One(i64),
    Span {
        first: i64,
        last: i64,
        step: i64,
    },
    /// Matches no generic layout; the day fields try their own forms.
    Other(String),
}

fn parse_entries(text: &str, field: Field) -> Result<Vec<Directive>, CronError> {
    let entries: Vec<&str> = text.split(',').filter(|e| !e.is_empty()).collect();
    if entries.is_empty() {
        return Err(CronError(format!(
            "{} field: missing directive",
            field.name()
        )));
    }
    let (min, max) = field.range();
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        let lower = entry.to_ascii_lowercase();
        let checked = |step_text: &str| {
            let step = step_value(step_text);
            if step < 1 || step > max {
                Err(CronError(format!("invalid interval {lower}")))
            } else {
                Ok(step)
            }
        };
        if lower == "*" || lower == "?" {
            out.push(Directive::All);
        } else if let Some(v) = field.value(&lower) {
            out.push(Directive::One(v));
        } else if let Some((a, b)) = lower
            .split_once('-')
            .and_then(|(a, b)| Some((field.value(a)?, field.value(b)?)))
        {
            out.push(Directive::Span {
                first: a,
                last: b,
                step: 1,
            });
        } else if let Some((head, step)) = lower.split_once('/') {
            let step_ok = !step.is_empty() && step.bytes().all(|b| b.is_ascii_digit());
            let span = if !step_ok {
                None
            } else if head == "*" {
                Some((min, max))
            } else if let Some(v) = field.value(head) {
                Some((v, max))
            } else {
                head.split_once('-')
                    .and_then(|(a, b)| Some((field.value(a)?, field.value(b)?)))
            };
            match span {
                Some((first, last)) => out.push(Directive::Span {
                    first,
                    last,
                    step: checked(step)?,
                }),
                None => out.push(Directive::Other(entry.to_string())),
            }
        } else {
            out.push(Directive::Other(entry.to_string()));
        }
    }
    Ok(out)
}

/// The values of a second, minute, hour, month or year field as a bitmask
/// (bit `value - min`); `*` anywhere is the whole range (cronexpr returns
/// the default list at the first `*`, before later entries are looked at).
fn generic_field(text: &str, field: Field) -> Result<[u128; 2], CronError> {
    let (min, max) = field.range();
    let mut bits = [0u128; 2];
    let mut set = |v: i64| {
        let i = (v - min) as usize;
        bits[i / 128] |= 1 << (i % 128);
    };
    for directive in parse_entries(text, field)? {
        match directive {
            Directive::Other(entry) => {
                return Err(CronError(format!(
                    "syntax error in {} field: '{entry}'",
                    field.name()
                )));
            }
            Directive::One(v) => set(v),
            Directive::Span { first, last, step } => {
                let mut v = first;
                while v <= last {
                    set(v);
                    v += step;
                }
            }
            Directive::All => {
                let mut all = [0u128; 2];
                for v in min..=max {
                    let i = (v - min) as usize;
                    all[i / 128] |= 1 << (i % 128);
                }
                return Ok(all);
            }
        }
    }
    Ok(bits)
}

fn span_bits(first: i64, last: i64, step: i64) -> u64 {
    let mut bits = 0u64;
    let mut v = first;
    while v <= last {
        bits |= 1 << v;
        v += step;
    }
    bits
}

fn dom_field(text: &str, days: &mut DaySpec) -> Result<(), CronError> {
    days.dom_restricted = true;
    for directive in parse_entries(text, Field::Dom)? {
        match directive {
            Directive::One(v) => days.dom |= 1 << v,
            Directive::Span { first, last, step } => {
                days.dom |= span_bits(first, last, step) as u32;
            }
            Directive::All => {
                days.dom |= span_bits(1, 31, 1) as u32;
                days.dom_restricted = false;
            }
            Directive::Other(entry) => {
                let lower = entry.to_ascii_lowercase();
                if lower == "l" {
                    days.last_dom = true;
                } else if lower == "lw" {
                    days.last_workdom = true;
                } else if let Some(v) = lower.strip_suffix('w').and_then(|v| Field::Dom.value(v)) {
                    days.workdoms |= 1 << v;
                } else {
                    return Err(CronError(format!(
                        "syntax error in day-of-month field: '{entry}'"
                    )));
                }
            }
        }
    }
    Ok(())
}

fn dow_field(text: &str, days: &mut DaySpec) -> Result<(), CronError> {
    days.dow_restricted = true;
    for directive in parse_entries(text, Field::Dow)? {
        match directive {
            Directive::One(v) => days.dow |= 1 << v,
            Directive::Span { first, last, step } => {
                // A span ending in 7 (Sunday, read as 0) runs to Saturday.
                let last = if last == 0 { 6 } else { last };
                days.dow |= span_bits(first, last, step) as u8;
            }
            Directive::All => {
                days.dow |= 0x7f;
                days.dow_restricted = false;
            }
            Directive::Other(entry) => {
                let lower = entry.to_ascii_lowercase();
                if let Some(d) = lower.strip_suffix('l').and_then(|v| Field::Dow.value(v)) {
                    days.last_week_dows |= 1 << d;
                } else if let Some((d, k)) = lower.split_once('#').and_then(|(d, k)| {
                    let k: i64 = (k.len() == 1).then(|| k.parse().ok()).flatten()?;
                    Some((Field::Dow.value(d)?, k)).filter(|_| (1..=5).contains(&k))
                }) {
                    days.specific_week_dows |= 1 << ((k - 1) * 7 + d % 7);
                } else {
                    return Err(CronError(format!(
                        "syntax error in day-of-week field: '{entry}'"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// Nomad's refusal of a cron spec (structs.go `PeriodicConfig.Validate`:
/// "Invalid cron spec %q: %v").
pub fn invalid_spec(text: &str, err: &CronError) -> String {
    format!("Invalid cron spec {text:?}: {err}")
}

impl CronExpr {
    /// cronexpr.Parse.
    pub fn parse(line: &str) -> Result<CronExpr, CronError> {
        let mut cron = line.to_string();
        for (alias, expansion) in [
            ("@yearly", "0 0 0 1 1 * *"),
            ("@annually", "0 0 0 1 1 * *"),
            ("@monthly", "0 0 0 1 * * *"),
            ("@weekly", "0 0 0 * * 0 *"),
            ("@daily", "0 0 0 * * * *"),
            ("@hourly", "0 0 * * * * *"),
        ] {
            cron = cron.replace(alias, expansion);
        }
        // Go's `\S+`: runs of anything but ASCII whitespace.
        let fields: Vec<&str> = cron
            .split([' ', '\t', '\n', '\r', '\x0c'])
            .filter(|f| !f.is_empty())
            .collect();
        if fields.len() < 5 {
            return Err(CronError("missing field(s)".to_string()));
        }
        let count = fields.len().min(7);
        let mut next = fields.iter().copied();
        let seconds = if count == 7 {
            generic_field(next.next().unwrap_or_default(), Field::Second)?[0] as u64
        } else {
            1
        };
        let minutes = generic_field(next.next().unwrap_or_default(), Field::Minute)?[0] as u64;
        let hours = generic_field(next.next().unwrap_or_default(), Field::Hour)?[0] as u32;
        let mut days = DaySpec::default();
        dom_field(next.next().unwrap_or_default(), &mut days)?;
        let months = generic_field(next.next().unwrap_or_default(), Field::Month)?[0] as u16;
        dow_field(next.next().unwrap_or_default(), &mut days)?;
        let years = if count >= 6 {
            generic_field(next.next().unwrap_or_default(), Field::Year)?
        } else {
            generic_field("*", Field::Year)?
        };
        Ok(CronExpr {
            seconds,
            minutes,
            hours,
            months,
            years,
            days,
        })
    }

    /// cronexpr's Next: the first whole second strictly after `from`
    /// (seconds of the local wall clock since 1970-01-01T00:00:00) that
    /// matches, or `None` when none does before 2100.
    pub fn next_after(&self, from: i64) -> Option<i64> {
        let start = from + 1;
        let mut day = start.div_euclid(86_400);
        let mut second_of_day = start.rem_euclid(86_400);
        loop {
            let (year, month, dom) = civil_from_days(day);
            if year > LAST_YEAR {
                return None;
            }
            let y = (year - FIRST_YEAR) as usize;
            let year_ok = year >= FIRST_YEAR && self.years[y / 128] & (1 << (y % 128)) != 0;
            if year_ok
                && self.months & (1 << (month - 1)) != 0
                && self.days.matches(year, month, dom)
                && let Some(at) = self.first_time_from(second_of_day)
            {
                return Some(day * 86_400 + at);
            }
            day += 1;
            second_of_day = 0;
        }
    }

    /// The first matching second of a day at or after `from` seconds.
    fn first_time_from(&self, from: i64) -> Option<i64> {
        let (fh, fm, fs) = (from / 3600, from / 60 % 60, from % 60);
        for h in fh..24 {
            if self.hours & (1 << h) == 0 {
                continue;
            }
            let m0 = if h == fh { fm } else { 0 };
            for m in m0..60 {
                if self.minutes & (1 << m) == 0 {
                    continue;
                }
                let s0 = if h == fh && m == fm { fs } else { 0 };
                if let Some(s) = (s0..60).find(|s| self.seconds & (1 << s) != 0) {
                    return Some(h * 3600 + m * 60 + s);
                }
            }
        }
        None
    }
}

impl DaySpec {
    /// calculateActualDaysOfMonth, for one day.
    fn matches(&self, year: i64, month: i64, dom: i64) -> bool {
        if !self.dom_restricted && !self.dow_restricted {
            return true;
        }
        let last = days_in_month(year, month);
        let first_weekday = weekday(days_from_civil(year, month, 1));
        let weekday_of = |d: i64| (first_weekday + d - 1) % 7;
        if self.dom_restricted {
            if self.last_dom && dom == last
                || self.last_workdom && workday(last, weekday_of(last), last) == dom
                || self.dom & (1 << dom) != 0
            {
                return true;
            }
            let workdom = (1..=last).any(|target| {
                self.workdoms & (1 << target) != 0
                    && workday(target, weekday_of(target), last) == dom
            });
            if workdom {
                return true;
            }
        }
        if self.dow_restricted {
            let wd = weekday_of(dom);
            if self.dow & (1 << wd) != 0 {
                return true;
            }
            let week = (dom - 1) / 7;
            if self.specific_week_dows & (1 << (week * 7 + wd)) != 0 {
                return true;
            }
            // The last such weekday: within the month's last seven days.
            if self.last_week_dows & (1 << wd) != 0 && dom > last - 7 {
                return true;
            }
        }
        false
    }
}

/// cronexpr's workdayOfMonth: the weekday nearest `dom` within its month.
fn workday(dom: i64, weekday: i64, last: i64) -> i64 {
    match weekday {
        6 if dom > 1 => dom - 1,
        6 => dom + 2,
        0 if dom < last => dom + 1,
        0 => dom - 2,
        _ => dom,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// algorithm).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01: (year, month 1..=12, day).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// 0 = Sunday.
fn weekday(days: i64) -> i64 {
    (days + 4).rem_euclid(7)
}

pub fn days_in_month(year: i64, month: i64) -> i64 {
    let (ny, nm) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    days_from_civil(ny, nm, 1) - days_from_civil(year, month, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(y: i64, mo: i64, d: i64, h: i64, mi: i64, s: i64) -> i64 {
        days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s
    }

    fn next(spec: &str, from: i64) -> Option<i64> {
        CronExpr::parse(spec).expect("parses").next_after(from)
    }

    #[test]
    fn civil_round_trips() {
        for days in [-800_000, -1, 0, 1, 59, 60, 11_016, 20_458, 47_481] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(weekday(days_from_civil(2026, 1, 5)), 1, "a Monday");
        assert_eq!(days_in_month(2024, 2), 29);
        assert_eq!(days_in_month(2100, 2), 28);
    }

    #[test]
    fn five_field_steps_and_exclusive_start() {
        let t0 = at(2026, 1, 5, 0, 0, 0);
        assert_eq!(next("*/15 * * * *", t0), Some(at(2026, 1, 5, 0, 15, 0)));
        assert_eq!(next("*/15 * * * *", t0 - 1), Some(t0));
        assert_eq!(next("30 2 * * *", t0), Some(at(2026, 1, 5, 2, 30, 0)));
        assert_eq!(next("0 0 * * mon-fri", at(2026, 1, 9, 12, 0, 0)), {
            Some(at(2026, 1, 12, 0, 0, 0))
        });
    }

    #[test]
    fn macros_six_and_seven_fields() {
        let t0 = at(2026, 1, 5, 10, 20, 30);
        assert_eq!(next("@hourly", t0), Some(at(2026, 1, 5, 11, 0, 0)));
        assert_eq!(next("@daily", t0), Some(at(2026, 1, 6, 0, 0, 0)));
        assert_eq!(next("@weekly", t0), Some(at(2026, 1, 11, 0, 0, 0)));
        assert_eq!(next("@monthly", t0), Some(at(2026, 2, 1, 0, 0, 0)));
        assert_eq!(next("@yearly", t0), Some(at(2027, 1, 1, 0, 0, 0)));
        // Six fields: the sixth is the year.
        assert_eq!(next("0 0 1 1 * 2028", t0), Some(at(2028, 1, 1, 0, 0, 0)));
        // Seven: seconds first.
        assert_eq!(
            next("*/20 * * * * * *", t0),
            Some(at(2026, 1, 5, 10, 20, 40))
        );
        assert_eq!(next("0 0 1 1 * 2020", t0), None, "no year left");
    }

    #[test]
    fn days_names_and_special_forms() {
        let t0 = at(2026, 1, 1, 0, 0, 0);
        // dom and dow both restricted: either matches (Jan 13 is a Tuesday).
        assert_eq!(next("0 0 13 * fri", t0), Some(at(2026, 1, 2, 0, 0, 0)));
        assert_eq!(next("0 0 L * *", t0), Some(at(2026, 1, 31, 0, 0, 0)));
        // January 31 2026 is a Saturday: the last workday is Friday 30.
        assert_eq!(next("0 0 LW * *", t0), Some(at(2026, 1, 30, 0, 0, 0)));
        assert_eq!(next("0 0 * * 1#2", t0), Some(at(2026, 1, 12, 0, 0, 0)));
        assert_eq!(next("0 0 * * 5L", t0), Some(at(2026, 1, 30, 0, 0, 0)));
        assert_eq!(next("0 0 1 FEB,Mar *", t0), Some(at(2026, 2, 1, 0, 0, 0)));
        assert_eq!(next("0 0 * * 7", t0), Some(at(2026, 1, 4, 0, 0, 0)));
        assert_eq!(next("0 0 30 2 *", t0), None, "February has no 30th");
    }

    #[test]
    fn refusals_use_cronexprs_words() {
        let refused = |spec: &str| CronExpr::parse(spec).unwrap_err().0;
        assert_eq!(refused("* * * *"), "missing field(s)");
        assert_eq!(refused("60 * * * *"), "syntax error in minute field: '60'");
        assert_eq!(refused("*/0 * * * *"), "invalid interval */0");
        assert_eq!(refused("* * * */13 *"), "invalid interval */13");
        assert_eq!(
            refused("* * 0 * *"),
            "syntax error in day-of-month field: '0'"
        );
        assert_eq!(
            refused("* * * * funday"),
            "syntax error in day-of-week field: 'funday'"
        );
        assert_eq!(
            refused("* * , * *"),
            "day-of-month field: missing directive"
        );
    }
}
