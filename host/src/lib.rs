//! Host side of bitexact: the library `bitexact`, one crate per product (its wings, in
//! `host/wings/<wing>`), re-exported here as `bitexact::<wing>`. An edit recompiles its
//! wing and the wings above it, never the whole library; what a wing may use is its
//! `Cargo.toml`'s dependencies:
//!
//! | module | owns | may use |
//! |---|---|---|
//! | [`support`] | element types, rayon loops, progress bars, visible skips, output tables | nothing |
//! | [`cpu`] | the CPU level chosen at run time, the loops compiled for each, the CPU conversion instructions, `normalize`'s CPU forms | nothing |
//! | [`gpu`] | the GPU runtime: context, buffers, typed kernel launches, the embedded PTX | support |
//! | [`verify`] | the variant table, domains, the exact reference, the CPU proofs | support, gpu |
//! | [`bench`](mod@bench) | GPU benchmarks: bandwidth, latency, throughput, their validity, the CUDA C++ baseline's rows (the engine of `bitexact bench`; no API) | support, gpu, verify, cuda_tools |
//! | [`cuda_tools`] | ptxas/cuobjdump, the SASS cost report, the PTX/SASS guards, the CUDA C++ baseline (NVRTC) | support, gpu, verify |
//! | [`search`] | the UNORM/SNORM scheme finder (the engine of `bitexact search`; no API) | support, verify |
//! | [`files`] | `scan`, `normalize` and `cast`: tensor containers, images, casts, backends | support, gpu, cpu |
//!
//! What these pages document is the API, under 300 items (`scripts/api_surface.py` counts
//! them from rustdoc's JSON, and fails where a public signature names anything else). The
//! wings also have `pub` items marked `#[doc(hidden)]`: what one wing, the binary or the
//! tests need of another, public because the wings are separate crates, and not API.
//! Two wings are the engines of commands and offer no API of their own: `bench` and
//! `search` (run `bitexact bench` and `bitexact search`).
//!
//! The `bitexact` binary's `cli` module sits on top and maps errors to exit codes.
//! Everything about variants is driven by `shared::for_each_variant!` through
//! [`verify::table::VARIANTS`]. ARCHITECTURE.md follows one variant through all of it.
#![deny(unsafe_code)]

#[doc(inline)]
pub use bitexact_bench as bench;
#[doc(inline)]
pub use bitexact_cpu as cpu;
#[doc(inline)]
pub use bitexact_cuda_tools as cuda_tools;
#[doc(inline)]
pub use bitexact_files as files;
#[doc(inline)]
pub use bitexact_gpu as gpu;
#[doc(inline)]
pub use bitexact_search as search;
#[doc(inline)]
pub use bitexact_support as support;
#[doc(inline)]
pub use bitexact_verify as verify;
