//! The temporary files of outputs being written (`PENDING_TEMPORARIES`), so that the
//! binary's signal handler can remove them ([`remove_pending_temporaries`]) before the process
//! exits without running destructors.

use std::path::{Path, PathBuf};

/// The temporary files of outputs being written, for [`remove_pending_temporaries`].
pub(crate) static PENDING_TEMPORARIES: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// A temporary file or folder listed in `PENDING_TEMPORARIES` while it lives: dropped
/// (the file renamed into place or removed), it is taken off the list.
pub struct PendingTemporary(PathBuf);

impl PendingTemporary {
    /// Creates a temporary file or folder with `create` and lists it (by the path
    /// `path_of` gives) for [`remove_pending_temporaries`] until the returned listing is
    /// dropped; a folder is removed with all it holds. The listing comes first in the
    /// pair, so that `let (listing, temporary) = …` drops the temporary (removing it)
    /// before the listing: a signal during the removal still finds it listed. Both under the list's lock, which
    /// the signal handler takes first and keeps until the process exits: so a temporary
    /// exists only listed, and none is created once the handler has run (a temporary
    /// created before its listing, as it used to be, was left behind by a signal landing
    /// between the two, or just after the handler had emptied the list).
    pub fn create<T, E>(
        create: impl FnOnce() -> Result<T, E>,
        path_of: impl FnOnce(&T) -> &Path,
    ) -> Result<(PendingTemporary, T), E> {
        let mut pending = PENDING_TEMPORARIES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let temporary = create()?;
        let path = path_of(&temporary).to_path_buf();
        pending.push(path.clone());
        Ok((PendingTemporary(path), temporary))
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

/// Removes the temporary file of every output still being written (and every other
/// listed temporary, folders with their contents), and returns how many it removed. For a process about to exit on a signal (Ctrl-C, SIGTERM...), which runs no
/// destructors: the output paths are left as they were, as on any failed run. The list
/// stays locked, so no output is renamed into place after this has run.
pub fn remove_pending_temporaries() -> usize {
    let pending = PENDING_TEMPORARIES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let removed = pending.iter().filter(|path| remove_file_or_folder(path)).count();
    // Held until the process exits: a commit waiting for the lock never runs.
    std::mem::forget(pending);
    removed
}

/// Removes `path`, a file, or a folder with all it holds. A folder is tried a few times:
/// another thread may still be creating a file in it (`bench-files` writing its inputs)
/// between `remove_dir_all`'s listing and its final `rmdir`.
fn remove_file_or_folder(path: &Path) -> bool {
    const FOLDER_TRIES: usize = 8;
    std::fs::remove_file(path).is_ok() || (0..FOLDER_TRIES).any(|_| std::fs::remove_dir_all(path).is_ok())
}
