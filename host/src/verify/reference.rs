//! The independent exact reference, one per family.
//!
//! Nothing here calls `shared`'s computations: only its descriptive enums `Family` and
//! `Format` are used, and `Family::domain` (through [`crate::verify::domain`]) only to reject
//! inputs outside a family's domain, never to compute a result. Encodings are decoded
//! field by field with integer operations from the field widths each format's
//! specification gives; quotients are rounded to f32 with integer arithmetic on the
//! exact rational (round to nearest, ties to even); f32 → UNORM multiplies the float's
//! integer significand exactly and rounds by comparing the remainder with one half. No
//! floating-point operation is involved anywhere.
//!
//! [`expected`] is the one entry point; [`expected_many`] is the same for a slice.

use shared::narrow::Overflow;
use shared::{Family, Format};

/// IEEE 754 class of a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FpClass {
    /// ±0.
    Zero,
    /// Non-zero with the minimum exponent field.
    Subnormal,
    /// Everything finite and not zero or subnormal.
    Normal,
    /// ±inf.
    Infinite,
    /// Any NaN.
    Nan,
}

impl FpClass {
    /// Every class, in code order.
    pub const ALL: [FpClass; 5] = [FpClass::Zero, FpClass::Subnormal, FpClass::Normal, FpClass::Infinite, FpClass::Nan];

    /// `true` for zero, subnormal and normal.
    pub const fn is_finite(self) -> bool {
        matches!(self, FpClass::Zero | FpClass::Subnormal | FpClass::Normal)
    }

    /// The stored byte of a `Classify` result, as the README specifies it: zero 0,
    /// subnormal 1, normal 2, infinite 3, NaN 4.
    pub const fn code(self) -> u8 {
        match self {
            FpClass::Zero => 0,
            FpClass::Subnormal => 1,
            FpClass::Normal => 2,
            FpClass::Infinite => 3,
            FpClass::Nan => 4,
        }
    }
}

/// How a format encodes its special values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Specials {
    /// IEEE 754: exponent field all ones is ±inf (mantissa zero) or NaN (non-zero).
    Ieee,
    /// OCP FP8 E4M3: no infinities; exponent field all ones is an ordinary binade except
    /// for mantissa all ones, the only NaN (S.1111.111).
    NanOnlyAtAllOnes,
    /// FNUZ ("finite, NaN, unsigned zero"): no infinities, every exponent field an
    /// ordinary binade, and the encoding of -0 (sign set, all else clear) the only NaN.
    NanAtNegativeZero,
}

/// The bit fields of a format: sign on top, then the exponent, then the mantissa.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldLayout {
    /// Exponent field width.
    pub exponent_bits: u32,
    /// Mantissa (trailing significand) field width.
    pub mantissa_bits: u32,
    /// Where the special values (infinities, NaNs) are.
    pub specials: Specials,
}

/// The field widths of `format`, from its specification (IEEE 754-2019 table 3.5,
/// Google Brain bfloat16, OCP 8-bit Floating Point Specification rev. 1.0, and for FNUZ
/// Noune et al., arXiv:2206.02915, section 3).
pub const fn layout(format: Format) -> FieldLayout {
    let (exponent_bits, mantissa_bits, specials) = match format {
        Format::Binary16 => (5, 10, Specials::Ieee),
        Format::Bfloat16 => (8, 7, Specials::Ieee),
        Format::Binary32 => (8, 23, Specials::Ieee),
        Format::Binary64 => (11, 52, Specials::Ieee),
        Format::Fp8E4m3 => (4, 3, Specials::NanOnlyAtAllOnes),
        Format::Fp8E5m2 => (5, 2, Specials::Ieee),
        Format::Fp8E4m3Fnuz => (4, 3, Specials::NanAtNegativeZero),
        Format::Fp8E5m2Fnuz => (5, 2, Specials::NanAtNegativeZero),
    };
    FieldLayout { exponent_bits, mantissa_bits, specials }
}

