//! The narrow formats (binary16, bfloat16, OCP FP8 E4M3 and E5M2, OCP MX FP4 E2M1): f32 rounded onto their
//! grids (round to nearest, ties to even, on integers), their values back as f32, and
//! the classes of the inputs of a conversion between f32 and one of them.

use super::classify::{Specials, class, layout};
use shared::narrow::Overflow;
use shared::{Class, Family, Format};

/// A narrower floating-point format, described by numbers a reader can check against its
/// specification, for the narrowing references of this module.
///
/// The roundings take formats of the constants' kind: an exponent field of 1 to 8 bits, a
/// mantissa of at most 23 bits (at most 24 significant bits), and a largest finite value
/// on the format's grid. Others are outside what they are proven on; a zero-width
/// exponent panics (in an overflow check).
#[derive(Clone, Copy, Debug)]
pub struct NarrowFormat {
    /// Exponent field width; the bias is `2^(exponent_bits - 1) - 1`.
    pub exponent_bits: u32,
    /// Mantissa field width.
    pub mantissa_bits: u32,
    /// The largest finite value, as `significand · 2^exponent`.
    pub max_finite: (u64, i32),
}

/// binary16: 5 + 10 bits, largest finite 65504 = 2047 · 2^5.
pub const BINARY16: NarrowFormat = NarrowFormat { exponent_bits: 5, mantissa_bits: 10, max_finite: (2047, 5) };
/// bfloat16: 8 + 7 bits, largest finite (2^8 - 1) · 2^120.
pub const BFLOAT16: NarrowFormat = NarrowFormat { exponent_bits: 8, mantissa_bits: 7, max_finite: (255, 120) };
/// OCP E4M3: 4 + 3 bits, largest finite 448 = 7 · 2^6 (S.1111.111 is NaN, not 480).
pub const FP8_E4M3: NarrowFormat = NarrowFormat { exponent_bits: 4, mantissa_bits: 3, max_finite: (7, 6) };
/// OCP E5M2: 5 + 2 bits, largest finite 57344 = 7 · 2^13.
pub const FP8_E5M2: NarrowFormat = NarrowFormat { exponent_bits: 5, mantissa_bits: 2, max_finite: (7, 13) };

/// A magnitude `significand · 2^exponent` rounded onto `format`'s grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rounded {
    /// Representable: the magnitude's encoding (exponent field · 2^mantissa_bits +
    /// mantissa).
    Finite(u64),
    /// Past the largest finite value after rounding.
    Overflow,
}

/// The finite f32 magnitude of `bits` (sign ignored; not NaN or inf) rounded to nearest,
/// ties to even, onto `format`'s grid, on integers: the value's binade from the
/// significand's bit length, the grid step of that binade (or of the subnormals), the
/// quotient and remainder by that step, then the encoding from the quotient. Shares
/// nothing with `shared::narrow`.
#[inline(always)]
pub fn round_f32_to(format: NarrowFormat, bits: u32) -> Rounded {
    let (significand, exponent) = f32_magnitude_parts(bits);
    round_to(format, significand, exponent)
}

/// binary32 itself as a [`NarrowFormat`]: 8 + 23 bits, largest finite (2^24 - 1) · 2^104,
/// for rounding an exact value (a product, a quotient) to f32 on integers.
pub const BINARY32: NarrowFormat =
    NarrowFormat { exponent_bits: 8, mantissa_bits: 23, max_finite: ((1 << 24) - 1, 104) };

/// The magnitude of the finite f32 `bits` (sign ignored) as `significand · 2^exponent`,
/// exactly, from its fields.
#[inline(always)]
pub fn f32_magnitude_parts(bits: u32) -> (u64, i32) {
    let biased = i32::try_from((bits >> 23) & 0xFF).expect("8 bits");
    let fraction = u64::from(bits & 0x007F_FFFF);
    if biased == 0 { (fraction, -149) } else { (fraction | 1 << 23, biased - 150) }
}

