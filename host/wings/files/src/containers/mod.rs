//! Tensor containers: which one a file is ([`Container`]), and its header parsed into
//! its tensors ([`parse`]), each a [`TensorEntry`]: where its bytes are and how they are
//! checked ([`TensorElement`]).
//!
//! `.npy` headers, of files and of `.npz` members alike, are parsed by [`npy_header`]
//! into an entry by [`npy`] (linear time whatever the bytes; the dtype string read as
//! NumPy reads it, by [`npy_descr`]); `.npz` archives by
//! [`npz`]; `.safetensors` headers by [`safetensors`] (no key twice in any object; dtypes
//! kept as written, so that an unknown one is a tensor not scanned); a sharded
//! checkpoint's `*.safetensors.index.json` by [`index`]. Every tensor's bytes must lie
//! inside the file (or its inflated member). Every function returns an error instead of
//! panicking, whatever the bytes; every error's `Display` is one line, and echoes at most
//! [`bitexact_support::output::MAX_ECHO_CHARS`] characters of any name or dtype, escaped.
//!
//! Owns: what the bytes of a tensor file mean, up to where each tensor's data lies.
//! Uses: [`crate::source`] (positioned reads), [`crate::regular_file`] (an
//! index is checked to be a regular file), [`bitexact_support::element`] (the byte order
//! [`Endian`]) and [`crate::backend::count`] (the counting loop that
//! [`parse_checked`], the fuzz target's check, runs).

pub mod index;
pub mod npy;
pub mod npy_descr;
pub mod npy_header;
pub mod npz;
pub mod safetensors;

use crate::backend::count;
use crate::containers::npy::{NpyError, parse_npy};
use crate::containers::npz::{InflateError, NpzError};
use crate::containers::safetensors::{
    MAX_SAFETENSORS_HEADER, SAFETENSORS_LEN_BYTES, SafetensorsError, looks_like_safetensors, parse_safetensors,
};
use crate::source::Source;
use bitexact_support::element::Endian;
use shared::Format;
use std::ops::Range;
use std::path::Path;

/// Bytes read from the start of a file to parse its header: the longest header either
/// container accepts, with its length field.
pub(crate) const HEAD_BYTES: u64 = SAFETENSORS_LEN_BYTES as u64 + MAX_SAFETENSORS_HEADER;
const _: () = assert!(HEAD_BYTES >= npy_header::MAX_NPY_HEAD_BYTES);

/// The container formats `scan` reads (all three) and `normalize` writes (`.npy` and
/// `.safetensors`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Container {
    /// NumPy's `.npy`: one array.
    Npy,
    /// NumPy's `.npz`: a zip archive of `.npy` members, stored or deflated.
    Npz,
    /// Hugging Face's `.safetensors`: named tensors after a JSON header.
    Safetensors,
}

impl Container {
    /// The container named by `path`'s extension (`.npy`, `.npz`, `.safetensors`, in
    /// any case: `X.NPY` too), if any.
    pub(crate) fn from_extension(path: &Path) -> Option<Container> {
        let extension = path.extension()?.to_str()?;
        [("npy", Container::Npy), ("npz", Container::Npz), ("safetensors", Container::Safetensors)]
            .into_iter()
            .find_map(|(name, container)| extension.eq_ignore_ascii_case(name).then_some(container))
    }

    /// The container an output path names: `.npy` or `.safetensors` (`.npz` is read only).
    pub(crate) fn of_output(path: &Path) -> Option<Container> {
        Container::from_extension(path).filter(|&container| container != Container::Npz)
    }

    /// The container of an input file: by content first (NumPy's magic, a zip
    /// archive's, a safetensors header: see `looks_like_safetensors`), whatever the
    /// extension; else by extension, so that a damaged file of a known extension gets
    /// its container's own error. A file of a format `scan` does not read (a pickle, GGUF,
    /// HDF5, ONNX) is named as such.
    #[doc(hidden)]
    pub fn detect(path: &Path, bytes: &[u8]) -> Result<Container, UnknownContainer> {
        if bytes.starts_with(npy_header::NPY_MAGIC) {
            Ok(Container::Npy)
        } else if npz::MAGIC.iter().any(|magic| bytes.starts_with(magic)) {
            Ok(Container::Npz)
        } else if looks_like_safetensors(bytes) {
            Ok(Container::Safetensors)
        } else if let Some(other) = UnknownContainer::of_content(bytes) {
            Err(other)
        } else if let Some(container) = Container::from_extension(path) {
            Ok(container)
        } else if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("onnx")) {
            Err(UnknownContainer::Onnx)
        } else {
            Err(UnknownContainer::Unrecognised)
        }
    }
}

