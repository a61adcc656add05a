//! The wing's own tests: the kernels the table calls for against the embedded PTX.
//!
//! Owns: nothing of the library (compiled only under `#[cfg(test)]`).

mod expected_kernels;
