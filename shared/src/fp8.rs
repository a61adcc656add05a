//! 8-bit floating-point formats, classified on the raw bits, exact on all 256 encodings
//! each: the two OCP formats (OCP "8-bit Floating Point Specification (OFP8)" rev. 1.0)
//! and the two FNUZ formats (Noune et al., "8-bit Numerical Formats for Deep Neural
//! Networks", arXiv:2206.02915; AMD CDNA3 and Graphcore hardware; safetensors
//! `F8_E4M3FNUZ` / `F8_E5M2FNUZ`).

/// Writes the f32 → OCP FP8 conversions of the format with `exponent_bits` and
/// `mantissa_bits` into the module that invokes it, which defines `SIGN_MASK`, `NAN_ABS`
/// and `finite_magnitude` (what a value past the largest finite one gives: the one way
/// E5M2 and E4M3 differ here): `from_f32_bits` and its `_standard` and `_satfinite`
/// forms (with the docs given), and the same conversion with the rounding computed
/// without a branch (`_branch_free`) and by one f32 addition (`_by_addition`), each with
/// its two overflow forms. One body for both formats, so they cannot drift apart.
macro_rules! ocp_from_f32 {
    (
        exponent_bits: $exp:literal, mantissa_bits: $man:literal,
        $(#[$from:meta])* from_f32_bits;
        $(#[$standard:meta])* standard;
        $(#[$satfinite:meta])* satfinite;
    ) => {
        $(#[$from])*
        #[inline]
        pub const fn from_f32_bits(x: u32, overflow: Overflow) -> u8 {
            let sign = (x >> 24) as u8 & SIGN_MASK;
            let abs = x & 0x7FFF_FFFF;
            let magnitude = if abs > 0x7F80_0000 {
                NAN_ABS
            } else {
                finite_magnitude(crate::narrow::round_magnitude::<$exp, $man>(abs), overflow)
            };
            sign | magnitude
        }

        /// [`from_f32_bits`] with the rounding computed without a branch
        /// ([`crate::narrow::round_magnitude_branch_free`]), NaN's included (its `abs` is
        /// below 2^31 too), and the result selected: the same result on every input.
        #[inline]
        pub fn from_f32_bits_branch_free(x: u32, overflow: Overflow) -> u8 {
            let sign = (x >> 24) as u8 & SIGN_MASK;
            let abs = x & 0x7FFF_FFFF;
            let rounded = finite_magnitude(crate::narrow::round_magnitude_branch_free::<$exp, $man>(abs), overflow);
            sign | core::hint::select_unpredictable(abs > 0x7F80_0000, NAN_ABS, rounded)
        }

        /// [`from_f32_bits_branch_free`] with [`Overflow::Standard`].
        #[inline]
        pub fn from_f32_bits_standard_branch_free(x: u32) -> u8 {
            from_f32_bits_branch_free(x, Overflow::Standard)
        }

        /// [`from_f32_bits_branch_free`] with [`Overflow::SatFinite`].
        #[inline]
        pub fn from_f32_bits_satfinite_branch_free(x: u32) -> u8 {
            from_f32_bits_branch_free(x, Overflow::SatFinite)
        }

        /// [`from_f32_bits_branch_free`] with the rounding done by one f32 addition in the
        /// value's binade ([`crate::narrow::round_magnitude_in_binade`], the magnitude first
        /// clamped at [`crate::narrow::binade_rounding_limit`], which rounds past every finite
        /// code, infinity included): the same result on every input, the CPU's fastest
        /// software form. Not for GPU kernels (flush-to-zero there).
        #[inline]
        pub fn from_f32_bits_by_addition(x: u32, overflow: Overflow) -> u8 {
            let sign = (x >> 24) as u8 & SIGN_MASK;
            let abs = x & 0x7FFF_FFFF;
            let limit = crate::narrow::binade_rounding_limit::<$exp, $man>();
            let rounded = crate::narrow::round_magnitude_in_binade::<$exp, $man>(abs.min(limit));
            let rounded = finite_magnitude(rounded, overflow);
            sign | core::hint::select_unpredictable(abs > 0x7F80_0000, NAN_ABS, rounded)
        }

        /// [`from_f32_bits_by_addition`] with [`Overflow::Standard`].
        #[inline]
        pub fn from_f32_bits_standard_by_addition(x: u32) -> u8 {
            from_f32_bits_by_addition(x, Overflow::Standard)
        }

        /// [`from_f32_bits_by_addition`] with [`Overflow::SatFinite`].
        #[inline]
        pub fn from_f32_bits_satfinite_by_addition(x: u32) -> u8 {
            from_f32_bits_by_addition(x, Overflow::SatFinite)
        }

        $(#[$standard])*
        #[inline]
        pub const fn from_f32_bits_standard(x: u32) -> u8 {
            from_f32_bits(x, Overflow::Standard)
        }

        $(#[$satfinite])*
        #[inline]
        pub const fn from_f32_bits_satfinite(x: u32) -> u8 {
            from_f32_bits(x, Overflow::SatFinite)
        }
    };
}
use ocp_from_f32;

/// E5M2: 1 sign, 5 exponent, 2 mantissa bits, IEEE-like (±inf at S.11111.00, NaN at
/// S.11111.{01,10,11}).
pub mod e5m2 {
    crate::class::ieee_format!(u8, exponent_bits: 5, mantissa_bits: 2);

    use crate::narrow::Overflow;

    /// Largest finite magnitude's encoding, 57344 = 1.75 × 2^15.
    pub const MAX_FINITE: u8 = 0b0_11110_11;
    /// The NaN a conversion produces (with the input's sign): exponent all ones, both
    /// mantissa bits set.
    pub const NAN_ABS: u8 = 0b0_11111_11;

    super::ocp_from_f32! {
        exponent_bits: 5, mantissa_bits: 2,
        /// f32 bits → E5M2 bits, round to nearest, ties to even (OCP OFP8 rev. 1.0; CUDA
        /// `__nv_cvt_float_to_fp8(x, mode, __NV_E5M2)`).
        ///
        /// Exact on every one of the 2^32 inputs against integer arithmetic on the fields.
        /// [`Overflow::Standard`]: `|x| >= 61440` (the midpoint past 57344, a tie that goes
        /// to even, i.e. up) and ±inf give ±inf. [`Overflow::SatFinite`]: they give ±57344.
        /// NaN gives `NAN_ABS` with the input's sign in both modes. Signed zeros are kept.
        from_f32_bits;
        /// [`from_f32_bits`] with [`Overflow::Standard`] (±inf past ±57344).
        standard;
        /// [`from_f32_bits`] with [`Overflow::SatFinite`] (±57344 past it), what
        /// `cvt.rn.satfinite.e5m2x2.f32` computes for every non-NaN input.
        satfinite;
    }

    /// The rounded magnitude encoding `rounded`, or what a value past the largest finite
    /// one gives with `overflow`.
    #[inline(always)]
    const fn finite_magnitude(rounded: u32, overflow: Overflow) -> u8 {
        match overflow {
            _ if rounded <= MAX_FINITE as u32 => rounded as u8,
            Overflow::Standard => POS_INFINITY,
            Overflow::SatFinite => MAX_FINITE,
        }
    }

    /// E5M2 bits → f32 bits without a branch: [`crate::binary16::to_f32_bits_scaled`] of
    /// `b << 8` (E5M2 is the top byte of a binary16). The same result as [`to_f32_bits`]
    /// on every encoding.
    #[inline]
    pub fn to_f32_bits_scaled(b: u8) -> u32 {
        crate::binary16::to_f32_bits_scaled((b as u16) << 8)
    }

    /// E5M2 bits → f32 bits. Exact for every encoding; NaN keeps its sign and payload.
    #[inline]
    pub const fn to_f32_bits(b: u8) -> u32 {
        // E5M2 is the top byte of a binary16.
        crate::binary16::to_f32_bits((b as u16) << 8)
    }
}

/// E4M3: 1 sign, 4 exponent, 3 mantissa bits, with no infinities: the exponent field
/// all ones is an ordinary binade (up to ±448), and NaN is only S.1111.111.
pub mod e4m3 {
    use crate::Class;
    use crate::narrow::Overflow;

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

    super::ocp_from_f32! {
        exponent_bits: 4, mantissa_bits: 3,
        /// f32 bits → E4M3 bits, round to nearest, ties to even (OCP OFP8 rev. 1.0; CUDA
        /// `__nv_cvt_float_to_fp8(x, mode, __NV_E4M3)`).
        ///
        /// Exact on every one of the 2^32 inputs against integer arithmetic on the fields.
        /// E4M3 has no infinity. [`Overflow::Standard`] (OCP non-saturating): `|x| > 464`
        /// (464, the midpoint past 448, is a tie and goes to even, 448) and ±inf give NaN.
        /// [`Overflow::SatFinite`]: they give ±448. NaN gives NaN (S.1111.111) with the
        /// input's sign in both modes. Signed zeros are kept.
        from_f32_bits;
        /// [`from_f32_bits`] with [`Overflow::Standard`] (NaN past ±448).
        standard;
        /// [`from_f32_bits`] with [`Overflow::SatFinite`] (±448 past it), what
        /// `cvt.rn.satfinite.e4m3x2.f32` computes for every non-NaN input.
        satfinite;
    }

    /// The rounded magnitude encoding `rounded`, or what a value past the largest finite
    /// one gives with `overflow`.
    #[inline(always)]
    const fn finite_magnitude(rounded: u32, overflow: Overflow) -> u8 {
        match overflow {
            _ if rounded <= MAX_ABS as u32 => rounded as u8,
            Overflow::Standard => NAN_ABS,
            Overflow::SatFinite => MAX_ABS,
        }
    }

    /// E4M3 bits → f32 bits without a branch: the finite encodings by one exact float
    /// multiply (the magnitude's bits shifted into the f32 field positions read
    /// `v · 2^-120`, which `2^120` scales back exactly, subnormals included), the NaN
    /// selected as in [`to_f32_bits`]. The same result as [`to_f32_bits`] on every
    /// encoding (IEEE multiply, subnormals kept).
    #[inline]
    pub fn to_f32_bits_scaled(b: u8) -> u32 {
        let sign = ((b & SIGN_MASK) as u32) << 24;
        let abs = (b & ABS_MASK) as u32;
        // 2^120 = 2^(127 - 7): the difference of the exponent biases.
        let finite = (f32::from_bits(abs << 20) * f32::from_bits((127 + 120) << 23)).to_bits();
        let nan = 0x7F80_0000 | ((abs & MAN_MASK as u32) << 20);
        sign | if abs == NAN_ABS as u32 { nan } else { finite }
    }

    /// E4M3 bits → f32 bits. Exact for every encoding; NaN (S.1111.111) gives the f32
    /// NaN with that sign and the mantissa bits at the top of the payload.
    #[inline]
    pub const fn to_f32_bits(b: u8) -> u32 {
        let sign = ((b & SIGN_MASK) as u32) << 24;
        let abs = b & ABS_MASK;
        let magnitude = if abs == NAN_ABS {
            0x7F80_0000 | (((abs & MAN_MASK) as u32) << 20)
        } else {
            crate::narrow::widen_magnitude::<4, 3>(abs as u32)
        };
        sign | magnitude
    }
}

/// Writes the constants and classification functions of an FNUZ format ("finite, NaN,
/// unsigned zero") with `$exp` exponent and `$man` mantissa bits under the sign bit.
///
/// # Why one compare per test is exact
///
/// FNUZ formats have no infinities and no negative zero: every exponent field, all ones
/// included, is an ordinary binade, and the one encoding left over, the sign alone
/// (`1.000...0`, which would be -0), is the only NaN. So finiteness and NaN are one
/// compare with that encoding, and with the sign cleared the finite encodings are
/// ordered like their magnitudes (zero, then subnormals with exponent field 0, then
/// normals from `MIN_NORMAL`), so the class's code is again a count of boundaries
/// reached, NaN adding 4 to reach its code from the 0 that its cleared magnitude counts.
macro_rules! fnuz_format {
    (exponent_bits: $exp:expr, mantissa_bits: $man:expr) => {
        use $crate::Class;

        /// The sign bit.
        pub const SIGN_MASK: u8 = 1 << ($exp + $man);
        /// The biased exponent field.
        pub const EXP_MASK: u8 = ((1 << $exp) - 1) << $man;
        /// The mantissa field.
        pub const MAN_MASK: u8 = (1 << $man) - 1;
        /// Everything but the sign.
        pub const ABS_MASK: u8 = !SIGN_MASK;
        /// The only NaN: the encoding that would be -0 (sign set, all else clear).
        pub const NAN: u8 = SIGN_MASK;
        /// Encoding of the smallest positive normal value: exponent field 1, mantissa 0.
        pub const MIN_NORMAL: u8 = 1 << $man;

        /// `true` iff the value is finite: every encoding but [`NAN`]. Exact.
        #[inline]
        pub const fn is_finite(b: u8) -> bool {
            b != NAN
        }

        /// Always `false`: FNUZ formats have no infinities.
        #[inline]
        pub const fn is_infinite(_b: u8) -> bool {
            false
        }

        /// `true` iff the value is NaN, i.e. `b` is [`NAN`]. Exact.
        #[inline]
        pub const fn is_nan(b: u8) -> bool {
            b == NAN
        }

        /// The class of the value (never [`Class::Infinite`]). Branch-free: the count of
        /// boundaries the magnitude reaches (see the macro's docs), plus 4 for [`NAN`],
        /// whose magnitude field is zero. Exact on all 256 encodings.
        #[inline]
        pub const fn classify(b: u8) -> Class {
            let abs = b & ABS_MASK;
            let count = (abs != 0) as u8 + (abs >= MIN_NORMAL) as u8 + 4 * (b == NAN) as u8;
            Class::from_threshold_count(count)
        }
    };
}

/// E4M3FNUZ: 1 sign, 4 exponent (bias 8), 3 mantissa bits; no infinities, no negative
/// zero, NaN only at 0b1_0000_000; largest magnitude 240 = 1.875 × 2^7 at 0b0_1111_111.
pub mod e4m3fnuz {
    fnuz_format!(exponent_bits: 4, mantissa_bits: 3);
}

/// E5M2FNUZ: 1 sign, 5 exponent (bias 16), 2 mantissa bits; no infinities, no negative
/// zero, NaN only at 0b1_00000_00; largest magnitude 57344 = 1.75 × 2^15 at
/// 0b0_11111_11.
pub mod e5m2fnuz {
    fnuz_format!(exponent_bits: 5, mantissa_bits: 2);
}
