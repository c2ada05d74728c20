//! Node ranking, after Nomad's scheduler/rank.go: bin-packing fitness, job
//! anti-affinity, the reschedule penalty and the limit on scored nodes.
//! Only IEEE basic arithmetic is used, so scores are bit-identical on every
//! machine (a libm `pow` may differ in the last bit between platforms, and a
//! last-bit difference can flip a tie).

/// `10^x` for `x` in [0, 1] (free fractions), from basic operations only.
pub fn pow10_unit(x: f64) -> f64 {
    debug_assert!((-1e-9..=1.0 + 1e-9).contains(&x));
    // 10^x = e^(x ln 10); shrink the exponent, sum the series, square back.
    const LN_10: f64 = std::f64::consts::LN_10;
    let mut y = x * LN_10;
    let mut squarings = 0;
    while y.abs() > 0.125 {
        y *= 0.5;
        squarings += 1;
    }
    // e^y for |y| <= 1/8 by Horner's rule on the Taylor series to y^10
    // (the remainder is below 1e-18 relative).
    const INVERSE: [f64; 11] = [
        1.0,
        1.0,
        1.0 / 2.0,
        1.0 / 3.0,
        1.0 / 4.0,
        1.0 / 5.0,
        1.0 / 6.0,
        1.0 / 7.0,
        1.0 / 8.0,
        1.0 / 9.0,
        1.0 / 10.0,
    ];
    let mut sum = 1.0;
    for inverse in INVERSE[1..].iter().rev() {
        sum = 1.0 + y * inverse * sum;
    }
    for _ in 0..squarings {
        sum *= sum;
    }
    sum
}

/// Nomad's bin-packing fitness, normalised to [0, 1]: higher for fuller nodes.
/// `used_*` include the allocation being placed.
pub fn binpack_score(used_cpu: u64, cpu: u64, used_memory: u64, memory: u64) -> f64 {
    binpack_from_terms(free_term(used_cpu, cpu), free_term(used_memory, memory))
}

/// Nomad's `spread` algorithm fitness (an option of the cluster's scheduler config).
pub fn spread_score(used_cpu: u64, cpu: u64, used_memory: u64, memory: u64) -> f64 {
    spread_from_terms(free_term(used_cpu, cpu), free_term(used_memory, memory))
}

/// `10^free` for one resource, `free` being the fraction left once `used`
/// of `capacity` is taken (ScoreFitBinPack's per-resource term).
pub fn free_term(used: u64, capacity: u64) -> f64 {
    let free = 1.0 - used as f64 / capacity as f64;
    pow10_unit(free.clamp(0.0, 1.0))
}

/// [`binpack_score`] from the CPU and memory terms ([`free_term`]).
pub fn binpack_from_terms(cpu_term: f64, memory_term: f64) -> f64 {
    (20.0 - (cpu_term + memory_term)).clamp(0.0, 18.0) / 18.0
}

/// [`spread_score`] from the CPU and memory terms ([`free_term`]).
pub fn spread_from_terms(cpu_term: f64, memory_term: f64) -> f64 {
    ((cpu_term + memory_term) - 2.0).clamp(0.0, 18.0) / 18.0
}

/// Job anti-affinity: with `collisions` allocations of the same job and group
/// already on (or proposed for) the node, `-(collisions + 1) / count`.
/// `None` when there is no collision: Nomad appends no score then.
pub fn anti_affinity_penalty(collisions: u32, desired_count: u32) -> Option<f64> {
    (collisions > 0).then(|| -(f64::from(collisions) + 1.0) / f64::from(desired_count.max(1)))
}

/// The penalty Nomad gives nodes where the allocation being rescheduled failed.
pub const RESCHEDULE_PENALTY: f64 = -1.0;

