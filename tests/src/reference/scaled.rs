//! Scaled FP8 on integers. Per tensor: the scale `fl32(max / amax)`, the dequantisation
//! scale `fl32(1 / s)`, and the saturating round-to-nearest-even of `x · s` once (the
//! exact product) or in two steps (the product rounded to f32 first). Per block: the
//! dequantisation scale `fl32(amax / max)` and the saturating round-to-nearest-even of
//! the exact quotient `x / d`. Each from the operands' fields, the exact rational and
//! [`round_to`]. No floating-point operation, nothing of `shared::fp8_scale` or
//! `shared::fp8_block`.

use bitexact_verify::reference::{
    BFLOAT16, BINARY32, NarrowFormat, Rounded, f32_magnitude_parts, f64_magnitude_parts, round_f32_to, round_to,
    round_wide,
};

/// The NaN encoding (sign clear) of both OCP FP8 formats, S.1111.111 and S.11111.11.
const FP8_NAN_ABS: u8 = 0x7F;

/// Whether the f32 `bits` is NaN.
#[inline(always)]
fn is_nan(bits: u32) -> bool {
    bits & 0x7F80_0000 == 0x7F80_0000 && bits & 0x007F_FFFF != 0
}

/// Whether the f32 `bits` is ±inf.
#[inline(always)]
fn is_infinite(bits: u32) -> bool {
    bits & 0x7FFF_FFFF == 0x7F80_0000
}

/// The encoding of `format`'s largest finite magnitude.
#[inline(always)]
fn max_encoding(format: NarrowFormat) -> u8 {
    let (significand, exponent) = format.max_finite;
    match round_to(format, significand, exponent) {
        Rounded::Finite(encoding) => u8::try_from(encoding).expect("an FP8 encoding"),
        Rounded::Overflow => unreachable!("the largest finite value is finite"),
    }
}

/// The FP8 encoding of a magnitude's rounding, saturated at the largest finite one.
#[inline(always)]
pub(crate) fn saturated(format: NarrowFormat, rounded: Rounded) -> u8 {
    match rounded {
        Rounded::Finite(encoding) => u8::try_from(encoding).expect("an FP8 encoding"),
        Rounded::Overflow => max_encoding(format),
    }
}

/// The sign bit of the f32 `x` in FP8's position.
#[inline(always)]
fn fp8_sign(x: u32) -> u8 {
    ((x >> 31) as u8) << 7
}

/// The FP8 encoding of `x · s` for any f32 `x` (bits) and a positive finite `s` (bits):
/// NaN gives the format's NaN with `x`'s sign, ±inf the largest finite magnitude, and a
/// finite `x` the magnitude `finite(significand, exponent)` computes from the exact
/// product `significand · 2^exponent` of the two magnitudes, with `x`'s sign.
#[inline(always)]
fn scaled_product(format: NarrowFormat, x: u32, s: u32, finite: impl FnOnce(u64, i32) -> u8) -> u8 {
    if is_nan(x) {
        return fp8_sign(x) | FP8_NAN_ABS;
    }
    let magnitude = if is_infinite(x) {
        max_encoding(format)
    } else {
        let ((mx, ex), (ms, es)) = (f32_magnitude_parts(x), f32_magnitude_parts(s));
        finite(mx * ms, ex + es)
    };
    fp8_sign(x) | magnitude
}

/// `sat_rne(x · s)` onto `format` (E4M3 or E5M2), the exact product rounded once: `x`
/// any f32 (bits), `s` a positive finite f32 (bits). NaN gives the format's NaN with
/// `x`'s sign, ±inf the largest finite magnitude.
#[inline(always)]
pub fn quantize_once(format: NarrowFormat, x: u32, s: u32) -> u8 {
    scaled_product(format, x, s, |significand, exponent| saturated(format, round_to(format, significand, exponent)))
}

/// `sat_rne(fl32(x · s))` onto `format`: the exact product rounded to f32 (infinity past
/// f32's largest finite value), then that f32 rounded to `format`, saturating. NaN and
/// ±inf as [`quantize_once`].
#[inline(always)]
pub fn quantize_two_step(format: NarrowFormat, x: u32, s: u32) -> u8 {
    scaled_product(format, x, s, |significand, exponent| match round_to(BINARY32, significand, exponent) {
        Rounded::Overflow => max_encoding(format),
        Rounded::Finite(f32_magnitude) => {
            saturated(format, round_f32_to(format, u32::try_from(f32_magnitude).expect("an f32 encoding")))
        }
    })
}