/// What a PyTorch checkpoint is told: by content (a pickle, or a zip archive holding a
/// `data.pkl`).
pub(crate) const PYTORCH_CHECKPOINT: &str =
    "a PyTorch pickle checkpoint: not supported; convert it to safetensors (safetensors.torch.save_file)";

/// A file that is none of the containers, by content or by extension: a format named
/// when its magic (or, for ONNX, which has none, its extension) says which.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnknownContainer {
    /// No format recognised.
    #[error("unknown file type (expected a .npy, .npz or .safetensors file)")]
    Unrecognised,
    /// A Python pickle (protocol 2 or later): what `torch.save` wrote before PyTorch 1.6.
    #[error("{PYTORCH_CHECKPOINT}")]
    Pickle,
    /// GGUF (magic `GGUF`): llama.cpp's format.
    #[error("a GGUF file: not supported (expected a .npy, .npz or .safetensors file)")]
    Gguf,
    /// HDF5 (magic `\x89HDF\r\n\x1a\n`): Keras' `.h5`.
    #[error("an HDF5 file: not supported (expected a .npy, .npz or .safetensors file)")]
    Hdf5,
    /// ONNX (extension `.onnx`).
    #[error("an ONNX model: not supported (expected a .npy, .npz or .safetensors file)")]
    Onnx,
}

impl UnknownContainer {
    /// The format `bytes` start like, among those named.
    fn of_content(bytes: &[u8]) -> Option<UnknownContainer> {
        match bytes {
            [0x80, 2..=5, ..] => Some(UnknownContainer::Pickle),
            _ if bytes.starts_with(b"GGUF") => Some(UnknownContainer::Gguf),
            _ if bytes.starts_with(b"\x89HDF\r\n\x1a\n") => Some(UnknownContainer::Hdf5),
            _ => None,
        }
    }
}

