//! Every variant of the table, on every input of its family's domain, against the
//! independent exact reference in `bitexact::verify::reference`, bit for bit.

use approx::ulps_eq;
use bitexact::verify::cpu::{self, Verification};
use bitexact::verify::domain;
use bitexact::verify::reference::{self, binary16_class};
use bitexact::verify::table::{VARIANTS, Variant, families, find};
use shared::{Claim, Class, Family, Format};
use std::sync::LazyLock;

fn variant(name: &str) -> &'static Variant {
    find(name).unwrap_or_else(|| panic!("variant {name} is not in the table"))
}

/// Domains of at most this many inputs (every family but the 2^32-input ones and
/// binary64's sample) are walked by the quick proof, in seconds; the larger ones by the
/// `--ignored` proof (minutes on two cores), which CI runs, as does `bitexact verify`.
const QUICK_DOMAIN: u64 = 1 << 16;

fn is_quick(v: &Variant) -> bool {
    domain::count(v.family) <= QUICK_DOMAIN
}

/// One verification of the variants with quick domains, and one of the others (each
/// family's domain walked once, on all cores), shared by the tests of this file.
static QUICK_REPORTS: LazyLock<Vec<Verification>> = LazyLock::new(|| verify_where(true));
static LONG_REPORTS: LazyLock<Vec<Verification>> = LazyLock::new(|| verify_where(false));

fn variants_where(quick: bool) -> Vec<&'static Variant> {
    VARIANTS.iter().filter(|v| is_quick(v) == quick).collect()
}

fn verify_where(quick: bool) -> Vec<Verification> {
    cpu::verify_all(&variants_where(quick), &|_| {})
}

fn reports_where(quick: bool) -> &'static [Verification] {
    if quick { &QUICK_REPORTS } else { &LONG_REPORTS }
}

fn report(name: &str) -> &'static Verification {
    let reports = reports_where(is_quick(variant(name)));
    reports.iter().find(|r| r.variant == name).unwrap_or_else(|| panic!("no report for {name}"))
}

/// Every variant of one size class keeps its claim on every input of its domain;
/// returns how many exact variants were checked.
fn every_variant_keeps_its_claim(quick: bool) -> usize {
    let (variants, reports) = (variants_where(quick), reports_where(quick));
    assert_eq!(variants.len(), reports.len());
    let mut exact = 0;
    for (v, report) in variants.into_iter().zip(reports) {
        assert_eq!(report.variant, v.name);
        assert_eq!(report.inputs_checked, domain::count(v.family), "{}", v.name);
        // The exact variants' message first: it names the first wrong input and both
        // results in hex (`claim_holds` alone would fail with the whole report).
        if v.claim == Claim::Exact {
            if let Some(m) = report.first_mismatches.first() {
                panic!(
                    "{} ({}) is wrong on {} inputs; first: input {:#x}: got {:#x}, expected {:#x}",
                    v.name, v.description, report.mismatches, m.input, m.got, m.expected
                );
            }
            exact += 1;
        }
        assert!(report.claim_holds(v.claim), "{}: claim {} broken: {report:?}", v.name, v.claim.name());
    }
    exact
}

#[test]
fn every_variant_keeps_its_claim_on_every_input_of_the_small_domains() {
    let exact = every_variant_keeps_its_claim(true);
    assert!(exact >= 50, "only {exact} exact variants with domains of at most {QUICK_DOMAIN} inputs");
}

#[test]
#[ignore = "a 2^32-input proof: `cargo test --workspace --profile proofs -- --ignored` runs it (CI does)"]
fn every_variant_keeps_its_claim_on_every_input_of_the_large_domains() {
    let exact = every_variant_keeps_its_claim(false);
    assert!(exact >= 20, "only {exact} exact variants with domains of more than {QUICK_DOMAIN} inputs");
}

