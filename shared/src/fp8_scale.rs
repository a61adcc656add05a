//! Per-tensor scaled FP8 (OCP E4M3 and E5M2): the definitions one implementation shares
//! between the CPU twin, the GPU kernels and `bitexact cast`.
//!
//! For a tensor `x` and an FP8 format with largest finite value `max` (448 for E4M3,
//! 57344 for E5M2):
//!
//! * `amax = max |x|` over the tensor ([`magnitude_bits`] orders `|x|` as an integer;
//!   [`amax_slice`] over a slice);
//! * the scale `s = fl32(max / amax)`, the correctly rounded f32 division (what
//!   Transformer Engine computes with `__fdiv_rn`); `amax = 0` gives `s = 1`, and an `s`
//!   that overflows f32 (a tiny `amax`) becomes `f32::MAX` ([`scale_for`]);
//! * each element `q = sat_rne(x · s)`, in one of two [`Rounding`]s:
//!   [`Rounding::Once`], the exact product rounded once, straight to FP8, or
//!   [`Rounding::TwoStep`], `fl32(x · s)` first and then FP8 (what Transformer Engine and
//!   torchao compute). Saturating: a magnitude past `max` gives `±max`, infinity included;
//!   NaN gives NaN with its sign ([`quantize`]);
//! * the dequantisation scale stored beside `q` is `fl32(1 / s)` ([`dequant_scale`]).
//!
//! # Why `Once` needs no wide arithmetic beyond f64
//! An f32 has a 24-bit significand, so the product of two has at most 48 significant
//! bits, and its exponent stays within f64's normal range (`2^-298` … `2^256`): the f64
//! product of two f32 values is exact. [`crate::narrow::round_magnitude_f64`] then rounds
//! it once. The GPU's `mul.rn.f64` computes the same exact product.
//!
//! Proven on every f32 input at a set of scales against rational arithmetic on integers
//! (`conformance::reference::scaled`), by `tests/tests/fp8_scale.rs`.
//!
//! # The CPU's fast forms: round to odd, then the by-addition FP8 rounding
//! [`quantize_once`] does not vectorise: its f64 rounding branches on the FP8 subnormal
//! range and works on 64-bit lanes. [`quantize_slice`] computes the same bits in 32-bit
//! lanes without a branch. For `Once` it takes `p = fl32(x · s)` and which side of `p` the
//! exact product lies on ([`Residual`]: `fma(x, s, -p)`, or the exact f64 product minus
//! `p`), and makes `p` *round to odd* ([`product_to_odd`]): the f32 just below the exact
//! product (towards zero) with its last bit set where the product is not exact. An
//! inexact product lies strictly between two neighbouring f32, and its round-to-odd value
//! is the odd one of them; every FP8 value and every midpoint between two (at most 5
//! significant bits, at least 2^-17) is an f32 with its last bit clear. So no midpoint
//! lies between the exact product and its round-to-odd value, nor on it, and the two round
//! alike: rounding it to nearest even once more
//! ([`crate::narrow::round_magnitude_in_binade`], saturated: one f32 addition) gives the exact product
//! rounded once. (A product below f32's normal range rounds to zero in FP8 either way; one
//! past `f32::MAX` gives `f32::MAX`, which saturates.) `TwoStep` is that same FP8 rounding
//! of `p`.
//! Both equal [`quantize`] on every f32 at the scales `tests/tests/fp8_scale.rs` walks
//! (`--ignored`), and on a sample at many scales in the quick run.

use crate::fp8::{e4m3, e5m2};
use crate::narrow::{Overflow, binade_rounding_limit, round_magnitude_f64, round_magnitude_in_binade};

/// One of the two OCP FP8 formats a tensor is scaled into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fp8Format {
    /// E4M3 (no infinity), largest finite 448.
    E4M3,
    /// E5M2 (IEEE-like), largest finite 57344.
    E5M2,
}

/// How `x · s` is rounded to FP8.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rounding {
    /// The exact product `x · s`, rounded once to nearest, ties to even.
    Once,
    /// `fl32(x · s)` (the f32 product, rounded to nearest even), then rounded to FP8:
    /// two roundings, what Transformer Engine and torchao compute.
    TwoStep,
}

impl Fp8Format {
    /// Both formats.
    pub const ALL: [Fp8Format; 2] = [Fp8Format::E4M3, Fp8Format::E5M2];

