//! bfloat16 (1 sign, 8 exponent, 7 mantissa bits: the top half of a binary32):
//! classification on the raw bits. Exact on all 65,536 encodings.

crate::class::ieee_format!(u16, exponent_bits: 8, mantissa_bits: 7);
