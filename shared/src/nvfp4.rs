//! NVFP4: FP4 E2M1 elements ([`crate::fp4::e2m1`]) in blocks of [`BLOCK_SIZE`] = 16
//! consecutive values along the last axis, each block with an E4M3 scale `s`
//! ([`crate::fp8::e4m3`]), and one f32 scale per tensor. A reader dequantises an element
//! as `q · s · g`, where `g` is the tensor's dequantisation factor: ModelOpt stores `g`
//! itself (`weight_scale_2`), compressed-tensors its quantisation multiplier `gs`
//! (`weight_global_scale`, `q · s / gs`).
//!
//! # The exact recipe ([`Nvfp4Recipe::Exact`])
//! For a tensor whose largest magnitude is `amax` and a block whose largest is `b`:
//! * `g = fl32(amax / 2688)` (`2688 = 6 · 448`, E2M1's largest value times E4M3's), the
//!   correctly rounded division; 1 for `amax = 0`, and `2^-149`, the smallest positive
//!   f32, where the quotient rounds to zero ([`global_scale`]);
//! * `s = sat_rne_e4m3(b / (6 · g))`, the exact quotient rounded once to E4M3, saturating
//!   at 448; E4M3's smallest value `2^-9` where that rounds to zero, and 1 for `b = 0`
//!   ([`block_scale`]);
//! * each element `q = sat_rne_e2m1(x / (s · g))`, the exact quotient rounded once to
//!   E2M1, ties to even, saturating at ±6 ([`quantize`]).
//!
//! So `q · s · g` is the E2M1 multiple of the stored `s · g` nearest to `x`. Neither
//! producer promises that: both round the divisor `s · g` (or `s / gs`) to f32 and the
//! quotient to f32 before E2M1, and round the block scale twice.
//!
//! ## Why one f64 division rounds as the exact quotient does
//! [`crate::fp8_block`]'s argument, with wider divisors: `6 · g` has at most 26
//! significant bits and `s · g` at most 28 (4 of E4M3's, 24 of f32's), both exact in
//! f64, while E4M3's rounding points have at most 5 significant bits and E2M1's at most
//! 3. A quotient `y` that is not on a rounding point `t` is then at least `2^-31` of it
//! away, relatively, far above f64's `2^-53`, and every quotient lies in f64's normal
//! range; so `fl64(y)` is on the same side of every `t` as `y`, and on `t` exactly when
//! `y` is.
//!
//! # The producers' recipes, as their source computes on a CUDA device
//! PyTorch's CUDA `tensor / python_float` multiplies by the divisor's f32 reciprocal
//! (on the CPU it divides: ModelOpt's `g` computed there is the exact recipe's);
//! `python_float / tensor` is `tensor.reciprocal() · python_float`; a bfloat16 operation
//! is computed in f32 and rounded to bfloat16; a tensor divided by a tensor on the same
//! device is the correctly rounded division. Both producers round an element's f32 quotient `y` onto
//! E2M1 to nearest, ties to even, saturating at ±6, and set the sign bit where `y < 0`:
//! a `−0` input gives `+0`'s code, a small negative one `−0`'s ([`e2m1_of_quotient`]).
//! * **ModelOpt** ([`Nvfp4Recipe::ModelOpt`]; NVIDIA/Model-Optimizer 0.46.0 and 0.47.0dev,
//!   `modelopt/torch/quantization/qtensor/nvfp4_tensor.py`, the export's dynamic path
//!   after its default max calibration; not its static (MSE) block scales, the
//!   `four_over_six` option's 6 · 256, or W4A8's `amax / 448`): `g = fl32(amax ·
//!   fl32(1/2688))` (`weight_scale_2`); `s = e4m3(clamp(t, 2^-9, 448))` with `t =
//!   fl32(b / fl32(6 · g))`, a zero `t` made 1; `q` from `fl32(x / fl32(s · g))`.
//! * **compressed-tensors** ([`Nvfp4Recipe::CompressedTensors`]; vllm-project/compressed-tensors
//!   0.19.0 to 0.20.1, `quantization/utils/helpers.py` `generate_gparam` and `calculate_qparams`,
//!   `quantization/lifecycle/forward_helpers.py` `_quantize`, its eager path: the
//!   Triton kernels there are registered disabled), in the weight's dtype `W`
//!   (f32 or bfloat16; [`WeightDtype`]): `gs = W(fl32(W(fl32(1 / A)) · 2688))` with `A =
//!   max(amax, 2^-126)`, 1 where it is not finite (`2688 / A` is `A.reciprocal() · 2688`
//!   in PyTorch); `s = e4m3(clamp(fl32(gs · W(fl32(b / 6))), ±448))`, a zero `s` made
//!   0.125 (`b / 6` a tensor divided by a tensor, correctly rounded; 0.18.0 and earlier
//!   divided by the Python float `6.0`, which PyTorch's CUDA kernel turns into `b ·
//!   fl32(1/6)`: not modelled); `q` from `fl32(x / fl32(s / gs))`. Every step is the same
//!   on a CPU as on a CUDA device, so compressed-tensors' own code on CPU torch checks it
//!   (`scripts/block_peers.py`).
//!
//! `tests/tests/nvfp4.rs` checks each recipe against rational arithmetic on integers
//! (`conformance::reference::nvfp4`): the exact recipe's factor on every f32 `amax`,
//! every recipe's block scale on every `amax` at one factor and its elements on every f32
//! at one scale and factor (the f64 argument above covers the other scales), and all of
//! it on a sample at eight factors and seven scales. The producers' recipes are checked
//! against their steps as read in their sources (each rounded by the integer reference);
//! compressed-tensors' also against its own code on CPU torch, every scale and code equal
//! (`scripts/block_peers.py`); ModelOpt's too, given the factor `g` (its CPU run divides
//! there, and gives the exact recipe's `g`): every block scale and packed byte equal.

