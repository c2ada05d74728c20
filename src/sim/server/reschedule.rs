//! Nomad's reschedule policy: whether a failed allocation may be replaced,
//! and after what delay.

use crate::model::scenario::{DelayFunction, ReschedulePolicy};
use crate::model::time::Millis;

/// A failed allocation due within this of now is rescheduled by the current
/// evaluation (reconciler `rescheduleWindowSize`).
pub const RESCHEDULE_WINDOW: Millis = Millis::from_secs(1);
/// Failed allocations due within this of the first of a batch share one
/// follow-up evaluation (reconciler `batchedFailedAllocWindowSize`).
pub const FOLLOWUP_BATCH: Millis = Millis::from_secs(5);

/// The delay before the next reschedule (structs `Allocation.NextDelay`),
/// given the earlier reschedules as (when, delay), oldest first, and when
/// the allocation failed. Exponential and fibonacci grow from `delay` and are
/// capped at `max_delay`; a capped delay starts over at `delay` once the
/// allocation ran longer than it since the last reschedule.
pub fn next_delay(
    policy: &ReschedulePolicy,
    previous: &[(Millis, Millis)],
    failed_at: Millis,
) -> Millis {
    let grown = match policy.delay_function {
        DelayFunction::Constant => return policy.delay,
        DelayFunction::Exponential => match previous.last() {
            None => policy.delay,
            Some(&(_, last)) => last.saturating_mul(2),
        },
        DelayFunction::Fibonacci => match previous {
            // A series that reached the cap and started over starts over here too.
            [.., (_, a), (_, b)] if *a == policy.max_delay && *b == policy.delay => *b,
            [.., (_, a), (_, b)] => *a + *b,
            _ => policy.delay,
        },
    };
    match previous.last() {
        Some(&(last_at, _)) if policy.max_delay > Millis::ZERO && grown > policy.max_delay => {
            if failed_at - last_at > policy.max_delay {
                policy.delay
            } else {
                policy.max_delay
            }
        }
        _ => grown,
    }
}

/// When a failed allocation may be rescheduled (structs
/// `Allocation.nextRescheduleTime`), or `None` if it may not: unlimited, or
/// a first attempt, or fewer than `attempts` reschedules within `interval`
/// before the failure *and* a next delay shorter than the interval.
pub fn reschedule_eligible(
    policy: &ReschedulePolicy,
    previous: &[(Millis, Millis)],
    failed_at: Millis,
) -> Option<Millis> {
    if policy.attempts == 0 && !policy.unlimited {
        return None;
    }
    let delay = next_delay(policy, previous, failed_at);
    let mut eligible = policy.unlimited || previous.is_empty();
    if policy.attempts > 0 && !previous.is_empty() {
        let attempted = previous
            .iter()
            .filter(|&&(at, _)| failed_at - at < policy.interval)
            .count();
        eligible = attempted < policy.attempts as usize && delay < policy.interval;
    }
    eligible.then_some(failed_at + delay)
}

/// Whether the reschedule policy leaves the allocation an attempt at `at`
/// (structs `RescheduleTracker.RescheduleEligible`, what the deployment
/// watcher's `shouldFailEarly` asks): unlimited, or a first attempt, or
/// fewer than `attempts` reschedules within `interval` before `at`. Unlike
/// [`reschedule_eligible`] the next delay is not compared with the interval.
pub fn attempts_left(policy: &ReschedulePolicy, previous: &[(Millis, Millis)], at: Millis) -> bool {
    if policy.unlimited {
        return true;
    }
    if policy.attempts == 0 {
        return false;
    }
    let attempted = previous
        .iter()
        .filter(|&&(when, _)| at - when < policy.interval)
        .count();
    attempted < policy.attempts as usize
}

