//! `v / m` for a sample `v` of an image whose maximum sample value `m` is neither 255
//! nor 65535 (a PNM's `maxval`: 100, 1023, 4095, ...), correctly rounded to f32,
//! binary16 or bfloat16: the conversion the variant table has no entry for, run on the
//! CPU only.
//!
//! # The rounding argument
//!
//! `v` and `m` are below 2^16, so both are exact in f32, and IEEE division rounds their
//! quotient correctly: that is the f32 result. binary16 and bfloat16 are that f32
//! quotient rounded again to nearest, ties to even (`shared::binary16::from_f32_bits`,
//! `shared::bfloat16::from_f32_bits`). Rounding a quotient twice is innocuous when the
//! first precision `p` and the second `q` satisfy `p >= 2q + 2` (Figueroa): 24 >= 2·11 + 2
//! for binary16, 24 >= 2·8 + 2 for bfloat16, and fewer bits below the normal range only
//! widen the margin. The argument is not relied on alone: `host/tests/normalize_maxval.rs`
//! compares each function with the exact rational reference on every `v` in `0..=m`, for
//! a set of `m` in its quick test and for every `m` in `1..=65535` in an ignored one.

/// The f32 nearest to `v / m` (ties to even), for `v <= m`, `1 <= m <= 65535`.
#[inline]
pub fn to_f32(v: u16, m: u16) -> f32 {
    f32::from(v) / f32::from(m)
}

/// The binary16 encoding nearest to `v / m` (ties to even), for `v <= m`,
/// `1 <= m <= 65535`: see the module's rounding argument.
#[inline]
pub fn to_f16_bits(v: u16, m: u16) -> u16 {
    shared::binary16::from_f32_bits(to_f32(v, m).to_bits())
}

/// The bfloat16 encoding nearest to `v / m` (ties to even), for `v <= m`,
/// `1 <= m <= 65535`: see the module's rounding argument.
#[inline]
pub fn to_bf16_bits(v: u16, m: u16) -> u16 {
    shared::bfloat16::from_f32_bits(to_f32(v, m).to_bits())
}
