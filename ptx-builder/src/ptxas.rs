//! Finding `ptxas` the way `bitexact::cuda_tools::tools::find` does for the project's tools
//! (`$BITEXACT_CUDA_TOOLS`, else a `.cuda-tools/` folder, as
//! `scripts/install-cuda-tools.sh` lays it out), and assembling a module with it.

use crate::{Error, Target};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Environment variable naming a folder that holds the CUDA tools (directly, in `bin/`,
/// or in a `bin/` folder below it, as the PyPI wheels lay them out). When set, it is the
/// only place looked in, so an empty folder turns the ptxas step off.
pub const TOOLS_DIR_VAR: &str = "BITEXACT_CUDA_TOOLS";

/// The project-local install folder.
const LOCAL_DIR: &str = ".cuda-tools";

/// How deep below a tools folder `bin/ptxas` is looked for
/// (`.cuda-tools/nvidia/cuda_nvcc/bin/ptxas` is at depth 3).
const SEARCH_DEPTH: usize = 5;

/// The ptxas to assemble with: below `$BITEXACT_CUDA_TOOLS` if set, else below the
/// first `.cuda-tools/` in `from` or a folder above it (the kernel crate's workspace
/// root holds it), else `None`.
pub fn find_ptxas(from: &Path) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(TOOLS_DIR_VAR).filter(|d| !d.is_empty()) {
        return find_below(Path::new(&dir), "ptxas", SEARCH_DEPTH);
    }
    let from = std::path::absolute(from).ok()?;
    from.ancestors().find_map(|dir| find_below(&dir.join(LOCAL_DIR), "ptxas", SEARCH_DEPTH))
}

/// `dir/name`, else the first `bin/name` (sorted, breadth first) at most `depth` folders
/// below `dir`, if it is an executable file.
pub(crate) fn find_below(dir: &Path, name: &str, depth: usize) -> Option<PathBuf> {
    find_below_in(dir, "bin", name, depth, is_executable)
}

/// `dir/name`, else the first `<folder>/name` (in sorted order, breadth first) at most
/// `depth` folders below `dir`, for which `accept` holds: how a tools folder laid out by
/// the PyPI wheels is searched (`.cuda-tools/nvidia/cuda_nvcc/bin/ptxas`), here and by
/// the host's tool finder.
pub fn find_below_in(
    dir: &Path,
    folder: &str,
    name: &str,
    depth: usize,
    accept: impl Fn(&Path) -> bool,
) -> Option<PathBuf> {
    let mut level = vec![dir.to_path_buf()];
    for _ in 0..=depth {
        for candidate_folder in &level {
            let candidate = candidate_folder.join(name);
            let in_folder = candidate_folder == dir || candidate_folder.file_name().is_some_and(|f| f == folder);
            if in_folder && accept(&candidate) {
                return Some(candidate);
            }
        }
        level = level.iter().flat_map(|folder| subfolders(folder)).collect();
    }
    None
}

/// The subfolders of `dir`, sorted; none if it cannot be read.
fn subfolders(dir: &Path) -> Vec<PathBuf> {
    let mut folders: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    folders.sort();
    folders
}

/// Whether `path` is a file with a run bit (on Unix; any file elsewhere).
pub fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// Assembles `ptx` (a file) for `target` with `ptxas`, into a cubin beside it.
pub(crate) fn assemble(ptxas: &Path, ptx: &Path, target: Target) -> Result<(), Error> {
    let cubin = ptx.with_extension(format!("{target}.cubin"));
    let output = Command::new(ptxas)
        .arg(format!("-arch={target}"))
        .arg(ptx)
        .arg("-o")
        .arg(&cubin)
        .output()
        .map_err(|error| Error::Io { action: format!("running {}", ptxas.display()), error })?;
    if output.status.success() {
        return Ok(());
    }
    let log = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    Err(Error::Ptxas { path: ptx.to_path_buf(), target, log })
}
