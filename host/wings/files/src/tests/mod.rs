//! The wing's tests that cross its rooms, on its own items (issue 47: tests reach only
//! the API, so the tests of the plumbing live beside it). Most files were files of
//! `host/tests` of the same name, whole or in part (`scan_files` and `normalize_dtypes`:
//! their library tests, the command's staying there; `count_formats`: `scan_api`'s
//! counting loops); `cast_block_loop` and `cpu_levels` (its `normalize` part) were the
//! conformance crate's, `errors` was in `lib.rs`. They use the fixtures of
//! `tests/fixtures` (files and images written by other implementations) and the exact
//! references of `bitexact_verify` and the conformance crate, never the code under test.
//!
//! Owns: nothing of the library (compiled only under `#[cfg(test)]`); the tests of the
//! wing's rooms together.

mod cast_block_loop;
mod count_formats;
mod cpu_levels;
mod errors;
mod header_fuzz;
mod normalize_dtypes;
mod normalize_maxval;
mod normalize_open_once;
mod numpy_descr;
mod scan_files;
mod scan_normalize;

use crate::backend::Device;
use crate::scan::report::TensorReport;
use crate::scan::{ScanOptions, scan as scan_job};
use std::path::Path;
use test_fixtures::Expected;

/// `path` scanned by the wing's scan job on the CPU: the tensors of its one file.
fn scan(path: &Path) -> Result<Vec<TensorReport<'static>>, String> {
    let options = ScanOptions { device: Device::Cpu, ..ScanOptions::default() };
    let mut scanned = scan_job(&[path.to_path_buf()], &options).map_err(|e| e.to_string())?;
    Ok(scanned.report.files.swap_remove(0).tensors)
}

/// Asserts a scanned tensor's counts and first index against the independent decoders'
/// (`expected`); `what` names the case.
fn assert_counts(tensor: &TensorReport<'_>, expected: Expected, what: &str) {
    let c = &tensor.counts;
    let got = Expected { nan: c.nan, pos_inf: c.pos_inf, neg_inf: c.neg_inf, first: c.first_non_finite };
    assert_eq!(got, expected, "{what}: tensor '{}' ({}): counts and first index", tensor.name, tensor.dtype);
}