/// The magnitude of the finite f64 `bits` (sign ignored) as `significand · 2^exponent`,
/// exactly, from its fields.
#[inline]
pub fn f64_magnitude_parts(bits: u64) -> (u64, i32) {
    let biased = i32::try_from((bits >> 52) & 0x7FF).expect("11 bits");
    let fraction = bits & 0x000F_FFFF_FFFF_FFFF;
    if biased == 0 { (fraction, -1074) } else { (fraction | 1 << 52, biased - 1075) }
}

/// [`round_to`] of a wider significand (any `u128`): where it has more than 61 bits, it is
/// first cut to 61, every bit cut off folded into the lowest bit kept (a sticky bit).
/// That rounds as the whole value does: the rounding position of every format here (at
/// most 24 significant bits) lies at least 36 bits above the sticky bit, which only says
/// whether the value is above a grid point or a midpoint it would otherwise sit on.
#[inline]
pub fn round_wide(format: NarrowFormat, significand: u128, exponent: i32) -> Rounded {
    let length = 128 - significand.leading_zeros() as i32;
    if length <= 61 {
        return round_to(format, u64::try_from(significand).expect("61 bits"), exponent);
    }
    let cut = (length - 61) as u32;
    let sticky = u128::from(significand & ((1u128 << cut) - 1) != 0);
    let kept = u64::try_from(significand >> cut | sticky).expect("61 bits");
    round_to(format, kept, exponent + cut as i32)
}

/// The magnitude `significand · 2^exponent` (`significand < 2^62`; a format as
/// [`NarrowFormat`] says) rounded to nearest, ties to even, onto `format`'s grid, on
/// integers: the value's binade from the
/// significand's bit length, the grid step of that binade (or of the subnormals), the
/// quotient and remainder by that step, then the encoding from the quotient. Shares
/// nothing with `shared::narrow`.
///
/// Always inlined, as are the other roundings here: the proofs call them billions of
/// times with a constant format, whose fields then fold into the caller's loop (merely
/// `#[inline]`, LLVM kept it a call taking the format at run time).
#[inline(always)]
pub fn round_to(format: NarrowFormat, significand: u64, exponent: i32) -> Rounded {
    let man = format.mantissa_bits as i32;
    let bias = (1i32 << (format.exponent_bits - 1)) - 1;
    if significand == 0 {
        return Rounded::Finite(0);
    }
    // floor(log2 |x|), and the grid step 2^step of its binade (subnormal step below 2^(1 - bias)).
    let binade = 63 - significand.leading_zeros() as i32 + exponent;
    let step = binade.max(1 - bias) - man;
    let (quotient, remainder_vs_half) = if exponent >= step {
        (significand << (exponent - step), core::cmp::Ordering::Less)
    } else {
        let shift = (step - exponent) as u32;
        if shift >= 64 {
            (0, core::cmp::Ordering::Less)
        } else {
            let remainder = significand & ((1u64 << shift) - 1);
            (significand >> shift, (u128::from(remainder) * 2).cmp(&(1u128 << shift)))
        }
    };
    let round_up = match remainder_vs_half {
        core::cmp::Ordering::Greater => true,
        core::cmp::Ordering::Equal => quotient % 2 == 1,
        core::cmp::Ordering::Less => false,
    };
    encode_rounded(format, quotient + u64::from(round_up), step)
}

/// The [`Rounded`] of the magnitude `quotient · 2^step`, where `step` is the grid step of
/// the binade (or the subnormal step) the value was rounded in and `quotient` the
/// rounded count of steps (at most `2^(mantissa_bits + 1)`, which means the rounding
/// carried into the next binade).
#[inline(always)]
fn encode_rounded(format: NarrowFormat, mut quotient: u64, mut step: i32) -> Rounded {
    let man = format.mantissa_bits as i32;
    let bias = (1i32 << (format.exponent_bits - 1)) - 1;
    if quotient == 1 << (man + 1) {
        // Rounded up into the next binade.
        quotient >>= 1;
        step += 1;
    }
    // Overflow: quotient · 2^step > max.significand · 2^max.exponent, compared exactly.
    let (max_significand, max_exponent) = format.max_finite;
    // A nonzero quotient at a step 64 or more above the maximum's exponent exceeds it
    // (the maximum's significand is below 2^64); below that, both fit a u128 exactly.
    if quotient != 0 && step - max_exponent >= 64 {
        return Rounded::Overflow;
    }
    let common = step.min(max_exponent);
    let scaled = |s: u64, e: i32| u128::from(s).checked_shl((e - common) as u32).unwrap_or(u128::MAX);
    if quotient != 0 && scaled(quotient, step) > scaled(max_significand, max_exponent) {
        return Rounded::Overflow;
    }
    if quotient < 1 << man {
        // Subnormal (or zero): the quotient counts units of the subnormal step.
        Rounded::Finite(quotient)
    } else {
        let exponent_field = u64::try_from(step + man + bias).expect("a normal's biased exponent is positive");
        Rounded::Finite(exponent_field << man | (quotient - (1 << man)))
    }
}

