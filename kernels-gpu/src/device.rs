//! The kernels themselves (nvptx64 only).
//!
//! Every per-element kernel has the signature
//! `(input: *const In, output: *mut Out::Bits, n: u64)` and walks a grid-stride loop with
//! 64-bit indices, so any `n` works, 0 and buffers over 2^32 elements included.

use core::arch::nvptx::{_block_dim_x, _block_idx_x, _grid_dim_x, _thread_idx_x, trap};
use shared::{Primitive, Stored};

/// A kernel must never spin or unwind: a panic (there should be none reachable) traps,
/// which the driver reports as a launch failure.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: `trap` aborts the kernel; it has no preconditions.
    unsafe { trap() }
}

/// Calls `body(i)` for every `i < n` owned by this thread in a grid-stride loop.
#[inline(always)]
fn grid_stride(n: u64, mut body: impl FnMut(usize)) {
    // SAFETY: reading the special registers has no preconditions.
    let (thread, block, block_dim, grid_dim) =
        unsafe { (_thread_idx_x(), _block_idx_x(), _block_dim_x(), _grid_dim_x()) };
    let stride = u64::from(grid_dim) * u64::from(block_dim);
    let mut i = u64::from(block) * u64::from(block_dim) + u64::from(thread);
    while i < n {
        body(i as usize);
        match i.checked_add(stride) {
            Some(next) => i = next,
            None => break,
        }
    }
}

/// `output[i] = P::apply(input[i])` for all `i < n`.
///
/// # Safety
/// `input` and `output` must be valid device pointers to `n` elements each.
#[inline(always)]
unsafe fn map<P: Primitive>(input: *const P::In, output: *mut <P::Out as Stored>::Bits, n: u64) {
    // SAFETY: the caller guarantees both buffers hold `n` elements and `i < n`.
    grid_stride(n, |i| unsafe { output.add(i).write(P::apply(input.add(i).read()).to_stored()) });
}

/// The load/index/store skeleton of [`map`] with no computation: the stored value is
/// the input's bits cast to the output width. The SASS report subtracts it.
///
/// # Safety
/// As for [`map`].
#[inline(always)]
unsafe fn skeleton<I: Copy, O: FromBits<I>>(input: *const I, output: *mut O, n: u64) {
    // SAFETY: as for `map`.
    grid_stride(n, |i| unsafe { output.add(i).write(O::from_bits(input.add(i).read())) });
}

/// A free integer cast, for [`skeleton`].
trait FromBits<I> {
    fn from_bits(x: I) -> Self;
}

macro_rules! from_bits_by_cast {
    ($($to:ty: $($from:ty)*;)*) => {$($(
        impl FromBits<$from> for $to {
            #[inline(always)]
            fn from_bits(x: $from) -> $to {
                x as $to
            }
        }
    )*)*};
}
from_bits_by_cast! {
    u8: u8 u16 u32 u64;
    u16: u8 u16 u32 u64;
    u32: u8 u16 u32 u64;
    u64: u8 u16 u32 u64;
}

/// Callback for `shared::for_each_variant!`: one kernel per variant, named like it, and
/// its skeleton, named `<variant>_skeleton`.
macro_rules! emit_kernels {
    ($({ $name:ident, $family:expr, $in:ty => $out:ty, $f:path, $claim:ident, $desc:literal })*) => {$(
        #[doc = $desc]
        ///
        /// # Safety
        /// `input` and `output` must be valid device pointers to `n` elements each.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(
            input: *const $in,
            output: *mut <$out as Stored>::Bits,
            n: u64,
        ) {
            // SAFETY: forwarded from this kernel's contract.
            unsafe { map::<shared::variants::$name>(input, output, n) }
        }

        const _: () = {
            /// Skeleton of the kernel above, for the SASS report.
            ///
            /// # Safety
            /// As for the kernel above.
            #[unsafe(export_name = concat!(stringify!($name), "_skeleton"))]
            pub unsafe extern "ptx-kernel" fn skeleton_kernel(
                input: *const $in,
                output: *mut <$out as Stored>::Bits,
                n: u64,
            ) {
                // SAFETY: forwarded from this kernel's contract.
                unsafe { skeleton(input, output, n) }
            }
        };
    )*};
}
shared::for_each_variant!(emit_kernels);
