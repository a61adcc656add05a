//! Packed (SWAR) finiteness masks on one 32-bit word: 2 × binary16, 2 × bfloat16,
//! 4 × FP8 E4M3, 4 × FP8 E5M2.
//!
//! Lane `i` of `L` bits occupies bits `i·L .. (i+1)·L` (lane 0 lowest: element 0 of a
//! little-endian array). The result has lane `i` all ones if input lane `i` is finite
//! and all zeros if it is not (NaN, or ±inf for the formats that have it), so it can be
//! used directly as a select mask.
//!
//! # Why the SWAR form is exact
//!
//! A lane is finite iff some bit of a per-format pattern `P` is clear in it: `P` is the
//! exponent field for the IEEE-like formats (finite iff the exponent is not all ones)
//! and the whole magnitude `0b0_1111_111` for E4M3 (finite iff not `S.1111.111`). `P`
//! never contains the lane's top (sign) bit. So `t = !w & P` (replicated per lane) holds
//! in each lane a value in `0 ..= LOW`, `LOW = 2^(L-1) - 1`, non-zero iff the lane is
//! finite. Adding `LOW` to every lane cannot carry out of a lane (`t + LOW <= 2·LOW <
//! 2^L`) and sets the lane's top bit iff `t >= 1`. Shifting those top bits down to bit 0
//! of their lane and multiplying by `2^L - 1` fills each marked lane (again no carry:
//! the product per lane is at most `2^L - 1`).
//!
//! Both forms below are proven on all 2^32 words (`cargo test`, `bitexact verify`)
//! against a per-lane reference, and on every single-lane encoding in every lane
//! against the scalar `is_finite` of the format.

use crate::{bfloat16, binary16, fp8};

/// `1` in the lowest bit of each lane of `lane_bits` bits (8 or 16).
#[inline(always)]
const fn lane_ones(lane_bits: u32) -> u32 {
    u32::MAX / ((1 << lane_bits) - 1)
}

/// The SWAR mask: lane all ones iff some bit of `pattern` is clear in it. `pattern`
/// must not contain the lane's top bit.
#[inline(always)]
const fn mask_if_pattern_not_full(w: u32, lane_bits: u32, pattern: u32) -> u32 {
    let ones = lane_ones(lane_bits);
    let top_shift = lane_bits - 1;
    let low = ones * ((1 << top_shift) - 1);
    let t = !w & (ones * pattern);
    let finite_tops = (t + low) & (ones << top_shift);
    (finite_tops >> top_shift) * ((1 << lane_bits) - 1)
}

/// The lane-by-lane mask: lane all ones iff `is_finite(lane)`; the straightforward form
/// the SWAR one is compared with.
#[inline(always)]
fn mask_by_lanes(w: u32, lane_bits: u32, is_finite: impl Fn(u32) -> bool) -> u32 {
    let lane_max = (1 << lane_bits) - 1;
    let mut mask = 0;
    let mut shift = 0;
    while shift < u32::BITS {
        if is_finite((w >> shift) & lane_max) {
            mask |= lane_max << shift;
        }
        shift += lane_bits;
    }
    mask
}

/// Two binary16 lanes → per-lane finite mask, SWAR (see the module docs). Exact on all
/// 2^32 words.
#[inline]
pub const fn f16x2_is_finite_swar(w: u32) -> u32 {
    mask_if_pattern_not_full(w, 16, binary16::EXP_MASK as u32)
}

/// Two binary16 lanes → per-lane finite mask, one scalar test per lane. Exact on all
/// 2^32 words.
#[inline]
pub fn f16x2_is_finite_lanes(w: u32) -> u32 {
    mask_by_lanes(w, 16, |lane| binary16::is_finite(lane as u16))
}

/// Two bfloat16 lanes → per-lane finite mask, SWAR. Exact on all 2^32 words.
#[inline]
pub const fn bf16x2_is_finite_swar(w: u32) -> u32 {
    mask_if_pattern_not_full(w, 16, bfloat16::EXP_MASK as u32)
}

/// Two bfloat16 lanes → per-lane finite mask, one scalar test per lane. Exact on all
/// 2^32 words.
#[inline]
pub fn bf16x2_is_finite_lanes(w: u32) -> u32 {
    mask_by_lanes(w, 16, |lane| bfloat16::is_finite(lane as u16))
}

/// Four FP8 E4M3 lanes → per-lane finite mask (a lane is non-finite only at
/// `S.1111.111`), SWAR. Exact on all 2^32 words.
#[inline]
pub const fn e4m3x4_is_finite_swar(w: u32) -> u32 {
    mask_if_pattern_not_full(w, 8, fp8::e4m3::NAN_ABS as u32)
}

/// Four FP8 E4M3 lanes → per-lane finite mask, one scalar test per lane. Exact on all
/// 2^32 words.
#[inline]
pub fn e4m3x4_is_finite_lanes(w: u32) -> u32 {
    mask_by_lanes(w, 8, |lane| fp8::e4m3::is_finite(lane as u8))
}

/// Four FP8 E5M2 lanes → per-lane finite mask, SWAR. Exact on all 2^32 words.
#[inline]
pub const fn e5m2x4_is_finite_swar(w: u32) -> u32 {
    mask_if_pattern_not_full(w, 8, fp8::e5m2::EXP_MASK as u32)
}

/// Four FP8 E5M2 lanes → per-lane finite mask, one scalar test per lane. Exact on all
/// 2^32 words.
#[inline]
pub fn e5m2x4_is_finite_lanes(w: u32) -> u32 {
    mask_by_lanes(w, 8, |lane| fp8::e5m2::is_finite(lane as u8))
}
