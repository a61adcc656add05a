//! IEEE 754 binary64 (1 sign, 11 exponent, 52 mantissa bits): classification on the raw
//! bits. Exact on every encoding.

crate::class::ieee_format!(u64, exponent_bits: 11, mantissa_bits: 52);
