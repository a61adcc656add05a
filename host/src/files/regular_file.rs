//! Input paths checked to be regular files before they are opened
//! ([`check_regular_file`]): a FIFO or a device is refused without blocking, a broken
//! symbolic link is named as one. Every file tool's input passes here: tensor files
//! ([`crate::files::read`]), index files ([`crate::files::containers::index`]) and
//! images ([`crate::files::normalize::image`]).

use crate::files::message::io_message;
use std::path::Path;

/// Why a path given as an input file is not one; displayed as a short phrase ("no such
/// file or directory", "is a directory").
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegularFileError {
    /// Its metadata cannot be read (it does not exist, or may not be looked at).
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
