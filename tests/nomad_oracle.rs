//! plansim against Nomad's own scheduler: every corpus folder under
//! tests/fixtures/nomad-oracle/ (see its README.md), every scenario under
//! each policy an expected file names, classed by `plansim::agreement`.
//! Fails on any disagreement not listed in known-differences.txt, and on
//! any listed one that no longer occurs (so the list only shrinks).
//! `PLANSIM_ORACLE_WRITE_KNOWN=1` rewrites the list from the results.

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