/// The families the issue asks for, each of which must be in the table.
fn required_families() -> Vec<Family> {
    let mut required = Vec::new();
    for format in Format::ALL {
        required.extend([
            Family::IsFinite(format),
            Family::IsNan(format),
            Family::IsInfinite(format),
            Family::Classify(format),
        ]);
    }
    for format in [Format::Binary16, Format::Bfloat16, Format::Fp8E4m3, Format::Fp8E5m2] {
        required.push(Family::PackedIsFinite(format));
    }
    required.extend((1..=16).map(|bits| Family::UnormToF32 { bits }));
    required.extend([8, 16].map(|bits| Family::UnormToF16 { bits }));
    required.extend([8, 16].map(|bits| Family::UnormToBf16 { bits }));
    required.extend((2..=16).map(|bits| Family::SnormToF32 { bits }));
    required.extend([8, 16].map(|bits| Family::F32ToUnorm { bits }));
    for format in [Format::Binary16, Format::Bfloat16, Format::Fp8E4m3, Format::Fp8E5m2] {
        use shared::narrow::Overflow;
        required.push(Family::F32ToNarrow { format, overflow: Overflow::Standard });
        required.push(Family::F32ToNarrow { format, overflow: Overflow::SatFinite });
        required.push(Family::NarrowToF32 { format });
    }
    required
}

#[test]
fn every_family_has_an_exact_variant_and_every_variant_is_tested() {
    let table_families = families();
    for family in required_families() {
        assert!(table_families.contains(&family), "{family} is missing from the table");
    }
    for family in table_families {
        assert!(VARIANTS.iter().any(|v| v.family == family && v.claim == Claim::Exact), "{family}");
        assert!(domain::count(family) > 0);
    }
    // Variants that claim less than exactness each have a dedicated test below.
    let non_exact: Vec<&str> = VARIANTS.iter().filter(|v| v.claim != Claim::Exact).map(|v| v.name).collect();
    assert_eq!(
        non_exact,
        [
            "f16_finite_unordered_lt_inf",
            "unorm8_mul_recip",
            "unorm16_mul_recip",
            "unorm16_to_f16_via_f32",
            "f32_to_unorm8_mul_add_half"
        ]
    );
}

#[test]
fn every_domain_is_exhaustive_except_binary64() {
    for family in families() {
        match family.domain() {
            shared::Domain::Exhaustive { bits } => assert_eq!(domain::count(family), 1 << bits, "{family}"),
            shared::Domain::Sampled(format) => {
                assert_eq!(format, Format::Binary64, "{family}");
                assert!(domain::count(family) > 1 << 24, "{family}: a large sample");
            }
        }
    }
}

#[test]
#[ignore = "a 2^32-input proof: `cargo test --workspace --profile proofs -- --ignored` runs it (CI does)"]
fn f32_to_unorm8_mul_add_half_is_one_code_off_where_the_reference_says() {
    let report = report("f32_to_unorm8_mul_add_half");
    assert!(report.mismatches > 0, "(c * 255 + 0.5) as u8 was expected to be wrong somewhere");
    assert_eq!(report.max_ulp, Some(1), "off by more than one code");
    for m in &report.first_mismatches {
        let c = f32::from_bits(m.input as u32);
        // Independent of the reference: the product is exact in f64.
        let exact = f64::from(c) * 255.0;
        assert_eq!(m.expected, exact.round() as u64, "{c:e}: reference disagrees with f64");
        assert!((exact.fract() - 0.5).abs() < 1e-4, "{c:e}: product {exact} not near a half-integer");
        assert_eq!(m.got, m.expected + 1, "{c:e}: expected the product to round up onto the half-integer");
    }
    println!("(c * 255 + 0.5) as u8 is one code off on {} of 2^32 inputs", report.mismatches);
}

/// `x * fl(1 / (2^n - 1))` for the variant `name` is wrong exactly on the inputs where
/// the reference says so, and there by exactly one ULP; returns those inputs.
fn recip_is_one_ulp_off_exactly_where_the_reference_says(name: &str, bits: u32, f: fn(u64) -> f32) -> Vec<u64> {
    let v = variant(name);
    // The wrong inputs are derived from the reference, never listed by hand.
    let wrong = Verification::all_mismatching_inputs(v);
    assert!(!wrong.is_empty(), "{name} was expected to be inexact somewhere");
    for x in 0..1u64 << bits {
        let got = f(x);
        let exact = reference::div_to_f32(x, (1 << bits) - 1).unwrap();
        if wrong.contains(&x) {
            assert!(!ulps_eq!(got, exact, epsilon = 0.0, max_ulps = 0), "{name} x={x}: listed wrong but equal");
            assert!(
                ulps_eq!(got, exact, epsilon = 0.0, max_ulps = 1),
                "{name} x={x}: {got:e} vs {exact:e} more than 1 ULP apart"
            );
        } else {
            assert_eq!(got.to_bits(), exact.to_bits(), "{name} x={x}");
        }
    }
    // This variant's own verification (not the whole table's, so that the test runs alone).
    let report = cpu::verify(v);
    assert!(report.claim_holds(Claim::OneUlp), "{name}: {report:?}");
    assert_eq!(report.mismatches as usize, wrong.len());
    assert_eq!(report.max_ulp, Some(1));
    wrong
}