/// The [`Fields`] type of a format, its widths taken from [`layout`].
macro_rules! fields {
    ($format:expr) => {
        Fields::<
            { layout($format).exponent_bits },
            { layout($format).mantissa_bits },
            { layout($format).specials as u8 },
        >
    };
}

/// Evaluates `$body` with `$fields` bound to the [`Fields`] value of `$format`.
macro_rules! with_fields {
    ($format:expr, |$fields:ident| $body:expr) => {
        match $format {
            Format::Binary16 => {
                let $fields = fields!(Format::Binary16);
                $body
            }
            Format::Bfloat16 => {
                let $fields = fields!(Format::Bfloat16);
                $body
            }
            Format::Binary32 => {
                let $fields = fields!(Format::Binary32);
                $body
            }
            Format::Binary64 => {
                let $fields = fields!(Format::Binary64);
                $body
            }
            Format::Fp8E4m3 => {
                let $fields = fields!(Format::Fp8E4m3);
                $body
            }
            Format::Fp8E5m2 => {
                let $fields = fields!(Format::Fp8E5m2);
                $body
            }
            Format::Fp8E4m3Fnuz => {
                let $fields = fields!(Format::Fp8E4m3Fnuz);
                $body
            }
            Format::Fp8E5m2Fnuz => {
                let $fields = fields!(Format::Fp8E5m2Fnuz);
                $body
            }
        }
    };
}

/// Class of the encoding `bits` of `format` (bits above the format's width ignored),
/// decoded field by field.
pub fn class(format: Format, bits: u64) -> FpClass {
    with_fields!(format, |fields| fields.class(bits))
}

/// A format's field widths as constants (from [`layout`]), so that the decoding loops
/// of [`expected_many`] compile to straight-line code per format.
#[derive(Clone, Copy, Debug)]
struct Fields<const EXPONENT_BITS: u32, const MANTISSA_BITS: u32, const SPECIALS: u8>;

impl<const EXPONENT_BITS: u32, const MANTISSA_BITS: u32, const SPECIALS: u8>
    Fields<EXPONENT_BITS, MANTISSA_BITS, SPECIALS>
{
    const EXPONENT_ALL_ONES: u64 = (1 << EXPONENT_BITS) - 1;
    const MANTISSA_ALL_ONES: u64 = (1 << MANTISSA_BITS) - 1;

    const WIDTH: u32 = 1 + EXPONENT_BITS + MANTISSA_BITS;

    /// See [`packed_finite_mask`].
    #[inline(always)]
    fn packed_finite_mask(self, word: u32) -> u32 {
        let lane_max = (1u32 << Self::WIDTH) - 1;
        let mut mask = 0;
        for lane in 0..u32::BITS / Self::WIDTH {
            let shift = lane * Self::WIDTH;
            if self.class(u64::from((word >> shift) & lane_max)).is_finite() {
                mask |= lane_max << shift;
            }
        }
        mask
    }

    #[inline(always)]
    fn class(self, bits: u64) -> FpClass {
        let exponent = (bits >> MANTISSA_BITS) & Self::EXPONENT_ALL_ONES;
        let mantissa = bits & Self::MANTISSA_ALL_ONES;
        let negative = (bits >> (EXPONENT_BITS + MANTISSA_BITS)) & 1 == 1;
        let top_binade = exponent == Self::EXPONENT_ALL_ONES;
        let (ieee, fnuz) = (SPECIALS == Specials::Ieee as u8, SPECIALS == Specials::NanAtNegativeZero as u8);
        let e4m3 = SPECIALS == Specials::NanOnlyAtAllOnes as u8;
        match exponent {
            0 if mantissa == 0 && fnuz && negative => FpClass::Nan,
            0 if mantissa == 0 => FpClass::Zero,
            0 => FpClass::Subnormal,
            _ if ieee && top_binade && mantissa == 0 => FpClass::Infinite,
            _ if ieee && top_binade => FpClass::Nan,
            _ if e4m3 && top_binade && mantissa == Self::MANTISSA_ALL_ONES => FpClass::Nan,
            _ => FpClass::Normal,
        }
    }
}

