//! f32 → binary16 / bfloat16 / FP8 E4M3 / FP8 E5M2 (round to nearest, ties to even): the
//! boundaries the specifications name, the widening conversions back on every encoding
//! with round trips, and the `half` and `float8` crates on every one of the 2^32 inputs,
//! their differences counted.
//!
//! The proof on every f32 against `bitexact::verify::reference`'s integer arithmetic on the fields is
//! not here: the conversions are variants of the table (families `f32_to_binary16`,
//! `f32_to_fp8_e4m3_satfinite`, ..., `binary16_to_f32`, ...), which `exhaustive_cpu.rs`
//! checks on every input of their domains like every other variant, so each 2^32 walk
//! runs once.

use bitexact::verify::reference::{self, NarrowFormat};
use conformance::check_all;
use shared::narrow::Overflow;
use shared::{Class, bfloat16, binary16, fp8};

fn every_f32(check: impl Fn(u32) -> Result<(), String> + Sync) {
    if let Err(message) = check_all(0..1 << 32, |x| check(x as u32)) {
        panic!("{message}");
    }
}

#[test]
fn the_rounding_boundaries_are_where_the_specifications_put_them() {
    let f = |v: f32| v.to_bits();
    // binary16: 65504 is the largest; 65520 is the tie past it and goes to inf (even).
    assert_eq!(binary16::from_f32_bits(f(65504.0)), 0x7BFF);
    assert_eq!(binary16::from_f32_bits(f(65519.996)), 0x7BFF);
    assert_eq!(binary16::from_f32_bits(f(65520.0)), 0x7C00);
    // 2^-25 is the tie between 0 and the smallest subnormal: even, 0; just above, 1.
    assert_eq!(binary16::from_f32_bits(f(2f32.powi(-25))), 0);
    assert_eq!(binary16::from_f32_bits(f(2f32.powi(-25)) + 1), 1);
    assert_eq!(binary16::from_f32_bits(f(-0.0)), 0x8000);
    // E4M3: 448 max, 464 ties to 448 (even), above it NaN or 448.
    assert_eq!(fp8::e4m3::from_f32_bits(f(464.0), Overflow::Standard), 0x7E);
    assert_eq!(fp8::e4m3::from_f32_bits(f(464.0) + 1, Overflow::Standard), 0x7F);
    assert_eq!(fp8::e4m3::from_f32_bits(f(-1e9), Overflow::SatFinite), 0xFE);
    assert_eq!(fp8::e4m3::from_f32_bits(f(f32::INFINITY), Overflow::SatFinite), 0x7E);
    // E5M2: 57344 max, 61440 ties up to inf (57344's mantissa is odd).
    assert_eq!(fp8::e5m2::from_f32_bits(f(61439.996), Overflow::Standard), 0x7B);
    assert_eq!(fp8::e5m2::from_f32_bits(f(61440.0), Overflow::Standard), 0x7C);
    assert_eq!(fp8::e5m2::from_f32_bits(f(61440.0), Overflow::SatFinite), 0x7B);
    // bfloat16: f32::MAX is past the last midpoint, so inf.
    assert_eq!(bfloat16::from_f32_bits(f(f32::MAX)), 0x7F80);
    // Saturating binary16 and bfloat16: the largest finite value instead of inf, ±inf
    // included; a NaN stays a NaN.
    assert_eq!(binary16::from_f32_bits_satfinite(f(65520.0)), 0x7BFF);
    assert_eq!(binary16::from_f32_bits_satfinite(f(f32::NEG_INFINITY)), 0xFBFF);
    assert_eq!(binary16::from_f32_bits_satfinite(f(65519.996)), 0x7BFF);
    assert_eq!(binary16::from_f32_bits_satfinite(0x7FC0_0000), 0x7E00);
    assert_eq!(bfloat16::from_f32_bits_satfinite(f(f32::MAX)), 0x7F7F);
    assert_eq!(bfloat16::from_f32_bits_satfinite(f(f32::INFINITY)), 0x7F7F);
    assert_eq!(bfloat16::from_f32_bits_satfinite(0xFF80_0001), 0xFFC0);
}

