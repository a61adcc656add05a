//! NVFP4 on integers (`shared::nvfp4`): the exact recipe's tensor factor
//! `fl32(amax / 2688)`, block scale `sat_rne_e4m3(amax / (6 · g))` and elements
//! `sat_rne_e2m1(x / (s · g))`, each from the exact rational; and the producers' recipes
//! (ModelOpt's, compressed-tensors') step by step, each step the exact result of its
//! operands rounded as the producer's source rounds it (f32, bfloat16, E4M3, E2M1).
//! Every rounding is [`round_to`] on integers: no floating-point
//! operation, nothing of `shared::nvfp4`.
//!
//! Operands are f32 bits; scales are positive and finite (a tensor's `amax` is positive
//! for the producers' recipes, which divide by it or by a scale made from it).

pub use crate::reference::scaled::multiply;
use crate::reference::scaled::{quotient, quotient_of_parts, saturated, to_bf16};
use bitexact_verify::reference::{
    FP4_E2M1, FP8_E4M3, Rounded, exact_f32_bits, f32_magnitude_parts, round_f32_to, round_to,
};

/// E4M3's code of 1.
const E4M3_ONE: u8 = 0x38;
/// E4M3's code of 2^-9, its smallest positive value.
const E4M3_MIN: u8 = 0x01;
/// E4M3's code of 0.125 (compressed-tensors' stand-in for a zero scale).
const E4M3_EIGHTH: u8 = 0x20;
/// E2M1's largest magnitude's code, 6.
const E2M1_MAX: u8 = 0b0111;
/// E2M1's sign bit.
const E2M1_SIGN: u8 = 0b1000;
/// f32 +inf.
const INFINITY: u32 = 0x7F80_0000;

/// An f32 from its exact value `significand · 2^exponent` (representable).
fn f32_of(significand: u64, exponent: i32) -> u32 {
    exact_f32_bits(significand, exponent)
}

/// 2688 = 21 · 2^7.
fn divisor() -> u32 {
    f32_of(21, 7)
}

/// The magnitude of the positive finite E4M3 code `code` as `significand · 2^exponent`:
/// `m · 2^-9` for a zero exponent field `e`, `(8 + m) · 2^(e − 10)` otherwise.
pub fn e4m3_parts(code: u8) -> (u64, i32) {
    let (e, m) = (i32::from(code >> 3 & 0xF), u64::from(code & 0b111));
    if e == 0 { (m, -9) } else { (8 + m, e - 10) }
}

/// The f32 bits of the positive finite E4M3 code `code`.
fn e4m3_f32(code: u8) -> u32 {
    let (significand, exponent) = e4m3_parts(code);
    f32_of(significand, exponent)
}

/// The non-negative f32 `v` (bits) rounded to E4M3, saturating at 448 (+inf too).
pub fn e4m3_of(v: u32) -> u8 {
    if v == INFINITY { 0x7E } else { saturated(FP8_E4M3, round_f32_to(FP8_E4M3, v)) }
}

/// The E2M1 magnitude code of `significand · 2^exponent`, saturating at 6.
fn e2m1_magnitude(significand: u64, exponent: i32) -> u8 {
    match round_to(FP4_E2M1, significand, exponent) {
        Rounded::Finite(code) => u8::try_from(code).expect("an E2M1 magnitude"),
        Rounded::Overflow => E2M1_MAX,
    }
}

/// The exact recipe's tensor factor `fl32(amax / 2688)` for a finite non-negative `amax`:
/// 1 for `amax = 0`, the smallest positive f32 where the quotient rounds to zero.
pub fn global_scale(amax: u32) -> u32 {
    if amax == 0 { 1.0f32.to_bits() } else { quotient(amax, divisor()).max(1) }
}

/// The exact recipe's E4M3 scale code `sat_rne_e4m3(amax / (6 · g))` of a block whose
/// largest magnitude is `amax` (finite, non-negative) in a tensor of factor `g`
/// (positive, finite): 2^-9 where it rounds to zero, 1 for `amax = 0`.
pub fn block_scale(amax: u32, g: u32) -> u8 {
    if amax == 0 {
        return E4M3_ONE;
    }
    let (mg, eg) = f32_magnitude_parts(g);
    let (q, e) = quotient_of_parts(f32_magnitude_parts(amax), (3 * mg, eg + 1));
    match saturated(FP8_E4M3, round_to(FP8_E4M3, q, e)) {
        0 => E4M3_MIN,
        code => code,
    }
}

/// The exact recipe's E2M1 code `sat_rne_e2m1(x / (s · g))` of any f32 `x` in a block of
/// E4M3 scale code `scale` (positive finite) in a tensor of factor `g` (positive,
/// finite), with `x`'s sign in bit 3; ±inf gives ±6, NaN +6.
pub fn quantize(x: u32, scale: u8, g: u32) -> u8 {
    let (abs, sign) = (x & 0x7FFF_FFFF, if x >> 31 == 1 { E2M1_SIGN } else { 0 });
    if abs > INFINITY {
        return E2M1_MAX;
    }
    if abs == INFINITY {
        return sign | E2M1_MAX;
    }
    if abs == 0 {
        return sign;
    }
    let ((ms, es), (mg, eg)) = (e4m3_parts(scale), f32_magnitude_parts(g));
    let (q, e) = quotient_of_parts(f32_magnitude_parts(abs), (ms * mg, es + eg));
    sign | e2m1_magnitude(q, e)
}

