//! Input files opened and checked to be regular files ([`open_regular_file`]): a FIFO
//! or a device is refused without blocking, a broken symbolic link is named as one, and
//! the file checked is the file read (its metadata is the open file's, so a path
//! swapped between a check and an open cannot hand over another file). Every file
//! tool's input passes here: tensor files ([`crate::read`]), index files
//! ([`crate::containers::index`]) and images
//! ([`crate::normalize::image`]).

use crate::message::io_message;
use std::fs::File;
use std::path::Path;

/// Why a path given as an input file is not one; displayed as a short phrase ("no such
/// file or directory", "is a directory").
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegularFileError {
    /// It cannot be opened, or its metadata read (it does not exist, or may not be
    /// read).
    #[error("{}", io_message(.0))]
    Io(std::io::Error),
    /// It is a directory.
    #[error("is a directory")]
    IsDirectory,
    /// It is neither a file nor a directory (a device, a pipe, a socket).
    #[error("not a regular file")]
    NotRegular,
    /// It is a symbolic link to nothing (what an interrupted download can leave).
    #[error("broken symbolic link: its target does not exist")]
    DanglingLink,
}

/// `path` opened for reading, if it names an existing regular file (or a link to one);
/// else why not. The check is made on the open file ([`File::metadata`]), so the file
/// returned is the one checked. It is opened non-blocking and without becoming a
/// controlling terminal (`O_NONBLOCK | O_NOCTTY`, through `rustix`), so that a FIFO with no writer, or a
/// terminal, is refused at once instead of blocking the open; for a regular file the
/// flag is then cleared, so reads of it are as any other open file's. A device is
/// opened before it is refused (on Linux a read-only, non-blocking open of one has no
/// effect on its contents). A path that cannot be opened at all (missing, unreadable)
/// is [`RegularFileError::Io`] with the open's error, or [`RegularFileError::DanglingLink`]
/// for a symbolic link to nothing.
pub fn open_regular_file(path: &Path) -> Result<File, RegularFileError> {
    use rustix::fs::OFlags;
    use std::os::unix::fs::OpenOptionsExt;
    let flags = OFlags::NONBLOCK | OFlags::NOCTTY;
    let file =
        std::fs::OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(path).map_err(|error| {
            let is_link = || std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
            if error.kind() == std::io::ErrorKind::NotFound && is_link() {
                RegularFileError::DanglingLink
            } else {
                RegularFileError::Io(error)
            }
        })?;
    let metadata = file.metadata().map_err(RegularFileError::Io)?;
    if metadata.is_dir() {
        Err(RegularFileError::IsDirectory)
    } else if !metadata.is_file() {
        Err(RegularFileError::NotRegular)
    } else {
        let status = rustix::fs::fcntl_getfl(&file).map_err(|e| RegularFileError::Io(e.into()))?;
        rustix::fs::fcntl_setfl(&file, status - OFlags::NONBLOCK).map_err(|e| RegularFileError::Io(e.into()))?;
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    //! `open_regular_file` opens first and checks the open file: a regular file comes back
    //! open for ordinary (blocking) reads, with the bytes of the file checked even once its
    //! path names another; a directory, a dangling link, a missing path and a FIFO are
    //! refused with their messages, the FIFO at once, without a writer. (In host/tests
    //! until issue 47: these tests name this module's items, which are not the API.)

    use super::{RegularFileError, open_regular_file};
    use std::io::Read;
    use std::time::Duration;

    #[test]
    fn a_regular_file_is_returned_open_for_blocking_reads_and_is_the_file_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.npy");
        std::fs::write(&path, b"checked").unwrap();
        let mut file = open_regular_file(&path).unwrap();
        let flags = rustix::fs::fcntl_getfl(&file).unwrap();
        assert!(!flags.contains(rustix::fs::OFlags::NONBLOCK), "{flags:?}");
        // The path now names a directory: what was checked is what is read.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let mut read = String::new();
        file.read_to_string(&mut read).unwrap();
        assert_eq!(read, "checked");
    }

    #[test]
    fn a_directory_a_dangling_link_and_a_missing_path_are_refused_with_their_messages() {
        let dir = tempfile::tempdir().unwrap();
        let error = open_regular_file(dir.path()).unwrap_err();
        assert!(matches!(error, RegularFileError::IsDirectory), "{error:?}");
        assert_eq!(error.to_string(), "is a directory");
        let link = dir.path().join("gone.npy");
        std::os::unix::fs::symlink(dir.path().join("nothing"), &link).unwrap();
        let error = open_regular_file(&link).unwrap_err();
        assert!(matches!(error, RegularFileError::DanglingLink), "{error:?}");
        assert_eq!(error.to_string(), "broken symbolic link: its target does not exist");
        let error = open_regular_file(&dir.path().join("missing")).unwrap_err();
        assert!(matches!(error, RegularFileError::Io(_)), "{error:?}");
        assert_eq!(error.to_string(), "no such file or directory");
    }

    #[test]
    fn a_fifo_without_a_writer_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.npy");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|status| status.success()) {
            bitexact_support::skip::skip("mkfifo failed: no FIFO case");
            return;
        }
        let (sender, answer) = std::sync::mpsc::channel();
        let opened = fifo.clone();
        std::thread::spawn(move || sender.send(open_regular_file(&opened).map(drop)));
        // A blocked open is the bug this tests: a generous limit, never met by a busy machine.
        let result = answer.recv_timeout(Duration::from_secs(60));
        if result.is_err() {
            // Release the blocked open, so that the test ends.
            let _writer = std::fs::OpenOptions::new().write(true).open(&fifo);
        }
        let error = result.expect("the open of a FIFO answers within 60 s").unwrap_err();
        assert!(matches!(error, RegularFileError::NotRegular), "{error:?}");
        assert_eq!(error.to_string(), "not a regular file");
    }
}
