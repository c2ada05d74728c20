//! The documentation in the repository is complete and true: every field the
//! loaders accept is in docs/, every output file and column is described,
//! README's links resolve and the numbers it quotes are the committed
//! results'.

mod common;

use std::collections::{BTreeMap, BTreeSet};

fn read(relative: &str) -> String {
    std::fs::read_to_string(common::repo_path(relative))
        .unwrap_or_else(|e| panic!("{relative}: {e}"))
}

// ---------------------------------------------------------------------------
// The fields the loaders accept, read from the serde structs' source.
// ---------------------------------------------------------------------------

/// One serde type of a loader source file.
#[derive(Debug)]
enum Item {
    /// A struct with named fields: (name as written in YAML, type,
    /// flattened), and whether it derives `Deserialize`.
    Struct(Vec<(String, String, bool)>, bool),
    /// An enum: the types inside its variants (tuple variants), and the
    /// fields of struct variants. Unit variants are values, not fields.
    Enum {
        wrapped: Vec<String>,
        fields: Vec<(String, String, bool)>,
    },
    /// A tuple struct (`RawDuration(Millis)`): a value.
    Value,
}

/// Drops comments (`// ...` outside string literals).
fn strip_comments(source: &str) -> String {
    source
        .lines()
        .map(|line| {
            let mut in_string = false;
            let mut prev = ' ';
            for (at, c) in line.char_indices() {
                if c == '"' && prev != '\\' {
                    in_string = !in_string;
                }
                if !in_string && c == '/' && prev == '/' {
                    return &line[..at - 1];
                }
                prev = c;
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Splits on `sep` outside any (), <>, [], {} and string literal.
fn split_top(text: &str, sep: char) -> Vec<String> {
    let (mut parts, mut current, mut depth, mut in_string) =
        (Vec::new(), String::new(), 0i32, false);
    let mut prev = ' ';
    for c in text.chars() {
        match c {
            '"' if prev != '\\' => in_string = !in_string,
            '(' | '<' | '[' | '{' if !in_string => depth += 1,
            ')' | ']' | '}' if !in_string => depth -= 1,
            '>' if !in_string && prev != '-' && prev != '=' => depth -= 1,
            _ => {}
        }
        if c == sep && depth == 0 && !in_string {
            parts.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
        prev = c;
    }
    parts.push(current);
    parts.into_iter().filter(|p| !p.trim().is_empty()).collect()
}

/// The text between the bracket at `open` and its partner.
fn bracketed(text: &str, open: usize) -> &str {
    let (opener, closer) = match text.as_bytes()[open] {
        b'{' => ('{', '}'),
        _ => ('(', ')'),
    };
    let mut depth = 0;
    for (at, c) in text[open..].char_indices() {
        if c == opener {
            depth += 1;
        } else if c == closer {
            depth -= 1;
            if depth == 0 {
                return &text[open + 1..open + at];
            }
        }
    }
    panic!("unbalanced {opener}");
}

/// `#[serde(...)]` attributes of a piece, and the rest of it.
fn attributes(piece: &str) -> (Vec<String>, String) {
    let mut attrs = Vec::new();
    let mut rest = piece.trim();
    while let Some(after) = rest.strip_prefix("#[") {
        let end = after.find(']').expect("an attribute ends");
        attrs.push(after[..end].to_string());
        rest = after[end + 1..].trim_start();
    }
    (attrs, rest.to_string())
}

/// A value of `key = "value"` inside a serde attribute.
fn serde_value(attrs: &[String], key: &str) -> Option<String> {
    attrs
        .iter()
        .filter(|a| a.starts_with("serde("))
        .find_map(|a| {
            let at = a.find(&format!("{key} = \""))? + key.len() + 4;
            Some(a[at..].split('"').next()?.to_string())
        })
}

fn has_serde_flag(attrs: &[String], flag: &str) -> bool {
    attrs
        .iter()
        .filter(|a| a.starts_with("serde("))
        .any(|a| a[6..a.len() - 1].split(',').any(|part| part.trim() == flag))
}

/// Named fields: (YAML name, type, flattened), honouring `rename`,
/// `rename_all` and `skip`.
fn named_fields(body: &str, rename_all: Option<&str>) -> Vec<(String, String, bool)> {
    split_top(body, ',')
        .iter()
        .filter_map(|piece| {
            let (attrs, rest) = attributes(piece);
            if has_serde_flag(&attrs, "skip") || has_serde_flag(&attrs, "skip_deserializing") {
                return None;
            }
            let rest = rest.trim().strip_prefix("pub ").unwrap_or(rest.trim());
            let (name, ty) = rest.split_once(':')?;
            let name = name.trim().trim_start_matches("r#").to_string();
            let name = serde_value(&attrs, "rename").unwrap_or_else(|| match rename_all {
                Some("kebab-case") => name.replace('_', "-"),
                Some("lowercase") => name.to_lowercase(),
                _ => name,
            });
            Some((
                name,
                ty.trim().to_string(),
                has_serde_flag(&attrs, "flatten"),
            ))
        })
        .collect()
}

/// Every struct and enum of a source file, by name.
fn serde_items(source: &str) -> BTreeMap<String, Item> {
    let source = strip_comments(source);
    let mut items = BTreeMap::new();
    let mut rest = source.as_str();
    loop {
        let next = ["struct ", "enum "]
            .iter()
            .filter_map(|kw| {
                let mut from = 0;
                // A keyword at the start of a line or after `pub `.
                while let Some(at) = rest[from..].find(kw) {
                    let at = from + at;
                    let before = rest[..at].trim_end_matches("pub ").chars().last();
                    if matches!(before, None | Some('\n') | Some(' ') | Some(']'))
                        && (at == 0 || !rest.as_bytes()[at - 1].is_ascii_alphanumeric())
                    {
                        return Some((at, *kw));
                    }
                    from = at + kw.len();
                }
                None
            })
            .min();
        let Some((at, kw)) = next else { break };
        // The attributes just before the item (rename_all).
        let head = &rest[..at];
        let attrs_start = head.rfind(['}', ';']).map_or(0, |i| i + 1);
        let (attrs, _) = attributes(head[attrs_start..].trim_start());
        let rename_all = serde_value(&attrs, "rename_all");
        let derived = attrs
            .iter()
            .any(|a| a.starts_with("derive(") && a.contains("Deserialize"));
        let after = &rest[at + kw.len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let open = after.find(['{', '(', ';']).expect("an item body");
        let end;
        match after.as_bytes()[open] {
            b';' => {
                end = open + 1;
                items.insert(name, Item::Value);
            }
            b'(' => {
                end = open + bracketed(after, open).len() + 2;
                items.insert(name, Item::Value);
            }
            _ => {
                let body = bracketed(after, open);
                end = open + body.len() + 2;
                if kw == "struct " {
                    items.insert(
                        name,
                        Item::Struct(named_fields(body, rename_all.as_deref()), derived),
                    );
                } else {
                    let mut wrapped = Vec::new();
                    let mut fields = Vec::new();
                    for variant in split_top(body, ',') {
                        let (_, variant) = attributes(&variant);
                        if let Some(open) = variant.find(['(', '{']) {
                            let inner = bracketed(&variant, open);
                            if variant.as_bytes()[open] == b'(' {
                                wrapped.extend(
                                    split_top(inner, ',')
                                        .into_iter()
                                        .map(|t| t.trim().to_string()),
                                );
                            } else {
                                fields.extend(named_fields(inner, None));
                            }
                        }
                    }
                    items.insert(name, Item::Enum { wrapped, fields });
                }
            }
        }
        rest = &after[end.min(after.len())..];
    }
    items
}

/// Peels a field type down to the serde item it holds, with the path
/// suffix its containers add: `Vec<..>` an item `[]`, a map an entry
/// `.<name>`; `Option`, `Spanned` and `Box` add nothing.
fn peel(ty: &str) -> (String, String) {
    let ty = ty.trim();
    for wrapper in ["Option<", "Spanned<", "Box<"] {
        if let Some(inner) = ty.strip_prefix(wrapper) {
            return peel(&inner[..inner.len() - 1]);
        }
    }
    if let Some(inner) = ty.strip_prefix("Vec<") {
        let (suffix, item) = peel(&inner[..inner.len() - 1]);
        return (format!("[]{suffix}"), item);
    }
    if let Some(inner) = ty.strip_prefix("BTreeMap<") {
        let parts = split_top(&inner[..inner.len() - 1], ',');
        let (suffix, item) = peel(parts.last().expect("a map value type"));
        return (format!(".<name>{suffix}"), item);
    }
    (
        String::new(),
        ty.rsplit("::").next().unwrap_or(ty).to_string(),
    )
}

/// Every field path the loader accepts, walking from `root`; also returns
/// the structs never reached (a sign the walk missed a container).
fn field_paths(source: &str, root: &str) -> (BTreeSet<String>, Vec<String>) {
    let items = serde_items(source);
    let mut paths = BTreeSet::new();
    let mut reached = BTreeSet::new();
    fn walk(
        items: &BTreeMap<String, Item>,
        name: &str,
        prefix: &str,
        paths: &mut BTreeSet<String>,
        reached: &mut BTreeSet<String>,
        depth: usize,
    ) {
        assert!(depth < 32, "{name}: recursive types are not walked");
        reached.insert(name.to_string());
        let fields_of = |fields: &[(String, String, bool)],
                         paths: &mut BTreeSet<String>,
                         reached: &mut BTreeSet<String>| {
            for (field, ty, flatten) in fields {
                let (suffix, inner) = peel(ty);
                if *flatten {
                    walk(items, &inner, prefix, paths, reached, depth + 1);
                    continue;
                }
                let path = if prefix.is_empty() {
                    field.clone()
                } else {
                    format!("{prefix}.{field}")
                };
                paths.insert(path.clone());
                if items.contains_key(&inner) {
                    walk(
                        items,
                        &inner,
                        &format!("{path}{suffix}"),
                        paths,
                        reached,
                        depth + 1,
                    );
                }
            }
        };
        match &items[name] {
            Item::Value => {}
            Item::Struct(fields, _) => fields_of(fields, paths, reached),
            Item::Enum { wrapped, fields } => {
                fields_of(fields, paths, reached);
                for ty in wrapped {
                    let (_, inner) = peel(ty);
                    if items.contains_key(&inner) {
                        walk(items, &inner, prefix, paths, reached, depth + 1);
                    }
                }
            }
        }
    }
    walk(&items, root, "", &mut paths, &mut reached, 0);
    let unreached = items
        .iter()
        .filter(|(name, item)| {
            !reached.contains(*name)
                && matches!(item, Item::Struct(fields, true) if !fields.is_empty())
        })
        .map(|(name, _)| name.clone())
        .collect();
    (paths, unreached)
}

/// The first cells of the tables whose header's first cell is `field`.
fn documented_fields(doc: &str) -> BTreeSet<String> {
    let mut fields = BTreeSet::new();
    let mut in_field_table = false;
    for line in doc.lines() {
        if !line.starts_with('|') {
            in_field_table = false;
            continue;
        }
        let first = line.split('|').nth(1).unwrap_or("").trim();
        if first == "field" {
            in_field_table = true;
        } else if in_field_table
            && let Some(name) = first.strip_prefix('`').and_then(|f| f.strip_suffix('`'))
        {
            fields.insert(name.to_string());
        }
    }
    fields
}

/// Checks a loader's fields against a document, both ways.
fn check_fields(source: &str, root: &str, doc_path: &str) -> usize {
    let (paths, unreached) = field_paths(&read(source), root);
    assert!(
        paths.len() > 5,
        "{source}: found only {paths:?}; is the parser broken?"
    );
    assert!(
        unreached.is_empty(),
        "{source}: structs not reachable from {root}: {unreached:?}; teach tests/docs.rs their container"
    );
    let doc = read(doc_path);
    let documented = documented_fields(&doc);
    let missing: Vec<&String> = paths.iter().filter(|p| !documented.contains(*p)).collect();
    assert!(
        missing.is_empty(),
        "{doc_path} lacks a row for these fields the loader accepts ({source}): {missing:?}\n\
         add a row `| \\`PATH\\` | type | default | unit | example | meaning |` to a field table"
    );
    let unknown: Vec<&String> = documented.iter().filter(|d| !paths.contains(*d)).collect();
    assert!(
        unknown.is_empty(),
        "{doc_path} documents fields the loader ({source}) does not accept: {unknown:?}"
    );
    paths.len()
}

/// Every field of src/scenario/raw.rs (walked from `RawScenario`, through
/// lists, maps, options and enums) has a row in docs/scenario-format.md,
/// and every row is a real field. A field added to raw.rs fails here until
/// it is documented.
#[test]
fn every_scenario_field_is_documented() {
    let count = check_fields(
        "src/scenario/raw.rs",
        "RawScenario",
        "docs/scenario-format.md",
    );
    assert!(count >= 70, "only {count} fields found");
}

#[test]
fn every_experiment_field_is_documented() {
    check_fields(
        "src/experiment/spec.rs",
        "RawExperiment",
        "docs/experiment-format.md",
    );
}

/// The walk itself: lists, maps, renames, flattening and untagged enums.
#[test]
fn the_field_walk_follows_containers() {
    let source = r#"
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct RawTop {
            pub a: Option<Vec<Spanned<RawItem>>>,
            #[serde(rename = "type")]
            pub kind: String, // a comment: not: a field
            pub m: BTreeMap<String, RawItem>,
            #[serde(flatten)]
            pub extra: RawExtra,
            pub entries: Vec<RawEntry>,
        }
        #[derive(Deserialize)]
        pub struct RawItem { pub x: u32, pub y: RawDuration }
        #[derive(Deserialize)]
        pub struct RawExtra { pub z: bool }
        #[serde(untagged)]
        pub enum RawEntry { File(RawFile), Inline(RawItem) }
        #[derive(Debug, Deserialize)]
        pub struct RawFile { pub file: String }
        #[derive(Deserialize)]
        pub struct RawOrphan { pub lost: u32 }
        pub struct RawDuration(pub Millis);
        #[serde(rename_all = "kebab-case")]
        pub enum Mode { FileSystem, BlockDevice }
    "#;
    let (paths, unreached) = field_paths(source, "RawTop");
    let expected: BTreeSet<String> = [
        "a",
        "a[].x",
        "a[].y",
        "type",
        "m",
        "m.<name>.x",
        "m.<name>.y",
        "z",
        "entries",
        "entries[].file",
        "entries[].x",
        "entries[].y",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(paths, expected);
    assert_eq!(
        unreached,
        ["RawOrphan"],
        "a serde struct no field leads to is reported"
    );
}

/// The complete example of docs/scenario-format.md loads.
#[test]
fn the_documented_example_loads() {
    let doc = read("docs/scenario-format.md");
    let start = doc.find("## A complete example").unwrap();
    let block = &doc[start..];
    let body_start = block.find("```yaml\n").unwrap() + "```yaml\n".len();
    let body = &block[body_start..body_start + block[body_start..].find("```").unwrap()];
    let scenario = common::load(body);
    assert_eq!(scenario.name, "my-scenario");
}

// ---------------------------------------------------------------------------
// Output files and columns.
// ---------------------------------------------------------------------------

fn header(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    reader.headers().unwrap().iter().map(String::from).collect()
}

/// Every file a run and a sweep write, and every column in them, is in
/// docs/results-format.md. The lists come from real outputs: the committed
/// results and a fresh traced run.
#[test]
fn every_output_file_and_column_is_documented() {
    let doc = read("docs/results-format.md");
    let mentioned = |token: &str| doc.contains(&format!("`{token}`"));
    let mut missing = Vec::new();

    let summary = header(&common::repo_path("results/summary.csv"));
    let metrics: Vec<String> = summary[3..summary.len() - 1].to_vec();
    for column in &summary {
        if !mentioned(column) {
            missing.push(format!("summary.csv column {column}"));
        }
    }
    for file in [
        "summary.csv",
        "comparison.md",
        "trace-<scenario>-<scheduler>-<seed>.csv",
    ] {
        if !mentioned(file) {
            missing.push(format!("file {file}"));
        }
    }
    let out = common::temp_dir("docs-trace");
    let output = common::plansim(&[
        "run",
        "scenarios/csi-single-reader-count2.yaml",
        "--scheduler",
        "naive",
        "-o",
        common::arg(&out),
        "--trace",
        "-q",
    ]);
    assert!(output.status.success());
    for column in header(&out.join("trace-csi-single-reader-count2-naive-7.csv")) {
        if !mentioned(&column) {
            missing.push(format!("trace column {column}"));
        }
    }
    std::fs::remove_dir_all(out).unwrap();

    let experiments = common::repo_path("results/experiments");
    let mut seen_files = BTreeSet::new();
    for entry in std::fs::read_dir(&experiments).unwrap() {
        let dir = entry.unwrap().path();
        let runs = header(&dir.join("runs.csv"));
        let vary: BTreeSet<String> = runs[summary.len()..].iter().cloned().collect();
        for name in std::fs::read_dir(&dir).unwrap() {
            let name = name.unwrap().file_name().into_string().unwrap();
            let path = dir.join(&name);
            let token = if path.is_dir() {
                format!("{name}/")
            } else {
                name.clone()
            };
            seen_files.insert(token.clone());
            if !mentioned(&token) {
                missing.push(format!("sweep output {token}"));
            }
            if name.ends_with(".csv") && !name.starts_with('.') {
                for column in header(&path) {
                    if vary.contains(&column) {
                        continue;
                    }
                    // `claim_failures_mean` is documented as `<metric>_mean`.
                    let generic = metrics.iter().find_map(|m| {
                        column
                            .strip_prefix(m.as_str())
                            .and_then(|rest| rest.strip_prefix('_'))
                            .filter(|stat| !stat.is_empty())
                            .map(|stat| format!("<metric>_{stat}"))
                    });
                    let documented =
                        mentioned(&column) || generic.as_deref().is_some_and(&mentioned);
                    if !documented {
                        missing.push(format!("{name} column {column}"));
                    }
                }
            }
        }
    }
    for expected in [
        "runs.csv",
        "aggregate-long.csv",
        "paired-pooled.csv",
        "index.html",
        "plots/",
    ] {
        assert!(
            seen_files.contains(expected),
            "the committed sweeps lack {expected}"
        );
    }
    assert!(
        missing.is_empty(),
        "docs/results-format.md lacks: {missing:?}"
    );
}

// ---------------------------------------------------------------------------
// README.
// ---------------------------------------------------------------------------

/// Relative link targets of Markdown `[text](target)` links and images.
fn relative_links(markdown: &str) -> Vec<String> {
    markdown
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(|target| target.split('#').next().unwrap_or("").to_string())
        .filter(|t| !t.is_empty() && !t.contains("://") && !t.starts_with("mailto:"))
        .collect()
}

/// Every document README names is in the repository, and README never
/// points outside it.
#[test]
fn readme_and_docs_links_resolve_inside_the_repository() {
    for (file, base) in [
        ("README.md", ""),
        ("docs/scenario-format.md", "docs/"),
        ("docs/results-format.md", "docs/"),
        ("docs/experiment-format.md", "docs/"),
    ] {
        let text = read(file);
        assert!(
            !text.contains("../shared"),
            "{file} points outside the repository"
        );
        for target in relative_links(&text) {
            let path = common::repo_path(&format!("{base}{target}"));
            assert!(
                path.exists(),
                "{file} links to {target}, which is not in the repository"
            );
        }
    }
    let readme = read("README.md");
    for doc in [
        "docs/scenario-format.md",
        "docs/results-format.md",
        "docs/experiment-format.md",
    ] {
        assert!(
            readme.contains(&format!("]({doc})")),
            "README does not link {doc}"
        );
    }
    for phrase in ["the spec ", "the spec.", "the contract"] {
        assert!(!readme.contains(phrase), "README speaks of \"{phrase}\"");
    }
}

/// README names and links the Nomad issue it reproduces and the fix, where
/// it first speaks of the report.
#[test]
fn readme_links_the_report_and_the_fix() {
    let readme = read("README.md");
    let report = "https://github.com/hashicorp/nomad/issues/10157";
    let fix = "https://github.com/hashicorp/nomad/pull/12337";
    let first_report = readme
        .find("the report")
        .expect("README speaks of the report");
    let paragraph_end = first_report + readme[first_report..].find("\n\n").unwrap_or(0);
    let paragraph_start = readme[..first_report].rfind("\n\n").unwrap_or(0);
    let paragraph = &readme[paragraph_start..paragraph_end];
    assert!(paragraph.contains(report), "{paragraph}");
    assert!(paragraph.contains(fix), "{paragraph}");
}

/// Installing is `cargo install --path . --locked`; the cluster examples
/// call the installed binary; the Kubernetes image is one the repository
/// builds.
#[test]
fn readme_installs_plansim_and_its_examples_use_it() {
    let readme = read("README.md");
    assert!(readme.contains("cargo install --path . --locked"));
    let start = readme.find("As a Slurm job array").unwrap();
    let end = start + readme[start..].find("`--resume` in each").unwrap();
    let examples = &readme[start..end];
    assert!(!examples.contains("cargo run"), "{examples}");
    assert!(examples.matches("plansim sweep").count() >= 2, "{examples}");
    assert!(examples.contains("command = \"plansim\""));
    let dockerfile = read("Dockerfile");
    assert!(dockerfile.contains("cargo install --path . --locked"));
    assert!(dockerfile.contains("COPY experiments /work/experiments"));
    let image = "registry.example/plansim:latest";
    assert!(
        examples.contains(&format!("docker build -t {image} .")),
        "README gives the image's build command"
    );
    assert!(examples.contains(&format!("image: {image}")));
    assert!(
        examples.contains("/work/experiments/"),
        "the image's experiments"
    );
}

/// No file of the repository names the package registry's host.
#[test]
fn no_file_names_the_package_registry_host() {
    let host = ["crates", "io"].join(".");
    let mut offenders = Vec::new();
    fn walk(dir: &std::path::Path, host: &str, offenders: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !matches!(name.as_str(), "target" | ".git") {
                    walk(&path, host, offenders);
                }
            } else if name != "Cargo.lock"
                && std::fs::read_to_string(&path).is_ok_and(|text| text.contains(host))
            {
                offenders.push(path.display().to_string());
            }
        }
    }
    walk(&common::repo_path(""), &host, &mut offenders);
    assert!(
        offenders.is_empty(),
        "these files name the registry host: {offenders:?}"
    );
}

#[path = "docs/readme_numbers.rs"]
mod readme_numbers;
