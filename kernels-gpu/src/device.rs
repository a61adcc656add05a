//! The kernels themselves (nvptx64 only).
//!
//! Every kernel walks a grid-stride loop with 64-bit indices, so any `n` works, 0 and
//! buffers over 2^32 elements included, whatever the launch size.

// A hardware-only module (`--cfg bitexact_hardware_only`) uses none of the software kinds.
#![cfg_attr(bitexact_hardware_only, allow(dead_code, unused_macros))]

use core::arch::nvptx::{_block_dim_x, _block_idx_x, _grid_dim_x, _thread_idx_x, trap};
use core::ops::BitXor;
use core::sync::atomic::{AtomicU64, Ordering};
use shared::{Primitive, Stored, kind};

unsafe extern "C" {
    /// The multiprocessor's 64-bit cycle counter (`%clock64`).
    #[link_name = "llvm.nvvm.read.ptx.sreg.clock64"]
    safe fn clock64() -> i64;
}

/// A kernel must never spin or unwind: a panic (there should be none reachable) traps,
/// which the driver reports as a launch failure.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: `trap` aborts the kernel; it has no preconditions.
    unsafe { trap() }
}

/// This thread's global index and the grid's total thread count.
#[inline(always)]
fn thread_and_threads() -> (u64, u64) {
    // SAFETY: reading the special registers has no preconditions.
    let (thread, block, block_dim, grid_dim) =
        unsafe { (_thread_idx_x(), _block_idx_x(), _block_dim_x(), _grid_dim_x()) };
    (u64::from(block) * u64::from(block_dim) + u64::from(thread), u64::from(grid_dim) * u64::from(block_dim))
}

/// Calls `body(i)` for every `i < n` owned by this thread in a grid-stride loop.
#[inline(always)]
fn grid_stride(n: u64, mut body: impl FnMut(usize)) {
    let (mut i, stride) = thread_and_threads();
    while i < n {
        body(i as usize);
        match i.checked_add(stride) {
            Some(next) => i = next,
            None => break,
        }
    }
}

type In<P> = <P as Primitive>::In;
type Bits<P> = <<P as Primitive>::Out as Stored>::Bits;

/// `output[i] = P::apply(input[i])` for all `i < n`.
///
/// # Safety
/// `input` and `output` must be valid device pointers to `n` elements each.
#[inline(always)]
unsafe fn map<P: Primitive>(input: *const P::In, output: *mut Bits<P>, n: u64) {
    // SAFETY: the caller guarantees both buffers hold `n` elements and `i < n`.
    grid_stride(n, |i| unsafe { output.add(i).write(P::apply(input.add(i).read()).to_stored()) });
}

/// The load/index/store skeleton of [`map`] with no computation: the stored value is
/// the input's bits cast to the output width. The SASS report subtracts it.
///
/// # Safety
/// As for [`map`].
#[inline(always)]
unsafe fn skeleton<P>(input: *const P::In, output: *mut Bits<P>, n: u64)
where
    P: Primitive,
    Bits<P>: FromBits<P::In>,
{
    // SAFETY: as for `map`.
    grid_stride(n, |i| unsafe { output.add(i).write(Bits::<P>::from_bits(input.add(i).read())) });
}

/// The timing chains' mixing multiplier: odd (so `r * MIX` is a bijection of `u32`),
/// `2^32 / φ`, with every byte and half-word of it nonzero.
const MIX: u32 = 0x9E37_79B9;

