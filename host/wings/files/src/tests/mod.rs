//! The wing's tests that cross its rooms, on its own items (issue 47: tests reach only
//! the API, so the tests of the plumbing live beside it). Each file was a file of
//! `host/tests` of the same name; they use the fixtures of `tests/fixtures` (files and
//! images written by other implementations) and the exact references of
//! `bitexact_verify` and the conformance crate, never the code under test.
//!
//! Owns: nothing of the library (compiled only under `#[cfg(test)]`); the tests of the
//! wing's rooms together.

mod count_formats;
mod errors;
mod header_fuzz;
mod normalize_maxval;
mod normalize_open_once;
mod numpy_descr;
