//! 4-bit floating point: E2M1, the element format of MXFP4 and NVFP4 (OCP "Microscaling
//! Formats (MX) Specification" v1.0, §5.3.3): 1 sign, 2 exponent (bias 1) and 1
//! mantissa bit, no infinity and no NaN. The values are ±0, ±0.5, ±1, ±1.5, ±2, ±3, ±4
//! and ±6, every one of them an f32.
//!
//! Tensors store two codes per byte, the element of even index in the low nibble
//! ([`e2m1::pack`]).

/// E2M1: 1 sign, 2 exponent, 1 mantissa bit; every encoding finite.
pub mod e2m1 {
    use crate::Class;
    use crate::narrow::{round_magnitude, widen_magnitude};

    /// The sign bit of a code.
    pub const SIGN_MASK: u8 = 0b1_00_0;
    /// The magnitude bits of a code.
    pub const MAGNITUDE_MASK: u8 = 0b0_11_1;
    /// The largest finite magnitude's encoding, 6 = 1.5 × 2^2.
    pub const MAX_FINITE: u8 = 0b0_11_1;
    /// The smallest non-zero magnitude's encoding, the subnormal 0.5.
    pub const MIN_SUBNORMAL: u8 = 0b0_00_1;

    /// The code in the low 4 bits of `code` (the high 4 are ignored) → f32 bits, exact.
    #[inline]
    pub const fn to_f32_bits(code: u8) -> u32 {
        let sign = ((code & SIGN_MASK) as u32) << 28;
        sign | widen_magnitude::<2, 1>((code & MAGNITUDE_MASK) as u32)
    }

    /// f32 bits → E2M1 code (in the low 4 bits), rounded to nearest, ties to even, and
    /// saturated: every magnitude above 5 (the midpoint between 4 and 6, a tie that goes
    /// to the even 4) gives ±6, ±inf included. NaN gives +6, as CUDA's
    /// `__nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest)` does (`cuda_fp4.hpp`,
    /// whose host path says "NaN converts to positive FP4_MAXNORM"); E2M1 has no NaN.
    /// Signed zeros are kept, and so is the sign of a value that rounds to zero
    /// (|x| ≤ 0.25).
    ///
    /// Exact on every one of the 2^32 inputs against integer arithmetic on the fields
    /// (`tests/tests/fp4_e8m0.rs`).
    #[inline]
    pub const fn from_f32_bits(x: u32) -> u8 {
        let abs = x & 0x7FFF_FFFF;
        if abs > 0x7F80_0000 {
            return MAX_FINITE;
        }
        let sign = (x >> 28) as u8 & SIGN_MASK;
        // Unbounded above (infinity included): anything past 6's code saturates.
        let rounded = round_magnitude::<2, 1>(abs);
        sign | if rounded > MAX_FINITE as u32 { MAX_FINITE } else { rounded as u8 }
    }

    /// The class of the code in the low 4 bits of `code`: zero, subnormal (±0.5) or
    /// normal; never infinite or NaN.
    #[inline]
    pub const fn class(code: u8) -> Class {
        match code & MAGNITUDE_MASK {
            0 => Class::Zero,
            MIN_SUBNORMAL => Class::Subnormal,
            _ => Class::Normal,
        }
    }

    /// Two codes in one byte as MXFP4 and NVFP4 tensors store them: `even` (the element
    /// of even index) in the low nibble, `odd` (the next one) in the high nibble. Each
    /// code's high 4 bits are ignored. (PTX's `cvt.rn.satfinite.e2m1x2.f32 d, a, b`
    /// puts `a` in the high nibble, so there `a` is the odd element.)
    #[inline]
    pub const fn pack(even: u8, odd: u8) -> u8 {
        (odd << 4) | (even & 0x0F)
    }

    /// The two codes of a packed byte, `[even, odd]`: [`pack`]'s inverse.
    #[inline]
    pub const fn unpack(byte: u8) -> [u8; 2] {
        [byte & 0x0F, byte >> 4]
    }
}
