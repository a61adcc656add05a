//! Block-level device support: 3-D indices, the block barrier and its count/and/or
//! forms, shared memory (dynamic and static), global memory through a checked handle,
//! warp shuffles, votes and the lane id, scoped atomics, and warp and block reductions
//! built on them.
//!
//! Every function here compiles for two targets with one meaning:
//!
//! * on `nvptx64` it is the GPU's own operation, reached through a **convergent** LLVM
//!   intrinsic (barriers, shuffles, votes: never `asm!`, which LLVM may duplicate into
//!   divergent branches) or a single PTX instruction whose placement does not matter
//!   (atomics, fences, special registers), see `nvptx.rs`;
//! * on the host it is the CPU emulator's ([`crate::emulator`]): the same kernel function,
//!   compiled for the host, runs as real blocks of threads with this barrier, this shared
//!   memory, warps of 32 and these atomics. Called outside [`crate::emulator::launch`]
//!   these functions panic (there is no block to ask).
//!
//! # Which functions are `unsafe`
//! A barrier that some thread never reaches deadlocks the GPU (the emulator reports it);
//! that is a hang, not memory unsafety, so the barriers are safe. A warp operation whose
//! `mask` names a lane that does not execute the same call is undefined behaviour in PTX
//! (`shfl.sync`, `vote.sync`), so those are `unsafe`, as in Rust-CUDA's `cuda_std`. Shared
//! memory and atomics touch memory other threads touch: their contracts are on
//! [`SharedSlice`] and on each atomic.

#[cfg(target_arch = "nvptx64")]
mod nvptx;
#[cfg(target_arch = "nvptx64")]
use nvptx as imp;

#[cfg(not(target_arch = "nvptx64"))]
mod host;
#[cfg(not(target_arch = "nvptx64"))]
use host as imp;

mod atomic;
mod barrier;
mod index;
mod memory_slice;
mod reduce;
mod shared_memory;
mod warp;

/// A 3-D index or extent, CUDA's `dim3` (the one type host and device share).
pub use shared::launch::Dim3;

pub use atomic::{Atomic, AtomicInteger, Scope, fence};
pub use barrier::{sync_threads, sync_threads_and, sync_threads_count, sync_threads_or};
pub use index::{block_dim, block_idx, grid_dim, lane_x, thread_idx, thread_rank};
pub use memory_slice::{Global, GlobalSlice, MemorySlice, MemorySpace, Shared, SharedSlice, Space};
pub use reduce::{block_max_u32, block_min_u32, block_sum_u32, warp_max_u32, warp_min_u32, warp_sum_u32};
pub use shared_memory::dynamic_shared;
pub use warp::{
    FULL_MASK, WARP_SIZE, lane_id, shfl_down, shfl_idx, shfl_up, shfl_xor, sync_warp, vote_all, vote_any, vote_ballot,
};
