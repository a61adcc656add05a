//! IEEE 754 binary32 (1 sign, 8 exponent, 23 mantissa bits): classification on the raw
//! bits. Exact on all 2^32 encodings.

crate::class::ieee_format!(u32, exponent_bits: 8, mantissa_bits: 23);
