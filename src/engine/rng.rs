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
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// A uniform integer in `0..bound` (bound > 0) from a ChaCha8 stream, by
/// rejection sampling so no value is favoured. Written here, not taken from
/// `rand`, so the draws never change with a `rand` upgrade.
pub fn uniform_below(rng: &mut ChaCha8Rng, bound: u64) -> u64 {
    assert!(bound > 0, "empty range");
    // Draws at or above `zone` are rejected. Since `u64::MAX % bound` is
    // below `bound`, every draw up to `u64::MAX - bound` is below `zone`:
    // those (all but a 2^-64 * bound sliver) skip the second division that
    // computing `zone` costs (a shuffle of 40,000 nodes draws 40,000 times).
    let surely_accepted = u64::MAX - bound;
    let mut zone = None;
    loop {
        let draw = rng.next_u64();
        if draw <= surely_accepted
            || draw < *zone.get_or_insert_with(|| u64::MAX - (u64::MAX % bound))
        {
            return draw % bound;
        }
    }
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
