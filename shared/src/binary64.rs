//! IEEE 754 binary64 (1 sign, 11 exponent, 52 mantissa bits): classification on the raw
//! bits.
//!
//! The argument in `ieee_format!` holds for every encoding; the tests check it on a
//! sample (every sign × exponent × boundary and random mantissas, plus 2^24 random
//! encodings), since 2^64 inputs cannot be enumerated. `is_finite` reads only the
//! exponent field, which lies in the high 32 bits: one 32-bit test on a GPU.

crate::class::ieee_format!(u64, exponent_bits: 11, mantissa_bits: 52);