/// Class of a binary16 encoding: [`class`] for [`Format::Binary16`].
pub fn binary16_class(bits: u16) -> FpClass {
    class(Format::Binary16, u64::from(bits))
}

/// The packed finite mask of `word` holding `32 / bits` lanes of `format`: lane `i`
/// (bits `i·L ..`) all ones iff that lane's encoding is finite.
pub fn packed_finite_mask(format: Format, word: u32) -> u32 {
    with_fields!(format, |fields| fields.packed_finite_mask(word))
}

/// The f32 nearest to `num / den` (ties to even), computed on integers.
///
/// Returns `None` when the quotient is outside the f32 normal range (or `den == 0`);
/// every quotient this crate asks for is zero or at least `2^-32`.
pub fn div_to_f32(num: u64, den: u64) -> Option<f32> {
    if den == 0 {
        return None;
    }
    if num == 0 {
        return Some(0.0);
    }
    // Scale so that 2^23 <= n / d < 2^24; then value = (n / d) * 2^-shift.
    let (mut n, mut d) = (u128::from(num), u128::from(den));
    let mut shift: i32 = 0;
    while n < d << 23 {
        n <<= 1;
        shift += 1;
    }
    while n >= d << 24 {
        d <<= 1;
        shift -= 1;
    }
    let (quotient, remainder) = (n / d, n % d);
    let round_up = 2 * remainder > d || (2 * remainder == d && quotient & 1 == 1);
    let mut significand = quotient + u128::from(round_up);
    if significand == 1 << 24 {
        significand = 1 << 23;
        shift -= 1;
    }
    // value = significand * 2^-shift = 1.f * 2^(23 - shift)
    let biased_exponent = 23 - shift + 127;
    if !(1..=254).contains(&biased_exponent) {
        return None;
    }
    let fraction = (significand - (1 << 23)) as u32;
    Some(f32::from_bits(((biased_exponent as u32) << 23) | fraction))
}

/// The f32 encoding of the UNORM `bits`-bit code `code`: `code / (2^bits - 1)`.
pub fn unorm_to_f32_bits(bits: u32, code: u64) -> u32 {
    let denominator = (1u64 << bits) - 1;
    div_to_f32(code, denominator).expect("a UNORM quotient is zero or in [2^-16, 1]").to_bits()
}

/// The f32 encoding of the SNORM `bits`-bit two's complement code `code` (its low
/// `bits` bits): `max(v / (2^(bits-1) - 1), -1)`; code 0 gives +0.0.
pub fn snorm_to_f32_bits(bits: u32, code: u64) -> u32 {
    const SIGN: u32 = 1 << 31;
    let half = 1u64 << (bits - 1);
    let denominator = half - 1;
    let negative = code & half != 0;
    let magnitude = if negative { (1u64 << bits) - code } else { code };
    if negative && magnitude >= denominator {
        return SIGN | 127 << 23; // -1.0: biased exponent 127, mantissa 0
    }
    let value = div_to_f32(magnitude, denominator).expect("an SNORM quotient is zero or in [2^-15, 1]").to_bits();
    if negative { SIGN | value } else { value }
}

/// f32 encoding `f` → UNORM code of `bits` bits (`bits <= 32`), with whether the exact
/// product was a tie (exactly halfway between two integers; rounded up).
///
/// NaN → 0; negative values, -0 and -inf → 0; values >= 1 and +inf → `2^bits - 1`;
/// otherwise `c = significand · 2^-shift` and `c · (2^bits - 1)` is the integer
/// `significand · (2^bits - 1)` shifted right by `shift`, rounded by comparing the
/// shifted-out remainder with half of `2^shift`.
pub fn f32_to_unorm_exact(bits: u32, f: u32) -> (u64, bool) {
    assert!(bits <= 32, "UNORM{bits}");
    let max = (1u64 << bits) - 1;
    let negative = f >> 31 == 1;
    let exponent = (f >> 23) & 0xFF;
    let mantissa = f & 0x7F_FFFF;
    match (exponent, negative) {
        (0xFF, _) if mantissa != 0 => return (0, false),
        (_, true) => return (0, false),
        (127.., false) => return (max, false),
        _ => {}
    }
    let significand = if exponent == 0 { u64::from(mantissa) } else { u64::from(mantissa | 1 << 23) };
    let shift = 150 - exponent.max(1); // c = significand · 2^-shift, 24 <= shift <= 149
    let product = significand * max; // < 2^56
    if shift >= u64::BITS {
        return (0, false); // c · max < 2^-7: rounds to 0 and is no tie
    }
    let quotient = product >> shift;
    let remainder = product - (quotient << shift);
    let half = 1u64 << (shift - 1);
    (quotient + u64::from(remainder >= half), remainder == half)
}

