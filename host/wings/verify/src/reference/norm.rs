//! UNORM and SNORM codes: their exact f32 values (an integer division rounded to
//! nearest, ties to even), f32 → UNORM by exact integer products, and UNORM → binary16 /
//! bfloat16 through [`super::narrow::div_to_narrow`].

use super::narrow::{NarrowFormat, Rounded, div_to_narrow};

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

/// The encoding of the UNORM `bits`-bit code `code` (`bits <= 32`) as `format`:
/// `code / (2^bits - 1)` rounded to nearest, ties to even ([`div_to_narrow`]).
pub fn unorm_to_narrow_bits(format: NarrowFormat, bits: u32, code: u64) -> u64 {
    match div_to_narrow(format, code, (1u64 << bits) - 1) {
        Rounded::Finite(encoding) => encoding,
        Rounded::Overflow => unreachable!("a UNORM quotient is at most 1"),
    }
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
}