/// The hardware form of the OCP non-saturating FP8 modes is the saturating instruction
/// followed by a select on the input's bits (`shared::hardware::e4m3_standard`,
/// `e5m2_standard`; the GPU has no non-saturating instruction). On every f32, given the
/// saturating result, the select gives the non-saturating one: so on the GPU the
/// hardware form is right wherever the instruction is (which the GPU three-way check
/// proves on every input). Both modes are computed by `shared`'s conversions here, which
/// `exhaustive_cpu.rs` proves equal to the integer reference on every input (calling the
/// reference itself makes this walk 20 times slower).
#[test]
#[ignore = "a 2^32-input proof: `cargo test --workspace --profile proofs -- --ignored` runs it (CI does)"]
fn the_hardware_selects_make_the_non_saturating_fp8_modes_on_every_input() {
    use shared::hardware::{e4m3_standard, e5m2_standard};
    every_f32(|x| {
        let e4m3 = e4m3_standard(x, u32::from(fp8::e4m3::from_f32_bits_satfinite(x)));
        let e5m2 = e5m2_standard(x, u32::from(fp8::e5m2::from_f32_bits_satfinite(x)));
        let (want_e4m3, want_e5m2) =
            (u32::from(fp8::e4m3::from_f32_bits_standard(x)), u32::from(fp8::e5m2::from_f32_bits_standard(x)));
        if (e4m3, e5m2) != (want_e4m3, want_e5m2) {
            return Err(format!(
                "{x:#010x}: the selects give E4M3 {e4m3:#x}, E5M2 {e5m2:#x}; the non-saturating modes {want_e4m3:#x}, {want_e5m2:#x}"
            ));
        }
        Ok(())
    });
}

/// The exact f32 encoding of a narrow encoding, decoded field by field by the
/// reference's classes and an independent power-of-two product (exact in f64, then
/// exactly an f32 since every narrow value is one).
fn widened(format: NarrowFormat, bits: u32, width: u32) -> Option<u32> {
    let man = format.mantissa_bits;
    let exponent_field = (bits >> man) & ((1 << format.exponent_bits) - 1);
    let mantissa = bits & ((1 << man) - 1);
    let bias = (1i32 << (format.exponent_bits - 1)) - 1;
    let negative = bits >> (width - 1) & 1 == 1;
    let (significand, exponent) = if exponent_field == 0 {
        (mantissa, 1 - bias - man as i32)
    } else {
        (mantissa | 1 << man, exponent_field as i32 - bias - man as i32)
    };
    let value = f64::from(significand) * 2f64.powi(exponent);
    let value = if negative { -value } else { value };
    Some((value as f32).to_bits())
}

#[test]
fn widening_is_exact_on_every_encoding() {
    for b in 0..=u16::MAX {
        let class = reference::class(shared::Format::Binary16, u64::from(b));
        let got = binary16::to_f32_bits(b);
        if class == Class::Nan {
            assert!(f32::from_bits(got).is_nan() && got >> 31 == u32::from(b >> 15), "{b:#x}");
            assert_eq!(binary16::from_f32_bits(got), b | 0x0200, "{b:#x}: round trip makes the NaN quiet only");
        } else if class == Class::Infinite {
            assert_eq!(got, if b >> 15 == 1 { 0xFF80_0000 } else { 0x7F80_0000 });
        } else {
            assert_eq!(Some(got), widened(reference::BINARY16, u32::from(b), 16), "{b:#x}");
            assert_eq!(binary16::from_f32_bits(got), b, "{b:#x}: round trip");
        }
        assert_eq!(bfloat16::to_f32_bits(b), u32::from(b) << 16);
    }
    for b in 0..=u8::MAX {
        let e4m3 = fp8::e4m3::to_f32_bits(b);
        if fp8::e4m3::is_nan(b) {
            assert!(f32::from_bits(e4m3).is_nan(), "{b:#x}");
        } else {
            assert_eq!(Some(e4m3), widened(reference::FP8_E4M3, u32::from(b), 8), "{b:#x}");
            assert_eq!(fp8::e4m3::from_f32_bits(e4m3, Overflow::Standard), b, "{b:#x}: round trip");
        }
        let e5m2 = fp8::e5m2::to_f32_bits(b);
        if fp8::e5m2::is_nan(b) {
            assert!(f32::from_bits(e5m2).is_nan(), "{b:#x}");
        } else if fp8::e5m2::is_infinite(b) {
            assert!(f32::from_bits(e5m2).is_infinite(), "{b:#x}");
        } else {
            assert_eq!(Some(e5m2), widened(reference::FP8_E5M2, u32::from(b), 8), "{b:#x}");
            assert_eq!(fp8::e5m2::from_f32_bits(e5m2, Overflow::Standard), b, "{b:#x}: round trip");
        }
    }
}

/// Counts the f32 inputs (in `0..2^32`, step `stride`) on which `ours` and `theirs`
/// differ, split into NaN inputs and the rest, and keeps a few examples.
fn differences(
    stride: u64,
    ours: impl Fn(u32) -> u64 + Sync,
    theirs: impl Fn(u32) -> u64 + Sync,
) -> (u64, u64, Vec<String>) {
    use std::sync::Mutex;
    let (nan, other) = (std::sync::atomic::AtomicU64::new(0), std::sync::atomic::AtomicU64::new(0));
    let examples = Mutex::new(Vec::new());
    let _ = check_all(0..(1 << 32) / stride, |i| {
        let x = (i * stride) as u32;
        let (a, b) = (ours(x), theirs(x));
        if a != b {
            let counter = if f32::from_bits(x).is_nan() { &nan } else { &other };
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let mut examples = examples.lock().expect("not poisoned");
            if examples.len() < 4 && !f32::from_bits(x).is_nan() {
                examples.push(format!("{x:#010x}: ours {a:#x}, theirs {b:#x}"));
            }
        }
        Ok(())
    });
    let examples = examples.into_inner().expect("not poisoned");
    (nan.into_inner(), other.into_inner(), examples)
}

