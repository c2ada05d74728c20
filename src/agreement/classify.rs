//! One class per (scenario, policy): how plansim's outcome set compares
//! with Nomad's. Sets, not frequencies: an outcome counts once it occurs;
//! its frequency only decides whether a one-sided outcome is `rare`.
//! Every failure line is compared (nothing dropped).

use std::collections::{BTreeMap, BTreeSet};

use super::outcome::{Dist, Outcome, OutcomeSet};

/// Share of seeds under which an outcome seen on one side only is `rare`.
pub const RARE_CUT: f64 = 0.05;

/// Most distinct dist supports per side for which the supports are
/// compared as sets; past that, per value means are compared.
const MAX_SUPPORT: usize = 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// The outcome sets are equal, and so is the per-dc/rack support.
    Agree,
    /// Placements and failure counts agree; failure lines differ.
    Wording,
    /// Placed counts agree; which groups are reported failed, or how many
    /// allocations they leave unplaced, differs.
    Report,
    /// Outcome sets agree; the per-dc/rack placement support differs.
    Dist,
    /// Placements differ only by outcomes under [`RARE_CUT`] of the seeds
    /// on one side.
    Rare,
    /// The placement outcome sets differ, or one side only rejects.
    Real,
    /// Nomad could not build the state.
    Skipped,
}

impl Class {
    pub const ALL: [Class; 7] = [
        Class::Agree,
        Class::Wording,
        Class::Report,
        Class::Dist,
        Class::Rare,
        Class::Real,
        Class::Skipped,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Class::Agree => "agree",
            Class::Wording => "wording",
            Class::Report => "report",
            Class::Dist => "dist",
            Class::Rare => "rare",
            Class::Real => "real",
            Class::Skipped => "skipped",
        }
    }

    pub fn from_name(name: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|class| class.name() == name)
    }
}

impl std::fmt::Display for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Counts of keys of one side's outcomes.
type Counter<K> = BTreeMap<K, u64>;

/// An outcome reduced by `reduce`, counts summed.
fn reduced<K: Ord>(set: &OutcomeSet, reduce: impl Fn(&Outcome) -> K) -> Counter<K> {
    let mut out = Counter::new();
    for (outcome, &count) in &set.outcomes {
        *out.entry(reduce(outcome)).or_default() += count;
    }
    out
}

/// Placed and update only.
fn update_key(outcome: &Outcome) -> Outcome {
    match outcome {
        Outcome::Ran(p) => {
            let mut p = p.clone();
            p.failures.clear();
            Outcome::Ran(p)
        }
        Outcome::Rejected => Outcome::Rejected,
        Outcome::Error(_) => Outcome::Error(String::new()),
    }
}

/// Placed, update and the failed groups with their counts, no lines.
fn placement_key(outcome: &Outcome) -> Outcome {
    match outcome {
        Outcome::Ran(p) => {
            let mut p = p.clone();
            for failure in &mut p.failures {
                failure.lines.clear();
            }
            Outcome::Ran(p)
        }
        Outcome::Rejected => Outcome::Rejected,
        Outcome::Error(_) => Outcome::Error(String::new()),
    }
}

fn keys<K: Ord + Clone>(counter: &Counter<K>) -> BTreeSet<K> {
    counter.keys().cloned().collect()
}

/// The largest share of seeds of an outcome `a` has and `b` lacks.
fn one_sided<K: Ord>(a: &Counter<K>, b: &Counter<K>, seeds: u64) -> f64 {
    a.iter()
        .filter(|(key, _)| !b.contains_key(key))
        .map(|(_, &count)| count as f64 / seeds as f64)
        .fold(0.0, f64::max)
}

fn both_ways<K: Ord>(n: &Counter<K>, p: &Counter<K>, sn: u64, sp: u64) -> f64 {
    one_sided(n, p, sn).max(one_sided(p, n, sp))
}

/// Whether every outcome is a rejection (at least one rejection message).
fn all_rejected(set: &OutcomeSet) -> bool {
    !set.rejected.is_empty() && set.outcomes.keys().all(|o| !matches!(o, Outcome::Ran(_)))
}

