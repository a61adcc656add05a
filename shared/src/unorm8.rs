//! UNORM8 → f32: the correctly rounded value of `x / 255` for every byte `x`.
//!
//! # Why the division-free forms are exact
//!
//! `x / 255` for `x` in 1..=254 is not a dyadic rational, so it never lies exactly on
//! an f32 or on a midpoint between two f32s; a form is correctly rounded iff its
//! result lands on the same f32 as the exact quotient rounded to nearest-even. For a
//! form made of a few rounded operations there is no short general argument that it
//! does: what makes each exact form here *exact* is the exhaustive check of all 256
//! inputs against an integer-arithmetic reference (`bitexact::verify::reference`), run by
//! `cargo test` and by `bitexact`. The constants are chosen so that this check can
//! succeed:
//!
//! * series (F. Giesen): `1/255 = 2^-8 · 1/(1 - 2^-8) = Σ 2^-8k`, so
//!   `k0 = (1 + 2^8 + 2^16) / 2^24` holds the first three terms exactly and
//!   `k1 = k0 / 2^24` the next three; `t·k0 + t·k1` then carries about 48 bits of the
//!   quotient into one final rounding.
//! * ×3 (Mutel): `x / 255 = 3x / 765`, and `fl(1/765)` happens to be close enough to
//!   `1/765` that one rounded multiply of the exact integer `3x` lands right.
//!
//! `x * fl(1/255)` is *not* exact: it is one ULP off on some inputs, which the tests
//! list by comparing against the reference.

/// The UNORM8 denominator, `2^8 - 1`.
pub const MAX: u8 = u8::MAX;
/// `fl(1/255)`: the nearest f32 to `1/255`.
pub const RECIP_255: f32 = 1.0 / 255.0;
/// `fl(1/765)` for the ×3 scheme.
pub const RECIP_765: f32 = 1.0 / 765.0;
/// `(1 + 2^8 + 2^16) / 2^24`, exact in f32 (17 significant bits).
pub const SERIES_K0: f32 = (1 + (1 << 8) + (1 << 16)) as f32 / (1u32 << 24) as f32;
/// `SERIES_K0 / 2^24`, exact in f32.
pub const SERIES_K1: f32 = SERIES_K0 / (1u32 << 24) as f32;

/// `x / 255` by IEEE division: correctly rounded by definition. The reference form.
#[inline]
pub fn div_ieee(x: u8) -> f32 {
    f32::from(x) / f32::from(MAX)
}

/// `fl64(x · fl64(1/255))` rounded to f32. Exact on all 256 inputs (proven by the
/// exhaustive test; the double rounding never lands on an f32 midpoint here).
#[inline]
pub fn via_f64(x: u8) -> f32 {
    (f64::from(x) * (1.0 / 255.0)) as f32
}

/// `x · fl(1/255)`: one multiply, the common shortcut. NOT exact: within 1 ULP, wrong
/// on the inputs the tests derive from the reference.
#[inline]
pub fn mul_recip(x: u8) -> f32 {
    f32::from(x) * RECIP_255
}

/// Giesen's series `t·k0 + t·k1` (two multiplies, one add, no contraction). Exact on
/// all 256 inputs; see the module docs.
#[inline]
pub fn series(x: u8) -> f32 {
    let t = f32::from(x);
    t * SERIES_K0 + t * SERIES_K1
}

/// The series with a fused final step, `fma(t, k0, t·k1)`. Exact on all 256 inputs.
#[inline]
pub fn series_fma(x: u8) -> f32 {
    let t = f32::from(x);
    core::f32::math::mul_add(t, SERIES_K0, t * SERIES_K1)
}

/// Mutel's ×3 scheme with the ×3 in float: `(t · 3) · fl(1/765)`. `t · 3` is exact
/// (at most 765, an integer), so this is one rounding. Exact on all 256 inputs.
#[inline]
pub fn times3_float(x: u8) -> f32 {
    f32::from(x) * 3.0 * RECIP_765
}

/// Mutel's ×3 scheme with the ×3 in integers: `((x · 3) as f32) · fl(1/765)`. Exact on
/// all 256 inputs.
#[inline]
pub fn times3_int(x: u8) -> f32 {
    (u32::from(x) * 3) as f32 * RECIP_765
}
