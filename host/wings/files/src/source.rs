//! Positioned reads of a file: the bytes of one tensor, in memory or read on demand
//! ([`Source`]), through a read function ([`ReadAt`]) whose failure is a
//! [`SourceReadError`]. Files are read with `pread`, not memory-mapped: a mapped file that
//! another program truncates kills the reader with SIGBUS, which no sound Rust can catch,
//! whereas a short read is an error like any other.

use crate::message::io_message;
use std::ops::Range;

/// `read(offset, buf)`: fills `buf` with the bytes from `offset` on, or says why it
/// cannot.
pub type ReadAt<'a> = dyn Fn(u64, &mut [u8]) -> Result<(), SourceReadError> + Sync + 'a;

/// A read of a [`Source`] (a positioned read of a file) that failed. The I/O error's
/// text is in the message, not behind `source()`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceReadError {
    /// The read went past the end: the file is shorter than when its header was read
    /// (another program truncated or rewrote it).
    #[error("file shrank while being read (now {}, {needed} needed): truncated by another program?", length_text(.now))]
    Shrank {
        /// The file's length now, or why it could not be had.
        now: std::io::Result<u64>,
        /// The length the read at hand needed.
        needed: u64,
    },
    /// The read failed.
    #[error("read failed: {}", io_message(.0))]
    Failed(std::io::Error),
}

/// A file's length ("123 bytes"), or why it could not be had.
fn length_text(now: &std::io::Result<u64>) -> String {
    now.as_ref().map_or_else(io_message, |len| format!("{len} bytes"))
}

/// The bytes to scan: in memory, or read on demand (a tensor in a file).
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// Bytes in memory.
    Bytes(&'a [u8]),
    /// `len` bytes; `read(offset, buf)` fills `buf` with those from `offset` on, or says
    /// why it cannot (the file shrank, a read failed).
    Read {
        /// Number of bytes.
        len: usize,
        /// Fills a buffer from an offset.
        read: &'a ReadAt<'a>,
    },
}

impl<'a> Source<'a> {
    /// Number of bytes.
    pub(crate) fn len(&self) -> usize {
        match *self {
            Source::Bytes(bytes) => bytes.len(),
            Source::Read { len, .. } => len,
        }
    }

    /// `true` for no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes `range` (inside `0..len()`): borrowed from memory, or read into `buffer`.
    pub(crate) fn get<'b>(&self, range: Range<usize>, buffer: &'b mut Vec<u8>) -> Result<&'b [u8], SourceReadError>
    where
        'a: 'b,
    {
        match *self {
            Source::Bytes(bytes) => Ok(&bytes[range]),
            Source::Read { .. } => {
                buffer.resize(range.len(), 0);
                self.read_into(range.start, buffer)?;
                Ok(buffer)
            }
        }
    }

    /// Fills `buf` with the bytes from `offset` on (a range inside `0..len()`): copied
    /// from memory, or read.
    pub(crate) fn read_into(&self, offset: usize, buf: &mut [u8]) -> Result<(), SourceReadError> {
        match *self {
            Source::Bytes(bytes) => {
                buf.copy_from_slice(&bytes[offset..offset + buf.len()]);
                Ok(())
            }
            Source::Read { read, .. } => read(offset as u64, buf),
        }
    }
}
