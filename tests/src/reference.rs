//! The exact references of the block-scaled recipes, on integers: [`scaled`] (scaled
//! FP8 per tensor, the scale and the quantisation once or in two steps; per block, the
//! scale and the exact quotient rounded once; DeepGEMM's and compressed-tensors' steps)
//! and [`nvfp4`] (NVFP4's exact recipe and its producers' steps).
//!
//! They are the proofs' oracles, not the library's: nothing `bitexact` runs needs them,
//! so they live here, beside the proofs (`tests/tests/fp8_*.rs`, `mx.rs`, `nvfp4.rs`);
//! `host`'s tests of `cast` and of `normalize`'s PNM division use them too. They are
//! built on the library's public roundings ([`bitexact_verify::reference::round_to`] and
//! its kin: integer arithmetic on the fields) and share nothing with `shared`'s
//! computations.

pub mod nvfp4;
pub mod scaled;
