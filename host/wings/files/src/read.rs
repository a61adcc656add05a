//! Tensor files opened for reading: a file opened and checked to be a regular one
//! ([`open_regular_file`]), its container detected and its header parsed
//! ([`TensorFile::open`], through [`crate::containers`]), then its tensors' data
//! read a chunk at a time ([`TensorReader`]; a deflated `.npz` member inflated as it is
//! read), with [`TensorFileError`] naming the file when anything fails.
//!
//! Files are read with positioned reads (`pread`, [`crate::source`]), not
//! memory-mapped: a mapped file that another program truncates kills the reader with
//! SIGBUS, which no sound Rust can catch, whereas a short read is an error like any other.

use crate::containers::npz::{self, InflateError};
use crate::containers::{Container, ContainerError, HEAD_BYTES, TensorEntry, UnknownContainer, parse_file};
use crate::message::{io_message, one_line};
use crate::regular_file::{RegularFileError, open_regular_file};
use crate::source::{Source, SourceReadError};
use bitexact_support::output::path_text;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Why a tensor file cannot be opened or read: the file's path and what went wrong.
/// Displayed as `path: what`, on one line; the cause is in that line, not behind
/// `source()`.
#[derive(Debug, thiserror::Error)]
#[error("{}: {}", path_text(.path), one_line(.kind))]
pub struct TensorFileError {
    /// The file, as given.
    pub path: PathBuf,
    /// What went wrong.
    #[doc(hidden)]
    pub kind: TensorFileErrorKind,
}

/// What went wrong with a tensor file: see [`TensorFileError`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TensorFileErrorKind {
    /// It is missing, or not a regular file.
    #[error("{0}")]
    NotRegular(RegularFileError),
    /// Opening it or reading its metadata failed.
    #[error("{}", io_message(.0))]
    Io(std::io::Error),
    /// It is empty.
    #[error("empty file")]
    Empty,
    /// Reading its start failed.
    #[error("{0}")]
    Read(SourceReadError),
    /// It is none of the containers.
    #[error("{0}")]
    Unknown(UnknownContainer),
    /// Its container's bytes are refused.
    #[error("{0}")]
    Container(ContainerError),
    /// Opening it again, to read its data, failed.
    #[error("cannot open again after its header was read: {}", io_message(.0))]
    Reopen(std::io::Error),
    /// Another file was renamed over it after its header was read.
    #[error("replaced by another file after its header was read")]
    Replaced,
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
        let file = open_regular_file(path).map_err(|e| fail(TensorFileErrorKind::NotRegular(e)))?;
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
    pub(crate) fn is_at(&self, path: &Path) -> bool {
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
    pub(crate) fn for_each_chunk<E: From<InflateError>>(
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
