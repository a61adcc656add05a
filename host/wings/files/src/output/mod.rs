//! The one path every output file takes, whichever job writes it (`normalize`'s tensor,
//! `cast`'s checkpoint, `bench --json-out`'s report): its name checked
//! ([`ends_in_a_name`]), a temporary beside it ([`directory_of`], named by
//! [`temporary_builder`]) listed for the signal handler while it lives
//! ([`temporaries`]), written with its writeback started as it goes ([`writeback`]),
//! synced, and put in place under the list's lock (`put_in_place`), so that a signal's
//! cleanup runs wholly before or not at all.
//!
//! What can go wrong on that path is one kind, [`OutputErrorKind`], whose texts say
//! what is being put in place ([`Output`]: a file `--force` may replace, or a new file or
//! folder); the jobs' own refusals wrap it ([`crate::write::TensorWriteErrorKind`],
//! [`crate::cast::output::CastOutputErrorKind`]).
//!
//! Owns: the temporaries, the commit and their errors. Uses: [`crate::message`] (how an
//! I/O error reads); what an output holds is [`crate::write`](mod@crate::write)'s and
//! [`crate::cast`](mod@crate::cast)'s.

pub mod temporaries;
pub mod writeback;

use crate::message::io_message;
use bitexact_support::output::{escape, path_text};
use std::path::{Path, PathBuf};

/// What an output path puts in place, which says how its errors read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Output {
    /// A file that `--force` may replace (`normalize`'s tensor, a JSON report).
    File,
    /// A new file or folder, never one that exists (`cast`'s output).
    New,
}

/// What went wrong on the output path: each text as the job that meets it has always
/// said it ([`Output`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputErrorKind {
    /// It ends in `/`, `.` or `..`, so it names a directory whatever is there.
    #[error("{}", match .0 {
        Output::File => "is not a file path (it ends in '/', '.' or '..'); give the file's name, e.g. out.npy",
        Output::New => "is not a file or folder name (its last component is '/', '.' or '..')",
    })]
    NotAName(Output),
    /// It exists, and may not be replaced.
    #[error("{}", match .0 {
        Output::File => "already exists (use --force to replace it)",
        Output::New => "already exists; cast writes a new file or folder",
    })]
    Exists(Output),
    /// The temporary file or folder cannot be created beside it.
    #[error("cannot create a temporary {} in {}: {}", match .output {
        Output::File => "file",
        Output::New => "folder",
    }, path_text(.directory), io_message(.error))]
    CreateTemporary {
        /// What was being put in place.
        output: Output,
        /// Where the temporary was to be.
        directory: PathBuf,
        /// Why not.
        error: std::io::Error,
    },
    /// Writing or syncing the temporary (`file`, for an output of several files) failed.
    #[error("write failed{}: {}", .file.as_deref().map(|f| format!(" ({})", escape(f))).unwrap_or_default(), io_message(.error))]
    Write {
        /// The file, in an output of several.
        file: Option<String>,
        /// Why.
        error: std::io::Error,
    },
    /// The temporary cannot be renamed (or linked) into place.
    #[error("cannot rename the temporary {} into place: {}", match .0 {
        Output::File => "file",
        Output::New => "output",
    }, io_message(.1))]
    Rename(Output, std::io::Error),
}

impl OutputErrorKind {
    /// [`OutputErrorKind::Write`] of a one-file output.
    pub fn write(error: std::io::Error) -> OutputErrorKind {
        OutputErrorKind::Write { file: None, error }
    }
}

/// Whether `path`'s last component is a name: not `/`, `.` or `..`, which name a
/// directory (`x.npy/` and `x.npy/.` included) whatever is there.
pub fn ends_in_a_name(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    path.file_name().is_some_and(|name| path.as_os_str().as_bytes().ends_with(name.as_bytes()))
}

/// The directory `out` is put in: its parent, or `.` for a bare file name.
pub fn directory_of(out: &Path) -> &Path {
    match out.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// How the temporary files and folders beside outputs are named: `.bitexact-*.tmp`.
pub fn temporary_builder() -> tempfile::Builder<'static, 'static> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(".bitexact-").suffix(".tmp");
    builder
}

/// Runs `place` (the rename or link that puts a temporary in place) under the lock of
/// the list of temporaries, so that a signal's cleanup
/// ([`temporaries::remove_pending_temporaries`]) runs wholly before it or not at all:
/// an output is either left as it was or put in place whole, never half removed.
///
/// `place` must not create or drop a listed temporary (a [`temporaries::PendingTemporary`]):
/// that takes the same lock, which is not reentrant.
pub(crate) fn put_in_place<T>(place: impl FnOnce() -> T) -> T {
    let pending = temporaries::PENDING_TEMPORARIES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let placed = place();
    drop(pending);
    placed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_the_last_component_and_the_directory_its_parent() {
        for named in ["out.npy", "dir/out.npy", "/tmp/out", "a/../b"] {
            assert!(ends_in_a_name(Path::new(named)), "{named}");
        }
        for directory in ["out.npy/", "out.npy/.", "dir/..", "/", ".", ".."] {
            assert!(!ends_in_a_name(Path::new(directory)), "{directory}");
        }
        assert_eq!(directory_of(Path::new("out.npy")), Path::new("."));
        assert_eq!(directory_of(Path::new("dir/out.npy")), Path::new("dir"));
        assert_eq!(directory_of(Path::new("/out.npy")), Path::new("/"));
    }

    #[test]
    fn each_error_reads_as_its_job_has_always_said_it() {
        let io = || std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let temporary = |output| OutputErrorKind::CreateTemporary { output, directory: "dir".into(), error: io() };
        let texts = |output, file: Option<&str>| {
            [
                OutputErrorKind::NotAName(output),
                OutputErrorKind::Exists(output),
                temporary(output),
                OutputErrorKind::Write { file: file.map(String::from), error: io() },
                OutputErrorKind::Rename(output, io()),
            ]
            .map(|kind| kind.to_string())
        };
        // normalize's and bench --json-out's texts, and cast's, as they read before the
        // two error kinds were one.
        assert_eq!(
            texts(Output::File, None),
            [
                "is not a file path (it ends in '/', '.' or '..'); give the file's name, e.g. out.npy",
                "already exists (use --force to replace it)",
                "cannot create a temporary file in dir: permission denied",
                "write failed: permission denied",
                "cannot rename the temporary file into place: permission denied",
            ]
        );
        assert_eq!(
            texts(Output::New, Some("model-00001.safetensors")),
            [
                "is not a file or folder name (its last component is '/', '.' or '..')",
                "already exists; cast writes a new file or folder",
                "cannot create a temporary folder in dir: permission denied",
                "write failed (model-00001.safetensors): permission denied",
                "cannot rename the temporary output into place: permission denied",
            ]
        );
        assert_eq!(OutputErrorKind::write(io()).to_string(), "write failed: permission denied");
    }

    #[test]
    fn temporaries_are_hidden_and_named_as_ours() {
        let dir = tempfile::tempdir().expect("temporary folder");
        let file = temporary_builder().tempfile_in(dir.path()).expect("temporary file");
        let name = file.path().file_name().expect("a name").to_string_lossy().into_owned();
        assert!(name.starts_with(".bitexact-") && name.ends_with(".tmp"), "{name}");
    }
}
