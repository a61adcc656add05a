//! Every variant of the table, on every input of its family's domain, against the
//! independent exact reference in `host::reference`, bit for bit.
#![feature(f16)]

use approx::ulps_eq;
use host::cpu;
use host::reference::{self, FpClass, binary16_class};
use host::table::{VARIANTS, Variant, find};
use shared::{Claim, Family};

fn variant(name: &str) -> &'static Variant {
    find(name).unwrap_or_else(|| panic!("variant {name} is not in the table"))
}

#[test]
fn every_exact_variant_matches_the_reference_on_every_input() {
    let mut checked = 0;
    for v in VARIANTS.iter().filter(|v| v.claim == Claim::Exact) {
        let report = cpu::verify(v);
        assert_eq!(report.inputs_checked, v.family.domain_size());
        if let Some(m) = report.first_mismatches.first() {
            panic!(
                "{} ({}) is wrong on {} inputs; first: input {:#x}: got {:#x}, expected {:#x}",
                v.name, v.description, report.mismatches, m.input, m.got, m.expected
            );
        }
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} exact variants in the table");
}

#[test]
fn every_family_has_an_exact_variant_and_every_variant_is_tested() {
    for family in Family::ALL {
        assert!(VARIANTS.iter().any(|v| v.family == family && v.claim == Claim::Exact), "{family:?}");
    }
    // Variants that claim less than exactness each have a dedicated test below.
    let non_exact: Vec<&str> = VARIANTS.iter().filter(|v| v.claim != Claim::Exact).map(|v| v.name).collect();
    assert_eq!(non_exact, ["f16_finite_unordered_lt_inf", "unorm8_mul_recip"]);
}

#[test]
fn mul_recip_is_one_ulp_off_exactly_where_the_reference_says() {
    let v = variant("unorm8_mul_recip");
    // The wrong inputs are derived from the reference, never listed by hand.
    let wrong = cpu::Verification::all_mismatching_inputs(v);
    assert!(!wrong.is_empty(), "x * fl(1/255) was expected to be inexact somewhere");
    for x in 0..=255u8 {
        let got = shared::unorm8::mul_recip(x);
        let exact = reference::div_to_f32(u64::from(x), 255).unwrap();
        if wrong.contains(&u64::from(x)) {
            assert!(!ulps_eq!(got, exact, epsilon = 0.0, max_ulps = 0), "x={x}: listed wrong but equal");
            assert!(
                ulps_eq!(got, exact, epsilon = 0.0, max_ulps = 1),
                "x={x}: {got:e} vs {exact:e} more than 1 ULP apart"
            );
        } else {
            assert_eq!(got.to_bits(), exact.to_bits(), "x={x}");
        }
    }
    let report = cpu::verify(v);
    assert_eq!(report.mismatches as usize, wrong.len());
    assert_eq!(report.max_ulp, Some(1));
    println!("x * fl(1/255) is 1 ULP off on {} of 256 inputs: {wrong:?}", wrong.len());
}

#[test]
fn unordered_compare_is_wrong_exactly_on_the_nans() {
    let v = variant("f16_finite_unordered_lt_inf");
    let wrong = cpu::Verification::all_mismatching_inputs(v);
    let nans: Vec<u64> = (0..=u16::MAX).filter(|&b| binary16_class(b) == FpClass::Nan).map(u64::from).collect();
    assert_eq!(nans.len(), 2046);
    assert_eq!(wrong, nans, "the unordered compare must fail on exactly the NaN encodings");
    for &b in &wrong {
        assert_eq!(v.ops.eval(b), 1, "{b:#06x}: the unordered compare calls NaN finite");
    }
}

