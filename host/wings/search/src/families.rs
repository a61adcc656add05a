//! The candidate scheme families, their cost model, and the constants each one uses.

use bitexact_verify::reference;
use shared::Family;
use shared::norm::{snorm_with, unorm_with};
use shared::scheme::Scheme;
use std::ops::RangeInclusive;

/// The `k` of the denominators `2^k - 1` the library divides by.
#[doc(hidden)]
pub const DENOMINATOR_BITS: RangeInclusive<u32> = 1..=16;

/// Largest integer multiplier `times_m` tries.
pub(crate) const MAX_MULTIPLIER: i32 = 4095;
/// How far (in ULPs) `times_m` moves its constant away from `fl(1/(m·d))`.
pub(crate) const CONSTANT_NUDGE: i32 = 2;

/// UNORM or SNORM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Unsigned normalized: `x / (2^n - 1)`.
    Unorm,
    /// Signed normalized: `max(x / (2^(n-1) - 1), -1)`.
    Snorm,
}

impl Kind {
    /// The code widths the library supports.
    pub const fn widths(self) -> RangeInclusive<u32> {
        match self {
            Kind::Unorm => 1..=16,
            Kind::Snorm => 2..=16,
        }
    }

    /// The conversion family for `bits`-bit codes.
    #[doc(hidden)]
    pub const fn family(self, bits: u32) -> Family {
        match self {
            Kind::Unorm => Family::UnormToF32 { bits },
            Kind::Snorm => Family::SnormToF32 { bits },
        }
    }

    /// The `k` of the denominator `2^k - 1` of `bits`-bit codes.
    #[doc(hidden)]
    pub const fn denominator_bits(self, bits: u32) -> u32 {
        match self {
            Kind::Unorm => bits,
            Kind::Snorm => bits - 1,
        }
    }

    /// `UNORM` or `SNORM`.
    pub const fn label(self) -> &'static str {
        match self {
            Kind::Unorm => "UNORM",
            Kind::Snorm => "SNORM",
        }
    }

    /// The library's value of `scheme` on the (raw, n-bit) code `code`.
    #[doc(hidden)]
    pub fn apply(self, scheme: Scheme, bits: u32, code: u16) -> f32 {
        match self {
            Kind::Unorm => unorm_with(scheme, bits, code),
            Kind::Snorm => snorm_with(scheme, bits, code),
        }
    }
}

/// A family of schemes: a shape and a recipe for its constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SchemeFamily {
    /// `t` (d = 1 only).
    Convert,
    /// `t * fl(1/d)`: the common shortcut and the baseline.
    Naive,
    /// `((x * m) as f32) * c`: Mutel's ×3 generalised.
    TimesM,
    /// `fma(t, k0, t * k1)` with Giesen's series constants.
    SeriesFma,
    /// `fma(t, hi, t * lo)` with the constant split in two.
    SplitFma,
    /// `t * k0 + t * k1`: Giesen's series form.
    Series,
    /// `t * hi + t * lo`.
    Split,
}

impl SchemeFamily {
    /// Every family, in cost order.
    #[doc(hidden)]
    pub const ALL: [SchemeFamily; 7] = [
        SchemeFamily::Convert,
        SchemeFamily::Naive,
        SchemeFamily::TimesM,
        SchemeFamily::SeriesFma,
        SchemeFamily::SplitFma,
        SchemeFamily::Series,
        SchemeFamily::Split,
    ];

    /// Short stable name.
    pub const fn name(self) -> &'static str {
        match self {
            SchemeFamily::Convert => "convert",
            SchemeFamily::Naive => "naive",
            SchemeFamily::TimesM => "times_m",
            SchemeFamily::SeriesFma => "series_fma",
            SchemeFamily::SplitFma => "split_fma",
            SchemeFamily::Series => "series",
            SchemeFamily::Split => "split",
        }
    }

    /// The candidates of this family for denominator `d`, in the order tried.
    #[doc(hidden)]
    pub fn candidates(self, d: u32) -> Vec<Scheme> {
        match self {
            SchemeFamily::Convert => vec![Scheme::Convert],
            SchemeFamily::Naive => vec![Scheme::Mul { c: recip(u64::from(d)) }],
            SchemeFamily::TimesM => multipliers(d)
                .flat_map(|m| {
                    let c = recip(u64::from(d) * m as u64);
                    let nudges = (0..=CONSTANT_NUDGE).flat_map(|j| if j == 0 { vec![0] } else { vec![-j, j] });
                    nudges.map(move |j| Scheme::IntMul { m, c: f32::from_bits(c.to_bits().wrapping_add_signed(j)) })
                })
                .collect(),
            SchemeFamily::SeriesFma => {
                let (c0, c1) = series_constants(d);
                vec![Scheme::Fma { c0, c1 }]
            }
            SchemeFamily::SplitFma => {
                let (c0, c1) = split_constants(d);
                vec![Scheme::Fma { c0, c1 }]
            }
            SchemeFamily::Series => {
                let (c0, c1) = series_constants(d);
                vec![Scheme::MulAdd { c0, c1 }]
            }
            SchemeFamily::Split => {
                let (c0, c1) = split_constants(d);
                vec![Scheme::MulAdd { c0, c1 }]
            }
        }
    }
}

