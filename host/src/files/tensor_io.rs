//! Tensor containers: `.npy`, `.npz` and `.safetensors` headers parsed from a file read
//! on demand, tensor data read the same way (a deflated `.npz` member's inflated as it
//! is read), and f32 / binary16 / bfloat16 tensors written atomically, streamed a chunk
//! at a time.
//!
//! `.npy` headers, of files and of `.npz` members alike, are parsed by [`npy_header`]
//! (linear time whatever the bytes); `.npz` archives by [`crate::files::npz`]; `.safetensors`
//! headers by `files::safetensors_header` (no key twice in any object; dtypes kept as
//! written, so that an unknown one is a tensor not scanned), after this module has
//! bounded the header size (so that a hostile length field cannot make it allocate
//! gigabytes), with the offsets checked here as the format's crate checks them. Every
//! tensor's bytes must lie inside the file (or its inflated member). Every function
//! returns an error instead of panicking, whatever the bytes; every error's `Display` is
//! one line, and echoes at most [`crate::support::output::MAX_ECHO_CHARS`] characters of
//! any name or dtype, escaped.
//!
//! Files are read with positioned reads (`pread`), not memory-mapped: a mapped file that
//! another program truncates kills the reader with SIGBUS, which no sound Rust can
//! catch, whereas a short read is an error like any other.

use crate::files::message::{io_message, one_line};
use crate::files::npy_header;
use crate::files::npz::{self, InflateError, NpzError};
use crate::files::safetensors_header;
use crate::files::scan::{self, Endian, Source, SourceReadError};
use crate::files::tensor::{
    BOOL, INTEGER, NpyError, ShapeOverflow, TensorElement, TensorEntry, UNKNOWN_DTYPE, element_count, parse_npy,
};
use crate::support::output::{excerpt, path_text};
use shared::Format;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Largest `.safetensors` JSON header accepted, in bytes. The format allows 100 MB; 2 MiB
/// is about 20,000 tensors, far more than real checkpoint files hold (a few hundred to
/// a few thousand), and keeps the parsed header and the report well under `scan`'s
/// 64 MiB heap budget (`tests/heap_bound.rs` measures the peak at this limit).
///
/// Parse time, measured on adversarial headers (release build, a loaded 2-core machine):
/// `serde_json` is one recursive-descent pass and refuses nesting over 128 at once; the
/// crate then sorts the tensors by offset (n log n) and fills hash maps. The costliest
/// families (tens of thousands of tensors, a shape of a million dimensions, a million
/// metadata keys, an unknown key holding 30-deep arrays) took 12 to 40 ns per byte at
/// 64 KiB and 35 to 130 ns at 16 MiB: 256 times the size, 3 to 9 times the cost per byte
/// (the sort's log factor and cache misses; quadratic work would be 256 times). At this
/// limit the worst took 0.3 s. (Measured with the crate's parse; `safetensors_header`,
/// which replaced it, makes the same kind of passes plus one that checks every object's
/// keys for repeats, and has not been measured on these families yet.)
pub const MAX_SAFETENSORS_HEADER: u64 = 2 << 20;
/// `.safetensors` files start with the header length as a little-endian u64.
const SAFETENSORS_LEN_BYTES: usize = 8;
/// Bytes read from the start of a file to parse its header: the longest header either
/// container accepts, with its length field.
const HEAD_BYTES: u64 = SAFETENSORS_LEN_BYTES as u64 + MAX_SAFETENSORS_HEADER;
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
    pub fn from_extension(path: &Path) -> Option<Container> {
        let extension = path.extension()?.to_str()?;
        [("npy", Container::Npy), ("npz", Container::Npz), ("safetensors", Container::Safetensors)]
            .into_iter()
            .find_map(|(name, container)| extension.eq_ignore_ascii_case(name).then_some(container))
    }

    /// The container an output path names: `.npy` or `.safetensors` (`.npz` is read only).
    pub fn of_output(path: &Path) -> Option<Container> {
        Container::from_extension(path).filter(|&container| container != Container::Npz)
    }

    /// The container of an input file: by extension, else by content: NumPy's magic, a
    /// zip archive's, or a safetensors header (see [`looks_like_safetensors`]).
    pub fn detect(path: &Path, bytes: &[u8]) -> Result<Container, UnknownContainer> {
        match Container::from_extension(path) {
            Some(container) => Ok(container),
            None if bytes.starts_with(npy_header::NPY_MAGIC) => Ok(Container::Npy),
            None if npz::MAGIC.iter().any(|magic| bytes.starts_with(magic)) => Ok(Container::Npz),
            None if looks_like_safetensors(bytes) => Ok(Container::Safetensors),
            None => Err(UnknownContainer),
        }
    }
}

/// A file that is none of the containers, by extension or by content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownContainer;

impl std::fmt::Display for UnknownContainer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("unknown file type (expected a .npy, .npz or .safetensors file)")
    }
}

impl std::error::Error for UnknownContainer {}

/// Why a container's bytes are refused by [`parse`] (or [`TensorFile::open`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum ContainerError {
    /// An `.npy` file.
    Npy(NpyError),
    /// An `.npz` archive.
    Npz(NpzError),
    /// A `.safetensors` file.
    Safetensors(SafetensorsError),
}

impl std::fmt::Display for ContainerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ContainerError::Npy(error) => error.fmt(f),
            ContainerError::Npz(error) => error.fmt(f),
            ContainerError::Safetensors(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for ContainerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ContainerError::Npy(error) => Some(error),
            ContainerError::Npz(error) => Some(error),
            ContainerError::Safetensors(error) => Some(error),
        }
    }
}

impl From<NpyError> for ContainerError {
    fn from(error: NpyError) -> ContainerError {
        ContainerError::Npy(error)
    }
}

impl From<NpzError> for ContainerError {
    fn from(error: NpzError) -> ContainerError {
        ContainerError::Npz(error)
    }
}

impl From<SafetensorsError> for ContainerError {
    fn from(error: SafetensorsError) -> ContainerError {
        ContainerError::Safetensors(error)
    }
}

