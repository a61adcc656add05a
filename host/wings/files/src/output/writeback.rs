//! A file that is handed to the disk while it is being written, so that the `fsync` that
//! ends it waits only for the last few MiB ([`Writeback`]).
//!
//! Without it every byte of an output stays dirty in the page cache until the final
//! `sync_all`, which then writes them all while nothing else runs: on a 256 MiB f32 →
//! bf16 cast here that sync was about half of the run. With it, each
//! `WRITEBACK_BYTES` written start their own writeback at once (Linux's
//! `sync_file_range(.., SYNC_FILE_RANGE_WRITE)`, which does not wait for it), and the
//! disk writes them while the next bytes are converted.
//!
//! It changes when the bytes reach the disk, never what is written or whether the final
//! sync is made: a write error the disk reports in the meantime is reported by that sync.

use std::io::{self, Write};
use std::os::fd::AsFd;

/// Bytes written between two starts of writeback: large enough that the calls are few
/// (one per 8 MiB), small enough that the last stretch the final sync waits for is short.
pub(crate) const WRITEBACK_BYTES: u64 = 8 << 20;

/// `file`, with writeback started after every `WRITEBACK_BYTES` written through it
/// (best effort: where the system has no such call, or refuses it, nothing is started
/// and the final sync writes everything, as without the wrapper). Put a `BufWriter`
/// around it, not inside: each `write` here is one system call.
#[derive(Debug)]
pub struct Writeback<F> {
    file: F,
    /// Bytes written through the wrapper.
    written: u64,
    /// Bytes whose writeback has been started: `written` when the last start was made.
    started: u64,
    /// Whether to start any: off where the file is not synced at the end.
    enabled: bool,
}

impl<F: Write + AsFd> Writeback<F> {
    /// Wraps `file`, positioned at offset `0` (a new file): the ranges whose writeback is
    /// started are counted from there. With `enabled` false it starts none and is only
    /// `file` (for an output that will not be synced: its bytes may stay in the cache).
    pub(crate) fn new(file: F, enabled: bool) -> Self {
        Writeback { file, written: 0, started: 0, enabled }
    }

    /// The file back, for its final sync.
    pub(crate) fn into_inner(self) -> F {
        self.file
    }

    /// Starts writeback of the bytes written since the last start.
    fn start_writeback(&mut self) {
        // Best effort: a failure to start it leaves those bytes to the final sync.
        let _ = start_writeback(&self.file, self.started, self.written - self.started);
        self.started = self.written;
    }
}

impl<F: Write + AsFd> Write for Writeback<F> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.enabled && self.written - self.started >= WRITEBACK_BYTES {
            self.start_writeback();
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Starts writing bytes `offset..offset + len` of `file` to its disk, without waiting.
/// The one `unsafe` of `files/`: a system call that `rustix` does not wrap.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn start_writeback(file: &impl AsFd, offset: u64, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return Ok(());
    };
    let fd = file.as_fd();
    // SAFETY: `sync_file_range` reads and writes no memory of this process: it takes a
    // descriptor, which `fd` keeps open for the duration of the call, and three integers.
    let rc = unsafe { libc::sync_file_range(fd.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE) };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Elsewhere there is no such call: the final sync writes everything.
#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: &impl AsFd, _offset: u64, _len: u64) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek};

    /// The bytes come out as they went in, in order, across several starts of writeback
    /// and a last stretch shorter than one, whatever the size of each write.
    #[test]
    fn what_is_written_is_what_the_file_holds() {
        let mut file = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..(2 * WRITEBACK_BYTES + 12_345)).map(|i| (i * 7 % 251) as u8).collect();
        let mut writer = Writeback::new(&mut file, true);
        for piece in data.chunks(3_000_017) {
            writer.write_all(piece).unwrap();
        }
        assert_eq!(writer.written, data.len() as u64);
        assert!(writer.started > WRITEBACK_BYTES, "writeback was started {} bytes in", writer.started);
        assert!(writer.written - writer.started < WRITEBACK_BYTES);
        let file = writer.into_inner();
        file.sync_all().unwrap();
        file.rewind().unwrap();
        let mut back = Vec::new();
        file.read_to_end(&mut back).unwrap();
        assert!(back == data, "the file differs from what was written");
    }

    /// The call itself is accepted (a valid flag, a range of a regular file): the wrapper
    /// ignores its failures, so this is where one would show.
    #[test]
    #[cfg(target_os = "linux")]
    fn the_system_accepts_the_start_of_writeback() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[1u8; 1 << 16]).unwrap();
        start_writeback(&file, 0, 1 << 16).unwrap();
        start_writeback(&file, 4096, 4096).unwrap();
    }
}
