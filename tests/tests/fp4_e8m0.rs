//! The block-scaled formats' encodings (`shared::fp4::e2m1`, `shared::e8m0`) against
//! `bitexact::verify::reference`'s integer arithmetic on the fields:
//! - E2M1: every code to f32, its class, every f32 to E2M1 (a sample in the quick run,
//!   all 2^32 with `--ignored`), the packing of two codes per byte on every pair and
//!   every byte;
//! - E8M0: every code to f32, every exponent to a code, and `floor_log2`/`ceil_log2` of
//!   every f32 (a sample, then all 2^32), each checked by the inequality that defines it,
//!   on integers.

use bitexact::verify::reference::{
    exact_f32_bits, f32_magnitude_parts, fill_f32_monotone, fp4_e2m1_from_f32_bits, fp4_e2m1_to_f32_bits,
};
use conformance::check_all;
use shared::Class;
use shared::e8m0;
use shared::fp4::e2m1;
use std::cmp::Ordering;

/// Every 4099th f32 (a prime stride: every binade, both signs, NaNs included), and the
/// encodings around each power of two.
fn sampled_f32() -> impl Iterator<Item = u32> {
    let strided = (0..1u64 << 32).step_by(4099).map(|x| x as u32);
    let edges = (0..256u32).flat_map(|e| (0..8u32).flat_map(move |d| [(e << 23) + d, (e << 23).wrapping_sub(d + 1)]));
    strided.chain(edges.flat_map(|x| [x, x | 0x8000_0000]))
}

fn check_e2m1_from_f32(x: u32) -> Result<(), String> {
    let (got, want) = (e2m1::from_f32_bits(x), fp4_e2m1_from_f32_bits(x));
    if got == want { Ok(()) } else { Err(format!("E2M1 of {x:#010x}: got {got:#x}, exact {want:#x}")) }
}

