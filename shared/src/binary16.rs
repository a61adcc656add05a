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