/// `sat_rne(x · s)` onto FP4 E2M1 ([`FP4_E2M1`](bitexact_verify::reference::FP4_E2M1)): `x` any f32 (bits), `s` a
/// positive finite f32 (bits); the exact product rounded once, saturated at 6 (±inf
/// too), with `x`'s sign in bit 3; NaN gives +6 (E2M1 has no NaN; CUDA's
/// `__nv_cvt_float_to_fp4` gives +6).
pub fn quantize_e2m1_once(x: u32, s: u32) -> u8 {
    let (abs, sign) = (x & 0x7FFF_FFFF, u8::from(x >> 31 == 1) << 3);
    let max = 0b0111;
    if abs > 0x7F80_0000 {
        return max;
    }
    if abs == 0x7F80_0000 {
        return sign | max;
    }
    let ((mx, ex), (ms, es)) = (f32_magnitude_parts(abs), f32_magnitude_parts(s));
    let magnitude = match round_to(bitexact_verify::reference::FP4_E2M1, mx * ms, ex + es) {
        Rounded::Finite(code) => u8::try_from(code).expect("an E2M1 magnitude"),
        Rounded::Overflow => max,
    };
    sign | magnitude
}

/// The f32 bits of `numerator / denominator` (both positive finite f32 bits) rounded to
/// nearest, ties to even, on integers; `None` when it overflows f32. The quotient of the
/// significands is taken to at least 26 bits with a sticky bit for the remainder, which
/// rounds exactly as the whole rational would: the rounding position is at least two bits
/// above the sticky bit.
#[inline]
pub fn divide(numerator: u32, denominator: u32) -> Option<u32> {
    let (significand, exponent) = quotient_parts(numerator, denominator);
    match round_to(BINARY32, significand, exponent) {
        Rounded::Finite(bits) => Some(u32::try_from(bits).expect("an f32 encoding")),
        Rounded::Overflow => None,
    }
}

/// Whether `result` (f32 bits: +0, a positive finite value, or +inf for an overflow) is
/// `numerator / denominator` (positive finite f32 bits) rounded to nearest, ties to even:
/// the exact quotient compared, by multiplication on integers, with the midpoints between
/// `result` and its neighbours (for +inf, with the overflow threshold `(2^25 − 1) ·
/// 2^103`, halfway from `f32::MAX` to `2^128`). The same verdict as `divide(numerator,
/// denominator) == result` (`None` read as +inf), without a division: the walks of every
/// scale use it (a hardware division per input was most of their time).
#[inline(always)]
pub fn is_rounded_quotient(numerator: u32, denominator: u32, result: u32) -> bool {
    use core::cmp::Ordering;
    let ((n, a), (d, b)) = (f32_magnitude_parts(numerator), f32_magnitude_parts(denominator));
    assert!(n != 0 && d != 0, "positive operands");
    // How the quotient n · 2^a / (d · 2^b) compares with v · 2^c (1 ≤ v < 2^26): n · 2^k
    // against v · d, with n < 2^24 and 1 ≤ v · d < 2^50.
    is_rounded(result, |v: u64, c: i32| -> Ordering {
        let (lhs, rhs, k) = (u128::from(n), u128::from(v) * u128::from(d), a - b - c);
        match k {
            64.. => Ordering::Greater,
            0..64 => (lhs << k).cmp(&rhs),
            ..=-64 => Ordering::Less,
            _ => lhs.cmp(&(rhs << -k)),
        }
    })
}

/// Whether `result` (f32 bits: +0, a positive finite value, or +inf for an overflow) is
/// the product `a · b` (positive finite f32 bits) rounded to nearest, ties to even: the
/// exact product compared, on integers, with the midpoints between `result` and its
/// neighbours, as [`is_rounded_quotient`] does for a quotient.
#[inline(always)]
pub fn is_rounded_product(a: u32, b: u32, result: u32) -> bool {
    use core::cmp::Ordering;
    let ((ma, ea), (mb, eb)) = (f32_magnitude_parts(a), f32_magnitude_parts(b));
    assert!(ma != 0 && mb != 0, "positive operands");
    // How ma · mb · 2^(ea + eb) compares with v · 2^c (1 ≤ v < 2^26): the product is
    // below 2^48, so shifted by under 64 it fits a u128, and past that it is on one side.
    let product = u128::from(ma * mb);
    is_rounded(result, |v: u64, c: i32| -> Ordering {
        let k = ea + eb - c;
        match k {
            64.. => Ordering::Greater,
            0..64 => (product << k).cmp(&u128::from(v)),
            ..=-64 => Ordering::Less,
            _ => product.cmp(&(u128::from(v) << -k)),
        }
    })
}

