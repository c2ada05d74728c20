//! plansim against Nomad's own scheduler: every corpus folder under
//! tests/fixtures/nomad-oracle/ (see its README.md), every scenario under
//! each policy an expected file names, classed by `plansim::agreement`.
//! Fails on any disagreement not listed in known-differences.txt, and on
//! any listed one that no longer occurs (so the list only shrinks).
//! `PLANSIM_ORACLE_WRITE_KNOWN=1` rewrites the list from the results.

// A test or example prints for the person running it; plansim's own
// shell prints only through cli::output (see clippy.toml).
#![allow(clippy::disallowed_macros)]

use std::path::PathBuf;

use plansim::agreement::{
    Verdict, against_known, corpora, known_file, known_keys, run_corpus, summary_table,
};

const HEADER: &str = "\
# Known disagreements with Nomad's scheduler: `corpus scenario policy class  reason`.
# Written by `PLANSIM_ORACLE_WRITE_KNOWN=1 cargo test --release --test nomad_oracle`;
# never edit by hand. tests/nomad_oracle.rs fails on a disagreement not listed here
# and on a line whose case now agrees (or changed class): the list only shrinks.
";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/nomad-oracle")
}

#[test]
fn plansim_agrees_with_nomad_except_the_known_differences() {
    let root = root();
    let dirs = corpora(&root).expect("the corpus folder");
    assert!(!dirs.is_empty(), "no corpus under {}", root.display());
    let verdicts: Vec<Verdict> = dirs
        .iter()
        .flat_map(|dir| run_corpus(dir).unwrap_or_else(|err| panic!("{err}")))
        .collect();
    println!("{}", summary_table(&verdicts));
    let known_path = root.join("known-differences.txt");
    if std::env::var_os("PLANSIM_ORACLE_WRITE_KNOWN").is_some() {
        std::fs::write(&known_path, known_file(HEADER, &verdicts)).expect("writing the list");
        println!("wrote {}", known_path.display());
        return;
    }
    let text = std::fs::read_to_string(&known_path).unwrap_or_default();
    let known = known_keys(&text).unwrap_or_else(|err| panic!("{}: {err}", known_path.display()));
    let (new, stale) = against_known(&verdicts, &known);
    let mut message = String::new();
    if !new.is_empty() {
        message.push_str(&format!(
            "{} disagreement(s) with Nomad not in known-differences.txt:\n",
            new.len()
        ));
        for verdict in &new {
            message.push_str(&format!("  {}\n", verdict.known_line()));
        }
    }
    if !stale.is_empty() {
        message.push_str(&format!(
            "{} line(s) of known-differences.txt no longer occur (the case agrees or changed class); delete:\n",
            stale.len()
        ));
        for key in &stale {
            message.push_str(&format!("  {key}\n"));
        }
    }
    assert!(
        message.is_empty(),
        "{message}(regenerate the list with PLANSIM_ORACLE_WRITE_KNOWN=1 cargo test --release --test nomad_oracle)"
    );
}

/// The comparison has teeth on real data: set Nomad 1.2.6's outcome sets
/// against Nomad 2.0.5's (both measured, 100 seeds each), every scenario
/// where one release has a placement outcome in at least a fifth of its
/// seeds that the other never showed is classed a difference, even after
/// allowing for sampling.
#[test]
fn the_comparison_tells_the_two_nomad_releases_apart() {
    use plansim::agreement::{Class, Expected, classify_resampled};
    let dir = root().join("corpus-a");
    let read = |name: &str| {
        let text = std::fs::read_to_string(dir.join(name)).expect("an expected file");
        Expected::parse(&text).expect("a valid expected file")
    };
    let (old, new) = (
        read("expected-nomad-1.2.6.json"),
        read("expected-nomad-2.0.5.json"),
    );
    let mut clear = 0;
    let mut differing = 0;
    for (name, one) in &old.scenarios {
        let other = &new.scenarios[name].nomad;
        let (class, detail) = classify_resampled(&one.nomad, other);
        if class != Class::Agree {
            differing += 1;
        }
        let frequent_one_sided =
            |a: &plansim::agreement::OutcomeSet, b: &plansim::agreement::OutcomeSet| {
                a.outcomes
                    .iter()
                    .any(|(o, &count)| !b.outcomes.contains_key(o) && count * 5 >= a.seeds)
            };
        if frequent_one_sided(&one.nomad, other) || frequent_one_sided(other, &one.nomad) {
            clear += 1;
            assert_ne!(class, Class::Agree, "{name}: {detail}");
        }
    }
    assert!(clear > 0, "no scenario where the releases clearly differ");
    println!(
        "{differing} of {} scenarios differ between the releases ({clear} clearly)",
        old.scenarios.len()
    );
}
