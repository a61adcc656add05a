//! UNORMn / SNORMn ↔ f32: the reference against independent arithmetic, the rules for
//! high bits, the SNORM clamp and the rounding ties. (The variants are proven against
//! the reference on their whole domains in `exhaustive_cpu.rs`.)

use bitexact::verify::reference::{self, div_to_f32, f32_to_unorm_exact};
use bitexact::verify::table::VARIANTS;
use conformance::{check_all, scaled};
use shared::Family;

#[test]
fn unorm_and_snorm_references_are_within_half_an_ulp_of_the_rational_and_never_ties() {
    // Independent of the reference's rounding loop: |r - x/d| < ulp(r)/2 in exact i128
    // fixed point (the quotient x/d, 0 < x < d, d odd > 1, is never a binary fraction,
    // so never a tie).
    for k in 1..=16u32 {
        let d = (1u64 << k) - 1;
        for x in 1..d {
            let r = div_to_f32(x, d).unwrap();
            let error = (scaled(r) * i128::from(d) - (i128::from(x) << 64)).abs(); // |r - x/d| · d · 2^64
            let ulp = scaled(f32::from_bits(r.to_bits() + 1)) - scaled(r);
            assert!(2 * error < ulp * i128::from(d), "{x}/{d}: {r:e} is not the nearest f32");
        }
        assert_eq!(reference::unorm_to_f32_bits(k, d), 1.0f32.to_bits(), "UNORM{k} max");
        assert_eq!(reference::unorm_to_f32_bits(k, 0), 0, "UNORM{k} zero");
    }
}

#[test]
fn snorm_reference_clamps_the_two_most_negative_codes_and_mirrors_unorm() {
    for n in 2..=16u32 {
        let half = 1u64 << (n - 1);
        let d = half - 1;
        let minus_one = (-1.0f32).to_bits();
        assert_eq!(reference::snorm_to_f32_bits(n, half), minus_one, "SNORM{n} most negative code");
        assert_eq!(reference::snorm_to_f32_bits(n, half + 1), minus_one, "SNORM{n} -d");
        assert_eq!(reference::snorm_to_f32_bits(n, d), 1.0f32.to_bits(), "SNORM{n} max");
        assert_eq!(reference::snorm_to_f32_bits(n, 0), 0, "SNORM{n} 0 is +0.0");
        for code in 1..=d {
            let positive = reference::snorm_to_f32_bits(n, code);
            assert_eq!(positive, div_to_f32(code, d).unwrap().to_bits(), "SNORM{n} {code}");
            let negative = reference::snorm_to_f32_bits(n, (1 << n) - code);
            assert_eq!(negative, positive | 1 << 31, "SNORM{n} -{code} is not the mirror image");
        }
    }
}

#[test]
fn unorm_and_snorm_variants_ignore_the_high_bits_of_every_u16() {
    let mut checked = 0;
    for v in VARIANTS {
        let (Family::UnormToF32 { bits } | Family::SnormToF32 { bits }) = v.family else { continue };
        // u8-input variants see the low byte, which is masking too for UNORM8. On the
        // codes themselves the variants are proven against the reference elsewhere.
        for x in 0..=u64::from(u16::MAX) {
            let masked = x & ((1 << bits) - 1);
            let (got, on_code) = (v.eval(x), v.eval(masked));
            assert_eq!(
                got, on_code,
                "{}: input {x:#06x}: {got:#010x}, but {on_code:#010x} on code {masked:#x}",
                v.name
            );
        }
        checked += 1;
    }
    assert!(checked >= 31, "only {checked} UNORM/SNORM variants");
}

#[test]
#[ignore = "a 2^32-input proof: `cargo test --workspace --profile proofs -- --ignored` runs it (CI does)"]
fn f32_to_unorm_reference_agrees_with_f64_and_the_only_tie_is_one_half() {
    // Every f32 strictly between 0 and 1; everything else is NaN, <= 0 or >= 1 and
    // clamps (named cases below). In f64 the product c · (2^n - 1) is exact (at most
    // 24 + 16 significant bits), and `round` rounds halves up for positive values.
    for bits in [8u32, 16] {
        let max = f64::from((1u32 << bits) - 1);
        let one = 1.0f32.to_bits();
        check_all(1..u64::from(one), |f| {
            let (code, tie) = f32_to_unorm_exact(bits, f as u32);
            let product = f64::from(f32::from_bits(f as u32)) * max;
            let expected = product.round() as u64;
            if code != expected {
                return Err(format!("UNORM{bits} {f:#010x}: reference {code}, f64 {expected}"));
            }
            if tie != (product.fract() == 0.5) {
                return Err(format!("UNORM{bits} {f:#010x}: tie flag {tie} for product {product}"));
            }
            if tie && f as u32 != 0.5f32.to_bits() {
                return Err(format!("UNORM{bits} {f:#010x}: a tie other than c = 0.5"));
            }
            Ok(())
        })
        .unwrap();
        let (half_code, tie) = f32_to_unorm_exact(bits, 0.5f32.to_bits());
        assert!(tie, "c = 0.5 is a tie for UNORM{bits}");
        assert_eq!(half_code, 1 << (bits - 1), "the tie c = 0.5 rounds up");
        let named = [
            ("NaN", f32::NAN, 0),
            ("-NaN", -f32::NAN, 0),
            ("+inf", f32::INFINITY, (1 << bits) - 1),
            ("-inf", f32::NEG_INFINITY, 0),
            ("-0", -0.0, 0),
            ("+0", 0.0, 0),
            ("-1", -1.0, 0),
            ("1", 1.0, (1 << bits) - 1),
            ("2", 2.0, (1 << bits) - 1),
            ("f32::MAX", f32::MAX, (1 << bits) - 1),
            ("smallest subnormal", f32::from_bits(1), 0),
        ];
        for (name, c, expected) in named {
            assert_eq!(f32_to_unorm_exact(bits, c.to_bits()), (expected, false), "UNORM{bits} {name}");
        }
    }
}

#[test]
fn unorm_with_and_snorm_with_never_panic_whatever_the_width() {
    // They are compiled into GPU kernels: a width outside the supported range gives a
    // meaningless value, but never an overflow panic (overflow checks are on in tests).
    use shared::norm::{snorm_with, unorm_with};
    use shared::scheme::Scheme;
    for bits in [0, 1, 17, 31, 32, 33, u32::MAX] {
        for x in [0, 1, 0x8000, u16::MAX] {
            for scheme in [Scheme::Convert, Scheme::IntMul { m: 3, c: 1.0 }] {
                let _ = (unorm_with(scheme, bits, x), snorm_with(scheme, bits, x));
            }
        }
    }
}