/// Why a container's bytes are refused by [`parse`] (or [`TensorFile::open`](crate::read::TensorFile::open)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ContainerError {
    /// An `.npy` file.
    #[error(transparent)]
    Npy(#[from] NpyError),
    /// An `.npz` archive.
    #[error(transparent)]
    Npz(#[from] NpzError),
    /// A `.safetensors` file.
    #[error(transparent)]
    Safetensors(#[from] SafetensorsError),
}

/// How the elements of a tensor are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorElement {
    /// A floating-point format with NaN and/or infinities: scanned.
    Float(Format, Endian),
    /// Complex numbers of two parts of a floating-point format, real then imaginary:
    /// scanned as `2 × elements` parts, so counts are of parts and indices are of parts
    /// in storage order (element `i`'s real part is `2i`, its imaginary part `2i + 1`),
    /// as in NumPy's `a.view(np.float32)`.
    Complex(Format, Endian),
    /// A type with no NaN or infinity encodings (integers, booleans, FP4/FP6): finite by
    /// construction, not scanned. The string says why.
    AlwaysFinite(&'static str),
    /// A type or storage that may hold NaN or infinities but that `scan` cannot read
    /// (E8M0, long double, structured, an `.npz` member compressed with another method):
    /// listed as not scanned, and the run cannot report "all finite". The string says why.
    Unsupported(&'static str),
}

impl TensorElement {
    /// Whether the element's dtype is one this tool does not know at all (as opposed to
    /// one it knows but does not scan): its data's size could not be checked.
    pub(crate) fn is_unknown_dtype(self) -> bool {
        self == TensorElement::Unsupported(npy::UNKNOWN_DTYPE)
    }

    /// The format and byte order the tensor's bytes are scanned as, if they are.
    pub(crate) fn scanned_as(self) -> Option<(Format, Endian)> {
        match self {
            TensorElement::Float(format, endian) | TensorElement::Complex(format, endian) => Some((format, endian)),
            TensorElement::AlwaysFinite(_) | TensorElement::Unsupported(_) => None,
        }
    }

    /// Values per element: 2 for complex, else 1.
    pub fn parts(self) -> u64 {
        if matches!(self, TensorElement::Complex(..)) { 2 } else { 1 }
    }
}

/// One tensor of a container: where its bytes are and how to read them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorEntry {
    /// Name in the container (`.npy` files hold one unnamed array, called `array`).
    pub name: String,
    /// The dtype as the container spells it (`F16`, `<f4`, ...).
    pub dtype: String,
    /// How elements are checked.
    pub element: TensorElement,
    /// Shape as stored.
    pub shape: Vec<u64>,
    /// Number of elements (the product of `shape`; 0 for an empty tensor).
    pub elements: u64,
    /// Byte range of the data within the file (within the inflated member when
    /// `deflated` is set); its length is `elements` times the element size (in bits,
    /// over 8, for sub-byte dtypes), and it lies inside the file (the member). Empty, and
    /// not read, for an [`TensorElement::Unsupported`] tensor whose element size is unknown.
    pub data: Range<usize>,
    /// For a deflated `.npz` member: where its compressed bytes are; the data is then
    /// inflated as it is scanned, a chunk at a time (see `TensorReader::for_each_chunk`).
    pub deflated: Option<Deflated>,
    /// `true` for a Fortran-ordered `.npy` array: element indices are then in storage
    /// (column-major) order.
    pub fortran_order: bool,
}

/// Where a deflated member's compressed bytes are, and what inflating them must give.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deflated {
    /// The compressed bytes, within the archive.
    pub compressed: Range<usize>,
    /// The member's inflated length, from the central directory.
    pub inflated_len: u64,
    /// The CRC-32 of the inflated member, from the central directory.
    pub crc32: u32,
}

/// Parses the header of a whole file held in `bytes` as `container` and returns its
/// tensors: what [`TensorFile::open`](crate::read::TensorFile::open) does with a file of these bytes.
///
/// Never panics, whatever the bytes; on success every tensor's `data` lies inside
/// `bytes` (or inside its inflated `.npz` member) and the other guarantees of
/// [`TensorFile::open`](crate::read::TensorFile::open) hold.
pub fn parse(container: Container, bytes: &[u8]) -> Result<Vec<TensorEntry>, ContainerError> {
    parse_file(container, &bytes[..bytes.len().min(HEAD_BYTES as usize)], Source::Bytes(bytes))
}

/// For the fuzz target (`fuzz/fuzz_targets/containers.rs`) and the wing's unit tests
/// (`host/wings/files/src/tests/header_fuzz.rs`), which share it: [`parse`], with its guarantees asserted (a
/// failed one panics). An error's message is one non-empty line; every tensor accepted lies inside `bytes` (or
/// inflates from them), its data as long as its shape and dtype say; scanning it
/// (inflating it, for a deflated member, where a failure must be a one-line error too)
/// finds at most as many non-finite values as it has values.
#[doc(hidden)]
pub fn parse_checked(container: Container, bytes: &[u8]) -> Result<Vec<TensorEntry>, ContainerError> {
    fn assert_one_line(error: &impl std::fmt::Display) {
        let message = error.to_string();
        assert!(!message.is_empty() && !message.contains('\n'), "bad message {message:?}");
    }
    let tensors = parse(container, bytes).inspect_err(assert_one_line)?;
    for t in &tensors {
        assert!(t.data.start <= t.data.end, "{t:?}");
        assert!(t.deflated.is_some() || t.data.end <= bytes.len(), "{t:?} outside {} bytes", bytes.len());
        let Some((format, endian)) = t.element.scanned_as() else { continue };
        let values = t.elements * t.element.parts();
        assert_eq!(t.data.len() as u64, values * format.bytes() as u64, "{t:?}");
        let mut non_finite = 0;
        match &t.deflated {
            None => non_finite = count::count_slice(format, endian, &bytes[t.data.clone()], 0).non_finite(),
            Some(deflated) => {
                let count = |_, data: &[u8]| {
                    non_finite += count::count_slice(format, endian, data, 0).non_finite();
                    Ok::<(), InflateError>(())
                };
                if let Err(error) = npz::inflate(Source::Bytes(bytes), deflated, t.data.clone(), 4096, count) {
                    assert_one_line(&error);
                }
            }
        }
        assert!(non_finite <= values, "{non_finite} non-finite of {values} values");
    }
    Ok(tensors)
}

/// Parses the header of `file` as `container`: `.npy` and `.safetensors` from `head`,
/// its first `min(len, HEAD_BYTES)` bytes; `.npz` by reading the archive where its
/// records are.
pub(crate) fn parse_file(
    container: Container,
    head: &[u8],
    file: Source<'_>,
) -> Result<Vec<TensorEntry>, ContainerError> {
    Ok(match container {
        Container::Npy => vec![parse_npy(head, file.len() as u64)?],
        Container::Npz => npz::parse(file)?,
        Container::Safetensors => parse_safetensors(head, file.len() as u64)?,
    })
}