/// Whether `result` (f32 bits) is an exact positive value rounded to nearest, ties to
/// even, given `compare(v, c)`, how that value compares with `v · 2^c`: the value against
/// the midpoints between `result` and its neighbours (for +inf, against the overflow
/// threshold `(2^25 − 1) · 2^103`, halfway from `f32::MAX` to `2^128`).
#[inline(always)]
fn is_rounded(result: u32, compare: impl Fn(u64, i32) -> core::cmp::Ordering) -> bool {
    use core::cmp::Ordering;
    if result == 0x7F80_0000 {
        return compare((1 << 25) - 1, 103) != Ordering::Less;
    }
    if result > 0x7F80_0000 {
        return false;
    }
    let (r, e) = f32_magnitude_parts(result);
    // A tie at a midpoint goes to the neighbour with an even significand.
    let within = |o: Ordering, side: Ordering| o == side || (o == Ordering::Equal && r % 2 == 0);
    let below_upper = within(compare(2 * r + 1, e - 1), Ordering::Less);
    // Below a normal power of two the spacing halves; the smallest normal (e = -149) has
    // the subnormals' spacing on both sides.
    let above_lower = r == 0 || {
        let (v, c) = if r == 1 << 23 && e > -149 { ((1 << 25) - 1, e - 2) } else { (2 * r - 1, e - 1) };
        within(compare(v, c), Ordering::Greater)
    };
    below_upper && above_lower
}

/// `significand · 2^exponent`, a stand-in for `numerator / denominator` (both positive
/// finite f32 bits) that rounds as the exact quotient does onto any grid of at most 24
/// significant bits (f32's or a narrower format's, subnormals included): the quotient
/// of the significands taken to at least 26 bits, with a sticky bit below for the
/// remainder. The rounding position is at least two bits above the sticky bit, so the
/// stand-in is on a grid point, a midpoint, or strictly between them exactly when the
/// quotient is.
#[inline]
fn quotient_parts(numerator: u32, denominator: u32) -> (u64, i32) {
    quotient_of_parts(f32_magnitude_parts(numerator), f32_magnitude_parts(denominator))
}

/// [`quotient_parts`] of two magnitudes given as `significand · 2^exponent`, the
/// numerator's significand below 2^24 and the denominator's below 2^36 (an f32's, or the
/// exact product of an f32 and a narrower format's): the same stand-in, rounding as the
/// exact quotient does onto any grid of at most 24 significant bits.
#[inline]
pub(crate) fn quotient_of_parts((mn, en): (u64, i32), (md, ed): (u64, i32)) -> (u64, i32) {
    assert!(mn != 0 && md != 0, "positive operands");
    assert!(mn < 1 << 24 && md < 1 << 36, "significands within the stand-in's width");
    // (mn · 2^k) / md has at least 26 significant bits when 2^k ≥ 2^26 · md / mn.
    let k = 26 + (64 - md.leading_zeros() as i32) - (64 - mn.leading_zeros() as i32) + 1;
    // mn · 2^k has bit length len(mn) + k = 27 + len(md), at most 63 bits: a u64.
    let scaled = mn << k;
    let (quotient, remainder) = (scaled / md, scaled % md);
    (quotient << 1 | u64::from(remainder != 0), en - ed - k - 1)
}

/// `sat_rne(x / d)` onto `format` (E4M3 or E5M2), the exact quotient rounded once: `x`
/// any f32 (bits), `d` a positive finite f32 (bits). NaN gives the format's NaN with
/// `x`'s sign, ±inf the largest finite magnitude, ±0 zero with its sign. The block-scaled
/// formats' exact recipe (`shared::fp8_block`).
pub fn quantize_quotient(format: NarrowFormat, x: u32, d: u32) -> u8 {
    if is_nan(x) {
        return fp8_sign(x) | FP8_NAN_ABS;
    }
    let magnitude = if is_infinite(x) {
        max_encoding(format)
    } else if x & 0x7FFF_FFFF == 0 {
        0
    } else {
        let (significand, exponent) = quotient_parts(x & 0x7FFF_FFFF, d);
        saturated(format, round_to(format, significand, exponent))
    };
    fp8_sign(x) | magnitude
}

