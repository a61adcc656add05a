//! What `scan` is given, turned into the list of files it scans: files as they are,
//! directories walked for the files `scan` reads, and sharded checkpoints through their
//! `*.safetensors.index.json`, whose tensor names are then checked against the shards.
//!
//! The order is deterministic: arguments in the order given, a directory's entries in
//! byte order of their names (depth first), an index's shards in byte order of their
//! names.

use crate::files::tensor::io_message;
use crate::files::tensor_io::{TensorFile, check_regular_file, one_line};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Component, Path, PathBuf};

/// Largest index file read, in bytes. An index lists every tensor once with its shard's
/// name: tens of bytes per tensor, so a checkpoint of 100,000 tensors has an index of
/// about 10 MB.
pub const MAX_INDEX_BYTES: u64 = 32 << 20;

/// Extensions of the files a directory walk picks up.
const SCANNED_EXTENSIONS: [&str; 3] = ["npy", "npz", "safetensors"];
/// The name ending of the index files a directory walk picks up.
const INDEX_SUFFIX: &str = ".safetensors.index.json";

/// A sharded checkpoint's index: which shard holds each tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Index {
    /// The index file, as given or found.
    pub path: PathBuf,
    /// Tensor name → shard path (the index's directory joined with the shard's name).
    pub weight_map: BTreeMap<String, PathBuf>,
}

/// The files to scan, and the indexes to check them against.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inputs {
    /// Every file to scan, in order.
    pub files: Vec<PathBuf>,
    /// Every index met; its shards are among `files`.
    pub indexes: Vec<Index>,
}

/// Expands `paths`: a directory into the `.npy`, `.npz` and `.safetensors` files under
/// it (recursively; links to files are followed, links to directories are not, so a
/// walk cannot loop), with its `*.safetensors.index.json` files read as indexes that
/// stand for their shards; a `.json` file as an index; anything else as a file to scan.
/// Errors are one line naming the path.
pub fn expand(paths: &[PathBuf]) -> Result<Inputs, String> {
    let mut inputs = Inputs::default();
    for path in paths {
        if path.is_dir() {
            let before = inputs.files.len();
            walk(path, &mut inputs)?;
            if inputs.files.len() == before {
                return Err(format!("{}: no .npy, .npz or .safetensors file in this directory", path.display()));
            }
        } else if path.extension().is_some_and(|e| e == "json") {
            add_index(read_index(path)?, &mut inputs);
        } else {
            inputs.files.push(path.clone());
        }
    }
    Ok(inputs)
}

/// Adds the files under `directory` to `inputs`; an index found there replaces its
/// shards, which are then listed where the index is.
fn walk(directory: &Path, inputs: &mut Inputs) -> Result<(), String> {
    let fail = |path: &Path, e: std::io::Error| format!("{}: {}", path.display(), io_message(&e));
    let mut entries: Vec<(PathBuf, bool)> = Vec::new();
    for entry in std::fs::read_dir(directory).map_err(|e| fail(directory, e))? {
        let entry = entry.map_err(|e| fail(directory, e))?;
        let kind = entry.file_type().map_err(|e| fail(&entry.path(), e))?;
        entries.push((entry.path(), kind.is_dir()));
    }
    entries.sort();
    let mut indexes: BTreeMap<PathBuf, Index> = entries
        .iter()
        .filter(|(path, is_dir)| !is_dir && path.to_str().is_some_and(|p| p.ends_with(INDEX_SUFFIX)))
        .map(|(path, _)| Ok((path.clone(), read_index(path)?)))
        .collect::<Result<_, String>>()?;
    let shards: HashSet<PathBuf> = indexes.values().flat_map(|index| index.weight_map.values().cloned()).collect();
    for (path, is_dir) in entries {
        if is_dir {
            walk(&path, inputs)?;
        } else if let Some(index) = indexes.remove(&path) {
            add_index(index, inputs);
        } else if scanned_extension(&path) && !shards.contains(&path) && path.is_file() {
            inputs.files.push(path);
        }
    }
    Ok(())
}

fn scanned_extension(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| SCANNED_EXTENSIONS.contains(&e))
}

