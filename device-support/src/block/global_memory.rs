//! Global memory through a bounds-carrying handle, [`GlobalSlice`]: a plain pointer on the
//! GPU (its length is never read there, so it costs nothing: `nvptx_block.rs` checks
//! that a kernel through it compiles to the same PTX and sm_90 SASS as one through raw
//! pointers), and checked on the host, where the CPU emulator reports an index past its
//! end as an error naming the kernel, the block, the thread and the call site.

#[cfg(not(target_arch = "nvptx64"))]
use super::imp;

/// A run of `len` values of `T` in global memory (a kernel's buffer argument), for
/// kernels that would rather have the emulator check their indices than take raw pointers:
/// a copyable handle, never a reference, since other threads of the launch read and
/// write the same memory.
///
/// ```ignore
/// // SAFETY: the launch's contract: `x` holds `n` values.
/// let x = unsafe { GlobalSlice::from_raw_parts(x.cast_mut(), n as usize) };
/// device_support::grid_stride(lane_x(), n, |i| total += unsafe { x.read(i) });
/// ```
pub struct GlobalSlice<T> {
    ptr: *mut T,
    len: usize,
}

impl<T> Clone for GlobalSlice<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for GlobalSlice<T> {}

impl<T: Copy> GlobalSlice<T> {
    /// The handle of `len` values at `ptr`.
    ///
    /// # Safety
    /// `ptr` points to `len` values of `T` of global memory, aligned for `T`, for as long
    /// as the kernel uses the handle (or, on the host, to any memory so described).
    #[inline(always)]
    pub const unsafe fn from_raw_parts(ptr: *mut T, len: usize) -> Self {
        GlobalSlice { ptr, len }
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

    /// The first value's address (for the atomics).
    #[inline(always)]
    pub const fn as_mut_ptr(self) -> *mut T {
        self.ptr
    }

    /// Value `i`. Under the emulator an index past the end is an
    /// [`EmulatorError::GlobalOutOfBounds`](crate::emulator::EmulatorError::GlobalOutOfBounds)
    /// (outside it, a panic); on a GPU it is unchecked.
    ///
    /// # Safety
    /// `i < len()`; no other thread of the launch writes value `i` while this reads it
    /// (a barrier, or the kernels' order, between).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn read(self, i: usize) -> T {
        #[cfg(not(target_arch = "nvptx64"))]
        imp::check_global(i, self.len);
        // SAFETY: forwarded from the caller.
        unsafe { self.ptr.add(i).read() }
    }

    /// Sets value `i` (checked under the emulator as [`read`](Self::read) is).
    ///
    /// # Safety
    /// `i < len()`; no other thread of the launch reads or writes value `i` meanwhile.
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn write(self, i: usize, value: T) {
        #[cfg(not(target_arch = "nvptx64"))]
        imp::check_global(i, self.len);
        // SAFETY: forwarded from the caller.
        unsafe { self.ptr.add(i).write(value) }
    }
}
