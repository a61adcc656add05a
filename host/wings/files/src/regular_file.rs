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