/// The block-scaled formats' dequantisation scale `fl32(amax / max)` for `format` and a
/// finite non-negative `amax` (bits): 1 for `amax = 0`, and the smallest positive f32
/// (`2^-149`) where the quotient rounds to zero (`shared::fp8_block`).
pub fn block_dequant_scale(format: NarrowFormat, amax: u32) -> u32 {
    if amax & 0x7FFF_FFFF == 0 {
        return 1.0f32.to_bits();
    }
    let max = max_f32_bits(format);
    let d = divide(amax & 0x7FFF_FFFF, max).expect("amax / max is below f32::MAX");
    d.max(1)
}

/// The scale `fl32(max / amax)` for `format` and a finite non-negative `amax` (bits): 1
/// for `amax = 0`, `f32::MAX` where the quotient overflows.
pub fn scale_for(format: NarrowFormat, amax: u32) -> u32 {
    if amax & 0x7FFF_FFFF == 0 {
        return 1.0f32.to_bits();
    }
    let max = max_f32_bits(format);
    divide(max, amax).unwrap_or(f32::MAX.to_bits())
}

/// Whether `s` (f32 bits) is [`scale_for`]`(format, amax)`, checked by multiplication
/// ([`is_rounded_quotient`]): 1 for `amax = 0`; otherwise `max / amax` rounded, or
/// `f32::MAX` where that overflows.
#[inline(always)]
pub fn is_scale_for(format: NarrowFormat, amax: u32, s: u32) -> bool {
    let amax = amax & 0x7FFF_FFFF;
    if amax == 0 {
        return s == 1.0f32.to_bits();
    }
    let (max, infinity) = (max_f32_bits(format), f32::INFINITY.to_bits());
    // Never +inf itself: an overflow gives f32::MAX.
    s != infinity
        && (is_rounded_quotient(max, amax, s) || (s == f32::MAX.to_bits() && is_rounded_quotient(max, amax, infinity)))
}

/// Whether `d` (f32 bits) is [`block_dequant_scale`]`(format, amax)`, checked by
/// multiplication ([`is_rounded_quotient`]): 1 for `amax = 0`; otherwise `amax / max`
/// rounded, or `2^-149` where that rounds to zero.
#[inline(always)]
pub fn is_block_dequant_scale(format: NarrowFormat, amax: u32, d: u32) -> bool {
    let amax = amax & 0x7FFF_FFFF;
    if amax == 0 {
        return d == 1.0f32.to_bits();
    }
    let max = max_f32_bits(format);
    // Never 0 itself: a quotient that rounds to zero gives 2^-149.
    d != 0 && (is_rounded_quotient(amax, max, d) || (d == 1 && is_rounded_quotient(amax, max, 0)))
}

/// The f32 bits of `format`'s largest finite value (every FP8 value is an f32).
#[inline(always)]
fn max_f32_bits(format: NarrowFormat) -> u32 {
    let (significand, exponent) = format.max_finite;
    bitexact_verify::reference::exact_f32_bits(significand, exponent)
}

/// DeepGEMM's block scale (`shared::fp8_block::Recipe::DeepGemm`: its
/// `per_block_cast_to_fp8` as vLLM's `utils/deep_gemm.py` runs it on CUDA) of a block
/// whose largest finite magnitude is `amax` (non-negative finite f32 bits), on integers:
/// `A = max(amax, fl32(1e-4))` (PyTorch's `clamp(1e-4)` on an f32 tensor rounds the bound
/// to f32), `r = fl32(1 / max)` (PyTorch's CUDA `tensor / scalar` multiplies by the
/// rounded reciprocal), `sf = fl32(A · r)`, each rounding to nearest even.
pub fn deepgemm_scale(format: NarrowFormat, amax: u32) -> u32 {
    let clamped = amax.max(1e-4f32.to_bits());
    let r = divide(1f32.to_bits(), max_f32_bits(format)).expect("1 / max is a normal f32");
    let ((ma, ea), (mr, er)) = (f32_magnitude_parts(clamped), f32_magnitude_parts(r));
    match round_to(BINARY32, ma * mr, ea + er) {
        Rounded::Finite(bits) => u32::try_from(bits).expect("an f32 encoding"),
        Rounded::Overflow => unreachable!("A · r is at most f32::MAX / 448"),
    }
}

