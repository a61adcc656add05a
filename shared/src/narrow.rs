//! f32 → narrower floating-point formats, rounded to nearest, ties to even: the one
//! rounding step every narrowing conversion shares. What a format does with NaN and with
//! a result past its largest finite value (infinity, NaN or saturation) is decided in
//! that format's module (`binary16`, `bfloat16`, `fp8`, `fp4`).
//!
//! # The rounding argument
//!
//! A target with `EXP` exponent bits (bias `2^(EXP-1) - 1`) and `MAN` mantissa bits
//! encodes magnitudes in the IEEE layout `exponent field · 2^MAN + mantissa`, and that
//! integer grows with the magnitude. For an f32 magnitude in the target's normal range,
//! subtracting `(127 - bias) << 23` rebiases the exponent field in place; the target
//! encoding is then that integer shifted right by `23 - MAN`, rounded. Adding
//! `half - 1 + lsb` before the shift rounds to nearest with ties to even, and a carry out
//! of the mantissa increments the exponent field, which is exactly the next binade's
//! first value: the layout makes the carry correct. Below the normal range the target
//! counts units of `2^(1 - bias - MAN)`; the f32's significand (implicit bit included)
//! shifted right by the right amount, rounded the same way, is that count, and a count
//! of `2^MAN` is the smallest normal's encoding. One rounding in both cases, so the result
//! is the correctly rounded value.
//!
//! Proven on every f32 for binary16, bfloat16, FP8 E4M3 and E5M2 (the table's
//! conversions, `tests/tests/exhaustive_cpu.rs`) and for FP4 E2M1
//! (`tests/tests/fp4_e8m0.rs`) against integer arithmetic on the fields
//! (`bitexact::verify::reference`).

/// `x >> shift` rounded to nearest, ties to even, for `1 <= shift <= 31` and `x < 2^31`.
#[inline(always)]
const fn shift_right_to_even(x: u32, shift: u32) -> u32 {
    (x + (1 << (shift - 1)) - 1 + ((x >> shift) & 1)) >> shift
}

/// The encoding, in the IEEE layout of a format with `EXP` exponent and `MAN` mantissa
/// bits, of the finite f32 magnitude `abs` (sign clear, below `0x7F80_0000`) rounded to
/// nearest, ties to even, **without an upper bound**: a result above the format's largest
/// finite encoding means the value overflowed, and the caller decides what that gives.
/// Infinity (`abs = 0x7F80_0000`) may be passed too: it gives a result above every finite
/// encoding.
/// For `2 <= EXP <= 8` and `1 <= MAN <= 22`; see the module's rounding argument.
#[inline(always)]
pub const fn round_magnitude<const EXP: u32, const MAN: u32>(abs: u32) -> u32 {
    let bias = (1 << (EXP - 1)) - 1;
    let shift = 23 - MAN;
    let biased = abs >> 23;
    // The f32 biased exponent of the target's smallest normal, 2^(1 - bias).
    let min_normal = 128 - bias;
    if biased >= min_normal {
        shift_right_to_even(abs - ((127 - bias) << 23), shift)
    } else {
        // An f32 subnormal has no implicit bit and the exponent of the smallest normal.
        let (significand, exponent) = if biased == 0 { (abs, 1) } else { ((abs & 0x007F_FFFF) | 0x0080_0000, biased) };
        // significand · 2^(exponent - 150) in units of 2^(1 - bias - MAN); at least
        // `shift + 1`, and above 24 every significand rounds to 0 (capped at 31).
        let units_shift = 151 - bias - MAN - exponent;
        shift_right_to_even(significand, if units_shift > 31 { 31 } else { units_shift })
    }
}

/// `x >> shift` rounded to nearest, ties to even, for `1 <= shift <= 63` and `x < 2^63`.
#[inline(always)]
const fn shift_right_to_even_u64(x: u64, shift: u32) -> u64 {
    (x + (1 << (shift - 1)) - 1 + ((x >> shift) & 1)) >> shift
}