use crate::bfloat16;
use crate::fp4::e2m1;
use crate::fp8::e4m3;
use crate::fp8_block::BlockError;
use crate::fp8_scale::amax_slice;
use crate::fp8_scale::magnitude_bits;
use crate::narrow::{round_magnitude_branch_free, round_magnitude_f64};

/// The number of consecutive elements that share one E4M3 scale.
pub const BLOCK_SIZE: usize = 16;

/// `6 · 448`: E2M1's largest value times E4M3's, the divisor of the tensor scale.
pub const GLOBAL_DIVISOR: f32 = 2688.0;

/// E4M3's code of 1.
const E4M3_ONE: u8 = 0x38;
/// E4M3's code of `2^-9`, its smallest positive value.
const E4M3_MIN: u8 = 0x01;
/// E4M3's code of 0.125, compressed-tensors' stand-in for a zero scale (its
/// `_get_dtype_eps(float8_e4m3fn)`).
const E4M3_EIGHTH: u8 = 0x20;
/// `2^-9`, ModelOpt's least block scale.
const MODELOPT_MIN_SCALE: f32 = 1.0 / 512.0;

/// Which recipe a tensor's scales and codes follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Nvfp4Recipe {
    /// The exact recipe (the module's doc).
    #[default]
    Exact,
    /// NVIDIA ModelOpt's NVFP4 export, modelled on its source on a CUDA device.
    ModelOpt,
    /// compressed-tensors' `nvfp4-pack-quantized`, modelled on its source on a CUDA
    /// device.
    CompressedTensors,
}

/// The dtype a producer computes in: compressed-tensors rounds its scales' steps to the
/// weight's dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WeightDtype {
    /// f32 weights.
    F32,
    /// bfloat16 weights.
    Bf16,
}