    /// The largest finite value, 448 or 57344 (exact in f32).
    #[inline]
    pub const fn max_finite(self) -> f32 {
        match self {
            Fp8Format::E4M3 => 448.0,
            Fp8Format::E5M2 => 57344.0,
        }
    }

    /// The saturating round-to-nearest-even of the f32 `x` (bits): `±max` past the
    /// largest finite value and for ±inf, NaN (with the sign) for NaN.
    #[inline]
    pub const fn from_f32_bits_saturating(self, x: u32) -> u8 {
        match self {
            Fp8Format::E4M3 => e4m3::from_f32_bits(x, Overflow::SatFinite),
            Fp8Format::E5M2 => e5m2::from_f32_bits(x, Overflow::SatFinite),
        }
    }

    /// The f32 bits of an encoding (exact).
    #[inline]
    pub const fn to_f32_bits(self, b: u8) -> u32 {
        match self {
            Fp8Format::E4M3 => e4m3::to_f32_bits(b),
            Fp8Format::E5M2 => e5m2::to_f32_bits(b),
        }
    }
}

/// `|x|` as bits (the sign cleared): for non-NaN values the integer order of these bits
/// is the order of the magnitudes, so `amax` is an integer max over them. A NaN's
/// magnitude bits exceed infinity's (`0x7F80_0000`), so a NaN wins the max instead of
/// being dropped (as `f32::max` drops it).
#[inline(always)]
pub const fn magnitude_bits(x: u32) -> u32 {
    x & 0x7FFF_FFFF
}

/// Whether the f32 `x` (bits) is NaN or infinite.
#[inline(always)]
pub const fn is_nonfinite(x: u32) -> bool {
    magnitude_bits(x) >= 0x7F80_0000
}

/// The scale `s = fl32(max / amax)` for a finite, non-negative `amax`: the correctly
/// rounded f32 division (IEEE `/`, never an approximation; on nvptx `div.rn.f32`).
/// `amax = 0` gives 1, and a quotient that overflows f32 gives `f32::MAX`. A non-finite
/// or negative `amax` is the caller's error: the result is then unspecified.
#[inline]
pub fn scale_for(amax: f32, format: Fp8Format) -> f32 {
    if amax == 0.0 {
        return 1.0;
    }
    let s = format.max_finite() / amax;
    if s.is_infinite() { f32::MAX } else { s }
}

/// The dequantisation scale `fl32(1 / s)` stored beside the quantised tensor, correctly
/// rounded (subnormal results kept: `1 / f32::MAX` is one).
#[inline]
pub fn dequant_scale(s: f32) -> f32 {
    1.0 / s
}

/// `sat_rne(x · s)` rounded once: the exact product of the f32 `x` (bits) and the
/// positive finite scale `s`, rounded to nearest, ties to even, straight to `format`,
/// saturating at `±max` (infinite `x` included); NaN gives NaN with `x`'s sign.
#[inline]
pub fn quantize_once(x: u32, s: f32, format: Fp8Format) -> u8 {
    let product = (f64::from(f32::from_bits(x)) * f64::from(s)).to_bits();
    let sign = (x >> 24) as u8 & 0x80;
    let abs = product & 0x7FFF_FFFF_FFFF_FFFF;
    let magnitude = match format {
        Fp8Format::E4M3 => saturate(round_magnitude_f64::<4, 3>(abs), e4m3::MAX_ABS),
        Fp8Format::E5M2 => saturate(round_magnitude_f64::<5, 2>(abs), e5m2::MAX_FINITE),
    };
    let nan = match format {
        Fp8Format::E4M3 => e4m3::NAN_ABS,
        Fp8Format::E5M2 => e5m2::NAN_ABS,
    };
    sign | if magnitude_bits(x) > 0x7F80_0000 { nan } else { magnitude }
}

/// The rounded magnitude encoding, or `max` past it.
#[inline(always)]
const fn saturate(rounded: u32, max: u8) -> u8 {
    if rounded > max as u32 { max } else { rounded as u8 }
}