/// Why a `.safetensors` header is refused by [`parse_safetensors`].
#[derive(Debug)]
#[non_exhaustive]
pub enum SafetensorsError {
    /// The file is shorter than the header length field.
    NoLength {
        /// The file's length.
        file_len: u64,
    },
    /// The length field exceeds [`MAX_SAFETENSORS_HEADER`].
    Oversized {
        /// Bytes claimed.
        len: u64,
    },
    /// The file ends before the header does.
    Truncated {
        /// Bytes of header claimed.
        claimed: u64,
        /// Bytes in the file after the length field.
        available: u64,
    },
    /// A tensor name appears twice.
    DuplicateName {
        /// The name.
        name: String,
    },
    /// A key appears twice in one object inside a tensor's entry or the metadata.
    DuplicateKey {
        /// The key.
        key: String,
        /// The top-level key (tensor name or `__metadata__`) it lies under.
        entry: String,
    },
    /// A header that is not what the format prescribes.
    Invalid(serde_json::Error),
    /// The tensors claim more data than the file holds.
    DataBeyondEnd {
        /// Bytes the header describes.
        claimed: u64,
        /// Bytes in the file after the header.
        available: u64,
    },
    /// Bytes after the last tensor's data.
    TrailingBytes {
        /// How many.
        count: u64,
    },
    /// A tensor whose data does not start where the previous one's ends (in order of
    /// offsets; the first at 0).
    OffsetsOutOfOrder {
        /// The name.
        name: String,
        /// Where its data starts.
        start: usize,
        /// Where it should.
        expected: usize,
    },
    /// A tensor whose shape's element count overflows.
    Shape(ShapeOverflow),
    /// A tensor whose data offsets do not match its shape and dtype.
    Offsets {
        /// The name.
        name: String,
    },
}

impl std::fmt::Display for SafetensorsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SafetensorsError::NoLength { file_len } => {
                write!(f, "truncated: {file_len} bytes, shorter than the 8-byte header length")
            }
            SafetensorsError::Oversized { len } => {
                write!(f, "oversized header: {len} bytes (limit {MAX_SAFETENSORS_HEADER})")
            }
            SafetensorsError::Truncated { claimed, available } => {
                write!(f, "truncated header: claims {claimed} bytes, file holds {available} after the length")
            }
            SafetensorsError::DuplicateName { name } => {
                write!(f, "tensor name '{}' appears twice in the header", excerpt(name))
            }
            SafetensorsError::DuplicateKey { key, entry } => {
                write!(f, "key '{}' appears twice in the entry of '{}'", excerpt(key), excerpt(entry))
            }
            SafetensorsError::Invalid(error) => write!(f, "invalid header: {error}"),
            SafetensorsError::DataBeyondEnd { claimed, available } => {
                write!(f, "header claims {claimed} data bytes, the file holds only {available} after the header")
            }
            SafetensorsError::TrailingBytes { count } => {
                write!(f, "{count} bytes after the last tensor belong to no tensor")
            }
            SafetensorsError::OffsetsOutOfOrder { name, start, expected } => write!(
                f,
                "tensor '{}': data_offsets start at {start}, where the data before it ends at {expected}",
                excerpt(name)
            ),
            SafetensorsError::Shape(error) => error.fmt(f),
            SafetensorsError::Offsets { name } => {
                write!(f, "tensor '{}': data_offsets do not match its shape and dtype", excerpt(name))
            }
        }
    }
}

impl std::error::Error for SafetensorsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SafetensorsError::Invalid(error) => Some(error),
            SafetensorsError::Shape(error) => Some(error),
            _ => None,
        }
    }
}

impl From<ShapeOverflow> for SafetensorsError {
    fn from(error: ShapeOverflow) -> SafetensorsError {
        SafetensorsError::Shape(error)
    }
}

/// Why a tensor file cannot be opened or read: the file's path and what went wrong.
/// Displayed as `path: what`, on one line.
#[derive(Debug)]
pub struct TensorFileError {
    /// The file, as given.
    pub path: PathBuf,
    /// What went wrong.
    pub kind: TensorFileErrorKind,
}

/// What went wrong with a tensor file: see [`TensorFileError`].
#[derive(Debug)]
#[non_exhaustive]
pub enum TensorFileErrorKind {
    /// It is missing, or not a regular file.
    NotRegular(RegularFileError),
    /// Opening it or reading its metadata failed.
    Io(std::io::Error),
    /// It is empty.
    Empty,
    /// Reading its start failed.
    Read(SourceReadError),
    /// It is none of the containers.
    Unknown(UnknownContainer),
    /// Its container's bytes are refused.
    Container(ContainerError),
    /// Opening it again, to read its data, failed.
    Reopen(std::io::Error),
    /// Another file was renamed over it after its header was read.
    Replaced,
}

impl std::fmt::Display for TensorFileErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TensorFileErrorKind::NotRegular(error) => error.fmt(f),
            TensorFileErrorKind::Io(error) => f.write_str(&io_message(error)),
            TensorFileErrorKind::Empty => f.write_str("empty file"),
            TensorFileErrorKind::Read(error) => error.fmt(f),
            TensorFileErrorKind::Unknown(error) => error.fmt(f),
            TensorFileErrorKind::Container(error) => error.fmt(f),
            TensorFileErrorKind::Reopen(error) => {
                write!(f, "cannot open again after its header was read: {}", io_message(error))
            }
            TensorFileErrorKind::Replaced => f.write_str("replaced by another file after its header was read"),
        }
    }
}

impl std::fmt::Display for TensorFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", path_text(&self.path), one_line(&self.kind))
    }
}

impl std::error::Error for TensorFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            TensorFileErrorKind::NotRegular(error) => Some(error),
            TensorFileErrorKind::Io(error) | TensorFileErrorKind::Reopen(error) => Some(error),
            TensorFileErrorKind::Read(error) => Some(error),
            TensorFileErrorKind::Unknown(error) => Some(error),
            TensorFileErrorKind::Container(error) => Some(error),
            TensorFileErrorKind::Empty | TensorFileErrorKind::Replaced => None,
        }
    }
}

/// `true` if `bytes` start like a `.safetensors` file: a little-endian header length
/// that fits the file and [`MAX_SAFETENSORS_HEADER`], then a JSON object's `{` (the
/// `safetensors` crate refuses a header that starts with anything else). Neither NumPy's
/// magic nor a zip archive's can pass: both would claim a header of terabytes.
pub fn looks_like_safetensors(bytes: &[u8]) -> bool {
    let Some((length_field, rest)) = bytes.split_first_chunk::<SAFETENSORS_LEN_BYTES>() else {
        return false;
    };
    let header_len = u64::from_le_bytes(*length_field);
    header_len >= 2 && header_len <= MAX_SAFETENSORS_HEADER.min(rest.len() as u64) && rest.first() == Some(&b'{')
}

/// A tensor file whose header has been parsed. It holds no open file descriptor (so
/// that any number of files can be checked before any is scanned); [`TensorFile::reader`]
/// opens it again to read the data.
pub struct TensorFile {
    /// The path as given.
    pub path: PathBuf,
    /// The container format.
    pub container: Container,
    /// The tensors, in file order.
    pub tensors: Vec<TensorEntry>,
    /// Device and inode of the file whose header was parsed.
    identity: (u64, u64),
}

