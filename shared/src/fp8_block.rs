//! Block-scaled FP8 (OCP E4M3 and E5M2) by the exact recipe: the definitions one
//! implementation shares between the CPU, the kernels and `bitexact cast`.
//!
//! A 2-D tensor of `rows × cols` f32 values, row-major, is cut into [`Blocks`]: one row
//! each ([`Blocks::PerRow`], "per channel": compressed-tensors' `channel` strategy, one
//! scale per output row of a Linear weight), or tiles of `h × w` ([`Blocks::Tiles`];
//! 128 × 128 is DeepSeek-V3's `weight_block_size` and compressed-tensors' `block`
//! strategy), the last ones partial where the shape is not a multiple of the tile. For
//! each block:
//!
//! * `amax = max |x|` over the block's finite values ([`fp8_scale::amax_slice`] on each
//!   of its row segments). A partial block's missing values count as zeros, as the
//!   producers pad them, which changes no maximum of magnitudes;
//! * the stored dequantisation scale `d = fl32(amax / max)`, the correctly rounded f32
//!   division (`max` is 448 for E4M3, 57344 for E5M2); 1 for an all-zero block (every
//!   `q` is then 0 whatever `d` is), and `2^-149`, the smallest positive f32, where the
//!   quotient rounds to zero ([`dequant_scale_for`]);
//! * each element `q = sat_rne(x / d)`: the exact quotient rounded once to nearest, ties
//!   to even, saturating at `±max` (infinite `x` included); NaN gives NaN with its sign
//!   ([`quantize_quotient`]).
//!
//! So `q · d`, what a reader of the checkpoint computes to dequantise, is the multiple of
//! the stored `d` by an FP8 value that is nearest to `x`: as close as that `d` allows. The
//! producers' recipes do not promise that: they multiply by a rounded reciprocal of the
//! scale, or round the quotient to f32 or bf16 before FP8 (two roundings), and some round
//! the scale to bf16 first.
//!
//! # Why one f64 division rounds as the exact quotient does
//! Let `y = x / d` for f32 magnitudes `x = X · 2^a` and `d = D · 2^b` (`X`, `D` integers
//! below 2^24), and let `t = M · 2^j` be any point where the FP8 rounding changes: a
//! midpoint between neighbouring FP8 values (at most 5 significant bits), or `max`.
//! If `y ≠ t`, then `y − t = (X · 2^a − M · D · 2^(j+b)) / (D · 2^b)`, whose numerator is a
//! non-zero multiple of `2^min(a, j+b)`. With `min = j + b` that puts `y` at least
//! `1 / (M · D) > 2^-29` of `t` away, relatively; with `min = a < j + b`, `y` near `t`
//! needs `X ≈ M · D · 2^(j+b−a)`, so `2^(j+b−a) ≤ 2^24 / (M · D)`, and `y` is at least
//! `2^-24` of `t` away, relatively. Every such `y` lies in f64's normal range (`2^-277` …
//! `2^277`), where `fl64` moves a value by at most `2^-53` relatively and keeps its order
//! with every f64, `t` included. So `fl64(y)` is on the same side of every `t` as `y`, and
//! on `t` exactly when `y` is: rounding `fl64(y)` once more to FP8
//! ([`crate::narrow::round_magnitude_f64`]) gives `y` rounded once. The GPU's `div.rn.f64`
//! is the same correctly rounded division.
//!
//! Proven on every f32 `x` at one scale per format that is not a power of two (and on a
//! sample at 14 scales), and `d` on every finite `amax`, against
//! rational arithmetic on integers (`conformance::reference::scaled`), by
//! `tests/tests/fp8_block.rs`.
//!
//! # With a power-of-two scale (UE8M0)
//! DeepSeek-V3.1's checkpoints and DeepGEMM on Blackwell take block scales that are
//! powers of two (`scale_fmt: "ue8m0"`: each `d` an E8M0 value). The exact recipe then
//! stores `d = 2^k`, the least power of two with `amax ≤ max · 2^k` (no value of the block
//! saturates), `k` clamped to E8M0's `−127 ..= 127`; 1 for an all-zero block
//! ([`ue8m0_scale_for`], [`Recipe::ExactUe8m0`]); each `q = sat_rne(x / d)` as above, now
//! an exact division by a power of two. `k` is [`crate::mx`]'s [`ScaleRule::Fit`]
//! exponent, proven there; `d` is checked on every finite `amax` against its defining
//! inequalities in exact arithmetic by `tests/tests/fp8_block.rs`.
//!
//! DeepGEMM's own UE8M0 scale ([`Recipe::DeepGemmUe8m0`], [`deepgemm_ue8m0_scale`]) is
//! its `sf` rounded up to a power of two on its bits. It is the exact recipe's on every
//! `amax` from `1e-4` up (checked on every finite `amax` for E4M3 and on a sample for
//! E5M2, the same file), and its codes are too (`x · 2^-k`, exact, rounded once); below `1e-4` DeepGEMM clamps `amax`.
//!
//! # With a bfloat16 scale
//! transformers loads compressed-tensors' `weight_scale` into a parameter of the model's
//! dtype, so a bfloat16 model's f32 scales are rounded to bfloat16 as they are loaded, and
//! `q · d` is no longer what the cast computed. The exact recipe can store `d` in
//! bfloat16 instead: the least bfloat16 with `amax ≤ max · d` ([`bf16_scale_for`],
//! [`Recipe::ExactBf16`]; 1 for an all-zero block, `2^-133` at least), `q = sat_rne(x /
//! d)` as above, so no value of a block saturates and both f32 and bfloat16 readers
//! dequantise with the `d` stored. `d` is checked on every finite `amax` against its
//! defining inequalities in exact arithmetic by `tests/tests/fp8_block.rs`.
//!
//! # On the CPU: the quotient rounded to odd, in vector loops
//! The f64 division per value and the branches of the f64 rounding keep a loop over
//! [`quantize_quotient`] scalar. [`quantize_quotient_to_odd`] gives the same code from an
//! f32 division: `p = fl32(x / d)`, then `p · d` in f64, exact (two significands of 24
//! bits at most, exponents far inside f64's range), compared with `x`, which says exactly
//! whether `x / d = p` and, if not, on which side of `p` it lies
//! ([`quotient_to_odd`]). The f32 next to `x / d` towards zero, its last bit set where the
//! quotient is inexact, is `x / d` rounded to odd, and it rounds to FP8 as `x / d` does:
//! every FP8 value and midpoint is an f32 with its last bit clear, at least two bits
//! above f32's last (the smallest, E5M2's first midpoint `2^-17`, is far above f32's
//! `2^-149`), so none lies on or strictly between the two. A finite `x` whose quotient
//! overflows f32 gets `±f32::MAX`, which saturates as `x / d` does. The FP8 rounding is
//! then the by-addition one of [`fp8_scale::quantize_once_to_odd`], without a branch, so
//! LLVM vectorises the loop ([`quantize_blocks_inline`]: `bitexact cast` compiles it
//! once per CPU level). compressed-tensors' codes get the same FP8 rounding
//! ([`compressed_tensors_quantize_by_addition`]) and DeepGEMM's the one of
//! [`fp8_scale::quantize_two_step_by_addition`]. Each is proven equal to its scalar form on
//! the same inputs as the scalar form, by the same walks.

