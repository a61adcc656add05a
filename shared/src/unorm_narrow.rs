//! UNORM8 / UNORM16 → binary16 and → bfloat16: `x / d` (`d` = 255 or 65535) correctly
//! rounded (to nearest, ties to even) straight to the 16-bit format, never rounded twice
//! on the way.
//!
//! Every value here is in `[0, 1]`: no sign, no NaN, no overflow. The smallest non-zero
//! one, `1/65535`, is below binary16's smallest normal `2^-14` (codes 1..=3 of UNORM16
//! give binary16 subnormals); none is below f32's or bfloat16's smallest normal.
//!
//! # Round to odd (the `*_odd` forms): exact by construction
//!
//! 1. `q = fl32(x / d)`, the correctly rounded f32 quotient, from the proven scheme of
//!    the f32 conversion ([`crate::unorm8::times3_int`], [`crate::norm::unorm_to_f32`]).
//! 2. `r = fma(-q, d, x)` is `x - q·d` **exactly**: `q = m·2^e` with an integer
//!    `m < 2^24` and `e <= 0` (ULP(q) = 2^e, as `q <= 1`), so `x - q·d` is an integer multiple of
//!    `2^e`, and `|x - q·d| <= d·2^e/2 < 2^24·2^e` (q is within half an ULP of `x/d`,
//!    `d < 2^25`): it has at most 24 significant bits, so the fused operation's one
//!    rounding changes nothing. Its sign says on which side of `q` the true quotient lies.
//! 3. Round to odd at f32 precision: if `r = 0` the quotient is `q` itself; otherwise
//!    take its truncation (`q` if `r > 0`, the f32 just below `q` if `r < 0`) and set the
//!    last mantissa bit.
//! 4. Round that to the target to nearest. The odd intermediate is never a midpoint of
//!    the target's grid (a midpoint's f32 encoding ends in `1000…0`), so rounding half
//!    up is enough, branch-free (`odd_to_binary16`, `odd_to_bfloat16`).
//!
//! Rounding to odd with at least `p + 2` bits and then to nearest at `p` bits is the
//! correct rounding at `p` bits (Boldo & Melquiond, "Emulation of FMA and correctly
//! rounded sums: proved algorithms using rounding to odd", IEEE TC 2008): the odd
//! intermediate is never a `p`-bit midpoint unless the value is one, and lies on the
//! same side of every midpoint as the value. f32 has 24 bits, binary16 needs `p = 11`,
//! bfloat16 `p = 8`; binary16's subnormals keep fewer than 11 bits, so the margin only
//! grows there.
//!
//! # Two roundings through f32 (the `*_via_f32` forms): exact only where proven
//!
//! `q = fl32(x/d)` then `q` to the target, ties to even. The f32 grid contains every
//! midpoint of the target's grid, so `q` can never cross a midpoint; the result is wrong
//! exactly when `q` *lands on* one (and the tie goes away from the true value, which is
//! never itself a midpoint: for `0 < x < d` the quotient is not a binary fraction). The
//! binary expansion of `x / (2^k - 1)` is the k-bit pattern of `x` repeated forever, so
//! landing on a midpoint needs the pattern to hold a run of about `23 - p` equal bits
//! after the round bit (zeros, or ones that round up into a carry):
//!
//! * UNORM8 (period 8) cannot hold such a run for either target, so both `unorm8_*_via_f32`
//!   forms are exact;
//! * UNORM16 → bfloat16 (`p = 8`, a run of 15 within a period of 16) never lands on one
//!   either: exact;
//! * UNORM16 → binary16 (`p = 11`) lands on one for 4 codes (65423, 65455, 65487,
//!   65519), and ties-to-even then goes away from the true quotient on 2 of them, 65455
//!   and 65519 (`bitexact verify` lists them; the tests derive them from the
//!   reference). One ULP off there, so `unorm16_to_f16_via_f32` claims one ULP.
//!
//! The argument explains the results; the proof is the exhaustive comparison of every
//! form on all 256 / 65,536 codes with the integer reference (`bitexact::verify::reference`),
//! rerun by `cargo test` and `bitexact verify`.

