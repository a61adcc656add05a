//! What a `no_std` kernel crate built on `shared` needs besides its kernels, the
//! counterpart of Rust-CUDA's `cuda_std` for this project's kernels (rustc's own
//! `nvptx64-nvidia-cuda` target, built by `ptx-builder`):
//!
//! * [`loops`]: one lane of a launch ([`Lane`]) and the loops over buffers, generic over
//!   a primitive (`shared::kind::*` bounds) or a closure: the grid-stride loop
//!   ([`grid_stride`]), one element per step ([`map`], [`map_with`]), coalesced four
//!   per step ([`stream`], [`stream_with`]), and the count of non-finite values with the
//!   first one's index ([`count_nonfinite`], [`count_failing`]), and both in one pass
//!   ([`stream_count`], [`stream_count_with`]);
//! * `this_lane()` (nvptx64 only): the calling GPU thread's [`Lane`];
//! * [`trap_on_panic!`]: the panic handler a kernel crate needs, which traps (the driver
//!   then reports a launch failure) instead of spinning. Only the final kernel crate
//!   may define a `#[panic_handler]`, so it is a macro that crate invokes once.
//!
//! A kernel of one's own is then a few lines:
//!
//! ```ignore
//! #![no_std]
//! #![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
//! device_support::trap_on_panic!();
//!
//! #[cfg(target_arch = "nvptx64")]
//! #[unsafe(no_mangle)]
//! pub unsafe extern "ptx-kernel" fn to_f32(input: *const u8, output: *mut u32, n: u64) {
//!     use device_support::{stream, this_lane};
//!     // SAFETY: the host passes `n`-element buffers.
//!     unsafe { stream::<shared::variants::unorm8_times3_int>(this_lane(), input, output, n) }
//! }
//! ```
//!
//! The loops compile for the host too (both little-endian, with 64-bit atomics): their
//! tests run them one lane after another over real buffers, so an indexing, alignment,
//! tail or packing mistake fails without a GPU.
#![no_std]
// nvptx64's block-level backend (`block/nvptx.rs`) reaches LLVM's NVVM intrinsics, inline
// PTX for the scoped atomics, and core's dynamic shared memory intrinsic.
#![cfg_attr(
    target_arch = "nvptx64",
    feature(stdarch_nvptx, link_llvm_intrinsics, asm_experimental_arch, core_intrinsics, gpu_intrinsics),
    feature(gpu_launch_sized_workgroup_mem, allow_internal_unstable),
    allow(internal_features)
)]

// On the host the emulator runs blocks as coroutines with stacks of their own, so it
// needs `std`; the kernels (nvptx64) never do.
#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod block;
#[cfg(not(target_arch = "nvptx64"))]
pub mod emulator;
#[cfg(test)]
mod emulator_tests;
pub mod loops;

pub use loops::{
    Bits, Chunk, ChunkLoad, Lane, StreamQuad, count_failing, count_nonfinite, grid_stride, map, map_with, stream,
    stream_count, stream_count_with, stream_with,
};

/// The calling GPU thread's lane: its global index and the grid's total thread count,
/// from `%tid.x`, `%ctaid.x`, `%ntid.x`, `%nctaid.x` ([`Lane::of_thread`]).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn this_lane() -> Lane {
    use core::arch::nvptx::{_block_dim_x, _block_idx_x, _grid_dim_x, _thread_idx_x};
    // SAFETY: reading the special registers has no preconditions.
    let (thread, block, block_dim, grid_dim) =
        unsafe { (_thread_idx_x(), _block_idx_x(), _block_dim_x(), _grid_dim_x()) };
    Lane::of_thread(thread, block, block_dim, grid_dim)
}

/// Aborts the kernel (`trap`); the driver reports a launch failure.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: `trap` aborts the kernel; it has no preconditions.
    unsafe { core::arch::nvptx::trap() }
}

/// Defines the kernel crate's `#[panic_handler]` for nvptx64: it traps
/// (`trap`, on nvptx64), which the driver reports as a launch failure, where the
/// usual `loop {}` would hang the GPU. Invoke it once, in the crate that is built to
/// PTX (only that crate may define a panic handler); on other targets it expands to
/// nothing. A kernel should have no reachable panic at all (`ptx-builder` rejects PTX
/// that calls into core's panic machinery); this is the backstop.
#[macro_export]
macro_rules! trap_on_panic {
    () => {
        #[cfg(target_arch = "nvptx64")]
        #[panic_handler]
        fn panic(_: &core::panic::PanicInfo) -> ! {
            $crate::trap()
        }
    };
}