/// [`round_magnitude`] of an **f64** magnitude `abs` (sign clear, finite or infinite, not
/// NaN): the encoding, in the IEEE layout of a format with `EXP` exponent and `MAN`
/// mantissa bits, of `abs` rounded once to nearest, ties to even, without an upper bound
/// (a result above the format's largest finite encoding means overflow; infinity gives
/// such a result). The same rounding argument as the module's, with f64's 11-bit
/// exponent (bias 1023) and 52-bit mantissa. For `2 <= EXP <= 8` and `1 <= MAN <= 22`.
///
/// This is how a product of two f32 values, exact in f64, is rounded straight to FP8
/// without a second rounding (`crate::fp8_scale`).
#[inline(always)]
pub const fn round_magnitude_f64<const EXP: u32, const MAN: u32>(abs: u64) -> u32 {
    let bias = (1u64 << (EXP - 1)) - 1;
    let biased = abs >> 52;
    // The f64 biased exponent of the target's smallest normal, 2^(1 - bias).
    let min_normal = 1024 - bias;
    if biased >= min_normal {
        // Below 2^63 (infinity included), so the rounding does not overflow, and below
        // 1152 · 2^52, so the result is below 1152 · 2^MAN and fits a u32.
        shift_right_to_even_u64(abs - ((1023 - bias) << 52), 52 - MAN) as u32
    } else {
        // An f64 subnormal has no implicit bit and the exponent of the smallest normal.
        let (significand, exponent) =
            if biased == 0 { (abs, 1) } else { ((abs & 0x000F_FFFF_FFFF_FFFF) | 1 << 52, biased) };
        // significand · 2^(exponent - 1075) in units of 2^(1 - bias - MAN); at least
        // `53 - MAN`, and from 54 on every significand (below 2^53) rounds to 0.
        let units_shift = 1076 - bias - MAN as u64 - exponent;
        shift_right_to_even_u64(significand, if units_shift > 63 { 63 } else { units_shift as u32 }) as u32
    }
}

/// [`round_magnitude`] without a branch: both roundings of the argument (normal range and
/// below it) are computed for every input, each kept in range for any input (the
/// normal one saturates at 0 below the normal range; the subnormal shift is clamped to
/// `1..=31`), and the one for the input's range is selected. The same result as
/// [`round_magnitude`] on every input, for the same `EXP`, `MAN` and `abs`; on a GPU a
/// warp whose lanes mix normal and subnormal results then does not diverge.
#[inline(always)]
pub fn round_magnitude_branch_free<const EXP: u32, const MAN: u32>(abs: u32) -> u32 {
    let bias = (1 << (EXP - 1)) - 1;
    let shift = 23 - MAN;
    let biased = abs >> 23;
    let min_normal = 128 - bias;
    let normal = shift_right_to_even(abs.saturating_sub((127 - bias) << 23), shift);
    // As in `round_magnitude`: an f32 subnormal has no implicit bit and the exponent of
    // the smallest normal.
    let significand = (abs & 0x007F_FFFF) | ((biased != 0) as u32) << 23;
    let exponent = biased + (biased == 0) as u32;
    let units_shift = (151 - bias - MAN).saturating_sub(exponent);
    let units_shift = units_shift.clamp(1, 31);
    let subnormal = shift_right_to_even(significand, units_shift);
    // Marked unpredictable, so that LLVM keeps the select instead of turning it back into
    // a branch around the subnormal rounding.
    core::hint::select_unpredictable(biased >= min_normal, normal, subnormal)
}

