//! bfloat16 (1 sign, 8 exponent, 7 mantissa bits: the top half of a binary32):
//! classification on the raw bits. Exact on all 65,536 encodings.

crate::class::ieee_format!(u16, exponent_bits: 8, mantissa_bits: 7);

/// The quiet bit of a bfloat16 NaN (the mantissa's top bit).
pub const QUIET_BIT: u16 = 0b0_00000000_1000000;

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
    let sign = (x >> 16) as u16 & SIGN_MASK;
    let abs = x & 0x7FFF_FFFF;
    let magnitude = if abs > 0x7F80_0000 {
        (abs >> 16) as u16 | QUIET_BIT
    } else {
        // Same exponent bias as f32: rounding the low 16 bits away is the whole
        // conversion, and a carry out of the top binade lands on +inf's encoding.
        crate::narrow::round_magnitude::<8, 7>(abs) as u16
    };
    sign | magnitude
}

/// bfloat16 bits → f32 bits: the top half of the f32. Exact for every encoding, NaN
/// payloads included.
#[inline]
pub const fn to_f32_bits(b: u16) -> u32 {
    (b as u32) << 16
}