use crate::bfloat16;
use crate::e8m0;
use crate::fp8::{e4m3, e5m2};
use crate::fp8_scale::{self, Fp8Format, magnitude_bits};
use crate::mx::{self, ElementFormat, ScaleRule};
use crate::narrow::round_magnitude_f64;
use crate::nvfp4::WeightDtype;

/// The smallest positive f32, `2^-149`: the least dequantisation scale.
const MIN_SCALE: f32 = f32::from_bits(1);

/// The dequantisation scale `d = fl32(amax / max)` of a block whose largest finite
/// magnitude is `amax` (finite, non-negative): 1 for `amax = 0`, and at least `2^-149`.
/// A non-finite or negative `amax` is the caller's error: the result is then
/// unspecified.
#[inline]
pub fn dequant_scale_for(amax: f32, format: Fp8Format) -> f32 {
    if amax == 0.0 {
        return 1.0;
    }
    let d = amax / format.max_finite();
    if d == 0.0 { MIN_SCALE } else { d }
}

/// The exact recipe's power-of-two dequantisation scale `d = 2^k` of a block whose
/// largest finite magnitude is `amax` (finite, non-negative): the least `k` with `amax ≤
/// max · 2^k`, clamped to `−127 ..= 127` (so `2^-127`, an f32 subnormal, for an `amax`
/// below `max · 2^-127`); 1 for `amax = 0`. [`Recipe::ExactUe8m0`].
#[inline]
pub fn ue8m0_scale_for(amax: f32, format: Fp8Format) -> f32 {
    if amax == 0.0 {
        return 1.0;
    }
    let element = match format {
        Fp8Format::E4M3 => ElementFormat::E4M3,
        Fp8Format::E5M2 => ElementFormat::E5M2,
    };
    f32::from_bits(e8m0::to_f32_bits(mx::scale_code(amax.to_bits(), element, ScaleRule::Fit)))
}

