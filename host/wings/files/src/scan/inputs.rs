//! What `scan` is given, turned into the list of files it scans: files as they are,
//! directories walked for the files `scan` reads, and sharded checkpoints through their
//! `*.safetensors.index.json`, whose tensor names are then checked against the shards.
//!
//! The order is deterministic: arguments in the order given, a directory's entries in
//! byte order of their names (depth first), an index's shards in byte order of their
//! names; a file reached by two names is listed once, where its kept name comes
//! ([`expand`]).

use crate::containers::Container;
use crate::containers::index::{Index, ScanInputError, ScanInputErrorKind, UnlistedTensors, read_index};
use crate::read::TensorFile;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The name ending of the index files a directory walk picks up.
const INDEX_SUFFIX: &str = ".safetensors.index.json";

/// The files to scan, and the indexes to check them against.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inputs {
    /// Every file to scan, in order.
    pub files: Vec<PathBuf>,
    /// Every index met; its shards are among `files`.
    pub indexes: Vec<Index>,
    /// The names left out because they reach a file already listed under another name
    /// (a hard link or a symbolic link to it): `(left out, listed as)`, in input order.
    /// A path given twice is not one.
    pub aliases: Vec<(PathBuf, PathBuf)>,
}

/// Expands `paths`: a directory into the `.npy`, `.npz` and `.safetensors` files under
/// it (recursively; links to files are followed, links to directories are not, so a
/// walk cannot loop), with its `*.safetensors.index.json` files read as indexes that
/// stand for their shards; a `.json` file as an index; anything else as a file to scan.
/// A file reached by two names (a link, a path given twice) is listed once: under the
/// name an index gives it if it is a shard, else under the first; the other names are
/// in `Inputs::aliases`. Errors name the path. In a walk, an entry of those extensions that is not a
/// regular file (a broken link, a link loop, a FIFO) is listed all the same, for
/// [`crate::read::TensorFile::open`] to refuse (without opening a FIFO).
pub fn expand(paths: &[PathBuf]) -> Result<Inputs, ScanInputError> {
    let mut inputs = Inputs::default();
    for path in paths {
        if path.is_dir() {
            let before = inputs.files.len();
            walk(path, &mut inputs)?;
            if inputs.files.len() == before {
                return Err(ScanInputError { path: path.clone(), kind: ScanInputErrorKind::EmptyDirectory });
            }
        } else if path.extension().is_some_and(|e| e == "json") {
            add_index(read_index(path)?, &mut inputs);
        } else {
            inputs.files.push(path.clone());
        }
    }
    list_each_index_once(&mut inputs);
    list_each_file_once(&mut inputs);
    Ok(inputs)
}

/// Keeps the first of the indexes that are one file (`cast model model`, or an index given
/// beside its folder): its shards are then listed twice, which [`list_each_file_once`]
/// undoes.
fn list_each_index_once(inputs: &mut Inputs) {
    let mut seen = HashSet::new();
    inputs.indexes.retain(|index| std::fs::metadata(&index.path).map_or(true, |m| seen.insert(file_identity(&m))));
}

/// Keeps one name per file in `inputs.files` ([`expand`]): a shard's name over any other
/// (so that an index's rewritten copy names files that exist), else the first; the
/// other names go to `Inputs::aliases`. One that cannot be looked at stays, for
/// `TensorFile::open` to say why.
fn list_each_file_once(inputs: &mut Inputs) {
    let shards: HashSet<&PathBuf> = inputs.indexes.iter().flat_map(|index| index.weight_map.values()).collect();
    let identities: Vec<Option<(u64, u64)>> =
        inputs.files.iter().map(|path| std::fs::metadata(path).ok().map(|m| file_identity(&m))).collect();
    let mut names: HashMap<(u64, u64), &PathBuf> = HashMap::new();
    for shard_first in [true, false] {
        for (path, identity) in inputs.files.iter().zip(&identities) {
            if let Some(identity) = identity
                && shards.contains(path) == shard_first
            {
                names.entry(*identity).or_insert(path);
            }
        }
    }
    let (mut files, mut aliases, mut listed) = (Vec::new(), Vec::new(), HashSet::new());
    for (path, identity) in inputs.files.iter().zip(&identities) {
        match identity.map(|identity| (identity, names[&identity])) {
            None => files.push(path.clone()),
            Some((identity, name)) if name == path => {
                if listed.insert(identity) {
                    files.push(path.clone());
                }
            }
            // One name spelt two ways (`./x` and `x`): not a link, nothing to say.
            Some((_, name)) if spelled_alike(path, name) => {}
            Some((_, name)) => {
                let alias = (path.clone(), name.clone());
                if !aliases.contains(&alias) {
                    aliases.push(alias);
                }
            }
        }
    }
    inputs.files = files;
    inputs.aliases = aliases;
}

