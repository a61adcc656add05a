//! `v / m` for a sample `v` of an image whose maximum sample value `m` is neither 255
//! nor 65535 (a PNM's `maxval`: 100, 1023, 4095, ...), correctly rounded to f32,
//! binary16 or bfloat16: the conversion the variant table has no entry for, run on the
//! CPU only. [`to`] does it for any output dtype, from its bit layout and its rounding
//! from f32 ([`DtypeOf::from_f32_bits`]), so a new dtype needs no function here.
//!
//! # The rounding argument
//!
//! `v` and `m` are below 2^16, so both are exact in f32, and IEEE division rounds their
//! quotient correctly: that is the f32 result. binary16 and bfloat16 are **not** that
//! quotient rounded again: Figueroa's `p >= 2q + 2` covers operands of the narrow
//! format, and `v`, `m` are not binary16 numbers; the test below found 16379/16383,
//! 29303/32749, 4369/65521 and 32759/65534 one ULP off that way. Instead the f32
//! quotient is made round-to-odd (when inexact, its last bit set, stepping toward the
//! true quotient by the sign of the exact residual `v - q·m`, which f64 holds exactly:
//! 24 + 16 bits), then rounded to nearest, ties to even
//! (`shared::binary16::from_f32_bits`, `shared::bfloat16::from_f32_bits`): rounding to
//! odd at 24 bits and then to nearest at `q <= 22` bits is correct (Boldo and
//! Melquiond), below the normal range too. `host/wings/files/src/tests/normalize_maxval.rs` proves all
//! three against the exact rational reference on every `v` in `0..=m`, for a set of `m`
//! in its quick test and for every `m` in `1..=65535` in an ignored one;
//! `host/wings/files/src/tests/normalize_dtypes.rs` proves [`to`] so for every [`Dtype`], on a set of `m`.

use crate::write::{Dtype, DtypeOf};

/// `v / m` correctly rounded to `D` (to nearest, ties to even), stored, for `v <= m`,
/// `1 <= m <= 65535`: for f32 the IEEE quotient ([`to_f32`]); for a dtype of at most 22
/// bits of precision, the quotient rounded to odd at f32 precision, then to `D` by its
/// [`DtypeOf::from_f32_bits`] (the module's rounding argument). Any other dtype has no
/// division here: naming it fails to compile.
#[inline]
pub fn to<D: DtypeOf>(v: u16, m: u16) -> D::Stored {
    const { assert!(is_f32::<D>() || narrows_by_odd::<D>(), "no correctly rounded division to this dtype") };
    if is_f32::<D>() { D::from_f32_bits(to_f32(v, m).to_bits()) } else { D::from_f32_bits(to_f32_odd_bits(v, m)) }
}

/// Whether `D` is f32 itself.
const fn is_f32<D: DtypeOf>() -> bool {
    matches!(D::DTYPE, Dtype::F32)
}

/// Whether rounding to odd at f32 precision, then to nearest at `D`'s, is correct: `D`
/// has at most 24 − 2 bits of precision and no wider an exponent range than f32's.
const fn narrows_by_odd<D: DtypeOf>() -> bool {
    // Precision is the mantissa's bits and one: at most 22 is a mantissa of at most 21.
    D::DTYPE.mantissa_bits() <= 21 && D::DTYPE.exponent_bits() <= 8
}

/// The f32 nearest to `v / m` (ties to even), for `v <= m`, `1 <= m <= 65535`.
#[inline]
pub fn to_f32(v: u16, m: u16) -> f32 {
    f32::from(v) / f32::from(m)
}

/// The bits of `v / m` rounded to f32 by rounding to odd: the f32 quotient if exact,
/// else whichever of the two f32s around `v / m` has its last bit set.
#[inline]
fn to_f32_odd_bits(v: u16, m: u16) -> u32 {
    let q = to_f32(v, m);
    // Exact: q·m has at most 24 + 16 significant bits, and the difference is a
    // multiple of q's unit in the last place below m of them.
    let residual = f64::from(v) - f64::from(q) * f64::from(m);
    let bits = q.to_bits();
    if residual == 0.0 || bits & 1 == 1 {
        bits
    } else if residual > 0.0 {
        bits + 1
    } else {
        bits - 1
    }
}

/// The binary16 encoding nearest to `v / m` (ties to even), for `v <= m`,
/// `1 <= m <= 65535`: see the module's rounding argument.
#[inline]
pub fn to_f16_bits(v: u16, m: u16) -> u16 {
    to::<crate::write::AsF16>(v, m)
}

/// The bfloat16 encoding nearest to `v / m` (ties to even), for `v <= m`,
/// `1 <= m <= 65535`: see the module's rounding argument.
#[inline]
pub fn to_bf16_bits(v: u16, m: u16) -> u16 {
    to::<crate::write::AsBf16>(v, m)
}