/// DeepGEMM's UE8M0 scale ([`Recipe::DeepGemmUe8m0`]) of a block whose largest finite
/// magnitude is `amax` (finite, non-negative): its `sf` ([`deepgemm_scale`]) rounded up to
/// a power of two on its bits, as `ceil_to_ue8m0` computes it (the biased exponent plus
/// one where any fraction bit is set, clamped to `1 ..= 254`). `sf` is at least `1e-4 /
/// 57344`, a normal f32, so the clamp never acts and the result is `2^k` with `sf ≤ 2^k <
/// 2 · sf`.
#[inline]
pub fn deepgemm_ue8m0_scale(amax: f32, format: Fp8Format) -> f32 {
    const FRACTION: u32 = 0x007F_FFFF;
    let bits = deepgemm_scale(amax, format).to_bits();
    // Its bounds are constants: no panic path.
    let exponent = ((bits >> 23) + u32::from(bits & FRACTION != 0)).clamp(1, 254);
    f32::from_bits(exponent << 23)
}

/// The f32 bits of bfloat16's smallest positive value, `2^-133`.
const BF16_MIN_BITS: u32 = 0x0001_0000;
/// The step between neighbouring positive bfloat16 values, in f32 bits.
const BF16_STEP: u32 = 0x0001_0000;

/// The exact recipe's bfloat16 dequantisation scale ([`Recipe::ExactBf16`]) of a block
/// whose largest finite magnitude is `amax` (finite, non-negative): the least bfloat16
/// `d` with `amax ≤ max · d`, so that no value of the block saturates (`2^-133`,
/// bfloat16's least positive value, for an `amax` below `max · 2^-133`); 1 for `amax =
/// 0`. A reader that holds the scale in bfloat16 (transformers does, for a bfloat16
/// model) then dequantises with the `d` stored.
#[inline]
pub fn bf16_scale_for(amax: f32, format: Fp8Format) -> f32 {
    if amax == 0.0 {
        return 1.0;
    }
    let max = f64::from(format.max_finite());
    // max · d is exact in f64 (3 significant bits times 8).
    let fits = |bits: u32| f64::from(amax) <= max * f64::from(f32::from_bits(bits));
    // q = amax / max, rounded to f64, to f32 and then to bfloat16, is within half a
    // bfloat16 step (plus f32's far smaller error) of q: the least bfloat16 at or above q
    // (the answer) or the one below it. So one step up, or (never, in fact) one down.
    let quotient = (f64::from(amax) / max) as f32;
    let mut bits = bfloat16::to_f32_bits(bfloat16::from_f32_bits(quotient.to_bits())).max(BF16_MIN_BITS);
    if !fits(bits) {
        bits += BF16_STEP;
    } else if bits > BF16_MIN_BITS && fits(bits - BF16_STEP) {
        bits -= BF16_STEP;
    }
    f32::from_bits(bits)
}

