//! Scoped atomics on global or shared memory, and fences.

use super::imp;

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
