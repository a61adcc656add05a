//! GPU kernels, one per variant of `shared::for_each_variant!`, in pure Rust.
//!
//! Compiled for `nvptx64-nvidia-cuda` by `host/build.rs` (rustc's own nvptx target,
//! `-Zbuild-std=core`, PTX via `--emit=asm`). For any other target this crate is an
//! empty `no_std` library, so the workspace builds and tests everywhere.
//!
//! Kernels are thin: index, guard, call into `shared`, store. No algorithm lives here.
//!
//! Per variant `V` of the table there are:
//! - `V(input, output, n)`: `output[i] = V(input[i])` for `i < n` (conformance);
//! - `V_skeleton(input, output, n)`: the same loop with no computation (SASS report);
//! - `V_latency(seed, iterations, out)`: one thread, a dependent chain, in cycles;
//! - `V_throughput(seed, iterations, out)`: every thread, four independent chains;
//!
//! and, for the bandwidth benchmarks, 16-bytes-per-thread-per-step kernels:
//! - `V_wide(input, output, n)` for UNORM8 → f32 variants;
//! - `V_count_nonfinite(input, n, result)` for binary16 finiteness variants.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, stdarch_nvptx, link_llvm_intrinsics))]
// `link_llvm_intrinsics` is how the cycle counter (%clock64) is read; core::arch::nvptx has no wrapper.
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

#[cfg(target_arch = "nvptx64")]
mod device;