/// How a family's stored result is to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// One byte, 0 or 1.
    Bool,
    /// One byte, [`FpClass::code`].
    ClassCode,
    /// A `u32` lane mask.
    LaneMask,
    /// The bits of an f32.
    F32,
    /// The bits of a 16-bit floating-point format (binary16 or bfloat16).
    Float16(Format),
    /// An unsigned integer code.
    UnormCode,
    /// The bits of a value of this narrow format.
    Narrow(Format),
}

/// How `family`'s results are stored.
pub const fn output_kind(family: Family) -> OutputKind {
    match family {
        Family::IsFinite(_) | Family::IsNan(_) | Family::IsInfinite(_) => OutputKind::Bool,
        Family::Classify(_) => OutputKind::ClassCode,
        Family::PackedIsFinite(_) => OutputKind::LaneMask,
        Family::UnormToF32 { .. } | Family::SnormToF32 { .. } => OutputKind::F32,
        Family::UnormToF16 { .. } => OutputKind::Float16(Format::Binary16),
        Family::UnormToBf16 { .. } => OutputKind::Float16(Format::Bfloat16),
        Family::F32ToUnorm { .. } => OutputKind::UnormCode,
        Family::F32ToNarrow { format, .. } => OutputKind::Narrow(format),
        Family::NarrowToF32 { .. } => OutputKind::F32,
    }
}

/// The exact result of `family` on input bits `input`, as stored bits.
///
/// Panics if `input` is outside the family's domain (a caller bug, never user input).
pub fn expected(family: Family, input: u64) -> u64 {
    let mut out = [0];
    expected_many(family, &[input], &mut out);
    out[0]
}

/// [`expected`] for each of `inputs`, into `out` (same length).
///
/// Panics if the lengths differ or an input is outside the family's domain.
pub fn expected_many(family: Family, inputs: &[u64], out: &mut [u64]) {
    assert_eq!(inputs.len(), out.len(), "expected_many: {} inputs, {} outputs", inputs.len(), out.len());
    let outside = inputs.iter().fold(0, |acc, &x| acc | x) & !family.domain().input_mask();
    if outside != 0 {
        let bad = inputs.iter().find(|&&x| !family.domain().contains(x));
        panic!("{:#x} is outside the domain of {family}", bad.copied().unwrap_or(outside));
    }
    #[inline(always)]
    fn fill(inputs: &[u64], out: &mut [u64], f: impl Fn(u64) -> u64) {
        for (o, &x) in out.iter_mut().zip(inputs) {
            *o = f(x);
        }
    }
    match family {
        Family::IsFinite(format) => {
            with_fields!(format, |fields| fill(inputs, out, |x| u64::from(fields.class(x).is_finite())))
        }
        Family::IsNan(format) => {
            with_fields!(format, |fields| fill(inputs, out, |x| u64::from(fields.class(x) == FpClass::Nan)))
        }
        Family::IsInfinite(format) => {
            with_fields!(format, |fields| fill(inputs, out, |x| u64::from(fields.class(x) == FpClass::Infinite)))
        }
        Family::Classify(format) => {
            with_fields!(format, |fields| fill(inputs, out, |x| u64::from(fields.class(x).code())))
        }
        Family::PackedIsFinite(format) => {
            with_fields!(format, |fields| fill(inputs, out, |x| u64::from(fields.packed_finite_mask(x as u32))))
        }
        Family::UnormToF32 { bits } => fill(inputs, out, |x| u64::from(unorm_to_f32_bits(bits, x))),
        Family::SnormToF32 { bits } => fill(inputs, out, |x| u64::from(snorm_to_f32_bits(bits, x))),
        Family::UnormToF16 { bits } => fill(inputs, out, |x| unorm_to_narrow_bits(BINARY16, bits, x)),
        Family::UnormToBf16 { bits } => fill(inputs, out, |x| unorm_to_narrow_bits(BFLOAT16, bits, x)),
        Family::F32ToUnorm { bits } => fill(inputs, out, |x| f32_to_unorm_exact(bits, x as u32).0),
        Family::F32ToNarrow { format, overflow } => {
            let conversion = NarrowConversion::new(format, overflow);
            fill(inputs, out, |x| conversion.convert(x as u32))
        }
        Family::NarrowToF32 { format } => fill(inputs, out, |x| u64::from(narrow_to_f32_bits(format, x))),
    }
}

