//! IEEE 754 binary16 ("half"): classification and finiteness tests on the raw bits.
//!
//! Layout: `0b S_EEEEE_MMMMMMMMMM`. Exponent field all ones means infinity (mantissa
//! zero) or NaN (mantissa non-zero); every other encoding (zeros, subnormals, normals)
//! is finite. So exactly 2 × 1024 = 2048 of the 65,536 encodings are not finite:
//! ±inf and 2046 NaNs.
//!
//! Every `is_finite_*` function below returns `true` exactly for the finite encodings,
//! for all 65,536 inputs, whatever the sign or NaN payload, except
//! [`is_finite_unordered_lt_inf`], which is deliberately wrong on NaN.

// SIGN_MASK = 0b1_00000_0000000000, EXP_MASK = 0b0_11111_0000000000,
// MAN_MASK = 0b0_00000_1111111111, plus is_finite (the exponent-mask form,
// `(b & 0x7C00) != 0x7C00`) / is_infinite / is_nan / classify.
crate::class::ieee_format!(u16, exponent_bits: 5, mantissa_bits: 10);

use crate::narrow::Overflow;

/// Finite iff the magnitude's encoding is below +inf's: `(b & 0x7FFF) < 0x7C00`. Exact:
/// magnitude encodings are ordered like the magnitudes, and NaNs encode above +inf.
#[inline]
pub const fn is_finite_abs_bits_lt_inf(b: u16) -> bool {
    b & ABS_MASK < POS_INFINITY
}

/// Finite iff neither infinite nor NaN, written as two separate tests the way a user
/// would. Exact.
#[inline]
pub const fn is_finite_not_inf_not_nan(b: u16) -> bool {
    !is_infinite(b) && !is_nan(b)
}

/// Finite iff `|x| < +inf` as an *ordered* half-precision compare. Exact: an ordered
/// compare is false when either side is NaN, and only ±inf have `|x| = +inf`.
#[inline]
pub fn is_finite_ordered_lt_inf(b: u16) -> bool {
    f16::from_bits(b).abs() < f16::INFINITY
}

/// DELIBERATELY WRONG, kept so the tests show why the compare must be ordered:
/// `!(|x| >= +inf)` is an *unordered* less-than, true for every NaN. It agrees with
/// finiteness on all 63,488 finite encodings and ±inf, and is wrong on exactly the
/// 2046 NaN encodings.
#[inline]
#[allow(clippy::neg_cmp_op_on_partial_ord)] // the unordered compare is the point
pub fn is_finite_unordered_lt_inf(b: u16) -> bool {
    !(f16::from_bits(b).abs() >= f16::INFINITY)
}

/// Finite iff the value widened to f32 is finite. Exact: binary16 → binary32 is exact
/// for every value, maps ±inf to ±inf and NaN to NaN.
#[inline]
pub fn is_finite_via_f32(b: u16) -> bool {
    (f16::from_bits(b) as f32).is_finite()
}

/// The quiet bit of a binary16 NaN (the mantissa's top bit).
pub const QUIET_BIT: u16 = 0b0_00000_1000000000;
/// Largest finite magnitude's encoding, 65504.
pub const MAX_FINITE: u16 = 0b0_11110_1111111111;

/// f32 bits → binary16 bits, round to nearest, ties to even (IEEE 754 `convertFormat`),
/// what `cvt.rn.f16.f32` computes for every non-NaN input.
///
/// Exact on every one of the 2^32 inputs against integer arithmetic on the fields.
/// Overflow (`|x| >= 65520`, the midpoint past 65504) gives ±inf; values below half the
/// smallest subnormal, 2^-25, give ±0 (2^-25 itself is a tie and goes to even, 0); the
/// sign is kept, -0 included. NaN stays NaN with its sign and the top 9 bits of its
/// payload, made quiet (what x86 F16C and the `half` crate do; NVIDIA's hardware instead
/// returns one canonical NaN, 0x7FFF).
#[inline]
pub const fn from_f32_bits(x: u32) -> u16 {
    from_f32_bits_overflow(x, Overflow::Standard)
}

/// [`from_f32_bits`] with saturation: `|x| >= 65520` and ±inf give ±65504 (`0x7BFF`),
/// what `cvt.rn.satfinite.f16.f32` computes for every non-NaN input. NaN as in
/// [`from_f32_bits`]. Exact on every one of the 2^32 inputs.
#[inline]
pub const fn from_f32_bits_satfinite(x: u32) -> u16 {
    from_f32_bits_overflow(x, Overflow::SatFinite)
}

