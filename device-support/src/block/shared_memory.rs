//! The block's shared memory: dynamic (sized at launch) and static (`static_shared!`),
//! through the [`SharedSlice`] handle.

use super::{SharedSlice, imp};

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
