//! A corpus folder: `scenarios/*.yaml` and one `expected-nomad-*.json` per
//! Nomad release, each naming the plansim policy that models it. Running
//! it classes every (scenario, policy); the known differences are the
//! ratchet a test holds the results to.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::classify::{Class, RESAMPLE_SEEDS, classify, classify_resampled};
use super::expected::Expected;
use super::outcome::plansim_outcomes;
use crate::model::policy::Policy;

/// One (scenario, policy) compared.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub corpus: String,
    pub scenario: String,
    pub kind: String,
    pub policy: Policy,
    pub nomad_release: String,
    pub class: Class,
    pub detail: String,
    /// Classed from plansim's rerun at [`RESAMPLE_SEEDS`], the first
    /// comparison having left a difference.
    pub resampled: bool,
}

impl Verdict {
    /// Its line in a known-differences file: `corpus scenario policy class`
    /// then the detail as the reason.
    pub fn known_line(&self) -> String {
        format!(
            "{} {} {} {}  {}",
            self.corpus, self.scenario, self.policy, self.class, self.detail
        )
        .trim_end()
        .to_string()
    }

    /// The part of [`Verdict::known_line`] compared: the first four fields.
    pub fn known_key(&self) -> String {
        format!(
            "{} {} {} {}",
            self.corpus, self.scenario, self.policy, self.class
        )
    }
}

/// The corpus folders under `root` (each a directory with `scenarios/`
/// and at least one expected file), sorted.
pub fn corpora(root: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(root).map_err(|err| format!("{}: {err}", root.display()))?;
    let mut out: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.join("scenarios").is_dir())
        .collect();
    out.sort();
    Ok(out)
}

/// The expected files of a corpus, sorted by name.
fn expected_files(corpus: &Path) -> Result<Vec<PathBuf>, String> {
    let entries =
        std::fs::read_dir(corpus).map_err(|err| format!("{}: {err}", corpus.display()))?;
    let mut out: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("expected-nomad-") && n.ends_with(".json"))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Every (scenario, policy) of the corpus at `dir`, classed, sorted by
/// scenario then policy. Runs in parallel; the result does not depend on
/// the thread count.
pub fn run_corpus(dir: &Path) -> Result<Vec<Verdict>, String> {
    let corpus = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut work = Vec::new();
    for file in expected_files(dir)? {
        let text =
            std::fs::read_to_string(&file).map_err(|err| format!("{}: {err}", file.display()))?;
        let expected =
            Expected::parse(&text).map_err(|err| format!("{}: {err}", file.display()))?;
        let policy = Policy::from_name(&expected.plansim_policy).ok_or_else(|| {
            format!(
                "{}: unknown plansim_policy {:?}",
                file.display(),
                expected.plansim_policy
            )
        })?;
        for (name, scenario) in expected.scenarios {
            let path = dir.join("scenarios").join(format!("{name}.yaml"));
            if !path.is_file() {
                return Err(format!("{}: no scenario file for {name}", path.display()));
            }
            work.push((name, scenario, policy, expected.nomad_release.clone(), path));
        }
    }
    if work.is_empty() {
        return Err(format!("{}: no expected-nomad-*.json", dir.display()));
    }
    let mut verdicts: Vec<Verdict> = work
        .into_par_iter()
        .map(|(name, expected, policy, nomad_release, path)| {
            let plansim = plansim_outcomes(&path, policy, expected.nomad.seeds);
            let (mut class, mut detail) = classify(&expected.nomad, &plansim);
            let resampled = !matches!(class, Class::Agree | Class::Skipped);
            if resampled {
                // The corpus README's rule: rerun before calling it a
                // difference (only plansim's side can be rerun here).
                let rerun = plansim_outcomes(&path, policy, RESAMPLE_SEEDS);
                (class, detail) = classify_resampled(&expected.nomad, &rerun);
            }
            Verdict {
                corpus: corpus.clone(),
                scenario: name,
                kind: expected.kind,
                policy,
                nomad_release,
                class,
                detail,
                resampled,
            }
        })
        .collect();
    verdicts.sort_by(|a, b| (&a.scenario, a.policy).cmp(&(&b.scenario, b.policy)));
    Ok(verdicts)
}

/// The keys (`corpus scenario policy class`) of a known-differences file:
/// one per line, `#` comments and blank lines skipped, fields after the
/// fourth (the reason) ignored.
pub fn known_keys(text: &str) -> Result<BTreeSet<String>, String> {
    let mut out = BTreeSet::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().take(4).collect();
        let valid = fields.len() == 4
            && Policy::from_name(fields[2]).is_some()
            && Class::from_name(fields[3]).is_some();
        if !valid {
            return Err(format!(
                "line {}: expected `corpus scenario policy class [reason]`: {line}",
                number + 1
            ));
        }
        out.insert(fields.join(" "));
    }
    Ok(out)
}

/// A known-differences file listing every verdict that is not `agree`.
pub fn known_file(header: &str, verdicts: &[Verdict]) -> String {
    let mut out = String::from(header);
    for verdict in verdicts.iter().filter(|v| v.class != Class::Agree) {
        out.push_str(&verdict.known_line());
        out.push('\n');
    }
    out
}

/// How `verdicts` stand against the known keys: the disagreements not
/// listed, and the listed keys no verdict has any more (to delete).
pub fn against_known<'a>(
    verdicts: &'a [Verdict],
    known: &BTreeSet<String>,
) -> (Vec<&'a Verdict>, Vec<String>) {
    let current: BTreeSet<String> = verdicts
        .iter()
        .filter(|v| v.class != Class::Agree)
        .map(Verdict::known_key)
        .collect();
    let new = verdicts
        .iter()
        .filter(|v| v.class != Class::Agree && !known.contains(&v.known_key()))
        .collect();
    let stale = known.difference(&current).cloned().collect();
    (new, stale)
}

/// Class counts per policy and, per policy, per kind, as a table.
pub fn summary_table(verdicts: &[Verdict]) -> String {
    let mut per: BTreeMap<(Policy, String), BTreeMap<Class, u64>> = BTreeMap::new();
    for verdict in verdicts {
        for kind in ["(all)".to_string(), verdict.kind.clone()] {
            *per.entry((verdict.policy, kind))
                .or_default()
                .entry(verdict.class)
                .or_default() += 1;
        }
    }
    let mut out = format!("{:<10} {:<12}", "policy", "kind");
    for class in Class::ALL {
        out.push_str(&format!(" {:>8}", class.name()));
    }
    out.push('\n');
    for ((policy, kind), counts) in &per {
        out.push_str(&format!("{:<10} {kind:<12}", policy.name()));
        for class in Class::ALL {
            out.push_str(&format!(" {:>8}", counts.get(&class).copied().unwrap_or(0)));
        }
        out.push('\n');
    }
    let mut rerun: BTreeMap<Policy, u64> = BTreeMap::new();
    for verdict in verdicts
        .iter()
        .filter(|v| v.resampled && v.class == Class::Agree)
    {
        *rerun.entry(verdict.policy).or_default() += 1;
    }
    for (policy, count) in rerun {
        out.push_str(&format!(
            "{}: {count} of the agreeing cases agree once plansim is rerun at {RESAMPLE_SEEDS} seeds\n",
            policy.name()
        ));
    }
    out
}
