//! Test helpers: the `bitexact` executable to run, the library's scan job as the tests
//! call it, and (re-exported from the `test-fixtures` crate, `tests/fixtures`, which the
//! files wing's unit tests share) tensor files written by the container crates with NaN
//! and infinities at known positions, and the expected counts decided by decoders
//! independent of `shared` (`half`, core's floats, the OCP field rules).
#![allow(dead_code)] // each test binary uses part of this

pub use test_fixtures::*;

use bitexact::files::backend::Device;
use bitexact::files::scan::report::{Counts, Report};
use bitexact::files::scan::{ScanOptions, scan as scan_job};
use std::path::Path;
use std::process::Command;

/// The environment variable that names the `bitexact` executable for the command-line
/// tests. The GPU check bundle sets it: the path cargo compiles into a test binary
/// does not exist on the machine the bundle is carried to.
pub const BITEXACT_EXE: &str = "BITEXACT_EXE";

/// The `bitexact` executable: `$BITEXACT_EXE` if set, else the binary cargo built along
/// with this test.
pub fn bitexact_exe() -> std::ffi::OsString {
    let exe = std::env::var_os(BITEXACT_EXE).filter(|p| !p.is_empty());
    exe.unwrap_or_else(|| env!("CARGO_BIN_EXE_bitexact").into())
}

/// A command running [`bitexact_exe`].
pub fn bitexact_command() -> Command {
    Command::new(bitexact_exe())
}

/// Starts [`bitexact_exe`] with `args`, its stdout and stderr piped, for a test that
/// acts on the running process (a deadline, a closed pipe).
pub fn spawn_bitexact(args: &[&str]) -> std::process::Child {
    bitexact_command()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start bitexact")
}

/// Runs [`bitexact_exe`] with `args`.
pub fn bitexact(args: &[&str]) -> std::process::Output {
    bitexact_command().args(args).output().expect("run bitexact")
}

/// Prints `skipped: <reason>` and the test's name straight to the process's stderr, which
/// the test harness does not capture, so that a skipped check shows in a plain `cargo
/// test` run: the workspace's one skip helper, for a skip that no `REQUIRE_*` switch
/// turns into a failure.
pub use bitexact::support::skip::skip;

/// Scans `path` through the library's scan job on the CPU and hands the report to
/// `use_report`.
pub fn with_scan<R>(path: &Path, use_report: impl FnOnce(&Report<'_>) -> R) -> Result<R, String> {
    let options = ScanOptions { device: Device::Cpu, ..ScanOptions::default() };
    let scanned = scan_job(&[path.to_path_buf()], &options).map_err(|e| e.to_string())?;
    Ok(use_report(&scanned.report))
}

/// One tensor's scan result, owned.
#[derive(Clone, Debug)]
pub struct Scanned {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<u64>,
    pub skipped: Option<&'static str>,
    pub counts: Counts,
}

/// Scans `path` through the library on the CPU backend.
pub fn scan(path: &Path) -> Result<Vec<Scanned>, String> {
    with_scan(path, |report| {
        report.files[0]
            .tensors
            .iter()
            .map(|t| Scanned {
                name: t.name.to_string(),
                dtype: t.dtype.to_string(),
                shape: t.shape.to_vec(),
                skipped: t.skipped,
                counts: t.counts,
            })
            .collect()
    })
}

/// `path` as an argument (the temporary paths of the tests are UTF-8).
pub fn path_arg(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

/// Asserts a scanned tensor's counts and first index; `what` names the case.
#[allow(dead_code)] // not every test binary that includes `common` uses it
pub fn assert_counts(tensor: &Scanned, expected: Expected, what: &str) {
    let got = &tensor.counts;
    assert_eq!(
        (got.nan, got.pos_inf, got.neg_inf, got.first_non_finite),
        (expected.nan, expected.pos_inf, expected.neg_inf, expected.first),
        "{what}: tensor '{}' ({}): (nan, +inf, -inf, first) differ",
        tensor.name,
        tensor.dtype
    );
}

/// `/dev/full` opened for writing, to make a child's stdout unwritable; `None` (after
/// printing why the test is skipped) where there is none.
#[allow(dead_code)]
pub fn unwritable_stdout() -> Option<std::fs::File> {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").ok();
    if full.is_none() {
        skip("no /dev/full to make stdout unwritable");
    }
    full
}