impl TensorFile {
    /// Opens `path` and parses its header: the start of the file, or an `.npz` archive's
    /// central directory and its members' headers. Errors name the path.
    ///
    /// Guarantees on success: every tensor's `data` range lies inside the file as it was
    /// when opened (or inside its inflated member), and its length matches shape ×
    /// element size. Nothing of the data is read (but the first bytes of each `.npz`
    /// member, which hold its header).
    pub fn open(path: &Path) -> Result<TensorFile, TensorFileError> {
        use std::os::unix::fs::MetadataExt;
        let fail = |kind: TensorFileErrorKind| TensorFileError { path: path.to_path_buf(), kind };
        check_regular_file(path).map_err(|e| fail(TensorFileErrorKind::NotRegular(e)))?;
        let file = File::open(path).map_err(|e| fail(TensorFileErrorKind::Io(e)))?;
        let metadata = file.metadata().map_err(|e| fail(TensorFileErrorKind::Io(e)))?;
        if metadata.len() == 0 {
            return Err(fail(TensorFileErrorKind::Empty));
        }
        let mut head = vec![0; metadata.len().min(HEAD_BYTES) as usize];
        file.read_exact_at(&mut head, 0)
            .map_err(|e| fail(TensorFileErrorKind::Read(read_error(&file, e, head.len() as u64))))?;
        let container = Container::detect(path, &head).map_err(|e| fail(TensorFileErrorKind::Unknown(e)))?;
        let read = |offset: u64, buf: &mut [u8]| {
            file.read_exact_at(buf, offset).map_err(|e| read_error(&file, e, offset + buf.len() as u64))
        };
        let whole = Source::Read { len: metadata.len() as usize, read: &read };
        let tensors = parse_file(container, &head, whole).map_err(|e| fail(TensorFileErrorKind::Container(e)))?;
        Ok(TensorFile { path: path.to_path_buf(), container, tensors, identity: (metadata.dev(), metadata.ino()) })
    }

    /// `true` if `path` names the file whose header was parsed (by another name, maybe).
    pub fn is_at(&self, path: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == self.identity)
    }

    /// Opens the file again to read its tensors' data. It must still be the file whose
    /// header was parsed (not one renamed over it since). Errors name the path.
    pub fn reader(&self) -> Result<TensorReader, TensorFileError> {
        use std::os::unix::fs::MetadataExt;
        let fail = |kind: TensorFileErrorKind| TensorFileError { path: self.path.clone(), kind };
        let file = File::open(&self.path).map_err(|e| fail(TensorFileErrorKind::Reopen(e)))?;
        let metadata = file.metadata().map_err(|e| fail(TensorFileErrorKind::Io(e)))?;
        if (metadata.dev(), metadata.ino()) != self.identity {
            return Err(fail(TensorFileErrorKind::Replaced));
        }
        Ok(TensorReader { file })
    }
}

/// A [`TensorFile`] open for reading its data.
pub struct TensorReader {
    file: File,
}