/// One dependent step of a timing chain: `x ^ spread(apply(x))`, where `spread` takes the
/// result's stored bits `r` (zero-extended to 32 bits) to the input's width as the top
/// bits of `r * MIX` ([`FromMixed`]).
///
/// Why not simply `x ^ r`: LLVM sees through a chain whose feedback cannot reach the
/// bits the function reads. XOR-ing a 0/1 result into bit 0 never changes an exponent
/// field, so `is_finite` of the next step is loop-invariant and the loop folds away;
/// an f32 result truncated to a 16-bit code keeps only mantissa bits that may be known
/// zero (`unorm1_to_f32` gives 0.0 or 1.0). The top bits of a product by an odd
/// constant depend on every bit of `r`, and the input gets them in the bits its
/// function reads (exponents sit at the top), so no step is foldable unless the
/// function itself is constant.
///
/// Overhead per step, on top of the function (as `bitexact sass` shows it on sm_90):
/// the XOR, one `LOP3.LUT` per 32-bit word of the input (ptxas may merge it into a
/// three-input `LOP3.LUT` with the next step's mask); for a non-`bool` result also the
/// multiply (`IMAD`) and, for 8- and 16-bit inputs, the shift (`SHF` or `PRMT`). For a
/// `bool` result LLVM turns `select(p, 1, 0) * MIX >> k` into `select(p, MIX >> k, 0)`:
/// the constant goes into the `SEL` the function ends with anyway, so the overhead is
/// the XOR alone.
#[inline(always)]
fn chain_step<P>(x: P::In) -> P::In
where
    P: Primitive,
    P::In: FromMixed + BitXor<Output = P::In>,
    u32: FromBits<Bits<P>>,
{
    x ^ P::In::from_mixed(u32::from_bits(P::apply(x).to_stored()).wrapping_mul(MIX))
}

/// Latency: one thread runs `iterations` dependent steps and writes the cycles they took
/// to `out[0]` and the final value to `out[1]` (so the chain stays live). The start
/// value mixes in the thread's index (0 for the one thread the host launches) so the
/// chain lives in per-thread registers, as in [`map`], and not in the uniform
/// datapath that a value shared by the whole warp would get.
///
/// # Safety
/// `out` must be a valid device pointer to 2 `u64`s.
#[inline(always)]
unsafe fn latency<P>(seed: u64, iterations: u32, out: *mut u64)
where
    P: Primitive,
    P::In: FromMixed + FromBits<u64> + BitXor<Output = P::In>,
    u32: FromBits<Bits<P>>,
    u64: FromBits<P::In>,
{
    let (thread, _) = thread_and_threads();
    let mut x = P::In::from_bits(seed ^ thread);
    let start = clock64();
    for _ in 0..iterations {
        x = chain_step::<P>(x);
    }
    let cycles = clock64().wrapping_sub(start);
    // SAFETY: the caller guarantees `out` holds 2 elements.
    unsafe {
        out.write(cycles as u64);
        out.add(1).write(u64::from_bits(x));
    }
}

/// Throughput: every thread runs four independent chains of `iterations` steps and
/// writes their combined final value to `out[thread]` (so they stay live).
///
/// # Safety
/// `out` must be a valid device pointer to one `u64` per launched thread.
#[inline(always)]
unsafe fn throughput<P>(seed: u64, iterations: u32, out: *mut u64)
where
    P: Primitive,
    P::In: FromMixed + FromBits<u64> + BitXor<Output = P::In>,
    u32: FromBits<Bits<P>>,
    u64: FromBits<P::In>,
{
    let (thread, _) = thread_and_threads();
    let lane = |k: u64| P::In::from_bits(seed ^ thread.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ k);
    // Four scalars, not an array: LLVM packs a `[u16; 4]` into one 64-bit register and
    // the chains then pay for shifts and 64-bit compares that are not the function's.
    let (mut a, mut b, mut c, mut d) = (lane(0), lane(1), lane(2), lane(3));
    for _ in 0..iterations {
        (a, b, c, d) = (chain_step::<P>(a), chain_step::<P>(b), chain_step::<P>(c), chain_step::<P>(d));
    }
    let folded = [a, b, c, d].into_iter().fold(0u64, |acc, x| acc ^ u64::from_bits(x));
    // SAFETY: the caller guarantees one element per thread.
    unsafe { out.add(thread as usize).write(folded) };
}

/// Sixteen bytes: the unit of the wide kernels' loads and stores.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Chunk([u32; 4]);

/// Whether `p` is aligned for [`Chunk`] accesses.
#[inline(always)]
fn chunk_aligned<T>(p: *const T) -> bool {
    p.addr() % core::mem::align_of::<Chunk>() == 0
}

