//! The MX block scale (OCP "Microscaling Formats (MX) Specification" v1.0): one E8M0
//! power of two `2^k` ([`crate::e8m0`]) per block of 32 consecutive elements along the
//! last axis, and each element `x / 2^k`, exact, rounded once to nearest, ties to even,
//! onto the element format and saturated at its largest finite value: MXFP8 (E4M3 or
//! E5M2 elements) and MXFP4 (E2M1, [`crate::fp4::e2m1`]).
//!
//! Four rules choose `k` from the block's `amax`, its largest magnitude:
//! - [`ScaleRule::Fit`], the exact rule: the smallest `k` with `amax ≤ max · 2^k`, where
//!   `max` is the element format's largest finite value, so that no element of the block
//!   saturates. This is `amax / max` rounded up to a power of two, exactly; cuBLAS,
//!   Transformer Engine and torchao's `RCEIL` mean it, but round `amax · fl32(1 / max)`
//!   to f32 first.
//! - [`ScaleRule::Floor`], OCP's: `k = floor(log2 amax) − emax`, where `emax` is the
//!   exponent of `max` (E4M3 8, E5M2 15, E2M1 2); torchao's default `FLOOR`. Elements
//!   between `max · 2^k` and `2^(emax + 1) · 2^k` saturate.
//! - [`ScaleRule::CompressedTensors`], compressed-tensors' `round_to_power_2`: `amax`
//!   rounded to a power of two up from a significand of 1.75, then `− emax`; Fit's but
//!   at `amax = 1.75 · 2^j` for the FP8 elements.
//! - [`ScaleRule::Rceil`], torchao's `RCEIL` as its source computes it: `fl32(amax ·
//!   fl32(1 / max))` rounded up to a power of two. Fit's but where that f32 product
//!   rounds down onto a power of two the exact quotient exceeds (the block's largest
//!   values then saturate, by less than half a unit of the element format).
//!
//! Each clamps `k` to E8M0's range, `−127 ..= 127`; a zero `amax` gives `k = −127`, and a
//! NaN or infinite `amax` the NaN scale code.

use crate::e8m0;
use crate::fp8_block::BlockError;
use crate::fp8_scale::{self, Fp8Format, Residual};
use crate::narrow::round_magnitude_f64;

/// An MX element format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElementFormat {
    /// OCP FP8 E4M3 (MXFP8), largest finite 448 = 1.75 · 2^8.
    E4M3,
    /// OCP FP8 E5M2 (MXFP8), largest finite 57344 = 1.75 · 2^15.
    E5M2,
    /// FP4 E2M1 (MXFP4), largest finite 6 = 1.5 · 2^2.
    E2M1,
}

impl ElementFormat {
    /// Every element format.
    pub const ALL: [ElementFormat; 3] = [ElementFormat::E4M3, ElementFormat::E5M2, ElementFormat::E2M1];

    /// `emax`: the exponent of the largest finite value.
    #[inline]
    pub const fn emax(self) -> i32 {
        match self {
            ElementFormat::E4M3 => 8,
            ElementFormat::E5M2 => 15,
            ElementFormat::E2M1 => 2,
        }
    }

    /// The largest finite value: 448, 57344 or 6.
    #[inline]
    pub const fn max_finite(self) -> f32 {
        match self {
            ElementFormat::E4M3 => 448.0,
            ElementFormat::E5M2 => 57344.0,
            ElementFormat::E2M1 => 6.0,
        }
    }

    /// The f32 mantissa field of the largest finite value (1.75 or 1.5 times `2^emax`).
    #[inline]
    const fn max_mantissa_field(self) -> u32 {
        match self {
            ElementFormat::E4M3 | ElementFormat::E5M2 => 0x0060_0000,
            ElementFormat::E2M1 => 0x0040_0000,
        }
    }
}

/// How an MX block's scale exponent is chosen from its `amax` (see the module).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScaleRule {
    /// The smallest `k` with `amax ≤ max · 2^k`: no element saturates.
    Fit,
    /// OCP's `k = floor(log2 amax) − emax`.
    Floor,
    /// compressed-tensors' (`quantization/utils/mxfp_utils.py`, `round_to_power_2` and
    /// `generate_mx_scales`): `amax` rounded to a power of two by adding a quarter of its
    /// binade to its bits and dropping the fraction (up from a significand of 1.75 on,
    /// else down), then `k = log2 of that − floor(log2 max)`. So `k` is the one with
    /// `0.875 · 2^(k + emax) ≤ amax < 1.75 · 2^(k + emax)`: for E4M3 and E5M2 it is
    /// [`ScaleRule::Fit`]'s but where `amax` is exactly `1.75 · 2^j` (one higher there);
    /// for E2M1, whose largest value has significand 1.5, elements between `6 · 2^k` and
    /// `7 · 2^k` saturate. A zero `amax` gives code 0 there too (`log2(0) = −inf`, clamped),
    /// and so does a subnormal one (f32's or bf16's: the bit trick gives 0 or `2^-126`).
    CompressedTensors,
    /// torchao's `ScaleCalculationMode.RCEIL` (`prototype/mx_formats/mx_tensor.py` at
    /// 36027d8, 2026-08, its eager path): `descale = fl32(amax · fl32(1 / max))` (the
    /// multiplication by a rounded reciprocal that PyTorch computes), then the least `k`
    /// with `descale ≤ 2^k`, from its bits (a subnormal `descale` too); a zero `descale`
    /// gives code 0. That is its code from 2026-08-12 on (#4725); its releases up to 0.18.0
    /// divide, take `ceil(log2(descale))` in f32 (a power low where `descale` is just
    /// above a power of two) and multiply a code-0 block by 1 (docs/files.md, "Against torchao's own
    /// code", runs both).
    Rceil,
}