/// OCP MX E2M1 (FP4): 2 + 1 bits, largest finite 6 = 3 · 2^1; no infinity, no NaN.
pub const FP4_E2M1: NarrowFormat = NarrowFormat { exponent_bits: 2, mantissa_bits: 1, max_finite: (3, 1) };

/// The f32 bits of the E2M1 code in the low 4 bits of `code`, from its fields (sign,
/// exponent `e` with bias 1, mantissa `m`): `m · 2^-1` for `e = 0`, `(2 + m) · 2^(e - 2)`
/// otherwise.
pub fn fp4_e2m1_to_f32_bits(code: u8) -> u32 {
    let (sign, exponent, mantissa) = (u32::from(code >> 3 & 1), i32::from(code >> 1 & 0b11), u64::from(code & 1));
    let magnitude =
        if exponent == 0 { exact_f32_bits(mantissa, -1) } else { exact_f32_bits(2 + mantissa, exponent - 2) };
    sign << 31 | magnitude
}

/// The E2M1 code of the f32 `x` (bits): its magnitude rounded to nearest, ties to even,
/// onto E2M1's grid ([`round_f32_to`]), saturated at 6 (±inf too), with `x`'s sign; NaN
/// gives +6 (CUDA's `__nv_cvt_float_to_fp4`).
pub fn fp4_e2m1_from_f32_bits(x: u32) -> u8 {
    let abs = x & 0x7FFF_FFFF;
    let max = 0b0111;
    if abs > 0x7F80_0000 {
        return max;
    }
    let sign = u8::from(x >> 31 == 1) << 3;
    let magnitude = match abs {
        0x7F80_0000 => max,
        _ => match round_f32_to(FP4_E2M1, abs) {
            Rounded::Finite(code) => u8::try_from(code).expect("an E2M1 magnitude"),
            Rounded::Overflow => max,
        },
    };
    sign | magnitude
}

/// The [`NarrowFormat`] of a format the narrowing conversions target (binary16,
/// bfloat16, FP8 E4M3, FP8 E5M2), `None` for the others.
pub const fn narrow_format(format: Format) -> Option<NarrowFormat> {
    match format {
        Format::Binary16 => Some(BINARY16),
        Format::Bfloat16 => Some(BFLOAT16),
        Format::Fp8E4m3 => Some(FP8_E4M3),
        Format::Fp8E5m2 => Some(FP8_E5M2),
        _ => None,
    }
}

/// The exact f32 encoding of `significand · 2^exponent`.
///
/// Panics if that value is not an f32 (a caller bug: every value of the narrow formats
/// is one).
#[inline]
pub fn exact_f32_bits(significand: u64, exponent: i32) -> u32 {
    if significand == 0 {
        return 0;
    }
    let (significand, exponent) =
        (significand >> significand.trailing_zeros(), exponent + significand.trailing_zeros() as i32);
    let length = 64 - significand.leading_zeros() as i32;
    // floor(log2) of the value.
    let top = exponent + length - 1;
    assert!(length <= 24 && top <= 127, "{significand} · 2^{exponent} is not an f32");
    if top >= -126 {
        // Normal: the leading one is implicit, the rest fills the fraction from the top.
        let fraction = (significand << (24 - length)) as u32 & 0x007F_FFFF;
        ((top + 127) as u32) << 23 | fraction
    } else {
        // Subnormal: the fraction counts units of 2^-149.
        let shift = exponent + 149;
        assert!(shift >= 0, "{significand} · 2^{exponent} is below the smallest f32 subnormal");
        (significand << shift) as u32
    }
}

