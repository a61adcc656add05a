//! The two OCP 8-bit floating-point formats (OCP "8-bit Floating Point Specification
//! (OFP8)" rev. 1.0): classification on the raw bits, exact on all 256 encodings each.

/// E5M2: 1 sign, 5 exponent, 2 mantissa bits, IEEE-like (±inf at S.11111.00, NaN at
/// S.11111.{01,10,11}).
pub mod e5m2 {
    crate::class::ieee_format!(u8, exponent_bits: 5, mantissa_bits: 2);
}

/// E4M3: 1 sign, 4 exponent, 3 mantissa bits, with no infinities: the exponent field
/// all ones is an ordinary binade (up to ±448), and NaN is only S.1111.111.
pub mod e4m3 {
    use crate::Class;

    /// The sign bit.
    pub const SIGN_MASK: u8 = 0b1_0000_000;
    /// The biased exponent field.
    pub const EXP_MASK: u8 = 0b0_1111_000;
    /// The mantissa field.
    pub const MAN_MASK: u8 = 0b0_0000_111;
    /// Everything but the sign.
    pub const ABS_MASK: u8 = !SIGN_MASK;
    /// The magnitude encoding of NaN (S.1111.111); E4M3 has no other.
    pub const NAN_ABS: u8 = 0b0_1111_111;
    /// Largest finite magnitude, 448 = 1.75 × 2^8.
    pub const MAX_ABS: u8 = 0b0_1111_110;
    /// Encoding of the smallest positive normal value, 2^-6.
    pub const MIN_NORMAL: u8 = 0b0_0001_000;

    /// `true` iff the value is finite: everything but the two NaN encodings. Exact.
    #[inline]
    pub const fn is_finite(b: u8) -> bool {
        b & ABS_MASK != NAN_ABS
    }

    /// Always `false`: E4M3 has no infinities.
    #[inline]
    pub const fn is_infinite(_b: u8) -> bool {
        false
    }

    /// `true` iff the value is NaN (0x7F or 0xFF). Exact.
    #[inline]
    pub const fn is_nan(b: u8) -> bool {
        b & ABS_MASK == NAN_ABS
    }

    /// The class of the value (never [`Class::Infinite`]), whatever the sign. Branch-free:
    /// with the sign cleared, zero < subnormals (exponent field 0) < 0b0_0001_000 ..=
    /// normals < NaN (the largest magnitude encoding), so the class's code is a count of
    /// compares, NaN counting twice to skip the code of infinity. Exact on all 256
    /// encodings.
    #[inline]
    pub const fn classify(b: u8) -> Class {
        let abs = b & ABS_MASK;
        let count = (abs != 0) as u8 + (abs >= MIN_NORMAL) as u8 + 2 * (abs == NAN_ABS) as u8;
        Class::from_threshold_count(count)
    }
}