impl WeightDtype {
    /// `v` rounded to this dtype (to nearest, ties to even), as an f32.
    #[inline]
    pub(crate) fn round(self, v: f32) -> f32 {
        match self {
            WeightDtype::F32 => v,
            WeightDtype::Bf16 => f32::from_bits(bfloat16::to_f32_bits(bfloat16::from_f32_bits(v.to_bits()))),
        }
    }

    /// PyTorch's `torch.finfo(dtype).eps`, the gap from 1 to the next value: `2^-23` for
    /// f32, `2^-7` for bfloat16.
    #[inline]
    pub const fn epsilon(self) -> f32 {
        match self {
            WeightDtype::F32 => f32::EPSILON,
            WeightDtype::Bf16 => 0.0078125,
        }
    }
}

/// The exact recipe's tensor dequantisation factor `g = fl32(amax / 2688)` for a tensor
/// whose largest magnitude is `amax` (finite, non-negative): 1 for `amax = 0`, and at
/// least `2^-149`.
#[inline]
pub fn global_scale(amax: f32) -> f32 {
    if amax == 0.0 {
        return 1.0;
    }
    let g = amax / GLOBAL_DIVISOR;
    if g == 0.0 { f32::from_bits(1) } else { g }
}

/// The exact recipe's E4M3 scale code of a block whose largest magnitude is `amax`
/// (finite, non-negative) in a tensor of factor `g` (positive, finite):
/// `sat_rne_e4m3(amax / (6 · g))` from the exact quotient, `2^-9` where that rounds to
/// zero, 1 for `amax = 0`.
#[inline]
pub fn block_scale(amax: f32, g: f32) -> u8 {
    if amax == 0.0 {
        return E4M3_ONE;
    }
    // 6 · g is exact in f64 (at most 26 significant bits): the module's argument.
    let quotient = (f64::from(amax) / (6.0 * f64::from(g))).to_bits();
    let rounded = round_magnitude_f64::<4, 3>(quotient);
    if rounded > u32::from(e4m3::MAX_ABS) {
        e4m3::MAX_ABS
    } else if rounded == 0 {
        E4M3_MIN
    } else {
        rounded as u8
    }
}

/// The value of the E4M3 code `scale`, as an f32.
#[inline]
fn e4m3_value(scale: u8) -> f32 {
    f32::from_bits(e4m3::to_f32_bits(scale))
}

/// The exact recipe's E2M1 code of the f32 `x` (bits) in a block of scale code `scale`
/// (a positive finite E4M3 value) in a tensor of factor `g` (positive, finite):
/// `sat_rne_e2m1(x / (s · g))` from the exact quotient, with `x`'s sign (`−0` gives
/// `−0`'s code); ±inf gives ±6 and NaN +6, as [`e2m1::from_f32_bits`].
#[inline]
pub fn quantize(x: u32, scale: u8, g: f32) -> u8 {
    if magnitude_bits(x) > 0x7F80_0000 {
        return e2m1::MAX_FINITE;
    }
    // s · g is exact in f64 (at most 28 significant bits): the module's argument.
    let d = f64::from(e4m3_value(scale)) * f64::from(g);
    let quotient = (f64::from(f32::from_bits(magnitude_bits(x))) / d).to_bits();
    let rounded = round_magnitude_f64::<2, 1>(quotient);
    let sign = (x >> 28) as u8 & e2m1::SIGN_MASK;
    sign | if rounded > u32::from(e2m1::MAX_FINITE) { e2m1::MAX_FINITE } else { rounded as u8 }
}

/// [`quantize`] of every element of `x` into `q` (the shorter length is taken), the
/// divisor `s · g` computed once: the form for a block or a tensor row, the NaN test a
/// select, so that the loop can vectorise.
#[inline(always)]
pub fn quantize_slice(x: &[u32], scale: u8, g: f32, q: &mut [u8]) {
    let d = f64::from(e4m3_value(scale)) * f64::from(g);
    for (q, &x) in q.iter_mut().zip(x) {
        let abs = magnitude_bits(x);
        let rounded = round_magnitude_f64::<2, 1>((f64::from(f32::from_bits(abs)) / d).to_bits());
        let magnitude = if rounded > u32::from(e2m1::MAX_FINITE) { e2m1::MAX_FINITE } else { rounded as u8 };
        let code = ((x >> 28) as u8 & e2m1::SIGN_MASK) | magnitude;
        *q = if abs > 0x7F80_0000 { e2m1::MAX_FINITE } else { code };
    }
}