/// UNORM8 → f32 over a buffer, 16 input bytes (one load) and 64 output bytes (four
/// stores) per thread per step; a scalar grid-stride pass does the last `n % 16`
/// elements, or all of them if a pointer is not 16-byte aligned.
///
/// # Safety
/// `input` and `output` must be valid device pointers to `n` elements each.
#[inline(always)]
unsafe fn unorm8_wide<P: kind::Wide>(input: *const u8, output: *mut u32, n: u64) {
    let chunks = if chunk_aligned(input) && chunk_aligned(output) { n / 16 } else { 0 };
    let (input_chunks, output_chunks) = (input.cast::<Chunk>(), output.cast::<Chunk>());
    // SAFETY: chunk `c < n / 16` covers input bytes 16c..16c+16 and outputs 16c..16c+16,
    // all below `n`, and both pointers are 16-byte aligned.
    grid_stride(chunks, |c| unsafe {
        let words = input_chunks.add(c).read().0;
        for (w, word) in words.into_iter().enumerate() {
            let values = word.to_le_bytes().map(|byte| P::apply(byte).to_stored());
            output_chunks.add(4 * c + w).write(Chunk(values));
        }
    });
    let done = chunks * 16;
    // SAFETY: `done + i < n`.
    unsafe { map::<P>(input.add(done as usize), output.add(done as usize), n - done) };
}

/// Counts the non-finite binary16 values of a buffer and finds the first one's index:
/// adds the count to `result[0]` and lowers `result[1]` to the index (the host sets
/// them to 0 and `u64::MAX` first). Reads 16 bytes (8 halves) per thread per step; a
/// scalar pass does the last `n % 8` elements, or all if `input` is not 16-byte aligned.
///
/// # Safety
/// `input` must be a valid device pointer to `n` elements, `result` to 2 `u64`s.
#[inline(always)]
unsafe fn count_nonfinite<P: kind::CountNonfinite>(input: *const u16, n: u64, result: *mut u64) {
    let chunks = if chunk_aligned(input) { n / 8 } else { 0 };
    let input_chunks = input.cast::<Chunk>();
    let (mut count, mut first) = (0u64, u64::MAX);
    // SAFETY: chunk `c < n / 8` covers elements 8c..8c+8, below `n`; aligned.
    grid_stride(chunks, |c| unsafe {
        let words = input_chunks.add(c).read().0;
        let mut nonfinite = 0u32; // bit k: element 8c + k is not finite
        for (w, word) in words.into_iter().enumerate() {
            let (low, high) = (word as u16, (word >> 16) as u16);
            nonfinite |= (u32::from(!P::apply(low)) | u32::from(!P::apply(high)) << 1) << (2 * w);
        }
        count += u64::from(nonfinite.count_ones());
        if nonfinite != 0 {
            first = first.min(8 * c as u64 + u64::from(nonfinite.trailing_zeros()));
        }
    });
    let done = chunks * 8;
    // SAFETY: `i < n - done`, so `done + i < n`.
    grid_stride(n - done, |i| unsafe {
        if !P::apply(input.add(done as usize + i).read()) {
            count += 1;
            first = first.min(done + i as u64);
        }
    });
    if count != 0 {
        // SAFETY: the caller guarantees `result` holds 2 `u64`s in device memory; they
        // are only accessed atomically while kernels run.
        unsafe {
            AtomicU64::from_ptr(result).fetch_add(count, Ordering::Relaxed);
            AtomicU64::from_ptr(result.add(1)).fetch_min(first, Ordering::Relaxed);
        }
    }
}

/// `output[i]` = the GPU's own conversion instruction for `P`'s family
/// ([`shared::hardware::Instruction::of`]) applied to `input[i]`, for all `i < n`: the
/// [`map`] loop with the instruction in place of `P::apply`. A variant whose family has
/// no instruction cannot have this kernel: its instantiation does not compile.
///
/// # Safety
/// As for [`map`].
#[inline(always)]
unsafe fn hardware_map<P>(input: *const P::In, output: *mut Bits<P>, n: u64)
where
    P: kind::Hardware,
    u32: FromBits<P::In>,
    Bits<P>: FromBits<u32>,
{
    let instruction = const {
        match shared::hardware::Instruction::of(P::FAMILY) {
            Some(instruction) => instruction,
            None => panic!("a Hardware kernel for a family the GPU has no instruction for"),
        }
    };
    // SAFETY: as for `map`.
    grid_stride(n, |i| unsafe {
        let x = u32::from_bits(input.add(i).read());
        output.add(i).write(Bits::<P>::from_bits(crate::hardware::convert(instruction, x)));
    });
}

/// A free integer cast, for [`skeleton`] and the timing chains.
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