/// [`round_magnitude`] by one f32 addition for normals and subnormals alike: `|x|` plus
/// `c = 2^(e + 23 - MAN)`, where `2^e` is `|x|`'s binade raised to at least the target's
/// smallest normal `2^(1 - bias)`, is rounded by the FPU to nearest, ties to even, at
/// `c`'s ULP `2^(e - MAN)`, which is the target's step in that binade (its subnormal step
/// below `2^(1 - bias)`). The sum stays in `c`'s binade (`|x| < 2^(e + 1) <= c`), so its
/// encoding minus `c`'s counts the steps, and adding `(e + bias - 1) << MAN` turns the
/// count into the target's encoding (a carry into the next binade included). No select
/// between a normal and a subnormal path. The same result as [`round_magnitude`] on every
/// `abs` up to `2^(2^EXP - bias)` (`tests/tests/fp8_scale.rs` runs it on every f32
/// magnitude up to there for E4M3 and E5M2); above, the caller saturates first (the
/// result exceeds every finite encoding from `2^(2^EXP - 1 - bias) · 2` on, and `c` must
/// stay finite). CPU only: f32 subnormal inputs are added exactly there (Rust never sets
/// flush-to-zero or denormals-are-zero), while PTX's `add.f32` may flush them (`.ftz`);
/// GPU kernels use [`round_magnitude_branch_free`]. For `2 <= EXP <= 8`, `1 <= MAN <= 21`.
#[inline(always)]
pub fn round_magnitude_in_binade<const EXP: u32, const MAN: u32>(abs: u32) -> u32 {
    let bias = (1 << (EXP - 1)) - 1;
    // The biased f32 exponent of the binade, at least that of the target's smallest normal.
    let binade = (abs >> 23).max(128 - bias);
    let c_bits = (binade + 23 - MAN) << 23;
    let sum = (f32::from_bits(abs) + f32::from_bits(c_bits)).to_bits();
    sum.wrapping_sub(c_bits).wrapping_add((binade - (128 - bias)) << MAN)
}

/// The largest f32 magnitude (bits) [`round_magnitude_in_binade`] takes for a format with
/// `EXP` exponent and `MAN` mantissa bits: `2^(2^EXP - bias)`, which rounds past the
/// largest finite encoding of both the IEEE-like (E5M2) and the all-finite-exponent
/// (E4M3) layouts, so that a caller saturates by `min(abs, this)` first and `min(code,
/// max)` after.
pub const fn binade_rounding_limit<const EXP: u32, const MAN: u32>() -> u32 {
    let bias = (1 << (EXP - 1)) - 1;
    (127 + (1 << EXP) - bias) << 23
}

/// What a narrowing conversion does with a finite value past the format's largest
/// finite one (and with an infinite input).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Overflow {
    /// Infinity for formats that have one (IEEE behaviour), NaN for E4M3 (OCP's
    /// non-saturating mode, CUDA's `__NV_NOSAT`).
    Standard,
    /// The largest finite value of the same sign, infinite inputs included (OCP's
    /// saturating mode, CUDA's `__NV_SATFINITE` and PTX `cvt.rn.satfinite`).
    SatFinite,
}

/// The f32 magnitude encoding of the finite magnitude encoding `abs` of a format with
/// `EXP` exponent and `MAN` mantissa bits in the IEEE layout (whose every value is an
/// f32): rebias a normal's exponent; shift a subnormal's leading one into the implicit
/// bit. Exact. For `2 <= EXP <= 8`, `1 <= MAN <= 22`; the caller handles the encodings
/// that are not finite.
#[inline(always)]
pub const fn widen_magnitude<const EXP: u32, const MAN: u32>(abs: u32) -> u32 {
    let bias = (1 << (EXP - 1)) - 1;
    let (exponent, mantissa) = (abs >> MAN, abs & ((1 << MAN) - 1));
    if exponent != 0 {
        ((exponent + 127 - bias) << 23) | (mantissa << (23 - MAN))
    } else if mantissa == 0 {
        0
    } else {
        // mantissa · 2^(1 - bias - MAN) = 2^lead · 1.f · 2^(1 - bias - MAN).
        let lead = 31 - mantissa.leading_zeros();
        ((lead + 128 - bias - MAN) << 23) | ((mantissa << (23 - lead)) & 0x007F_FFFF)
    }
}