/// [`e2m1_of_quotient`] without a branch (the E2M1 rounding by
/// [`round_magnitude_branch_free`], NaN and saturation by selects): the producers' slice
/// loops use it.
#[inline(always)]
fn e2m1_of_quotient_branch_free(y: f32) -> u8 {
    let abs = magnitude_bits(y.to_bits());
    let rounded = round_magnitude_branch_free::<2, 1>(abs);
    let magnitude =
        if rounded > u32::from(e2m1::MAX_FINITE) || abs > 0x7F80_0000 { e2m1::MAX_FINITE } else { rounded as u8 };
    (u8::from(y < 0.0) << 3) | magnitude
}

/// [`modelopt_quantize`] of every element of `x` into `q` (the shorter length is taken),
/// the divisor computed once, without a branch.
#[inline(always)]
pub fn modelopt_quantize_slice(x: &[u32], scale: u8, g: f32, q: &mut [u8]) {
    let d = e4m3_value(scale) * g;
    for (q, &x) in q.iter_mut().zip(x) {
        *q = e2m1_of_quotient_branch_free(f32::from_bits(x) / d);
    }
}

/// [`compressed_tensors_quantize`] of every element of `x` into `q` (the shorter length
/// is taken), the divisor computed once, without a branch.
#[inline(always)]
pub fn compressed_tensors_quantize_slice(x: &[u32], scale: u8, gs: f32, q: &mut [u8]) {
    let d = e4m3_value(scale) / gs;
    for (q, &x) in q.iter_mut().zip(x) {
        *q = e2m1_of_quotient_branch_free(f32::from_bits(x) / d);
    }
}

/// The producers' E2M1 code of an element's f32 quotient `y`: `|y|` rounded to nearest,
/// ties to even, saturating at 6, with the sign bit where `y < 0` (so `−0` gives `+0`'s
/// code: ModelOpt's `w < 0`, compressed-tensors' `torch.sign`). NaN gives +6 here (not
/// checked against either producer; `cast` refuses non-finite values).
#[inline]
pub fn e2m1_of_quotient(y: f32) -> u8 {
    let sign = if y < 0.0 { e2m1::SIGN_MASK } else { 0 };
    sign | e2m1::from_f32_bits(magnitude_bits(y.to_bits()))
}

/// ModelOpt's `weight_scale_2`, `g = fl32(amax · fl32(1/2688))`, for a tensor whose
/// largest magnitude is `amax` (`NVFP4QTensor.get_weights_scaling_factor_2`: an f32
/// tensor divided by a Python float, on CUDA a multiplication by its reciprocal). It is
/// 0 for an `amax` below about `2^-138.6` (an all-zero tensor included), and so is
/// `fl32(s · g)` for a small enough `g`: ModelOpt's blocks then divide by zero, and a
/// caller refuses such a tensor (the functions below assume `g` and `s · g` positive).
#[inline]
pub fn modelopt_global_scale(amax: f32) -> f32 {
    amax * (1.0 / GLOBAL_DIVISOR)
}

/// ModelOpt's E4M3 scale code of a block whose largest magnitude is `amax` in a tensor of
/// `weight_scale_2 = g` (`get_weights_scaling_factor`): `t = fl32(amax / fl32(6 · g))`,
/// 1 where `t` is zero, clamped to `[2^-9, 448]` (a NaN stays NaN, as `torch.clamp`
/// keeps it), rounded to E4M3 (`.to(torch.float8_e4m3fn)`, to nearest, ties to even).
#[inline]
pub fn modelopt_block_scale(amax: f32, g: f32) -> u8 {
    let t = amax / (6.0 * g);
    let t = if t == 0.0 { 1.0 } else { t };
    // f32::clamp keeps a NaN, as torch.clamp does (its bounds are constants: no panic).
    let t = t.clamp(MODELOPT_MIN_SCALE, 448.0);
    e4m3::from_f32_bits_satfinite(t.to_bits())
}