impl TensorReader {
    /// Calls `use_chunk(first_byte, source)` on the bytes of `tensor` (one of the file's
    /// tensors) in order, `first_byte` counted from the start of its data: once, with a
    /// source that reads them from the file on demand, for data in the file; and
    /// `chunk_bytes` at a time in memory (the last chunk shorter) for a deflated `.npz`
    /// member, which is inflated as it goes and whose length and CRC-32 are checked at
    /// its end. `chunk_bytes` should be a multiple of the element size, so that every
    /// chunk holds whole elements.
    ///
    /// Errors: `use_chunk`'s, as it returned them, or the inflater's. A file that has
    /// shrunk since its header was read is an error ([`SourceReadError::Shrank`], from the
    /// source handed to `use_chunk` or from the inflater); one rewritten in place
    /// meanwhile gives whatever the bytes are now, as for any reader racing a writer.
    pub fn for_each_chunk<E: From<InflateError>>(
        &self,
        tensor: &TensorEntry,
        chunk_bytes: usize,
        mut use_chunk: impl FnMut(u64, Source<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        match &tensor.deflated {
            None => {
                let start = tensor.data.start as u64;
                let read = |offset: u64, buf: &mut [u8]| self.read_at(start + offset, buf, tensor.data.end as u64);
                use_chunk(0, Source::Read { len: tensor.data.len(), read: &read })
            }
            Some(deflated) => {
                let end = deflated.compressed.end;
                let read = |offset: u64, buf: &mut [u8]| self.read_at(offset, buf, end as u64);
                let archive = Source::Read { len: end, read: &read };
                npz::inflate(archive, deflated, tensor.data.clone(), chunk_bytes, |first_byte, bytes| {
                    use_chunk(first_byte, Source::Bytes(bytes))
                })
            }
        }
    }

    /// Fills `buf` with the file's bytes from `offset` on; `needed`, the length the file
    /// must have for the read at hand, is named if it has shrunk.
    fn read_at(&self, offset: u64, buf: &mut [u8], needed: u64) -> Result<(), SourceReadError> {
        self.file.read_exact_at(buf, offset).map_err(|e| read_error(&self.file, e, needed))
    }
}

/// A failed read of `file`: a read past the end means the file shrank after it was
/// opened (another program truncated or rewrote it); `needed` is the length the read
/// needed.
fn read_error(file: &File, error: std::io::Error, needed: u64) -> SourceReadError {
    if error.kind() == std::io::ErrorKind::UnexpectedEof {
        SourceReadError::Shrank { now: file.metadata().map(|m| m.len()), needed }
    } else {
        SourceReadError::Failed(error)
    }
}

/// Parses the header of a whole file held in `bytes` as `container` and returns its
/// tensors: what [`TensorFile::open`] does with a file of these bytes.
///
/// Never panics, whatever the bytes; on success every tensor's `data` lies inside
/// `bytes` (or inside its inflated `.npz` member) and the other guarantees of
/// [`TensorFile::open`] hold.
pub fn parse(container: Container, bytes: &[u8]) -> Result<Vec<TensorEntry>, ContainerError> {
    parse_file(container, &bytes[..bytes.len().min(HEAD_BYTES as usize)], Source::Bytes(bytes))
}

/// For the fuzz target (`fuzz/fuzz_targets/containers.rs`) and `tests/header_fuzz.rs`,
/// which share it: [`parse`], with its guarantees asserted (a failed one panics). An
/// error's message is one non-empty line; every tensor accepted lies inside `bytes` (or
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
            None => non_finite = scan::count_slice(format, endian, &bytes[t.data.clone()], 0).non_finite(),
            Some(deflated) => {
                let count = |_, data: &[u8]| {
                    non_finite += scan::count_slice(format, endian, data, 0).non_finite();
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
fn parse_file(container: Container, head: &[u8], file: Source<'_>) -> Result<Vec<TensorEntry>, ContainerError> {
    Ok(match container {
        Container::Npy => vec![parse_npy(head, file.len() as u64)?],
        Container::Npz => npz::parse(file)?,
        Container::Safetensors => parse_safetensors(head, file.len() as u64)?,
    })
}

/// Parses a `.safetensors` header, after its length has been checked against
/// [`MAX_SAFETENSORS_HEADER`] and the file size: no key may appear twice anywhere in it,
/// every tensor's data must follow the previous one's with the size its shape and dtype
/// give, and together they must cover the rest of the file exactly. The checks are the
/// `safetensors` crate's (`Metadata::validate`), made here so that a dtype the crate does
/// not know is one tensor listed as not scanned (its size unchecked), not the whole
/// file refused.
pub fn parse_safetensors(head: &[u8], file_len: u64) -> Result<Vec<TensorEntry>, SafetensorsError> {
    let Some((length_field, rest)) = head.split_first_chunk::<SAFETENSORS_LEN_BYTES>() else {
        return Err(SafetensorsError::NoLength { file_len });
    };
    let header_len = u64::from_le_bytes(*length_field);
    if header_len > MAX_SAFETENSORS_HEADER {
        return Err(SafetensorsError::Oversized { len: header_len });
    }
    let after_length = file_len.saturating_sub(SAFETENSORS_LEN_BYTES as u64);
    let Some(header) = rest.get(..header_len as usize).filter(|_| header_len <= after_length) else {
        return Err(SafetensorsError::Truncated { claimed: header_len, available: after_length });
    };
    // Before the parse, whose maps would keep the last of two entries of one name.
    if let Some(repeated) = safetensors_header::duplicate_key(header) {
        return Err(match repeated.entry {
            None => SafetensorsError::DuplicateName { name: repeated.key },
            Some(entry) => SafetensorsError::DuplicateKey { key: repeated.key, entry },
        });
    }
    let mut entries = safetensors_header::entries(header).map_err(SafetensorsError::Invalid)?;
    // Stable: tensors of equal offsets (empty ones) stay in file order.
    entries.sort_by_key(|(_, entry)| entry.data_offsets);
    let data_start = SAFETENSORS_LEN_BYTES + header.len();
    let mut tensors = Vec::with_capacity(entries.len());
    let mut data_len = 0;
    // `data` is relative to the data section until the section is known to fit the file.
    for (name, entry) in entries {
        let (start, end) = entry.data_offsets;
        if start != data_len || end < start {
            return Err(SafetensorsError::OffsetsOutOfOrder { name, start, expected: data_len });
        }
        data_len = end;
        let dtype = safetensors_header::known_dtype(&entry.dtype);
        let element = dtype.map_or(TensorElement::Unsupported(UNKNOWN_DTYPE), safetensors_element);
        let elements = element_count(&name, &entry.shape)?;
        // Unknown dtypes have no size to check; their data is not read.
        let size_matches =
            dtype.is_none_or(|dtype| (elements as u128) * (dtype.bitsize() as u128) == ((end - start) as u128) * 8);
        if !size_matches {
            return Err(SafetensorsError::Offsets { name });
        }
        tensors.push(TensorEntry {
            dtype: dtype.map_or(entry.dtype, |dtype| format!("{dtype:?}")),
            element,
            shape: entry.shape,
            elements,
            data: start..end,
            deflated: None,
            fortran_order: false,
            name,
        });
    }
    let file_data_len = after_length - header_len;
    if data_len as u64 > file_data_len {
        return Err(SafetensorsError::DataBeyondEnd { claimed: data_len as u64, available: file_data_len });
    }
    if (data_len as u64) < file_data_len {
        return Err(SafetensorsError::TrailingBytes { count: file_data_len - data_len as u64 });
    }
    for tensor in &mut tensors {
        tensor.data = data_start + tensor.data.start..data_start + tensor.data.end;
    }
    Ok(tensors)
}

/// How a safetensors dtype is checked. E8M0 (whose 0xFF is NaN, but which has no sign
/// bit for `shared`'s classification to work on) and dtypes newer than the crate are
/// [`TensorElement::Unsupported`].
fn safetensors_element(dtype: safetensors::Dtype) -> TensorElement {
    use safetensors::Dtype as D;
    let float = |format: Format| TensorElement::Float(format, Endian::Little);
    match dtype {
        D::F16 => float(Format::Binary16),
        D::BF16 => float(Format::Bfloat16),
        D::F32 => float(Format::Binary32),
        D::F64 => float(Format::Binary64),
        D::F8_E4M3 => float(Format::Fp8E4m3),
        D::F8_E5M2 => float(Format::Fp8E5m2),
        D::F8_E4M3FNUZ => float(Format::Fp8E4m3Fnuz),
        D::F8_E5M2FNUZ => float(Format::Fp8E5m2Fnuz),
        D::C64 => TensorElement::Complex(Format::Binary32, Endian::Little),
        D::BOOL => TensorElement::AlwaysFinite(BOOL),
        D::U8 | D::I8 | D::U16 | D::I16 | D::U32 | D::I32 | D::U64 | D::I64 => TensorElement::AlwaysFinite(INTEGER),
        D::F4 | D::F6_E2M3 | D::F6_E3M2 => TensorElement::AlwaysFinite("MX format without NaN or infinity"),
        D::F8_E8M0 => TensorElement::Unsupported("E8M0 is not supported"),
        _ => TensorElement::Unsupported("dtype not supported"),
    }
}

/// Why a path given as an input file is not one; displayed as a short phrase ("no such
/// file or directory", "is a directory").
#[derive(Debug)]
#[non_exhaustive]
pub enum RegularFileError {
    /// Its metadata cannot be read (it does not exist, or may not be looked at).
    Io(std::io::Error),
    /// It is a directory.
    IsDirectory,
    /// It is neither a file nor a directory (a device, a pipe, a socket).
    NotRegular,
    /// It is a symbolic link to nothing (what an interrupted download can leave).
    DanglingLink,
}

impl std::fmt::Display for RegularFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RegularFileError::Io(error) => f.write_str(&io_message(error)),
            RegularFileError::IsDirectory => f.write_str("is a directory"),
            RegularFileError::NotRegular => f.write_str("not a regular file"),
            RegularFileError::DanglingLink => f.write_str("broken symbolic link: its target does not exist"),
        }
    }
}

