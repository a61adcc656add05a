//! Skip-or-fail for tests whose prerequisite (CUDA tools, a GPU, Python) may be missing:
//! `ptx_builder::skip`, re-exported for this crate's tests, its dependants' tests and the
//! binary, so that every test of the workspace skips, and reads its `REQUIRE_*` switch,
//! the one way.
//!
//! On a machine without the prerequisite such a test prints `skipped: <reason>` straight
//! to stderr (which the test harness does not capture) and passes; with its switch set in
//! the environment (e.g. `REQUIRE_CUDA_TOOLS=1`, as CI does) it fails instead, so a
//! missing install cannot turn a suite green unnoticed.

pub use ptx_builder::skip::{require_or_skip, required, skip, skip_or_fail};
