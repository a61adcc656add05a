//! The scheme finder behind `bitexact search`: for each denominator `d = 2^k - 1`
//! (k = 1..=16) it tries families of division-free [`Scheme`]s, cheapest first, and
//! proves each candidate by checking every code of every conversion that divides by d
//! (UNORMk, codes 0..=d, and for k <= 15 SNORM(k+1), codes -d..=d) against the exact
//! rational reference ([`reference::expected_many`]). The cheapest candidate exact on all
//! of them is the answer for that d, so the choice is made once per denominator;
//! `--emit-rust` writes the answers to `shared/src/schemes.rs`.
//!
//! Candidates are evaluated with `shared::norm::{unorm_with, snorm_with}`, the very
//! functions the library and the GPU kernels run with the chosen constants, so a
//! scheme proven here is proven as the library computes it. Candidates are checked in
//! parallel on the global rayon pool; the answer is the first exact one in the order
//! tried, whatever the pool's size.
//!
//! Families tried, in cost order (FP operations + integer multiplies, then FP
//! operations; the int → f32 conversion, the SNORM sign extension and clamp are the
//! same for every scheme and not counted):
//!
//! | family | formula | FP ops | int ops |
//! |---|---|---|---|
//! | `convert` | `t` (only for d = 1) | 0 | 0 |
//! | `naive` | `t * fl(1/d)` | 1 | 0 |
//! | `times_m` | `((x * m) as f32) * c`, odd m in 3..=4095 with `m·d <= 2^24`, `c = fl(1/(m·d))` ± 2 ULP | 1 | 1 |
//! | `series_fma` | `fma(t, k0, t * k1)`, Giesen's series constants | 2 | 0 |
//! | `split_fma` | `fma(t, hi, t * lo)`, `hi = fl(1/d)`, `lo = fl(1/d - hi)` | 2 | 0 |
//! | `series` | `t * k0 + t * k1` (Giesen) | 3 | 0 |
//! | `split` | `t * hi + t * lo` | 3 | 0 |
//!
//! With `d = 2^k - 1`, `1/d = Σ_{j>=1} 2^(-jk)`; the series constant `k0` holds the
//! first `J = floor(23/k) + 1` terms (exact in f32: they span at most 24 bits) and
//! `k1 = k0 · 2^(-Jk)` the next `J`.
//!
//! Owns: the scheme families, their cost model and the proof of each candidate.
//! Uses: [`crate::support`] and [`crate::verify::reference`] (the exact answers).

use crate::verify::reference;
use rayon::prelude::*;
use serde::Serialize;
use shared::Family;
use shared::norm::{snorm_with, unorm_with};
use shared::scheme::Scheme;
use std::ops::RangeInclusive;

/// The `k` of the denominators `2^k - 1` the library divides by.
pub const DENOMINATOR_BITS: RangeInclusive<u32> = 1..=16;

/// Largest integer multiplier `times_m` tries.
pub const MAX_MULTIPLIER: i32 = 4095;
/// How far (in ULPs) `times_m` moves its constant away from `fl(1/(m·d))`.
pub const CONSTANT_NUDGE: i32 = 2;

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
    pub const fn family(self, bits: u32) -> Family {
        match self {
            Kind::Unorm => Family::UnormToF32 { bits },
            Kind::Snorm => Family::SnormToF32 { bits },
        }
    }

    /// The `k` of the denominator `2^k - 1` of `bits`-bit codes.
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
    pub const fn key(self) -> (u32, u32) {
        (self.fp_ops + self.int_ops, self.fp_ops)
    }
}

/// The multipliers `times_m` tries for denominator `d`, in order: odd `m` from 3 to
/// [`MAX_MULTIPLIER`] while `m·d <= 2^24` (so that `x·m` and its conversion are exact).
fn multipliers(d: u32) -> impl Iterator<Item = i32> {
    (3..=MAX_MULTIPLIER).step_by(2).take_while(move |&m| u64::from(d) * m as u64 <= 1 << 24)
}

/// The nearest f32 to `1/q`, by the reference's integer rounding.
fn recip(q: u64) -> f32 {
    reference::div_to_f32(1, q).expect("1/q is normal for q <= 2^24")
}

/// `x · 2^exponent` for a normal `x` whose result stays normal: exact, done on the
/// exponent field.
fn times_pow2(x: f32, exponent: i32) -> f32 {
    let biased = (x.to_bits() >> 23 & 0xFF) as i32 + exponent;
    assert!((1..=254).contains(&biased), "{x:e} · 2^{exponent} leaves the normal range");
    f32::from_bits((x.to_bits() & !(0xFF << 23)) | (biased as u32) << 23)
}

