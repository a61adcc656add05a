//! Per-tensor scaled FP8 (OCP E4M3 and E5M2): the definitions one implementation shares
//! between the CPU twin, the GPU kernels and `bitexact cast`.
//!
//! For a tensor `x` and an FP8 format with largest finite value `max` (448 for E4M3,
//! 57344 for E5M2):
//!
//! * `amax = max |x|` over the tensor ([`magnitude_bits`] orders `|x|` as an integer);
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
//! (`bitexact::verify::reference::scaled`), by `tests/tests/fp8_scale.rs`.

use crate::fp8::{e4m3, e5m2};
use crate::narrow::{Overflow, round_magnitude_f64};

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

    /// The format's name as the safetensors dtypes spell it.
    pub const fn safetensors_dtype(self) -> &'static str {
        match self {
            Fp8Format::E4M3 => "F8_E4M3",
            Fp8Format::E5M2 => "F8_E5M2",
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
