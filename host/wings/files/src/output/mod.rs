//! The one path every output file takes, whichever job writes it (`normalize`'s tensor,
//! `cast`'s checkpoint, `bench --json-out`'s report): checked before any work
//! ([`check_destination`] for a file, `check_new` for `cast`'s new file or folder; its
//! name by `ends_in_a_name`), a temporary beside it (`directory_of`, named by
//! `temporary_builder`) listed for the signal handler while it lives
//! ([`temporaries`]), written with its writeback started as it goes ([`writeback`]),
//! synced, and put in place under the list's lock (`put_in_place`), so that a signal's
//! cleanup runs wholly before or not at all. [`write_whole`] is that path for bytes held
//! in memory (a report).
//!
//! What can go wrong on that path is one kind, [`OutputErrorKind`], whose texts say
//! what is being put in place ([`Output`]: a file `--force` may replace, or a new file or
//! folder); the jobs' own refusals wrap it ([`crate::write::TensorWriteErrorKind`],
//! [`crate::cast::output::CastOutputErrorKind`]), and [`OutputPathError`] is it with the
//! path, for a caller with no job of its own (`bench --json-out`).
//!
//! Owns: the temporaries, the commit and their errors. Uses: [`crate::message`] (how an
//! I/O error reads); what an output holds is [`crate::write`](mod@crate::write)'s and
//! [`crate::cast`](mod@crate::cast)'s.

pub mod temporaries;
pub mod writeback;

use crate::message::{io_message, one_line};
use bitexact_support::output::{escape, path_text};
use std::path::{Path, PathBuf};
use temporaries::PendingTemporary;

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
    /// It is a directory, where a file is to be put.
    #[error("is a directory")]
    IsDirectory,
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
    pub(crate) fn write(error: std::io::Error) -> OutputErrorKind {
        OutputErrorKind::Write { file: None, error }
    }
}

/// Why an output cannot be put in place: its path and what went wrong. Displayed as
/// `path: what`, on one line.
#[derive(Debug, thiserror::Error)]
#[error("{}: {}", path_text(.path), one_line(.kind))]
pub struct OutputPathError {
    /// The output path, as given.
    pub path: PathBuf,
    /// What went wrong.
    pub kind: OutputErrorKind,
}

/// Checks, before any work, that a file can be put at `output` by renaming a temporary
/// file onto it: `output` ends in a file name (not `/`, `.` or `..`), is not a
/// directory, and its directory is one in which a file can be created, as proven by
/// creating and removing one there (so a missing directory, a file in the way, a
/// read-only or unwritable directory are all refused, whatever the permission bits
/// say). A rename can still fail afterwards only if the directory changes meanwhile.
pub fn check_destination(output: &Path) -> Result<(), OutputPathError> {
    let fail = |kind| Err(OutputPathError { path: output.to_path_buf(), kind });
    if !ends_in_a_name(output) {
        return fail(OutputErrorKind::NotAName(Output::File));
    }
    if output.is_dir() {
        return fail(OutputErrorKind::IsDirectory);
    }
    let (pending, probe) =
        temporary_beside(output).map_err(|kind| OutputPathError { path: output.to_path_buf(), kind })?;
    drop(probe);
    drop(pending);
    Ok(())
}

/// A new temporary file in the directory `out` is put in, listed for the signal handler
/// while the [`PendingTemporary`] lives (removed when the file is dropped, unless it is
/// persisted first).
fn temporary_beside(out: &Path) -> Result<(PendingTemporary, tempfile::NamedTempFile), OutputErrorKind> {
    let directory = directory_of(out);
    PendingTemporary::create(|| temporary_builder().tempfile_in(directory), |t| t.path()).map_err(|error| {
        OutputErrorKind::CreateTemporary { output: Output::File, directory: directory.to_path_buf(), error }
    })
}

/// Checks, before any work, that `output` names something new (`cast`'s output): it
/// ends in a name and nothing (not even a dangling link) is there.
pub(crate) fn check_new(output: &Path) -> Result<(), OutputErrorKind> {
    if !ends_in_a_name(output) {
        return Err(OutputErrorKind::NotAName(Output::New));
    }
    if output.symlink_metadata().is_ok() {
        return Err(OutputErrorKind::Exists(Output::New));
    }
    Ok(())
}

/// Writes `bytes` (a report: JSON, text) to `out` whole or not at all: into a temporary
/// file beside it, synced, then renamed onto `out`, replacing what was there (the
/// temporary listed for the signal handler meanwhile). On any error `out` is left as it
/// was and the temporary file is removed.
pub fn write_whole(out: &Path, bytes: &[u8]) -> Result<(), OutputPathError> {
    use std::io::Write;
    let fail = |kind| OutputPathError { path: out.to_path_buf(), kind };
    let (pending, mut temporary) = temporary_beside(out).map_err(fail)?;
    temporary
        .write_all(bytes)
        .and_then(|()| temporary.as_file().sync_all())
        .map_err(|e| fail(OutputErrorKind::write(e)))?;
    let persisted = put_in_place(|| temporary.persist(out));
    drop(pending);
    persisted.map(drop).map_err(|e| fail(OutputErrorKind::Rename(Output::File, e.error)))
}

/// Whether `path`'s last component is a name: not `/`, `.` or `..`, which name a
/// directory (`x.npy/` and `x.npy/.` included) whatever is there.
pub(crate) fn ends_in_a_name(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    path.file_name().is_some_and(|name| path.as_os_str().as_bytes().ends_with(name.as_bytes()))
}

/// The directory `out` is put in: its parent, or `.` for a bare file name.
pub(crate) fn directory_of(out: &Path) -> &Path {
    match out.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// How the temporary files and folders beside outputs are named: `.bitexact-*.tmp`.
pub(crate) fn temporary_builder() -> tempfile::Builder<'static, 'static> {
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
    fn write_whole_replaces_the_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("report.json");
        std::fs::write(&out, b"old").unwrap();
        write_whole(&out, b"{\"new\": 1}").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"{\"new\": 1}");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, [std::ffi::OsString::from("report.json")]);
    }

    #[test]
    fn write_whole_into_a_missing_folder_is_an_error_naming_the_output() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("missing").join("report.json");
        let error = write_whole(&out, b"x").unwrap_err();
        assert!(error.to_string().starts_with(&out.display().to_string()), "{error}");
        assert!(!out.exists());
    }

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