/// DeepGEMM's code of `x` (any f32 bits) in a block of scale `sf` ([`deepgemm_scale`]):
/// `rne(fl32(x · fl32(1 / sf)))`, the reciprocal by [`divide`] and the rest by
/// [`quantize_two_step`] (whose saturation DeepGEMM's values never reach: see
/// `shared::fp8_block::Recipe::DeepGemm`).
pub fn deepgemm_quantize(format: NarrowFormat, x: u32, sf: u32) -> u8 {
    let inverse = divide(1f32.to_bits(), sf).expect("sf is at least 1e-4 / 57344: its inverse is finite");
    quantize_two_step(format, x, inverse)
}

/// f32 +inf.
const F32_INFINITY: u32 = 0x7F80_0000;

/// `fl32(a · b)` for non-negative finite f32 bits (+inf past f32's range).
pub fn multiply(a: u32, b: u32) -> u32 {
    let ((ma, ea), (mb, eb)) = (f32_magnitude_parts(a), f32_magnitude_parts(b));
    match round_to(BINARY32, ma * mb, ea + eb) {
        Rounded::Finite(bits) => u32::try_from(bits).expect("an f32 encoding"),
        Rounded::Overflow => F32_INFINITY,
    }
}

/// `fl32(n / d)` for a non-negative finite `n` and a positive finite `d` (f32 bits; +inf
/// past f32's range, 0 for `n = 0`).
pub(crate) fn quotient(n: u32, d: u32) -> u32 {
    if n == 0 { 0 } else { divide(n, d).unwrap_or(F32_INFINITY) }
}

/// The non-negative f32 `v` (bits, +inf allowed) rounded to bfloat16, as f32 bits.
pub(crate) fn to_bf16(v: u32) -> u32 {
    if v == F32_INFINITY {
        return v;
    }
    match round_f32_to(BFLOAT16, v) {
        Rounded::Finite(encoding) => u32::try_from(encoding).expect("a bfloat16 encoding") << 16,
        Rounded::Overflow => F32_INFINITY,
    }
}

/// compressed-tensors' FP8 `channel`/`block` scale (`shared::fp8_block::Recipe::
/// CompressedTensors`: its `calculate_qparams`, 0.19 on) of a block whose largest finite
/// magnitude is `amax` (non-negative finite f32 bits, a value of the weights' dtype), on
/// integers: `p = fl32(amax / max)`, `s = W(p)` (W bfloat16 where `bf16`, else f32), each
/// rounding to nearest even; `torch.finfo(W).eps` (`2^-7`, or `2^-23`) where `s` is 0.
pub fn compressed_tensors_scale(format: NarrowFormat, amax: u32, bf16: bool) -> u32 {
    let p = quotient(amax, max_f32_bits(format));
    let s = if bf16 { to_bf16(p) } else { p };
    match (s, bf16) {
        (0, true) => bitexact_verify::reference::exact_f32_bits(1, -7),
        (0, false) => bitexact_verify::reference::exact_f32_bits(1, -23),
        _ => s,
    }
}

/// compressed-tensors' FP8 code (`shared::fp8_block::Recipe::CompressedTensors`: its
/// `_quantize` on CUDA) of `x` (any f32 bits, a value of the weights' dtype) in a block of
/// scale `s` (positive finite f32 bits), on integers: `y = fl32(|x| / s)` (+inf past
/// f32's range), `W(y)`, clamped to `max`, rounded to nearest even onto `format`, with
/// `x`'s sign. NaN gives the format's NaN with `x`'s sign, ±inf the largest finite
/// magnitude.
pub fn compressed_tensors_quantize(format: NarrowFormat, x: u32, s: u32, bf16: bool) -> u8 {
    if is_nan(x) {
        return fp8_sign(x) | FP8_NAN_ABS;
    }
    let magnitude = if is_infinite(x) {
        max_encoding(format)
    } else {
        let y = quotient(x & 0x7FFF_FFFF, s);
        let y = if bf16 { to_bf16(y) } else { y };
        // clamp(…, ±max): every FP8 value is an f32, and f32 bits order as magnitudes.
        saturated(format, round_f32_to(format, y.min(max_f32_bits(format))))
    };
    fp8_sign(x) | magnitude
}

/// `fl32(1 / s)` for a positive finite `s` (bits): +inf where it overflows (`s` at most
/// `2^-128`: no scale of an f32 amax, only of an f64 one past about `448 · 2^128`).
pub fn dequant_scale(s: u32) -> u32 {
    divide(1.0f32.to_bits(), s).unwrap_or(f32::INFINITY.to_bits())
}

