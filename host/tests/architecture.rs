//! The layout rules of `host/src` (ARCHITECTURE.md), checked on the source itself so
//! that the layout keeps them true:
//!
//! - each top-level folder ("product") uses only the folders its row of [`LAYERS`]
//!   allows, so the products form layers with no circle between them;
//! - no two modules import each other, directly or around a longer circle;
//! - no two public types (struct, enum, trait, type alias) in `host` and `shared` share
//!   a name;
//! - library code returns no `Result<_, String>` (errors are typed; the CLI turns them
//!   into its one-line messages), and does not mention clap (the CLI's own value enums
//!   map onto the library's types);
//! - every folder's `mod.rs` starts with a module doc saying what it owns.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each product folder of `host/src` and the folders it may use. `cli` (the binary's
/// own modules) may use all of them and none may use it.
const LAYERS: &[(&str, &[&str])] = &[
    ("support", &[]),
    ("cpu", &[]),
    ("gpu", &["support"]),
    ("verify", &["support", "gpu"]),
    ("bench", &["support", "gpu", "verify", "cuda_tools"]),
    ("cuda_tools", &["support", "gpu", "verify"]),
    ("search", &["support", "verify"]),
    ("files", &["support", "gpu", "cpu"]),
];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The module path of a file under `host/src` (`files/read.rs` → `files::read`,
/// `gpu/mod.rs` → `gpu`); `None` for the crate roots.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop()?;
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    if parts.is_empty() || (parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main")) {
        return None;
    }
    Some(parts.join("::"))
}

/// `text` with `//` comments (doc comments included) and string literals blanked out,
/// so that paths written in prose or messages are not taken for imports.
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut in_string = false;
        let mut prev = '\0';
        let mut kept = String::new();
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if !in_string && c == '/' && chars.get(i + 1) == Some(&'/') {
                break;
            }
            if c == '"' && prev != '\\' && !(prev == '\'' && chars.get(i + 1) == Some(&'\'')) {
                in_string = !in_string;
                kept.push('"');
            } else if in_string {
                kept.push(' ');
            } else {
                kept.push(c);
            }
            prev = if prev == '\\' && c == '\\' { '\0' } else { c };
            i += 1;
        }
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

/// Every path `crate::…` (or `host::…` from the binary) the code names, with `use`
/// groups expanded: `use crate::{a::{b, c}, d}` gives `a::b`, `a::c`, `d`.
fn crate_paths(code: &str, root: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let needle = format!("{root}::");
    let mut from = 0;
    while let Some(found) = code[from..].find(&needle) {
        let start = from + found;
        from = start + needle.len();
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        expand(code, from, String::new(), &mut paths);
    }
    paths
}

/// Expands the path tree starting at `at` (after a `::`) into `out`, each prefixed by
/// `prefix`.
fn expand(code: &str, at: usize, prefix: String, out: &mut Vec<String>) {
    let rest = &code[at..];
    if let Some(group) = rest.strip_prefix('{') {
        let mut depth = 0;
        let mut item_start = 0;
        let mut items = Vec::new();
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    items.push((item_start, i));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    items.push((item_start, i));
                    item_start = i + 1;
                }
                _ => {}
            }
        }
        let base = at + 1;
        for (s, e) in items {
            let item = &group[s..e];
            let trimmed = item.trim_start();
            if trimmed.is_empty() {
                continue;
            }
            let offset = base + s + (item.len() - trimmed.len());
            expand(code, offset, prefix.clone(), out);
        }
        return;
    }
    let ident: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    if ident.is_empty() || ident == "self" {
        if !prefix.is_empty() {
            out.push(prefix);
        }
        return;
    }
    let path = if prefix.is_empty() { ident.clone() } else { format!("{prefix}::{ident}") };
    let after = &rest[ident.len()..];
    if after.starts_with("::") {
        expand(code, at + ident.len() + 2, path, out);
    } else {
        out.push(path);
    }
}

/// The longest module of `modules` that `path` starts with.
fn owning_module<'a>(path: &str, modules: &'a BTreeSet<String>) -> Option<&'a String> {
    let parts: Vec<&str> = path.split("::").collect();
    (1..=parts.len()).rev().find_map(|n| modules.get(&parts[..n].join("::")))
}

fn folder(module: &str) -> &str {
    module.split("::").next().expect("non-empty")
}

struct Crate {
    /// Module → the modules it names.
    uses: BTreeMap<String, BTreeSet<String>>,
}

fn host_modules() -> Crate {
    let src = src_dir();
    let files = rust_files(&src);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| module_of(&src, f)).collect();
    let mut uses = BTreeMap::new();
    for file in &files {
        let Some(module) = module_of(&src, file) else { continue };
        let code = code_only(&std::fs::read_to_string(file).expect("read source"));
        let root = if module.starts_with("cli") { "host" } else { "crate" };
        let mut used = BTreeSet::new();
        for path in crate_paths(&code, root).into_iter().chain(crate_paths(&code, "crate")) {
            if let Some(target) = owning_module(&path, &modules)
                && target != &module
                && !module.starts_with(&format!("{target}::"))
            {
                used.insert(target.clone());
            }
        }
        uses.insert(module, used);
    }
    Crate { uses }
}

