//! Summary statistics of a metric over runs. Deterministic: values are
//! summed in the order given (run order), and only IEEE basic operations and
//! `sqrt` (correctly rounded) are used.

/// Mean, nearest-rank percentiles, extremes and the half-width of a 95%
/// confidence interval of the mean (Student's t).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub min: f64,
    pub max: f64,
    /// `None` with fewer than two values.
    pub ci95: Option<f64>,
}

/// Summarises `values` (in the order given; the percentiles are selected in
/// place, so they come back reordered); `None` when there are none.
pub fn summarize(mut values: Vec<f64>) -> Option<Summary> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    // Sums in the order given, before the selections reorder the values.
    let mean = values.iter().sum::<f64>() / n as f64;
    let min = values.iter().copied().min_by(f64::total_cmp)?;
    let max = values.iter().copied().max_by(f64::total_cmp)?;
    let ci95 = ci95_half_width(&values, mean);
    // Two selections instead of a sort: linear in the runs, and the values
    // picked are the ones a sort would put at those ranks (equal under
    // `total_cmp` means the same bits).
    let (r50, r95) = (rank(n, 50), rank(n, 95));
    let (_, &mut p50, above) = values.select_nth_unstable_by(r50, f64::total_cmp);
    let p95 = if r95 == r50 {
        p50
    } else {
        *above
            .select_nth_unstable_by(r95 - r50 - 1, f64::total_cmp)
            .1
    };
    Some(Summary {
        n,
        mean,
        p50,
        p95,
        min,
        max,
        ci95,
    })
}

/// The index, in sorted order, of the nearest-rank percentile `p` of `n`
/// values: the smallest value with at least `p`% of the values at or below it.
fn rank(n: usize, p: usize) -> usize {
    (p * n).div_ceil(100).max(1) - 1
}

#[cfg(test)]
fn nearest_rank(sorted: &[f64], p: usize) -> f64 {
    sorted[rank(sorted.len(), p)]
}

fn ci95_half_width(values: &[f64], mean: f64) -> Option<f64> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let variance = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1) as f64;
    Some(t_975(n - 1) * (variance / n as f64).sqrt())
}

/// Two-sided 95% quantiles of Student's t for 1 to 30 degrees of freedom,
/// then for 40, 60 and 120; beyond that the normal 1.960. Between tabled
/// degrees of freedom the next lower one is used (a slightly wider, safe interval).
pub fn t_975(df: usize) -> f64 {
    const SMALL: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => SMALL[df - 1],
        31..=39 => 2.042,
        40..=59 => 2.021,
        60..=119 => 2.000,
        120..=999 => 1.980,
        _ => 1.960,
    }
}

/// Fixed three decimals, the way every plansim output prints numbers.
pub fn fmt3(value: f64) -> String {
    let text = format!("{value:.3}");
    if text == "-0.000" {
        "0.000".to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_summary() {
        // 1..=10: mean 5.5, sample sd 3.02765, se 0.957427, t(9) 2.262.
        let values: Vec<f64> = (1..=10).map(f64::from).collect();
        let s = summarize(values).unwrap();
        assert_eq!((s.n, s.mean, s.min, s.max), (10, 5.5, 1.0, 10.0));
        assert_eq!((s.p50, s.p95), (5.0, 10.0));
        assert!((s.ci95.unwrap() - 2.262 * 0.957_427).abs() < 1e-5);
    }

    #[test]
    fn one_value_has_no_interval_and_none_no_summary() {
        let s = summarize(vec![3.0]).unwrap();
        assert_eq!((s.mean, s.p50, s.p95, s.ci95), (3.0, 3.0, 3.0, None));
        assert!(summarize(Vec::new()).is_none());
    }

    #[test]
    fn nearest_rank_percentiles() {
        let sorted: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(nearest_rank(&sorted, 50), 10.0);
        assert_eq!(nearest_rank(&sorted, 95), 19.0);
        assert_eq!(nearest_rank(&[7.0], 95), 7.0);
    }

    #[test]
    fn selection_picks_what_a_sort_would() {
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        for n in [1usize, 2, 3, 19, 20, 21, 100, 1_001] {
            let values: Vec<f64> = (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    // Few distinct values, signed zeros among them.
                    [(state % 7) as f64 - 3.0, -0.0, 0.0][(state % 3) as usize]
                })
                .collect();
            let mut sorted = values.clone();
            sorted.sort_by(f64::total_cmp);
            let s = summarize(values).unwrap();
            let bits = |v: f64| v.to_bits();
            assert_eq!(bits(s.p50), bits(nearest_rank(&sorted, 50)), "n {n}");
            assert_eq!(bits(s.p95), bits(nearest_rank(&sorted, 95)), "n {n}");
            assert_eq!(bits(s.min), bits(sorted[0]), "n {n}");
            assert_eq!(bits(s.max), bits(sorted[n - 1]), "n {n}");
        }
    }

    #[test]
    fn formatting_never_prints_negative_zero() {
        assert_eq!(fmt3(-0.0001), "0.000");
        assert_eq!(fmt3(2.0 / 3.0), "0.667");
    }
}
