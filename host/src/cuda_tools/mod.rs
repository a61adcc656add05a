//! Reports and guards built on NVIDIA's command-line tools, without a GPU: finding and
//! running ptxas / cuobjdump / nvdisasm ([`tools`]), the per-variant SASS cost report
//! and the timing-chain check ([`sass`]), and the PTX/SASS guards against patterns
//! that compile to wrong code on the GPU ([`guards`]).
//!
//! Owns: everything that reads PTX or SASS text. Uses: [`crate::support`],
//! [`crate::gpu::ptx`] (the embedded PTX) and [`crate::verify::table`] (which kernels
//! exist).

pub mod guards;
pub mod sass;
pub mod tools;
