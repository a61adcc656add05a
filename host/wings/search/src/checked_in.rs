//! The checked-in scheme table (`shared/src/schemes.rs`) against the finder: one scheme
//! per denominator, every entry proven again on every code of both conversions that
//! divide by it, the file identical to what the finder writes now, and the published
//! UNORM8 results reproduced.
//!
//! A unit test of the search wing (in the conformance crate's tests until issue 47): it
//! reaches the finder's inner steps (`Prover`, `count_wrong`, `uses`), which are not the
//! library's API.

use crate as search;
use crate::{Kind, SchemeFamily};
use bitexact_verify::table::find;
use shared::scheme::Scheme;
use shared::schemes;
use std::sync::LazyLock;

static FOUND: LazyLock<Vec<search::Found>> = LazyLock::new(search::search_every_denominator);

#[test]
fn every_checked_in_scheme_is_exact_on_every_code_of_both_uses() {
    let mut checked = Vec::new();
    for (&scheme, k) in schemes::BY_BITS.iter().zip(search::DENOMINATOR_BITS) {
        for (kind, bits) in search::uses(k) {
            let wrong = search::count_wrong(kind, bits, scheme);
            assert_eq!(
                wrong,
                0,
                "{}{bits} (d = {}): {}",
                kind.label(),
                search::denominator(k),
                search::formula(scheme)
            );
            checked.push((kind, bits));
        }
    }
    // Every conversion the library has, each under the denominator it divides by.
    let every: Vec<(Kind, u32)> =
        [Kind::Unorm, Kind::Snorm].into_iter().flat_map(|kind| kind.widths().map(move |bits| (kind, bits))).collect();
    checked.sort_by_key(|&(kind, bits)| (kind == Kind::Snorm, bits));
    assert_eq!(checked, every);
}

#[test]
fn each_denominator_serves_unorm_k_and_snorm_k_plus_1() {
    for k in search::DENOMINATOR_BITS {
        let expected: &[(Kind, u32)] =
            if k < 16 { &[(Kind::Unorm, k), (Kind::Snorm, k + 1)] } else { &[(Kind::Unorm, 16)] };
        assert_eq!(search::uses(k), expected);
        for &(kind, bits) in expected {
            assert_eq!(kind.denominator_bits(bits), k);
        }
    }
}

#[test]
fn the_finder_and_the_checked_in_table_agree() {
    let emitted = search::emit_rust(&FOUND).expect("every denominator has an exact scheme");
    let checked_in = include_str!("../../../../shared/src/schemes.rs");
    assert!(
        emitted == checked_in,
        "shared/src/schemes.rs is not what the finder writes now; regenerate it with\n  \
         cargo run --release -p host -- search --emit-rust > shared/src/schemes.rs"
    );
}

#[test]
fn the_finder_proves_on_every_code_of_both_uses() {
    for found in FOUND.iter() {
        let codes: Vec<(Kind, u32, u64)> = found.naive_wrong.iter().map(|u| (u.kind, u.bits, u.codes)).collect();
        let expected: Vec<(Kind, u32, u64)> =
            search::uses(found.bits).into_iter().map(|(kind, bits)| (kind, bits, 1 << bits)).collect();
        assert_eq!(codes, expected, "d = {}", found.denominator);
    }
}

#[test]
fn the_finder_has_a_scheme_for_every_denominator_and_it_is_the_cheapest_exact_one() {
    for found in FOUND.iter() {
        let best = found.best.unwrap_or_else(|| panic!("d = {}: no exact scheme", found.denominator));
        let prover = search::Prover::new(found.bits);
        assert!(prover.is_exact(best.scheme));
        for r in &found.families {
            if let Some(scheme) = r.exact {
                assert!(search::SchemeCost::of(scheme).key() >= best.cost.key(), "{:?} beats the answer", r.family);
            }
        }
        // Every cheaper candidate of every family really is wrong somewhere.
        for family in SchemeFamily::ALL {
            for scheme in family.candidates(found.denominator) {
                if search::SchemeCost::of(scheme).key() < best.cost.key() {
                    assert!(!prover.is_exact(scheme), "{}", search::formula(scheme));
                }
            }
        }
    }
}

#[test]
fn the_finder_reproduces_the_published_unorm8_results() {
    let d255 = FOUND.iter().find(|f| f.denominator == 255).expect("d = 255 searched");
    // x * fl(1/255) is wrong, on as many inputs as the table's variant is.
    let mul_recip = bitexact_verify::cpu::verify(find("unorm8_mul_recip").expect("in the table"));
    let unorm8 = d255.naive_wrong.iter().find(|u| u.kind == Kind::Unorm).expect("UNORM8 divides by 255");
    assert!(unorm8.wrong > 0);
    assert_eq!(unorm8.wrong, mul_recip.mismatches);
    // Mutel's ×3 is exact, and 3 is the smallest multiplier that is; its constant is
    // the library's fl(1/765).
    assert_eq!(d255.smallest_m, Some(3));
    assert_eq!(search::count_wrong(Kind::Unorm, 8, Scheme::IntMul { m: 3, c: shared::unorm8::RECIP_765 }), 0);
    let exact = |family: SchemeFamily| d255.families.iter().find(|r| r.family == family).and_then(|r| r.exact);
    assert_eq!(exact(SchemeFamily::TimesM), Some(Scheme::IntMul { m: 3, c: shared::unorm8::RECIP_765 }));
    // Giesen's series is exact, with and without the FMA.
    let series = Scheme::MulAdd { c0: shared::unorm8::SERIES_K0, c1: shared::unorm8::SERIES_K1 };
    assert_eq!(exact(SchemeFamily::Series), Some(series));
    assert!(exact(SchemeFamily::SeriesFma).is_some());
    assert_eq!(exact(SchemeFamily::Naive), None);
}
