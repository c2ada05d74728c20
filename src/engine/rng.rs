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
}

pub struct SimRng {
    inner: ChaCha8Rng,
}

impl SimRng {
    pub fn new(seed: u64, stream: Stream) -> Self {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        key[8..16].copy_from_slice(&(stream as u64).to_le_bytes());
        SimRng {
            inner: ChaCha8Rng::from_seed(key),
        }
    }

    /// A uniform integer in `0..bound` (bound > 0), by rejection sampling so
    /// no value is favoured.
    pub fn below(&mut self, bound: u64) -> u64 {
        uniform_below(&mut self.inner, bound)
    }

    /// Fisher-Yates, written here so the order never changes with a `rand` upgrade.
    ///
    /// Every evaluation shuffles every candidate node (40,000 draws on a
    /// 40,000-node cluster), so the loop is [`uniform_below`] unrolled for
    /// its common case: a draw at or below `u64::MAX - bound` is always
    /// accepted, and only the rare draw above it (a chance of `bound` in
    /// 2^64) takes the rejection path, which consumes the stream exactly as
    /// `uniform_below` does.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let bound = i as u64 + 1;
            let draw = self.inner.next_u64();
            let j = if draw <= u64::MAX - bound {
                draw % bound
            } else {
                accept_or_redraw(&mut self.inner, bound, draw)
            };
            items.swap(i, j as usize);
        }
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
        let mut items: Vec<u32> = (0..1_000).collect();
        let mut expected = items.clone();
        fast.shuffle(&mut items);
        for i in (1..expected.len()).rev() {
            let j = reference_below(&mut plain, i as u64 + 1) as usize;
            expected.swap(i, j);
        }
        assert_eq!(items, expected);
        assert_eq!(fast.below(1 << 40), reference_below(&mut plain, 1 << 40));
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
