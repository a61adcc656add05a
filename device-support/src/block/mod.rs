//! Block-level device support: 3-D indices, the block barrier and its count/and/or
//! forms, shared memory (dynamic and static), warp shuffles, votes and the lane id,
//! scoped atomics, and warp and block reductions built on them.
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

/// Threads per warp on every NVIDIA GPU this project targets (sm_75 … sm_120).
pub const WARP_SIZE: u32 = 32;

/// A mask naming all 32 lanes of a warp.
pub const FULL_MASK: u32 = u32::MAX;

/// A 3-D index or extent, CUDA's `dim3` (the one type host and device share).
pub use shared::launch::Dim3;

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

/// The calling thread's lane in the warp (`%laneid`), `0..WARP_SIZE`. Warps are
/// consecutive runs of 32 [`thread_rank`]s.
#[inline(always)]
pub fn lane_id() -> u32 {
    imp::lane_id()
}

/// The calling thread's [`crate::Lane`] over the whole launch in x (`block_idx().x ·
/// block_dim().x + thread_idx().x` of `grid_dim().x · block_dim().x` lanes), for the
/// grid-stride loops of [`crate::loops`]. For launches whose y and z extents are 1.
#[inline(always)]
pub fn lane_x() -> crate::Lane {
    let (t, b, bd, gd) = (thread_idx(), block_idx(), block_dim(), grid_dim());
    crate::Lane::of_thread(t.x, b.x, bd.x, gd.x)
}

// ---------------------------------------------------------------------------------------
// Barriers

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

// ---------------------------------------------------------------------------------------
// Shared memory

/// A run of `len` values of `T` in the block's shared memory: a copyable handle, never a
/// reference, because other threads of the block read and write the same memory. Access
/// goes through [`SharedSlice::read`] and [`SharedSlice::write`], whose contract is the
/// race-freedom the GPU needs as well: between two block barriers an element is either
/// written by one thread and read by none other, or only read.
pub struct SharedSlice<T> {
    ptr: *mut T,
    len: usize,
}

impl<T> Clone for SharedSlice<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SharedSlice<T> {}

impl<T: Copy> SharedSlice<T> {
    /// The handle of `len` values at `ptr`.
    ///
    /// # Safety
    /// `ptr` must point to `len` values of `T` of the block's shared memory (or, on the
    /// host, the emulator's), aligned for `T`, for as long as the block runs.
    #[inline(always)]
    pub const unsafe fn from_raw_parts(ptr: *mut T, len: usize) -> Self {
        SharedSlice { ptr, len }
    }

    /// How many values it holds.
    #[inline(always)]
    pub const fn len(self) -> usize {
        self.len
    }

    /// Whether it holds none.
    #[inline(always)]
    pub const fn is_empty(self) -> bool {
        self.len == 0
    }

    /// The first value's address (a generic address: the atomics take it).
    #[inline(always)]
    pub const fn as_mut_ptr(self) -> *mut T {
        self.ptr
    }

    /// Value `i`.
    ///
    /// Under the emulator, the sanitizer checks the contract and reports a breach as an
    /// [`EmulatorError`](crate::emulator::EmulatorError) naming both call sites where two
    /// threads race; on a GPU it is unchecked.
    ///
    /// # Safety
    /// `i < len()`; value `i` was written since the block started; no other thread writes
    /// it between the block barriers around this read.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn read(self, i: usize) -> T {
        #[cfg(not(target_arch = "nvptx64"))]
        imp::check_shared_read(self.ptr.cast_const().cast(), i, self.len, core::mem::size_of::<T>());
        // SAFETY: forwarded from the caller.
        unsafe { self.ptr.add(i).read() }
    }

    /// Sets value `i` (checked under the emulator as [`read`](Self::read) is).
    ///
    /// # Safety
    /// `i < len()`; no other thread reads or writes value `i` between the block barriers
    /// around this write.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn write(self, i: usize, value: T) {
        #[cfg(not(target_arch = "nvptx64"))]
        imp::check_shared_write(self.ptr.cast_const().cast(), i, self.len, core::mem::size_of::<T>());
        // SAFETY: forwarded from the caller.
        unsafe { self.ptr.add(i).write(value) }
    }
}

/// The block's dynamic shared memory (sized at launch) as values of `T`: as many whole
/// values as the launch's dynamic shared bytes hold, from an address aligned to 16 bytes.
/// Every call in a block returns the same memory.
///
/// # Panics
/// At compile time if `T`'s alignment exceeds 16.
#[inline(always)]
pub fn dynamic_shared<T: Copy>() -> SharedSlice<T> {
    const { assert!(core::mem::align_of::<T>() <= 16, "dynamic shared memory is aligned to 16 bytes") };
    let (ptr, bytes) = imp::dynamic_shared_bytes();
    // SAFETY: `ptr` is the block's dynamic shared memory of `bytes` bytes, aligned to 16.
    unsafe { SharedSlice::from_raw_parts(ptr.cast::<T>(), bytes / core::mem::size_of::<T>().max(1)) }
}

