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
}
