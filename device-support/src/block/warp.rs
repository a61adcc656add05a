//! Warps: their size, the lane id, the shuffles and votes among their lanes, and the warp
//! barrier.

use super::imp;

/// Threads per warp on every NVIDIA GPU this project targets (sm_75 … sm_120).
pub use shared::launch::WARP_SIZE;

/// A mask naming all 32 lanes of a warp.
pub const FULL_MASK: u32 = u32::MAX;

/// The calling thread's lane in the warp (`%laneid`), `0..WARP_SIZE`. Warps are
/// consecutive runs of 32 [`thread_rank`](super::thread_rank)s.
#[inline(always)]
pub fn lane_id() -> u32 {
    imp::lane_id()
}

/// `value` of lane `src_lane` (mod 32) of the warp (`shfl.sync.idx.b32`).
///
/// # Safety
/// Every lane named in `mask`, the calling lane included, executes this same call.
#[inline(always)]
#[track_caller]
pub unsafe fn shfl_idx(mask: u32, value: u32, src_lane: u32) -> u32 {
    // SAFETY: forwarded from the caller.
    unsafe { imp::shfl_idx(mask, value, src_lane) }
}

/// `value` of lane `lane_id() - delta`, or the caller's own `value` where that is below 0
/// (`shfl.sync.up.b32`); `delta` is taken mod 32 (the GPU reads its low 5 bits).
///
/// # Safety
/// As [`shfl_idx`].
#[inline(always)]
#[track_caller]
pub unsafe fn shfl_up(mask: u32, value: u32, delta: u32) -> u32 {
    // SAFETY: forwarded from the caller.
    unsafe { imp::shfl_up(mask, value, delta) }
}

/// `value` of lane `lane_id() + delta`, or the caller's own `value` where that is past 31
/// (`shfl.sync.down.b32`); `delta` is taken mod 32 (the GPU reads its low 5 bits).
///
/// # Safety
/// As [`shfl_idx`].
#[inline(always)]
#[track_caller]
pub unsafe fn shfl_down(mask: u32, value: u32, delta: u32) -> u32 {
    // SAFETY: forwarded from the caller.
    unsafe { imp::shfl_down(mask, value, delta) }
}

/// `value` of lane `lane_id() ^ (lane_mask % 32)` (`shfl.sync.bfly.b32`).
///
/// # Safety
/// As [`shfl_idx`].
#[inline(always)]
#[track_caller]
pub unsafe fn shfl_xor(mask: u32, value: u32, lane_mask: u32) -> u32 {
    // SAFETY: forwarded from the caller.
    unsafe { imp::shfl_xor(mask, value, lane_mask) }
}

/// Whether `predicate` is true in every lane of `mask` (`vote.sync.all.pred`).
///
/// # Safety
/// As [`shfl_idx`].
#[inline(always)]
#[track_caller]
pub unsafe fn vote_all(mask: u32, predicate: bool) -> bool {
    // SAFETY: forwarded from the caller.
    unsafe { imp::vote_all(mask, predicate) }
}

/// Whether `predicate` is true in any lane of `mask` (`vote.sync.any.pred`).
///
/// # Safety
/// As [`shfl_idx`].
#[inline(always)]
#[track_caller]
pub unsafe fn vote_any(mask: u32, predicate: bool) -> bool {
    // SAFETY: forwarded from the caller.
    unsafe { imp::vote_any(mask, predicate) }
}

/// The lanes of `mask` whose `predicate` is true, bit `i` for lane `i`
/// (`vote.sync.ballot.b32`).
///
/// # Safety
/// As [`shfl_idx`].
#[inline(always)]
#[track_caller]
pub unsafe fn vote_ballot(mask: u32, predicate: bool) -> u32 {
    // SAFETY: forwarded from the caller.
    unsafe { imp::vote_ballot(mask, predicate) }
}

/// The warp barrier (`bar.warp.sync`, CUDA's `__syncwarp(mask)`): waits until every lane
/// of `mask` has reached it, and orders what each of them did to memory before it before
/// what any of them does after it. Since sm_70 the lanes of a warp are not in lockstep,
/// so lanes that exchange values through shared memory need it between a write and the
/// read of it (a shuffle or vote waits for the lanes but does not order memory); the
/// emulator reports the exchange without it as a race.
///
/// # Safety
/// Every lane named in `mask`, the calling lane included, executes a `sync_warp` with
/// the same `mask` (at this call or another).
#[inline(always)]
#[track_caller]
pub unsafe fn sync_warp(mask: u32) {
    // SAFETY: forwarded from the caller.
    unsafe { imp::sync_warp(mask) }
}
