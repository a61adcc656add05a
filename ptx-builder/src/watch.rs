//! The folders a kernel crate's PTX depends on: the crate's own and those of its path
//! dependencies, transitively (normal and build dependencies, not dev-dependencies),
//! read from `cargo metadata --no-deps`, so that an edit to any of them rebuilds the PTX.
//!
//! `--no-deps` describes only the members of the workspace it runs in, without
//! resolving anything (no registry, no network); a path dependency outside that
//! workspace (one of another repository, say) is looked up with a `cargo metadata` in its
//! own folder.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Why the path dependencies could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WatchError {
    /// `cargo metadata` could not run or failed.
    #[error("cargo metadata --manifest-path {}: {reason}{}", .manifest.display(), crate::hint(.reason))]
    Metadata {
        /// The manifest it was run on.
        manifest: PathBuf,
        /// Its first error line, or why it did not run.
        reason: String,
    },
    /// Its output is not the JSON it documents.
    #[error("cargo metadata --manifest-path {}: unexpected output ({reason})", .manifest.display())]
    Format {
        /// The manifest it was run on.
        manifest: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// A path dependency's folder has no package in its `cargo metadata`.
    #[error("the path dependency {} is not a package its cargo metadata lists", .0.display())]
    Unlisted(PathBuf),
}

/// Each package of one `cargo metadata --no-deps` output: its folder, and the folders of
/// its path dependencies that are not dev-dependencies.
pub fn packages_of(metadata: &str) -> Result<HashMap<PathBuf, Vec<PathBuf>>, String> {
    let json: serde_json::Value = serde_json::from_str(metadata).map_err(|e| e.to_string())?;
    let packages = json["packages"].as_array().ok_or("no `packages` list")?;
    let mut found = HashMap::new();
    for package in packages {
        let manifest = package["manifest_path"].as_str().ok_or("a package without `manifest_path`")?;
        let folder = Path::new(manifest).parent().ok_or("a `manifest_path` without a folder")?;
        let dependencies = package["dependencies"].as_array().ok_or("a package without `dependencies`")?;
        let paths = dependencies
            .iter()
            .filter(|d| d["kind"].as_str() != Some("dev"))
            .filter_map(|d| d["path"].as_str())
            .map(PathBuf::from)
            .collect();
        found.insert(folder.to_path_buf(), paths);
    }
    Ok(found)
}

/// The folders of every path dependency of the crate in `crate_dir`, transitively, not
/// the crate's own, sorted; `cargo` is the cargo to ask. Paths are as cargo prints them
/// (absolute).
pub fn path_dependencies(cargo: &OsStr, crate_dir: &Path) -> Result<Vec<PathBuf>, WatchError> {
    let mut known: HashMap<PathBuf, Vec<PathBuf>> = HashMap::new();
    let start = folder_of(cargo, crate_dir, &mut known)?;
    let mut found = BTreeSet::new();
    let mut pending = vec![start.clone()];
    while let Some(folder) = pending.pop() {
        let dependencies = known.get(&folder).cloned().unwrap_or_default();
        for dependency in dependencies {
            let dependency = folder_of(cargo, &dependency, &mut known)?;
            if dependency != start && found.insert(dependency.clone()) {
                pending.push(dependency);
            }
        }
    }
    Ok(found.into_iter().collect())
}

/// `dir` as `known` names it (cargo's absolute spelling), running `cargo metadata` in it
/// first if no package of `known` is there.
fn folder_of(cargo: &OsStr, dir: &Path, known: &mut HashMap<PathBuf, Vec<PathBuf>>) -> Result<PathBuf, WatchError> {
    let same = |candidate: &Path| candidate == dir || same_file(candidate, dir);
    if let Some(folder) = known.keys().find(|k| same(k)) {
        return Ok(folder.clone());
    }
    let manifest = dir.join("Cargo.toml");
    known.extend(metadata(cargo, &manifest)?);
    known.keys().find(|k| same(k)).cloned().ok_or_else(|| WatchError::Unlisted(dir.to_path_buf()))
}

/// Whether `a` and `b` name the same folder (through `..` or links).
fn same_file(a: &Path, b: &Path) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b)
}

/// The packages of `cargo metadata --format-version 1 --no-deps --manifest-path manifest`.
fn metadata(cargo: &OsStr, manifest: &Path) -> Result<HashMap<PathBuf, Vec<PathBuf>>, WatchError> {
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--manifest-path"])
        .arg(manifest)
        .env("CARGO_TERM_COLOR", "never")
        .output()
        .map_err(|error| WatchError::Metadata { manifest: manifest.to_path_buf(), reason: error.to_string() })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let reason = stderr.lines().find(|l| l.starts_with("error")).or(stderr.lines().next()).unwrap_or("failed");
        return Err(WatchError::Metadata { manifest: manifest.to_path_buf(), reason: reason.to_string() });
    }
    packages_of(&String::from_utf8_lossy(&output.stdout))
        .map_err(|reason| WatchError::Format { manifest: manifest.to_path_buf(), reason })
}