/// Whether the f64 `bits` is NaN, and whether it is ±inf.
fn f64_nan_inf(bits: u64) -> (bool, bool) {
    let abs = bits & 0x7FFF_FFFF_FFFF_FFFF;
    (abs > 0x7FF0_0000_0000_0000, abs == 0x7FF0_0000_0000_0000)
}

/// [`scaled_product`] for an f64 `x` (bits): the exact product of the two magnitudes is
/// up to 77 bits, handed to `finite` as a `u128`.
fn scaled_product_f64(format: NarrowFormat, x: u64, s: u32, finite: impl FnOnce(u128, i32) -> u8) -> u8 {
    let sign = ((x >> 63) as u8) << 7;
    let (nan, infinite) = f64_nan_inf(x);
    if nan {
        return sign | FP8_NAN_ABS;
    }
    let magnitude = if infinite {
        max_encoding(format)
    } else {
        let ((mx, ex), (ms, es)) = (f64_magnitude_parts(x), f32_magnitude_parts(s));
        finite(u128::from(mx) * u128::from(ms), ex + es)
    };
    sign | magnitude
}

/// [`quantize_once`] for an f64 `x` (bits): `sat_rne(x · s)`, the exact product rounded
/// once.
pub fn quantize_once_f64(format: NarrowFormat, x: u64, s: u32) -> u8 {
    scaled_product_f64(format, x, s, |significand, exponent| {
        saturated(format, round_wide(format, significand, exponent))
    })
}

/// [`quantize_two_step`] for an f64 `x` (bits): the exact product rounded to f32
/// (infinity past its range), then to `format`, saturating.
pub fn quantize_two_step_f64(format: NarrowFormat, x: u64, s: u32) -> u8 {
    scaled_product_f64(format, x, s, |significand, exponent| match round_wide(BINARY32, significand, exponent) {
        Rounded::Overflow => max_encoding(format),
        Rounded::Finite(f32_magnitude) => {
            saturated(format, round_f32_to(format, u32::try_from(f32_magnitude).expect("an f32 encoding")))
        }
    })
}