/// ModelOpt's E2M1 code of the f32 `x` (bits, the weight's value) in a block of scale
/// code `scale` in a tensor of `weight_scale_2 = g` (`NVFP4QTensor.quantize`):
/// [`e2m1_of_quotient`] of `fl32(x / fl32(s · g))`.
#[inline]
pub fn modelopt_quantize(x: u32, scale: u8, g: f32) -> u8 {
    let d = e4m3_value(scale) * g;
    e2m1_of_quotient(f32::from_bits(x) / d)
}

/// compressed-tensors' `weight_global_scale`, the quantisation multiplier `gs`, for a
/// tensor of dtype `source` whose largest magnitude is `amax` (`generate_gparam`:
/// `2688 / max(amax, tiny)` in the weight's dtype, which PyTorch computes as
/// `W(fl32(W(fl32(1 / A)) · 2688))`; `nan_to_num` makes an infinite one 1).
#[inline]
pub fn compressed_tensors_global_scale(amax: f32, source: WeightDtype) -> f32 {
    // finfo(W).tiny: 2^-126 for f32 and bfloat16 alike.
    let a = if amax < f32::MIN_POSITIVE { f32::MIN_POSITIVE } else { amax };
    let reciprocal = source.round(1.0 / a);
    let gs = source.round(reciprocal * GLOBAL_DIVISOR);
    if gs.is_finite() { gs } else { 1.0 }
}

/// compressed-tensors' E4M3 scale code of a block whose largest magnitude is `amax` in a
/// tensor of dtype `source` and global scale `gs` (`calculate_qparams`):
/// `fl32(gs · W(fl32(amax / 6)))` clamped to ±448 and rounded to E4M3, a zero made 0.125.
#[inline]
pub fn compressed_tensors_block_scale(amax: f32, gs: f32, source: WeightDtype) -> u8 {
    let per_block = source.round(amax / 6.0);
    let t = gs * per_block;
    let t = if t > 448.0 { 448.0 } else { t };
    let code = e4m3::from_f32_bits_satfinite(t.to_bits());
    if code & e4m3::ABS_MASK == 0 { E4M3_EIGHTH } else { code }
}

/// compressed-tensors' E2M1 code of the f32 `x` (bits, the weight's value) in a block of
/// scale code `scale` in a tensor of global scale `gs` (`_quantize`):
/// [`e2m1_of_quotient`] of `fl32(x / fl32(s / gs))`.
#[inline]
pub fn compressed_tensors_quantize(x: u32, scale: u8, gs: f32) -> u8 {
    let d = e4m3_value(scale) / gs;
    e2m1_of_quotient(f32::from_bits(x) / d)
}

/// The tensor scale a recipe stores for a tensor of dtype `source` whose largest
/// magnitude is `amax` (finite, non-negative): the dequantisation factor `g` for the
/// exact recipe ([`global_scale`]) and ModelOpt's ([`modelopt_global_scale`], which
/// computes in f32 whatever the weights' dtype), compressed-tensors' multiplier `gs`
/// ([`compressed_tensors_global_scale`]).
#[inline]
pub fn tensor_scale(recipe: Nvfp4Recipe, amax: f32, source: WeightDtype) -> f32 {
    match recipe {
        Nvfp4Recipe::Exact => global_scale(amax),
        Nvfp4Recipe::ModelOpt => modelopt_global_scale(amax),
        Nvfp4Recipe::CompressedTensors => compressed_tensors_global_scale(amax, source),
    }
}