#[test]
fn e2m1_widens_exactly_on_every_code_and_ignores_the_high_nibble() {
    for code in 0..=u8::MAX {
        assert_eq!(e2m1::to_f32_bits(code), fp4_e2m1_to_f32_bits(code & 0x0F), "{code:#x}");
    }
    // The values OCP MX v1.0 lists for E2M1, as a named check of the reference too.
    let magnitudes = [0.0f32, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
    for (code, value) in (0u8..).zip(magnitudes) {
        assert_eq!(f32::from_bits(e2m1::to_f32_bits(code)), value, "{code:#x}");
        assert_eq!(e2m1::to_f32_bits(code | e2m1::SIGN_MASK), (-value).to_bits(), "{code:#x}, negative");
    }
}

#[test]
fn e2m1_round_trips_and_classifies_every_code() {
    for code in 0..16u8 {
        let bits = e2m1::to_f32_bits(code);
        assert_eq!(e2m1::from_f32_bits(bits), code, "{code:#x}");
        // The class from the fields: exponent field 0 is zero or the subnormal 0.5.
        let (exponent, mantissa) = (code >> 1 & 0b11, code & 1);
        let want = match (exponent, mantissa) {
            (0, 0) => Class::Zero,
            (0, _) => Class::Subnormal,
            _ => Class::Normal,
        };
        assert_eq!(e2m1::class(code), want, "{code:#x}");
        assert_eq!(e2m1::class(code | 0xF0), want, "{code:#x}: the high nibble is ignored");
    }
}

#[test]
fn e2m1_rounds_the_midpoints_to_even_and_saturates() {
    // (input, code): each midpoint between two neighbours goes to the even code.
    let cases: [(f32, u8); 16] = [
        (0.25, 0b0000), // 0 | 0.5: to 0
        (f32::from_bits(0.25f32.to_bits() + 1), 0b0001),
        (0.75, 0b0010), // 0.5 | 1: to 1
        (1.25, 0b0010), // 1 | 1.5: to 1
        (1.75, 0b0100), // 1.5 | 2: to 2
        (2.5, 0b0100),  // 2 | 3: to 2
        (3.5, 0b0110),  // 3 | 4: to 4
        (5.0, 0b0110),  // 4 | 6: to 4
        (f32::from_bits(5.0f32.to_bits() + 1), 0b0111),
        (1e30, 0b0111),
        (f32::INFINITY, 0b0111),
        (f32::NEG_INFINITY, 0b1111),
        (-5.5, 0b1111),
        (-0.0, 0b1000),
        (-0.1, 0b1000), // rounds to zero and keeps its sign
        (f32::NAN, 0b0111),
    ];
    for (x, code) in cases {
        assert_eq!(e2m1::from_f32_bits(x.to_bits()), code, "{x:e}");
        assert_eq!(fp4_e2m1_from_f32_bits(x.to_bits()), code, "{x:e}: the reference");
    }
    assert_eq!(e2m1::from_f32_bits(0xFFC0_0001), e2m1::MAX_FINITE, "a negative NaN gives +6");
}

#[test]
fn e2m1_equals_the_reference_on_a_sample_of_f32() {
    for x in sampled_f32() {
        check_e2m1_from_f32(x).unwrap_or_else(|m| panic!("{m}"));
    }
}

#[test]
#[ignore = "a 2^32-input proof: `cargo test --workspace --profile proofs -- --ignored` runs it (CI does)"]
fn e2m1_equals_the_reference_on_every_f32() {
    // In blocks of 2^16 inputs. The reference is monotone in the magnitude on each sign's
    // finite f32s, so it is computed where it changes (`fill_f32_monotone`), and every
    // input is compared with its result.
    check_all(0..1 << 16, |block| {
        let mut exact = vec![0; 1 << 16];
        fill_f32_monotone(block << 16, &mut exact, fp4_e2m1_from_f32_bits);
        let first = (block << 16) as u32;
        (first..=first | 0xFFFF).zip(exact).try_for_each(|(x, want)| {
            let got = e2m1::from_f32_bits(x);
            if got == want { Ok(()) } else { Err(format!("E2M1 of {x:#010x}: got {got:#x}, exact {want:#x}")) }
        })
    })
    .unwrap_or_else(|m| panic!("{m}"));
}

#[test]
fn e2m1_packs_two_codes_per_byte_even_index_low() {
    for even in 0..16u8 {
        for odd in 0..16u8 {
            let byte = e2m1::pack(even, odd);
            assert_eq!(u32::from(byte), u32::from(odd) * 16 + u32::from(even), "{even:#x}, {odd:#x}");
            assert_eq!(e2m1::unpack(byte), [even, odd]);
            assert_eq!(e2m1::pack(even | 0xA0, odd | 0x50), byte, "the high nibbles are ignored");
        }
    }
    for byte in 0..=u8::MAX {
        let [even, odd] = e2m1::unpack(byte);
        assert_eq!(e2m1::pack(even, odd), byte);
    }
}

#[test]
fn e8m0_widens_exactly_on_every_code() {
    for code in 0..e8m0::NAN {
        let want = exact_f32_bits(1, i32::from(code) - e8m0::BIAS);
        assert_eq!(e8m0::to_f32_bits(code), want, "{code:#x}");
    }
    assert!(f32::from_bits(e8m0::to_f32_bits(e8m0::NAN)).is_nan());
    assert_eq!(e8m0::to_f32_bits(0), 0x0040_0000, "2^-127, an f32 subnormal");
    assert_eq!(e8m0::to_f32_bits(127), 1.0f32.to_bits());
}

#[test]
fn e8m0_holds_exactly_the_exponents_from_minus_127_to_127() {
    for k in -400..400 {
        match e8m0::from_exponent(k) {
            Some(code) => {
                assert!((-127..=127).contains(&k), "{k}");
                assert_eq!(e8m0::to_f32_bits(code), exact_f32_bits(1, k), "{k}");
            }
            None => assert!(!(-127..=127).contains(&k), "{k} has a code"),
        }
    }
}

/// How `significand · 2^exponent` (`significand ≥ 1`) compares with `2^k`, on integers.
fn cmp_power_of_two(significand: u64, exponent: i32, k: i32) -> Ordering {
    // significand · 2^exponent against 2^k is significand against 2^(k - exponent).
    match k - exponent {
        d if d < 0 => Ordering::Greater,
        d if d >= 64 => Ordering::Less,
        d => significand.cmp(&(1u64 << d)),
    }
}

/// `floor_log2` and `ceil_log2` of the f32 `x` against their definitions:
/// `2^f ≤ |x| < 2^(f + 1)` and `2^(c - 1) < |x| ≤ 2^c`; `None` exactly for ±0, ±inf and
/// NaN.
fn check_log2(x: u32) -> Result<(), String> {
    let abs = x & 0x7FFF_FFFF;
    let (floor, ceil) = (e8m0::floor_log2(x), e8m0::ceil_log2(x));
    if abs == 0 || abs >= 0x7F80_0000 {
        return match (floor, ceil) {
            (None, None) => Ok(()),
            _ => Err(format!("{x:#010x}: log2 {floor:?}, {ceil:?} of a zero, an infinity or a NaN")),
        };
    }
    let (significand, exponent) = f32_magnitude_parts(abs);
    let (Some(f), Some(c)) = (floor, ceil) else {
        return Err(format!("{x:#010x}: no log2 ({floor:?}, {ceil:?}) of a finite non-zero value"));
    };
    let floor_holds = cmp_power_of_two(significand, exponent, f) != Ordering::Less
        && cmp_power_of_two(significand, exponent, f + 1) == Ordering::Less;
    let ceil_holds = cmp_power_of_two(significand, exponent, c - 1) == Ordering::Greater
        && cmp_power_of_two(significand, exponent, c) != Ordering::Greater;
    if floor_holds && ceil_holds { Ok(()) } else { Err(format!("{x:#010x}: floor_log2 {f}, ceil_log2 {c}")) }
}

#[test]
fn e8m0_log2_bounds_hold_on_a_sample_of_f32() {
    for x in sampled_f32() {
        check_log2(x).unwrap_or_else(|m| panic!("{m}"));
    }
    assert_eq!(e8m0::floor_log2(1), Some(-149));
    assert_eq!(e8m0::ceil_log2(f32::MAX.to_bits()), Some(128));
    assert_eq!(e8m0::ceil_log2(0x8000_0003), Some(-147), "the sign is ignored");
}

#[test]
#[ignore = "a 2^32-input proof: `cargo test --workspace --profile proofs -- --ignored` runs it (CI does)"]
fn e8m0_log2_bounds_hold_on_every_f32() {
    check_all(0..1 << 32, |x| check_log2(x as u32)).unwrap_or_else(|m| panic!("{m}"));
}
