//! The layout rules of the library (ARCHITECTURE.md), checked on the source itself so
//! that the layout keeps them true. The library is one crate per product (its wings,
//! `host/wings/<wing>`), which `host/src/lib.rs` re-exports as `bitexact::<wing>`; the
//! rules read them as one tree of product folders ([`library_sources`]):
//!
//! - each wing depends (its `Cargo.toml`) and each product uses (its code) only the
//!   wings its row of [`LAYERS`] allows, so the products form layers with no circle
//!   between them;
//! - inside every folder, at any depth, no two sibling modules (files or subfolders)
//!   import each other, directly or around a longer circle; `crate::`, `super::` and
//!   `self::` paths all count;
//! - no two public types (struct, enum, trait, type alias) in `host` and `shared` share
//!   a name;
//! - library code returns no `Result<_, String>` (errors are typed; the CLI turns them
//!   into its one-line messages), and does not mention clap (the CLI's own value enums
//!   map onto the library's types);
//! - every folder's `mod.rs` (a wing's `lib.rs`) starts with a module doc saying what it
//!   owns;
//! - every `pub` item of the library has a doc comment, API or not (what is API, the items
//!   rustdoc documents, is counted from rustdoc's JSON by `scripts/api_surface.py`, which
//!   CI runs: under 300 items, none of whose signatures names an item outside them);
//!   the items marked `#[doc(hidden)]` (or inside a module so marked) are the wings'
//!   plumbing for one another, the binary and the tests.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each product (a wing, `host/wings/<product>`) and the products it may use. `cli` (the
/// binary's own modules, `host/src/cli`) may use all of them and none may use it.
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

/// What a wing's own tests (its `tests` folder, under `#[cfg(test)]`, and its
/// `[dev-dependencies]`) may use beyond its row of [`LAYERS`]: the exact references of
/// `verify` (and for `cpu` the skip helper of `support`), for a wing that they do not
/// depend on (so the dev-dependency makes no
/// circle; checked below). Its tests then reach their own wing's plumbing from inside it
/// rather than through `bitexact::`, and the wing's code still may not use them.
const TEST_LAYERS: &[(&str, &[&str])] = &[("cpu", &["verify", "support"]), ("files", &["verify"])];

/// What `module` (a product's folder at its head) may use: its row of [`LAYERS`], and
/// for a module of its `tests` folder the row of [`TEST_LAYERS`] too.
fn may_use(module: &str) -> Option<Vec<&'static str>> {
    let from = folder(module);
    let mut may: Vec<&str> = LAYERS.iter().find(|(wing, _)| *wing == from)?.1.to_vec();
    if module == format!("{from}::tests") || module.starts_with(&format!("{from}::tests::")) {
        may.extend(TEST_LAYERS.iter().filter(|(wing, _)| *wing == from).flat_map(|(_, extra)| extra.iter().copied()));
    }
    Some(may)
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The sources of the wing `wing`'s crate.
fn wing_src(wing: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("wings").join(wing).join("src")
}

/// One source file as the layout rules see it: the file, its path in the one tree of
/// product folders the rules are written for (`files/read.rs`; `files/mod.rs` for the
/// files wing's `lib.rs`; `cli/scan.rs` and `lib.rs` in `host/src`), and its text with
/// its wing's paths written as paths of that tree: `crate::read` in the files wing is
/// `crate::files::read`, and `bitexact_gpu::Gpu` is `crate::gpu::Gpu`.
struct Source {
    file: PathBuf,
    rel: PathBuf,
    text: String,
}

/// `text` with each `from` that starts a path (not the end of a longer name) replaced.
fn replace_path_start(text: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(from) {
        let starts = !rest[..i].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
        out.push_str(&rest[..i]);
        out.push_str(if starts { to } else { from });
        rest = &rest[i + from.len()..];
    }
    out.push_str(rest);
    out
}

/// The sources of the crate under `src`, as they are.
fn sources_under(src: &Path) -> Vec<Source> {
    rust_files(src)
        .into_iter()
        .map(|file| Source {
            rel: file.strip_prefix(src).expect("under src").to_path_buf(),
            text: std::fs::read_to_string(&file).expect("read source"),
            file,
        })
        .collect()
}

