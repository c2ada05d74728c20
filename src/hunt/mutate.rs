//! `--from SCENARIO`: mutants of a given scenario. A mutant is the scenario
//! with a short list of changes an operator would expect its conclusions to
//! survive: another seed, one more node like an existing one, an event or a
//! submission moved, a cluster timing or the worker count changed. (Counts
//! are left alone: an `expect` block that says `placed: 2` rightly breaks
//! when a count changes, and says nothing about robustness.) For the
//! `expect` property the list itself is what shrinks (the smallest set of
//! changes that breaks the scenario's own `expect`).

use super::rng::{HuntRng, Purpose};
use crate::model::scenario::*;
use crate::model::time::Millis;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    Seed(u64),
    /// A copy of node `n` joins the cluster.
    CopyNode(usize),
    EventAt {
        event: usize,
        at: Millis,
    },
    SubmitAt {
        job: usize,
        at: Millis,
    },
    /// One of the cluster timings (`shrink`'s order: scheduler latency,
    /// pull delay, node detach, controller detach, claim free).
    Timing {
        which: usize,
        value: Millis,
    },
    Workers(u32),
}

const TIMINGS: [&str; 5] = [
    "scheduler_latency",
    "pull_delay",
    "node_detach_latency",
    "controller_detach_latency",
    "claim_free_latency",
];

impl Mutation {
    /// The change in words, naming what it touches in `base`.
    pub fn describe(&self, base: &Scenario) -> String {
        let node = |n: usize| base.nodes.get(n).map_or("?", |x| x.name.as_str());
        let job = |j: usize| base.jobs.get(j).map_or("?", |x| x.name.as_str());
        match self {
            Mutation::Seed(seed) => format!("seed {seed}"),
            Mutation::CopyNode(n) => format!("one more node like {}", node(*n)),
            Mutation::EventAt { event, at } => format!("events[{event}] at {at}s"),
            Mutation::SubmitAt { job: j, at } => format!("job {} submitted at {at}s", job(*j)),
            Mutation::Timing { which, value } => {
                format!("cluster.{} {value}s", TIMINGS[*which])
            }
            Mutation::Workers(n) => format!("scheduler_workers {n}"),
        }
    }
}

/// The mutations of mutant `index` of `base` under hunt seed `seed`: one to
/// three, drawn from what the scenario has.
pub fn mutations(base: &Scenario, seed: u64, index: u64) -> Vec<Mutation> {
    let mut rng = HuntRng::new(seed, index, Purpose::Mutate);
    let count = rng.range(1, 3);
    (0..count).filter_map(|_| one(&mut rng, base)).collect()
}

fn one(rng: &mut HuntRng, s: &Scenario) -> Option<Mutation> {
    let secs = |rng: &mut HuntRng, max: Millis| Millis::from_secs(rng.below(max.0 / 1000 + 1));
    Some(match rng.below(6) {
        0 => Mutation::Seed(rng.below(1_000_000)),
        1 if !s.nodes.is_empty() => Mutation::CopyNode(rng.index(s.nodes.len())),
        2 if !s.events.is_empty() => Mutation::EventAt {
            event: rng.index(s.events.len()),
            at: secs(rng, s.horizon),
        },
        3 if !s.jobs.is_empty() => Mutation::SubmitAt {
            job: rng.index(s.jobs.len()),
            at: secs(rng, s.horizon.min(Millis::from_secs(600))),
        },
        4 => Mutation::Timing {
            which: rng.index(TIMINGS.len()),
            value: Millis(rng.range(0, 50) * 100),
        },
        5 => Mutation::Workers(rng.range(1, 2) as u32),
        _ => return None,
    })
}

/// `base` with `mutations` applied in order; a mutation whose target a
/// previous one removed is skipped.
pub fn apply(base: &Scenario, mutations: &[Mutation]) -> Scenario {
    let mut s = base.clone();
    for mutation in mutations {
        match *mutation {
            Mutation::Seed(seed) => s.seed = seed,
            Mutation::CopyNode(n) if n < s.nodes.len() => {
                let mut copy = s.nodes[n].clone();
                let mut k = 1;
                while s
                    .nodes
                    .iter()
                    .any(|node| node.name == format!("{}-copy{k}", copy.name))
                {
                    k += 1;
                }
                copy.name = format!("{}-copy{k}", copy.name);
                s.nodes.push(copy);
            }
            // A move that would put an event about a job at or before its
            // submission is left out: no file can say it.
            Mutation::EventAt { event, at } if event < s.events.len() && at <= s.horizon => {
                let before = std::mem::replace(&mut s.events[event].at, at);
                if !s.events_follow_submissions() {
                    s.events[event].at = before;
                }
            }
            // A job with allocations at time 0 is submitted at 0.
            Mutation::SubmitAt { job, at }
                if job < s.jobs.len()
                    && at <= s.horizon
                    && !s
                        .initial_allocations
                        .iter()
                        .any(|a| a.group.job.index() == job) =>
            {
                let before = std::mem::replace(&mut s.jobs[job].submit_at, at);
                if !s.events_follow_submissions() {
                    s.jobs[job].submit_at = before;
                }
            }
            Mutation::Timing { which, value } => {
                *super::shrink::latency(&mut s.cluster, which) = value;
            }
            Mutation::Workers(n) => s.cluster.scheduler_workers = n.max(1),
            _ => {}
        }
    }
    // A moved update_job can change which version is which.
    super::retarget::refresh_derived(&mut s);
    // A moved dispatch or parent submission changes the children; a
    // mutant the loader would refuse is the scenario unmutated.
    super::retarget::normalized(s).unwrap_or_else(|| base.clone())
}

/// Drops mutations one at a time while `fails` holds, to a fixpoint: the
/// smallest list (in this greedy sense) that still breaks the property.
pub fn shrink_list(
    mut list: Vec<Mutation>,
    mut fails: impl FnMut(&[Mutation]) -> bool,
) -> (Vec<Mutation>, u32) {
    let mut checks = 0;
    let mut i = 0;
    while i < list.len() {
        let mut without = list.clone();
        without.remove(i);
        checks += 1;
        if fails(&without) {
            list = without;
        } else {
            i += 1;
        }
    }
    (list, checks)
}