/// `sat_rne(x / d)`: the exact quotient of the f32 `x` (bits) by the positive finite
/// scale `d`, rounded to nearest, ties to even, straight to `format` (the module's
/// argument: one f64 division, then the FP8 rounding), saturating at `±max` (infinite
/// `x` included); NaN gives NaN with `x`'s sign, ±0 gives ±0.
#[inline]
pub fn quantize_quotient(x: u32, d: f32, format: Fp8Format) -> u8 {
    let quotient = (f64::from(f32::from_bits(magnitude_bits(x))) / f64::from(d)).to_bits();
    let sign = (x >> 24) as u8 & 0x80;
    let (magnitude, max, nan) = match format {
        Fp8Format::E4M3 => (round_magnitude_f64::<4, 3>(quotient), e4m3::MAX_ABS, e4m3::NAN_ABS),
        Fp8Format::E5M2 => (round_magnitude_f64::<5, 2>(quotient), e5m2::MAX_FINITE, e5m2::NAN_ABS),
    };
    let magnitude = if magnitude > u32::from(max) { max } else { magnitude as u8 };
    sign | if magnitude_bits(x) > 0x7F80_0000 { nan } else { magnitude }
}

/// `x / d` (`x` as f32 bits, `d` positive and finite) rounded to odd in f32 (bits, `x`'s
/// sign): the exact quotient where f32 holds it, else the f32 next to it towards zero
/// with its last mantissa bit set; `±f32::MAX` for a finite `x` whose quotient overflows
/// f32. For infinite or NaN `x` it is unspecified (the callers take those from `x`). The
/// module's doc says why: `fl32(x / d) · d` is exact in f64. CPU only, as
/// [`quantize_quotient_to_odd`].
#[inline(always)]
pub fn quotient_to_odd(x: u32, d: f32) -> u32 {
    let x = f32::from_bits(x);
    let p = x / d;
    let (exact, back) = (f64::from(x), f64::from(p) * f64::from(d));
    // Whether x / d differs from p, and whether it lies nearer zero (then p is not zero:
    // one step down in its bits is one step towards zero).
    let (inexact, below) = (exact != back, exact.abs() < back.abs());
    let down = u32::from(inexact & below);
    (p.to_bits().wrapping_sub(down)) | u32::from(inexact)
}

/// [`quantize_quotient`] by [`quotient_to_odd`] and the by-addition FP8 rounding (the
/// module's doc): the same code for every `x` and positive finite `d`
/// (`tests/tests/fp8_block.rs`), without a branch. CPU only: the FP8 rounding adds in f32,
/// which a GPU may flush to zero.
#[inline(always)]
pub fn quantize_quotient_to_odd(x: u32, d: f32, format: Fp8Format) -> u8 {
    fp8_scale::saturating_code(x, quotient_to_odd(x, d), format)
}

/// The least amax DeepGEMM's recipe takes: `1e-4` as an f32 (its `clamp(1e-4)` on an
/// f32 tensor rounds the bound to f32).
pub const DEEPGEMM_MIN_AMAX: f32 = 1e-4;