/// `sat_rne(fl32(x · s))`: the f32 product of `x` (bits) and the positive finite scale
/// `s` rounded to nearest even, then rounded to `format` as
/// [`Fp8Format::from_f32_bits_saturating`] does. NaN gives NaN with `x`'s sign, taken
/// from `x` itself: the NaN a multiply returns differs between machines (x86 keeps the
/// operand's sign, a GPU's `mul.f32` returns the canonical positive NaN).
#[inline]
pub fn quantize_two_step(x: u32, s: f32, format: Fp8Format) -> u8 {
    let product = (f32::from_bits(x) * s).to_bits();
    format.from_f32_bits_saturating(if magnitude_bits(x) > 0x7F80_0000 { x } else { product })
}

/// [`quantize_once`] or [`quantize_two_step`].
#[inline]
pub fn quantize(x: u32, s: f32, format: Fp8Format, rounding: Rounding) -> u8 {
    match rounding {
        Rounding::Once => quantize_once(x, s, format),
        Rounding::TwoStep => quantize_two_step(x, s, format),
    }
}

/// How [`product_to_odd`] learns on which side of `p = fl32(x · s)` the exact product
/// lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Residual {
    /// `fma(x, s, -p)`, the product's rounding error rounded once: its sign and whether
    /// it is zero are the exact error's. One instruction where the target has FMA (x86-64
    /// with the `fma` feature, a GPU's `fma.rn.f32`); a call into `fmaf` per element on
    /// the baseline x86-64 target, where [`Residual::F64`] is the fast one.
    Fma,
    /// The exact f64 product compared with `p` widened to f64 (both exact).
    F64,
}

/// `x · s` (`x` as f32 bits, `s` positive and finite) rounded to odd in f32: the exact
/// product where f32 holds it, else the f32 next to it towards zero with its last
/// mantissa bit set (bits, `x`'s sign). For finite `x` whose product overflows f32 it is
/// `±f32::MAX`; for infinite or NaN `x` it is unspecified (the callers select `x` there).
/// The same bits for both [`Residual`]s on every finite `x` whose product is not below
/// f32's least normal, `2^-126` (there an FMA error under `2^-149` rounds to zero, and
/// [`Residual::Fma`] may call an inexact product exact): such a product is far below
/// every FP8 rounding point, so the FP8 code is the same.
#[inline(always)]
pub fn product_to_odd(x: u32, s: f32, residual: Residual) -> u32 {
    let x = f32::from_bits(x);
    let p = x * s;
    // Whether the exact product differs from p, and whether it lies nearer zero.
    let (inexact, below) = match residual {
        Residual::Fma => {
            let error = core::f32::math::mul_add(x, s, -p);
            (error != 0.0, (error.to_bits() ^ p.to_bits()) >> 31 != 0)
        }
        Residual::F64 => {
            let (exact, rounded) = (f64::from(x) * f64::from(s), f64::from(p));
            (exact != rounded, exact.abs() < rounded.abs())
        }
    };
    // Where inexact and p is not zero, one step down in its bits is one step towards zero
    // (p = 0 with the exact product below it only for an f32-subnormal product, whose FP8
    // code is zero either way).
    let down = u32::from(inexact & below);
    (p.to_bits().wrapping_sub(down)) | u32::from(inexact)
}

/// [`quantize_once`] by [`product_to_odd`] and the by-addition FP8 rounding (see the
/// module doc): the same result on every input (`tests/tests/fp8_scale.rs`), without a
/// branch. CPU only: the FP8 rounding adds in f32, which a GPU may flush to zero.
#[inline(always)]
pub fn quantize_once_to_odd(x: u32, s: f32, format: Fp8Format, residual: Residual) -> u8 {
    saturating_code(x, product_to_odd(x, s, residual), format)
}

/// [`quantize_two_step`] by the by-addition FP8 rounding of `fl32(x · s)`: the same result
/// on every input (`tests/tests/fp8_scale.rs`), without a branch. CPU only, as
/// [`quantize_once_to_odd`].
#[inline(always)]
pub fn quantize_two_step_by_addition(x: u32, s: f32, format: Fp8Format) -> u8 {
    saturating_code(x, (f32::from_bits(x) * s).to_bits(), format)
}