/// Whether `a` and `b` are one name spelt two ways (`./x` and `x`, a relative and an
/// absolute path): the same file name in the same directory, not two links.
fn spelled_alike(a: &Path, b: &Path) -> bool {
    let directory = |p: &Path| std::fs::canonicalize(crate::output::directory_of(p)).ok();
    a.file_name() == b.file_name() && directory(a).is_some_and(|d| Some(d) == directory(b))
}

/// Device and inode: what two names of one file share.
fn file_identity(metadata: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (metadata.dev(), metadata.ino())
}

/// Adds the files under `directory` to `inputs`; an index found there replaces its
/// shards, which are then listed where the index is.
fn walk(directory: &Path, inputs: &mut Inputs) -> Result<(), ScanInputError> {
    let fail = |path: &Path, e| ScanInputError { path: path.to_path_buf(), kind: ScanInputErrorKind::Io(e) };
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
        .collect::<Result<_, ScanInputError>>()?;
    let shards: HashSet<PathBuf> = indexes.values().flat_map(|index| index.weight_map.values().cloned()).collect();
    for (path, is_dir) in entries {
        if is_dir {
            walk(&path, inputs)?;
        } else if let Some(index) = indexes.remove(&path) {
            add_index(index, inputs);
        } else if Container::from_extension(&path).is_some() && !shards.contains(&path) {
            // Kept even if it is not a regular file: opening it says why, and one that
            // cannot be read must not leave "all finite".
            inputs.files.push(path);
        }
    }
    Ok(())
}

/// Adds `index`'s shards, each once, in byte order of their names, then the index.
fn add_index(index: Index, inputs: &mut Inputs) {
    let shards: BTreeSet<&PathBuf> = index.weight_map.values().collect();
    inputs.files.extend(shards.into_iter().cloned());
    inputs.indexes.push(index);
}

/// Checks the tensor names of an index's shards (opened among `files`) against the
/// index. A tensor the index lists but its shard does not hold is an error (the
/// checkpoint would not load as the index says); a tensor a shard holds but the index
/// does not list (or lists in another shard) is a warning, one per shard, and is
/// scanned like any other. Returns the warnings.
pub(crate) fn check_index(index: &Index, files: &[TensorFile]) -> Result<Vec<UnlistedTensors>, ScanInputError> {
    let fail = |kind: ScanInputErrorKind| ScanInputError { path: index.path.clone(), kind };
    let mut names: BTreeMap<&Path, HashSet<&str>> = BTreeMap::new();
    for shard in index.weight_map.values() {
        // Under another name if a spelling or link of it is listed (a shard of another
        // index with the same file: `cast` refuses that, `scan` reads it once).
        let file = files.iter().find(|f| &f.path == shard).or_else(|| files.iter().find(|f| f.is_at(shard)));
        let file = file.ok_or_else(|| fail(ScanInputErrorKind::ShardNotOpened { shard: shard.clone() }))?;
        names.entry(shard).or_insert_with(|| file.tensors.iter().map(|t| t.name.as_str()).collect());
    }
    let missing: Vec<(&String, &PathBuf)> = index
        .weight_map
        .iter()
        .filter(|(tensor, shard)| names.get(shard.as_path()).is_none_or(|held| !held.contains(tensor.as_str())))
        .collect();
    if let Some(&(tensor, shard)) = missing.first() {
        return Err(fail(ScanInputErrorKind::MissingTensors {
            count: missing.len(),
            first: tensor.clone(),
            shard: shard.clone(),
        }));
    }
    let mut warnings = Vec::new();
    for (shard, held) in &names {
        let mut extra: Vec<&str> =
            held.iter().copied().filter(|t| index.weight_map.get(*t).is_none_or(|s| s != shard)).collect();
        extra.sort_unstable();
        if let Some(first) = extra.first() {
            warnings.push(UnlistedTensors {
                shard: shard.to_path_buf(),
                index: index.path.clone(),
                count: extra.len(),
                first: first.to_string(),
            });
        }
    }
    Ok(warnings)
}