/// Which recipe a block's scale and codes follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Recipe {
    /// The exact recipe (the module's doc): `d = fl32(amax / max)`, `q = sat_rne(x / d)`,
    /// `d` stored.
    #[default]
    Exact,
    /// DeepGEMM's `per_block_cast_to_fp8` (`deep_gemm/utils/math.py`, the same code as
    /// vLLM's `utils/deep_gemm.py`), modelled on its source as it runs on a CUDA device:
    /// `A = max(amax, 1e-4)` in f32;
    /// `sf = fl32(A · fl32(1 / max))` (PyTorch's CUDA `tensor / scalar` multiplies by the
    /// scalar's rounded reciprocal); `q = rne(fl32(x · fl32(1 / sf)))` (the reciprocal and
    /// the product each rounded to f32, then the FP8 rounding); `sf` stored
    /// (`weight_scale_inv`). DeepGEMM does not clamp the product, and need not: for
    /// `|x| ≤ A` the exact `x · fl32(1 / sf)` is at most `max · (1 + 2^-24)^2 / (1 −
    /// 2^-24)^2`, about `max · (1 + 2^-22)`, and its f32 rounding stays far below the FP8
    /// overflow threshold (464 for E4M3), so the saturating rounding used here gives its
    /// codes. Its values are finite: PyTorch's `amax` would carry a NaN or an infinity into
    /// `sf`, which this recipe leaves out of `amax` (a caller that keeps non-finite values
    /// no longer matches DeepGEMM). [`deepgemm_scale`], [`deepgemm_quantize`].
    DeepGemm,
    /// DeepGEMM's `per_block_cast_to_fp8` with `use_ue8m0=True` (`deep_gemm/utils/math.py`
    /// from 7f2a703, 2026-04-17, on; before it, `ceil_to_ue8m0` took `ceil(log2(sf))`,
    /// which stays a power low where `sf` is just above a power of two): [`Recipe::DeepGemm`]'s
    /// `sf` rounded up to a power of two on its bits ([`deepgemm_ue8m0_scale`]), `q =
    /// rne(fl32(x · fl32(1 / sf)))` as [`Recipe::DeepGemm`]'s, here `x / sf` rounded once
    /// (a power of two's reciprocal and the product are exact). That is
    /// [`Recipe::ExactUe8m0`]'s scale and codes for every block whose `amax` is at least
    /// `1e-4`; a block below it gets the clamp's scale, `2^-22` for E4M3 (`2^-29` for
    /// E5M2), where the exact recipe's is the same or smaller (1 for an all-zero block). Finite values
    /// only, as [`Recipe::DeepGemm`].
    DeepGemmUe8m0,
    /// The exact recipe with a power-of-two scale (`scale_fmt: "ue8m0"`; the module's
    /// doc): `d = 2^k` the least with `amax ≤ max · 2^k` ([`ue8m0_scale_for`]), `q =
    /// sat_rne(x / d)`, `d` stored.
    ExactUe8m0,
    /// The exact recipe with a bfloat16 scale (the module's doc): `d` the least bfloat16
    /// with `amax ≤ max · d` ([`bf16_scale_for`]), `q = sat_rne(x / d)`, `d` stored in
    /// bfloat16, which a reader holding scales in a bfloat16 model's dtype keeps exactly.
    ExactBf16,
    /// compressed-tensors' FP8 `channel` and `block` strategies (its `FP8_DYNAMIC` and
    /// `FP8_BLOCK` presets, as llm-compressor's `oneshot` and `model_free_ptq` run them),
    /// modelled on vllm-project/compressed-tensors 0.19.0 to 0.20.1 (the releases on PyPI in
    /// 2026-12), every step in the weights' dtype `W` ([`WeightDtype`]; PyTorch computes a
    /// bfloat16 operation in f32 and rounds the result to bfloat16), the same on a CPU and
    /// on a CUDA device:
    /// * `amax = max(|min|, |max|)` of the block, the minimum and maximum taken with 0
    ///   (`quantization/utils/helpers.py` `calculate_qparams`): the largest magnitude, a
    ///   zero-padded partial block's too;
    /// * `s = W(fl32(amax / max))`: `max_val_pos / (bit_range.to(dtype) / 2)`, a tensor
    ///   divided by a tensor, correctly rounded on either device (0.18.0 and earlier
    ///   divided by the Python float `448.0`, which PyTorch's CUDA kernel turns into a
    ///   multiplication by its rounded reciprocal: not modelled); `torch.finfo(W).eps`
    ///   where that is 0 (from 0.13.0: `2^-7` for bfloat16, `2^-23` for f32; earlier
    ///   releases clamped every scale to at least f32's eps); stored in `W`
    ///   ([`compressed_tensors_scale`]);
    /// * `q = rne(clamp(W(fl32(x / s)), ±max))`: a tensor divided by a tensor, correctly
    ///   rounded, then `W`, `torch.clamp`, and `.to(float8)`
    ///   (`quantization/lifecycle/forward_helpers.py` `_quantize`;
    ///   `quant_args.py` `round_to_quantized_type_args`), so two roundings
    ///   ([`compressed_tensors_quantize`]).
    ///
    /// Its values are finite: PyTorch's `amin`/`amax` would carry a NaN into the block's
    /// scale, which this recipe leaves out of `amax`.
    CompressedTensors(WeightDtype),
}

impl Recipe {
    /// Every recipe, compressed-tensors' for both weight dtypes: the list the block tests
    /// (`tests/tests/fp8_block.rs`, the block-scale example's) walk.
    pub const ALL: [Recipe; 7] = [
        Recipe::Exact,
        Recipe::DeepGemm,
        Recipe::DeepGemmUe8m0,
        Recipe::ExactUe8m0,
        Recipe::ExactBf16,
        Recipe::CompressedTensors(WeightDtype::F32),
        Recipe::CompressedTensors(WeightDtype::Bf16),
    ];
}

