//! The block barrier and its count/and/or forms.

use super::imp;

/// Waits until every thread of the block has reached a barrier (`barrier.sync 0`, the
/// form that is correct when threads diverge), and makes every shared- and global-memory
/// write made before it by a thread of the block visible to the block after it.
///
/// Every thread of the block that has not exited must reach it; a thread that exits
/// before while others wait deadlocks the GPU, and is an error of the emulator.
#[inline(always)]
#[track_caller]
pub fn sync_threads() {
    imp::sync_threads()
}

/// [`sync_threads`] that also returns how many threads of the block passed `true`
/// (`barrier.red.popc.u32`).
#[inline(always)]
#[track_caller]
pub fn sync_threads_count(predicate: bool) -> u32 {
    imp::sync_threads_count(predicate)
}

/// [`sync_threads`] that also returns whether every thread of the block passed `true`
/// (`barrier.red.and.pred`).
#[inline(always)]
#[track_caller]
pub fn sync_threads_and(predicate: bool) -> bool {
    imp::sync_threads_and(predicate)
}

/// [`sync_threads`] that also returns whether any thread of the block passed `true`
/// (`barrier.red.or.pred`).
#[inline(always)]
#[track_caller]
pub fn sync_threads_or(predicate: bool) -> bool {
    imp::sync_threads_or(predicate)
}