use crate::{bfloat16, binary16, norm, unorm8};

/// The round-to-odd f32 encoding of `x / d`, given `q = fl32(x / d)` (see the module
/// docs): `q`'s encoding if `q` is exact, else the encoding of its truncation with the
/// last bit set. For integers `0 <= x <= d < 2^24` and `q` the correctly rounded
/// quotient; tests check it on every code of both denominators.
#[inline(always)]
pub fn round_to_odd(q: f32, x: f32, d: f32) -> u32 {
    let residual = core::f32::math::mul_add(-q, d, x); // x - q·d, exact
    // Positive encodings are ordered like the values: `q`'s encoding minus one is the
    // f32 just below `q`, and of two neighbours the odd one is the lower one with bit 0 set.
    (q.to_bits() - u32::from(residual < 0.0)) | u32::from(residual != 0.0)
}

/// The binary16 encoding of the f32 magnitude `bits` in `[0, 1]` rounded to nearest,
/// for `bits` odd or a binary16 value itself (a [`round_to_odd`] result): such an f32 is
/// never a binary16 midpoint (a midpoint has its last 13 bits, or more below 2^-14,
/// equal to `1000…0`: even), so rounding half up is rounding to nearest, ties to even,
/// and no tie bit is needed. Branch-free: the normal form rebiases the exponent in place
/// and rounds the 13 dropped bits up from half; the subnormal form (below 2^-14) adds
/// 2^-1, whose f32 ULP is binary16's subnormal step 2^-24, so the f32 addition does the
/// rounding and the sum's low bits are the count of steps.
#[inline(always)]
fn odd_to_binary16(bits: u32) -> u16 {
    const MIN_NORMAL: u32 = 113 << 23; // 2^-14
    const SUBNORMAL_MAGIC: u32 = 126 << 23; // 2^-1
    let normal = bits.wrapping_sub(112 << 23).wrapping_add(1 << 12) >> 13;
    let subnormal = (f32::from_bits(bits) + f32::from_bits(SUBNORMAL_MAGIC)).to_bits().wrapping_sub(SUBNORMAL_MAGIC);
    (if bits < MIN_NORMAL { subnormal } else { normal }) as u16
}

/// The bfloat16 encoding of the f32 magnitude `bits` in `[0, 1]` rounded to nearest, for
/// `bits` odd or a bfloat16 value itself (a [`round_to_odd`] result): as in
/// [`odd_to_binary16`] there is no tie, so adding half of bfloat16's last place and
/// dropping the low 16 bits rounds correctly (bfloat16 has f32's exponent range). The
/// same holds for any `bits` that is not a bfloat16 midpoint (low 16 bits other than
/// `0x8000`): [`unorm8_to_bf16_half_up`] and [`unorm16_to_bf16_half_up`] use it so.
#[inline(always)]
fn odd_to_bfloat16(bits: u32) -> u16 {
    (bits.wrapping_add(1 << 15) >> 16) as u16
}

/// UNORM8 → binary16 bits: `x / 255` correctly rounded, by rounding to odd. Exact on
/// every code by construction (module docs) and by the exhaustive check.
#[inline]
pub fn unorm8_to_f16_odd(x: u8) -> u16 {
    odd_to_binary16(round_to_odd(unorm8::times3_int(x), f32::from(x), 255.0))
}

/// UNORM8 → binary16 bits through f32: `binary16::from_f32_bits(fl32(x / 255))`. Two
/// roundings, exact on all 256 codes all the same (module docs; proven exhaustively).
#[inline]
pub fn unorm8_to_f16_via_f32(x: u8) -> u16 {
    binary16::from_f32_bits(unorm8::times3_int(x).to_bits())
}

/// UNORM8 → bfloat16 bits: `x / 255` correctly rounded, by rounding to odd. Exact.
#[inline]
pub fn unorm8_to_bf16_odd(x: u8) -> u16 {
    odd_to_bfloat16(round_to_odd(unorm8::times3_int(x), f32::from(x), 255.0))
}