/// compressed-tensors' FP8 scale ([`Recipe::CompressedTensors`]) of a block of weights of
/// dtype `weights` whose largest finite magnitude is `amax` (finite, non-negative):
/// `W(fl32(amax / max))`, and `torch.finfo(W).eps` where that is 0.
#[inline]
pub fn compressed_tensors_scale(amax: f32, format: Fp8Format, weights: WeightDtype) -> f32 {
    let s = weights.round(amax / format.max_finite());
    if s == 0.0 { weights.epsilon() } else { s }
}

/// compressed-tensors' FP8 code ([`Recipe::CompressedTensors`]) of the weight `x` (f32
/// bits of a value of dtype `weights`) in a block of scale `s` (positive, finite):
/// `rne(clamp(W(fl32(x / s)), ±max))`. A NaN gives NaN with its sign (not checked against
/// compressed-tensors: the recipe takes finite values).
#[inline]
pub fn compressed_tensors_quantize(x: u32, s: f32, format: Fp8Format, weights: WeightDtype) -> u8 {
    let max = format.max_finite();
    // f32::clamp keeps a NaN, as torch.clamp does (its bounds are constants: no panic).
    let y = weights.round(f32::from_bits(x) / s).clamp(-max, max);
    format.from_f32_bits_saturating(y.to_bits())
}

/// [`compressed_tensors_quantize`] by the by-addition FP8 rounding, which saturates as
/// the clamp to `±max` does: the same code for every `x` and positive finite `s`
/// (`tests/tests/fp8_block.rs`), without a branch. CPU only, as
/// [`quantize_quotient_to_odd`].
#[inline(always)]
pub fn compressed_tensors_quantize_by_addition(x: u32, s: f32, format: Fp8Format, weights: WeightDtype) -> u8 {
    fp8_scale::saturating_code(x, weights.round(f32::from_bits(x) / s).to_bits(), format)
}

/// DeepGEMM's scale `sf = fl32(max(amax, 1e-4) · fl32(1 / max))` of a block whose largest
/// finite magnitude is `amax` (finite, non-negative; a NaN gives the clamp's scale here,
/// where PyTorch's `clamp` would keep the NaN):
/// [`Recipe::DeepGemm`].
#[inline]
pub fn deepgemm_scale(amax: f32, format: Fp8Format) -> f32 {
    let clamped = if amax >= DEEPGEMM_MIN_AMAX { amax } else { DEEPGEMM_MIN_AMAX };
    clamped * (1.0 / format.max_finite())
}

/// DeepGEMM's code of the f32 `x` (bits) in a block of scale `sf`:
/// `rne(fl32(x · fl32(1 / sf)))`, through [`fp8_scale::quantize`]'s two-step rounding
/// (saturating, which changes nothing for the block's own values: [`Recipe::DeepGemm`]).
/// [`quantize_blocks_with`] computes the same with the reciprocal taken once per block.
#[inline]
pub fn deepgemm_quantize(x: u32, sf: f32, format: Fp8Format) -> u8 {
    fp8_scale::quantize(x, 1.0 / sf, format, fp8_scale::Rounding::TwoStep)
}

/// How a 2-D tensor is cut into blocks that share a scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Blocks {
    /// One block per row (per output channel of a Linear weight): scales of shape
    /// `[rows, 1]`.
    PerRow,
    /// Tiles of `rows × cols` (both at least 1), the last ones partial: scales of shape
    /// `[⌈rows / h⌉, ⌈cols / w⌉]`.
    Tiles {
        /// Tile height.
        rows: usize,
        /// Tile width.
        cols: usize,
    },
}

impl Blocks {
    /// DeepSeek-V3's and compressed-tensors' 128 × 128 tiles.
    pub const TILE_128: Blocks = Blocks::Tiles { rows: 128, cols: 128 };

    /// The tile's height and width in a tensor of `cols` columns (a row is `1 × cols`);
    /// `None` for a tile with a zero side.
    #[inline]
    pub const fn extent(self, cols: usize) -> Option<(usize, usize)> {
        match self {
            Blocks::PerRow => Some((1, cols)),
            Blocks::Tiles { rows: 0, .. } | Blocks::Tiles { cols: 0, .. } => None,
            Blocks::Tiles { rows, cols } => Some((rows, cols)),
        }
    }

