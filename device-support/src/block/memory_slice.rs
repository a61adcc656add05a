//! The one handle of a run of values in GPU memory, [`MemorySlice`], in the shared memory
//! of a block ([`SharedSlice`]) or in global memory ([`GlobalSlice`]): a plain pointer on
//! the GPU (its length is never read there: `nvptx_block.rs` checks that a copy kernel
//! through a `GlobalSlice` has its raw twin's PTX opcodes and sm_90 SASS), and checked
//! on the host by the CPU emulator: every index against the length, and in shared
//! memory every access by the sanitizer (races, unwritten reads), each breach an
//! [`EmulatorError`](crate::emulator::EmulatorError) naming the call site.

#[cfg(not(target_arch = "nvptx64"))]
use super::imp;
use core::marker::PhantomData;

/// The memory spaces a [`MemorySlice`] can be in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemorySpace {
    /// The block's shared memory.
    Shared,
    /// Global memory (a kernel's buffers).
    Global,
}

/// A marker type naming a [`MemorySpace`] ([`Shared`], [`Global`]).
pub trait Space: sealed::Sealed {
    /// The space.
    const SPACE: MemorySpace;
}

/// [`MemorySpace::Shared`] as a type.
#[derive(Clone, Copy, Debug)]
pub enum Shared {}
/// [`MemorySpace::Global`] as a type.
#[derive(Clone, Copy, Debug)]
pub enum Global {}

impl Space for Shared {
    const SPACE: MemorySpace = MemorySpace::Shared;
}
impl Space for Global {
    const SPACE: MemorySpace = MemorySpace::Global;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Shared {}
    impl Sealed for super::Global {}
}

/// A run of `len` values of `T` in the block's shared memory: see [`MemorySlice`].
pub type SharedSlice<T> = MemorySlice<T, Shared>;

/// A run of `len` values of `T` in global memory (a kernel's buffer argument), for kernels
/// that would rather have the emulator check their indices than take raw pointers: see
/// [`MemorySlice`].
///
/// ```ignore
/// // SAFETY: the launch's contract: `x` holds `n` values.
/// let x = unsafe { GlobalSlice::from_raw_parts(x.cast_mut(), n as usize) };
/// device_support::grid_stride(lane_x(), n, |i| total += unsafe { x.read(i) });
/// ```
pub type GlobalSlice<T> = MemorySlice<T, Global>;

/// A run of `len` values of `T` in memory space `S`: a copyable handle, never a
/// reference, because other threads read and write the same memory. Access goes through
/// [`read`](Self::read) and [`write`](Self::write), whose contract is the race-freedom
/// the GPU needs as well: while one thread writes an element no other thread reads or
/// writes it (in shared memory: between two block barriers an element is either written
/// by one thread and read by none other, or only read).
pub struct MemorySlice<T, S: Space> {
    ptr: *mut T,
    len: usize,
    space: PhantomData<fn() -> S>,
}

impl<T, S: Space> Clone for MemorySlice<T, S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, S: Space> Copy for MemorySlice<T, S> {}

impl<T: Copy, S: Space> MemorySlice<T, S> {
    /// The handle of `len` values at `ptr`.
    ///
    /// # Safety
    /// `ptr` must point to `len` values of `T` in memory space `S` (on the host, the
    /// emulator's shared memory, or any memory so described), aligned for `T`, for as long
    /// as the kernel uses the handle (shared memory: as long as the block runs).
    #[inline(always)]
    pub const unsafe fn from_raw_parts(ptr: *mut T, len: usize) -> Self {
        MemorySlice { ptr, len, space: PhantomData }
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
    /// Under the emulator the contract is checked and a breach reported as an
    /// [`EmulatorError`](crate::emulator::EmulatorError): the index in both spaces, and in
    /// shared memory also races (naming both call sites) and reads of unwritten values.
    /// On a GPU it is unchecked.
    ///
    /// # Safety
    /// `i < len()`; value `i` holds a written value (in shared memory: written since the
    /// block started); no other thread writes it while this reads it (in shared memory:
    /// between the block barriers around this read).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn read(self, i: usize) -> T {
        #[cfg(not(target_arch = "nvptx64"))]
        imp::check_access(S::SPACE, self.ptr.cast_const().cast(), i, self.len, core::mem::size_of::<T>(), false);
        // SAFETY: forwarded from the caller.
        unsafe { self.ptr.add(i).read() }
    }

    /// Sets value `i` (checked under the emulator as [`read`](Self::read) is).
    ///
    /// # Safety
    /// `i < len()`; no other thread reads or writes value `i` meanwhile (in shared
    /// memory: between the block barriers around this write).
    #[inline(always)]
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    pub unsafe fn write(self, i: usize, value: T) {
        #[cfg(not(target_arch = "nvptx64"))]
        imp::check_access(S::SPACE, self.ptr.cast_const().cast(), i, self.len, core::mem::size_of::<T>(), true);
        // SAFETY: forwarded from the caller.
        unsafe { self.ptr.add(i).write(value) }
    }
}