#[test]
fn every_product_folder_uses_only_the_layers_below_it() {
    let krate = host_modules();
    let allowed: BTreeMap<&str, &[&str]> = LAYERS.iter().copied().collect();
    let mut wrong = Vec::new();
    for (module, used) in &krate.uses {
        let from = folder(module);
        if from == "cli" {
            continue;
        }
        let Some(may) = allowed.get(from) else {
            wrong.push(format!("{module}: folder `{from}` has no row in LAYERS (add it, with what it may use)"));
            continue;
        };
        for target in used {
            let to = folder(target);
            if to != from && !may.contains(&to) {
                wrong.push(format!("{module} uses {target}: `{from}` may use only {may:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));
    // The check sees the imports it should: a few known edges must be found.
    for (from, to) in [("bench", "gpu"), ("verify::table", "gpu"), ("files::backend", "gpu")] {
        assert!(
            krate.uses.get(from).is_some_and(|u| u.iter().any(|t| t == to || t.starts_with(&format!("{to}::")))),
            "the import scan no longer sees {from} → {to}: {:?}",
            krate.uses.get(from)
        );
    }
}

#[test]
fn no_module_imports_itself_around_a_circle() {
    let krate = host_modules();
    // Tarjan-free: for each edge a → b, is a reachable from b?
    let reach = |from: &str, to: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(m) = stack.pop() {
            if m == to {
                return true;
            }
            if seen.insert(m.clone())
                && let Some(next) = krate.uses.get(&m)
            {
                stack.extend(next.iter().cloned());
            }
        }
        false
    };
    let mut circles = BTreeSet::new();
    for (a, used) in &krate.uses {
        for b in used {
            if reach(b, a) {
                let (x, y) = if a < b { (a, b) } else { (b, a) };
                circles.insert(format!("{x} ↔ {y}"));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles (each edge lies on one):\n{}",
        circles.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn the_circle_check_finds_a_circle() {
    // The scanner on a two-module toy: a uses b, b uses a.
    let a = code_only("use crate::b::Thing;\n// crate::c in a comment\nfn f() { let _ = \"crate::c\"; }");
    let b = code_only("use crate::{a::{self, Other}, support::x};");
    assert_eq!(crate_paths(&a, "crate"), vec!["b::Thing"]);
    assert_eq!(crate_paths(&b, "crate"), vec!["a", "a::Other", "support::x"]);
}

/// `pub struct|enum|trait|type NAME` in `text`, code only.
fn public_types(text: &str) -> Vec<String> {
    let code = code_only(text);
    let mut names = Vec::new();
    for line in code.lines() {
        let line = line.trim_start();
        for kw in ["pub struct ", "pub enum ", "pub trait ", "pub type "] {
            if let Some(rest) = line.strip_prefix(kw) {
                let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    names.push(name);
                }
            }
        }
    }
    names
}

#[test]
fn no_two_public_types_share_a_name() {
    let shared_src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/src");
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for dir in [src_dir(), shared_src] {
        for file in rust_files(&dir) {
            let text = std::fs::read_to_string(&file).expect("read source");
            for name in public_types(&text) {
                seen.entry(name).or_default().push(file.display().to_string());
            }
        }
    }
    let clashes: Vec<String> =
        seen.iter().filter(|(_, files)| files.len() > 1).map(|(name, files)| format!("{name}: {files:?}")).collect();
    assert!(clashes.is_empty(), "public types with the same name:\n{}", clashes.join("\n"));
    assert_eq!(public_types("pub struct A;\n// pub enum B\npub(crate) struct C;"), vec!["A"]);
}

/// Every code line (comments and strings blanked) of the library, outside `cli/` and
/// `main.rs`, for which `matches` holds, as `file:line: code`.
fn library_lines_where(matches: impl Fn(&str) -> bool) -> Vec<String> {
    let src = src_dir();
    let mut found = Vec::new();
    for file in rust_files(&src) {
        let rel = file.strip_prefix(&src).expect("under src");
        if rel.starts_with("cli") || rel == Path::new("main.rs") {
            continue;
        }
        let code = code_only(&std::fs::read_to_string(&file).expect("read source"));
        for (n, line) in code.lines().enumerate() {
            if matches(line) {
                found.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn library_code_has_no_string_errors() {
    let found = library_lines_where(|line| {
        let squashed: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        squashed.contains(",String>") && squashed.contains("Result<")
    });
    assert!(found.is_empty(), "library functions returning Result<_, String>:\n{}", found.join("\n"));
}

#[test]
fn library_code_does_not_mention_clap() {
    let found = library_lines_where(|line| line.contains("clap"));
    assert!(found.is_empty(), "library code that mentions clap (its place is host/src/cli):\n{}", found.join("\n"));
}

#[test]
fn every_folder_says_what_it_owns() {
    let src = src_dir();
    let mut missing = Vec::new();
    for file in rust_files(&src) {
        if file.file_name().is_some_and(|n| n == "mod.rs") {
            let text = std::fs::read_to_string(&file).expect("read source");
            if !text.starts_with("//!") || !text.contains("Owns") {
                missing.push(file.display().to_string());
            }
        }
    }
    assert!(missing.is_empty(), "folders whose mod.rs has no module doc saying what it owns: {missing:?}");
}
