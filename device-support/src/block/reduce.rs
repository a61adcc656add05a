//! Warp and block reductions of `u32` (sum, min, max) on the shuffles and the barrier.
//! Wrapping sum; min and max of unsigned integers, which is also the order of the bits
//! of non-negative f32 values (an amax over `|x|` bits is `block_max_u32`, and a NaN,
//! whose magnitude bits exceed infinity's, wins it: the max does not hide it).

use super::{FULL_MASK, SharedSlice, WARP_SIZE, lane_id, shfl_xor, sync_threads, thread_rank};

/// Combines `value` over the 32 lanes of the warp with `op` by the butterfly
/// (`shfl.sync.bfly` with masks 16, 8, 4, 2, 1): every lane gets the result.
///
/// # Safety
/// All 32 lanes of the warp execute this same call.
#[inline(always)]
#[track_caller]
unsafe fn warp_combine(mut value: u32, op: impl Fn(u32, u32) -> u32) -> u32 {
    let mut lane_mask = WARP_SIZE / 2;
    while lane_mask > 0 {
        // SAFETY: the caller guarantees all 32 lanes execute this call.
        value = op(value, unsafe { shfl_xor(FULL_MASK, value, lane_mask) });
        lane_mask /= 2;
    }
    value
}

/// The wrapping sum of `value` over the warp, in every lane.
///
/// # Safety
/// All 32 lanes of the warp execute this same call.
#[inline(always)]
#[track_caller]
pub unsafe fn warp_sum_u32(value: u32) -> u32 {
    // SAFETY: forwarded from the caller.
    unsafe { warp_combine(value, u32::wrapping_add) }
}

/// The minimum of `value` over the warp, in every lane.
///
/// # Safety
/// All 32 lanes of the warp execute this same call.
#[inline(always)]
#[track_caller]
pub unsafe fn warp_min_u32(value: u32) -> u32 {
    // SAFETY: forwarded from the caller.
    unsafe { warp_combine(value, u32::min) }
}

/// The maximum of `value` over the warp, in every lane.
///
/// # Safety
/// All 32 lanes of the warp execute this same call.
#[inline(always)]
#[track_caller]
pub unsafe fn warp_max_u32(value: u32) -> u32 {
    // SAFETY: forwarded from the caller.
    unsafe { warp_combine(value, u32::max) }
}

/// Combines `value` over the block: each warp by the butterfly, the warps' results
/// through `scratch` (one value per warp), then warp 0 again, whose lanes past the warp
/// count contribute `identity`; every thread gets the result. Three block barriers.
///
/// # Safety
/// As [`block_sum_u32`].
#[inline(always)]
#[track_caller]
unsafe fn block_combine(
    value: u32,
    scratch: SharedSlice<u32>,
    op: impl Fn(u32, u32) -> u32 + Copy,
    identity: u32,
) -> u32 {
    let (rank, lane) = (thread_rank(), lane_id());
    // SAFETY: the caller guarantees all lanes of every (full) warp execute this call.
    let warp_result = unsafe { warp_combine(value, op) };
    let warps = (super::block_dim().volume() / u64::from(WARP_SIZE)) as u32;
    if lane == 0 {
        // SAFETY: one value per warp fits `scratch`; only this warp's lane 0 writes it.
        unsafe { scratch.write((rank / WARP_SIZE) as usize, warp_result) };
    }
    sync_threads();
    let mut result = identity;
    if rank < WARP_SIZE {
        // SAFETY: written before the barrier; nothing writes `scratch` until the next one.
        let partial = if lane < warps { unsafe { scratch.read(lane as usize) } } else { identity };
        // SAFETY: warp 0 is full and all of its lanes are here.
        result = unsafe { warp_combine(partial, op) };
    }
    sync_threads();
    if rank == 0 {
        // SAFETY: only thread 0 writes, between two barriers.
        unsafe { scratch.write(0, result) };
    }
    sync_threads();
    // SAFETY: written before the barrier; read only until the caller's next barrier.
    unsafe { scratch.read(0) }
}

/// The wrapping sum of `value` over the block, in every thread.
///
/// # Safety
/// Every thread of the block executes this same call; the block's thread count is a
/// multiple of 32 (at most 1024); `scratch` holds at least one value per warp, and no
/// other code touches it until every thread has returned and passed a barrier.
#[inline(always)]
#[track_caller]
pub unsafe fn block_sum_u32(value: u32, scratch: SharedSlice<u32>) -> u32 {
    // SAFETY: forwarded from the caller.
    unsafe { block_combine(value, scratch, u32::wrapping_add, 0) }
}

/// The minimum of `value` over the block, in every thread.
///
/// # Safety
/// As [`block_sum_u32`].
#[inline(always)]
#[track_caller]
pub unsafe fn block_min_u32(value: u32, scratch: SharedSlice<u32>) -> u32 {
    // SAFETY: forwarded from the caller.
    unsafe { block_combine(value, scratch, u32::min, u32::MAX) }
}

/// The maximum of `value` over the block, in every thread.
///
/// # Safety
/// As [`block_sum_u32`].
#[inline(always)]
#[track_caller]
pub unsafe fn block_max_u32(value: u32, scratch: SharedSlice<u32>) -> u32 {
    // SAFETY: forwarded from the caller.
    unsafe { block_combine(value, scratch, u32::max, 0) }
}
