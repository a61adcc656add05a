//! Distances between two results in units in the last place of their format (or in
//! codes, for UNORM results).

use super::classify::class;
use super::{OutputKind, output_kind};
use shared::{Class, Family, Format};

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
    if class(format, a) == Class::Nan || class(format, b) == Class::Nan {
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

/// Distance in ULPs between two encodings of a 16-bit floating-point `format`, counting
/// across zero; `u64::MAX` if either is NaN.
pub fn float16_ulp_distance(format: Format, a: u16, b: u16) -> u64 {
    if class(format, u64::from(a)) == Class::Nan || class(format, u64::from(b)) == Class::Nan {
        return u64::MAX;
    }
    let line = |bits: u16| -> i64 {
        let magnitude = i64::from(bits & 0x7FFF);
        if bits >> 15 == 1 { -magnitude } else { magnitude }
    };
    line(a).abs_diff(line(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulp_distance_counts_across_zero() {
        assert_eq!(f32_ulp_distance(0x0000_0001, 0x8000_0001), 2);
        assert_eq!(f32_ulp_distance(0x3F80_0000, 0x3F80_0001), 1);
        assert_eq!(f32_ulp_distance(0x0000_0000, 0x8000_0000), 0);
        assert_eq!(f32_ulp_distance(0x7FC0_0000, 0x3F80_0000), u64::MAX);
    }
}
