//! The layout's promises (ARCHITECTURE.md, "Invariants of the layout"),
//! checked on the source itself so that they hold after every change, not
//! only on the day they were written:
//! - no source file over `MAX_FILE_LINES` lines;
//! - no function over `MAX_FN_LINES` lines;
//! - no import circle between the files of `src/`.
//!
//! Files are parsed with `syn` (a real Rust parser: strings, comments and
//! raw strings cannot fool it the way a line scanner can be fooled).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The longest a source file may be.
const MAX_FILE_LINES: usize = 1_000;
/// The longest a function may be, from `fn` to its closing brace.
const MAX_FN_LINES: usize = 150;
/// The folders whose `.rs` files the size limits cover.
const SOURCE_FOLDERS: [&str; 5] = ["src", "tests", "benches", "examples", "fuzz/fuzz_targets"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file below `dir`, sorted, paths relative to the repository.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a readable directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                found.push(
                    path.strip_prefix(root())
                        .expect("below the root")
                        .to_path_buf(),
                );
            }
        }
    }
    found.sort();
    found
}

fn read(relative: &Path) -> String {
    std::fs::read_to_string(root().join(relative)).expect("a readable source file")
}

fn parse(relative: &Path) -> syn::File {
    syn::parse_file(&read(relative))
        .unwrap_or_else(|error| panic!("{}: does not parse: {error}", relative.display()))
}

#[test]
fn no_source_file_is_over_the_line_limit() {
    let mut over = String::new();
    for folder in SOURCE_FOLDERS {
        for file in rust_files(&root().join(folder)) {
            let lines = read(&file).lines().count();
            if lines > MAX_FILE_LINES {
                writeln!(over, "{}: {lines} lines", file.display()).unwrap();
            }
        }
    }
    assert!(
        over.is_empty(),
        "files over {MAX_FILE_LINES} lines:\n{over}"
    );
}

/// Collects each function's length: free functions, methods and trait
/// methods with a body, nested ones included.
#[derive(Default)]
struct FunctionLengths {
    found: Vec<(String, usize, usize)>,
}

impl FunctionLengths {
    fn note(&mut self, name: &syn::Ident, fn_token: &syn::token::Fn, block: &syn::Block) {
        let start = fn_token.span.start().line;
        let end = block.brace_token.span.close().end().line;
        self.found.push((name.to_string(), start, end + 1 - start));
    }
}

impl<'ast> Visit<'ast> for FunctionLengths {
    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        self.note(&item.sig.ident, &item.sig.fn_token, &item.block);
        syn::visit::visit_item_fn(self, item);
    }
    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        self.note(&item.sig.ident, &item.sig.fn_token, &item.block);
        syn::visit::visit_impl_item_fn(self, item);
    }
    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if let Some(block) = &item.default {
            self.note(&item.sig.ident, &item.sig.fn_token, block);
        }
        syn::visit::visit_trait_item_fn(self, item);
    }
}

#[test]
fn no_function_is_over_the_line_limit() {
    let mut over = String::new();
    for folder in SOURCE_FOLDERS {
        for file in rust_files(&root().join(folder)) {
            let mut lengths = FunctionLengths::default();
            lengths.visit_file(&parse(&file));
            for (name, line, length) in lengths.found {
                if length > MAX_FN_LINES {
                    writeln!(
                        over,
                        "{}:{line}: fn {name} is {length} lines",
                        file.display()
                    )
                    .unwrap();
                }
            }
        }
    }
    assert!(
        over.is_empty(),
        "functions over {MAX_FN_LINES} lines:\n{over}"
    );
}

/// For each file of `src/`, the files it imports from, each with the first
/// line that does.
type FileGraph = BTreeMap<PathBuf, BTreeMap<PathBuf, usize>>;

/// A module path below `crate`, e.g. `["sim", "server", "applier"]`.
type ModulePath = Vec<String>;

/// The library's modules: each file's module, and the inline modules
/// (`mod tests { .. }`) inside them, mapped to the file that holds them.
struct ModuleTable {
    file_of: BTreeMap<ModulePath, PathBuf>,
}

/// The module a file of `src/` is: `src/lib.rs` is the crate, `a/mod.rs`
/// and `a.rs` are `a`. `main.rs` and `bin/` are other crates: none.
fn module_of(file: &Path) -> Option<ModulePath> {
    let inside = file.strip_prefix("src").ok()?;
    let mut parts: ModulePath = inside
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop()?;
    if parts.first().is_some_and(|first| first == "bin") || (parts.is_empty() && last == "main.rs")
    {
        return None;
    }
    match last.as_str() {
        "lib.rs" if parts.is_empty() => {}
        "mod.rs" => {}
        other => parts.push(other.trim_end_matches(".rs").to_string()),
    }
    Some(parts)
}

