//! The host backend of the block API: each function asks the CPU emulator
//! ([`crate::emulator`]) about the emulated thread that calls it. Barriers, warp
//! operations, atomics and fences are sync points, where the emulator hands the baton on;
//! `#[track_caller]` gives it their call sites for its errors.

use super::{Dim3, MemorySpace, Scope};
use crate::emulator::{self as emu, AccessKind, BarrierForm, WarpOp};
use core::panic::Location;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

pub(super) fn thread_idx() -> Dim3 {
    emu::thread_idx()
}

pub(super) fn block_idx() -> Dim3 {
    emu::block_idx()
}

pub(super) fn block_dim() -> Dim3 {
    emu::block_dim()
}

pub(super) fn grid_dim() -> Dim3 {
    emu::grid_dim()
}

pub(super) fn lane_id() -> u32 {
    emu::lane_id()
}

#[track_caller]
pub(super) fn sync_threads() {
    emu::barrier(BarrierForm::Plain, false, Location::caller());
}

#[track_caller]
pub(super) fn sync_threads_count(predicate: bool) -> u32 {
    emu::barrier(BarrierForm::Count, predicate, Location::caller())
}

#[track_caller]
pub(super) fn sync_threads_and(predicate: bool) -> bool {
    emu::barrier(BarrierForm::And, predicate, Location::caller()) != 0
}

#[track_caller]
pub(super) fn sync_threads_or(predicate: bool) -> bool {
    emu::barrier(BarrierForm::Or, predicate, Location::caller()) != 0
}

/// The block's dynamic shared memory: its address (aligned to 16) and its size in bytes.
pub(super) fn dynamic_shared_bytes() -> (*mut u8, usize) {
    emu::dynamic_shared()
}

/// The emulator's check of an access (`write` or not) to value `index` of a
/// `MemorySlice` in `space` of `len` values of `size` bytes at `base`: the bounds, and in
/// shared memory the sanitizer's (see `emulator::shared_access`).
#[track_caller]
pub(super) fn check_access(space: MemorySpace, base: *const u8, index: usize, len: usize, size: usize, write: bool) {
    match space {
        MemorySpace::Shared => {
            let kind = if write { AccessKind::Write } else { AccessKind::Read };
            emu::shared_access(base, index, len, size, kind, Location::caller());
        }
        MemorySpace::Global => emu::global_access(index, len, Location::caller()),
    }
}

// The warp operations are safe here: the emulator checks their contract and reports a
// breach as an error. `unsafe` keeps the signatures of the nvptx backend.

#[track_caller]
pub(super) unsafe fn shfl_idx(mask: u32, value: u32, src_lane: u32) -> u32 {
    emu::warp(WarpOp::ShuffleIdx, (mask, value, src_lane), Location::caller())
}

#[track_caller]
pub(super) unsafe fn shfl_up(mask: u32, value: u32, delta: u32) -> u32 {
    emu::warp(WarpOp::ShuffleUp, (mask, value, delta), Location::caller())
}

#[track_caller]
pub(super) unsafe fn shfl_down(mask: u32, value: u32, delta: u32) -> u32 {
    emu::warp(WarpOp::ShuffleDown, (mask, value, delta), Location::caller())
}

#[track_caller]
pub(super) unsafe fn shfl_xor(mask: u32, value: u32, lane_mask: u32) -> u32 {
    emu::warp(WarpOp::ShuffleXor, (mask, value, lane_mask), Location::caller())
}

#[track_caller]
pub(super) unsafe fn vote_all(mask: u32, predicate: bool) -> bool {
    emu::warp(WarpOp::VoteAll, (mask, u32::from(predicate), 0), Location::caller()) != 0
}

#[track_caller]
pub(super) unsafe fn vote_any(mask: u32, predicate: bool) -> bool {
    emu::warp(WarpOp::VoteAny, (mask, u32::from(predicate), 0), Location::caller()) != 0
}

#[track_caller]
pub(super) unsafe fn vote_ballot(mask: u32, predicate: bool) -> u32 {
    emu::warp(WarpOp::VoteBallot, (mask, u32::from(predicate), 0), Location::caller())
}

#[track_caller]
pub(super) unsafe fn sync_warp(mask: u32) {
    emu::warp(WarpOp::SyncWarp, (mask, 0, 0), Location::caller());
}

// Atomics: the operation on the host's atomic type, then a sync point (so that a thread
// spinning on an atomic lets the others run). Scope does not matter on the host: one
// emulated thread runs at a time, and the baton orders every access.

/// `op` on the atomic at `address` (checked by the sanitizer where it is shared memory),
/// then the baton goes round.
///
/// # Safety
/// As the block API's atomics: `address` is valid, aligned, and only accessed atomically
/// meanwhile.
#[track_caller]
unsafe fn atomic<A, R>(address: *mut A::Value, op: impl FnOnce(&A) -> R) -> R
where
    A: FromPtr,
{
    let size = core::mem::size_of::<A::Value>();
    emu::shared_access(address.cast_const().cast(), 0, 1, size, AccessKind::Atomic, Location::caller());
    // SAFETY: forwarded from the caller.
    let result = op(unsafe { A::from_ptr(address) });
    emu::yield_baton("an atomic");
    result
}