    /// The shape of the scales of a `rows × cols` tensor, `[⌈rows / h⌉, ⌈cols / w⌉]`
    /// (`[rows, 1]` per row); `None` for a tile with a zero side.
    #[inline]
    pub const fn scale_shape(self, rows: usize, cols: usize) -> Option<(usize, usize)> {
        match (self, self.extent(cols)) {
            (Blocks::PerRow, _) => Some((rows, 1)),
            (_, Some((h, w))) => Some((rows.div_ceil(h), cols.div_ceil(w))),
            (_, None) => None,
        }
    }
}

/// Why [`quantize_blocks`] did not run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockError {
    /// A tile with a zero side.
    EmptyTile,
    /// `rows · cols` does not fit a `usize`.
    TooLarge,
    /// `x`, `q` or `d` does not have the length the shape asks for (`rows · cols`, or the
    /// number of blocks): which one, and the length it should have.
    Length {
        /// `"x"`, `"q"` or `"d"`.
        slice: &'static str,
        /// The length the shape asks for.
        expected: usize,
    },
}

/// The CPU form of the recipe on a whole `rows × cols` tensor `x` (f32 bits, row-major):
/// each block's scale into `d` (row-major, of [`Blocks::scale_shape`]) and each element's
/// code into `q`. Returns the index in `x` of the first non-finite value, if any (it is
/// quantised too, as [`quantize_quotient`] says, and left out of its block's `amax`), for
/// the caller that refuses such tensors.
pub fn quantize_blocks(
    x: &[u32],
    rows: usize,
    cols: usize,
    blocks: Blocks,
    format: Fp8Format,
    q: &mut [u8],
    d: &mut [f32],
) -> Result<Option<usize>, BlockError> {
    quantize_blocks_with(Recipe::Exact, x, rows, cols, blocks, format, q, d)
}

/// [`quantize_blocks`] by `recipe`: each block's stored scale (`d`, DeepGEMM's `sf`, or
/// compressed-tensors' `s`) into `d`, each code into `q`. An empty tensor's blocks get 1
/// by every recipe. [`quantize_blocks_inline`] compiled for the baseline target (the
/// kernels' CPU twin); `bitexact cast` compiles that for each CPU level instead.
#[allow(clippy::too_many_arguments)]
pub fn quantize_blocks_with(
    recipe: Recipe,
    x: &[u32],
    rows: usize,
    cols: usize,
    blocks: Blocks,
    format: Fp8Format,
    q: &mut [u8],
    d: &mut [f32],
) -> Result<Option<usize>, BlockError> {
    quantize_blocks_inline(recipe, x, rows, cols, blocks, format, q, d)
}