/// Inline modules, for the module table.
struct InlineModules<'t> {
    file: &'t Path,
    current: ModulePath,
    file_of: &'t mut BTreeMap<ModulePath, PathBuf>,
}

impl<'ast> Visit<'ast> for InlineModules<'_> {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if item.content.is_some() {
            self.current.push(item.ident.to_string());
            self.file_of
                .insert(self.current.clone(), self.file.to_path_buf());
            syn::visit::visit_item_mod(self, item);
            self.current.pop();
        }
    }
}

impl ModuleTable {
    fn new(files: &[(PathBuf, ModulePath, syn::File)]) -> Self {
        let mut file_of = BTreeMap::new();
        for (file, module, _) in files {
            file_of.insert(module.clone(), file.clone());
        }
        for (file, module, ast) in files {
            let mut inline = InlineModules {
                file,
                current: module.clone(),
                file_of: &mut file_of,
            };
            inline.visit_file(ast);
        }
        ModuleTable { file_of }
    }

    /// The file that defines what `segments` names, written in module
    /// `from`: the deepest module the path reaches. `None` for a path that
    /// leaves the crate (std, other crates) or names a local item.
    fn resolve(&self, from: &[String], segments: &[String]) -> Option<&PathBuf> {
        let (first, rest) = segments.split_first()?;
        let mut absolute: ModulePath = match first.as_str() {
            "crate" => Vec::new(),
            "self" => from.to_vec(),
            "super" => from[..from.len().checked_sub(1)?].to_vec(),
            child => {
                let mut below = from.to_vec();
                below.push(child.to_string());
                if !self.file_of.contains_key(&below) {
                    return None;
                }
                from.to_vec()
            }
        };
        let mut remaining = if first == "crate" || first == "self" || first == "super" {
            rest
        } else {
            segments
        };
        while remaining.first().is_some_and(|segment| segment == "super") {
            absolute.pop()?;
            remaining = &remaining[1..];
        }
        absolute.extend(remaining.iter().cloned());
        (0..=absolute.len())
            .rev()
            .find_map(|length| self.file_of.get(&absolute[..length]))
    }
}

/// Every path a file writes that may name another file's item: `use`
/// trees (flattened) and paths in code, each with the module it is
/// written in and its line.
struct PathsWritten {
    current: ModulePath,
    found: Vec<(ModulePath, Vec<String>, usize)>,
}

impl PathsWritten {
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, line: usize) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                self.use_tree(prefix, &path.tree, line);
                prefix.pop();
            }
            syn::UseTree::Name(name) => {
                let mut full = prefix.clone();
                if name.ident != "self" {
                    full.push(name.ident.to_string());
                }
                self.found.push((self.current.clone(), full, line));
            }
            syn::UseTree::Rename(rename) => {
                let mut full = prefix.clone();
                full.push(rename.ident.to_string());
                self.found.push((self.current.clone(), full, line));
            }
            syn::UseTree::Glob(_) => {
                self.found
                    .push((self.current.clone(), prefix.clone(), line));
            }
            syn::UseTree::Group(group) => {
                for item in &group.items {
                    self.use_tree(prefix, item, line);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for PathsWritten {
    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        self.current.push(item.ident.to_string());
        syn::visit::visit_item_mod(self, item);
        self.current.pop();
    }
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let line = item.use_token.span.start().line;
        self.use_tree(&mut Vec::new(), &item.tree, line);
    }
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            let segments = path.segments.iter().map(|s| s.ident.to_string()).collect();
            let line = path.segments[0].ident.span().start().line;
            self.found.push((self.current.clone(), segments, line));
        }
        syn::visit::visit_path(self, path);
    }
}

/// The library's file graph: for each file, the files it imports from,
/// each with the first line that does.
fn import_graph() -> FileGraph {
    let files: Vec<(PathBuf, ModulePath, syn::File)> = rust_files(&root().join("src"))
        .into_iter()
        .filter_map(|file| {
            let module = module_of(&file)?;
            let ast = parse(&file);
            Some((file, module, ast))
        })
        .collect();
    graph_of(&files)
}

/// The file graph of parsed files: for each file, the files it imports
/// from, each with the first line that does.
fn graph_of(files: &[(PathBuf, ModulePath, syn::File)]) -> FileGraph {
    let table = ModuleTable::new(files);
    let mut graph: FileGraph = BTreeMap::new();
    for (file, module, ast) in files {
        let mut paths = PathsWritten {
            current: module.clone(),
            found: Vec::new(),
        };
        paths.visit_file(ast);
        let edges = graph.entry(file.clone()).or_default();
        for (from, segments, line) in paths.found {
            if let Some(target) = table.resolve(&from, &segments)
                && target != file
            {
                edges.entry(target.clone()).or_insert(line);
            }
        }
    }
    graph
}

