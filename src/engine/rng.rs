//! Seeded random streams. Each purpose gets its own ChaCha8 stream derived
//! from the run's seed and a fixed stream number, so adding a draw in one
//! place never shifts the numbers seen in another.

use rand::Rng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The purposes that draw random numbers. Their numbers are part of the
/// output contract: changing one changes every result.
#[derive(Clone, Copy, Debug)]
pub enum Stream {
    /// Node order of each evaluation (Nomad shuffles nodes per evaluation).
    NodeShuffle = 1,
    /// The order an evaluation reconciles a job's task groups in (Nomad
    /// ranges over a Go map of them: reconcile.go Compute's allocMatrix).
    GroupOrder = 2,
    /// Whether a ControllerPublish or NodePublish fails at the storage
    /// provider (a plugin's `controller_publish_failure` /
    /// `node_publish_failure`). Drawn only for a plugin whose probability
    /// is above 0, so runs without such plugins draw nothing from it.
    PublishFailure = 3,
}

pub struct SimRng {
    inner: ChaCha8Rng,
    /// `reciprocals[d]` is `d`'s [`Reciprocal::scaled`], for every bound
    /// `d` a shuffle has used so far (entries 0 and 1 unused). Grown to the
    /// longest list shuffled: 16 bytes per candidate node, at most 1.6 MB at
    /// `MAX_NODES`.
    reciprocals: Vec<u128>,
}

impl SimRng {
    pub fn new(seed: u64, stream: Stream) -> Self {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        key[8..16].copy_from_slice(&(stream as u64).to_le_bytes());
        SimRng {
            inner: ChaCha8Rng::from_seed(key),
            reciprocals: Vec::new(),
        }
    }

    /// A uniform integer in `0..bound` (bound > 0), by rejection sampling so
    /// no value is favoured.
    pub fn below(&mut self, bound: u64) -> u64 {
        uniform_below(&mut self.inner, bound)
    }

    /// `true` with probability `p` (0 < p <= 1): a uniform 53-bit fraction
    /// below `p`. One draw per call.
    pub fn chance(&mut self, p: f64) -> bool {
        const SCALE: u64 = 1 << 53;
        (self.below(SCALE) as f64) < p * SCALE as f64
    }

    /// Fisher-Yates, written here so the order never changes with a `rand` upgrade.
    ///
    /// Every evaluation shuffles every candidate node (40,000 draws on a
    /// 40,000-node cluster), so the loop is [`uniform_below`] unrolled for
    /// its common case: a draw at or below `u64::MAX - bound` is always
    /// accepted, and only the rare draw above it (a chance of `bound` in
    /// 2^64) takes the rejection path, which consumes the stream exactly as
    /// `uniform_below` does. The accepted draw's remainder is taken by
    /// multiplying with the bound's reciprocal (`Reciprocal`), not by the 64-bit
    /// divide, which took three quarters of the shuffle's time: the bounds
    /// are the same `len, len - 1, ..., 2` in every evaluation, so their
    /// reciprocals are computed once per run.
    ///
    /// Never inlined: it runs once per evaluation, and inlined into the
    /// scheduler (which some builds did) its loop cost 6% more instructions
    /// at 40,000 nodes for want of registers.
    #[inline(never)]
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        if self.reciprocals.len() < items.len() + 1 {
            let from = self.reciprocals.len();
            self.reciprocals
                .extend((from..=items.len()).map(|d| Reciprocal::of(d as u64).scaled));
        }
        for i in (1..items.len()).rev() {
            let bound = i as u64 + 1;
            let draw = self.inner.next_u64();
            let j = if draw <= u64::MAX - bound {
                let scaled = self.reciprocals[i + 1];
                Reciprocal {
                    divisor: bound,
                    scaled,
                }
                .remainder(draw)
            } else {
                accept_or_redraw(&mut self.inner, bound, draw)
            };
            items.swap(i, j as usize);
        }
    }
}

/// A divisor `d` with `ceil(2^128 / d)`, so that `n % d` for any 64-bit `n`
/// is two multiplications ("fastmod": Lemire, Kaser and Kurz, *Faster
/// remainder by direct computation*, 2019). With 128 fractional bits the
/// result is exact for every `n` below 2^64 and every `d` below 2^64
/// (their condition: 128 >= 64 + log2 d), so the shuffle's order is the one
/// `%` gives, draw for draw.
#[derive(Clone, Copy, Debug)]
struct Reciprocal {
    divisor: u64,
    /// `ceil(2^128 / divisor)`; 0 for the unused divisors 0 and 1.
    scaled: u128,
}

impl Reciprocal {
    fn of(divisor: u64) -> Self {
        let scaled = if divisor < 2 {
            0
        } else {
            u128::MAX / u128::from(divisor) + 1
        };
        Reciprocal { divisor, scaled }
    }

    /// `n % self.divisor` (divisor >= 2).
    #[inline(always)]
    fn remainder(self, n: u64) -> u64 {
        // The fraction of `n / divisor`, as a 128-bit fixed-point number...
        let fraction = self.scaled.wrapping_mul(u128::from(n));
        // ...times the divisor: the integer part is the remainder.
        // `(fraction * divisor) >> 128`, from two 64x64-bit products.
        let divisor = u128::from(self.divisor);
        let low = (fraction as u64 as u128) * divisor;
        let high = (fraction >> 64) * divisor;
        ((high + (low >> 64)) >> 64) as u64
    }
}