/// The 23-bit fraction of the finite non-zero f32 magnitude `abs` once its leading one
/// is the implicit bit (a subnormal's shifted up to it).
#[inline]
const fn normalized_fraction(abs: u32) -> u32 {
    if abs >= 0x0080_0000 { abs & 0x007F_FFFF } else { (abs << (abs.leading_zeros() - 8)) & 0x007F_FFFF }
}

/// The E8M0 code of the scale `2^k` that `rule` gives a block of `element`s whose largest
/// magnitude is `amax` (f32 bits; the sign is ignored): `k` clamped to `−127 ..= 127`,
/// code `k + 127`. A zero `amax` gives code 0 (`k = −127`); a NaN or infinite one
/// [`e8m0::NAN`].
///
/// Proven on every f32 `amax`, for every element format and rule, against the
/// inequalities that define `k` (`tests/tests/mx.rs`).
#[inline]
pub const fn scale_code(amax: u32, element: ElementFormat, rule: ScaleRule) -> u8 {
    let abs = amax & 0x7FFF_FFFF;
    if abs >= 0x7F80_0000 {
        return e8m0::NAN;
    }
    let Some(floor) = e8m0::floor_log2(abs) else {
        return 0;
    };
    let k = floor - element.emax();
    let k = match rule {
        // descale = 1.f · 2^e: 2^e when f = 0, else 2^(e + 1); a zero descale (an amax
        // below about max · 2^-150) clamps as a zero amax does.
        ScaleRule::Rceil => {
            let descale = (f32::from_bits(abs) * (1.0 / element.max_finite())).to_bits();
            match e8m0::floor_log2(descale) {
                Some(e) if normalized_fraction(descale) == 0 => e,
                Some(e) => e + 1,
                None => e8m0::MIN_EXPONENT,
            }
        }
        ScaleRule::Floor => k,
        // amax = 1.a · 2^floor and max = 1.m · 2^emax, so amax ≤ max · 2^k iff 1.a ≤ 1.m;
        // otherwise 2^(k + 1) is the smallest that fits (amax < 2^(floor + 1) ≤ max · 2^(k + 1)).
        ScaleRule::Fit => {
            if normalized_fraction(abs) <= element.max_mantissa_field() {
                k
            } else {
                k + 1
            }
        }
        // The significand 1.75 is the fraction field 0x60_0000, whatever the format.
        ScaleRule::CompressedTensors => {
            if normalized_fraction(abs) >= 0x0060_0000 {
                k + 1
            } else {
                k
            }
        }
    };
    let clamped = if k < e8m0::MIN_EXPONENT {
        e8m0::MIN_EXPONENT
    } else if k > e8m0::MAX_EXPONENT {
        e8m0::MAX_EXPONENT
    } else {
        k
    };
    (clamped + e8m0::BIAS) as u8
}

/// The `element` code of `x` (f32 bits) in a block whose scale has the E8M0 code
/// `scale`: `x / 2^k`, exact, rounded once to nearest, ties to even, and saturated at
/// `±max` (±inf included). NaN gives the format's NaN with `x`'s sign (E4M3 S.1111.111,
/// E5M2 S.11111.11), or +6 for E2M1, which has none (as `fp4::e2m1::from_f32_bits`). A
/// NaN scale makes every element of its block NaN the same way.
///
/// E4M3 and E5M2 are [`fp8_scale::quantize_once`] at `s = 2^-k`, an f32 for every `k`
/// (2^-127 a subnormal one): the exact product rounded once.
#[inline]
pub fn quantize(x: u32, scale: u8, element: ElementFormat) -> u8 {
    // A NaN scale: x made NaN, its sign kept.
    let x = if scale == e8m0::NAN { x | 0x7FC0_0000 } else { x };
    quantize_at_inverse(x, inverse_scale(scale), element)
}

/// `x · s` rounded once onto `element` for `s = 2^-k` ([`inverse_scale`]): [`quantize`]
/// of a block whose scale is not NaN.
#[inline]
pub fn quantize_at_inverse(x: u32, s: f32, element: ElementFormat) -> u8 {
    match element {
        ElementFormat::E4M3 => fp8_scale::quantize_once(x, s, Fp8Format::E4M3),
        ElementFormat::E5M2 => fp8_scale::quantize_once(x, s, Fp8Format::E5M2),
        ElementFormat::E2M1 => e2m1_once(x, s),
    }
}

