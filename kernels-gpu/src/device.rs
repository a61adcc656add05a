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
    // SAFETY: forwarded from the caller.
    unsafe { map_with(input, output, n, |x| P::apply(x).to_stored()) }
}

/// `output[i] = f(input[i])` for all `i < n`, one element per lane per grid-stride step.
///
/// # Safety
/// `input` and `output` must be valid device pointers to `n` elements each.
#[inline(always)]
unsafe fn map_with<I, O>(input: *const I, output: *mut O, n: u64, f: impl Fn(I) -> O) {
    // SAFETY: the caller guarantees both buffers hold `n` elements and `i < n`.
    grid_stride(n, |i| unsafe { output.add(i).write(f(input.add(i).read())) });
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

/// Sixteen aligned bytes: one lane's 32-bit access in a [`stream`] kernel, one lane's
/// load in a [`count_nonfinite`] kernel (`ld.global.v4.u32` / `st.global.v4.u32`).
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Chunk([u32; 4]);

/// Whether `p` is aligned for `T` accesses.
#[inline(always)]
fn aligned_for<T, U>(p: *const U) -> bool {
    p.addr() % core::mem::align_of::<T>() == 0
}

/// A [`kind::StreamElement`] as the stream kernels access it: four consecutive
/// elements in one aligned access of `Quad` (4 bytes of `u8`, 8 of `u16`, 16 of `u32`).
trait StreamQuad: kind::StreamElement {
    /// Four elements' worth of bytes, aligned to its size.
    type Quad: Copy;
    /// The four elements of `quad`, lowest address first.
    fn split(quad: Self::Quad) -> [Self; 4];
    /// The quad holding `elements`, lowest address first.
    fn join(elements: [Self; 4]) -> Self::Quad;
}

impl StreamQuad for u8 {
    type Quad = u32;
    #[inline(always)]
    fn split(quad: u32) -> [u8; 4] {
        quad.to_le_bytes()
    }
    #[inline(always)]
    fn join(elements: [u8; 4]) -> u32 {
        u32::from_le_bytes(elements)
    }
}

impl StreamQuad for u16 {
    type Quad = u64;
    #[inline(always)]
    fn split(quad: u64) -> [u16; 4] {
        [quad as u16, (quad >> 16) as u16, (quad >> 32) as u16, (quad >> 48) as u16]
    }
    #[inline(always)]
    fn join([a, b, c, d]: [u16; 4]) -> u64 {
        u64::from(a) | u64::from(b) << 16 | u64::from(c) << 32 | u64::from(d) << 48
    }
}

impl StreamQuad for u32 {
    type Quad = Chunk;
    #[inline(always)]
    fn split(quad: Chunk) -> [u32; 4] {
        quad.0
    }
    #[inline(always)]
    fn join(elements: [u32; 4]) -> Chunk {
        Chunk(elements)
    }
}

/// [`map`] over a buffer, coalesced ([`shared::KernelKind::Stream`]): [`stream_with`]
/// `P`'s function.
///
/// # Safety
/// `input` and `output` must be valid device pointers to `n` elements each.
#[inline(always)]
unsafe fn stream<P>(input: *const P::In, output: *mut Bits<P>, n: u64)
where
    P: kind::Stream,
    P::In: StreamQuad,
    Bits<P>: StreamQuad,
{
    // SAFETY: forwarded from the caller.
    unsafe { stream_with(input, output, n, |x| P::apply(x).to_stored()) }
}

/// `output[i] = f(input[i])` for all `i < n`, coalesced: grid-stride step `v` of a lane
/// loads inputs `4v..4v+4` in one access of four inputs and stores their results in one
/// access of four results (a 4-, 8- or 16-byte [`StreamQuad::Quad`] each), so
/// consecutive lanes touch consecutive pieces of both buffers. The results are packed
/// into the quad by integer operations, so the vector loop has no narrow store. A
/// scalar pass ([`map_with`]) does the last `n % 4` elements, or all of them if either
/// pointer is not aligned for its quad.
///
/// # Safety
/// `input` and `output` must be valid device pointers to `n` elements each.
#[inline(always)]
unsafe fn stream_with<I: StreamQuad, O: StreamQuad>(input: *const I, output: *mut O, n: u64, f: impl Fn(I) -> O) {
    let lane = kind::STREAM_LANE_ELEMENTS;
    let vectors = if aligned_for::<I::Quad, _>(input) && aligned_for::<O::Quad, _>(output) { n / lane } else { 0 };
    let (quads_in, quads_out) = (input.cast::<I::Quad>(), output.cast::<O::Quad>());
    // SAFETY: step `v < n / 4` covers elements 4v..4v+4 of both buffers, all below `n`;
    // both pointers are aligned for these accesses (checked above).
    grid_stride(vectors, |v| unsafe {
        let values = I::split(quads_in.add(v).read()).map(&f);
        quads_out.add(v).write(O::join(values));
    });
    let done = (vectors * lane) as usize;
    // SAFETY: `done <= n`, and `map_with` touches elements `done + i` for `i < n - done`.
    unsafe { map_with(input.add(done), output.add(done), n - done as u64, f) };
}

/// A [`kind::CountElement`] as the count kernels read it: the elements of a 16-byte
/// [`Chunk`], lowest address first.
trait ChunkLoad: kind::CountElement {
    /// Calls `f(k, element k)` for each element of `chunk`.
    fn each(chunk: Chunk, f: impl FnMut(u32, Self));
}

// Index loops over constant ranges, not iterator adapters over arrays: LLVM unrolls
// these fully, where a `zip` of an array's `into_iter` was left as a loop over a copy of
// the chunk in local memory.
impl ChunkLoad for u8 {
    #[inline(always)]
    fn each(chunk: Chunk, mut f: impl FnMut(u32, u8)) {
        for k in 0..16 {
            f(k, (chunk.0[k as usize / 4] >> (8 * (k % 4))) as u8);
        }
    }
}

impl ChunkLoad for u16 {
    #[inline(always)]
    fn each(chunk: Chunk, mut f: impl FnMut(u32, u16)) {
        for k in 0..8 {
            f(k, (chunk.0[k as usize / 2] >> (16 * (k % 2))) as u16);
        }
    }
}

impl ChunkLoad for u32 {
    #[inline(always)]
    fn each(chunk: Chunk, mut f: impl FnMut(u32, u32)) {
        for k in 0..4 {
            f(k, chunk.0[k as usize]);
        }
    }
}

impl ChunkLoad for u64 {
    #[inline(always)]
    fn each(chunk: Chunk, mut f: impl FnMut(u32, u64)) {
        for k in 0..2 {
            let (low, high) = (chunk.0[2 * k as usize], chunk.0[2 * k as usize + 1]);
            f(k, u64::from(high) << 32 | u64::from(low));
        }
    }
}

/// Counts the non-finite values of a buffer and finds the first one's index
/// ([`shared::KernelKind::CountNonfinite`]): adds the count to `result[0]` and lowers
/// `result[1]` to the index (the host sets them to 0 and `u64::MAX` first).
///
/// The elements from the first 16-byte boundary on are read one aligned 16-byte
/// [`Chunk`] per lane per grid-stride step, consecutive lanes on consecutive chunks;
/// a chunk is tested with one branch-free OR of `!is_finite` over its elements, and
/// only a chunk holding a non-finite value is counted and searched. The fewer than
/// `16 / size` elements before that boundary and after the last whole chunk are done
/// one per lane in a second grid-stride pass.
///
/// # Safety
/// `input` must be a valid device pointer to `n` elements, aligned for its type, and
/// `result` to 2 `u64`s.
#[inline(always)]
unsafe fn count_nonfinite<P>(input: *const P::In, n: u64, result: *mut u64)
where
    P: kind::CountNonfinite,
    P::In: ChunkLoad,
{
    let size = size_of::<P::In>();
    let per_chunk = kind::count_lane_elements::<P::In>();
    // Elements before the first 16-byte boundary (0 if aligned); `input` is aligned for
    // its type, so the boundary falls on an element.
    let head = ((input.addr().wrapping_neg() % align_of::<Chunk>()) / size) as u64;
    let head = head.min(n);
    let chunks = (n - head) / per_chunk;
    let tail_start = head + chunks * per_chunk;
    let (mut count, mut first) = (0u64, u64::MAX);
    // SAFETY: `head` elements from `input` end on a 16-byte boundary (or `head == n`
    // and there are no chunks); chunk `c < chunks` covers elements
    // `head + per_chunk * c ..+ per_chunk`, all below `n`.
    let chunk_base = unsafe { input.add(head as usize) }.cast::<Chunk>();
    grid_stride(chunks, |c| {
        // SAFETY: see above.
        let chunk = unsafe { chunk_base.add(c).read() };
        let mut any = false;
        P::In::each(chunk, |_, x| any |= !P::apply(x));
        if any {
            let mut nonfinite = 0u32; // bit k: element k of the chunk is not finite
            P::In::each(chunk, |k, x| nonfinite |= u32::from(!P::apply(x)) << k);
            count += u64::from(nonfinite.count_ones());
            first = first.min(head + per_chunk * c as u64 + u64::from(nonfinite.trailing_zeros()));
        }
    });
    // The head and the tail, one element per lane: `i < head` is element `i`, the rest
    // element `tail_start + (i - head)`.
    let scalar = head + (n - tail_start);
    grid_stride(scalar, |i| {
        let index = if (i as u64) < head { i as u64 } else { tail_start + (i as u64 - head) };
        // SAFETY: `index < head <= n` or `tail_start <= index < n`.
        if !P::apply(unsafe { input.add(index as usize).read() }) {
            count += 1;
            first = first.min(index);
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

/// `P`'s input → its stored result by the GPU's own conversion instruction for `P`'s
/// family ([`shared::hardware::Conversion::of`]). A variant whose family has no
/// instruction cannot use this: its instantiation does not compile.
#[inline(always)]
fn by_instruction<P>(x: P::In) -> Bits<P>
where
    P: kind::Hardware,
    u32: FromBits<P::In>,
    Bits<P>: FromBits<u32>,
{
    let instruction = const {
        match shared::hardware::Conversion::of(P::FAMILY) {
            Some(instruction) => instruction,
            None => panic!("a Hardware kernel for a family the GPU has no instruction for"),
        }
    };
    Bits::<P>::from_bits(crate::hardware::convert(instruction, u32::from_bits(x)))
}

/// `output[i]` = the GPU's own conversion instruction for `P`'s family applied to
/// `input[i]`, for all `i < n`: the [`map`] loop with [`by_instruction`] in place of
/// `P::apply`.
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
    // SAFETY: forwarded from the caller.
    unsafe { map_with(input, output, n, by_instruction::<P>) }
}

/// The [`stream`] loop with [`by_instruction`] in place of `P::apply`
/// ([`shared::KernelKind::HardwareStream`]).
///
/// # Safety
/// As for [`stream`].
#[inline(always)]
unsafe fn hardware_stream<P>(input: *const P::In, output: *mut Bits<P>, n: u64)
where
    P: kind::HardwareStream,
    P::In: StreamQuad,
    Bits<P>: StreamQuad,
    u32: FromBits<P::In>,
    Bits<P>: FromBits<u32>,
{
    // SAFETY: forwarded from the caller.
    unsafe { stream_with(input, output, n, by_instruction::<P>) }
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
/// (`kind::Stream`, ...) holds only if the table gives the variant that kind.
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
    ($variant:ident, Stream) => {
        entry!(@ $variant, Stream, stream, (input: *const In<V>, output: *mut Bits<V>, n: u64));
    };
    ($variant:ident, CountNonfinite) => {
        entry!(@ $variant, CountNonfinite, count_nonfinite, (input: *const In<V>, n: u64, result: *mut u64));
    };
    // Not from the table's callback: each module builds the hardware kernels of its own
    // target, which `hardware_kernels!` lists (see the end of this file).
    ($variant:ident, Hardware) => {};
    ($variant:ident, HardwareStream) => {};
    (@hardware $variant:ident, Hardware) => {
        entry!(@ $variant, Hardware, hardware_map, (input: *const In<V>, output: *mut Bits<V>, n: u64));
    };
    (@hardware $variant:ident, HardwareStream) => {
        entry!(@ $variant, HardwareStream, hardware_stream, (input: *const In<V>, output: *mut Bits<V>, n: u64));
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

/// The listed hardware kernels: `variant: Kind` for each, `Kind` `Hardware` or
/// `HardwareStream`.
macro_rules! hardware_kernels {
    ($($variant:ident: $kind:ident),* $(,)?) => {$(
        entry!(@hardware $variant, $kind);
    )*};
}

// `host/build.rs` writes, for the module it builds, `hardware_kernels!(...)` with the
// `Hardware` and `HardwareStream` kernels of the variants whose entry lists them and
// whose instruction's target (`shared::hardware::Conversion::target`) is this module's.
include!(env!("BITEXACT_HARDWARE_KERNELS"));