/// Giesen's series constants for `d = 2^k - 1`: `k0 = Σ_{j=1..J} 2^(-jk)` with
/// `J = floor(23/k) + 1` (exact: at most 24 significant bits) and `k1 = k0 · 2^(-Jk)`.
pub fn series_constants(d: u32) -> (f32, f32) {
    let k = (d + 1).trailing_zeros();
    assert_eq!(d + 1, 1 << k, "{d} is not 2^k - 1");
    let terms = 23 / k + 1;
    let numerator: u64 = (0..terms).map(|j| 1u64 << (j * k)).sum();
    let k0 = times_pow2(reference::div_to_f32(numerator, 1).expect("below 2^24, exact"), -((terms * k) as i32));
    (k0, times_pow2(k0, -((terms * k) as i32)))
}

/// The constant `1/d` split in two: `hi = fl(1/d)`, `lo = fl(1/d - hi)`, both rounded
/// from the exact rationals by integer arithmetic.
pub fn split_constants(d: u32) -> (f32, f32) {
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
pub const fn denominator(k: u32) -> u32 {
    (1 << k) - 1
}

/// The conversions that divide by `2^k - 1`: UNORMk, and SNORM(k+1) where that exists
/// (k <= 15).
pub fn uses(k: u32) -> Vec<(Kind, u32)> {
    [(Kind::Unorm, k), (Kind::Snorm, k + 1)].into_iter().filter(|&(kind, bits)| kind.widths().contains(&bits)).collect()
}

/// One conversion's reference results on every one of its `2^bits` codes.
struct Conversion {
    kind: Kind,
    bits: u32,
    expected: Vec<u64>,
}

impl Conversion {
    /// Panics if `bits` is outside [`Kind::widths`].
    fn new(kind: Kind, bits: u32) -> Conversion {
        assert!(kind.widths().contains(&bits), "{} bits for {}", bits, kind.label());
        let codes: Vec<u64> = (0..1u64 << bits).collect();
        let mut expected = vec![0; codes.len()];
        reference::expected_many(kind.family(bits), &codes, &mut expected);
        Conversion { kind, bits, expected }
    }

    /// Codes on which `scheme` differs from the reference; stops at the first one if
    /// `stop_at_first`.
    fn wrong_codes(&self, scheme: Scheme, stop_at_first: bool) -> u64 {
        let mut wrong = 0;
        for (code, &want) in self.expected.iter().enumerate() {
            if u64::from(self.kind.apply(scheme, self.bits, code as u16).to_bits()) != want {
                wrong += 1;
                if stop_at_first {
                    break;
                }
            }
        }
        wrong
    }
}

/// Checks schemes for one denominator against the reference's results on every code of
/// every conversion in [`uses`], worked out once.
pub struct Prover {
    conversions: Vec<Conversion>,
}

impl Prover {
    /// A prover for the denominator `2^k - 1`.
    ///
    /// Panics if `k` is outside [`DENOMINATOR_BITS`].
    pub fn new(k: u32) -> Prover {
        assert!(DENOMINATOR_BITS.contains(&k), "no conversion divides by 2^{k} - 1");
        Prover { conversions: uses(k).into_iter().map(|(kind, bits)| Conversion::new(kind, bits)).collect() }
    }

    /// Whether `scheme` is right on every code of every conversion.
    pub fn is_exact(&self, scheme: Scheme) -> bool {
        self.conversions.iter().all(|c| c.wrong_codes(scheme, true) == 0)
    }

    /// The codes on which `scheme` is wrong, per conversion, in the order of [`uses`].
    pub fn count_wrong(&self, scheme: Scheme) -> Vec<Use> {
        let tally = |c: &Conversion| Use {
            kind: c.kind,
            bits: c.bits,
            codes: c.expected.len() as u64,
            wrong: c.wrong_codes(scheme, false),
        };
        self.conversions.iter().map(tally).collect()
    }
}

/// Number of codes of `kind`/`bits` (all `2^bits` of them) on which `scheme` is wrong.
///
/// Panics if `bits` is outside [`Kind::widths`].
pub fn count_wrong(kind: Kind, bits: u32, scheme: Scheme) -> u64 {
    Conversion::new(kind, bits).wrong_codes(scheme, false)
}

/// A conversion that divides by a denominator, and how a scheme fares on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Use {
    /// UNORM or SNORM.
    pub kind: Kind,
    /// Code width n.
    pub bits: u32,
    /// Codes checked: all `2^n`.
    pub codes: u64,
    /// Codes on which the scheme is wrong.
    pub wrong: u64,
}

