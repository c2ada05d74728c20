//! Nomad's reschedule policy: whether a failed allocation may be replaced,
//! and after what delay.

use crate::model::scenario::{DelayFunction, ReschedulePolicy};
use crate::model::time::Millis;

/// The delay before the next reschedule, given the delays of the previous
/// ones (oldest first). Exponential and fibonacci grow from `delay` and are
/// capped at `max_delay`; constant is always `delay`.
pub fn next_delay(policy: &ReschedulePolicy, previous: &[Millis]) -> Millis {
    let grown = match policy.delay_function {
        DelayFunction::Constant => return policy.delay,
        DelayFunction::Exponential => match previous.last() {
            None => policy.delay,
            Some(last) => last.saturating_mul(2),
        },
        DelayFunction::Fibonacci => match previous {
            [.., a, b] => *a + *b,
            _ => policy.delay,
        },
    };
    if policy.max_delay > Millis::ZERO {
        grown.min(policy.max_delay)
    } else {
        grown
    }
}

/// Whether one more reschedule is allowed at `now`, given when the earlier
/// ones happened: unlimited, or fewer than `attempts` within `interval`.
pub fn may_reschedule(policy: &ReschedulePolicy, history: &[Millis], now: Millis) -> bool {
    if policy.unlimited {
        return true;
    }
    let window_start = now - policy.interval;
    let recent = history.iter().filter(|&&at| at >= window_start).count();
    recent < policy.attempts as usize
}

/// How many past reschedules Nomad keeps when rescheduling is unlimited
/// (`maxPastRescheduleEvents`, scheduler/generic_sched.go, v2.0.5).
pub const MAX_PAST_RESCHEDULE_EVENTS: usize = 5;

/// How many of the newest entries of a reschedule history (oldest first,
/// `(time, delay)`) a replacement keeps, as Nomad's
/// `UpdateRescheduleTracker` (scheduler/generic_sched.go, v2.0.5) does:
/// with `attempts` set, those within `interval` of `now`; otherwise the
/// last five; and always the last two, which `next_delay` reads (so the
/// delays are exactly those of the whole history). Never more than
/// `max(attempts, 5)`, which is all the decisions need (`may_reschedule`
/// counts at most `attempts` recent entries), so an allocation's memory
/// does not grow with the number of reschedules before it.
pub fn tracker_window(
    policy: &ReschedulePolicy,
    history: &[(Millis, Millis)],
    now: Millis,
) -> usize {
    let cap = (policy.attempts as usize).max(MAX_PAST_RESCHEDULE_EVENTS);
    let kept = if policy.attempts > 0 {
        let window_start = now - policy.interval;
        history
            .iter()
            .rev()
            .take_while(|&&(at, _)| at >= window_start)
            .count()
    } else {
        history.len()
    };
    kept.max(history.len().min(2)).min(cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::scenario::JobKind;

    fn policy(function: DelayFunction, delay: u64, max: u64) -> ReschedulePolicy {
        ReschedulePolicy {
            attempts: 0,
            interval: Millis::ZERO,
            delay: Millis::from_secs(delay),
            delay_function: function,
            max_delay: Millis::from_secs(max),
            unlimited: true,
        }
    }

    /// Delays of the first `n` reschedules, feeding each back as history.
    fn series(policy: &ReschedulePolicy, n: usize) -> Vec<u64> {
        let mut history = Vec::new();
        for _ in 0..n {
            let delay = next_delay(policy, &history);
            history.push(delay);
        }
        history.iter().map(|d| d.0 / 1000).collect()
    }

    #[test]
    fn constant_exponential_fibonacci_by_hand() {
        assert_eq!(
            series(&policy(DelayFunction::Constant, 5, 0), 4),
            [5, 5, 5, 5]
        );
        assert_eq!(
            series(&policy(DelayFunction::Exponential, 30, 3600), 9),
            [30, 60, 120, 240, 480, 960, 1920, 3600, 3600]
        );
        assert_eq!(
            series(&policy(DelayFunction::Fibonacci, 10, 100), 8),
            [10, 10, 20, 30, 50, 80, 100, 100]
        );
    }

    #[test]
    fn batch_default_allows_one_attempt_per_day() {
        let batch = ReschedulePolicy::default_for(JobKind::Batch);
        assert!(may_reschedule(&batch, &[], Millis::from_secs(10)));
        assert!(!may_reschedule(
            &batch,
            &[Millis::from_secs(10)],
            Millis::from_secs(20)
        ));
        // Outside the 24h window the old attempt no longer counts.
        assert!(may_reschedule(
            &batch,
            &[Millis::from_secs(10)],
            Millis::from_secs(90_000)
        ));
        let service = ReschedulePolicy::default_for(JobKind::Service);
        assert!(may_reschedule(
            &service,
            &[Millis::ZERO; 50],
            Millis::from_secs(1)
        ));
    }

    #[test]
    fn zero_attempts_without_unlimited_never_reschedules() {
        let mut never = policy(DelayFunction::Constant, 5, 0);
        never.unlimited = false;
        assert!(!may_reschedule(&never, &[], Millis::ZERO));
    }

    #[test]
    fn the_tracker_window_is_bounded() {
        let unlimited = policy(DelayFunction::Constant, 1, 0);
        let history: Vec<(Millis, Millis)> = (0..100)
            .map(|i| (Millis::from_secs(i), Millis::from_secs(1)))
            .collect();
        assert_eq!(
            tracker_window(&unlimited, &history, Millis::from_secs(100)),
            5
        );
        assert_eq!(
            tracker_window(&unlimited, &history[..3], Millis::from_secs(100)),
            3
        );
        let mut limited = unlimited;
        limited.unlimited = false;
        limited.attempts = 3;
        limited.interval = Millis::from_secs(10);
        // Within 10s of 100s: the entries at 90..=99, capped at max(3, 5).
        assert_eq!(
            tracker_window(&limited, &history, Millis::from_secs(100)),
            5
        );
        assert_eq!(
            tracker_window(&limited, &history, Millis::from_secs(200)),
            2
        );
    }
}