/// `sat_rne(x · s)` onto E2M1 for the f32 `x` (bits) and a positive finite `s`: the exact
/// product (in f64) rounded once, saturated at ±6; NaN gives +6.
#[inline]
fn e2m1_once(x: u32, s: f32) -> u8 {
    use crate::fp4::e2m1::{MAX_FINITE, SIGN_MASK};
    if fp8_scale::magnitude_bits(x) > 0x7F80_0000 {
        return MAX_FINITE;
    }
    let product = (f64::from(f32::from_bits(x)) * f64::from(s)).to_bits();
    let rounded = round_magnitude_f64::<2, 1>(product & 0x7FFF_FFFF_FFFF_FFFF);
    let sign = (x >> 28) as u8 & SIGN_MASK;
    sign | if rounded > MAX_FINITE as u32 { MAX_FINITE } else { rounded as u8 }
}

/// `2^-k`, the multiplier [`quantize`] takes for the scale code `scale` (`2^k`): an f32
/// for every code (`2^-127` a subnormal one); `2^-127` for the NaN code too, whose
/// elements are NaN whatever it is. `2^-k` has the code `127 − k = 254 − scale`.
#[inline]
pub const fn inverse_scale(scale: u8) -> f32 {
    f32::from_bits(e8m0::to_f32_bits(254u8.saturating_sub(scale)))
}

/// The number of consecutive elements that share one MX scale.
pub const BLOCK_SIZE: usize = 32;

/// MX quantisation of `x` (f32 bits) in blocks of [`BLOCK_SIZE`] consecutive elements,
/// the last one partial where `x.len()` is not a multiple (a row-major tensor whose rows
/// are a multiple long, so that no block spans two rows, is such an `x`): each block's
/// E8M0 scale code into `scales` ([`scale_code`] of its largest magnitude by `rule`, which
/// is [`e8m0::NAN`] for a block holding a NaN or an infinity, as OCP's specification sets
/// it), and each element's code into `q` ([`quantize`]). Returns the index of the first
/// NaN or infinity, if any, for the caller that refuses such tensors.
/// [`quantize_blocks_inline`] compiled for the baseline target (the kernels' CPU twin);
/// `bitexact cast` compiles that for each CPU level instead.
pub fn quantize_blocks(
    x: &[u32],
    element: ElementFormat,
    rule: ScaleRule,
    q: &mut [u8],
    scales: &mut [u8],
) -> Result<Option<usize>, BlockError> {
    quantize_blocks_inline(x, element, rule, Residual::F64, q, scales)
}

/// [`quantize_blocks`]' body, `#[inline(always)]` as [`fp8_scale::quantize_slice`] is, to
/// be compiled with the caller's target features: the FP8 elements of each block whose
/// scale is not NaN by [`fp8_scale::quantize_once_to_odd`] at `2^-k` with `residual` (the
/// same codes as [`quantize_at_inverse`]: take [`Residual::Fma`] only where FMA is among
/// the features), one branch-free loop that LLVM vectorises; E2M1's as
/// [`quantize_at_inverse`]; a NaN-scale block's as [`quantize`], NaN. CPU only, as
/// [`fp8_scale::quantize_once_to_odd`].
#[inline(always)]
pub fn quantize_blocks_inline(
    x: &[u32],
    element: ElementFormat,
    rule: ScaleRule,
    residual: Residual,
    q: &mut [u8],
    scales: &mut [u8],
) -> Result<Option<usize>, BlockError> {
    let blocks = x.len().div_ceil(BLOCK_SIZE);
    for (slice, len, expected) in [("q", q.len(), x.len()), ("d", scales.len(), blocks)] {
        if len != expected {
            return Err(BlockError::Length { slice, expected });
        }
    }
    let mut first_nonfinite = None;
    let groups = x.chunks(BLOCK_SIZE).zip(q.chunks_mut(BLOCK_SIZE)).zip(scales.iter_mut());
    for (block, ((values, codes), scale)) in groups.enumerate() {
        let (amax, nonfinite) = fp8_scale::amax_slice(values);
        *scale = match nonfinite {
            Some(at) => {
                first_nonfinite = first_nonfinite.or(Some(block * BLOCK_SIZE + at));
                e8m0::NAN
            }
            None => scale_code(amax, element, rule),
        };
        let s = inverse_scale(*scale);
        let once = |format| move |v| fp8_scale::quantize_once_to_odd(v, s, format, residual);
        match (*scale == e8m0::NAN, element) {
            (true, _) => fp8_scale::each(values, codes, |v| quantize(v, e8m0::NAN, element)),
            (false, ElementFormat::E4M3) => fp8_scale::each(values, codes, once(Fp8Format::E4M3)),
            (false, ElementFormat::E5M2) => fp8_scale::each(values, codes, once(Fp8Format::E5M2)),
            (false, ElementFormat::E2M1) => fp8_scale::each(values, codes, |v| e2m1_once(v, s)),
        }
    }
    Ok(first_nonfinite)
}