impl std::error::Error for RegularFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RegularFileError::Io(error) => Some(error),
            RegularFileError::IsDirectory | RegularFileError::NotRegular | RegularFileError::DanglingLink => None,
        }
    }
}

/// `Ok` if `path` names an existing regular file (or a link to one); else why not.
/// Nothing is opened: a FIFO is refused without blocking.
pub fn check_regular_file(path: &Path) -> Result<(), RegularFileError> {
    let metadata = std::fs::metadata(path).map_err(|error| {
        let is_link = || std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        if error.kind() == std::io::ErrorKind::NotFound && is_link() {
            RegularFileError::DanglingLink
        } else {
            RegularFileError::Io(error)
        }
    })?;
    if metadata.is_dir() {
        Err(RegularFileError::IsDirectory)
    } else if !metadata.is_file() {
        Err(RegularFileError::NotRegular)
    } else {
        Ok(())
    }
}

/// Why an output cannot be written: the output path and what went wrong. Displayed as
/// `path: what`, on one line.
#[derive(Debug)]
pub struct TensorWriteError {
    /// The output path, as given.
    pub path: PathBuf,
    /// What went wrong.
    pub kind: TensorWriteErrorKind,
}

/// What went wrong with an output: see [`TensorWriteError`].
#[derive(Debug)]
#[non_exhaustive]
pub enum TensorWriteErrorKind {
    /// The output is the input file.
    IsInput,
    /// Its extension names no container that can be written.
    UnknownExtension,
    /// It is a directory.
    IsDirectory,
    /// It exists, and replacing it was not asked for.
    Exists,
    /// The shape does not hold the number of values given.
    ShapeMismatch {
        /// The shape.
        shape: Vec<u64>,
        /// Values given.
        values: u64,
    },
    /// `.npy` cannot hold values of this type: NumPy has no bfloat16.
    NoNpyDtype {
        /// The values' type.
        dtype: Dtype,
    },
    /// The tensor name is one the format reserves.
    ReservedName {
        /// The name.
        name: String,
    },
    /// The temporary file cannot be created.
    CreateTemporary {
        /// Where it was to be.
        directory: PathBuf,
        /// Why not.
        error: std::io::Error,
    },
    /// The temporary file's mode cannot be set.
    SetMode(std::io::Error),
    /// Writing or syncing the temporary file failed.
    Write(std::io::Error),
    /// The values could not be produced (the source's own error).
    Values(Box<dyn std::error::Error + Send + Sync>),
    /// The `.safetensors` header cannot be serialised.
    Header(serde_json::Error),
    /// The temporary file cannot be renamed onto the output.
    Rename(std::io::Error),
}

impl std::fmt::Display for TensorWriteErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TensorWriteErrorKind::IsInput => f.write_str("is the input file; choose another output path"),
            TensorWriteErrorKind::UnknownExtension => {
                f.write_str("unknown output extension (expected .npy or .safetensors)")
            }
            TensorWriteErrorKind::IsDirectory => f.write_str("is a directory"),
            TensorWriteErrorKind::Exists => f.write_str("already exists (use --force to replace it)"),
            TensorWriteErrorKind::ShapeMismatch { shape, values } => {
                write!(f, "shape {shape:?} does not hold {values} values")
            }
            TensorWriteErrorKind::NoNpyDtype { dtype } => write!(
                f,
                ".npy cannot hold --dtype {} (NumPy has no such dtype); write a .safetensors output instead, \
                 or use --dtype f16 or f32",
                dtype.name()
            ),
            TensorWriteErrorKind::ReservedName { name } => {
                write!(f, "tensor name '{}' is reserved by the format", excerpt(name))
            }
            TensorWriteErrorKind::CreateTemporary { directory, error } => {
                write!(f, "cannot create a temporary file in {}: {}", path_text(directory), io_message(error))
            }
            TensorWriteErrorKind::SetMode(error) => {
                write!(f, "cannot set the mode of the temporary file: {}", io_message(error))
            }
            TensorWriteErrorKind::Write(error) => write!(f, "write failed: {}", io_message(error)),
            TensorWriteErrorKind::Values(error) => write!(f, "write failed: {error}"),
            TensorWriteErrorKind::Header(error) => write!(f, "write failed: invalid header: {error}"),
            TensorWriteErrorKind::Rename(error) => {
                write!(f, "cannot rename the temporary file into place: {}", io_message(error))
            }
        }
    }
}

impl std::fmt::Display for TensorWriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", path_text(&self.path), one_line(&self.kind))
    }
}

impl std::error::Error for TensorWriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            TensorWriteErrorKind::CreateTemporary { error, .. }
            | TensorWriteErrorKind::SetMode(error)
            | TensorWriteErrorKind::Write(error)
            | TensorWriteErrorKind::Rename(error) => Some(error),
            TensorWriteErrorKind::Values(error) => Some(error.as_ref()),
            TensorWriteErrorKind::Header(error) => Some(error),
            _ => None,
        }
    }
}

/// Checks, before any work, that `output` may be written: its extension names a
/// container, it is not `input` (same file after resolving links), and it does not exist
/// unless `force`. Returns the container; errors name the file.
pub fn check_output(output: &Path, input: &Path, force: bool) -> Result<Container, TensorWriteError> {
    let fail = |kind: TensorWriteErrorKind| Err(TensorWriteError { path: output.to_path_buf(), kind });
    let same = matches!((output.canonicalize(), input.canonicalize()), (Ok(a), Ok(b)) if a == b);
    if same {
        return fail(TensorWriteErrorKind::IsInput);
    }
    let Some(container) = Container::of_output(output) else {
        return fail(TensorWriteErrorKind::UnknownExtension);
    };
    // `symlink_metadata`, not `exists`: a dangling symlink is there too (and the final
    // no-clobber rename would refuse it after all the work).
    if output.symlink_metadata().is_ok() {
        if output.is_dir() {
            return fail(TensorWriteErrorKind::IsDirectory);
        }
        if !force {
            return fail(TensorWriteErrorKind::Exists);
        }
    }
    Ok(container)
}

/// Checks, before any work, that `container` can hold values of `dtype` (`.npy` cannot
/// hold bfloat16: NumPy has no such dtype); the error names `output`.
pub fn check_dtype(output: &Path, container: Container, dtype: Dtype) -> Result<(), TensorWriteError> {
    if dtype.npy_descr().is_none() && container == Container::Npy {
        return Err(TensorWriteError { path: output.to_path_buf(), kind: TensorWriteErrorKind::NoNpyDtype { dtype } });
    }
    Ok(())
}

