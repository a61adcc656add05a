//! A sharded checkpoint's index (`*.safetensors.index.json`): read into the tensor →
//! shard map it gives (`read_index`, bounded by `MAX_INDEX_BYTES`), and what its
//! check against the tensors its shards hold finds once they are opened
//! (`crate::scan::inputs::check_index`; a tensor a shard holds but the index
//! does not list is a warning, [`UnlistedTensors`]).
//!
//! [`ScanInputError`] lives here, not with the directory walk that also returns it
//! ([`crate::scan::inputs`]), so that the walk uses the index and not the other
//! way round.

use crate::message::{io_message, one_line};
use crate::regular_file::{RegularFileError, open_regular_file};
use bitexact_support::output::{excerpt, path_text};
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// Largest index file read, in bytes. An index lists every tensor once with its shard's
/// name: tens of bytes per tensor, so a checkpoint of 100,000 tensors has an index of
/// about 10 MB.
pub(crate) const MAX_INDEX_BYTES: u64 = 32 << 20;

/// A sharded checkpoint's index: which shard holds each tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Index {
    /// The index file, as given or found.
    pub path: PathBuf,
    /// Tensor name → shard path (the index's directory joined with the shard's name).
    pub weight_map: BTreeMap<String, PathBuf>,
}

/// Why what `scan` was given cannot be turned into files to scan: the path at fault and
/// what is wrong. Displayed as `path: what`, on one line; the cause is in that line, not
/// behind `source()`.
#[derive(Debug, thiserror::Error)]
#[error("{}: {}", path_text(.path), one_line(.kind))]
pub struct ScanInputError {
    /// The directory, index or shard at fault.
    pub path: PathBuf,
    /// What is wrong.
    #[doc(hidden)]
    pub kind: ScanInputErrorKind,
}

/// What is wrong with an input: see [`ScanInputError`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScanInputErrorKind {
    /// A directory with no file `scan` reads under it.
    #[error("no .npy, .npz or .safetensors file in this directory")]
    EmptyDirectory,
    /// Listing a directory, or reading an index, failed.
    #[error("{}", io_message(.0))]
    Io(std::io::Error),
    /// An index that is missing or not a regular file, or a file met in a directory
    /// walk that is not one (a broken link, a link loop, a FIFO).
    #[error("{0}")]
    NotRegular(RegularFileError),
    /// An index over `MAX_INDEX_BYTES`.
    #[error("oversized index: {len} bytes (limit {MAX_INDEX_BYTES})")]
    OversizedIndex {
        /// Its length.
        len: u64,
    },
    /// An index that is not JSON with a `weight_map` of strings.
    #[error("invalid index: {0}")]
    InvalidIndex(serde_json::Error),
    /// A shard named by a path that leaves the index's directory.
    #[error("shard '{}' is not a file name in the index's directory", excerpt(.shard))]
    ShardNotAFileName {
        /// The shard as the index names it.
        shard: String,
    },
    /// A tensor listed twice in an index's `weight_map`.
    #[error("tensor '{}' is listed twice in the weight_map", excerpt(.tensor))]
    ListedTwice {
        /// The tensor.
        tensor: String,
    },
    /// An index that names no tensor.
    #[error("empty weight_map: the index names no tensor")]
    EmptyWeightMap,
    /// A shard of the index that is not among the files opened.
    #[error("shard {} was not opened", path_text(.shard))]
    ShardNotOpened {
        /// The shard.
        shard: PathBuf,
    },
    /// Tensors the index lists that their shards do not hold.
    #[error("tensors listed but missing from their shards: {count} (first: '{}', not in {})", excerpt(.first), path_text(.shard))]
    MissingTensors {
        /// How many.
        count: usize,
        /// The first, in name order.
        first: String,
        /// Its shard.
        shard: PathBuf,
    },
}

/// A shard that holds tensors its index does not list there: scanned all the same, and
/// said as a warning (`shard: tensors that index does not list in this shard: ...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnlistedTensors {
    /// The shard.
    pub shard: PathBuf,
    /// The index.
    pub index: PathBuf,
    /// How many tensors the index does not list in this shard.
    pub count: usize,
    /// The first of them, in name order.
    pub first: String,
}

impl std::fmt::Display for UnlistedTensors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: tensors that {} does not list in this shard: {} (first: '{}'); scanned all the same",
            path_text(&self.shard),
            path_text(&self.index),
            self.count,
            excerpt(&self.first)
        )
    }
}

/// Reads a `model.safetensors.index.json`: a JSON object whose `weight_map` maps each
/// tensor name to the name of the shard file that holds it, in the index's directory.
pub(crate) fn read_index(path: &Path) -> Result<Index, ScanInputError> {
    use ScanInputErrorKind as K;
    use std::io::Read;
    let fail = |kind: ScanInputErrorKind| ScanInputError { path: path.to_path_buf(), kind };
    let file = open_regular_file(path).map_err(|e| fail(K::NotRegular(e)))?;
    let len = file.metadata().map_err(|e| fail(K::Io(e)))?.len();
    if len > MAX_INDEX_BYTES {
        return Err(fail(K::OversizedIndex { len }));
    }
    // At most one byte past the limit, should the file grow meanwhile.
    let mut text = Vec::with_capacity(len as usize);
    (&file).take(MAX_INDEX_BYTES + 1).read_to_end(&mut text).map_err(|e| fail(K::Io(e)))?;
    if text.len() as u64 > MAX_INDEX_BYTES {
        return Err(fail(K::OversizedIndex { len: text.len() as u64 }));
    }
    let parsed: IndexFile = serde_json::from_slice(&text).map_err(|e| fail(K::InvalidIndex(e)))?;
    let directory = path.parent().unwrap_or(Path::new(""));
    let mut weight_map = BTreeMap::new();
    for (tensor, shard) in parsed.weight_map.0 {
        // `./s.safetensors` is `s.safetensors`, and is listed so, as a walk lists it.
        let components: Vec<Component> =
            Path::new(&shard).components().filter(|c| !matches!(c, Component::CurDir)).collect();
        if components.is_empty() || !components.iter().all(|c| matches!(c, Component::Normal(_))) {
            return Err(fail(K::ShardNotAFileName { shard }));
        }
        if weight_map
            .insert(tensor.clone(), components.iter().fold(directory.to_path_buf(), |p, c| p.join(c)))
            .is_some()
        {
            return Err(fail(K::ListedTwice { tensor }));
        }
    }
    if weight_map.is_empty() {
        return Err(fail(K::EmptyWeightMap));
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