#[test]
fn binary16_reference_agrees_with_half_and_core_f16() {
    for b in 0..=u16::MAX {
        let finite = binary16_class(b).is_finite();
        assert_eq!(finite, half::f16::from_bits(b).is_finite(), "half disagrees at {b:#06x}");
        let class_by_core = match f16::from_bits(b).classify() {
            core::num::FpCategory::Zero => FpClass::Zero,
            core::num::FpCategory::Subnormal => FpClass::Subnormal,
            core::num::FpCategory::Normal => FpClass::Normal,
            core::num::FpCategory::Infinite => FpClass::Infinite,
            core::num::FpCategory::Nan => FpClass::Nan,
        };
        assert_eq!(binary16_class(b), class_by_core, "core f16 disagrees at {b:#06x}");
    }
}

#[test]
fn unorm8_reference_agrees_with_f64_rationals_and_known_values() {
    // Cross-check the integer reference with an independent computation: the exact
    // quotient lies strictly between the two f32 neighbours of the result, and the
    // result is within half an ULP (exact arithmetic in i128 fixed point).
    for x in 0..=255u64 {
        let r = reference::div_to_f32(x, 255).unwrap();
        // r * 255 vs x, both scaled by 2^40: every f32 in [2^-8, 1] is then an integer.
        let scaled = |f: f32| -> i128 {
            let bits = f.to_bits();
            let (exp, man) = ((bits >> 23) as i32, i128::from(bits & 0x7F_FFFF) | 1 << 23);
            if f == 0.0 { 0 } else { man << (exp - 150 + 40) }
        };
        let err = (scaled(r) * 255 - (i128::from(x) << 40)).abs(); // |r - x/255| * 255 * 2^40
        let half_ulp = if x == 0 { 0 } else { (scaled(f32::from_bits(r.to_bits() + 1)) - scaled(r)) * 255 / 2 };
        assert!(err <= half_ulp, "x={x}: reference {r:e} is more than half an ULP from x/255");
    }
    assert_eq!(reference::div_to_f32(0, 255), Some(0.0));
    assert_eq!(reference::div_to_f32(255, 255), Some(1.0));
    assert_eq!(reference::div_to_f32(51, 255), Some(0.2));
}

/// Named binary16 edge cases, each with its expected class.
const EDGE_CASES: [(&str, u16, FpClass); 13] = [
    ("+0", 0x0000, FpClass::Zero),
    ("-0", 0x8000, FpClass::Zero),
    ("smallest subnormal", 0x0001, FpClass::Subnormal),
    ("largest subnormal", 0x03FF, FpClass::Subnormal),
    ("smallest normal", 0x0400, FpClass::Normal),
    ("largest finite", 0x7BFF, FpClass::Normal),
    ("most negative finite", 0xFBFF, FpClass::Normal),
    ("+inf", 0x7C00, FpClass::Infinite),
    ("-inf", 0xFC00, FpClass::Infinite),
    ("quiet NaN", 0x7E00, FpClass::Nan),
    ("signalling NaN", 0x7C01, FpClass::Nan),
    ("negative NaN, all ones", 0xFFFF, FpClass::Nan),
    ("negative quiet NaN", 0xFE00, FpClass::Nan),
];

#[test]
fn binary16_named_edge_cases() {
    for (name, bits, class) in EDGE_CASES {
        assert_eq!(binary16_class(bits), class, "reference class of {name} ({bits:#06x})");
        for v in VARIANTS.iter().filter(|v| v.family == Family::Binary16IsFinite) {
            let expected = match v.claim {
                Claim::Incorrect => class != FpClass::Infinite, // true for NaN too
                _ => class.is_finite(),
            };
            assert_eq!(v.ops.eval(u64::from(bits)), u64::from(expected), "{} on {name} ({bits:#06x})", v.name);
        }
    }
}

#[test]
fn unorm8_named_edge_cases() {
    for v in VARIANTS.iter().filter(|v| v.family == Family::Unorm8ToF32) {
        assert_eq!(v.ops.eval(0), 0, "{}: 0 must give +0.0", v.name);
        assert_eq!(v.ops.eval(255), u64::from(1.0f32.to_bits()), "{}: 255 must give exactly 1.0", v.name);
    }
}