/// A scheme, the family it came from, and its cost.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Candidate {
    /// The family.
    pub family: SchemeFamily,
    /// The scheme with its constants.
    #[serde(serialize_with = "serialize_scheme")]
    pub scheme: Scheme,
    /// Its cost.
    pub cost: SchemeCost,
}

/// How one family fared for one denominator.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct FamilyResult {
    /// The family.
    pub family: SchemeFamily,
    /// Its first exact candidate, if any.
    #[serde(serialize_with = "serialize_option_scheme")]
    pub exact: Option<Scheme>,
    /// Candidates checked.
    pub tried: u64,
}

/// The finder's answer for one denominator.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Found {
    /// k: the denominator is `2^k - 1`.
    pub bits: u32,
    /// Denominator d.
    pub denominator: u32,
    /// The conversions that divide by d (see [`uses`]), each with the codes on which
    /// the naive `t * fl(1/d)` is wrong. Every candidate is checked on all their codes.
    pub naive_wrong: Vec<Use>,
    /// The cheapest scheme exact on every code of every conversion, `None` if no family
    /// tried has one.
    pub best: Option<Candidate>,
    /// The smallest `m` for which Mutel's form `((x * m) as f32) * fl(1/(m·d))`, with
    /// the constant not nudged, is exact (m = 1 is the naive form).
    pub smallest_m: Option<i32>,
    /// Every family's first exact candidate.
    pub families: Vec<FamilyResult>,
}

/// Finds the cheapest scheme exact for every conversion that divides by `2^k - 1`, and
/// how each family fares.
///
/// Panics if `k` is outside [`DENOMINATOR_BITS`].
pub fn search(k: u32) -> Found {
    let prover = Prover::new(k);
    let d = denominator(k);
    let families: Vec<FamilyResult> = SchemeFamily::ALL
        .iter()
        .map(|&family| {
            let candidates = family.candidates(d);
            let exact_at = candidates.par_iter().position_first(|&s| prover.is_exact(s));
            FamilyResult {
                family,
                exact: exact_at.map(|i| candidates[i]),
                tried: exact_at.map_or(candidates.len(), |i| i + 1) as u64,
            }
        })
        .collect();
    let best = families
        .iter()
        .filter_map(|r| r.exact.map(|scheme| Candidate { family: r.family, scheme, cost: SchemeCost::of(scheme) }))
        .min_by_key(|c| c.cost.key());
    let naive = SchemeFamily::Naive.candidates(d)[0];
    let smallest_m = if prover.is_exact(naive) {
        Some(1)
    } else {
        let multipliers: Vec<i32> = multipliers(d).collect();
        multipliers
            .into_par_iter()
            .find_first(|&m| prover.is_exact(Scheme::IntMul { m, c: recip(u64::from(d) * m as u64) }))
    };
    Found { bits: k, denominator: d, naive_wrong: prover.count_wrong(naive), best, smallest_m, families }
}

/// [`search`] for each `k` of `denominator_bits`, on the global rayon pool; answers in
/// the same order.
pub fn search_all(denominator_bits: &[u32]) -> Vec<Found> {
    denominator_bits.par_iter().map(|&k| search(k)).collect()
}

/// [`search`] for every denominator the library divides by, in the order of
/// [`DENOMINATOR_BITS`]: what [`emit_rust`] needs.
pub fn search_every_denominator() -> Vec<Found> {
    search_all(&DENOMINATOR_BITS.collect::<Vec<_>>())
}

/// Exact hexadecimal form of an f32, as C's `%a`: `0x1.010102p-8`, `-0x1p+0`,
/// `0x0.000002p-126` for subnormals, `0x0p+0` for zero.
pub fn hex_f32(x: f32) -> String {
    let bits = x.to_bits();
    let sign = if bits >> 31 == 1 { "-" } else { "" };
    let exponent = (bits >> 23 & 0xFF) as i32;
    let mantissa = bits & 0x7F_FFFF;
    let (lead, exponent) = match (exponent, mantissa) {
        (0, 0) => return format!("{sign}0x0p+0"),
        (0, _) => (0, -126),
        (0xFF, 0) => return format!("{sign}inf"),
        (0xFF, _) => return "nan".into(),
        (e, _) => (1, e - 127),
    };
    // 23 mantissa bits, shifted to 24 = 6 hex digits, trailing zeros dropped.
    let digits = format!("{:06x}", mantissa << 1);
    let digits = digits.trim_end_matches('0');
    let point = if digits.is_empty() { String::new() } else { format!(".{digits}") };
    format!("{sign}0x{lead}{point}p{exponent:+}")
}

