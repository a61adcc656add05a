//! The emulated block's shared memory: the dynamic buffer and the static arrays, each
//! filled with a fixed pattern when a block starts (a GPU leaves shared memory
//! uninitialised; a kernel that reads before it writes sees the same wrong values on
//! every run here, never a lucky zero).

use super::error::EmulatorError;
use super::limits;
use super::sanitizer::ByteShadow;
use core::alloc::Layout;
use core::ptr::NonNull;
use std::vec::Vec;

/// The fill of fresh shared memory, per aligned 32-bit word: a quiet f32 NaN, and as a
/// `u32` none of 0, `u32::MAX` (the identities of sum, max and min).
pub const FILL_WORD: u32 = 0x7FA5_A5A5;

/// One owned buffer of shared memory, aligned to at least 16 bytes.
pub(super) struct SharedBuffer {
    ptr: NonNull<u8>,
    layout: Layout,
    len: usize,
    /// Per byte, the accesses the sanitizer checks the next one against.
    shadow: Vec<ByteShadow>,
}

// SAFETY: the buffer owns its allocation as a `Box<[u8]>` would; the emulator touches it
// only from the one emulated thread that holds the baton.
unsafe impl Send for SharedBuffer {}

impl SharedBuffer {
    /// `len` bytes aligned to `align.max(16)`, filled with [`FILL_WORD`].
    ///
    /// # Panics
    /// If `align` is not a power of two (a `Layout`'s is) or the size overflows.
    fn new(len: usize, align: usize) -> SharedBuffer {
        let layout = Layout::from_size_align(len.max(1), align.max(16)).expect("a shared buffer's layout");
        // SAFETY: `layout` has a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        let ptr = NonNull::new(ptr).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        let mut buffer = SharedBuffer { ptr, layout, len, shadow: std::vec![ByteShadow::default(); len] };
        buffer.fill();
        buffer
    }

    /// Writes [`FILL_WORD`] over the whole buffer (little-endian, by byte offset mod 4:
    /// the buffer is aligned to 16), and forgets every access.
    fn fill(&mut self) {
        self.shadow.iter_mut().for_each(|byte| *byte = ByteShadow::default());
        let bytes = FILL_WORD.to_le_bytes();
        for i in 0..self.layout.size() {
            // SAFETY: `i` is inside the allocation, which this buffer owns.
            unsafe { self.ptr.as_ptr().add(i).write(bytes[i % 4]) };
        }
    }

    /// The first byte's address.
    fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for SharedBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// One block's shared memory (blocks run one after another, so one set serves them all).
pub(super) struct Memory {
    dynamic: SharedBuffer,
    /// The static arrays asked for so far, by their unique names.
    statics: Vec<(&'static str, SharedBuffer)>,
}

impl Memory {
    /// `dynamic_bytes` of dynamic shared memory, no static arrays yet.
    pub(super) fn new(dynamic_bytes: usize) -> Memory {
        Memory { dynamic: SharedBuffer::new(dynamic_bytes, 16), statics: Vec::new() }
    }

    /// The dynamic buffer's address and size.
    pub(super) fn dynamic(&self) -> (*mut u8, usize) {
        (self.dynamic.as_mut_ptr(), self.dynamic.len)
    }

    /// The static array `name` of `layout`, allocated on its first use; refused where
    /// the static arrays together would pass [`limits::STATIC_SHARED_BYTES`] or, with the
    /// dynamic buffer, [`limits::SHARED_BYTES`].
    ///
    /// # Panics
    /// If `name` was asked for before with another layout (two arrays of one name).
    pub(super) fn static_array(
        &mut self,
        kernel: &'static str,
        name: &'static str,
        layout: Layout,
    ) -> Result<*mut u8, EmulatorError> {
        if let Some((_, buffer)) = self.statics.iter().find(|(n, _)| *n == name) {
            assert!(
                buffer.len == layout.size() && buffer.layout.align() >= layout.align(),
                "static shared array {name} asked for with two layouts"
            );
            return Ok(buffer.as_mut_ptr());
        }
        let bytes = self.statics.iter().map(|(_, b)| b.len).sum::<usize>() + layout.size();
        let dynamic = self.dynamic.len;
        if bytes > limits::STATIC_SHARED_BYTES || bytes + dynamic > limits::SHARED_BYTES {
            let limit = limits::STATIC_SHARED_BYTES.min(limits::SHARED_BYTES - dynamic);
            return Err(EmulatorError::StaticShared { kernel, name, bytes, dynamic, limit });
        }
        self.statics.push((name, SharedBuffer::new(layout.size(), layout.align())));
        Ok(self.statics[self.statics.len() - 1].1.as_mut_ptr())
    }

    /// The buffer that holds the byte at `address`, or else the one that ends there (a
    /// slice made from its end, or from an empty buffer, is still its memory, every
    /// element of it past the end): its name in errors, its first byte's address, and the
    /// shadow of its bytes. None: not the block's shared memory.
    pub(super) fn holding(&mut self, address: usize) -> Option<(&'static str, usize, &mut [ByteShadow])> {
        let inside: &dyn Fn(usize, usize) -> bool = &|start, len| (start..start + len).contains(&address);
        let at_end: &dyn Fn(usize, usize) -> bool = &|start, len| start + len == address;
        let found = [inside, at_end].into_iter().find_map(|test| {
            let dynamic = core::iter::once(("dynamic shared memory", &self.dynamic));
            let statics = self.statics.iter().map(|(name, buffer)| (*name, buffer));
            let mut buffers = dynamic.chain(statics).enumerate();
            buffers.find_map(|(i, (_, b))| test(b.as_mut_ptr() as usize, b.len).then_some(i))
        })?;
        let (name, buffer) = match found {
            0 => ("dynamic shared memory", &mut self.dynamic),
            i => {
                let (name, buffer) = &mut self.statics[i - 1];
                (*name, buffer)
            }
        };
        Some((name, buffer.as_mut_ptr() as usize, &mut buffer.shadow[..]))
    }

    /// Fills every buffer with [`FILL_WORD`] again, for the next block.
    pub(super) fn refill(&mut self) {
        self.dynamic.fill();
        self.statics.iter_mut().for_each(|(_, b)| b.fill());
    }
}