/// Adds `index`'s shards, each once, in byte order of their names, then the index.
fn add_index(index: Index, inputs: &mut Inputs) {
    let shards: BTreeSet<&PathBuf> = index.weight_map.values().collect();
    inputs.files.extend(shards.into_iter().cloned());
    inputs.indexes.push(index);
}

/// Reads a `model.safetensors.index.json`: a JSON object whose `weight_map` maps each
/// tensor name to the name of the shard file that holds it, in the index's directory.
pub fn read_index(path: &Path) -> Result<Index, String> {
    let fail = |message: String| format!("{}: {}", path.display(), one_line(message));
    check_regular_file(path).map_err(fail)?;
    let len = std::fs::metadata(path).map_err(|e| fail(io_message(&e)))?.len();
    if len > MAX_INDEX_BYTES {
        return Err(fail(format!("oversized index: {len} bytes (limit {MAX_INDEX_BYTES})")));
    }
    let text = std::fs::read(path).map_err(|e| fail(io_message(&e)))?;
    let parsed: IndexFile = serde_json::from_slice(&text).map_err(|e| fail(format!("invalid index: {e}")))?;
    let directory = path.parent().unwrap_or(Path::new(""));
    let mut weight_map = BTreeMap::new();
    for (tensor, shard) in parsed.weight_map.0 {
        let relative = Path::new(&shard);
        if !relative.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(fail(format!("shard '{shard}' is not a file name in the index's directory")));
        }
        if weight_map.insert(tensor.clone(), directory.join(relative)).is_some() {
            return Err(fail(format!("tensor '{tensor}' is listed twice in the weight_map")));
        }
    }
    if weight_map.is_empty() {
        return Err(fail("empty weight_map: the index names no tensor".into()));
    }
    Ok(Index { path: path.to_path_buf(), weight_map })
}

/// The parts of an index file that are read; others (`metadata`) are ignored.
#[derive(serde::Deserialize)]
struct IndexFile {
    weight_map: Pairs,
}

/// A JSON object's members in file order, duplicates kept (a map would keep only one).
struct Pairs(Vec<(String, String)>);

impl<'de> serde::Deserialize<'de> for Pairs {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Pairs, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Pairs;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object mapping tensor names to shard file names")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Pairs, A::Error> {
                let mut pairs = Vec::new();
                while let Some(pair) = map.next_entry()? {
                    pairs.push(pair);
                }
                Ok(Pairs(pairs))
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// Checks the tensor names of an index's shards (opened among `files`) against the
/// index. A tensor the index lists but its shard does not hold is an error (the
/// checkpoint would not load as the index says); a tensor a shard holds but the index
/// does not list (or lists in another shard) is a warning, one line per shard, and is
/// scanned like any other. Returns the warnings.
pub fn check_index(index: &Index, files: &[TensorFile]) -> Result<Vec<String>, String> {
    let mut names: BTreeMap<&Path, HashSet<&str>> = BTreeMap::new();
    for shard in index.weight_map.values() {
        let file = files.iter().find(|f| &f.path == shard);
        let file = file.ok_or_else(|| format!("{}: shard {} was not opened", index.path.display(), shard.display()))?;
        names.entry(shard).or_insert_with(|| file.tensors.iter().map(|t| t.name.as_str()).collect());
    }
    let missing: Vec<(&String, &PathBuf)> = index
        .weight_map
        .iter()
        .filter(|(tensor, shard)| names.get(shard.as_path()).is_none_or(|held| !held.contains(tensor.as_str())))
        .collect();
    if let Some((tensor, shard)) = missing.first() {
        return Err(format!(
            "{}: tensors listed but missing from their shards: {} (first: '{tensor}', not in {})",
            index.path.display(),
            missing.len(),
            shard.display()
        ));
    }
    let mut warnings = Vec::new();
    for (shard, held) in &names {
        let mut extra: Vec<&str> =
            held.iter().copied().filter(|t| index.weight_map.get(*t).is_none_or(|s| s != shard)).collect();
        extra.sort_unstable();
        if let Some(first) = extra.first() {
            warnings.push(format!(
                "{}: tensors that {} does not list in this shard: {} (first: '{first}'); scanned all the same",
                shard.display(),
                index.path.display(),
                extra.len()
            ));
        }
    }
    Ok(warnings)
}