/// Values per chunk when a tensor is written: 4 MiB of f32, so that writing holds a few
/// MiB however large the tensor is.
pub const WRITE_CHUNK_ELEMENTS: usize = 1 << 20;

/// The element type of a written tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    /// IEEE 754 binary32: `.npy` `<f4`, `.safetensors` `F32`.
    F32,
    /// IEEE 754 binary16: `.npy` `<f2`, `.safetensors` `F16`.
    F16,
    /// bfloat16: `.safetensors` `BF16`; NumPy has no such dtype, so no `.npy`.
    Bf16,
}

impl Dtype {
    /// `f32`, `f16` or `bf16`, as `--dtype` and the reports spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
        }
    }

    /// Bytes per value.
    pub const fn bytes(self) -> u64 {
        match self {
            Dtype::F32 => 4,
            Dtype::F16 | Dtype::Bf16 => 2,
        }
    }

    /// The `.safetensors` dtype string.
    pub const fn safetensors_name(self) -> &'static str {
        match self {
            Dtype::F32 => "F32",
            Dtype::F16 => "F16",
            Dtype::Bf16 => "BF16",
        }
    }

    /// The `.npy` type string (little-endian), or `None` where NumPy has no dtype.
    pub const fn npy_descr(self) -> Option<&'static str> {
        match self {
            Dtype::F32 => Some("<f4"),
            Dtype::F16 => Some("<f2"),
            Dtype::Bf16 => None,
        }
    }
}

/// A [`Dtype`] as a type, so that a [`TensorSource`]'s values have the right width by
/// construction: [`AsF32`], [`AsF16`], [`AsBf16`].
pub trait DtypeOf {
    /// The dtype.
    const DTYPE: Dtype;
    /// How one value is held in memory: the f32 itself, or the 16 bits of a binary16 or
    /// bfloat16 encoding.
    type Stored: bytemuck::Pod + Default + Send + Sync;
}

/// f32 values, held as `f32`.
#[derive(Clone, Copy, Debug)]
pub enum AsF32 {}
/// binary16 values, held as their `u16` encodings.
#[derive(Clone, Copy, Debug)]
pub enum AsF16 {}
/// bfloat16 values, held as their `u16` encodings.
#[derive(Clone, Copy, Debug)]
pub enum AsBf16 {}

impl DtypeOf for AsF32 {
    const DTYPE: Dtype = Dtype::F32;
    type Stored = f32;
}

impl DtypeOf for AsF16 {
    const DTYPE: Dtype = Dtype::F16;
    type Stored = u16;
}

impl DtypeOf for AsBf16 {
    const DTYPE: Dtype = Dtype::Bf16;
    type Stored = u16;
}

/// The stored form of the values of a [`TensorSource`].
pub type StoredOf<S> = <<S as TensorSource>::Dtype as DtypeOf>::Stored;

/// A tensor's values in flat order, produced a chunk at a time, so that writing one
/// never needs them all in memory. `Sync`: the next chunk is produced while the
/// previous one is written, on another thread.
pub trait TensorSource: Sync {
    /// The values' type.
    type Dtype: DtypeOf;
    /// Why values cannot be produced.
    type Error: std::error::Error + Send + Sync + 'static;
    /// How many values there are.
    fn elements(&self) -> u64;
    /// Writes values `start .. start + out.len()` into `out` (a range within
    /// [`TensorSource::elements`]).
    fn fill(&self, start: u64, out: &mut [StoredOf<Self>]) -> Result<(), Self::Error>;
}

/// Values asked for beyond the end of a slice of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValuesOutOfRange {
    /// The first value asked for.
    pub start: u64,
}

impl std::fmt::Display for ValuesOutOfRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "values {}.. are out of range", self.start)
    }
}

impl std::error::Error for ValuesOutOfRange {}

impl TensorSource for [f32] {
    type Dtype = AsF32;
    type Error = ValuesOutOfRange;

    fn elements(&self) -> u64 {
        self.len() as u64
    }

    fn fill(&self, start: u64, out: &mut [f32]) -> Result<(), ValuesOutOfRange> {
        let values = usize::try_from(start).ok().and_then(|start| self.get(start..start.checked_add(out.len())?));
        out.copy_from_slice(values.ok_or(ValuesOutOfRange { start })?);
        Ok(())
    }
}

/// Writes the f32 tensor `data` of `shape` to `out`: [`write_from`] of a slice.
pub fn write_f32(out: &Path, name: &str, shape: &[u64], data: &[f32], force: bool) -> Result<(), TensorWriteError> {
    write_from(out, name, shape, data, force)
}

/// Writes a tensor of `shape` to `out` as the container its extension names: [`stage`],
/// then [`StagedOutput::commit`].
pub fn write_from(
    out: &Path,
    name: &str,
    shape: &[u64],
    data: &(impl TensorSource + ?Sized),
    force: bool,
) -> Result<(), TensorWriteError> {
    stage(out, name, shape, data, force)?.commit()
}

