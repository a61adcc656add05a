//! E8M0, the scale format of the MX formats (OCP "Microscaling Formats (MX)
//! Specification" v1.0, §5.4.1; PTX `.ue8m0`): 8 exponent bits, no sign, no mantissa.
//! Code `c` is the power of two 2^(c − 127), from 2^-127 (code 0) to 2^127 (code 254);
//! code 255 is NaN. There is no zero and no infinity.
//!
//! An MX scale rule picks the exponent: OCP's `floor(log2 amax) − emax_elem`, or a
//! rounding of `amax / max_elem` up to a power of two. [`floor_log2`] and [`ceil_log2`]
//! give the exponents of an f32 exactly, and [`from_exponent`] the code.

/// The bias: code `c` is 2^(c − [`BIAS`]).
pub const BIAS: i32 = 127;
/// The NaN code.
pub const NAN: u8 = 0xFF;
/// The smallest exponent a code holds, that of code 0.
pub const MIN_EXPONENT: i32 = -BIAS;
/// The largest exponent a code holds, that of code 254.
pub const MAX_EXPONENT: i32 = 254 - BIAS;

/// Code → f32 bits, exact: 2^(code − 127) (code 0, 2^-127, is the f32 subnormal
/// `0x0040_0000`); [`NAN`] gives f32's quiet NaN `0x7FC0_0000`.
#[inline]
pub const fn to_f32_bits(code: u8) -> u32 {
    match code {
        NAN => 0x7FC0_0000,
        0 => 0x0040_0000,
        c => (c as u32) << 23,
    }
}

/// The code of 2^`k`, for [`MIN_EXPONENT`] ≤ `k` ≤ [`MAX_EXPONENT`]; `None` outside.
#[inline]
pub const fn from_exponent(k: i32) -> Option<u8> {
    if k < MIN_EXPONENT || k > MAX_EXPONENT { None } else { Some((k + BIAS) as u8) }
}

/// The width of f32's mantissa field, below its exponent field.
const F32_MANTISSA_BITS: u32 = 23;

/// `floor(log2 |x|)` of the finite non-zero f32 `x` (bits; the sign is ignored), from
/// −149 (the smallest subnormal) to 127; `None` for ±0, ±inf and NaN. A normal's
/// unbiased exponent field; a subnormal's from its mantissa's leading one.
#[inline]
pub const fn floor_log2(x: u32) -> Option<i32> {
    let abs = x & 0x7FFF_FFFF;
    let biased = (abs >> F32_MANTISSA_BITS) as i32;
    if abs == 0 || biased == 0xFF {
        None
    } else if biased != 0 {
        Some(biased - 127)
    } else {
        // abs = mantissa · 2^-149, its leading one at bit 31 - leading_zeros.
        Some(31 - abs.leading_zeros() as i32 - 149)
    }
}

/// `ceil(log2 |x|)` of the finite non-zero f32 `x` (bits; the sign is ignored), from
/// −149 to 128: [`floor_log2`], plus one unless `|x|` is a power of two; `None` for ±0,
/// ±inf and NaN.
#[inline]
pub const fn ceil_log2(x: u32) -> Option<i32> {
    let abs = x & 0x7FFF_FFFF;
    match floor_log2(x) {
        None => None,
        // A power of two has one bit set in its significand: a normal's mantissa field
        // is zero; a subnormal's whole encoding is one bit.
        Some(floor) => {
            let is_power_of_two =
                if abs >> F32_MANTISSA_BITS != 0 { abs & 0x007F_FFFF == 0 } else { abs.is_power_of_two() };
            Some(if is_power_of_two { floor } else { floor + 1 })
        }
    }
}