/// NVFP4 quantisation of `x` (f32 bits of a tensor of dtype `source`, in blocks of
/// [`BLOCK_SIZE`] consecutive elements, the last one partial where `x.len()` is not a
/// multiple: a row-major tensor whose rows are a multiple of 16 long, so that no block
/// spans two rows, is such an `x`) by `recipe`, with the tensor scale `tensor` that
/// [`tensor_scale`] gives: each block's E4M3 scale code into `scales` (the recipe's block
/// scale of the block's largest finite magnitude), and each element's E2M1 code into
/// `packed`, two per byte, the even index in the low nibble ([`e2m1::pack`]; an odd
/// length's last byte has a zero high nibble). A block holding a NaN or an infinity gets
/// E4M3's NaN code and its codes are unspecified; the index in `x` of the first such
/// value is returned, for the caller that refuses such tensors (E2M1 holds neither).
/// [`quantize_blocks_inline`] compiled for the baseline target (the kernels' CPU twin);
/// `bitexact cast` compiles that for each CPU level instead.
pub fn quantize_blocks(
    x: &[u32],
    recipe: Nvfp4Recipe,
    tensor: f32,
    source: WeightDtype,
    packed: &mut [u8],
    scales: &mut [u8],
) -> Result<Option<usize>, BlockError> {
    quantize_blocks_inline(x, recipe, tensor, source, packed, scales)
}

/// [`quantize_blocks`]' body, `#[inline(always)]` as `fp8_scale::quantize_slice` is, to
/// be compiled with the caller's target features: each block's elements by the recipe's
/// slice loop ([`quantize_slice`], [`modelopt_quantize_slice`],
/// [`compressed_tensors_quantize_slice`], each without a branch, inlined here), which LLVM
/// vectorises with those features.
#[inline(always)]
pub fn quantize_blocks_inline(
    x: &[u32],
    recipe: Nvfp4Recipe,
    tensor: f32,
    source: WeightDtype,
    packed: &mut [u8],
    scales: &mut [u8],
) -> Result<Option<usize>, BlockError> {
    for (slice, len, expected) in
        [("q", packed.len(), x.len().div_ceil(2)), ("d", scales.len(), x.len().div_ceil(BLOCK_SIZE))]
    {
        if len != expected {
            return Err(BlockError::Length { slice, expected });
        }
    }
    let mut first_nonfinite = None;
    let blocks = x.chunks(BLOCK_SIZE).zip(packed.chunks_mut(BLOCK_SIZE / 2)).zip(scales.iter_mut());
    for (block, ((values, bytes), scale)) in blocks.enumerate() {
        let (amax, nonfinite) = amax_slice(values);
        let amax = f32::from_bits(amax);
        *scale = match recipe {
            Nvfp4Recipe::Exact => block_scale(amax, tensor),
            Nvfp4Recipe::ModelOpt => modelopt_block_scale(amax, tensor),
            Nvfp4Recipe::CompressedTensors => compressed_tensors_block_scale(amax, tensor, source),
        };
        if let Some(at) = nonfinite {
            first_nonfinite = first_nonfinite.or(Some(block * BLOCK_SIZE + at));
            *scale = e4m3::NAN_ABS;
        }
        // A partial block's codes past its values stay 0: an odd length's high nibble.
        let mut codes = [0u8; BLOCK_SIZE];
        match recipe {
            Nvfp4Recipe::Exact => quantize_slice(values, *scale, tensor, &mut codes),
            Nvfp4Recipe::ModelOpt => modelopt_quantize_slice(values, *scale, tensor, &mut codes),
            Nvfp4Recipe::CompressedTensors => compressed_tensors_quantize_slice(values, *scale, tensor, &mut codes),
        }
        for (byte, &[even, odd]) in bytes.iter_mut().zip(codes.as_chunks::<2>().0) {
            *byte = e2m1::pack(even, odd);
        }
    }
    Ok(first_nonfinite)
}