/// Groups the due times of allocations to reschedule later into follow-up
/// evaluations: sorted, each evaluation at the first due time of a 5s batch.
/// Returns the evaluation time for each input, in input order.
pub fn followup_windows(due: &[Millis]) -> Vec<Millis> {
    let mut order: Vec<usize> = (0..due.len()).collect();
    order.sort_by_key(|&i| (due[i], i));
    let mut eval_at = vec![Millis::ZERO; due.len()];
    let mut batch: Option<Millis> = None;
    for i in order {
        let start = match batch {
            Some(start) if due[i] - start < FOLLOWUP_BATCH => start,
            _ => due[i],
        };
        batch = Some(start);
        eval_at[i] = start;
    }
    eval_at
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

    /// Delays of the first `n` reschedules, each failing at once after the
    /// previous one, feeding each back as history.
    fn series(policy: &ReschedulePolicy, n: usize) -> Vec<u64> {
        let mut history: Vec<(Millis, Millis)> = Vec::new();
        let mut now = Millis::ZERO;
        for _ in 0..n {
            let delay = next_delay(policy, &history, now);
            now += delay;
            history.push((now, delay));
        }
        history.iter().map(|(_, d)| d.0 / 1000).collect()
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
        let s = Millis::from_secs;
        assert_eq!(reschedule_eligible(&batch, &[], s(10)), Some(s(15)));
        assert_eq!(reschedule_eligible(&batch, &[(s(15), s(5))], s(20)), None);
        // Outside the 24h window the old attempt no longer counts.
        assert_eq!(
            reschedule_eligible(&batch, &[(s(15), s(5))], s(90_000)),
            Some(s(90_005))
        );
        let service = ReschedulePolicy::default_for(JobKind::Service);
        assert!(reschedule_eligible(&service, &[(Millis::ZERO, s(30)); 50], s(1)).is_some());
    }

    /// structs.TestRescheduleTracker_... : a next delay not shorter than the
    /// interval is not eligible, whatever the attempts left.
    #[test]
    fn delay_must_be_shorter_than_the_interval() {
        let s = Millis::from_secs;
        let mut policy = policy(DelayFunction::Exponential, 30, 3600);
        policy.unlimited = false;
        policy.attempts = 5;
        policy.interval = s(100);
        // Second reschedule: delay 60s < 100s.
        assert!(reschedule_eligible(&policy, &[(s(0), s(30))], s(10)).is_some());
        // Third: delay 120s >= 100s.
        assert!(reschedule_eligible(&policy, &[(s(0), s(30)), (s(5), s(60))], s(10)).is_none());
    }

    #[test]
    fn capped_delay_resets_after_a_long_run() {
        let s = Millis::from_secs;
        let policy = policy(DelayFunction::Exponential, 30, 60);
        let history = [(s(0), s(30)), (s(40), s(60))];
        assert_eq!(next_delay(&policy, &history, s(50)), s(60));
        assert_eq!(next_delay(&policy, &history, s(500)), s(30));
    }

    #[test]
    fn followups_are_batched_in_five_second_windows() {
        let s = Millis::from_secs;
        assert_eq!(
            followup_windows(&[s(10), s(3), s(7), s(8), s(13)]),
            [s(8), s(3), s(3), s(8), s(13)]
        );
    }

    /// deployment_watcher.go shouldFailEarly reads RescheduleEligible: the
    /// attempts within the interval, not the next delay.
    #[test]
    fn attempts_left_counts_the_interval_only() {
        let s = Millis::from_secs;
        let mut limited = policy(DelayFunction::Exponential, 30, 3600);
        limited.unlimited = false;
        limited.attempts = 1;
        limited.interval = s(100);
        assert!(attempts_left(&limited, &[], s(10)));
        assert!(!attempts_left(&limited, &[(s(5), s(30))], s(10)));
        assert!(attempts_left(&limited, &[(s(5), s(30))], s(200)));
        limited.attempts = 0;
        assert!(!attempts_left(&limited, &[], s(10)));
        assert!(attempts_left(
            &policy(DelayFunction::Constant, 5, 0),
            &[],
            s(1)
        ));
    }

    #[test]
    fn zero_attempts_without_unlimited_never_reschedules() {
        let mut never = policy(DelayFunction::Constant, 5, 0);
        never.unlimited = false;
        assert_eq!(reschedule_eligible(&never, &[], Millis::ZERO), None);
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