/// How many feasible nodes the limit iterator scores: 2 for batch jobs, and
/// `max(2, ceil(log2(n)))` for service jobs over `n` candidate nodes.
pub fn score_limit(candidates: usize, batch: bool) -> usize {
    if batch || candidates <= 1 {
        return 2;
    }
    let ceil_log2 = (usize::BITS - (candidates - 1).leading_zeros()) as usize;
    ceil_log2.max(2)
}

/// The limit when the group has spread or affinity (stack.go Select, both
/// releases): the group's count, at least 100.
pub fn preference_limit(count: u32) -> usize {
    (count as usize).max(100)
}

/// Nodes scoring at or below this are set aside (at most [`MAX_SKIP`]) in the
/// hope of better ones, and used only if too few others are found.
pub const SKIP_THRESHOLD: f64 = 0.0;
pub const MAX_SKIP: usize = 3;

/// The final score: the mean of the scores appended for a node. Inlined
/// into the scoring loop, which calls it for every node.
#[inline]
pub fn final_score(scores: &[f64]) -> f64 {
    // Dividing by 1 or 2 is exact, as is multiplying by 0.5: the two short
    // cases (most nodes: fitness alone, or with one penalty) skip a
    // division and give the same bits.
    match scores {
        [] => 0.0,
        [only] => *only,
        [a, b] => (a + b) * 0.5,
        _ => scores.iter().sum::<f64>() / scores.len() as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pow10_matches_the_library_closely() {
        for i in 0..=1000 {
            let x = f64::from(i) / 1000.0;
            let ours = pow10_unit(x);
            let libm = 10f64.powf(x);
            assert!(
                (ours - libm).abs() <= 1e-13 * libm,
                "x={x}: {ours} vs {libm}"
            );
        }
        assert_eq!(pow10_unit(0.0), 1.0);
    }

    /// Hand-computed: an empty 4000 MHz / 8192 MiB node asked for 500 MHz and
    /// 256 MiB: free cpu 0.875, free mem 0.96875;
    /// 10^0.875 = 7.4989421, 10^0.96875 = 9.3057204; 20 - 16.8046625 = 3.1953375;
    /// / 18 = 0.1775187.
    #[test]
    fn binpack_score_matches_hand_computation() {
        let score = binpack_score(500, 4000, 256, 8192);
        assert!((score - 0.177_518_7).abs() < 1e-6, "{score}");
        // A full node: 20 - (1 + 1) = 18 -> 1.0.
        assert_eq!(binpack_score(4000, 4000, 8192, 8192), 1.0);
        // An empty node: 20 - (10 + 10) = 0 -> 0.0.
        assert!(binpack_score(0, 4000, 0, 8192).abs() < 1e-12);
        // Fuller nodes score higher.
        assert!(binpack_score(3000, 4000, 6000, 8192) > binpack_score(1000, 4000, 2000, 8192));
    }

    #[test]
    fn spread_prefers_empty_nodes() {
        assert!((spread_score(0, 4000, 0, 8192) - 1.0).abs() < 1e-12);
        assert_eq!(spread_score(4000, 4000, 8192, 8192), 0.0);
    }

    #[test]
    fn anti_affinity_is_appended_only_on_collision() {
        assert_eq!(anti_affinity_penalty(0, 3), None);
        assert_eq!(anti_affinity_penalty(1, 4), Some(-0.5));
        assert_eq!(anti_affinity_penalty(2, 3), Some(-1.0));
    }

    #[test]
    fn limit_is_two_for_batch_and_log2_for_service() {
        assert_eq!(score_limit(5000, true), 2);
        assert_eq!(score_limit(1, false), 2);
        assert_eq!(score_limit(3, false), 2);
        assert_eq!(score_limit(5, false), 3);
        assert_eq!(score_limit(8, false), 3);
        assert_eq!(score_limit(9, false), 4);
        assert_eq!(score_limit(5000, false), 13);
    }

    #[test]
    fn final_score_is_the_mean() {
        assert_eq!(final_score(&[0.5, -1.0]), -0.25);
        assert_eq!(final_score(&[0.8]), 0.8);
    }
}
