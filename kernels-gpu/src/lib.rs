//! GPU kernels, one per variant of `shared::for_each_variant!`, in pure Rust.
//!
//! Compiled for `nvptx64-nvidia-cuda` by `host/wings/gpu/build.rs` through `ptx-builder` (rustc's
//! own nvptx target, `-Zbuild-std=core`, PTX via `--emit=asm`). For any other target
//! this crate is empty, so the workspace builds everywhere. The lane, the loops over
//! buffers (which lane touches which elements, how four results are packed into one
//! store; tested on the host one lane after another) and the trapping panic handler are
//! `device-support`'s, which a user's kernel crate can use too.
//!
//! Kernels are thin: index, guard, call into `shared`, store. No algorithm lives here.
//!
//! Per variant `V` of the table there is one kernel for each kind its entry has
//! (`shared::KernelKind`, whose docs give each kind's signature), named `V` followed by
//! the kind's suffix (`shared::kernel_suffix!`): every variant has `Map` (conformance),
//! `Skeleton` (the same loop with no computation, for the SASS report), `Latency` and
//! `Throughput` (timing chains); the conversions that stream (UNORM/SNORM → f32 of 8-
//! and 16-bit inputs, f32 → UNORM, normalize's binary16 / bfloat16 primitives, and one
//! form of each f32 ↔ binary16 / bfloat16 / FP8 conversion) also `Stream`, the
//! finiteness variants of every scanned format also
//! `CountNonfinite` (coalesced bandwidth kernels, for the benchmarks and the GPU
//! backend of `scan` and `normalize`).
//! The conversions the GPU has an instruction for also have `Hardware` (the instruction
//! itself, as inline PTX; for the non-saturating FP8 modes the saturating one and a
//! select), and the narrowings that stream `HardwareStream` (the `Stream` loop with the
//! instruction).
//!
//! `host/wings/gpu/build.rs` builds this crate once per PTX target of `shared::hardware::TARGETS`:
//! the baseline (`sm_75`) with every software kernel and the hardware kernels it can
//! hold, and each newer target with `--cfg bitexact_hardware_only` and only the hardware
//! kernels (`Hardware`, `HardwareStream`) of its instructions (`$BITEXACT_HARDWARE_KERNELS` names the file that lists
//! them).
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, link_llvm_intrinsics, asm_experimental_arch))]
// `link_llvm_intrinsics` is how the cycle counter (%clock64) is read; core::arch::nvptx has no wrapper.
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

#[cfg(target_arch = "nvptx64")]
mod device;
#[cfg(target_arch = "nvptx64")]
mod hardware;

// A kernel must never spin or unwind: a panic (there should be none reachable) traps,
// which the driver reports as a launch failure.
device_support::trap_on_panic!();
