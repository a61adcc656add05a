//! Host side of bitexact, one folder per product:
//!
//! | module | owns | may use |
//! |---|---|---|
//! | [`support`] | element types, rayon loops, progress bars, visible skips, output tables | nothing |
//! | [`cpu`] | the CPU level chosen at run time, the loops compiled for each, the CPU conversion instructions, `normalize`'s CPU forms | nothing |
//! | [`gpu`] | the GPU runtime: context, buffers, typed kernel launches, the embedded PTX | support |
//! | [`verify`] | the variant table, domains, the exact reference, the CPU proofs | support, gpu |
//! | [`bench`](mod@bench) | GPU benchmarks: bandwidth, latency, throughput, their validity, the CUDA C++ baseline's rows | support, gpu, verify, cuda_tools |
//! | [`cuda_tools`] | ptxas/cuobjdump, the SASS cost report, the PTX/SASS guards, the CUDA C++ baseline (NVRTC) | support, gpu, verify |
//! | [`search`] | the UNORM/SNORM scheme finder | support, verify |
//! | [`files`] | `scan`, `normalize` and `cast`: tensor containers, images, casts, backends | support, gpu, cpu |
//!
//! The `bitexact` binary's `cli` module sits on top and maps errors to exit codes.
//! Everything about variants is driven by `shared::for_each_variant!` through
//! [`verify::table::VARIANTS`]. ARCHITECTURE.md follows one variant through all of it.
#![deny(unsafe_code)]

pub mod bench;
pub mod cpu;
pub mod cuda_tools;
pub mod files;
pub mod gpu;
pub mod search;
pub mod support;
pub mod verify;