/// The f32 encoding of the encoding `bits` of the narrow `format`, decoded field by
/// field: the sign; a NaN's payload at the top of the f32 mantissa (what the
/// [`Family::NarrowToF32`] family defines), ±inf; and a finite value
/// `significand · 2^exponent` encoded exactly by [`exact_f32_bits`].
///
/// Panics if `format` is not a narrow format ([`narrow_format`]).
pub fn narrow_to_f32_bits(format: Format, bits: u64) -> u32 {
    let fields = layout(format);
    let man = fields.mantissa_bits;
    let narrow = narrow_format(format).unwrap_or_else(|| panic!("{} is not a narrowing target", format.name()));
    let sign = ((bits >> (format.bits() - 1)) as u32 & 1) << 31;
    let exponent_field = (bits >> man) & ((1 << fields.exponent_bits) - 1);
    let mantissa = bits & ((1 << man) - 1);
    let bias = (1i32 << (narrow.exponent_bits - 1)) - 1;
    let magnitude = match class(format, bits) {
        Class::Nan => 0x7F80_0000 | (mantissa as u32) << (23 - man),
        Class::Infinite => 0x7F80_0000,
        Class::Zero | Class::Subnormal => exact_f32_bits(mantissa, 1 - bias - man as i32),
        Class::Normal => exact_f32_bits(mantissa | 1 << man, exponent_field as i32 - bias - man as i32),
    };
    sign | magnitude
}

/// One f32 → narrow conversion as its [`Family::F32ToNarrow`] family defines it, with the
/// encodings that do not depend on the input worked out once.
#[derive(Clone, Copy, Debug)]
pub struct NarrowConversion {
    format: NarrowFormat,
    /// Width of the target in bits.
    width: u32,
    /// The magnitude encoding an overflow gives (±inf included).
    overflowed: u64,
    /// Whether a NaN keeps its top payload bits (binary16, bfloat16) or becomes the NaN
    /// with every mantissa bit set (FP8).
    nan_keeps_payload: bool,
}

impl NarrowConversion {
    /// The conversion to `format` with `overflow`. What overflow gives, from the format's
    /// specials ([`layout`]): [`Overflow::Standard`] gives infinity where the format has
    /// one and its only NaN where it does not (E4M3); [`Overflow::SatFinite`] the largest
    /// finite value, its encoding found by rounding that value ([`round_f32_to`]).
    ///
    /// Panics if `format` is not a narrow format ([`narrow_format`]).
    pub fn new(format: Format, overflow: Overflow) -> NarrowConversion {
        let narrow = narrow_format(format).unwrap_or_else(|| panic!("{} is not a narrowing target", format.name()));
        let fields = layout(format);
        let exponent_all_ones = ((1u64 << fields.exponent_bits) - 1) << fields.mantissa_bits;
        let mantissa_all_ones = (1u64 << fields.mantissa_bits) - 1;
        let overflowed = match (overflow, fields.specials) {
            (Overflow::Standard, Specials::Ieee) => exponent_all_ones,
            (Overflow::Standard, _) => exponent_all_ones | mantissa_all_ones,
            (Overflow::SatFinite, _) => {
                let (significand, exponent) = narrow.max_finite;
                match round_f32_to(narrow, exact_f32_bits(significand, exponent)) {
                    Rounded::Finite(code) => code,
                    Rounded::Overflow => unreachable!("the largest finite value does not overflow"),
                }
            }
        };
        let nan_keeps_payload = matches!(format, Format::Binary16 | Format::Bfloat16);
        NarrowConversion { format: narrow, width: format.bits(), overflowed, nan_keeps_payload }
    }

    /// The result's bits for the f32 bits `x`.
    #[inline]
    pub fn convert(&self, x: u32) -> u64 {
        self.convert_as(self.format, x)
    }

