//! IEEE-style classification shared by every format module, and the macro that writes
//! the bit-field constants and predicates of an IEEE 754 interchange format.

/// The class of an encoded value, as [`core::num::FpCategory`] but storable as one byte
/// (the discriminant) so CPU and GPU results compare bit for bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Class {
    /// ±0.
    Zero = 0,
    /// Non-zero with the minimum exponent field.
    Subnormal = 1,
    /// Finite, neither zero nor subnormal.
    Normal = 2,
    /// ±infinity.
    Infinite = 3,
    /// Any NaN.
    Nan = 4,
}

impl Class {
    /// Every class, in discriminant order.
    pub const ALL: [Class; 5] = [Class::Zero, Class::Subnormal, Class::Normal, Class::Infinite, Class::Nan];

    /// The class with discriminant `code`, if any.
    pub const fn from_code(code: u8) -> Option<Class> {
        match code {
            0 => Some(Class::Zero),
            1 => Some(Class::Subnormal),
            2 => Some(Class::Normal),
            3 => Some(Class::Infinite),
            4 => Some(Class::Nan),
            _ => None,
        }
    }
}

impl crate::Stored for Class {
    type Bits = u8;
    #[inline(always)]
    fn to_stored(self) -> u8 {
        self as u8
    }
}

/// Writes the constants and classification functions of an IEEE 754-style binary
/// format (infinity = exponent all ones with zero mantissa, NaN = exponent all ones with
/// non-zero mantissa) stored in `$bits` with `$exp` exponent bits and `$man` mantissa
/// bits, the sign in the top bit.
///
/// Every function is exact on every encoding: the magnitude's encoding (sign cleared)
/// orders finite < +inf < NaN, so each test is one mask and one integer compare.
macro_rules! ieee_format {
    ($bits:ty, exponent_bits: $exp:expr, mantissa_bits: $man:expr) => {
        /// The sign bit.
        pub const SIGN_MASK: $bits = 1 << ($exp + $man);
        /// The biased exponent field.
        pub const EXP_MASK: $bits = ((1 << $exp) - 1) << $man;
        /// The mantissa (trailing significand) field.
        pub const MAN_MASK: $bits = (1 << $man) - 1;
        /// Everything but the sign.
        pub const ABS_MASK: $bits = !SIGN_MASK;
        /// Encoding of +infinity; every finite magnitude encodes below it, every NaN above.
        pub const POS_INFINITY: $bits = EXP_MASK;

        /// `true` iff the value is finite (zero, subnormal or normal). Exact.
        #[inline]
        pub const fn is_finite(b: $bits) -> bool {
            b & ABS_MASK < POS_INFINITY
        }

        /// `true` iff the value is ±infinity. Exact.
        #[inline]
        pub const fn is_infinite(b: $bits) -> bool {
            b & ABS_MASK == POS_INFINITY
        }

        /// `true` iff the value is a NaN (any sign or payload). Exact.
        #[inline]
        pub const fn is_nan(b: $bits) -> bool {
            b & ABS_MASK > POS_INFINITY
        }

        /// The class of the value; branch-free (selects on the exponent and mantissa
        /// tests). Exact on every encoding.
        #[inline]
        pub const fn classify(b: $bits) -> $crate::Class {
            let exponent = b & EXP_MASK;
            let mantissa_zero = b & MAN_MASK == 0;
            match (exponent == 0, exponent == EXP_MASK, mantissa_zero) {
                (true, _, true) => $crate::Class::Zero,
                (true, _, false) => $crate::Class::Subnormal,
                (_, true, true) => $crate::Class::Infinite,
                (_, true, false) => $crate::Class::Nan,
                _ => $crate::Class::Normal,
            }
        }
    };
}
pub(crate) use ieee_format;