/// Writes a tensor of `shape` with the values' dtype (`.npy`: `<f4` or `<f2`;
/// `.safetensors`: `F32`, `F16` or `BF16`; `.npy` refuses bfloat16, see [`check_dtype`]),
/// for `out`, as the container its extension names,
/// under the tensor name `name` for `.safetensors` (any name but the format's reserved
/// `__metadata__`), its values taken from `data` [`WRITE_CHUNK_ELEMENTS`] at a time
/// (the next chunk produced while the previous one is written, two chunks in memory),
/// into a temporary file in `out`'s directory, synced; `out` itself is not touched until
/// [`StagedOutput::commit`]. [`StagedOutput::phases`] says where the time went.
///
/// Permissions, as other tools give them: a new output gets the mode `open(..., 0666)`
/// gives under the umask (so `0644` under the usual `022`), like a shell's `>` or `cp`
/// to a new file; with `force`, a replaced file's permission bits are kept, like `cp`
/// onto an existing file (`install`, by contrast, sets `0755` or its `-m`). The owner is
/// whoever runs the command, as with any replace-by-rename.
///
/// On any error the temporary file is removed and `out` is left as it was; so is it if
/// the result is dropped without being committed.
pub fn stage<S: TensorSource + ?Sized>(
    out: &Path,
    name: &str,
    shape: &[u64],
    data: &S,
    force: bool,
) -> Result<StagedOutput, TensorWriteError> {
    use std::os::unix::fs::PermissionsExt;
    let fail = |kind: TensorWriteErrorKind| TensorWriteError { path: out.to_path_buf(), kind };
    let container = Container::of_output(out).ok_or_else(|| fail(TensorWriteErrorKind::UnknownExtension))?;
    check_dtype(out, container, S::Dtype::DTYPE)?;
    if shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d)) != Some(data.elements()) {
        return Err(fail(TensorWriteErrorKind::ShapeMismatch { shape: shape.to_vec(), values: data.elements() }));
    }
    if container == Container::Safetensors && name == safetensors_header::METADATA_KEY {
        // The crate would write it, but every reader takes that key for the metadata map.
        return Err(fail(TensorWriteErrorKind::ReservedName { name: name.to_string() }));
    }
    let directory = match out.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let replaced_mode = match std::fs::metadata(out) {
        Ok(metadata) if force && metadata.is_file() => Some(metadata.permissions().mode() & 0o777),
        _ => None,
    };
    // The kernel applies the umask to the mode asked for here; a replaced file's mode is
    // then set exactly, before any data is written.
    let mut temporary = tempfile::Builder::new()
        .prefix(".bitexact-")
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(replaced_mode.unwrap_or(0o666)))
        .tempfile_in(directory)
        .map_err(|error| fail(TensorWriteErrorKind::CreateTemporary { directory: directory.to_path_buf(), error }))?;
    let pending = PendingTemporary::register(temporary.path());
    if let Some(mode) = replaced_mode {
        temporary
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| fail(TensorWriteErrorKind::SetMode(e)))?;
    }
    let mut phases = WritePhases::default();
    let mut writer = BufWriter::with_capacity(1 << 20, temporary.as_file_mut());
    match container {
        Container::Npy => write_npy(&mut writer, shape, data, &mut phases),
        Container::Safetensors => write_safetensors(&mut writer, name, shape, data, &mut phases),
        // `of_output` has refused it above.
        Container::Npz => Err(TensorWriteErrorKind::UnknownExtension),
    }
    .and_then(|()| writer.into_inner().map(drop).map_err(|e| TensorWriteErrorKind::Write(e.into_error())))
    .and_then(|()| {
        let start = Instant::now();
        temporary.as_file().sync_all().map_err(TensorWriteErrorKind::Write)?;
        phases.sync = start.elapsed();
        Ok(())
    })
    .map_err(fail)?;
    phases.bytes = temporary.as_file().metadata().map_or(0, |m| m.len());
    Ok(StagedOutput { temporary, out: out.to_path_buf(), force, phases, _pending: pending })
}

/// The temporary files of outputs being written, for [`remove_pending_temporaries`].
static PENDING_TEMPORARIES: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// A temporary output file listed in [`PENDING_TEMPORARIES`] while it lives: dropped
/// (the file renamed into place or removed), it is taken off the list.
struct PendingTemporary(PathBuf);

impl PendingTemporary {
    fn register(path: &Path) -> PendingTemporary {
        let mut pending = PENDING_TEMPORARIES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        pending.push(path.to_path_buf());
        PendingTemporary(path.to_path_buf())
    }
}

impl Drop for PendingTemporary {
    fn drop(&mut self) {
        let mut pending = PENDING_TEMPORARIES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(at) = pending.iter().position(|p| *p == self.0) {
            pending.swap_remove(at);
        }
    }
}

/// Removes the temporary file of every output still being written, and returns how
/// many it removed. For a process about to exit on a signal (Ctrl-C), which runs no
/// destructors: the output paths are left as they were, as on any failed run. The list
/// stays locked, so no output is renamed into place after this has run.
pub fn remove_pending_temporaries() -> usize {
    let pending = PENDING_TEMPORARIES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let removed = pending.iter().filter(|path| std::fs::remove_file(path).is_ok()).count();
    // Held until the process exits: a commit waiting for the lock never runs.
    std::mem::forget(pending);
    removed
}

/// Where the time of [`stage`] went. Producing and writing overlap: their sum may
/// exceed the time both took.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WritePhases {
    /// Producing the values (the source's `fill`; for `normalize`, the conversion).
    pub produce: Duration,
    /// Writing the file (into the page cache), on the writer thread.
    pub write: Duration,
    /// Syncing it to disk.
    pub sync: Duration,
    /// Bytes of the file.
    pub bytes: u64,
    /// Bytes of values (2 or 4 per value).
    pub value_bytes: u64,
}

/// An output written in full to a temporary file, not yet in place. Dropping it removes
/// the temporary file and leaves the output path as it was.
pub struct StagedOutput {
    temporary: tempfile::NamedTempFile,
    out: PathBuf,
    force: bool,
    phases: WritePhases,
    /// Listed until it is renamed into place or removed. Declared after `temporary`,
    /// so dropped after it: the file is gone before it leaves the list.
    _pending: PendingTemporary,
}

impl StagedOutput {
    /// Where the time of writing it went.
    pub fn phases(&self) -> WritePhases {
        self.phases
    }

    /// Renames the temporary file onto the output path. Without `force`, an existing
    /// output is never replaced (the rename itself refuses, so a file created meanwhile
    /// is not clobbered either). On error the temporary file is removed.
    pub fn commit(self) -> Result<(), TensorWriteError> {
        // The rename happens under the list's lock, so that a signal's cleanup
        // ([`remove_pending_temporaries`]) runs wholly before it or not at all.
        let pending = PENDING_TEMPORARIES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let persisted =
            if self.force { self.temporary.persist(&self.out) } else { self.temporary.persist_noclobber(&self.out) };
        drop(pending);
        persisted.map(drop).map_err(|e| {
            let kind = if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                TensorWriteErrorKind::Exists
            } else {
                TensorWriteErrorKind::Rename(e.error)
            };
            TensorWriteError { path: self.out, kind }
        })
    }
}

