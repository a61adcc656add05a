//! Kernels that use every item of `device_support::block`, one kernel per group of
//! items, each writing what it computed to `out` so that nothing is optimised away. Each
//! is declared once with [`shared::kernel!`] (its marker type, e.g. [`BlockIndices`],
//! gives `bitexact::gpu` the typed launch):
//!
//! * on `nvptx64-nvidia-cuda`, `device-support/tests/nvptx_block.rs` checks the
//!   instructions each one gets and assembles them with ptxas;
//! * on the host, `block-host`'s tests run them under `device_support::emulator` in 1-D,
//!   2-D and 3-D shapes with dynamic shared memory, check what they wrote against the
//!   shape's arithmetic, and on a GPU launch the same kernels through their typed handles
//!   and compare the GPU's words with the emulator's.
//!
//! Every thread writes its values at its global rank ([`global_rank`]), so any shape of
//! grid and block fills `out` without overlap.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

device_support::trap_on_panic!();

use device_support::block::{
    self, Atomic, AtomicInteger, FULL_MASK, GlobalSlice, Scope, SharedSlice, block_max_u32, block_min_u32,
    block_sum_u32, warp_max_u32, warp_min_u32, warp_sum_u32,
};

device_support::static_shared!(fn scratch: [u32; 32]);
device_support::static_shared!(fn tile: [u64; 256]);

/// The calling thread's rank over the whole launch: its block's rank in the grid (x
/// fastest) times the block's thread count, plus its rank in the block.
#[inline(always)]
pub fn global_rank() -> u64 {
    block::block_idx().rank_in(block::grid_dim()) * block::block_dim().volume() + u64::from(block::thread_rank())
}

/// The slot of `out` of the calling thread's `k`-th value of `per_thread`.
#[inline(always)]
fn slot(per_thread: u64, k: u64) -> usize {
    (global_rank() * per_thread + k) as usize
}

/// Values each thread writes, per kernel (`out` holds this many per thread of the launch).
pub mod per_thread {
    /// [`block_indices`](crate::block_indices).
    pub const INDICES: usize = 14;
    /// [`block_barriers`](crate::block_barriers).
    pub const BARRIERS: usize = 4;
    /// [`block_warp_ops`](crate::block_warp_ops).
    pub const WARP_OPS: usize = 7;
    /// [`block_shared`](crate::block_shared).
    pub const SHARED: usize = 3;
    /// [`block_atomics`](crate::block_atomics).
    pub const ATOMICS: usize = 1;
    /// [`block_reductions`](crate::block_reductions).
    pub const REDUCTIONS: usize = 6;
    /// [`global_copy_raw`](crate::global_copy_raw) and
    /// [`global_copy_slice`](crate::global_copy_slice).
    pub const COPY: usize = 1;
}

/// Most threads per block of [`block_shared`] (its static tile's length).
pub const SHARED_TILE: usize = 256;

shared::kernel! {
    /// [`block_indices`]'s declaration.
    pub struct BlockIndices;
    /// Writes the thread's, block's, block size's and grid's x, y, z, its lane id and
    /// its rank in the block ([`per_thread::INDICES`] values).
    ///
    /// # Safety
    /// `out` holds 14 values per thread of the launch.
    pub unsafe fn block_indices(out: *mut u32) {
        let (t, b, bd, gd) = (block::thread_idx(), block::block_idx(), block::block_dim(), block::grid_dim());
        let values =
            [t.x, t.y, t.z, b.x, b.y, b.z, bd.x, bd.y, bd.z, gd.x, gd.y, gd.z, block::lane_id(), block::thread_rank()];
        for (k, v) in values.into_iter().enumerate() {
            // SAFETY: 14 values per thread.
            unsafe { out.add(slot(14, k as u64)).write(v) };
        }
    }
}

shared::kernel! {
    /// [`block_barriers`]'s declaration.
    pub struct BlockBarriers;
    /// The barriers, one of them reached from two branches (correct for `barrier.sync`,
    /// whose threads need not execute the same instruction). Writes the count of odd
    /// ranks, whether every rank is below 1024, whether some rank is 3, and its rank.
    ///
    /// # Safety
    /// `out` holds 4 values per thread of the launch.
    pub unsafe fn block_barriers(out: *mut u32) {
        let rank = block::thread_rank();
        let odd = rank % 2 == 1;
        // The point of the test: the same barrier, reached from both branches.
        #[allow(clippy::if_same_then_else)]
        if odd {
            block::sync_threads();
        } else {
            block::sync_threads();
        }
        let count = block::sync_threads_count(odd);
        let all = block::sync_threads_and(rank < 1024);
        let any = block::sync_threads_or(rank == 3);
        for (k, v) in [count, all as u32, any as u32, rank].into_iter().enumerate() {
            // SAFETY: 4 values per thread.
            unsafe { out.add(slot(4, k as u64)).write(v) };
        }
    }
}

