//! The hunt's random numbers: one ChaCha8 stream per (hunt seed, scenario
//! index, purpose), so scenario `i` is the same whichever thread makes it
//! and whatever was drawn for scenario `i - 1`.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// What a stream is for; part of the key, so generating and mutating never
/// share numbers.
#[derive(Clone, Copy, Debug)]
pub enum Purpose {
    Generate = 1,
    Mutate = 2,
    /// System jobs, plugin jobs and drains with a strategy, drawn apart so
    /// that the scenarios without them stay as they were.
    Workloads = 3,
}

pub struct HuntRng {
    inner: ChaCha8Rng,
}

impl HuntRng {
    pub fn new(seed: u64, index: u64, purpose: Purpose) -> Self {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        key[8..16].copy_from_slice(&index.to_le_bytes());
        key[16..24].copy_from_slice(&(purpose as u64).to_le_bytes());
        // Distinct from the simulation's own streams (engine::rng), whose
        // keys end in zeros.
        key[24..].copy_from_slice(b"plhunt\0\0");
        HuntRng {
            inner: ChaCha8Rng::from_seed(key),
        }
    }

    /// A uniform integer in `0..bound` (bound > 0): the engine's sampling.
    pub fn below(&mut self, bound: u64) -> u64 {
        crate::engine::rng::uniform_below(&mut self.inner, bound)
    }

    /// A uniform integer in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// An index drawn with the given weights (not all zero).
    pub fn weighted(&mut self, weights: &[u64]) -> usize {
        let total: u64 = weights.iter().sum();
        let mut draw = self.below(total);
        for (i, &w) in weights.iter().enumerate() {
            if draw < w {
                return i;
            }
            draw -= w;
        }
        unreachable!("draw < total")
    }

    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_depend_on_seed_index_and_purpose_only() {
        let draw = |seed, index, purpose| {
            let mut rng = HuntRng::new(seed, index, purpose);
            (0..8).map(|_| rng.below(1000)).collect::<Vec<_>>()
        };
        assert_eq!(draw(1, 2, Purpose::Generate), draw(1, 2, Purpose::Generate));
        assert_ne!(draw(1, 2, Purpose::Generate), draw(1, 3, Purpose::Generate));
        assert_ne!(draw(1, 2, Purpose::Generate), draw(2, 2, Purpose::Generate));
        assert_ne!(draw(1, 2, Purpose::Generate), draw(1, 2, Purpose::Mutate));
    }

    #[test]
    fn weighted_never_picks_a_zero_weight() {
        let mut rng = HuntRng::new(0, 0, Purpose::Generate);
        for _ in 0..1000 {
            assert_ne!(rng.weighted(&[3, 0, 1]), 1);
        }
    }
}
