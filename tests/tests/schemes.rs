//! The checked-in scheme table (`shared/src/schemes.rs`) against the finder: every entry
//! proven again on every code, the file identical to what the finder writes now, and the
//! published UNORM8 results reproduced.

use host::search::{self, Kind, SchemeFamily};
use host::table::find;
use shared::scheme::Scheme;
use shared::schemes;
use std::sync::LazyLock;

static FOUND: LazyLock<Vec<search::Found>> = LazyLock::new(|| search::search_all(&search::all_jobs()));

#[test]
fn every_checked_in_scheme_is_exact_on_every_code() {
    let entries = schemes::UNORM.iter().zip(Kind::Unorm.widths()).map(|(&s, n)| (Kind::Unorm, n, s));
    let entries = entries.chain(schemes::SNORM.iter().zip(Kind::Snorm.widths()).map(|(&s, n)| (Kind::Snorm, n, s)));
    let mut checked = 0;
    for (kind, bits, scheme) in entries {
        assert_eq!(search::count_wrong(kind, bits, scheme), 0, "{}{bits}: {}", kind.label(), search::formula(scheme));
        checked += 1;
    }
    assert_eq!(checked, 16 + 15);
}

#[test]
fn the_finder_and_the_checked_in_table_agree() {
    let emitted = search::emit_rust(&FOUND).expect("every width has an exact scheme");
    let checked_in = include_str!("../../shared/src/schemes.rs");
    assert!(
        emitted == checked_in,
        "shared/src/schemes.rs is not what the finder writes now; regenerate it with\n  \
         cargo run --release -p host -- search --emit-rust > shared/src/schemes.rs"
    );
}

#[test]
fn the_finder_has_a_scheme_for_every_width_and_it_is_the_cheapest_exact_one() {
    for found in FOUND.iter() {
        let best = found.best.unwrap_or_else(|| panic!("{}{}: no exact scheme", found.kind.label(), found.bits));
        let prover = search::Prover::new(found.kind, found.bits);
        assert!(prover.is_exact(best.scheme));
        for r in &found.families {
            if let Some(scheme) = r.exact {
                assert!(search::Cost::of(scheme).key() >= best.cost.key(), "{:?} beats the answer", r.family);
            }
        }
        // Every cheaper candidate of every family really is wrong somewhere.
        for family in SchemeFamily::ALL {
            for scheme in family.candidates(found.denominator) {
                if search::Cost::of(scheme).key() < best.cost.key() {
                    assert!(!prover.is_exact(scheme), "{}", search::formula(scheme));
                }
            }
        }
    }
}

#[test]
fn the_finder_reproduces_the_published_unorm8_results() {
    let unorm8 = FOUND.iter().find(|f| f.kind == Kind::Unorm && f.bits == 8).expect("UNORM8 searched");
    // x * fl(1/255) is wrong, on as many inputs as the table's variant is.
    let mul_recip = host::cpu::verify(find("unorm8_mul_recip").expect("in the table"));
    assert!(unorm8.naive_wrong > 0);
    assert_eq!(unorm8.naive_wrong, mul_recip.mismatches);
    // Mutel's ×3 is exact, and 3 is the smallest multiplier that is; its constant is
    // the library's fl(1/765).
    assert_eq!(unorm8.smallest_m, Some(3));
    assert_eq!(search::count_wrong(Kind::Unorm, 8, Scheme::IntMul { m: 3, c: shared::unorm8::RECIP_765 }), 0);
    let exact = |family: SchemeFamily| unorm8.families.iter().find(|r| r.family == family).and_then(|r| r.exact);
    assert_eq!(exact(SchemeFamily::TimesM), Some(Scheme::IntMul { m: 3, c: shared::unorm8::RECIP_765 }));
    // Giesen's series is exact, with and without the FMA.
    let series = Scheme::MulAdd { c0: shared::unorm8::SERIES_K0, c1: shared::unorm8::SERIES_K1 };
    assert_eq!(exact(SchemeFamily::Series), Some(series));
    assert!(exact(SchemeFamily::SeriesFma).is_some());
    assert_eq!(exact(SchemeFamily::Naive), None);
}

#[test]
fn snorm_n_fares_like_unorm_n_minus_1() {
    // Same denominator, and every scheme is an odd function of the code: the finder's
    // answers must coincide (a consistency check on the finder, not an assumption of it).
    for snorm in FOUND.iter().filter(|f| f.kind == Kind::Snorm) {
        let unorm = FOUND.iter().find(|f| f.kind == Kind::Unorm && f.bits == snorm.bits - 1).expect("searched");
        assert_eq!(snorm.denominator, unorm.denominator);
        assert_eq!(snorm.best.map(|b| b.scheme), unorm.best.map(|b| b.scheme), "SNORM{}", snorm.bits);
    }
}