/// The values of `data`, [`WRITE_CHUNK_ELEMENTS`] at a time, handed to `write` in order
/// on a writer thread while this one produces the next chunk: two chunk buffers
/// in all. Adds the time of each side to `phases`.
fn for_each_chunk<S: TensorSource + ?Sized>(
    data: &S,
    mut write: impl FnMut(&[StoredOf<S>]) -> std::io::Result<()> + Send,
    phases: &mut WritePhases,
) -> Result<(), TensorWriteErrorKind> {
    let total = data.elements();
    let chunk_len = WRITE_CHUNK_ELEMENTS.min(usize::try_from(total).unwrap_or(usize::MAX));
    phases.value_bytes += total * S::Dtype::DTYPE.bytes();
    std::thread::scope(|scope| {
        // Full chunks to the writer (one may wait while another is written), and
        // written ones back.
        let (to_writer, full) = std::sync::mpsc::sync_channel::<(Vec<StoredOf<S>>, usize)>(1);
        let (to_producer, spare) = std::sync::mpsc::channel::<Vec<StoredOf<S>>>();
        let writer = scope.spawn(move || {
            let mut spent = Duration::ZERO;
            for (chunk, len) in full {
                let start = Instant::now();
                write(&chunk[..len])?;
                spent += start.elapsed();
                // The producer may have stopped: then the buffer is not wanted.
                let _ = to_producer.send(chunk);
            }
            Ok::<Duration, std::io::Error>(spent)
        });
        let mut produced = Ok(());
        let (mut buffers, mut start) = (0, 0u64);
        while start < total {
            let chunk = match spare.try_recv() {
                Ok(chunk) => Some(chunk),
                Err(_) if buffers < 2 => {
                    buffers += 1;
                    Some(vec![StoredOf::<S>::default(); chunk_len])
                }
                // None: the writer stopped on an error, which its join gives.
                Err(_) => spare.recv().ok(),
            };
            let Some(mut chunk) = chunk else { break };
            let len = chunk_len.min((total - start) as usize);
            let began = Instant::now();
            if let Err(e) = data.fill(start, &mut chunk[..len]) {
                produced = Err(TensorWriteErrorKind::Values(Box::new(e)));
                break;
            }
            phases.produce += began.elapsed();
            if to_writer.send((chunk, len)).is_err() {
                break;
            }
            start += len as u64;
        }
        drop(to_writer);
        let written = writer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        produced?;
        phases.write += written.map_err(TensorWriteErrorKind::Write)?;
        Ok(())
    })
}

/// The `.npy` header (format 1.0, or 2.0 for a dictionary longer than 65,535 bytes)
/// of a C-ordered array of `shape` whose dtype is `descr` (`<f4`, `<f2`), as NumPy
/// writes it: the dictionary padded with spaces and a newline so that the data starts
/// at a multiple of 64 bytes.
pub fn npy_header(descr: &str, shape: &[u64]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape = match dims.as_slice() {
        [one] => format!("({one},)"),
        dims => format!("({})", dims.join(", ")),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let (version, len_bytes) = if dict.len() + 1 + 10 <= 65_535 { (1u8, 2) } else { (2u8, 4) };
    let unpadded = 6 + 2 + len_bytes + dict.len() + 1;
    let header_len = unpadded.next_multiple_of(64) - 6 - 2 - len_bytes;
    let mut out = Vec::with_capacity(unpadded.next_multiple_of(64));
    out.extend_from_slice(b"\x93NUMPY");
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(header_len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header_len as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(out.len() + header_len - dict.len() - 1, b' ');
    out.push(b'\n');
    out
}

/// Writes `data` as a `.npy` array of `shape` (`<f4` for f32, `<f2` for binary16): the
/// header [`npy_header`] gives, then the values as they lie in memory; bfloat16, which
/// NumPy lacks, is refused.
fn write_npy<S: TensorSource + ?Sized>(
    out: &mut (impl Write + Send),
    shape: &[u64],
    data: &S,
    phases: &mut WritePhases,
) -> Result<(), TensorWriteErrorKind> {
    const _: () = assert!(cfg!(target_endian = "little"), "the header says little-endian values");
    let dtype = S::Dtype::DTYPE;
    let descr = dtype.npy_descr().ok_or(TensorWriteErrorKind::NoNpyDtype { dtype })?;
    out.write_all(&npy_header(descr, shape)).map_err(TensorWriteErrorKind::Write)?;
    for_each_chunk(data, |chunk| out.write_all(bytemuck::cast_slice(chunk)), phases)
}

/// Writes what `safetensors::serialize` writes for one F32, F16 or BF16 tensor (a test
/// compares the bytes), without building the whole file in memory as it does: the
/// length, the JSON header padded with spaces to a multiple of 8 bytes, then the
/// little-endian values.
fn write_safetensors<S: TensorSource + ?Sized>(
    out: &mut (impl Write + Send),
    name: &str,
    shape: &[u64],
    data: &S,
    phases: &mut WritePhases,
) -> Result<(), TensorWriteErrorKind> {
    const _: () = assert!(cfg!(target_endian = "little"), "safetensors stores little-endian values");
    /// One tensor's header entry, its fields in the crate's order.
    #[derive(serde::Serialize)]
    struct Info<'a> {
        dtype: &'static str,
        shape: &'a [u64],
        data_offsets: [u64; 2],
    }
    let dtype = S::Dtype::DTYPE;
    let info = Info { dtype: dtype.safetensors_name(), shape, data_offsets: [0, data.elements() * dtype.bytes()] };
    let mut header =
        serde_json::to_vec(&std::collections::BTreeMap::from([(name, info)])).map_err(TensorWriteErrorKind::Header)?;
    header.resize(header.len().next_multiple_of(SAFETENSORS_LEN_BYTES), b' ');
    out.write_all(&(header.len() as u64).to_le_bytes()).map_err(TensorWriteErrorKind::Write)?;
    out.write_all(&header).map_err(TensorWriteErrorKind::Write)?;
    for_each_chunk(data, |chunk| out.write_all(bytemuck::cast_slice(chunk)), phases)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_npy_header_reads_back_and_aligns_the_data_to_64_bytes() {
        for shape in [vec![], vec![5], vec![4096, 4096, 3], vec![u64::from(u32::MAX); 20]] {
            let header = npy_header("<f4", &shape);
            assert_eq!(header.len() % 64, 0, "{shape:?}");
            assert_eq!(header.last(), Some(&b'\n'));
            let (read, data_start) = npy_header::read(&header).expect("our own header parses");
            assert_eq!((read.shape, read.fortran_order, data_start), (shape.clone(), false, header.len()));
            // And as NumPy's other readers see it.
            if shape.len() < 3 {
                let values = shape.iter().product::<u64>() as usize;
                let mut file = header.clone();
                file.extend((0..values).flat_map(|i| (i as f32).to_le_bytes()));
                let npy = npyz::NpyFile::new(&file[..]).expect("npyz reads it");
                assert_eq!(npy.shape(), &shape[..]);
                assert_eq!(npy.into_vec::<f32>().expect("values").len(), values);
            }
        }
        assert!(
            npy_header("<f2", &[3])
                .starts_with(b"\x93NUMPY\x01\x00\x76\x00{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }")
        );
    }
}
