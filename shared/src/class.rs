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
    #[inline]
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

    /// `true` for zero, subnormal and normal.
    #[inline]
    pub const fn is_finite(self) -> bool {
        matches!(self, Class::Zero | Class::Subnormal | Class::Normal)
    }

    /// The class with code `count`, every count above 4 reading as [`Class::Nan`]. The
    /// classifiers compute the code as a count of thresholds (see [`ieee_format!`]), so
    /// this compiles to at most a clamp, never a branch.
    #[inline(always)]
    pub(crate) const fn from_threshold_count(count: u8) -> Class {
        match count {
            0 => Class::Zero,
            1 => Class::Subnormal,
            2 => Class::Normal,
            3 => Class::Infinite,
            _ => Class::Nan,
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
/// # Why one compare per test is exact
///
/// With the sign cleared, the encodings are ordered like the magnitudes they encode, and
/// the classes occupy consecutive ranges:
///
/// ```text
/// 0 (zero) < subnormals < MIN_NORMAL ..= normals < POS_INFINITY < NaNs
/// ```
///
/// so each predicate is one mask and one integer compare, and the class's code
/// ([`crate::Class`]: zero 0, subnormal 1, normal 2, infinite 3, NaN 4) is the number of
/// range boundaries the magnitude reaches: four compares added up, no branch. Every
/// function is proven on every encoding for the 8-, 16- and 32-bit formats and on the
/// sampled domain for binary64 (`cargo test`, `bitexact verify`).
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
        /// Encoding of the smallest positive normal value: exponent field 1, mantissa 0.
        pub const MIN_NORMAL: $bits = 1 << $man;
        /// Encoding of +infinity; every finite magnitude encodes below it, every NaN above.
        pub const POS_INFINITY: $bits = EXP_MASK;

        /// `true` iff the value is finite (zero, subnormal or normal), whatever the sign.
        /// Exact on every encoding: the exponent field is not all ones.
        #[inline]
        pub const fn is_finite(b: $bits) -> bool {
            b & EXP_MASK != EXP_MASK
        }

        /// `true` iff the value is ±infinity. Exact on every encoding.
        #[inline]
        pub const fn is_infinite(b: $bits) -> bool {
            b & ABS_MASK == POS_INFINITY
        }

        /// `true` iff the value is a NaN (any sign or payload). Exact on every encoding.
        #[inline]
        pub const fn is_nan(b: $bits) -> bool {
            b & ABS_MASK > POS_INFINITY
        }

        /// The class of the value, whatever the sign or NaN payload. Branch-free: the
        /// class's code is the number of class boundaries the magnitude reaches (see the
        /// macro's docs). Exact on every encoding.
        #[inline]
        pub const fn classify(b: $bits) -> $crate::Class {
            let abs = b & ABS_MASK;
            let count =
                (abs != 0) as u8 + (abs >= MIN_NORMAL) as u8 + (abs >= POS_INFINITY) as u8 + (abs > POS_INFINITY) as u8;
            $crate::Class::from_threshold_count(count)
        }
    };
}
pub(crate) use ieee_format;