/// The producers' E2M1 code of the f32 quotient `y = fl32(|x| / d)` (bits of a
/// non-negative f32, +inf allowed) for an `x` whose sign bit is `negative`: `y` rounded
/// onto E2M1, saturating, with the sign bit where the signed quotient is below zero (a
/// zero `y` is `±0`, which is not).
pub fn producer_code(negative: bool, y: u32) -> u8 {
    let magnitude = if y == INFINITY {
        E2M1_MAX
    } else {
        match round_f32_to(FP4_E2M1, y) {
            Rounded::Finite(code) => u8::try_from(code).expect("an E2M1 magnitude").min(E2M1_MAX),
            Rounded::Overflow => E2M1_MAX,
        }
    };
    if negative && y != 0 { E2M1_SIGN | magnitude } else { magnitude }
}

/// `fl32(|x| / d)` for a finite or infinite `x` (bits, NaN excluded) and a positive
/// finite `d`: monotone in `|x|`.
pub fn element_quotient(x: u32, d: u32) -> u32 {
    let abs = x & 0x7FFF_FFFF;
    if abs == INFINITY { INFINITY } else { quotient(abs, d) }
}

/// ModelOpt's `weight_scale_2`, `fl32(amax · fl32(1/2688))`.
pub fn modelopt_global_scale(amax: u32) -> u32 {
    multiply(amax, quotient(1.0f32.to_bits(), divisor()))
}

/// ModelOpt's block quotient `t = fl32(amax / fl32(6 · g))` for a positive finite `g`
/// (0 where `6 · g` overflows): monotone in `amax`.
pub fn modelopt_block_quotient(amax: u32, g: u32) -> u32 {
    let six_g = multiply(f32_of(3, 1), g);
    if six_g == INFINITY { 0 } else { quotient(amax, six_g) }
}

/// ModelOpt's block scale code of its quotient `t`: 1 where `t` is zero, otherwise `t`
/// clamped to `[2^-9, 448]` and rounded to E4M3.
pub fn modelopt_block_code(t: u32) -> u8 {
    let t = if t == 0 { 1.0f32.to_bits() } else { t };
    // Positive f32s order as their bits.
    e4m3_of(t.clamp(f32_of(1, -9), f32_of(7, 6)))
}

/// ModelOpt's block scale code for a positive finite `g`.
pub fn modelopt_block_scale(amax: u32, g: u32) -> u8 {
    modelopt_block_code(modelopt_block_quotient(amax, g))
}

/// ModelOpt's element divisor `fl32(s · g)`.
pub fn modelopt_divisor(scale: u8, g: u32) -> u32 {
    multiply(e4m3_f32(scale), g)
}

/// ModelOpt's E2M1 code of a non-NaN `x` in a block of scale code `scale` in a tensor of
/// `weight_scale_2 = g` (positive finite, `s · g` too): `fl32(x / fl32(s · g))` onto
/// E2M1.
pub fn modelopt_quantize(x: u32, scale: u8, g: u32) -> u8 {
    producer_code(x >> 31 == 1, element_quotient(x, modelopt_divisor(scale, g)))
}

/// compressed-tensors' global scale before `nan_to_num`, for a finite `amax` of a tensor
/// of dtype bfloat16 (`bf16`) or f32: `W(fl32(W(fl32(1 / A)) · 2688))` with `A = max(amax,
/// 2^-126)`, +inf where it overflows; monotone (decreasing) in `amax`.
pub fn compressed_tensors_global_product(amax: u32, bf16: bool) -> u32 {
    let w = |v: u32| if bf16 { to_bf16(v) } else { v };
    let a = amax.max(f32_of(1, -126));
    w(multiply(w(quotient(1.0f32.to_bits(), a)), divisor()))
}

/// compressed-tensors' global scale: [`compressed_tensors_global_product`], 1 where that
/// is infinite.
pub fn compressed_tensors_global_scale(amax: u32, bf16: bool) -> u32 {
    match compressed_tensors_global_product(amax, bf16) {
        INFINITY => 1.0f32.to_bits(),
        gs => gs,
    }
}

/// compressed-tensors' block product `fl32(gs · W(fl32(amax / 6)))` for a global scale
/// `gs` (positive finite): monotone in `amax`.
pub fn compressed_tensors_block_product(amax: u32, gs: u32, bf16: bool) -> u32 {
    let w = |v: u32| if bf16 { to_bf16(v) } else { v };
    multiply(gs, w(quotient(amax, f32_of(3, 1))))
}

/// compressed-tensors' block scale code of its product `t`: `t` saturated at 448 and
/// rounded to E4M3, a zero made 0.125.
pub fn compressed_tensors_block_code(t: u32) -> u8 {
    match e4m3_of(t) {
        0 => E4M3_EIGHTH,
        code => code,
    }
}

/// compressed-tensors' block scale code for a global scale `gs` (positive finite).
pub fn compressed_tensors_block_scale(amax: u32, gs: u32, bf16: bool) -> u8 {
    compressed_tensors_block_code(compressed_tensors_block_product(amax, gs, bf16))
}

/// compressed-tensors' element divisor `fl32(s / gs)`.
pub fn compressed_tensors_divisor(scale: u8, gs: u32) -> u32 {
    quotient(e4m3_f32(scale), gs)
}

/// compressed-tensors' E2M1 code of a non-NaN `x` in a block of scale code `scale` in a
/// tensor of global scale `gs` (positive finite, `s / gs` too): `fl32(x / fl32(s / gs))`
/// onto E2M1.
pub fn compressed_tensors_quantize(x: u32, scale: u8, gs: u32) -> u8 {
    producer_code(x >> 31 == 1, element_quotient(x, compressed_tensors_divisor(scale, gs)))
}