#[test]
fn mul_recip_is_one_ulp_off_exactly_where_the_reference_says() {
    let wrong = recip_is_one_ulp_off_exactly_where_the_reference_says("unorm8_mul_recip", 8, |x| {
        shared::unorm8::mul_recip(x as u8)
    });
    println!("x * fl(1/255) is 1 ULP off on {} of 256 inputs: {wrong:?}", wrong.len());
    let wrong = recip_is_one_ulp_off_exactly_where_the_reference_says("unorm16_mul_recip", 16, |x| {
        shared::unorm16::mul_recip(x as u16)
    });
    println!("x * fl(1/65535) is 1 ULP off on {} of 65536 inputs", wrong.len());
}

#[test]
fn unordered_compare_is_wrong_exactly_on_the_nans() {
    let v = variant("f16_finite_unordered_lt_inf");
    let wrong = Verification::all_mismatching_inputs(v);
    let nans: Vec<u64> = (0..=u16::MAX).filter(|&b| binary16_class(b) == Class::Nan).map(u64::from).collect();
    assert_eq!(nans.len(), 2046);
    assert_eq!(wrong, nans, "the unordered compare must fail on exactly the NaN encodings");
    for &b in &wrong {
        assert_eq!(v.eval(b), 1, "{b:#06x}: the unordered compare calls NaN finite");
    }
}

/// Named binary16 edge cases, each with its expected class.
const EDGE_CASES: [(&str, u16, Class); 13] = [
    ("+0", 0x0000, Class::Zero),
    ("-0", 0x8000, Class::Zero),
    ("smallest subnormal", 0x0001, Class::Subnormal),
    ("largest subnormal", 0x03FF, Class::Subnormal),
    ("smallest normal", 0x0400, Class::Normal),
    ("largest finite", 0x7BFF, Class::Normal),
    ("most negative finite", 0xFBFF, Class::Normal),
    ("+inf", 0x7C00, Class::Infinite),
    ("-inf", 0xFC00, Class::Infinite),
    ("quiet NaN", 0x7E00, Class::Nan),
    ("signalling NaN", 0x7C01, Class::Nan),
    ("negative NaN, all ones", 0xFFFF, Class::Nan),
    ("negative quiet NaN", 0xFE00, Class::Nan),
];

#[test]
fn binary16_named_edge_cases() {
    for (name, bits, class) in EDGE_CASES {
        assert_eq!(binary16_class(bits), class, "reference class of {name} ({bits:#06x})");
        for v in VARIANTS.iter().filter(|v| v.family == Family::IsFinite(Format::Binary16)) {
            let expected = match v.claim {
                Claim::Incorrect => class != Class::Infinite, // true for NaN too
                _ => class.is_finite(),
            };
            assert_eq!(v.eval(u64::from(bits)), u64::from(expected), "{} on {name} ({bits:#06x})", v.name);
        }
    }
}

#[test]
fn unorm8_named_edge_cases() {
    for v in VARIANTS.iter().filter(|v| v.family == Family::UnormToF32 { bits: 8 }) {
        assert_eq!(v.eval(0), 0, "{}: 0 must give +0.0", v.name);
        assert_eq!(v.eval(255), u64::from(1.0f32.to_bits()), "{}: 255 must give exactly 1.0", v.name);
    }
}

#[test]
fn unorm_to_16_bit_float_named_edge_cases() {
    // 0 → +0, the largest code → 1.0 (0x3C00 binary16, 0x3F80 bfloat16), and UNORM16's
    // code 1 → 1/65535 = 256.0039 binary16 subnormal units: encoding 0x0100.
    for v in VARIANTS {
        let (one, bits) = match v.family {
            Family::UnormToF16 { bits } => (0x3C00, bits),
            Family::UnormToBf16 { bits } => (0x3F80, bits),
            _ => continue,
        };
        assert_eq!(v.eval(0), 0, "{}: 0 must give +0", v.name);
        assert_eq!(v.eval((1 << bits) - 1), one, "{}: the largest code must give exactly 1.0", v.name);
        if v.family == (Family::UnormToF16 { bits: 16 }) {
            assert_eq!(v.eval(1), 0x0100, "{}: 1/65535 is the subnormal 256 · 2^-24", v.name);
        }
    }
}