/// The library's sources: `host/src` (its `lib.rs`, the binary's `main.rs` and `cli/`)
/// and every wing's, each under its product's folder, paths translated (see [`Source`]).
fn library_sources() -> Vec<Source> {
    let mut sources = sources_under(&src_dir());
    for (wing, _) in LAYERS {
        for mut source in sources_under(&wing_src(wing)) {
            let rel = if source.rel == Path::new("lib.rs") { PathBuf::from("mod.rs") } else { source.rel.clone() };
            source.rel = Path::new(wing).join(rel);
            let mut text = replace_path_start(&source.text, "crate::", &format!("crate::{wing}::"));
            for (other, _) in LAYERS {
                text = replace_path_start(&text, &format!("bitexact_{other}::"), &format!("crate::{other}::"));
            }
            source.text = text;
            sources.push(source);
        }
    }
    sources.sort_by(|a, b| a.rel.cmp(&b.rel));
    sources
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

/// The module path of a file at `rel` in its tree (`files/read.rs` → `files::read`,
/// `gpu/mod.rs` → `gpu`); `None` for the crate roots.
fn module_of(rel: &Path) -> Option<String> {
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

/// Every path `crate::…` (or `bitexact::…` from the binary) the code names, with `use`
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

/// Every path the code of module `module` names, absolute (without `crate::`): its
/// `crate::…` paths (and `bitexact::…` ones from the binary's `cli`), and its `super::…` and
/// `self::…` paths resolved to the module they start from, with `use` groups expanded.
/// Inside an inline module (`mod tests { use super::*; }`) `super` is the file's module.
fn absolute_paths(code: &str, module: &str) -> Vec<String> {
    let root = if module.starts_with("cli") { "bitexact" } else { "crate" };
    let mut paths = crate_paths(code, root);
    if root != "crate" {
        paths.extend(crate_paths(code, "crate"));
    }
    let file_module: Vec<&str> = module.split("::").collect();
    for (start, ups, rest) in relative_starts(code) {
        let mut base: Vec<&str> = file_module.clone();
        base.extend(inline_modules_at(code, start));
        if ups > base.len() {
            continue;
        }
        base.truncate(base.len() - ups);
        let prefix = base.join("::");
        let mut found = Vec::new();
        expand(code, rest, String::new(), &mut found);
        if found.is_empty() && rest < code.len() && code[rest..].starts_with('*') {
            found.push(String::new());
        }
        for path in found {
            paths.push(match (prefix.is_empty(), path.is_empty()) {
                (_, true) => prefix.clone(),
                (true, false) => path,
                (false, false) => format!("{prefix}::{path}"),
            });
        }
    }
    paths.retain(|p| !p.is_empty());
    paths
}

/// Where each relative path of `code` starts: its offset, how many modules up it goes
/// (`self::` 0, `super::` 1, `super::super::` 2), and the offset after its last `::`.
fn relative_starts(code: &str) -> Vec<(usize, usize, usize)> {
    let mut starts = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find('s') {
        let start = from + found;
        from = start + 1;
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let (mut at, mut ups) = (start, 0);
        if code[at..].starts_with("self::") {
            at += "self::".len();
        } else {
            while code[at..].starts_with("super::") {
                at += "super::".len();
                ups += 1;
            }
            if ups == 0 {
                continue;
            }
        }
        from = at;
        starts.push((start, ups, at));
    }
    starts
}

/// The names of the inline modules (`mod name { … }`) that enclose offset `at` of
/// `code`, outermost first.
fn inline_modules_at(code: &str, at: usize) -> Vec<&str> {
    let mut open: Vec<(&str, i64)> = Vec::new();
    let mut depth = 0i64;
    let mut pending: Option<&str> = None;
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < at {
        // A brace in a character literal ('{') opens nothing.
        let quoted = i > 0 && bytes[i - 1] == b'\'' && bytes.get(i + 1) == Some(&b'\'');
        match bytes[i] {
            b'{' | b'}' if quoted => {}
            b'{' => {
                depth += 1;
                if let Some(name) = pending.take() {
                    open.push((name, depth));
                }
            }
            b'}' => {
                if open.last().is_some_and(|&(_, d)| d == depth) {
                    open.pop();
                }
                depth -= 1;
            }
            b';' => pending = None,
            b'm' if code[i..].starts_with("mod ")
                && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')) =>
            {
                let name = code[i + 4..].trim_start();
                let len = name.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(name.len());
                pending = Some(&name[..len]);
            }
            _ => {}
        }
        i += 1;
    }
    open.into_iter().map(|(name, _)| name).collect()
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
    modules_of(&library_sources())
}

/// `device-support/src`: the block API, its CPU emulator and the loops.
fn device_support_modules() -> Crate {
    modules_of(&sources_under(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../device-support/src")))
}

/// The modules of the crate of `sources`, and what each uses.
fn modules_of(sources: &[Source]) -> Crate {
    let modules: BTreeSet<String> = sources.iter().filter_map(|s| module_of(&s.rel)).collect();
    let mut uses = BTreeMap::new();
    for source in sources {
        let Some(module) = module_of(&source.rel) else { continue };
        let code = code_only(&source.text);
        let mut used = BTreeSet::new();
        for path in absolute_paths(&code, &module) {
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
    let mut wrong = Vec::new();
    for (module, used) in &krate.uses {
        let from = folder(module);
        if from == "cli" {
            continue;
        }
        let Some(may) = may_use(module) else {
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
    assert_eq!(may_use("files::tests::header_fuzz"), Some(vec!["support", "gpu", "cpu", "verify"]));
    assert_eq!(may_use("files::testsuite"), Some(vec!["support", "gpu", "cpu"]), "only the tests folder");
    assert_eq!(may_use("verify::tests"), Some(vec!["support", "gpu"]));
    // The check sees the imports it should: a few known edges must be found.
    for (from, to) in [("bench", "gpu"), ("verify::table", "gpu"), ("files::backend", "gpu"), ("cli::scan", "files")] {
        assert!(
            krate.uses.get(from).is_some_and(|u| u.iter().any(|t| t == to || t.starts_with(&format!("{to}::")))),
            "the import scan no longer sees {from} → {to}: {:?}",
            krate.uses.get(from)
        );
    }
}

/// The wings a wing's `Cargo.toml` names outside its `[package]` table, as product names
/// (`bitexact-cuda-tools` → `cuda_tools`), however it names them: a key
/// (`bitexact-gpu.workspace = true`, `"bitexact-gpu" = …`), a table
/// (`[dependencies.bitexact-gpu]`) or a renamed package (`gpu = { package = "bitexact-gpu" }`);
/// and `host` when it names the package that re-exports the wings (a dev-dependency
/// cycle would let a wing's tests use the wings above it).
fn wing_dependencies(manifest: &str) -> BTreeSet<String> {
    wing_dependencies_in(manifest, |_| true)
}

/// Whether `manifest` names the crate `name` in a table for which `keep(section)` holds
/// (a key `name`, `name.workspace`, `"name"`, or a table `[….name]`).
fn names_crate(manifest: &str, name: &str, keep: impl Fn(&str) -> bool) -> bool {
    let mut section = String::new();
    manifest.lines().map(str::trim).filter(|line| !line.starts_with('#')).any(|line| {
        if line.starts_with('[') {
            section = line.trim_matches(|c| c == '[' || c == ']').to_string();
        }
        let key = line.trim_start_matches('[').split(['=', ' ', ']']).next().unwrap_or("").trim_matches('"');
        let named = key == name || key.ends_with(&format!(".{name}")) || key.starts_with(&format!("{name}."));
        named && keep(&section)
    })
}

/// Whether a manifest's table is one of dev-dependencies (`[dev-dependencies]`,
/// `[dev-dependencies.x]`, `[target.'…'.dev-dependencies]`).
fn is_dev_section(section: &str) -> bool {
    section.starts_with("dev-dependencies") || section.contains(".dev-dependencies")
}

/// [`wing_dependencies`], read only in the tables for which `keep(section)` holds.
fn wing_dependencies_in(manifest: &str, keep: impl Fn(&str) -> bool) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut section = String::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.trim_matches(|c| c == '[' || c == ']').to_string();
        }
        if section == "package" || line.starts_with('#') || !keep(&section) {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("bitexact-") {
            let name: String =
                rest[at + "bitexact-".len()..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
            found.insert(name.replace('-', "_"));
            rest = &rest[at + "bitexact-".len()..];
        }
        let key = line.trim_start_matches('[').split(['=', '.', ' ', ']']).next().unwrap_or("").trim_matches('"');
        let table_key = section.rsplit('.').next().unwrap_or("").trim_matches('"');
        if key == "host" || table_key == "host" || line.replace(' ', "").contains("package=\"host\"") {
            found.insert("host".to_string());
        }
    }
    found
}

#[test]
fn every_wing_depends_only_on_the_layers_below_it() {
    let wings_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("wings");
    let mut found: Vec<String> = std::fs::read_dir(&wings_dir)
        .expect("host/wings")
        .map(|e| e.expect("directory entry").file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    let mut rows: Vec<String> = LAYERS.iter().map(|(wing, _)| wing.to_string()).collect();
    rows.sort();
    assert_eq!(found, rows, "every folder of host/wings is a wing with a row in LAYERS, and every row a wing");
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).expect("host/src/lib.rs");
    let mut wrong = Vec::new();
    // The workspace's dev-only crates a wing's tests may take, and the wings each brings
    // along (its own `[dependencies]`), which count as the wing's dev-dependencies.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let carried: Vec<(&str, BTreeSet<String>)> = [("conformance", "tests"), ("test-fixtures", "tests/fixtures")]
        .into_iter()
        .map(|(name, dir)| {
            let manifest = std::fs::read_to_string(root.join(dir).join("Cargo.toml")).expect("a crate's Cargo.toml");
            (name, wing_dependencies_in(&manifest, |s| !is_dev_section(s)))
        })
        .collect();
    assert!(carried.iter().all(|(_, brings)| !brings.is_empty()), "{carried:?}");
    for (name, brings) in &carried {
        if brings.contains("host") {
            wrong.push(format!("`{name}` depends on `host`: a wing's tests taking it would use every wing"));
        }
    }
    for (wing, may) in LAYERS {
        let manifest = std::fs::read_to_string(wings_dir.join(wing).join("Cargo.toml")).expect("a wing's Cargo.toml");
        for dependency in wing_dependencies_in(&manifest, |s| !is_dev_section(s)) {
            if !may.contains(&dependency.as_str()) {
                wrong.push(format!(
                    "host/wings/{wing}/Cargo.toml depends on `{dependency}`: `{wing}` may use only {may:?}"
                ));
            }
        }
        let tests_may = may_use(&format!("{wing}::tests")).expect("a row");
        let mut dev = wing_dependencies_in(&manifest, is_dev_section);
        for (name, brings) in &carried {
            if names_crate(&manifest, name, |s| s.contains("dependencies") && !is_dev_section(s)) {
                wrong.push(format!("host/wings/{wing}/Cargo.toml depends on `{name}`, a crate for tests"));
            }
            if names_crate(&manifest, name, is_dev_section) {
                dev.extend(brings.iter().cloned());
            }
        }
        for dependency in dev {
            if dependency == *wing {
                wrong.push(format!(
                    "host/wings/{wing}/Cargo.toml: its tests would depend on `{wing}` itself (a circle)"
                ));
            } else if !tests_may.contains(&dependency.as_str()) {
                wrong.push(format!(
                    "host/wings/{wing}/Cargo.toml dev-depends on `{dependency}`: `{wing}`'s tests may use only {tests_may:?}"
                ));
            }
        }
        if !lib.contains(&format!("pub use bitexact_{wing} as {wing};")) {
            wrong.push(format!("host/src/lib.rs does not re-export bitexact_{wing} as `bitexact::{wing}`"));
        }
    }
    // A wing's tests use only wings that do not depend on it, at any depth (no circle).
    let below = |wing: &'static str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![wing];
        while let Some(w) = stack.pop() {
            if seen.insert(w) {
                stack.extend(LAYERS.iter().find(|(row, _)| *row == w).map_or(&[][..], |(_, may)| *may));
            }
        }
        seen
    };
    for (wing, extra) in TEST_LAYERS {
        for other in *extra {
            if below(other).contains(wing) {
                wrong.push(format!("TEST_LAYERS: `{wing}`'s tests may not use `{other}`, which depends on `{wing}`"));
            }
        }
    }
    assert!(wrong.is_empty(), "wings out of their layers:\n{}", wrong.join("\n"));
    let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<BTreeSet<String>>();
    let sample = "[package]\nname = \"bitexact-files\"\n\n[dependencies]\nbitexact-support.workspace = true\n\
                  bitexact-cuda-tools = { path = \"x\" }\nshared.workspace = true\n# bitexact-bench in a comment\n";
    assert_eq!(wing_dependencies(sample), names(&["support", "cuda_tools"]));
    let hidden = "[dependencies.bitexact-verify]\nworkspace = true\n[dependencies]\ngpu = { package = \"bitexact-gpu\" }\n\
                  \"bitexact-search\" = \"1\"\n[dev-dependencies]\nhost.workspace = true\n";
    assert_eq!(wing_dependencies(hidden), names(&["verify", "gpu", "search", "host"]));
    assert_eq!(wing_dependencies("[dev-dependencies.host]\npath = \"../..\"\n"), names(&["host"]));
    assert_eq!(wing_dependencies("[dependencies]\nx = { package = \"host\", path = \"../..\" }\n"), names(&["host"]));
    assert_eq!(wing_dependencies_in(hidden, is_dev_section), names(&["host"]));
    assert_eq!(wing_dependencies_in(hidden, |s| !is_dev_section(s)), names(&["verify", "gpu", "search"]));
    assert!(names_crate("[dev-dependencies]\ntest-fixtures.workspace = true\n", "test-fixtures", is_dev_section));
    assert!(!names_crate("[dependencies]\ntest-fixtures.workspace = true\n", "test-fixtures", is_dev_section));
    assert!(names_crate("[dev-dependencies.conformance]\npath = \"x\"\n", "conformance", is_dev_section));
    let target = "[target.'cfg(unix)'.dev-dependencies]\nconformance.workspace = true\n";
    assert!(names_crate(target, "conformance", is_dev_section));
    assert!(!names_crate(target, "conformance", |s| s.contains("dependencies") && !is_dev_section(s)));
    let commented = "[dev-dependencies]\n# conformance.workspace = true\nconformance-x = \"1\"\n";
    assert!(!names_crate(commented, "conformance", |_| true));
    let target = "[target.'cfg(unix)'.dev-dependencies]\nbitexact-bench = \"1\"\n";
    assert_eq!(wing_dependencies_in(target, is_dev_section), names(&["bench"]));
}

/// The sibling of `folder` (`""` for the crate root) that holds `module`, if `module`
/// lies inside `folder` and is not `folder` itself.
fn child_of<'a>(folder: &str, module: &'a str) -> Option<&'a str> {
    let rest = if folder.is_empty() { module } else { module.strip_prefix(folder)?.strip_prefix("::")? };
    rest.split("::").next().filter(|c| !c.is_empty())
}

/// Every circle between siblings of any folder of `uses` (module → the modules it
/// names), as `(folder, a, b)` with `a < b` for each pair of siblings on one, and the
/// imports that make `a` use `b` or `b` use `a` directly, for the report.
fn sibling_circles(uses: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<(String, String, String), Vec<String>> {
    let mut folders: BTreeSet<String> = BTreeSet::from([String::new()]);
    for module in uses.keys() {
        let parts: Vec<&str> = module.split("::").collect();
        folders.extend((1..parts.len()).map(|n| parts[..n].join("::")));
    }
    let mut circles = BTreeMap::new();
    for folder in &folders {
        // Sibling → siblings it uses, with the imports that say so.
        let mut edges: BTreeMap<&str, BTreeMap<&str, Vec<String>>> = BTreeMap::new();
        for (module, used) in uses {
            let Some(from) = child_of(folder, module) else { continue };
            for target in used {
                if let Some(to) = child_of(folder, target).filter(|&to| to != from) {
                    edges.entry(from).or_default().entry(to).or_default().push(format!("{module} → {target}"));
                }
            }
        }
        let reaches = |from: &str, to: &str| {
            let mut seen = BTreeSet::new();
            let mut stack = vec![from];
            while let Some(m) = stack.pop() {
                if m == to {
                    return true;
                }
                if seen.insert(m)
                    && let Some(next) = edges.get(m)
                {
                    stack.extend(next.keys().copied());
                }
            }
            false
        };
        for (&a, targets) in &edges {
            for (&b, why) in targets {
                if reaches(b, a) {
                    let key = if a < b { (a, b) } else { (b, a) };
                    let entry: &mut Vec<String> =
                        circles.entry((folder.clone(), key.0.to_string(), key.1.to_string())).or_default();
                    entry.extend(why.iter().cloned());
                }
            }
        }
    }
    circles
}

/// The circles between sibling modules of `krate`, one line each.
fn circles_in(krate: &Crate) -> Vec<String> {
    sibling_circles(&krate.uses)
        .iter()
        .map(|((folder, a, b), why)| format!("in `{folder}`: {a} ↔ {b} ({})", why.join("; ")))
        .collect()
}

#[test]
fn no_module_imports_itself_around_a_circle() {
    let circles = circles_in(&host_modules());
    assert!(circles.is_empty(), "import circles between sibling modules:\n{}", circles.join("\n"));
}

/// The same rule in `device-support`: `block` uses `emulator` on the host, so the emulator
/// takes the warp geometry from `shared::launch`, never from `block`, and its tests (which
/// drive it through `block`) are a module beside it.
#[test]
fn no_device_support_module_imports_itself_around_a_circle() {
    let krate = device_support_modules();
    assert!(krate.uses.contains_key("block::warp") && krate.uses.contains_key("emulator::sanitizer"));
    assert!(krate.uses["block::host"].contains("emulator"), "the check reads block::host's imports");
    let circles = circles_in(&krate);
    assert!(circles.is_empty(), "import circles between device-support's modules:\n{}", circles.join("\n"));
}

#[test]
fn a_circle_is_found_at_any_depth() {
    let uses = |edges: &[(&str, &str)]| {
        let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for &(a, b) in edges {
            map.entry(a.to_string()).or_default().insert(b.to_string());
            map.entry(b.to_string()).or_default();
        }
        map
    };
    // Two folders down, through a grandchild: a::b::c::d uses a::b::e, which uses a::b::c.
    let deep = sibling_circles(&uses(&[("a::b::c::d", "a::b::e"), ("a::b::e", "a::b::c"), ("a", "a::b")]));
    let keys: Vec<_> = deep.keys().cloned().collect();
    assert_eq!(keys, [("a::b".to_string(), "c".to_string(), "e".to_string())]);
    assert_eq!(deep.values().next().map(Vec::len), Some(2), "{deep:?}");
    // Around three top-level folders; a child using its parent is no circle.
    let around = sibling_circles(&uses(&[("x", "y::p"), ("y::p", "z"), ("z::q", "x"), ("x::r", "x")]));
    assert_eq!(around.len(), 3, "{around:?}");
    assert!(around.keys().all(|(folder, _, _)| folder.is_empty()));
    assert!(sibling_circles(&uses(&[("x::r", "x"), ("x", "x::r"), ("x::r", "y")])).is_empty());
}

#[test]
fn the_circle_check_finds_a_circle() {
    // The scanner on a two-module toy: a uses b, b uses a.
    let a = code_only("use crate::b::Thing;\n// crate::c in a comment\nfn f() { let _ = \"crate::c\"; }");
    let b = code_only("use crate::{a::{self, Other}, support::x};");
    assert_eq!(crate_paths(&a, "crate"), vec!["b::Thing"]);
    assert_eq!(crate_paths(&b, "crate"), vec!["a", "a::Other", "support::x"]);
    // super:: and self:: resolve from the file's module, and from an inline module's.
    let c = code_only(
        "use super::{x::Y, z};\nuse super::super::w;\nuse self::own::T;\nfn f() { super::g::h(); }\n\
         #[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::v::K;\n}\nmod after;\nuse super::u;",
    );
    assert_eq!(
        absolute_paths(&c, "files::containers::index"),
        vec![
            "files::containers::x::Y",
            "files::containers::z",
            "files::w",
            "files::containers::index::own::T",
            "files::containers::g::h",
            "files::containers::index",
            "files::containers::v::K",
            "files::containers::u",
        ]
    );
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
    for source in library_sources().into_iter().chain(sources_under(&shared_src)) {
        for name in public_types(&source.text) {
            seen.entry(name).or_default().push(source.file.display().to_string());
        }
    }
    let clashes: Vec<String> =
        seen.iter().filter(|(_, files)| files.len() > 1).map(|(name, files)| format!("{name}: {files:?}")).collect();
    assert!(clashes.is_empty(), "public types with the same name:\n{}", clashes.join("\n"));
    assert_eq!(public_types("pub struct A;\n// pub enum B\npub(crate) struct C;"), vec!["A"]);
}

/// Whether `rel` (a path in the one tree of product folders) lies in a wing's `tests`
/// folder: its unit tests, compiled only under `#[cfg(test)]`, not library code.
fn is_wing_tests(rel: &Path) -> bool {
    rel.components().nth(1).is_some_and(|c| c.as_os_str() == "tests")
}

/// Every code line (comments and strings blanked) of the library, outside `cli/`,
/// `main.rs` and the wings' `tests` folders, for which `matches` holds, as `file:line: code`.
fn library_lines_where(matches: impl Fn(&str) -> bool) -> Vec<String> {
    let mut found = Vec::new();
    for source in library_sources() {
        if source.rel.starts_with("cli") || source.rel == Path::new("main.rs") || is_wing_tests(&source.rel) {
            continue;
        }
        let code = code_only(&source.text);
        for (n, line) in code.lines().enumerate() {
            if matches(line) {
                found.push(format!("{}:{}: {}", source.file.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

/// A wing's `tests` folder, which the library rules leave out ([`is_wing_tests`]) and
/// [`TEST_LAYERS`] lets use more, is compiled only for the wing's tests: its `lib.rs`
/// declares it `#[cfg(test)] mod tests;`.
#[test]
fn every_wings_tests_folder_is_compiled_only_for_its_tests() {
    let mut folders = 0;
    for (wing, _) in LAYERS {
        let lib = std::fs::read_to_string(wing_src(wing).join("lib.rs")).expect("a wing's lib.rs");
        let declared = lib.contains("#[cfg(test)]\nmod tests;");
        if wing_src(wing).join("tests").is_dir() {
            folders += 1;
            assert!(declared, "host/wings/{wing}/src/lib.rs: its tests folder without `#[cfg(test)] mod tests;`");
        }
        let other =
            lib.lines().filter(|l| l.trim_start().starts_with("mod tests") || l.contains("pub mod tests")).count();
        assert!(other <= 1 && !lib.contains("pub mod tests"), "host/wings/{wing}/src/lib.rs: `tests` is test-only");
    }
    assert!(folders >= 6, "the wings' tests folders: {folders}");
}

#[test]
fn library_code_has_no_string_errors() {
    let found = library_lines_where(|line| {
        let squashed: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        squashed.contains(",String>") && squashed.contains("Result<")
    });
    assert!(found.is_empty(), "library functions returning Result<_, String>:\n{}", found.join("\n"));
    assert!(is_wing_tests(Path::new("files/tests/header_fuzz.rs")) && !is_wing_tests(Path::new("files/scan/tests.rs")));
}

#[test]
fn library_code_does_not_mention_clap() {
    let found = library_lines_where(|line| line.contains("clap"));
    assert!(found.is_empty(), "library code that mentions clap (its place is host/src/cli):\n{}", found.join("\n"));
}

#[test]
fn every_folder_says_what_it_owns() {
    let mut missing = Vec::new();
    let mut folders = 0;
    for source in library_sources() {
        if source.rel.file_name().is_some_and(|n| n == "mod.rs") {
            folders += 1;
            if !source.text.starts_with("//!") || !source.text.contains("Owns") {
                missing.push(source.file.display().to_string());
            }
        }
    }
    assert!(folders > LAYERS.len(), "the check reads every wing's lib.rs and every folder's mod.rs ({folders})");
    assert!(
        missing.is_empty(),
        "folders whose mod.rs (a wing's lib.rs) has no module doc saying what it owns: {missing:?}"
    );
}

/// The repository's root.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The prose that names paths: docs/*.md, README.md, ARCHITECTURE.md, and the doc
/// comments (`//!`, `///`) of every workspace crate's sources, as (where, the folder a
/// path in it may also be relative to, text): a doc comment may name its own crate's
/// `tests/` (`tests/cli_files.rs` in `host/src`).
fn prose() -> Vec<(String, PathBuf, String)> {
    let root = repo_root();
    let mut out = Vec::new();
    let mut markdown = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let path = entry.expect("directory entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            markdown.push(path);
        }
    }
    for path in markdown {
        out.push((path.display().to_string(), root.clone(), std::fs::read_to_string(&path).expect("read markdown")));
    }
    for dir in ["host", "shared", "kernels-gpu", "tests", "ptx-builder", "device-support", "examples"] {
        for file in rust_files(&root.join(dir)) {
            if file.components().any(|c| c.as_os_str() == "target") {
                continue;
            }
            let text = std::fs::read_to_string(&file).expect("read source");
            let docs: String = text
                .lines()
                .map(str::trim_start)
                .filter(|l| l.starts_with("//!") || l.starts_with("///"))
                .map(|l| format!("{l}\n"))
                .collect();
            let krate = file.ancestors().find(|d| d.join("Cargo.toml").exists()).unwrap_or(&root).to_path_buf();
            out.push((file.display().to_string(), krate, docs));
        }
    }
    out
}

/// Each path `text` names that starts at a folder of the repository's root and names a
/// Rust file or a `src/` folder (`host/wings/files/src/read.rs`, `shared/src/`), cut at the
/// first character that cannot be in such a path.
fn repository_paths(text: &str, roots: &BTreeSet<String>) -> Vec<String> {
    let is_path_char = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '/' | '.');
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(|c: char| c.is_alphanumeric()) {
        let before = rest[..i].chars().next_back();
        let word_len = rest[i..].find(|c: char| !is_path_char(c)).unwrap_or(rest.len() - i);
        let word = rest[i..i + word_len].trim_end_matches('.');
        rest = &rest[i + word_len..];
        if before.is_some_and(|c| is_path_char(c) || c == ':') {
            continue;
        }
        let first = word.split('/').next().unwrap_or("");
        if roots.contains(first) && word.contains('/') && (word.ends_with(".rs") || word.contains("/src/")) {
            found.push(word.to_string());
        }
    }
    found
}

/// Each path `bitexact::…` that `text` names, as its segments after `host`.
fn host_paths(text: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find("bitexact::") {
        let start = from + i;
        from = start + "bitexact::".len();
        if text[..start].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let path: String = text[from..].chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
        let segments: Vec<String> = path.split("::").filter(|s| !s.is_empty()).map(str::to_string).collect();
        if !segments.is_empty() {
            found.push(segments);
        }
    }
    found
}

/// Why `bitexact::<segments>` names nothing, if it does not: the first segment must be a
/// wing (`host/wings/<wing>/src/lib.rs`), each next one a module of it (`x.rs` or
/// `x/mod.rs`) until one is not; that one must be a word of the last module's source (an
/// item or a re-export).
fn missing_host_item(segments: &[String]) -> Option<String> {
    let wing = &segments[0];
    let mut dir = wing_src(wing);
    let mut source = dir.join("lib.rs");
    if !source.exists() {
        return Some(format!("no wing host/wings/{wing}/src/lib.rs"));
    }
    for segment in &segments[1..] {
        let (file, folder) = (dir.join(format!("{segment}.rs")), dir.join(segment).join("mod.rs"));
        if file.exists() || folder.exists() {
            source = if folder.exists() { folder } else { file };
            dir = dir.join(segment);
            continue;
        }
        let text = std::fs::read_to_string(&source).expect("read source");
        let is_word = |at: usize| {
            let ok = |c: Option<char>| !c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            ok(text[..at].chars().next_back()) && ok(text[at + segment.len()..].chars().next())
        };
        return (!text.match_indices(segment.as_str()).any(|(at, _)| is_word(at)))
            .then(|| format!("`{segment}` is not in {}", source.display()));
    }
    None
}

#[test]
fn every_path_the_docs_name_exists() {
    let root = repo_root();
    let roots: BTreeSet<String> = std::fs::read_dir(&root)
        .expect("repository root")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let mut missing = Vec::new();
    for (place, krate, text) in prose() {
        for path in repository_paths(&text, &roots) {
            if !root.join(&path).exists() && !krate.join(&path).exists() {
                missing.push(format!("{place}: {path} does not exist"));
            }
        }
        for segments in host_paths(&text) {
            if let Some(why) = missing_host_item(&segments) {
                missing.push(format!("{place}: bitexact::{}: {why}", segments.join("::")));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(missing.is_empty(), "paths in docs and doc comments that name nothing:\n{}", missing.join("\n"));
}

#[test]
fn the_path_check_sees_stale_paths() {
    let roots = BTreeSet::from(["host".to_string(), "docs".to_string()]);
    let text = "The zip reader (`host/src/npz.rs`), see host/wings/files/src/read.rs. and docs/x.md; \
                not library/core/src/f16.rs nor a/host/src/x.rs.";
    assert_eq!(repository_paths(text, &roots), ["host/src/npz.rs", "host/wings/files/src/read.rs"]);
    let paths = host_paths("`bitexact::reference::expected`, bitexact::verify::reference::expected(x), a_host::x");
    assert_eq!(paths.len(), 2);
    assert!(missing_host_item(&paths[0]).is_some_and(|why| why.contains("host/wings/reference/src/lib.rs")));
    assert_eq!(missing_host_item(&paths[1]), None);
    let no_item = ["verify".to_string(), "reference".to_string(), "no_such_item".to_string()];
    assert!(missing_host_item(&no_item).is_some());
}

/// The `pub` items (not `pub(crate)`, `pub(super)`, nor re-exports) of `text` outside its
/// `#[cfg(test)] mod tests`, with whether a doc comment (`///` or `#[doc`) comes before
/// each (attributes and plain comments between them skipped; in a macro, `$(#[$doc])*`
/// stands for the doc each invocation writes), as (line, item, documented). A `pub mod x;`
/// is documented by its file's `//!`, which `module_doc` answers.
fn public_items(text: &str, module_doc: impl Fn(&str) -> bool) -> Vec<(usize, String, bool)> {
    let kinds = [
        "fn ",
        "const fn ",
        "unsafe fn ",
        "struct ",
        "enum ",
        "trait ",
        "type ",
        "const ",
        "static ",
        "mod ",
        "union ",
    ];
    let lines: Vec<&str> = text.lines().collect();
    let mut items = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let code = line.trim_start();
        if code.starts_with("mod tests") && n > 0 && lines[n - 1].trim() == "#[cfg(test)]" {
            break;
        }
        let Some(rest) = code.strip_prefix("pub ") else { continue };
        let Some(kind) = kinds.iter().find(|k| rest.starts_with(**k)) else { continue };
        let name: String = rest[kind.len()..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        let mut at = n;
        let documented = loop {
            let Some(prev) = at.checked_sub(1).map(|i| lines[i].trim()) else { break false };
            at -= 1;
            // A macro's `$(#[$doc:meta])*` carries the doc each invocation writes.
            if prev.starts_with("///") || prev.starts_with("#[doc") || prev.starts_with("$(#[$doc") {
                break true;
            }
            let in_attribute = prev.starts_with("#[")
                || prev.starts_with("//")
                || prev.ends_with(")]")
                || prev.ends_with(',')
                || prev.ends_with('(');
            if !in_attribute && !prev.starts_with('"') {
                break false;
            }
        };
        let documented = documented || (kind.starts_with("mod") && rest.trim_end().ends_with(';') && module_doc(&name));
        items.push((n + 1, format!("pub {}{name}", kind), documented));
    }
    items
}

/// Whether the item declared at line `n` (0-based) of `lines` is marked `#[doc(hidden)]`
/// among the attributes and doc comments just above it.
fn is_hidden(lines: &[&str], n: usize) -> bool {
    lines[..n]
        .iter()
        .rev()
        .map(|line| line.trim())
        .take_while(|line| line.starts_with('#') || line.starts_with("//") || line.starts_with("$(#["))
        .any(|line| line == "#[doc(hidden)]")
}

#[test]
fn every_public_item_is_documented() {
    let (mut total, mut hidden, mut undocumented) = (0, 0, Vec::new());
    for Source { file, rel, text } in library_sources() {
        if rel.starts_with("cli") || rel == Path::new("main.rs") {
            continue;
        }
        let folder = if file.ends_with("mod.rs") || file.ends_with("lib.rs") {
            file.parent().expect("in a folder").to_path_buf()
        } else {
            file.with_extension("")
        };
        let module_doc = |name: &str| {
            [folder.join(format!("{name}.rs")), folder.join(name).join("mod.rs")]
                .iter()
                .any(|f| std::fs::read_to_string(f).is_ok_and(|t| t.starts_with("//!")))
        };
        let lines: Vec<&str> = text.lines().collect();
        for (line, item, documented) in public_items(&text, module_doc) {
            total += 1;
            hidden += usize::from(is_hidden(&lines, line - 1));
            if !documented {
                undocumented.push(format!("{}:{line}: {item}", file.display()));
            }
        }
    }
    println!(
        "{total} pub items in the library (not the binary's), {hidden} of them marked #[doc(hidden)] \
         (scripts/api_surface.py counts what rustdoc documents)"
    );
    assert!(
        undocumented.is_empty(),
        "pub items without a doc comment: document them, or make them pub(crate) if nothing outside \
         the crate uses them:\n{}",
        undocumented.join("\n")
    );
}

#[test]
fn the_surface_check_sees_undocumented_items() {
    let text = "/// Doc.\npub fn a() {}\npub struct B;\n/// Doc.\n#[derive(Debug)]\n#[error(\n    \"x\"\n)]\npub enum C {}\n\
                pub(crate) fn d() {}\npub use e::E;\npub mod f;\npub mod g;\n#[cfg(test)]\nmod tests {\n    pub fn h() {}\n}";
    let items = public_items(text, |name| name == "f");
    let seen: Vec<(&str, bool)> = items.iter().map(|(_, item, documented)| (item.as_str(), *documented)).collect();
    assert_eq!(
        seen,
        [("pub fn a", true), ("pub struct B", false), ("pub enum C", true), ("pub mod f", true), ("pub mod g", false)]
    );
    let lines: Vec<&str> =
        "/// Doc.\n#[doc(hidden)]\n// why\npub fn a() {}\n#[doc(hidden)]\n\npub fn b() {}".lines().collect();
    assert!(is_hidden(&lines, 3) && !is_hidden(&lines, 6));
}
