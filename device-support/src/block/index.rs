//! Where the calling thread is: its index in the block and the block's in the grid, the
//! extents of both, its rank in the block, and its lane over a 1-D launch.

use super::{Dim3, imp};

/// The calling thread's index in its block (`%tid`).
#[inline(always)]
pub fn thread_idx() -> Dim3 {
    imp::thread_idx()
}

/// The calling thread's block's index in the grid (`%ctaid`).
#[inline(always)]
pub fn block_idx() -> Dim3 {
    imp::block_idx()
}

/// The block's extent in threads (`%ntid`).
#[inline(always)]
pub fn block_dim() -> Dim3 {
    imp::block_dim()
}

/// The grid's extent in blocks (`%nctaid`).
#[inline(always)]
pub fn grid_dim() -> Dim3 {
    imp::grid_dim()
}

/// The calling thread's linear rank in its block, `thread_idx().rank_in(block_dim())`
/// (below 1024 on every target GPU, so it fits a `u32`).
#[inline(always)]
pub fn thread_rank() -> u32 {
    thread_idx().rank_in(block_dim()) as u32
}

/// The calling thread's [`crate::Lane`] over the whole launch in x (`block_idx().x ·
/// block_dim().x + thread_idx().x` of `grid_dim().x · block_dim().x` lanes), for the
/// grid-stride loops of [`crate::loops`]. For launches whose y and z extents are 1.
#[inline(always)]
pub fn lane_x() -> crate::Lane {
    let (t, b, bd, gd) = (thread_idx(), block_idx(), block_dim(), grid_dim());
    crate::Lane::of_thread(t.x, b.x, bd.x, gd.x)
}