/// Distance between two stored results in units in the last place: for f32, binary16
/// and bfloat16 results in ULPs of their format (0 when equal, `u64::MAX` when either is NaN), for UNORM codes in codes;
/// `None` for families whose results are not numbers (booleans, classes, masks).
pub fn ulp_distance(family: Family, a: u64, b: u64) -> Option<u64> {
    match output_kind(family) {
        OutputKind::Bool | OutputKind::ClassCode | OutputKind::LaneMask => None,
        OutputKind::F32 => Some(f32_ulp_distance(a as u32, b as u32)),
        OutputKind::Float16(format) => Some(float16_ulp_distance(format, a as u16, b as u16)),
        OutputKind::UnormCode => Some(a.abs_diff(b)),
        OutputKind::Narrow(format) => Some(narrow_ulp_distance(format, a, b)),
    }
}

/// Distance in ULPs between two encodings of the narrow `format`, counting across zero;
/// `u64::MAX` if either is NaN.
pub fn narrow_ulp_distance(format: Format, a: u64, b: u64) -> u64 {
    if class(format, a) == FpClass::Nan || class(format, b) == FpClass::Nan {
        return u64::MAX;
    }
    let sign = 1u64 << (format.bits() - 1);
    let line = |bits: u64| -> i64 {
        let magnitude = (bits & (sign - 1)) as i64;
        if bits & sign != 0 { -magnitude } else { magnitude }
    };
    line(a).abs_diff(line(b))
}

