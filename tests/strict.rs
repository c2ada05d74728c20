//! What `--strict` refuses: every field of Nomad's job specification is
//! read, skipped quietly or warned about, and the warned ones are exactly
//! the table in docs/scenario-format.md ("Fields plansim does not model").

mod common;

use std::collections::BTreeSet;

/// A warned field as the table names it: quoted labels and notes dropped,
/// the words joined by dots (`group "g" task "t" resources cores` is
/// `group.task.resources.cores`); any constraint is `constraint`.
fn table_key(item: &str) -> String {
    let mut text = String::new();
    let (mut quoted, mut depth) = (false, 0);
    for c in item.chars() {
        match c {
            '"' if depth == 0 => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => depth -= 1,
            _ if quoted || depth > 0 => {}
            _ => text.push(c),
        }
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.first() == Some(&"constraint") {
        return "constraint".to_string();
    }
    words.join(".")
}

/// The fields the warnings of `validate` on `scenario` name.
fn warned(scenario: &str) -> BTreeSet<String> {
    let output = common::plansim(&["validate", scenario]);
    assert!(output.status.success(), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    let mut keys = BTreeSet::new();
    for line in stderr.lines().filter(|l| l.starts_with("warning:")) {
        let list = line
            .split_once("ignores them: ")
            .expect("a warning lists what it ignores")
            .1;
        let list = list.trim_end_matches(" (an error under --strict)");
        for item in list.split("; ") {
            keys.insert(table_key(item));
        }
    }
    keys
}

/// The first column of the docs table.
fn documented() -> BTreeSet<String> {
    let docs = std::fs::read_to_string(common::repo_path("docs/scenario-format.md")).unwrap();
    let table = docs
        .split_once("### Fields plansim does not model")
        .expect("the section")
        .1;
    table
        .lines()
        .skip_while(|l| !l.starts_with("| Nomad field"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.split('`').nth(1).expect("a `field` cell").to_string())
        .collect()
}

#[test]
fn every_warned_field_is_in_the_docs_table_and_every_row_is_warned() {
    let warned = warned("tests/fixtures/nomad/strict/every-field.yaml");
    let documented = documented();
    assert_eq!(
        warned, documented,
        "warned (left) against docs/scenario-format.md's table (right)"
    );
}

#[test]
fn strict_refuses_what_it_warns_about() {
    let output = common::plansim(&[
        "validate",
        "--strict",
        "tests/fixtures/nomad/strict/every-field.yaml",
    ]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn keys_are_normalized_as_the_table_names_them() {
    assert_eq!(
        table_key("group \"g\" task \"t\" resources cores (line 146)"),
        "group.task.resources.cores"
    );
    assert_eq!(
        table_key("group \"g\" network (a second network block) (line 104)"),
        "group.network"
    );
    assert_eq!(
        table_key("constraint ${node.pool} = default (line 9)"),
        "constraint"
    );
}
