//! Run numbering: every run of an experiment has one index, from which its
//! grid point, policy and seed follow. Shards and resumption work on indices,
//! so no run depends on which worker or machine did it, or when.

use super::spec::Experiment;
use crate::model::policy::Policy;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunCoord {
    pub point: usize,
    pub policy: Policy,
    pub seed: u64,
}

/// Run `index` of the experiment: points, then policies, then seeds.
pub fn coord(experiment: &Experiment, index: usize) -> RunCoord {
    let seeds = experiment.seeds.len();
    let policies = experiment.policies.len();
    RunCoord {
        point: index / (policies * seeds),
        policy: experiment.policies[(index / seeds) % policies],
        seed: experiment.seeds[index % seeds],
    }
}

/// One of N disjoint slices of the runs (1-based, as `--shard I/N`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    pub const WHOLE: Shard = Shard { index: 1, count: 1 };

    /// Round-robin, so every shard gets a similar mix of grid points.
    pub fn owns(self, run: usize) -> bool {
        run % self.count == self.index - 1
    }

    pub fn parse(text: &str) -> Result<Shard, String> {
        let (index, count) = text
            .split_once('/')
            .ok_or_else(|| format!("shard \"{text}\": write I/N, e.g. 2/8"))?;
        let parse = |s: &str| {
            s.trim()
                .parse::<usize>()
                .map_err(|_| format!("shard \"{text}\": I and N are whole numbers"))
        };
        let (index, count) = (parse(index)?, parse(count)?);
        if count == 0 || index == 0 || index > count {
            return Err(format!("shard \"{text}\": need 1 <= I <= N"));
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_the_runs() {
        for count in 1..6 {
            for run in 0..50 {
                let owners = (1..=count)
                    .filter(|&i| Shard { index: i, count }.owns(run))
                    .count();
                assert_eq!(owners, 1, "run {run} with {count} shards");
            }
        }
    }

    #[test]
    fn parses_shards() {
        assert_eq!(Shard::parse("2/8"), Ok(Shard { index: 2, count: 8 }));
        assert!(Shard::parse("0/8").is_err());
        assert!(Shard::parse("9/8").is_err());
        assert!(Shard::parse("1-8").is_err());
        assert!(Shard::parse("a/b").is_err());
    }
}