/// The scheme as a formula in `x` (the integer code) and `t = x as f32`, constants as
/// exact hex floats.
pub fn formula(scheme: Scheme) -> String {
    match scheme {
        Scheme::Convert => "t".into(),
        Scheme::Mul { c } => format!("t * {}", hex_f32(c)),
        Scheme::IntMul { m, c } => format!("((x * {m}) as f32) * {}", hex_f32(c)),
        Scheme::Fma { c0, c1 } => format!("fma(t, {}, t * {})", hex_f32(c0), hex_f32(c1)),
        Scheme::MulAdd { c0, c1 } => format!("t * {} + t * {}", hex_f32(c0), hex_f32(c1)),
    }
}

/// The scheme as a Rust expression (constants by their exact bits).
pub fn rust_expression(scheme: Scheme) -> String {
    let bits = |c: f32| format!("f32::from_bits({:#010x})", c.to_bits());
    match scheme {
        Scheme::Convert => "Scheme::Convert".into(),
        Scheme::Mul { c } => format!("Scheme::Mul {{ c: {} }}", bits(c)),
        Scheme::IntMul { m, c } => format!("Scheme::IntMul {{ m: {m}, c: {} }}", bits(c)),
        Scheme::Fma { c0, c1 } => format!("Scheme::Fma {{ c0: {}, c1: {} }}", bits(c0), bits(c1)),
        Scheme::MulAdd { c0, c1 } => format!("Scheme::MulAdd {{ c0: {}, c1: {} }}", bits(c0), bits(c1)),
    }
}

/// The conversions that divide by `2^k - 1`, as a list: `UNORM8, SNORM9`.
pub fn conversions(k: u32) -> String {
    uses(k).into_iter().map(|(kind, bits)| format!("{}{bits}", kind.label())).collect::<Vec<_>>().join(", ")
}

/// Why [`emit_rust`] cannot write `shared/src/schemes.rs`. `Display` is one line.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EmitError {
    /// The answers are not those for every denominator, in order (a partial search).
    NotEveryDenominator,
    /// No scheme tried is exact for one denominator.
    NoExactScheme {
        /// `2^bits - 1`.
        denominator: u32,
        /// k: the denominator is `2^k - 1`.
        bits: u32,
    },
}

impl std::fmt::Display for EmitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmitError::NotEveryDenominator => {
                f.write_str("--emit-rust needs every denominator: leave out --unorm and --snorm")
            }
            EmitError::NoExactScheme { denominator, bits } => write!(
                f,
                "no division-free scheme tried is exact for d = {denominator} ({}): schemes.rs cannot be written",
                conversions(*bits)
            ),
        }
    }
}

impl std::error::Error for EmitError {}

/// The text of `shared/src/schemes.rs` for `found`, which must be the answers for every
/// denominator in the order of [`DENOMINATOR_BITS`] (as [`search_every_denominator`]
/// gives them), each with an exact scheme.
pub fn emit_rust(found: &[Found]) -> Result<String, EmitError> {
    if !found.iter().map(|f| f.bits).eq(DENOMINATOR_BITS) {
        return Err(EmitError::NotEveryDenominator);
    }
    let mut text = String::from(
        "//! Division-free UNORM / SNORM → f32 schemes, one per denominator `d = 2^k - 1`: for\n\
         //! each, the cheapest scheme `bitexact search` found to be correctly rounded on every\n\
         //! code of both conversions that divide by d, UNORMk (codes 0..=d) and SNORM(k+1)\n\
         //! (codes -d..=d once the most negative one is clamped; k <= 15).\n\
         //!\n\
         //! GENERATED FILE: do not edit. Regenerate with\n\
         //!\n\
         //! ```sh\n\
         //! cargo run --release -p host -- search --emit-rust > shared/src/schemes.rs\n\
         //! ```\n\
         //!\n\
         //! `cargo test` proves every entry again on every code of both conversions, and fails\n\
         //! if the finder's answer differs from this file.\n\
         \n\
         use crate::scheme::Scheme;\n",
    );
    text += &format!(
        "\n/// The scheme for `x / (2^k - 1)`, k = {}..={}, at index k - 1: `unorm_to_f32::<N>` uses\n\
         /// `BY_BITS[N - 1]`, `snorm_to_f32::<N>` uses `BY_BITS[N - 2]`.\npub const BY_BITS: [Scheme; {}] = [\n",
        DENOMINATOR_BITS.start(),
        DENOMINATOR_BITS.end(),
        DENOMINATOR_BITS.count()
    );
    for f in found {
        let best = f.best.ok_or(EmitError::NoExactScheme { denominator: f.denominator, bits: f.bits })?;
        text += &format!(
            "    // k = {}, d = {} ({}): {} ({})\n    {},\n",
            f.bits,
            f.denominator,
            conversions(f.bits),
            formula(best.scheme),
            best.family.name(),
            rust_expression(best.scheme)
        );
    }
    text += "];\n";
    Ok(text)
}