    /// [`Self::convert`] with `format`, which is `self`'s format, passed as a constant
    /// by a caller's loop (`super::expected_many`), so that its fields fold into the
    /// rounding.
    #[inline(always)]
    pub(super) fn convert_as(&self, format: NarrowFormat, x: u32) -> u64 {
        let sign = u64::from(x >> 31) << (self.width - 1);
        let abs = x & 0x7FFF_FFFF;
        let man = format.mantissa_bits;
        let exponent_all_ones = ((1u64 << format.exponent_bits) - 1) << man;
        let magnitude = if abs > 0x7F80_0000 {
            if self.nan_keeps_payload {
                // Quiet (the mantissa's top bit), with the payload's top bits below it.
                exponent_all_ones | 1 << (man - 1) | u64::from(abs >> (23 - man)) & ((1 << man) - 1)
            } else {
                exponent_all_ones | ((1 << man) - 1)
            }
        } else if abs == 0x7F80_0000 {
            self.overflowed
        } else {
            match round_f32_to(format, abs) {
                Rounded::Finite(code) => code,
                Rounded::Overflow => self.overflowed,
            }
        };
        sign | magnitude
    }
}

/// What kind of input a conversion between f32 and a narrow format got: where the GPU
/// checks count the inputs on which two results differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputClass {
    /// ±0.
    Zero,
    /// A subnormal input (narrow → f32), or a non-zero f32 whose result is subnormal or
    /// zero (f32 → narrow: it underflows).
    Subnormal,
    /// Any other finite input whose result is finite.
    Normal,
    /// A finite f32 that rounds past the narrow format's largest finite value.
    Overflow,
    /// ±inf.
    Infinite,
    /// Any NaN.
    Nan,
}

impl InputClass {
    /// Every class, in this order.
    pub const ALL: [InputClass; 6] = [
        InputClass::Zero,
        InputClass::Subnormal,
        InputClass::Normal,
        InputClass::Overflow,
        InputClass::Infinite,
        InputClass::Nan,
    ];

    /// Short stable name, for reports.
    pub const fn name(self) -> &'static str {
        match self {
            InputClass::Zero => "zero",
            InputClass::Subnormal => "subnormal",
            InputClass::Normal => "normal",
            InputClass::Overflow => "overflow",
            InputClass::Infinite => "infinite",
            InputClass::Nan => "nan",
        }
    }
}

/// The [`InputClass`] of `input` for `family`, a [`Family::F32ToNarrow`] or
/// [`Family::NarrowToF32`] conversion: for f32 → narrow from the f32's fields and, for a
/// finite non-zero input, where [`round_f32_to`] puts it; for narrow → f32 the class of
/// the encoding.
///
/// Panics for other families (a caller bug).
pub fn conversion_input_class(family: Family, input: u64) -> InputClass {
    let from_class = |class: Class| match class {
        Class::Zero => InputClass::Zero,
        Class::Subnormal => InputClass::Subnormal,
        Class::Normal => InputClass::Normal,
        Class::Infinite => InputClass::Infinite,
        Class::Nan => InputClass::Nan,
    };
    match family {
        Family::F32ToNarrow { format, .. } => {
            let narrow = narrow_format(format).unwrap_or_else(|| panic!("{family}: not a narrowing target"));
            match class(Format::Binary32, input) {
                Class::Subnormal | Class::Normal => match round_f32_to(narrow, input as u32 & 0x7FFF_FFFF) {
                    Rounded::Overflow => InputClass::Overflow,
                    Rounded::Finite(code) if code < 1 << narrow.mantissa_bits => InputClass::Subnormal,
                    Rounded::Finite(_) => InputClass::Normal,
                },
                other => from_class(other),
            }
        }
        Family::NarrowToF32 { format } => from_class(class(format, input)),
        _ => panic!("{family} is not a conversion between f32 and a narrow format"),
    }
}