/// Distance in ULPs between two f32 bit patterns, counting across zero (+0 and -0 are 0
/// apart); `u64::MAX` if either is NaN.
pub fn f32_ulp_distance(a: u32, b: u32) -> u64 {
    let is_nan = |bits: u32| bits & 0x7FFF_FFFF > 0x7F80_0000; // exponent all ones, mantissa non-zero
    if is_nan(a) || is_nan(b) {
        return u64::MAX;
    }
    // Map to a monotone integer line: negative values mirrored below zero.
    let line = |bits: u32| -> i64 {
        let magnitude = i64::from(bits & 0x7FFF_FFFF);
        if bits >> 31 == 1 { -magnitude } else { magnitude }
    };
    line(a).abs_diff(line(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn div_to_f32_rounds_ties_to_even_and_carries() {
        // 1/3 in binary: 0.0101..., nearest f32 is 0x3EAAAAAB.
        assert_eq!(div_to_f32(1, 3).unwrap().to_bits(), 0x3EAA_AAAB);
        // Exact powers of two and integers.
        assert_eq!(div_to_f32(255, 255), Some(1.0));
        assert_eq!(div_to_f32(3, 4), Some(0.75));
        // (2^24 + 1) / 1 is a tie between 2^24 and 2^24 + 2: even significand wins.
        assert_eq!(div_to_f32((1 << 24) + 1, 1), Some(16_777_216.0));
        // (2^24 + 3) / 1 is a tie between 2^24 + 2 and 2^24 + 4: rounds to +4 (even).
        assert_eq!(div_to_f32((1 << 24) + 3, 1), Some(16_777_220.0));
        // Round-up that carries into the next binade: (2^25 - 1) / 1 → 2^25.
        assert_eq!(div_to_f32((1 << 25) - 1, 1), Some(33_554_432.0));
        assert_eq!(div_to_f32(1, 0), None);
        assert_eq!(div_to_f32(0, 7), Some(0.0));
    }

    #[test]
    fn ulp_distance_counts_across_zero() {
        assert_eq!(f32_ulp_distance(0x0000_0001, 0x8000_0001), 2);
        assert_eq!(f32_ulp_distance(0x3F80_0000, 0x3F80_0001), 1);
        assert_eq!(f32_ulp_distance(0x0000_0000, 0x8000_0000), 0);
        assert_eq!(f32_ulp_distance(0x7FC0_0000, 0x3F80_0000), u64::MAX);
    }

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

/// A narrower floating-point format, described by numbers a reader can check against its
/// specification, for the narrowing references below.
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
pub fn round_f32_to(format: NarrowFormat, bits: u32) -> Rounded {
    let biased = i32::try_from((bits >> 23) & 0xFF).expect("8 bits");
    let fraction = u64::from(bits & 0x007F_FFFF);
    // |x| = significand · 2^exponent exactly.
    let (significand, exponent) = if biased == 0 { (fraction, -149) } else { (fraction | 1 << 23, biased - 150) };
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
        FpClass::Nan => 0x7F80_0000 | (mantissa as u32) << (23 - man),
        FpClass::Infinite => 0x7F80_0000,
        FpClass::Zero | FpClass::Subnormal => exact_f32_bits(mantissa, 1 - bias - man as i32),
        FpClass::Normal => exact_f32_bits(mantissa | 1 << man, exponent_field as i32 - bias - man as i32),
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
        let sign = u64::from(x >> 31) << (self.width - 1);
        let abs = x & 0x7FFF_FFFF;
        let man = self.format.mantissa_bits;
        let exponent_all_ones = ((1u64 << self.format.exponent_bits) - 1) << man;
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
            match round_f32_to(self.format, abs) {
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
    let from_class = |class: FpClass| match class {
        FpClass::Zero => InputClass::Zero,
        FpClass::Subnormal => InputClass::Subnormal,
        FpClass::Normal => InputClass::Normal,
        FpClass::Infinite => InputClass::Infinite,
        FpClass::Nan => InputClass::Nan,
    };
    match family {
        Family::F32ToNarrow { format, .. } => {
            let narrow = narrow_format(format).unwrap_or_else(|| panic!("{family}: not a narrowing target"));
            match class(Format::Binary32, input) {
                FpClass::Subnormal | FpClass::Normal => match round_f32_to(narrow, input as u32 & 0x7FFF_FFFF) {
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
    class(format, output) == FpClass::Nan
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

/// The encoding of the UNORM `bits`-bit code `code` (`bits <= 32`) as `format`:
/// `code / (2^bits - 1)` rounded to nearest, ties to even ([`div_to_narrow`]).
pub fn unorm_to_narrow_bits(format: NarrowFormat, bits: u32, code: u64) -> u64 {
    match div_to_narrow(format, code, (1u64 << bits) - 1) {
        Rounded::Finite(encoding) => encoding,
        Rounded::Overflow => unreachable!("a UNORM quotient is at most 1"),
    }
}

/// Distance in ULPs between two encodings of a 16-bit floating-point `format`, counting
/// across zero; `u64::MAX` if either is NaN.
pub fn float16_ulp_distance(format: Format, a: u16, b: u16) -> u64 {
    if class(format, u64::from(a)) == FpClass::Nan || class(format, u64::from(b)) == FpClass::Nan {
        return u64::MAX;
    }
    let line = |bits: u16| -> i64 {
        let magnitude = i64::from(bits & 0x7FFF);
        if bits >> 15 == 1 { -magnitude } else { magnitude }
    };
    line(a).abs_diff(line(b))
}