/// The saturating FP8 code of `y` (f32 bits, `x · s` rounded in f32 one way or another),
/// the sign and NaN taken from the input `x`: [`crate::narrow::round_magnitude_in_binade`]
/// of `|y|` (at most [`crate::narrow::binade_rounding_limit`], which rounds past the
/// largest finite code: an infinite `x` saturates whatever `y` is), at most
/// the largest finite code, or NaN's code where `x` is NaN. Computed in 32-bit lanes and
/// narrowed once, so that a vector loop packs one vector of codes, not its masks too.
#[inline(always)]
pub(crate) fn saturating_code(x: u32, y: u32, format: Fp8Format) -> u8 {
    let abs = magnitude_bits(y);
    let (rounded, max, nan) = match format {
        Fp8Format::E4M3 => {
            (round_magnitude_in_binade::<4, 3>(abs.min(binade_rounding_limit::<4, 3>())), e4m3::MAX_ABS, e4m3::NAN_ABS)
        }
        Fp8Format::E5M2 => (
            round_magnitude_in_binade::<5, 2>(abs.min(binade_rounding_limit::<5, 2>())),
            e5m2::MAX_FINITE,
            e5m2::NAN_ABS,
        ),
    };
    // NaN's code has every bit of the largest finite one, so OR-ing it in gives NaN.
    let nan = if magnitude_bits(x) > 0x7F80_0000 { u32::from(nan) } else { 0 };
    ((x >> 24) & 0x80 | rounded.min(u32::from(max)) | nan) as u8
}

// `saturating_code` ORs NaN's code over the magnitude's.
const _: () = assert!(e4m3::NAN_ABS & e4m3::MAX_ABS == e4m3::MAX_ABS && e4m3::NAN_ABS == 0x7F);
const _: () = assert!(e5m2::NAN_ABS & e5m2::MAX_FINITE == e5m2::MAX_FINITE && e5m2::NAN_ABS == 0x7F);

/// `q[i] = quantize(x[i], s, format, rounding)` over `min(x.len(), q.len())` elements, by
/// [`quantize_once_to_odd`] (with `residual`) or [`quantize_two_step_by_addition`]: the
/// same bits as [`quantize`], in one loop per format and rounding that LLVM vectorises
/// (it is `#[inline(always)]`, so it is compiled with the caller's target features: call
/// it from an AVX2 or AVX-512 function to get those instructions, and take
/// [`Residual::Fma`] only where FMA is one of them). CPU only, as [`quantize_once_to_odd`].
#[inline(always)]
pub fn quantize_slice(x: &[u32], s: f32, format: Fp8Format, rounding: Rounding, residual: Residual, q: &mut [u8]) {
    use Fp8Format::{E4M3, E5M2};
    match (rounding, residual, format) {
        (Rounding::Once, Residual::Fma, E4M3) => each(x, q, |v| quantize_once_to_odd(v, s, E4M3, Residual::Fma)),
        (Rounding::Once, Residual::Fma, E5M2) => each(x, q, |v| quantize_once_to_odd(v, s, E5M2, Residual::Fma)),
        (Rounding::Once, Residual::F64, E4M3) => each(x, q, |v| quantize_once_to_odd(v, s, E4M3, Residual::F64)),
        (Rounding::Once, Residual::F64, E5M2) => each(x, q, |v| quantize_once_to_odd(v, s, E5M2, Residual::F64)),
        (Rounding::TwoStep, _, E4M3) => each(x, q, |v| quantize_two_step_by_addition(v, s, E4M3)),
        (Rounding::TwoStep, _, E5M2) => each(x, q, |v| quantize_two_step_by_addition(v, s, E5M2)),
    }
}

/// Pass 1 over a slice of f32 bits: `(max, first)`, where `max` is the largest magnitude
/// among the finite elements of `x` as f32 bits ([`magnitude_bits`]: the sign cleared; 0
/// when `x` has no finite element, or is empty), and `first` is the index of the first NaN
/// or infinity in `x` (`None` when every element is finite). Pure and the same on every
/// target. It is `#[inline(always)]`, like [`quantize_slice`], so that it is compiled with
/// the caller's target features: one integer max per element over all magnitudes, which
/// LLVM vectorises (a NaN's or infinity's magnitude bits exceed every finite one's), and
/// only where that max is not finite, the max of the finite magnitudes and the search for
/// the first non-finite element. (One pass keeping both maxima, with a select per element,
/// was not vectorised: 3.7 GB/s at every level, against 24 GB/s memcpy in the same run.)
#[inline(always)]
pub fn amax_slice(x: &[u32]) -> (u32, Option<usize>) {
    amax_by(x, magnitude_bits, is_nonfinite)
}