/// The strongly connected components of more than one file (Tarjan).
fn circles(graph: &FileGraph) -> Vec<Vec<PathBuf>> {
    struct Tarjan<'g> {
        graph: &'g FileGraph,
        index: BTreeMap<&'g PathBuf, usize>,
        low: BTreeMap<&'g PathBuf, usize>,
        stack: Vec<&'g PathBuf>,
        on_stack: BTreeSet<&'g PathBuf>,
        found: Vec<Vec<PathBuf>>,
    }
    impl<'g> Tarjan<'g> {
        fn visit(&mut self, node: &'g PathBuf) {
            let number = self.index.len();
            self.index.insert(node, number);
            self.low.insert(node, number);
            self.stack.push(node);
            self.on_stack.insert(node);
            for next in self
                .graph
                .get(node)
                .into_iter()
                .flat_map(|edges| edges.keys())
            {
                if !self.index.contains_key(next) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next) {
                    let low = self.low[node].min(self.index[next]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    component.push(member.clone());
                    if member == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut tarjan = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !tarjan.index.contains_key(node) {
            tarjan.visit(node);
        }
    }
    tarjan.found
}

#[test]
fn no_import_circle_between_files() {
    let graph = import_graph();
    let mut report = String::new();
    for component in circles(&graph) {
        writeln!(report, "a circle of {} files:", component.len()).unwrap();
        let members: BTreeSet<&PathBuf> = component.iter().collect();
        for file in &component {
            for (target, line) in &graph[file] {
                if members.contains(target) {
                    let (file, target) = (file.display(), target.display());
                    writeln!(report, "  {file}:{line} imports from {target}").unwrap();
                }
            }
        }
    }
    assert!(report.is_empty(), "{report}");
}

/// The checker itself: a circle it must see, written as the layout's
/// files would write it, and the resolution of the path shapes it reads.
#[test]
fn the_circle_check_sees_a_circle_and_resolves_paths() {
    let module = |path: &str| -> ModulePath {
        path.split("::")
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    let files: Vec<(PathBuf, ModulePath, syn::File)> = [
        ("src/lib.rs", "", "pub mod a;"),
        ("src/a/mod.rs", "a", "mod b; mod c; pub use b::Thing;"),
        (
            "src/a/b.rs",
            "a::b",
            "use super::c::helper; pub struct Thing;",
        ),
        (
            "src/a/c.rs",
            "a::c",
            "pub fn helper() { let _ = crate::a::Thing; } mod tests { use super::*; }",
        ),
    ]
    .into_iter()
    .map(|(file, path, text)| {
        (
            PathBuf::from(file),
            module(path),
            syn::parse_file(text).unwrap(),
        )
    })
    .collect();
    let table = ModuleTable::new(&files);
    let segments = |path: &str| -> Vec<String> { path.split("::").map(String::from).collect() };
    let file_of = |from: &str, path: &str| {
        table
            .resolve(&module(from), &segments(path))
            .map(|file| file.display().to_string())
    };
    assert_eq!(
        file_of("a::b", "super::c::helper").as_deref(),
        Some("src/a/c.rs")
    );
    assert_eq!(file_of("a", "b::Thing").as_deref(), Some("src/a/b.rs"));
    assert_eq!(
        file_of("a::c", "crate::a::Thing").as_deref(),
        Some("src/a/mod.rs")
    );
    assert_eq!(
        file_of("a::c::tests", "super::helper").as_deref(),
        Some("src/a/c.rs")
    );
    assert_eq!(file_of("a::b", "std::fmt"), None);
    let graph = graph_of(&files);
    let found = circles(&graph);
    let expected: Vec<PathBuf> = ["src/a/b.rs", "src/a/c.rs", "src/a/mod.rs"]
        .into_iter()
        .map(PathBuf::from)
        .collect();
    assert_eq!(found, vec![expected]);
}

/// The release table (`src/model/release.rs`) is the only place a
/// release's behaviour is chosen: outside its tests, the simulation names
/// no policy and no release, and asks the resolved `Behaviour` instead.
#[test]
fn the_simulation_chooses_no_behaviour_by_policy_or_release_name() {
    let named = regex::Regex::new(
        r#"\bPolicy::|\bNomadVersion\b|\bNOMAD_\d+_\d+_\d+\b|"(naive|validate|plan-aware)""#,
    )
    .unwrap();
    let mut found = String::new();
    for file in rust_files(&root().join("src/sim")) {
        let text = read(&file);
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (number, line) in code.lines().enumerate() {
            let line = line.split("//").next().unwrap_or_default();
            if named.is_match(line) {
                writeln!(found, "{}:{}: {}", file.display(), number + 1, line.trim()).unwrap();
            }
        }
    }
    assert!(found.is_empty(), "behaviour chosen by name:\n{found}");
}