/// UNORM8 → bfloat16 bits through f32: `bfloat16::from_f32_bits(fl32(x / 255))`. Two
/// roundings, exact on all 256 codes all the same (module docs; proven exhaustively).
#[inline]
pub fn unorm8_to_bf16_via_f32(x: u8) -> u16 {
    bfloat16::from_f32_bits(unorm8::times3_int(x).to_bits())
}

/// UNORM16 → binary16 bits: `x / 65535` correctly rounded, by rounding to odd. Exact,
/// binary16 subnormals (codes 1..=3) included.
#[inline]
pub fn unorm16_to_f16_odd(x: u16) -> u16 {
    odd_to_binary16(round_to_odd(norm::unorm_to_f32::<16>(x), f32::from(x), 65535.0))
}

/// UNORM16 → binary16 bits through f32: `binary16::from_f32_bits(fl32(x / 65535))`.
/// NOT exact: one ULP off on the codes whose f32 quotient lands on a binary16 midpoint
/// (65455 and 65519; module docs). Kept to show why the round-to-odd form is needed.
#[inline]
pub fn unorm16_to_f16_via_f32(x: u16) -> u16 {
    binary16::from_f32_bits(norm::unorm_to_f32::<16>(x).to_bits())
}

/// UNORM16 → bfloat16 bits: `x / 65535` correctly rounded, by rounding to odd. Exact.
#[inline]
pub fn unorm16_to_bf16_odd(x: u16) -> u16 {
    odd_to_bfloat16(round_to_odd(norm::unorm_to_f32::<16>(x), f32::from(x), 65535.0))
}

/// UNORM16 → bfloat16 bits through f32: `bfloat16::from_f32_bits(fl32(x / 65535))`. Two
/// roundings, exact on all 65,536 codes all the same (module docs; proven exhaustively).
#[inline]
pub fn unorm16_to_bf16_via_f32(x: u16) -> u16 {
    bfloat16::from_f32_bits(norm::unorm_to_f32::<16>(x).to_bits())
}

/// UNORM8 → bfloat16 bits: `x / 255` correctly rounded, through `q = fl32(x / 255)` rounded
/// half up. Exact on every code: `q` never lands on a bfloat16 midpoint for UNORM8
/// (module docs), so half up is ties to even there, and the result is
/// [`unorm8_to_bf16_via_f32`]'s. The CPU's vectorised form (one add and one shift after
/// the f32 quotient); `host/wings/files/src/tests/cpu_levels.rs` proves it on every code against the
/// integer reference.
#[inline]
pub fn unorm8_to_bf16_half_up(x: u8) -> u16 {
    odd_to_bfloat16(unorm8::times3_int(x).to_bits())
}

/// UNORM16 → bfloat16 bits: `x / 65535` correctly rounded, as [`unorm8_to_bf16_half_up`]
/// does it for UNORM8. Exact on every code: `fl32(x / 65535)` never lands on a bfloat16
/// midpoint either (module docs), so the result is [`unorm16_to_bf16_via_f32`]'s.
#[inline]
pub fn unorm16_to_bf16_half_up(x: u16) -> u16 {
    odd_to_bfloat16(norm::unorm_to_f32::<16>(x).to_bits())
}

/// An f32 that any round-to-nearest conversion to binary16 (a CPU's `vcvtps2ph`) takes
/// to `x / 65535` correctly rounded: the correctly rounded quotient `q`, one f32 step
/// down where `fma(-q, 65535, x)` is negative, with its last bit set. That is
/// [`round_to_odd`]'s value wherever the quotient is not exact, one step cheaper (no
/// test for an exact quotient); for the two codes whose quotient is exact (0 and 65535)
/// it is one f32 step above it (2^-149, 1 + 2^-23), far from any binary16 midpoint.
/// Proven with `vcvtps2ph` on every code (`host/wings/files/src/tests/cpu_levels.rs`).
#[inline]
pub fn unorm16_to_f32_sticky(x: u16) -> f32 {
    let q = norm::unorm_to_f32::<16>(x);
    let residual = core::f32::math::mul_add(-q, 65535.0, f32::from(x)); // x - q·65535, exact
    f32::from_bits((q.to_bits() - u32::from(residual < 0.0)) | 1)
}
