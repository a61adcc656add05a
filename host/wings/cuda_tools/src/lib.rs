//! Reports and guards built on NVIDIA's command-line tools, without a GPU: finding and
//! running ptxas / cuobjdump / nvdisasm ([`tools`]), the per-variant SASS cost report
//! and the timing-chain check ([`sass`]), the listing of any module ([`listing`]), the PTX/SASS guards against patterns that
//! compile to wrong code on the GPU ([`guards`]), and the CUDA C++ baseline: the same
//! forms in CUDA C++ ([`baseline`], source in `cuda-baseline/`), compiled by NVRTC
//! ([`nvrtc`]) and set beside the Rust variants in the SASS report; its PTX for the GPU
//! check and the bench, and the comparison of its results with the reference
//! ([`cxx_gpu`]).
//!
//! Owns: everything that reads PTX or SASS text, and the C++ baseline. Uses:
//! [`bitexact_support`], [`bitexact_gpu::ptx`] (the embedded PTX) and
//! [`bitexact_verify::table`] (which kernels exist).
#![deny(unsafe_code)]

#[doc(hidden)]
pub mod baseline;
#[doc(hidden)]
pub mod cxx_gpu;
pub mod guards;
pub mod listing;
#[doc(hidden)]
pub mod nvrtc;
pub mod sass;
pub mod tools;

#[cfg(test)]
mod tests;