/// The format of the inputs of `family`, a [`Family::F32ToNarrow`] or
/// [`Family::NarrowToF32`] conversion: binary32, or the narrow format.
///
/// Panics for other families (a caller bug).
pub fn conversion_input_format(family: Family) -> Format {
    match family {
        Family::F32ToNarrow { .. } => Format::Binary32,
        Family::NarrowToF32 { format } => format,
        _ => panic!("{family} is not a conversion between f32 and a narrow format"),
    }
}

/// Whether `output` is a NaN of the result format of `family`, a [`Family::F32ToNarrow`]
/// or [`Family::NarrowToF32`] conversion (the narrow format, or binary32).
///
/// Panics for other families (a caller bug).
pub fn conversion_output_is_nan(family: Family, output: u64) -> bool {
    let format = match family {
        Family::F32ToNarrow { format, .. } => format,
        Family::NarrowToF32 { .. } => Format::Binary32,
        _ => panic!("{family} is not a conversion between f32 and a narrow format"),
    };
    class(format, output) == Class::Nan
}

/// `num / den` (`den > 0`, `num < 2^63`) rounded to nearest, ties to even, onto
/// `format`'s grid, on integers: the binade `2^e <= num/den < 2^(e+1)` by exact
/// comparison, its grid step `2^step` (the subnormal step below the smallest normal),
/// the quotient `num / (den · 2^step)` and its remainder compared with half the divisor.
/// Shares nothing with `shared`.
pub fn div_to_narrow(format: NarrowFormat, num: u64, den: u64) -> Rounded {
    assert!(den > 0 && num < 1 << 63, "div_to_narrow({num}, {den})");
    if num == 0 {
        return Rounded::Finite(0);
    }
    let man = format.mantissa_bits as i32;
    let bias = (1i32 << (format.exponent_bits - 1)) - 1;
    // num/den compared with 2^e, exactly: num · 2^-e against den, or num against den · 2^e.
    let at_least = |e: i32| -> bool {
        if e >= 0 { u128::from(num) >= u128::from(den) << e } else { u128::from(num) << -e >= u128::from(den) }
    };
    let mut binade = (64 - num.leading_zeros() as i32) - (64 - den.leading_zeros() as i32);
    while !at_least(binade) {
        binade -= 1;
    }
    while at_least(binade + 1) {
        binade += 1;
    }
    let step = binade.max(1 - bias) - man;
    // quotient = floor(num / (den · 2^step)); both sides scaled to integers.
    let (n, d) = if step >= 0 {
        (u128::from(num), u128::from(den) << step)
    } else {
        (u128::from(num) << -step, u128::from(den))
    };
    let (quotient, remainder) = (n / d, n % d);
    let round_up = match (2 * remainder).cmp(&d) {
        core::cmp::Ordering::Greater => true,
        core::cmp::Ordering::Equal => quotient % 2 == 1,
        core::cmp::Ordering::Less => false,
    };
    let quotient =
        u64::try_from(quotient).expect("at most 2^(mantissa_bits + 1) steps in a binade") + u64::from(round_up);
    encode_rounded(format, quotient, step)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nan_output_is_judged_in_the_result_format() {
        let to = |format| Family::F32ToNarrow { format, overflow: Overflow::Standard };
        // The same bits judged in each format: 0x7F is E4M3's NaN, a binary16 subnormal.
        assert!(conversion_output_is_nan(to(Format::Fp8E4m3), 0x7F));
        assert!(!conversion_output_is_nan(to(Format::Fp8E4m3), 0x7E));
        assert!(conversion_output_is_nan(to(Format::Fp8E5m2), 0xFD));
        assert!(!conversion_output_is_nan(to(Format::Fp8E5m2), 0x7C), "infinity");
        assert!(conversion_output_is_nan(to(Format::Binary16), 0x7FFF));
        assert!(!conversion_output_is_nan(to(Format::Binary16), 0x7F));
        assert!(conversion_output_is_nan(to(Format::Bfloat16), 0xFFC0));
        let widen = Family::NarrowToF32 { format: Format::Binary16 };
        assert!(conversion_output_is_nan(widen, 0x7FC0_0000));
        assert!(!conversion_output_is_nan(widen, 0x7F80_0000));
    }
}