fn serialize_scheme<S: serde::Serializer>(scheme: &Scheme, s: S) -> Result<S::Ok, S::Error> {
    SchemeJson::from(*scheme).serialize(s)
}

fn serialize_option_scheme<S: serde::Serializer>(scheme: &Option<Scheme>, s: S) -> Result<S::Ok, S::Error> {
    scheme.map(SchemeJson::from).serialize(s)
}

/// JSON form of a scheme: its formula and constants as exact hex floats and bits.
#[derive(serde::Serialize)]
struct SchemeJson {
    formula: String,
    multiplier: Option<i32>,
    constants_hex: Vec<String>,
    constants_bits: Vec<String>,
}

impl From<Scheme> for SchemeJson {
    fn from(scheme: Scheme) -> SchemeJson {
        let (multiplier, constants) = match scheme {
            Scheme::Convert => (None, vec![]),
            Scheme::Mul { c } => (None, vec![c]),
            Scheme::IntMul { m, c } => (Some(m), vec![c]),
            Scheme::Fma { c0, c1 } | Scheme::MulAdd { c0, c1 } => (None, vec![c0, c1]),
        };
        SchemeJson {
            formula: formula(scheme),
            multiplier,
            constants_hex: constants.iter().map(|&c| hex_f32(c)).collect(),
            constants_bits: constants.iter().map(|c| format!("{:#010x}", c.to_bits())).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_floats_are_exact() {
        assert_eq!(hex_f32(1.0), "0x1p+0");
        assert_eq!(hex_f32(-0.5), "-0x1p-1");
        assert_eq!(hex_f32(0.0), "0x0p+0");
        assert_eq!(hex_f32(f32::from_bits(1)), "0x0.000002p-126");
        assert_eq!(hex_f32(f32::from_bits(0x3F80_0001)), "0x1.000002p+0");
        assert_eq!(hex_f32(f32::from_bits(0x3FFF_FFFF)), "0x1.fffffep+0");
        assert_eq!(hex_f32(f32::MAX), "0x1.fffffep+127");
    }

    #[test]
    fn emit_rust_refuses_a_partial_search_and_a_denominator_without_a_scheme() {
        let unsolved = |k: u32| Found {
            bits: k,
            denominator: denominator(k),
            naive_wrong: Vec::new(),
            best: None,
            smallest_m: None,
            families: Vec::new(),
        };
        let every: Vec<Found> = DENOMINATOR_BITS.map(unsolved).collect();
        assert_eq!(emit_rust(&every[1..]), Err(EmitError::NotEveryDenominator));
        let k = *DENOMINATOR_BITS.start();
        let error = emit_rust(&every).expect_err("no scheme for any denominator");
        assert_eq!(error, EmitError::NoExactScheme { denominator: denominator(k), bits: k });
        let message = error.to_string();
        assert!(message.starts_with(&format!("no division-free scheme tried is exact for d = {} (", denominator(k))));
        assert!(message.ends_with("): schemes.rs cannot be written"), "{message}");
    }

    #[test]
    fn series_constants_match_giesens_unorm8_constants() {
        let (k0, k1) = series_constants(255);
        assert_eq!(k0, shared::unorm8::SERIES_K0);
        assert_eq!(k1, shared::unorm8::SERIES_K1);
    }

    #[test]
    fn split_constants_sum_to_one_over_d_more_closely_than_hi_alone() {
        for k in 2..=16 {
            let d = (1u32 << k) - 1;
            let (hi, lo) = split_constants(d);
            assert_eq!(hi, recip(u64::from(d)));
            // |1 - d·hi| > |1 - d·(hi + lo)|, in f64 where d·hi and d·lo are exact.
            let (hi, lo, d) = (f64::from(hi), f64::from(lo), f64::from(d));
            assert!((1.0 - d * hi - d * lo).abs() < (1.0 - d * hi).abs() * 2f64.powi(-20), "k = {k}");
        }
    }
}