/// What a scheme costs: FP operations and integer multiplies per element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct SchemeCost {
    /// FP multiplies, adds and FMAs.
    pub fp_ops: u32,
    /// Integer multiplies.
    pub int_ops: u32,
}

impl SchemeCost {
    /// The cost of `scheme`'s shape.
    #[doc(hidden)]
    pub const fn of(scheme: Scheme) -> SchemeCost {
        let (fp_ops, int_ops) = match scheme {
            Scheme::Convert => (0, 0),
            Scheme::Mul { .. } => (1, 0),
            Scheme::IntMul { .. } => (1, 1),
            Scheme::Fma { .. } => (2, 0),
            Scheme::MulAdd { .. } => (3, 0),
        };
        SchemeCost { fp_ops, int_ops }
    }

    /// Sort key: total operations, then FP operations.
    #[doc(hidden)]
    pub const fn key(self) -> (u32, u32) {
        (self.fp_ops + self.int_ops, self.fp_ops)
    }
}

/// The multipliers `times_m` tries for denominator `d`, in order: odd `m` from 3 to
/// [`MAX_MULTIPLIER`] while `m·d <= 2^24` (so that `x·m` and its conversion are exact).
pub(super) fn multipliers(d: u32) -> impl Iterator<Item = i32> {
    (3..=MAX_MULTIPLIER).step_by(2).take_while(move |&m| u64::from(d) * m as u64 <= 1 << 24)
}

/// The nearest f32 to `1/q`, by the reference's integer rounding.
pub(super) fn recip(q: u64) -> f32 {
    reference::div_to_f32(1, q).expect("1/q is normal for q <= 2^24")
}

/// `x · 2^exponent` for a normal `x` whose result stays normal: exact, done on the
/// exponent field.
pub(super) fn times_pow2(x: f32, exponent: i32) -> f32 {
    let biased = (x.to_bits() >> 23 & 0xFF) as i32 + exponent;
    assert!((1..=254).contains(&biased), "{x:e} · 2^{exponent} leaves the normal range");
    f32::from_bits((x.to_bits() & !(0xFF << 23)) | (biased as u32) << 23)
}

/// Giesen's series constants for `d = 2^k - 1`: `k0 = Σ_{j=1..J} 2^(-jk)` with
/// `J = floor(23/k) + 1` (exact: at most 24 significant bits) and `k1 = k0 · 2^(-Jk)`.
pub(crate) fn series_constants(d: u32) -> (f32, f32) {
    let k = (d + 1).trailing_zeros();
    assert_eq!(d + 1, 1 << k, "{d} is not 2^k - 1");
    let terms = 23 / k + 1;
    let numerator: u64 = (0..terms).map(|j| 1u64 << (j * k)).sum();
    let k0 = times_pow2(reference::div_to_f32(numerator, 1).expect("below 2^24, exact"), -((terms * k) as i32));
    (k0, times_pow2(k0, -((terms * k) as i32)))
}

/// The constant `1/d` split in two: `hi = fl(1/d)`, `lo = fl(1/d - hi)`, both rounded
/// from the exact rationals by integer arithmetic.
pub(crate) fn split_constants(d: u32) -> (f32, f32) {
    let hi = recip(u64::from(d));
    // hi = significand · 2^-shift exactly; 1/d - hi = (2^shift - d·significand) / (d·2^shift).
    let bits = hi.to_bits();
    let significand = u64::from(bits & 0x7F_FFFF | 1 << 23);
    let shift = 150 - (bits >> 23);
    let numerator = (1i128 << shift) - i128::from(d) * i128::from(significand);
    let denominator = u64::from(d) << shift;
    let magnitude = reference::div_to_f32(numerator.unsigned_abs() as u64, denominator).unwrap_or(0.0);
    (hi, if numerator < 0 { -magnitude } else { magnitude })
}

/// The denominator `2^k - 1`.
#[doc(hidden)]
pub const fn denominator(k: u32) -> u32 {
    (1 << k) - 1
}

/// The conversions that divide by `2^k - 1`: UNORMk, and SNORM(k+1) where that exists
/// (k <= 15).
#[doc(hidden)]
pub fn uses(k: u32) -> Vec<(Kind, u32)> {
    [(Kind::Unorm, k), (Kind::Snorm, k + 1)].into_iter().filter(|&(kind, bits)| kind.widths().contains(&bits)).collect()
}
