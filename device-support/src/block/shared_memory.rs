//! The block's shared memory: dynamic (sized at launch) and static (`static_shared!`),
//! through the [`SharedSlice`] handle.

use super::imp;

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