/// Pass 1 over the bits of floats whose magnitude is `magnitude(v)` and which are NaN or
/// infinite where `nonfinite(v)` (so of a magnitude above every finite one's): the one
/// loop of [`amax_slice`] and [`amax_slice_f64`], `#[inline(always)]` with them.
#[inline(always)]
fn amax_by<T: Copy + Ord + Default>(x: &[T], magnitude: fn(T) -> T, nonfinite: fn(T) -> bool) -> (T, Option<usize>) {
    let all = x.iter().fold(T::default(), |all, &v| all.max(magnitude(v)));
    if !nonfinite(all) {
        return (all, None);
    }
    let finite = x.iter().map(|&v| magnitude(v)).filter(|&m| !nonfinite(m)).max().unwrap_or_default();
    (finite, x.iter().position(|&v| nonfinite(v)))
}

/// `q[i] = f(x[i])` over `min(x.len(), q.len())` elements, one loop.
#[inline(always)]
pub(crate) fn each(x: &[u32], q: &mut [u8], f: impl Fn(u32) -> u8) {
    for (y, &v) in q.iter_mut().zip(x) {
        *y = f(v);
    }
}

// ---------------------------------------------------------------------------------------
// f64 sources.
//
// The product of an f64 and an f32 has up to 77 significant bits: f64 does not hold it,
// so `quantize_once`'s exact f64 product is not available. Round to odd in f64 instead:
// `p = fl64(x · s)` and its error `fma(x, s, -p)` (exact while `p` is above f64's
// subnormal range, so its sign and whether it is zero are the exact error's) give the
// f64 next to the exact product towards zero, its last bit set where the product is not
// exact. 53 bits is at least two more than any format rounded to here (FP8's 4 or 3
// significant bits, f32's 24), so that value rounds to nearest even exactly as the exact
// product does: every value and midpoint of the target is an f64 with its last bit clear,
// so none lies on or strictly between the two. A product below 2^-969 (where `p`'s error
// might not be exact) rounds to zero in FP8 and f32 alike, whatever its low bits. The
// scale's division is rounded the same way: `q = fl64(max / amax)` and the remainder
// `fma(-q, amax, max)` (exact: `q · amax` is near `max`, far above f64's subnormals).

/// `|x|` of the f64 `x` (bits): the sign cleared. As [`magnitude_bits`], the integer
/// order of these bits is the order of the magnitudes, and a NaN's exceed infinity's.
#[inline(always)]
pub const fn magnitude_bits_f64(x: u64) -> u64 {
    x & 0x7FFF_FFFF_FFFF_FFFF
}

/// Whether the f64 `x` (bits) is NaN or infinite.
#[inline(always)]
pub const fn is_nonfinite_f64(x: u64) -> bool {
    magnitude_bits_f64(x) >= 0x7FF0_0000_0000_0000
}

/// `bits` (an f64's, known inexact where `inexact`) made odd towards zero: one step
/// down in its bits where the exact value lies nearer zero (`below`), then the last bit
/// set where inexact. `bits` is not ±0 where inexact.
#[inline(always)]
const fn to_odd_f64(bits: u64, inexact: bool, below: bool) -> u64 {
    bits.wrapping_sub((inexact & below) as u64) | inexact as u64
}

/// The scale `s = fl32(max / amax)` for the finite, non-negative f64 `amax`, rounded
/// once from the exact quotient (round to odd in f64, then to f32; see the section's
/// comment): `amax = 0` gives 1 and a quotient past f32's range gives `f32::MAX`, as
/// [`scale_for`] does, and for every f32 `amax` it equals [`scale_for`]. Unlike an f32
/// `amax`, a huge f64 one can give a scale below f32's normal range, or 0 (from
/// `amax > 2^150 · max`): the caller checks that [`dequant_scale`] of it is finite. A
/// non-finite or negative `amax` is the caller's error: the result is then unspecified.
#[inline]
pub fn scale_for_f64(amax: f64, format: Fp8Format) -> f32 {
    if amax == 0.0 {
        return 1.0;
    }
    let max = f64::from(format.max_finite());
    let q = max / amax;
    if q.is_infinite() {
        return f32::MAX;
    }
    // max / amax is at least 448 / f64::MAX, a normal f64, so q is normal.
    let remainder = core::f64::math::mul_add(-q, amax, max);
    let odd = f64::from_bits(to_odd_f64(q.to_bits(), remainder != 0.0, remainder < 0.0));
    let s = odd as f32;
    if s.is_infinite() { f32::MAX } else { s }
}