shared::kernel! {
    /// [`block_warp_ops`]'s declaration.
    pub struct BlockWarpOps;
    /// The four shuffles of `lane · 3`, `lane · 5`, `lane · 7` and `lane · 11` by
    /// `delta`, and the three votes, with a warp barrier before the writes.
    ///
    /// # Safety
    /// `out` holds 7 values per thread; the block's size is a multiple of 32.
    pub unsafe fn block_warp_ops(out: *mut u32, delta: u32) {
        let lane = block::lane_id();
        // SAFETY: every lane of the (full) warp executes each call.
        let values = unsafe {
            [
                block::shfl_idx(FULL_MASK, lane * 3, delta),
                block::shfl_up(FULL_MASK, lane * 5, delta),
                block::shfl_down(FULL_MASK, lane * 7, delta),
                block::shfl_xor(FULL_MASK, lane * 11, delta),
                block::vote_all(FULL_MASK, lane != delta) as u32,
                block::vote_any(FULL_MASK, lane == delta) as u32,
                block::vote_ballot(FULL_MASK, lane.is_multiple_of(3)),
            ]
        };
        // SAFETY: every lane of the (full) warp executes it.
        unsafe { block::sync_warp(FULL_MASK) };
        for (k, v) in values.into_iter().enumerate() {
            // SAFETY: 7 values per thread.
            unsafe { out.add(slot(7, k as u64)).write(v) };
        }
    }
}

shared::kernel! {
    /// [`block_shared`]'s declaration.
    pub struct BlockShared;
    /// Reverses the block's values through static and dynamic shared memory: writes
    /// `3 · mirror`, `5 · mirror` (`mirror` = the block's thread count − 1 − rank) and
    /// the dynamic slice's length in `u32`s.
    ///
    /// # Safety
    /// `out` holds 3 values per thread; the block has at most [`SHARED_TILE`] threads and
    /// the launch gives at least 4 dynamic shared bytes per thread.
    pub unsafe fn block_shared(out: *mut u32) {
        let (rank, threads) = (block::thread_rank() as usize, block::block_dim().volume() as usize);
        let dynamic: SharedSlice<u32> = block::dynamic_shared();
        let tile = tile();
        // SAFETY: each thread writes its own element, below 256 and below `dynamic.len()`.
        unsafe {
            tile.write(rank, rank as u64 * 3);
            dynamic.write(rank, rank as u32 * 5);
        }
        block::sync_threads();
        let mirror = threads - 1 - rank;
        // SAFETY: written before the barrier; nothing writes until the kernel ends.
        let (a, b) = unsafe { (tile.read(mirror) as u32, dynamic.read(mirror)) };
        for (k, v) in [a, b, dynamic.len() as u32].into_iter().enumerate() {
            // SAFETY: 3 values per thread.
            unsafe { out.add(slot(3, k as u64)).write(v) };
        }
    }
}

shared::kernel! {
    /// [`block_atomics`]'s declaration.
    pub struct BlockAtomics;
    /// Every atomic at device scope on global memory, the three scopes of `add`, an
    /// atomic on shared memory, and the three fences. Per thread of the launch: `words[0]
    /// += 3` (one add per scope), `words[1]` lowered and `words[2]` raised to its rank in
    /// the block, `words[3]` exchanged for it, `words[4]` set to it if 0; `wide[0..5]` the
    /// same in u64 with one add; `sum[0] += 0.5`. Each thread writes its block's count of
    /// threads (an add per thread on shared memory).
    ///
    /// # Safety
    /// `words` holds 8 `u32`, `wide` 5 `u64`, `sum` 1 `f32`; `out` 1 value per thread.
    pub unsafe fn block_atomics(words: *mut u32, wide: *mut u64, sum: *mut f32, out: *mut u32) {
        let rank = block::thread_rank();
        let local = scratch();
        if rank == 0 {
            // SAFETY: only thread 0 writes, before the barrier.
            unsafe { local.write(0, 0) };
        }
        block::sync_threads();
        // SAFETY: every access to these words is atomic; they hold the counts given.
        unsafe {
            u32::atomic_add(words, 1, Scope::Block);
            u32::atomic_add(words, 1, Scope::Device);
            u32::atomic_add(words, 1, Scope::System);
            u32::atomic_min(words.add(1), rank, Scope::Device);
            u32::atomic_max(words.add(2), rank, Scope::Device);
            u32::atomic_exchange(words.add(3), rank, Scope::Device);
            u32::atomic_compare_exchange(words.add(4), 0, rank, Scope::Device);
            u64::atomic_add(wide, 1, Scope::Device);
            u64::atomic_min(wide.add(1), u64::from(rank), Scope::Device);
            u64::atomic_max(wide.add(2), u64::from(rank), Scope::Device);
            u64::atomic_exchange(wide.add(3), u64::from(rank), Scope::Device);
            u64::atomic_compare_exchange(wide.add(4), 0, u64::from(rank), Scope::Device);
            f32::atomic_add(sum, 0.5, Scope::Device);
            u32::atomic_add(local.as_mut_ptr(), 1, Scope::Block);
        }
        block::fence(Scope::Block);
        block::fence(Scope::Device);
        block::fence(Scope::System);
        block::sync_threads();
        // SAFETY: read after the barrier; nothing writes it any more.
        let block_count = unsafe { local.read(0) };
        // SAFETY: 1 value per thread.
        unsafe { out.add(slot(1, 0)).write(block_count) };
    }
}