/// An input of a timing chain made from a mixed 32-bit word `h` (see [`chain_step`]):
/// the top bits of `h` for narrower inputs, `h` in both halves for `u64`, so the high
/// half (binary64's exponent) gets them too.
trait FromMixed {
    fn from_mixed(h: u32) -> Self;
}

impl FromMixed for u8 {
    #[inline(always)]
    fn from_mixed(h: u32) -> u8 {
        (h >> 24) as u8
    }
}

impl FromMixed for u16 {
    #[inline(always)]
    fn from_mixed(h: u32) -> u16 {
        (h >> 16) as u16
    }
}

impl FromMixed for u32 {
    #[inline(always)]
    fn from_mixed(h: u32) -> u32 {
        h
    }
}

impl FromMixed for u64 {
    #[inline(always)]
    fn from_mixed(h: u32) -> u64 {
        u64::from(h) << 32 | u64::from(h)
    }
}

/// Defines variant `$variant`'s `extern "ptx-kernel"` entry point of kind `$kind`
/// (a [`shared::KernelKind`] variant name), named `$variant` followed by the kind's
/// suffix, with the kind's signature, forwarding its arguments to the kind's function
/// for the variant's marker type. The kind's trait bound on that function
/// (`kind::Wide`, ...) holds only if the table gives the variant that kind.
macro_rules! entry {
    ($variant:ident, Map) => {
        entry!(@ $variant, Map, map, (input: *const In<V>, output: *mut Bits<V>, n: u64));
    };
    ($variant:ident, Skeleton) => {
        entry!(@ $variant, Skeleton, skeleton, (input: *const In<V>, output: *mut Bits<V>, n: u64));
    };
    ($variant:ident, Latency) => {
        entry!(@ $variant, Latency, latency, (seed: u64, iterations: u32, out: *mut u64));
    };
    ($variant:ident, Throughput) => {
        entry!(@ $variant, Throughput, throughput, (seed: u64, iterations: u32, out: *mut u64));
    };
    ($variant:ident, Wide) => {
        entry!(@ $variant, Wide, unorm8_wide, (input: *const u8, output: *mut u32, n: u64));
    };
    ($variant:ident, CountNonfinite) => {
        entry!(@ $variant, CountNonfinite, count_nonfinite, (input: *const u16, n: u64, result: *mut u64));
    };
    // Not from the table's callback: each module builds the hardware kernels of its own
    // target, which `hardware_kernels!` lists (see the end of this file).
    ($variant:ident, Hardware) => {};
    (@hardware $variant:ident) => {
        entry!(@ $variant, Hardware, hardware_map, (input: *const In<V>, output: *mut Bits<V>, n: u64));
    };
    (@ $variant:ident, $kind:ident, $body:ident, ($($arg:ident: $ty:ty),*)) => {
        const _: () = {
            type V = shared::variants::$variant;
            /// # Safety
            /// As documented on the function this entry point forwards to.
            #[unsafe(export_name = concat!(stringify!($variant), shared::kernel_suffix!($kind)))]
            pub unsafe extern "ptx-kernel" fn entry($($arg: $ty),*) {
                // SAFETY: forwarded from this kernel's contract.
                unsafe { $body::<V>($($arg),*) }
            }
        };
    };
}

/// Callback for `shared::for_each_variant!`: every kernel of every variant, one per
/// kind its table entry has.
macro_rules! emit_kernels {
    ($({ $name:ident, $family:expr, $in:ty => $out:ty, $f:path, $claim:ident, [$($kind:ident),*], $desc:literal })*) => {$($(
        entry!($name, $kind);
    )*)*};
}
// The hardware-only modules (newer targets) hold no software kernels.
#[cfg(not(bitexact_hardware_only))]
shared::for_each_variant!(emit_kernels);

/// The `Hardware` kernels of the listed variants.
macro_rules! hardware_kernels {
    ($($variant:ident),* $(,)?) => {$(
        entry!(@hardware $variant);
    )*};
}

// `host/build.rs` writes, for the module it builds, `hardware_kernels!(...)` with the
// variants whose entry lists `Hardware` and whose instruction's target
// (`shared::hardware::Instruction::target`) is this module's.
include!(env!("BITEXACT_HARDWARE_KERNELS"));