/// Declares a function `$name() -> SharedSlice<$t>` whose memory is `$n` values of `$t`
/// of the block's **static** shared memory (its size fixed at compile time, one per
/// block, the same memory for every call in the block):
///
/// ```ignore
/// device_support::static_shared!(fn partials: [u32; 32]);
/// let partials = partials();
/// ```
///
/// `$name` becomes the PTX symbol's name (prefixed), so it must be unique in the kernel
/// crate.
#[macro_export]
macro_rules! static_shared {
    ($vis:vis fn $name:ident : [$t:ty; $n:expr]) => {
        $crate::__static_shared_impl!($vis fn $name: [$t; $n]);
    };
}

// ---------------------------------------------------------------------------------------
// Warp operations

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

// ---------------------------------------------------------------------------------------
// Atomics and fences

/// Which threads an atomic or a fence is coherent with (PTX `.cta`, `.gpu`, `.sys`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The threads of the calling block.
    Block,
    /// Every thread of the device (the scope a grid-wide reduction needs).
    Device,
    /// The device and the host (what `core::sync::atomic` gives on nvptx).
    System,
}

/// Atomic read-modify-write operations on one value in global or shared memory (a
/// generic address), relaxed (`atom.relaxed.<scope>`): each returns the value before the
/// operation. Pair them with [`fence`] or a barrier to order other memory.
///
/// # Safety (every method)
/// `address` is valid for reads and writes of `Self`, aligned, and every concurrent access
/// to it is atomic.
pub trait Atomic: Copy {
    /// `*address += value` (wrapping for integers; for f32 round-to-nearest-even with
    /// subnormal inputs and results flushed to zero of the same sign, as the GPU's
    /// `atom.add.f32` does).
    ///
    /// # Safety
    /// `address` is valid for reads and writes of `Self`, aligned, and every concurrent
    /// access to it is atomic.
    unsafe fn atomic_add(address: *mut Self, value: Self, scope: Scope) -> Self;
}

/// Atomic min, max, exchange and compare-exchange, for the integers (`u32`, `u64`).
///
/// # Safety (every method)
/// As [`Atomic`].
pub trait AtomicInteger: Atomic {
    /// `*address = min(*address, value)`.
    ///
    /// # Safety
    /// As [`Atomic`].
    unsafe fn atomic_min(address: *mut Self, value: Self, scope: Scope) -> Self;
    /// `*address = max(*address, value)`.
    ///
    /// # Safety
    /// As [`Atomic`].
    unsafe fn atomic_max(address: *mut Self, value: Self, scope: Scope) -> Self;
    /// `*address = value`.
    ///
    /// # Safety
    /// As [`Atomic`].
    unsafe fn atomic_exchange(address: *mut Self, value: Self, scope: Scope) -> Self;
    /// `*address = new` if `*address == expected`; returns the old value either way.
    ///
    /// # Safety
    /// As [`Atomic`].
    unsafe fn atomic_compare_exchange(address: *mut Self, expected: Self, new: Self, scope: Scope) -> Self;
}

macro_rules! atomic_impls {
    ($($t:ty: $add:ident, $min:ident, $max:ident, $exch:ident, $cas:ident;)*) => {$(
        impl Atomic for $t {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn atomic_add(address: *mut $t, value: $t, scope: Scope) -> $t {
                // SAFETY: forwarded from the caller.
                unsafe { imp::$add(address, value, scope) }
            }
        }
        impl AtomicInteger for $t {
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn atomic_min(address: *mut $t, value: $t, scope: Scope) -> $t {
                // SAFETY: forwarded from the caller.
                unsafe { imp::$min(address, value, scope) }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn atomic_max(address: *mut $t, value: $t, scope: Scope) -> $t {
                // SAFETY: forwarded from the caller.
                unsafe { imp::$max(address, value, scope) }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn atomic_exchange(address: *mut $t, value: $t, scope: Scope) -> $t {
                // SAFETY: forwarded from the caller.
                unsafe { imp::$exch(address, value, scope) }
            }
            #[inline(always)]
            #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
            unsafe fn atomic_compare_exchange(address: *mut $t, expected: $t, new: $t, scope: Scope) -> $t {
                // SAFETY: forwarded from the caller.
                unsafe { imp::$cas(address, expected, new, scope) }
            }
        }
    )*};
}

atomic_impls! {
    u32: atomic_add_u32, atomic_min_u32, atomic_max_u32, atomic_exchange_u32, atomic_cas_u32;
    u64: atomic_add_u64, atomic_min_u64, atomic_max_u64, atomic_exchange_u64, atomic_cas_u64;
}

impl Atomic for f32 {
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn atomic_add(address: *mut f32, value: f32, scope: Scope) -> f32 {
        // SAFETY: forwarded from the caller.
        unsafe { imp::atomic_add_f32(address, value, scope) }
    }
}

/// Orders the calling thread's memory accesses before it against those after it, as seen
/// by the threads of `scope` (`fence.acq_rel.<scope>`).
#[inline(always)]
pub fn fence(scope: Scope) {
    imp::fence(scope)
}

// ---------------------------------------------------------------------------------------
// Reductions

mod reduce;
pub use reduce::{block_max_u32, block_min_u32, block_sum_u32, warp_max_u32, warp_min_u32, warp_sum_u32};