/// f32 bits → binary16 bits, round to nearest, ties to even, with `overflow` deciding
/// what a value past 65504 (after rounding) and ±inf give: ±inf ([`Overflow::Standard`])
/// or ±65504 ([`Overflow::SatFinite`]). NaN as in [`from_f32_bits`].
#[inline]
pub const fn from_f32_bits_overflow(x: u32, overflow: Overflow) -> u16 {
    let sign = (x >> 16) as u16 & SIGN_MASK;
    let abs = x & 0x7FFF_FFFF;
    let magnitude = if abs > 0x7F80_0000 {
        nan_magnitude(abs)
    } else {
        // +inf's encoding rounds past MAX_FINITE too: it overflows like a large finite.
        finite_magnitude(crate::narrow::round_magnitude::<5, 10>(abs), overflow)
    };
    sign | magnitude
}

/// [`from_f32_bits`] with the rounding computed without a branch
/// ([`crate::narrow::round_magnitude_branch_free`]) and the result selected: the same
/// result on every input.
#[inline]
pub fn from_f32_bits_branch_free(x: u32) -> u16 {
    narrow_branch_free(x, Overflow::Standard)
}

/// [`from_f32_bits_satfinite`] with the rounding computed without a branch and the
/// result selected: the same result on every input.
#[inline]
pub fn from_f32_bits_satfinite_branch_free(x: u32) -> u16 {
    narrow_branch_free(x, Overflow::SatFinite)
}

/// [`from_f32_bits_overflow`] with every input's rounding computed, NaN included (its
/// `abs` is below 2^31 too), and the result selected.
#[inline(always)]
fn narrow_branch_free(x: u32, overflow: Overflow) -> u16 {
    let sign = (x >> 16) as u16 & SIGN_MASK;
    let abs = x & 0x7FFF_FFFF;
    let rounded = finite_magnitude(crate::narrow::round_magnitude_branch_free::<5, 10>(abs), overflow);
    sign | core::hint::select_unpredictable(abs > 0x7F80_0000, nan_magnitude(abs), rounded)
}

/// The magnitude a NaN with f32 magnitude bits `abs` gives: quiet, with the payload's
/// top 9 bits.
#[inline(always)]
const fn nan_magnitude(abs: u32) -> u16 {
    POS_INFINITY | QUIET_BIT | ((abs >> 13) as u16 & MAN_MASK)
}

/// The rounded magnitude encoding `rounded`, or what a value past the largest finite one
/// gives with `overflow`.
#[inline(always)]
const fn finite_magnitude(rounded: u32, overflow: Overflow) -> u16 {
    match overflow {
        _ if rounded <= MAX_FINITE as u32 => rounded as u16,
        Overflow::Standard => POS_INFINITY,
        Overflow::SatFinite => MAX_FINITE,
    }
}

/// binary16 bits → f32 bits without a branch: the finite encodings by one exact float
/// multiply (the magnitude's bits shifted into the f32 field positions read `v · 2^-112`,
/// which `2^112` scales back exactly, subnormals included since f32's range is wider),
/// ±inf and NaN selected from the fields as in [`to_f32_bits`]. The same result as
/// [`to_f32_bits`] on every encoding (IEEE multiply, subnormals kept).
#[inline]
pub fn to_f32_bits_scaled(b: u16) -> u32 {
    let sign = ((b & SIGN_MASK) as u32) << 16;
    let abs = (b & ABS_MASK) as u32;
    // 2^112 = 2^(127 - 15): the difference of the exponent biases.
    let finite = (f32::from_bits(abs << 13) * f32::from_bits((127 + 112) << 23)).to_bits();
    let special = 0x7F80_0000 | ((abs & MAN_MASK as u32) << 13);
    sign | if abs >= POS_INFINITY as u32 { special } else { finite }
}

/// binary16 bits → f32 bits. Exact for every encoding (every binary16 value is an f32):
/// subnormals become normals, ±inf stay ±inf, a NaN keeps its sign and payload (shifted
/// to the top of the f32 mantissa).
#[inline]
pub const fn to_f32_bits(b: u16) -> u32 {
    let sign = ((b & SIGN_MASK) as u32) << 16;
    let abs = (b & ABS_MASK) as u32;
    let magnitude = if abs >= POS_INFINITY as u32 {
        // ±inf and NaN: exponent all ones, the payload at the top of the f32 mantissa.
        0x7F80_0000 | ((abs & MAN_MASK as u32) << 13)
    } else {
        crate::narrow::widen_magnitude::<5, 10>(abs)
    };
    sign | magnitude
}