/// The scale `fl32(max / amax)` for `format` and a finite non-negative f64 `amax` (bits),
/// on integers: 1 for `amax = 0`, `f32::MAX` where the quotient overflows f32, and the
/// quotient's rounding otherwise, subnormal or 0 included (a huge `amax`). The quotient
/// of the significands is taken to at least 26 bits with a sticky bit, as [`divide`].
pub fn scale_for_f64(format: NarrowFormat, amax: u64) -> u32 {
    if amax & 0x7FFF_FFFF_FFFF_FFFF == 0 {
        return 1.0f32.to_bits();
    }
    let ((mn, en), (md, ed)) = (format.max_finite, f64_magnitude_parts(amax));
    let k = 26 + (64 - md.leading_zeros() as i32) - (64 - mn.leading_zeros() as i32) + 1;
    let scaled = u128::from(mn) << k;
    let (quotient, remainder) = (scaled / u128::from(md), scaled % u128::from(md));
    let significand = quotient << 1 | u128::from(remainder != 0);
    match round_wide(BINARY32, significand, en - ed - k - 1) {
        Rounded::Finite(bits) => u32::try_from(bits).expect("an f32 encoding"),
        Rounded::Overflow => f32::MAX.to_bits(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitexact_verify::reference::{FP8_E4M3, FP8_E5M2};

    // The reference checked on values worked by hand from the formats' definitions.
    /// Numerators and denominators from every binade: zeros excluded, subnormals, powers
    /// of two, f32::MAX, and a stride through the rest.
    fn operands() -> Vec<u32> {
        let mut x: Vec<u32> = (1..0x7F80_0000u32).step_by(2_097_143).collect();
        x.extend((0..255u32).flat_map(|e| [e << 23 | 1, (e << 23) + 0x7F_FFFF, (e << 23).max(1)]));
        x.extend([1, 2, 3, 0x007F_FFFF, 0x0080_0000, f32::MAX.to_bits(), 1.0f32.to_bits(), 448.0f32.to_bits()]);
        x
    }

    #[test]
    fn is_rounded_quotient_accepts_the_division_s_result_and_rejects_its_neighbours() {
        let ops = operands();
        let mut checked = 0;
        for &n in &ops {
            for &d in ops.iter().step_by(7) {
                let r = divide(n, d).unwrap_or(0x7F80_0000);
                assert!(is_rounded_quotient(n, d, r), "{n:#x} / {d:#x} = {r:#x}");
                for other in [r.wrapping_sub(1), r + 1, r.wrapping_sub(2), r + 2] {
                    if other <= 0x7F80_0000 {
                        assert!(!is_rounded_quotient(n, d, other), "{n:#x} / {d:#x}: {other:#x} next to {r:#x}");
                    }
                }
                checked += 1;
            }
        }
        assert!(checked > 50_000, "{checked}");
        // Overflow: f32::MAX / 2^-1 overflows; f32::MAX / 1 does not.
        assert!(is_rounded_quotient(f32::MAX.to_bits(), 0.5f32.to_bits(), 0x7F80_0000));
        assert!(!is_rounded_quotient(f32::MAX.to_bits(), 1.0f32.to_bits(), 0x7F80_0000));
        // Underflow to zero: 2^-149 / 4 is below half the smallest subnormal; / 2 is the tie,
        // which goes to 0 (even).
        assert!(is_rounded_quotient(1, 4.0f32.to_bits(), 0));
        assert!(is_rounded_quotient(1, 2.0f32.to_bits(), 0));
        assert!(!is_rounded_quotient(1, 2.0f32.to_bits(), 1));
        assert!(is_rounded_quotient(3, 2.0f32.to_bits(), 2), "1.5 units ties to 2");
    }

    #[test]
    fn the_scale_checks_take_only_the_clamped_value_at_the_edges() {
        for format in [FP8_E4M3, FP8_E5M2] {
            // max / 2^-149 overflows f32: f32::MAX, never +inf.
            assert!(is_scale_for(format, 1, f32::MAX.to_bits()));
            assert!(!is_scale_for(format, 1, f32::INFINITY.to_bits()));
            assert_eq!(scale_for(format, 1), f32::MAX.to_bits());
            // 2^-149 / max rounds to zero: 2^-149, never 0.
            assert!(is_block_dequant_scale(format, 1, 1));
            assert!(!is_block_dequant_scale(format, 1, 0));
            assert_eq!(block_dequant_scale(format, 1), 1);
            // amax = 0: 1 for both.
            assert!(is_scale_for(format, 0, 1.0f32.to_bits()) && !is_scale_for(format, 0, f32::MAX.to_bits()));
            assert!(is_block_dequant_scale(format, 0, 1.0f32.to_bits()) && !is_block_dequant_scale(format, 0, 1));
        }
    }

    #[test]
    fn hand_worked_values() {
        let bits = |v: f32| v.to_bits();
        // 448 / 1 = 448; E4M3 0x7E is 448.
        assert_eq!(scale_for(FP8_E4M3, bits(1.0)), bits(448.0));
        assert_eq!(scale_for(FP8_E4M3, 0), bits(1.0));
        // 448 / 3 = 149.333… rounds to 149.33333 (f32 0x43155555).
        assert_eq!(scale_for(FP8_E4M3, bits(3.0)), 0x4315_5555);
        // The smallest subnormal amax overflows: f32::MAX.
        assert_eq!(scale_for(FP8_E5M2, 1), f32::MAX.to_bits());
        assert_eq!(dequant_scale(bits(4.0)), bits(0.25));
        // 1 / 3 = 0x3EAAAAAB.
        assert_eq!(dequant_scale(bits(3.0)), 0x3EAA_AAAB);
        // 1 / f32::MAX is a subnormal: 2^-128 · (1 / 1.99999988) ≈ 0x00200000.
        assert_eq!(dequant_scale(f32::MAX.to_bits()), 0x0020_0000);
        // x = 1 + 2^-23 (one ULP above 1), s = 1 + 2^-23: exact product 1 + 2^-22 + 2^-46.
        // E4M3 grid at 1 is 1/8: both give 1 (0x38).
        let x = 0x3F80_0001;
        assert_eq!(quantize_once(FP8_E4M3, x, x), 0x38);
        assert_eq!(quantize_two_step(FP8_E4M3, x, x), 0x38);
        // Double rounding: x = 1 + 2^-23, s = 1.0625 - 2^-23 give the exact product
        // 1.0625 + 2^-27 - 2^-46, just above the E4M3 tie 1.0625 between 1 and 1.125:
        // once rounds it up to 1.125 (0x39); fl32 of it is 1.0625 itself (2^-27 is below
        // f32's half-ULP 2^-24 there), a tie that goes to even, 1 (0x38).
        let (x, s) = (0x3F80_0001, 0x3F87_FFFF);
        assert_eq!(quantize_once(FP8_E4M3, x, s), 0x39);
        assert_eq!(quantize_two_step(FP8_E4M3, x, s), 0x38);
        // Saturation and specials.
        assert_eq!(quantize_once(FP8_E4M3, bits(1000.0), bits(1.0)), 0x7E);
        assert_eq!(quantize_two_step(FP8_E5M2, bits(f32::NEG_INFINITY), bits(1.0)), 0xFB);
        assert_eq!(quantize_once(FP8_E5M2, 0xFFC0_0000, bits(1.0)), 0xFF);
        assert_eq!(quantize_once(FP8_E4M3, 0x8000_0000, bits(2.0)), 0x80);
    }

    // The f64 forms, on values worked by hand.
    #[test]
    fn hand_worked_f64_values() {
        let one = 1.0f32.to_bits();
        // 1.0625 + 2^-50 at s = 1: just above the E4M3 tie between 1 and 1.125, so once
        // gives 1.125 (0x39); fl32 of it is the tie itself, which goes to even, 1 (0x38).
        let x = (1.0625f64 + 2f64.powi(-50)).to_bits();
        assert_eq!(quantize_once_f64(FP8_E4M3, x, one), 0x39);
        assert_eq!(quantize_two_step_f64(FP8_E4M3, x, one), 0x38);
        // The tie itself goes to even both ways; with the sign set, the same with the sign.
        assert_eq!(quantize_once_f64(FP8_E4M3, 1.0625f64.to_bits(), one), 0x38);
        assert_eq!(quantize_once_f64(FP8_E4M3, (-1.0625f64).to_bits(), one), 0xB8);
        // A 77-bit product: x = 1 + 2^-52, s = 1.0625 - 2^-23 (0x3F87FFFF): the product
        // is 1.0625 - 2^-23 + 2^-52 · 1.0625 - 2^-75, below the tie 1.0625: 1 (0x38).
        assert_eq!(quantize_once_f64(FP8_E4M3, (1.0f64 + f64::EPSILON).to_bits(), 0x3F87_FFFF), 0x38);
        // Specials: NaN with its sign, ±inf saturated, -0.
        assert_eq!(quantize_once_f64(FP8_E5M2, 0xFFF8_0000_0000_0000, one), 0xFF);
        assert_eq!(quantize_two_step_f64(FP8_E4M3, f64::INFINITY.to_bits(), one), 0x7E);
        assert_eq!(quantize_once_f64(FP8_E4M3, (-0.0f64).to_bits(), one), 0x80);
        // Scales: 448 / 3, as for an f32 amax; a huge amax gives 0 or a subnormal; a tiny
        // one f32::MAX.
        assert_eq!(scale_for_f64(FP8_E4M3, 3.0f64.to_bits()), 0x4315_5555);
        assert_eq!(scale_for_f64(FP8_E4M3, 0), 1.0f32.to_bits());
        assert_eq!(scale_for_f64(FP8_E4M3, (448.0 * 2f64.powi(149)).to_bits()), 1);
        assert_eq!(scale_for_f64(FP8_E4M3, 2f64.powi(200).to_bits()), 0);
        assert_eq!(scale_for_f64(FP8_E5M2, 1), f32::MAX.to_bits());
    }

    // Where the two roundings differ near 1.0625, fl32(x · s) sits on the E4M3 tie
    // 1.0625: the only way two roundings can disagree.
    #[test]
    fn double_rounding_differs_only_on_an_f32_tie() {
        let mut found = 0;
        for dx in 0..64u32 {
            for ds in 0..64u32 {
                let (x, s) = (1.0625f32.to_bits() - 32 + dx, 1.0f32.to_bits() + ds);
                if quantize_once(FP8_E4M3, x, s) != quantize_two_step(FP8_E4M3, x, s) {
                    found += 1;
                    let ((mx, ex), (ms, es)) = (f32_magnitude_parts(x), f32_magnitude_parts(s));
                    let product = match round_to(BINARY32, mx * ms, ex + es) {
                        Rounded::Finite(b) => f32::from_bits(b as u32),
                        Rounded::Overflow => unreachable!(),
                    };
                    assert_eq!(product, 1.0625, "fl32(x·s) is the tie between 1 and 1.125");
                }
            }
        }
        assert!(found > 0, "the range holds double-rounding cases");
    }
}