/// `x · s` (`x` as finite f64 bits, `s` positive and finite) rounded to odd in f64 (bits,
/// `x`'s sign); see the section's comment. Exact where f64 holds the product; ±inf
/// where it overflows f64.
#[inline(always)]
pub fn product_to_odd_f64(x: u64, s: f32) -> u64 {
    let (x, s) = (f64::from_bits(x), f64::from(s));
    let p = x * s;
    let error = core::f64::math::mul_add(x, s, -p);
    let below = (error.to_bits() ^ p.to_bits()) >> 63 != 0;
    // A product past f64's range stays infinite (its error is not a number).
    to_odd_f64(p.to_bits(), error != 0.0 && p.is_finite(), below)
}

/// `sat_rne(x · s)` rounded once, for an **f64** `x` (bits) and the positive finite
/// scale `s`: the exact product rounded to nearest, ties to even, straight to `format`
/// (through [`product_to_odd_f64`]), saturating at `±max` (infinite `x` included); NaN
/// gives NaN with `x`'s sign. [`quantize_once`]'s definition, for f64 sources.
#[inline]
pub fn quantize_once_f64(x: u64, s: f32, format: Fp8Format) -> u8 {
    let sign = (x >> 56) as u8 & 0x80;
    let (max, nan) = match format {
        Fp8Format::E4M3 => (e4m3::MAX_ABS, e4m3::NAN_ABS),
        Fp8Format::E5M2 => (e5m2::MAX_FINITE, e5m2::NAN_ABS),
    };
    let abs = magnitude_bits_f64(x);
    if abs > 0x7FF0_0000_0000_0000 {
        return sign | nan;
    }
    if abs == 0x7FF0_0000_0000_0000 {
        return sign | max;
    }
    let odd = magnitude_bits_f64(product_to_odd_f64(x, s));
    let rounded = match format {
        Fp8Format::E4M3 => round_magnitude_f64::<4, 3>(odd),
        Fp8Format::E5M2 => round_magnitude_f64::<5, 2>(odd),
    };
    sign | saturate(rounded, max)
}

/// `sat_rne(fl32(x · s))` for an **f64** `x` (bits): the exact product rounded to f32
/// (through [`product_to_odd_f64`]; `±inf` past f32's range), then to `format` as
/// [`Fp8Format::from_f32_bits_saturating`] does. NaN gives NaN with `x`'s sign, ±inf the
/// largest finite. [`quantize_two_step`]'s definition, for f64 sources.
#[inline]
pub fn quantize_two_step_f64(x: u64, s: f32, format: Fp8Format) -> u8 {
    let abs = magnitude_bits_f64(x);
    let product = if abs >= 0x7FF0_0000_0000_0000 {
        // NaN keeps x's sign; ±inf saturates.
        let sign = (x >> 32) as u32 & 0x8000_0000;
        sign | if abs > 0x7FF0_0000_0000_0000 { 0x7FC0_0000 } else { 0x7F80_0000 }
    } else {
        (f64::from_bits(product_to_odd_f64(x, s)) as f32).to_bits()
    };
    format.from_f32_bits_saturating(product)
}

/// [`quantize_once_f64`] or [`quantize_two_step_f64`].
#[inline]
pub fn quantize_f64(x: u64, s: f32, format: Fp8Format, rounding: Rounding) -> u8 {
    match rounding {
        Rounding::Once => quantize_once_f64(x, s, format),
        Rounding::TwoStep => quantize_two_step_f64(x, s, format),
    }
}

/// Pass 1 over a slice of f64 bits, as [`amax_slice`]: the largest magnitude among the
/// finite elements ([`magnitude_bits_f64`]; 0 for none) and the index of the first NaN
/// or infinity.
#[inline(always)]
pub fn amax_slice_f64(x: &[u64]) -> (u64, Option<usize>) {
    amax_by(x, magnitude_bits_f64, is_nonfinite_f64)
}