/// [`quantize_blocks_with`]'s body, `#[inline(always)]` as [`fp8_scale::quantize_slice`]
/// is, to be compiled with the caller's target features: each block row's codes in one
/// loop per recipe that LLVM vectorises ([`quantize_block_row`]), each amax by
/// [`fp8_scale::amax_slice`]. CPU only, as [`quantize_quotient_to_odd`].
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn quantize_blocks_inline(
    recipe: Recipe,
    x: &[u32],
    rows: usize,
    cols: usize,
    blocks: Blocks,
    format: Fp8Format,
    q: &mut [u8],
    d: &mut [f32],
) -> Result<Option<usize>, BlockError> {
    let ((h, w), (block_rows, block_cols)) = match (blocks.extent(cols), blocks.scale_shape(rows, cols)) {
        (Some(extent), Some(shape)) => (extent, shape),
        _ => return Err(BlockError::EmptyTile),
    };
    let elements = rows.checked_mul(cols).ok_or(BlockError::TooLarge)?;
    for (slice, len, expected) in
        [("x", x.len(), elements), ("q", q.len(), elements), ("d", d.len(), block_rows.saturating_mul(block_cols))]
    {
        if len != expected {
            return Err(BlockError::Length { slice, expected });
        }
    }
    if elements == 0 {
        // Every block is empty: `amax = 0`.
        d.fill(1.0);
        return Ok(None);
    }
    // Bands of `h` rows (the last one shorter), each with its row of scales; `cols`,
    // `band` and `block_cols` are at least 1 here.
    let band = h.saturating_mul(cols);
    let mut first_nonfinite: Option<usize> = None;
    let bands = x.chunks(band).zip(q.chunks_mut(band)).zip(d.chunks_mut(block_cols));
    for (band_index, ((x_band, q_band), scales)) in bands.enumerate() {
        for (block_col, scale) in scales.iter_mut().enumerate() {
            let start = block_col.saturating_mul(w);
            let columns = start..cols.min(start.saturating_add(w));
            let mut amax = 0;
            for (row_in_band, row) in x_band.chunks(cols).enumerate() {
                let (row_amax, nonfinite) = fp8_scale::amax_slice(row.get(columns.clone()).unwrap_or(&[]));
                amax = amax.max(row_amax);
                if let Some(at) = nonfinite {
                    let index = band_index * band + row_in_band * cols + start + at;
                    first_nonfinite = Some(first_nonfinite.map_or(index, |first| first.min(index)));
                }
            }
            *scale = match recipe {
                Recipe::Exact => dequant_scale_for(f32::from_bits(amax), format),
                Recipe::DeepGemm => deepgemm_scale(f32::from_bits(amax), format),
                Recipe::DeepGemmUe8m0 => deepgemm_ue8m0_scale(f32::from_bits(amax), format),
                Recipe::ExactUe8m0 => ue8m0_scale_for(f32::from_bits(amax), format),
                Recipe::ExactBf16 => bf16_scale_for(f32::from_bits(amax), format),
                Recipe::CompressedTensors(weights) => compressed_tensors_scale(f32::from_bits(amax), format, weights),
            };
            for (x_row, q_row) in x_band.chunks(cols).zip(q_band.chunks_mut(cols)) {
                if let (Some(values), Some(codes)) = (x_row.get(columns.clone()), q_row.get_mut(columns.clone())) {
                    quantize_block_row(recipe, values, *scale, format, codes);
                }
            }
        }
    }
    Ok(first_nonfinite)
}

/// `codes[i]` = `recipe`'s code of `values[i]` in a block whose stored scale is `scale`,
/// over `min(values.len(), codes.len())` elements: [`quantize_quotient_to_odd`] (the exact
/// recipes), [`fp8_scale::quantize_two_step_by_addition`] at `fl32(1 / sf)` (DeepGEMM's)
/// or [`compressed_tensors_quantize_by_addition`], one loop per recipe and format, each
/// branch-free so that LLVM vectorises it. `#[inline(always)]`, as
/// [`quantize_blocks_inline`]. CPU only.
#[inline(always)]
pub fn quantize_block_row(recipe: Recipe, values: &[u32], scale: f32, format: Fp8Format, codes: &mut [u8]) {
    // The format a constant in each loop: its rounding's fields fold.
    match format {
        Fp8Format::E4M3 => block_row_in(recipe, values, scale, Fp8Format::E4M3, codes),
        Fp8Format::E5M2 => block_row_in(recipe, values, scale, Fp8Format::E5M2, codes),
    }
}

/// [`quantize_block_row`] for one format.
#[inline(always)]
fn block_row_in(recipe: Recipe, values: &[u32], scale: f32, format: Fp8Format, codes: &mut [u8]) {
    use fp8_scale::each;
    match recipe {
        Recipe::Exact | Recipe::ExactUe8m0 | Recipe::ExactBf16 => {
            each(values, codes, |v| quantize_quotient_to_odd(v, scale, format));
        }
        Recipe::DeepGemm | Recipe::DeepGemmUe8m0 => {
            let inverse = 1.0 / scale;
            each(values, codes, |v| fp8_scale::quantize_two_step_by_addition(v, inverse, format));
        }
        Recipe::CompressedTensors(WeightDtype::F32) => {
            each(values, codes, |v| compressed_tensors_quantize_by_addition(v, scale, format, WeightDtype::F32));
        }
        Recipe::CompressedTensors(WeightDtype::Bf16) => {
            each(values, codes, |v| compressed_tensors_quantize_by_addition(v, scale, format, WeightDtype::Bf16));
        }
    }
}