#[test]
#[ignore = "a 2^32-input proof: `cargo test --workspace --profile proofs -- --ignored` runs it (CI does)"]
fn the_half_crate_agrees_on_every_input() {
    let (nan, other, examples) = differences(
        1,
        |x| u64::from(binary16::from_f32_bits(x)),
        |x| u64::from(half::f16::from_f32(f32::from_bits(x)).to_bits()),
    );
    println!("half::f16::from_f32: {other} non-NaN and {nan} NaN inputs differ {examples:?}");
    assert_eq!((other, nan), (0, 0), "{examples:?}");
    let (nan, other, examples) = differences(
        1,
        |x| u64::from(bfloat16::from_f32_bits(x)),
        |x| u64::from(half::bf16::from_f32(f32::from_bits(x)).to_bits()),
    );
    println!("half::bf16::from_f32: {other} non-NaN and {nan} NaN inputs differ {examples:?}");
    assert_eq!((other, nan), (0, 0), "{examples:?}");
}

/// One format's walk of [`the_float8_crate_saturates_and_otherwise_agrees`]: `theirs`
/// (float8's conversion) against our `standard` and `satfinite` modes on every f32. Generic
/// over the conversions, so that each is inlined into the walk (through function pointers
/// the walk took twice as long). Returns how many NaN inputs get another NaN encoding
/// from float8, and on how many inputs it differs from our standard mode (the overflows).
fn float8_against_ours(
    name: &str,
    standard: impl Fn(u32) -> u8 + Sync,
    satfinite: impl Fn(u32) -> u8 + Sync,
    theirs: impl Fn(u32) -> u8 + Sync,
    is_nan: impl Fn(u8) -> bool + Sync,
) -> (u64, u64) {
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    let (nan_payloads_differ, overflows) = (AtomicU64::new(0), AtomicU64::new(0));
    every_f32(|x| {
        let crate_result = theirs(x);
        if f32::from_bits(x).is_nan() {
            if !is_nan(crate_result) {
                return Err(format!("{name}: NaN {x:#010x} gives {crate_result:#x}, not a NaN"));
            }
            if crate_result != satfinite(x) {
                nan_payloads_differ.fetch_add(1, Relaxed);
            }
            return Ok(());
        }
        if crate_result != satfinite(x) {
            return Err(format!("{name}: {x:#010x}: float8 {crate_result:#x}, ours (satfinite) {:#x}", satfinite(x)));
        }
        let ours = standard(x);
        if ours != crate_result {
            // Only where our standard mode overflows: it gives what it gives for ±inf.
            if ours != standard((x & 0x8000_0000) | 0x7F80_0000) {
                return Err(format!("{name}: {x:#010x}: standard {ours:#x} vs float8 {crate_result:#x}"));
            }
            overflows.fetch_add(1, Relaxed);
        }
        Ok(())
    });
    (nan_payloads_differ.into_inner(), overflows.into_inner())
}

#[test]
#[ignore = "a 2^32-input proof: `cargo test --workspace --profile proofs -- --ignored` runs it (CI does)"]
fn the_float8_crate_saturates_and_otherwise_agrees() {
    // float8 0.7 rounds like our SatFinite mode on every non-NaN input and gives a NaN for
    // every NaN; against our Standard mode it differs exactly on the inputs that overflow
    // (it gives the largest finite value where OCP's non-saturating mode gives NaN or inf).
    let e4m3 = float8_against_ours(
        "e4m3",
        |x| fp8::e4m3::from_f32_bits(x, Overflow::Standard),
        |x| fp8::e4m3::from_f32_bits(x, Overflow::SatFinite),
        |x| float8::F8E4M3::from_f32(f32::from_bits(x)).to_bits(),
        fp8::e4m3::is_nan,
    );
    let e5m2 = float8_against_ours(
        "e5m2",
        |x| fp8::e5m2::from_f32_bits(x, Overflow::Standard),
        |x| fp8::e5m2::from_f32_bits(x, Overflow::SatFinite),
        |x| float8::F8E5M2::from_f32(f32::from_bits(x)).to_bits(),
        fp8::e5m2::is_nan,
    );
    for (name, (nan_payloads_differ, overflows)) in [("e4m3", e4m3), ("e5m2", e5m2)] {
        println!(
            "float8 {name}: equal to our satfinite mode on every non-NaN input; another NaN encoding on \
             {nan_payloads_differ} NaN inputs; differs from our standard mode on the {overflows} overflowing inputs"
        );
    }
}