/// `bits` (f32, the rounding of `wide`) made odd towards zero where it is not `wide`
/// itself: `wide` rounded to odd in f32. Exact compares in f64; `wide` finite or
/// infinite, not NaN (a NaN gives bits the caller does not use).
#[inline(always)]
fn f32_to_odd_of(bits: u32, wide: f64) -> u32 {
    let back = f64::from(f32::from_bits(bits));
    let inexact = back != wide;
    let below = back.abs() > wide.abs();
    bits.wrapping_sub(u32::from(inexact & below)) | u32::from(inexact)
}

/// The f32 bits [`saturating_code`] takes the sign and NaN from, for the f64 `x` (bits):
/// `x`'s sign, and a quiet NaN's exponent and mantissa where `x` is NaN.
#[inline(always)]
fn sign_and_nan_f32(x: u64) -> u32 {
    let nan = magnitude_bits_f64(x) > 0x7FF0_0000_0000_0000;
    ((x >> 32) as u32 & 0x8000_0000) | if nan { 0x7FC0_0000 } else { 0 }
}

/// [`quantize_once_f64`] without a branch, as [`quantize_once_to_odd`] is for f32: the
/// product rounded to odd in f64 ([`product_to_odd_f64`]), then to odd in f32 (round to
/// odd twice is round to odd once at the coarser precision: an odd f64 is not an f32,
/// so it lies strictly inside the same interval between two f32 as the exact product),
/// then the by-addition FP8 rounding of [`quantize_once_to_odd`] (whose argument covers
/// the f32 round-to-odd value). An infinite `x` gives an infinite product, which
/// saturates; a NaN `x` NaN. The same result as [`quantize_once_f64`] on every input
/// (`tests/tests/fp8_scale_f64.rs`). CPU only, as [`quantize_once_to_odd`].
#[inline(always)]
pub fn quantize_once_f64_to_odd(x: u64, s: f32, format: Fp8Format) -> u8 {
    let wide = f64::from_bits(product_to_odd_f64(x, s));
    let odd = f32_to_odd_of((wide as f32).to_bits(), wide);
    saturating_code(sign_and_nan_f32(x), odd, format)
}

/// [`quantize_two_step_f64`] without a branch: `fl32` of the product rounded to odd in
/// f64 (which is `fl32` of the exact product), then the by-addition FP8 rounding. The same
/// result as [`quantize_two_step_f64`] on every input (`tests/tests/fp8_scale_f64.rs`).
/// CPU only.
#[inline(always)]
pub fn quantize_two_step_f64_by_addition(x: u64, s: f32, format: Fp8Format) -> u8 {
    let product = (f64::from_bits(product_to_odd_f64(x, s)) as f32).to_bits();
    saturating_code(sign_and_nan_f32(x), product, format)
}

/// `q[i] = quantize_f64(x[i], s, format, rounding)` over `min(x.len(), q.len())` elements,
/// by [`quantize_once_f64_to_odd`] or [`quantize_two_step_f64_by_addition`]: one loop per
/// format and rounding, `#[inline(always)]` as [`quantize_slice`] is, to be compiled with
/// the caller's target features (FMA among them: [`product_to_odd_f64`] needs one per
/// element, a call into `fma` without it). CPU only.
#[inline(always)]
pub fn quantize_slice_f64(x: &[u64], s: f32, format: Fp8Format, rounding: Rounding, q: &mut [u8]) {
    use Fp8Format::{E4M3, E5M2};
    match (rounding, format) {
        (Rounding::Once, E4M3) => each_f64(x, q, |v| quantize_once_f64_to_odd(v, s, E4M3)),
        (Rounding::Once, E5M2) => each_f64(x, q, |v| quantize_once_f64_to_odd(v, s, E5M2)),
        (Rounding::TwoStep, E4M3) => each_f64(x, q, |v| quantize_two_step_f64_by_addition(v, s, E4M3)),
        (Rounding::TwoStep, E5M2) => each_f64(x, q, |v| quantize_two_step_f64_by_addition(v, s, E5M2)),
    }
}

/// `q[i] = f(x[i])` over `min(x.len(), q.len())` elements, one loop.
#[inline(always)]
fn each_f64(x: &[u64], q: &mut [u8], f: impl Fn(u64) -> u8) {
    for (y, &v) in q.iter_mut().zip(x) {
        *y = f(v);
    }
}
