//! The one path every output file takes, whichever job writes it (`normalize`'s tensor,
//! `cast`'s checkpoint, `bench --json-out`'s report): its name checked
//! ([`ends_in_a_name`]), a temporary beside it ([`directory_of`], named by
//! [`temporary_builder`]) listed for the signal handler while it lives
//! ([`temporaries`]), written with its writeback started as it goes ([`writeback`]),
//! synced, and put in place under the list's lock ([`put_in_place`]), so that a signal's
//! cleanup runs wholly before or not at all.
//!
//! Owns: the temporaries and the commit. Uses nothing else of this crate: what an output
//! holds is [`crate::write`](mod@crate::write)'s and [`crate::cast`](mod@crate::cast)'s, and so are their errors.

pub mod temporaries;
pub mod writeback;

use std::path::Path;

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
pub fn put_in_place<T>(place: impl FnOnce() -> T) -> T {
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
    fn temporaries_are_hidden_and_named_as_ours() {
        let dir = tempfile::tempdir().expect("temporary folder");
        let file = temporary_builder().tempfile_in(dir.path()).expect("temporary file");
        let name = file.path().file_name().expect("a name").to_string_lossy().into_owned();
        assert!(name.starts_with(".bitexact-") && name.ends_with(".tmp"), "{name}");
    }
}
