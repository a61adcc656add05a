//! GPU kernels, one per variant of `shared::for_each_variant!`, in pure Rust.
//!
//! Compiled for `nvptx64-nvidia-cuda` by `host/build.rs` (rustc's own nvptx target,
//! `-Zbuild-std=core`, PTX via `--emit=asm`). For any other target this crate is an
//! empty `no_std` library, so the workspace builds and tests everywhere.
//!
//! Kernels are thin: index, guard, call into `shared`, store. No algorithm lives here.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, stdarch_nvptx))]

#[cfg(target_arch = "nvptx64")]
mod device;