shared::kernel! {
    /// [`block_reductions`]'s declaration.
    pub struct BlockReductions;
    /// The warp and block reductions (sum, min, max) of `input`'s values, one per thread
    /// at its global rank.
    ///
    /// # Safety
    /// `input` holds 1 value per thread, `out` 6; the block's size is a multiple of 32.
    pub unsafe fn block_reductions(input: *const u32, out: *mut u32) {
        // SAFETY: 1 value per thread.
        let x = unsafe { input.add(slot(1, 0)).read() };
        // SAFETY: every thread of the block (whose size is a multiple of 32) executes each
        // call; `scratch` has 32 values, one per warp of up to 1024 threads, and is used
        // only here, with a barrier after each block reduction (their contract: the last
        // reads of `scratch` are done before the next call writes it).
        let values = unsafe {
            let warp = [warp_sum_u32(x), warp_min_u32(x), warp_max_u32(x)];
            let sum = block_sum_u32(x, scratch());
            block::sync_threads();
            let min = block_min_u32(x, scratch());
            block::sync_threads();
            let max = block_max_u32(x, scratch());
            [warp[0], warp[1], warp[2], sum, min, max]
        };
        for (k, v) in values.into_iter().enumerate() {
            // SAFETY: 6 values per thread.
            unsafe { out.add(slot(6, k as u64)).write(v) };
        }
    }
}

shared::kernel! {
    /// [`global_copy_raw`]'s declaration.
    pub struct GlobalCopyRaw;
    /// `out[i] = input[i].rotate_left(7)` for the thread's global rank `i < n`, through raw
    /// pointers: [`global_copy_slice`]'s twin, which the PTX and SASS checks compare it
    /// with.
    ///
    /// # Safety
    /// `input` and `out` hold `n` values each.
    pub unsafe fn global_copy_raw(input: *const u32, out: *mut u32, n: u64) {
        let i = global_rank();
        if i < n {
            // SAFETY: `i < n`; each thread writes its own element.
            unsafe { out.add(i as usize).write(input.add(i as usize).read().rotate_left(7)) };
        }
    }
}

shared::kernel! {
    /// [`global_copy_slice`]'s declaration.
    pub struct GlobalCopySlice;
    /// [`global_copy_raw`] through `GlobalSlice` handles, which the emulator bounds-checks
    /// and which compile to the raw pointers' instructions on the GPU.
    ///
    /// # Safety
    /// `input` and `out` hold `n` values each.
    pub unsafe fn global_copy_slice(input: *const u32, out: *mut u32, n: u64) {
        // SAFETY: forwarded from the caller.
        let (input, out) =
            unsafe { (GlobalSlice::from_raw_parts(input.cast_mut(), n as usize), GlobalSlice::from_raw_parts(out, n as usize)) };
        let i = global_rank() as usize;
        if i < out.len() {
            // SAFETY: `i < n`; each thread writes its own element.
            unsafe { out.write(i, input.read(i).rotate_left(7)) };
        }
    }
}

/// The names of the declared kernels.
pub const KERNELS: [&str; 8] = {
    use shared::launch::DeclaredKernel;
    [
        BlockIndices::NAME,
        BlockBarriers::NAME,
        BlockWarpOps::NAME,
        BlockShared::NAME,
        BlockAtomics::NAME,
        BlockReductions::NAME,
        GlobalCopyRaw::NAME,
        GlobalCopySlice::NAME,
    ]
};