/// Classes Nomad's set `nomad` against plansim's `plansim`, with a detail.
pub fn classify(nomad: &OutcomeSet, plansim: &OutcomeSet) -> (Class, String) {
    if !nomad.error.is_empty() {
        return (Class::Skipped, "Nomad refused the setup".to_string());
    }
    let nomad_rejects =
        nomad.outcomes.keys().all(|o| *o == Outcome::Rejected) || all_rejected(nomad);
    let plansim_rejects = all_rejected(plansim);
    if nomad_rejects && plansim_rejects {
        return (Class::Agree, "both rejected".to_string());
    }
    if nomad_rejects != plansim_rejects {
        return (Class::Real, "rejection differs".to_string());
    }
    let (sn, sp) = (nomad.seeds, plansim.seeds);
    if keys(&nomad.outcomes) == keys(&plansim.outcomes) {
        return compare_dist(&nomad.dist_support, &plansim.dist_support, sn, sp);
    }
    let (un, up) = (reduced(nomad, update_key), reduced(plansim, update_key));
    let share = both_ways(&un, &up, sn, sp);
    if keys(&un) != keys(&up) {
        return if share < RARE_CUT {
            let detail = format!(
                "placement outcomes seen on one side only, at most {:.1}%",
                share * 100.0
            );
            (Class::Rare, detail)
        } else {
            let detail = format!(
                "placement outcome sets differ (one-sided outcome at {:.0}%)",
                share * 100.0
            );
            (Class::Real, detail)
        };
    }
    if keys(&reduced(nomad, placement_key)) == keys(&reduced(plansim, placement_key)) {
        let detail = "failure lines differ, placements agree".to_string();
        return (Class::Wording, detail);
    }
    let detail = "placements agree; the failed groups or counts reported differ".to_string();
    (Class::Report, detail)
}

/// The per-dc/rack supports: as sets when each side has few, else every
/// per-value mean within max(1, 15 %).
fn compare_dist(dn: &Counter<Dist>, dp: &Counter<Dist>, sn: u64, sp: u64) -> (Class, String) {
    if dn.is_empty() || dp.is_empty() {
        return (Class::Agree, String::new());
    }
    if dn.len() <= MAX_SUPPORT && dp.len() <= MAX_SUPPORT {
        let share = both_ways(dn, dp, sn, sp);
        if share < RARE_CUT {
            return (Class::Agree, String::new());
        }
        let detail = format!(
            "per-dc/rack support differs (one-sided outcome at {:.0}%)",
            share * 100.0
        );
        return (Class::Dist, detail);
    }
    let (mn, mp) = (means(dn, sn), means(dp, sp));
    let value = |m: &BTreeMap<_, f64>, key| m.get(key).copied().unwrap_or(0.0);
    let worst = mn
        .keys()
        .chain(mp.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|key| (key, value(&mn, key), value(&mp, key)))
        .filter(|&(_, n, p)| (n - p).abs() > f64::max(1.0, 0.15 * n.max(p)))
        .max_by(|a, b| {
            (a.1 - a.2)
                .abs()
                .total_cmp(&(b.1 - b.2).abs())
                .then(a.0.cmp(b.0))
        });
    match worst {
        None => (Class::Agree, String::new()),
        Some(((job, group, what, v), n, p)) => {
            let detail = format!(
                "mean placements differ at ({job}, {group}, {what}, {v}): nomad {n:.1} plansim {p:.1}"
            );
            (Class::Dist, detail)
        }
    }
}

/// Mean placements per (job, group, "dc" | "rack", value) over `seeds`.
fn means(
    support: &Counter<Dist>,
    seeds: u64,
) -> BTreeMap<(String, String, &'static str, String), f64> {
    let mut out = BTreeMap::new();
    for (dist, &count) in support {
        for entry in dist {
            for (what, values) in [("dc", &entry.2), ("rack", &entry.3)] {
                for (value, &placed) in values {
                    let key = (entry.0.clone(), entry.1.clone(), what, value.clone());
                    *out.entry(key).or_insert(0.0) += (placed * count) as f64 / seeds as f64;
                }
            }
        }
    }
    out
}