/// `AtomicU32::from_ptr` and `AtomicU64::from_ptr`, for [`atomic`].
trait FromPtr: 'static {
    type Value;
    /// # Safety
    /// As `AtomicU32::from_ptr`.
    unsafe fn from_ptr<'a>(ptr: *mut Self::Value) -> &'a Self;
}

impl FromPtr for AtomicU32 {
    type Value = u32;
    unsafe fn from_ptr<'a>(ptr: *mut u32) -> &'a AtomicU32 {
        // SAFETY: forwarded from the caller.
        unsafe { AtomicU32::from_ptr(ptr) }
    }
}

impl FromPtr for AtomicU64 {
    type Value = u64;
    unsafe fn from_ptr<'a>(ptr: *mut u64) -> &'a AtomicU64 {
        // SAFETY: forwarded from the caller.
        unsafe { AtomicU64::from_ptr(ptr) }
    }
}

macro_rules! host_atomics {
    ($atomic:ty, $t:ty: $add:ident, $min:ident, $max:ident, $exch:ident, $cas:ident) => {
        #[track_caller]
        pub(super) unsafe fn $add(address: *mut $t, value: $t, _: Scope) -> $t {
            // SAFETY: forwarded from the caller.
            unsafe { atomic::<$atomic, _>(address, |a| a.fetch_add(value, Ordering::Relaxed)) }
        }
        #[track_caller]
        pub(super) unsafe fn $min(address: *mut $t, value: $t, _: Scope) -> $t {
            // SAFETY: forwarded from the caller.
            unsafe { atomic::<$atomic, _>(address, |a| a.fetch_min(value, Ordering::Relaxed)) }
        }
        #[track_caller]
        pub(super) unsafe fn $max(address: *mut $t, value: $t, _: Scope) -> $t {
            // SAFETY: forwarded from the caller.
            unsafe { atomic::<$atomic, _>(address, |a| a.fetch_max(value, Ordering::Relaxed)) }
        }
        #[track_caller]
        pub(super) unsafe fn $exch(address: *mut $t, value: $t, _: Scope) -> $t {
            // SAFETY: forwarded from the caller.
            unsafe { atomic::<$atomic, _>(address, |a| a.swap(value, Ordering::Relaxed)) }
        }
        #[track_caller]
        pub(super) unsafe fn $cas(address: *mut $t, expected: $t, new: $t, _: Scope) -> $t {
            // SAFETY: forwarded from the caller.
            unsafe {
                atomic::<$atomic, _>(address, |a| {
                    a.compare_exchange(expected, new, Ordering::Relaxed, Ordering::Relaxed).unwrap_or_else(|old| old)
                })
            }
        }
    };
}

host_atomics!(AtomicU32, u32: atomic_add_u32, atomic_min_u32, atomic_max_u32, atomic_exchange_u32, atomic_cas_u32);
host_atomics!(AtomicU64, u64: atomic_add_u64, atomic_min_u64, atomic_max_u64, atomic_exchange_u64, atomic_cas_u64);

#[track_caller]
pub(super) unsafe fn atomic_add_f32(address: *mut f32, value: f32, _: Scope) -> f32 {
    // SAFETY: forwarded from the caller; f32 and u32 have one size and alignment.
    let old = unsafe {
        atomic::<AtomicU32, _>(address.cast::<u32>(), |a| {
            let mut old = a.load(Ordering::Relaxed);
            loop {
                let new = add_f32_ftz(f32::from_bits(old), value).to_bits();
                match a.compare_exchange_weak(old, new, Ordering::Relaxed, Ordering::Relaxed) {
                    Ok(_) => break old,
                    Err(now) => old = now,
                }
            }
        })
    };
    f32::from_bits(old)
}

/// `a + b` as `atom.add.f32` computes it: subnormal inputs flushed to zero of their
/// sign, the sum rounded to nearest even, a subnormal sum flushed to zero of its sign.
fn add_f32_ftz(a: f32, b: f32) -> f32 {
    let flush = |x: f32| if x.is_subnormal() { f32::copysign(0.0, x) } else { x };
    flush(flush(a) + flush(b))
}

pub(super) fn fence(_: Scope) {
    emu::yield_baton("fence");
}

/// The host's `static_shared!`: a function that asks the emulator for the block's array
/// by a name unique to the declaration (module path, function name and the declaration's
/// file, line and column: two declarations never share an array, even of one name in two
/// functions of a module, which the PTX symbol forbids anyway), size and alignment.
#[doc(hidden)]
#[macro_export]
macro_rules! __static_shared_impl {
    ($vis:vis fn $name:ident : [$t:ty; $n:expr]) => {
        $vis fn $name() -> $crate::block::SharedSlice<$t> {
            const LEN: usize = $n;
            let ptr = $crate::emulator::__static_shared(
                ::core::concat!(
                    ::core::module_path!(),
                    "::",
                    ::core::stringify!($name),
                    " (",
                    ::core::file!(),
                    ":",
                    ::core::line!(),
                    ":",
                    ::core::column!(),
                    ")"
                ),
                ::core::alloc::Layout::new::<[$t; LEN]>(),
            );
            // SAFETY: the emulator's array of this name is `LEN` values of `$t`, aligned
            // for it, for as long as the block runs.
            unsafe { $crate::block::SharedSlice::from_raw_parts(ptr.cast::<$t>(), LEN) }
        }
    };
}