/// A uniform integer in `0..bound` (bound > 0) from a ChaCha8 stream, by
/// rejection sampling so no value is favoured. Written here, not taken from
/// `rand`, so the draws never change with a `rand` upgrade.
pub fn uniform_below(rng: &mut ChaCha8Rng, bound: u64) -> u64 {
    assert!(bound > 0, "empty range");
    // Draws at or above `u64::MAX - u64::MAX % bound` (the rejection zone)
    // are rejected. Since `u64::MAX % bound` is below `bound`, every draw up
    // to `u64::MAX - bound` is below the zone: those (all but a 2^-64 * bound
    // sliver) skip the second division that computing the zone costs.
    let draw = rng.next_u64();
    if draw <= u64::MAX - bound {
        return draw % bound;
    }
    accept_or_redraw(rng, bound, draw)
}

/// The rest of [`uniform_below`] for a first `draw` above `u64::MAX - bound`:
/// accepted if below the rejection zone, else redrawn until one is.
#[cold]
fn accept_or_redraw(rng: &mut ChaCha8Rng, bound: u64, mut draw: u64) -> u64 {
    let zone = u64::MAX - (u64::MAX % bound);
    while draw >= zone {
        draw = rng.next_u64();
    }
    draw % bound
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_same_numbers() {
        let mut a = SimRng::new(7, Stream::NodeShuffle);
        let mut b = SimRng::new(7, Stream::NodeShuffle);
        let xs: Vec<u64> = (0..16).map(|_| a.below(1_000)).collect();
        let ys: Vec<u64> = (0..16).map(|_| b.below(1_000)).collect();
        assert_eq!(xs, ys);
        let mut c = SimRng::new(8, Stream::NodeShuffle);
        let zs: Vec<u64> = (0..16).map(|_| c.below(1_000)).collect();
        assert_ne!(xs, zs);
    }

    /// Textbook rejection sampling: the definition the fast paths follow.
    fn reference_below(rng: &mut ChaCha8Rng, bound: u64) -> u64 {
        let zone = u64::MAX - (u64::MAX % bound);
        loop {
            let draw = rng.next_u64();
            if draw < zone {
                return draw % bound;
            }
        }
    }

    #[test]
    fn draws_and_shuffles_match_plain_rejection_sampling() {
        // Bounds just above 2^63 reject almost half the draws, so the
        // redraw path runs as often as the fast one.
        let bounds = [1, 2, 3, 7, 40_000, (1 << 32) + 1, (1 << 63) + 1, u64::MAX];
        let mut fast = SimRng::new(11, Stream::NodeShuffle);
        let mut plain = SimRng::new(11, Stream::NodeShuffle).inner;
        let mut redraws = 0;
        for round in 0..4_000 {
            let bound = bounds[round % bounds.len()];
            let before = plain.get_word_pos();
            assert_eq!(fast.below(bound), reference_below(&mut plain, bound));
            redraws += usize::from(plain.get_word_pos() - before > 2);
        }
        assert!(redraws > 100, "the redraw path ran {redraws} times");
        // Lengths that grow the table of reciprocals, reuse part of it,
        // and grow it again.
        for len in [1_000, 10, 0, 1, 2, 3_000] {
            let mut items: Vec<u32> = (0..len).collect();
            let mut expected = items.clone();
            fast.shuffle(&mut items);
            for i in (1..expected.len()).rev() {
                let j = reference_below(&mut plain, i as u64 + 1) as usize;
                expected.swap(i, j);
            }
            assert_eq!(items, expected, "{len} items");
        }
        assert_eq!(fast.below(1 << 40), reference_below(&mut plain, 1 << 40));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            rng_seed: proptest::test_runner::RngSeed::Fixed(0),
            ..proptest::prelude::ProptestConfig::default()
        })]
        #[test]
        fn reciprocal_remainder_is_the_remainder(
            n in proptest::prelude::any::<u64>(),
            divisor in 2..=u64::MAX,
            small in 2..=200_001u64,
        ) {
            for d in [divisor, small] {
                proptest::prop_assert_eq!(Reciprocal::of(d).remainder(n), n % d);
            }
        }
    }

    #[test]
    fn reciprocal_remainder_at_the_edges() {
        let numerators = [
            0,
            1,
            2,
            39_999,
            40_000,
            u64::MAX / 2,
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut divisors = vec![2, 3, 5, 7, 40_000, 99_999, 100_000, 100_001, u64::MAX];
        divisors.extend((1..64).map(|k| 1u64 << k));
        divisors.extend((2..64).map(|k| (1u64 << k) - 1));
        divisors.extend((2..64).map(|k| (1u64 << k) + 1));
        for &d in &divisors {
            let reciprocal = Reciprocal::of(d);
            for &n in &numerators {
                assert_eq!(reciprocal.remainder(n), n % d, "{n} % {d}");
            }
            // The multiples of d and their neighbours, where the fraction
            // is closest to wrapping.
            for q in [1, 2, 3, u64::MAX / d - 1, u64::MAX / d] {
                let Some(multiple) = q.checked_mul(d) else {
                    continue;
                };
                for n in [
                    multiple.saturating_sub(1),
                    multiple,
                    multiple.saturating_add(1),
                ] {
                    assert_eq!(reciprocal.remainder(n), n % d, "{n} % {d}");
                }
            }
        }
    }

    #[test]
    fn chance_follows_its_probability() {
        let mut rng = SimRng::new(5, Stream::PublishFailure);
        let hits = (0..10_000).filter(|_| rng.chance(0.05)).count();
        assert!((400..600).contains(&hits), "{hits} of 10,000 at p = 0.05");
        assert!((0..1_000).all(|_| rng.chance(1.0)));
    }

    #[test]
    fn shuffle_is_a_permutation() {
        let mut rng = SimRng::new(3, Stream::NodeShuffle);
        let mut items: Vec<u32> = (0..50).collect();
        rng.shuffle(&mut items);
        let mut sorted = items.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..50).collect::<Vec<_>>());
        assert_ne!(items, sorted, "50 items almost surely move");
    }
}
