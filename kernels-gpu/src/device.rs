//! The kernels themselves (nvptx64 only).
//!
//! Every kernel walks a grid-stride loop with 64-bit indices, so any `n` works, 0 and
//! buffers over 2^32 elements included, whatever the launch size.

// A hardware-only module (`--cfg bitexact_hardware_only`) uses none of the software kinds.
#![cfg_attr(bitexact_hardware_only, allow(dead_code, unused_macros, unused_imports))]

use core::ops::BitXor;
use device_support::{Bits, Lane, StreamQuad, count_nonfinite, map, map_with, stream, stream_with, this_lane};
use shared::{Primitive, Stored, kind};

type In<P> = <P as Primitive>::In;

unsafe extern "C" {
    /// The multiprocessor's 64-bit cycle counter (`%clock64`).
    #[link_name = "llvm.nvvm.read.ptx.sreg.clock64"]
    safe fn clock64() -> i64;
}

/// The load/index/store skeleton of [`map`] with no computation: the stored value is
/// the input's bits cast to the output width. The SASS report subtracts it.
///
/// # Safety
/// As for [`map`].
#[inline(always)]
unsafe fn skeleton<P>(lane: Lane, input: *const P::In, output: *mut Bits<P>, n: u64)
where
    P: Primitive,
    Bits<P>: FromBits<P::In>,
{
    // SAFETY: forwarded from the caller.
    unsafe { map_with(lane, input, output, n, Bits::<P>::from_bits) }
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
unsafe fn latency<P>(lane: Lane, seed: u64, iterations: u32, out: *mut u64)
where
    P: Primitive,
    P::In: FromMixed + FromBits<u64> + BitXor<Output = P::In>,
    u32: FromBits<Bits<P>>,
    u64: FromBits<P::In>,
{
    let thread = lane.index;
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
unsafe fn throughput<P>(lane: Lane, seed: u64, iterations: u32, out: *mut u64)
where
    P: Primitive,
    P::In: FromMixed + FromBits<u64> + BitXor<Output = P::In>,
    u32: FromBits<Bits<P>>,
    u64: FromBits<P::In>,
{
    let thread = lane.index;
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
unsafe fn hardware_map<P>(lane: Lane, input: *const P::In, output: *mut Bits<P>, n: u64)
where
    P: kind::Hardware,
    u32: FromBits<P::In>,
    Bits<P>: FromBits<u32>,
{
    // SAFETY: forwarded from the caller.
    unsafe { map_with(lane, input, output, n, by_instruction::<P>) }
}

/// The [`stream`] loop with [`by_instruction`] in place of `P::apply`
/// ([`shared::KernelKind::HardwareStream`]).
///
/// # Safety
/// As for [`stream`].
#[inline(always)]
unsafe fn hardware_stream<P>(lane: Lane, input: *const P::In, output: *mut Bits<P>, n: u64)
where
    P: kind::HardwareStream,
    P::In: StreamQuad,
    Bits<P>: StreamQuad,
    u32: FromBits<P::In>,
    Bits<P>: FromBits<u32>,
{
    // SAFETY: forwarded from the caller.
    unsafe { stream_with(lane, input, output, n, by_instruction::<P>) }
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
/// (`kind::Stream`, ...) holds only if the table gives the variant that kind. The
/// parameter lists below are checked at compile time against the kinds' declarations
/// (`shared::kind::KindKernel`, the one place each kind's signature is defined, which the
/// host's launches use): a list that differs from its kind's, in any type, or a name that
/// differs from the declaration's, does not compile.
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
            // The entry point's parameters and name, checked at compile time against the
            // kind's declaration that the host launches it by (`shared::kind::KindKernel`).
            shared::__check_kind_entry!(
                shared::kind::KindKernel<V, shared::kind::tag::$kind>,
                concat!(stringify!($variant), shared::kernel_suffix!($kind)),
                ($($ty),*)
            );
            /// # Safety
            /// As documented on the function this entry point forwards to.
            #[unsafe(export_name = concat!(stringify!($variant), shared::kernel_suffix!($kind)))]
            pub unsafe extern "ptx-kernel" fn entry($($arg: $ty),*) {
                // SAFETY: forwarded from this kernel's contract.
                unsafe { $body::<V>(this_lane(), $($arg),*) }
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

// `host/wings/gpu/build.rs` writes, for the module it builds, `hardware_kernels!(...)` with the
// `Hardware` and `HardwareStream` kernels of the variants whose entry lists them and
// whose instruction's target (`shared::hardware::Conversion::target`) is this module's.
include!(env!("BITEXACT_HARDWARE_KERNELS"));
