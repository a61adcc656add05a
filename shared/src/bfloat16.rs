//! bfloat16 (1 sign, 8 exponent, 7 mantissa bits: the top half of a binary32):
//! classification on the raw bits. Exact on all 65,536 encodings.

crate::class::ieee_format!(u16, exponent_bits: 8, mantissa_bits: 7);

use crate::narrow::Overflow;

/// The quiet bit of a bfloat16 NaN (the mantissa's top bit).
pub const QUIET_BIT: u16 = 0b0_00000000_1000000;

/// Largest finite magnitude's encoding, (2 - 2^-7) · 2^127.
pub const MAX_FINITE: u16 = 0b0_11111110_1111111;

/// f32 bits → bfloat16 bits, round to nearest, ties to even, what `cvt.rn.bf16.f32`
/// computes for every non-NaN input.
///
/// Exact on every one of the 2^32 inputs against integer arithmetic on the fields.
/// Overflow gives ±inf (bfloat16 has f32's exponent range, so only values within half a
/// bfloat16 unit of f32's largest round up to inf); subnormals round like normals. NaN
/// stays NaN with its sign and the top 7 bits of its payload, made quiet (NVIDIA's
/// hardware returns one canonical NaN instead, 0x7FFF).
#[inline]
pub const fn from_f32_bits(x: u32) -> u16 {
    from_f32_bits_overflow(x, Overflow::Standard)
}

/// [`from_f32_bits`] with saturation: values that round past the largest finite and ±inf
/// give ± [`MAX_FINITE`], what `cvt.rn.satfinite.bf16.f32` computes for every non-NaN
/// input. NaN as in [`from_f32_bits`]. Exact on every one of the 2^32 inputs.
#[inline]
pub const fn from_f32_bits_satfinite(x: u32) -> u16 {
    from_f32_bits_overflow(x, Overflow::SatFinite)
}

/// f32 bits → bfloat16 bits, round to nearest, ties to even, with `overflow` deciding
/// what a value past the largest finite (after rounding) and ±inf give: ±inf
/// ([`Overflow::Standard`]) or ± [`MAX_FINITE`] ([`Overflow::SatFinite`]). NaN as in
/// [`from_f32_bits`].
#[inline]
pub const fn from_f32_bits_overflow(x: u32, overflow: Overflow) -> u16 {
    let sign = (x >> 16) as u16 & SIGN_MASK;
    let abs = x & 0x7FFF_FFFF;
    let magnitude = if abs > 0x7F80_0000 {
        (abs >> 16) as u16 | QUIET_BIT
    } else {
        // Same exponent bias as f32: rounding the low 16 bits away is the whole
        // conversion, and a carry out of the top binade lands on +inf's encoding, as
        // +inf itself does.
        let rounded = crate::narrow::round_magnitude::<8, 7>(abs);
        match overflow {
            _ if rounded <= MAX_FINITE as u32 => rounded as u16,
            Overflow::Standard => POS_INFINITY,
            Overflow::SatFinite => MAX_FINITE,
        }
    };
    sign | magnitude
}

/// bfloat16 bits → f32 bits: the top half of the f32. Exact for every encoding, NaN
/// payloads included.
#[inline]
pub const fn to_f32_bits(b: u16) -> u32 {
    (b as u32) << 16
}
