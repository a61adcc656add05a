//! The scheme finder behind `bitexact search`: for each denominator `d = 2^k - 1`
//! (k = 1..=16) it tries families of division-free [`Scheme`]s, cheapest first, and
//! proves each candidate by checking every code of every conversion that divides by d
//! (UNORMk, codes 0..=d, and for k <= 15 SNORM(k+1), codes -d..=d) against the exact
//! rational reference
//! ([`reference::expected_many`](bitexact_verify::reference::expected_many)). The
//! cheapest candidate exact on all of them is the answer for that d, so the choice is
//! made once per denominator; `--emit-rust` writes the answers to `shared/src/schemes.rs`.
//!
//! This wing is the engine of the `bitexact search` command, and its items are not
//! library API (`#[doc(hidden)]`): its answers are checked in (`shared::schemes`), and the
//! command prints them as a table, Markdown or JSON.
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
//! Uses: [`bitexact_support`] and [`bitexact_verify::reference`] (the exact answers).
#![deny(unsafe_code)]

#[cfg(test)]
mod checked_in;
mod emit;
mod families;
mod prove;

#[doc(hidden)]
pub use emit::*;
#[doc(hidden)]
pub use families::*;
#[doc(hidden)]
pub use prove::*;

use rayon::prelude::*;
use shared::scheme::Scheme;

/// A conversion that divides by a denominator, and how a scheme fares on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[doc(hidden)]
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
#[doc(hidden)]
pub struct Candidate {
    /// The family.
    pub family: SchemeFamily,
    /// The scheme with its constants.
    #[serde(serialize_with = "emit::serialize_scheme")]
    pub scheme: Scheme,
    /// Its cost.
    pub cost: SchemeCost,
}

/// How one family fared for one denominator.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[doc(hidden)]
pub struct FamilyResult {
    /// The family.
    pub family: SchemeFamily,
    /// Its first exact candidate, if any.
    #[serde(serialize_with = "emit::serialize_option_scheme")]
    pub exact: Option<Scheme>,
    /// Candidates checked.
    pub tried: u64,
}

/// The finder's answer for one denominator.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[doc(hidden)]
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
/// Panics if `k` is outside `1..=16` (`DENOMINATOR_BITS`).
#[doc(hidden)]
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
#[doc(hidden)]
pub fn search_all(denominator_bits: &[u32]) -> Vec<Found> {
    denominator_bits.par_iter().map(|&k| search(k)).collect()
}

/// [`search`] for every denominator the library divides by, in the order of
/// [`DENOMINATOR_BITS`]: what [`emit_rust`] needs.
#[doc(hidden)]
pub fn search_every_denominator() -> Vec<Found> {
    search_all(&DENOMINATOR_BITS.collect::<Vec<_>>())
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
