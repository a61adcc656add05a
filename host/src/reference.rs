//! The independent exact reference, one per family.
//!
//! Nothing here calls `shared`: binary16 classes are decoded from the fields with
//! integer operations, and quotients are rounded to f32 with integer arithmetic on the
//! exact rational (round to nearest, ties to even), never with f32 or f64 division.

use shared::Family;

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
    /// `true` for zero, subnormal and normal.
    pub const fn is_finite(self) -> bool {
        matches!(self, FpClass::Zero | FpClass::Subnormal | FpClass::Normal)
    }
}

/// Class of a binary16 encoding, decoded field by field: 1 sign bit, 5 exponent bits,
/// 10 mantissa bits.
pub const fn binary16_class(bits: u16) -> FpClass {
    let exponent = (bits >> 10) & 0b1_1111;
    let mantissa = bits & 0b11_1111_1111;
    match (exponent, mantissa) {
        (0, 0) => FpClass::Zero,
        (0, _) => FpClass::Subnormal,
        (0b1_1111, 0) => FpClass::Infinite,
        (0b1_1111, _) => FpClass::Nan,
        _ => FpClass::Normal,
    }
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

/// How a family's stored result is to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// One byte, 0 or 1.
    Bool,
    /// The bits of an f32.
    F32,
}

/// How `family`'s results are stored.
pub const fn output_kind(family: Family) -> OutputKind {
    match family {
        Family::Binary16IsFinite => OutputKind::Bool,
        Family::Unorm8ToF32 => OutputKind::F32,
    }
}

/// The exact result of `family` on input bits `input`, as stored bits.
///
/// Panics if `input` is outside the family's domain (a caller bug, never user input).
pub fn expected(family: Family, input: u64) -> u64 {
    assert!(input < family.domain_size(), "{input:#x} outside {}", family.name());
    match family {
        Family::Binary16IsFinite => u64::from(binary16_class(input as u16).is_finite()),
        Family::Unorm8ToF32 => {
            let value = div_to_f32(input, 255).expect("x/255 is zero or normal");
            u64::from(value.to_bits())
        }
    }
}

/// Distance in units in the last place between two stored f32 results (0 when equal,
/// `u64::MAX` when either is NaN); `None` for non-float families.
pub fn ulp_distance(family: Family, a: u64, b: u64) -> Option<u64> {
    match output_kind(family) {
        OutputKind::Bool => None,
        OutputKind::F32 => Some(f32_ulp_distance(a as u32, b as u32)),
    }
}

/// Distance in ULPs between two f32 bit patterns, counting across zero (+0 and -0 are 0
/// apart); `u64::MAX` if either is NaN.
pub fn f32_ulp_distance(a: u32, b: u32) -> u64 {
    if f32::from_bits(a).is_nan() || f32::from_bits(b).is_nan() {
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
}
