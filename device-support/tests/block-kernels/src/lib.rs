//! Kernels that use every item of `device_support::block` on `nvptx64-nvidia-cuda`, built
//! to PTX by `device-support/tests/nvptx_block.rs`, which checks the instructions each
//! one gets and assembles them with ptxas. One kernel per group of items; each writes
//! what it computed to `out` so that nothing is optimised away. On other targets the
//! crate is empty.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

device_support::trap_on_panic!();

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use device_support::block::{
        self, Atomic, AtomicInteger, FULL_MASK, Scope, SharedSlice, block_max_u32, block_min_u32, block_sum_u32,
        warp_max_u32, warp_min_u32, warp_sum_u32,
    };

    device_support::static_shared!(fn scratch: [u32; 32]);
    device_support::static_shared!(fn tile: [u64; 256]);

    /// The slot of `out` of the calling thread's `k`-th value of `per_thread`, over the
    /// whole launch.
    #[inline(always)]
    fn slot(per_thread: u64, k: u64) -> usize {
        let lane = block::lane_x();
        (lane.index * per_thread + k) as usize
    }

    /// # Safety
    /// `out` holds 14 values per thread of the launch.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn block_indices(out: *mut u32) {
        let (t, b, bd, gd) = (block::thread_idx(), block::block_idx(), block::block_dim(), block::grid_dim());
        let values =
            [t.x, t.y, t.z, b.x, b.y, b.z, bd.x, bd.y, bd.z, gd.x, gd.y, gd.z, block::lane_id(), block::thread_rank()];
        for (k, v) in values.into_iter().enumerate() {
            // SAFETY: 14 values per thread.
            unsafe { out.add(slot(14, k as u64)).write(v) };
        }
    }

    /// The barriers, one of them reached from two branches (correct for `barrier.sync`,
    /// whose threads need not execute the same instruction).
    ///
    /// # Safety
    /// `out` holds 4 values per thread of the launch.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn block_barriers(out: *mut u32) {
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

    /// # Safety
    /// `out` holds 7 values per thread; the block's size is a multiple of 32.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn block_warp_ops(out: *mut u32, delta: u32) {
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
        for (k, v) in values.into_iter().enumerate() {
            // SAFETY: 7 values per thread.
            unsafe { out.add(slot(7, k as u64)).write(v) };
        }
    }

    /// Reverses the block's values through static and dynamic shared memory.
    ///
    /// # Safety
    /// `out` holds 3 values per thread; the block has at most 256 threads and the launch
    /// gives at least 4 dynamic shared bytes per thread.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn block_shared(out: *mut u32) {
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

    /// Every atomic at device scope on global memory, the three scopes of `add`, an
    /// atomic on shared memory, and the three fences.
    ///
    /// # Safety
    /// `words` holds 8 `u32`, `wide` 5 `u64`, `sum` 1 `f32`; `out` 1 value per thread.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn block_atomics(words: *mut u32, wide: *mut u64, sum: *mut f32, out: *mut u32) {
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

    /// The warp and block reductions of `input`'s values.
    ///
    /// # Safety
    /// `input` holds 1 value per thread, `out` 6; the block's size is a multiple of 32.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn block_reductions(input: *const u32, out: *mut u32) {
        // SAFETY: 1 value per thread.
        let x = unsafe { input.add(slot(1, 0)).read() };
        // SAFETY: every thread of the block (whose size is a multiple of 32) executes each
        // call; `scratch` has 32 values, one per warp of up to 1024 threads, and is used
        // only here.
        let values = unsafe {
            [
                warp_sum_u32(x),
                warp_min_u32(x),
                warp_max_u32(x),
                block_sum_u32(x, scratch()),
                block_min_u32(x, scratch()),
                block_max_u32(x, scratch()),
            ]
        };
        for (k, v) in values.into_iter().enumerate() {
            // SAFETY: 6 values per thread.
            unsafe { out.add(slot(6, k as u64)).write(v) };
        }
    }
}
