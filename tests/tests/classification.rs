//! The classification reference (`bitexact::verify::reference::class`, integer field decoding)
//! against independent implementations: core's `f16`/`f32`/`f64::classify`, the `half`
//! crate, binary16 for FP8 E5M2 (its top byte), the `float8` crate's decoding to f32 for
//! E4M3, the OCP specification's named values, and for the FNUZ formats a decoding to
//! f64 written from their paper's definition, with its ranges. The variants themselves
//! are proven against this reference, on every encoding, in `exhaustive_cpu.rs`.
#![feature(f16)]
// Bit literals are grouped by the encoding's fields (sign_exponent_mantissa).
#![allow(clippy::unusual_byte_groupings)]

use bitexact::verify::domain;
use bitexact::verify::reference::class;
use conformance::check_all;
use core::num::FpCategory;
use shared::{Class, Family, Format};

fn from_category(category: FpCategory) -> Class {
    match category {
        FpCategory::Zero => Class::Zero,
        FpCategory::Subnormal => Class::Subnormal,
        FpCategory::Normal => Class::Normal,
        FpCategory::Infinite => Class::Infinite,
        FpCategory::Nan => Class::Nan,
    }
}

#[test]
fn class_codes_are_the_readmes() {
    // The stored byte of a `Classify` result, as the README specifies it.
    let names = ["zero", "subnormal", "normal", "infinite", "nan"];
    for ((code, class), name) in (0u8..).zip(Class::ALL).zip(names) {
        assert_eq!(format!("{class:?}").to_lowercase(), name);
        assert_eq!(class as u8, code, "{name}");
        assert_eq!(Class::from_code(code), Some(class));
        assert_eq!(class.is_finite(), code < 3, "{name}");
    }
    assert_eq!(Class::from_code(5), None);
}

#[test]
fn binary16_reference_agrees_with_half_and_core_f16() {
    for b in 0..=u16::MAX {
        let reference = class(Format::Binary16, u64::from(b));
        assert_eq!(reference, from_category(f16::from_bits(b).classify()), "core f16 disagrees at {b:#06x}");
        assert_eq!(reference, from_category(half::f16::from_bits(b).classify()), "half disagrees at {b:#06x}");
    }
}

#[test]
fn bfloat16_reference_agrees_with_half_and_binary32() {
    for b in 0..=u16::MAX {
        let reference = class(Format::Bfloat16, u64::from(b));
        assert_eq!(reference, from_category(half::bf16::from_bits(b).classify()), "half disagrees at {b:#06x}");
        // bfloat16 is the top half of a binary32, and classes carry over.
        let widened = f32::from_bits(u32::from(b) << 16);
        assert_eq!(reference, from_category(widened.classify()), "binary32 disagrees at {b:#06x}");
    }
}

#[test]
#[ignore = "a 2^32-input proof: `cargo test --workspace --profile proofs -- --ignored` runs it (CI does)"]
fn binary32_reference_agrees_with_core_on_all_2_pow_32_encodings() {
    check_all(0..1 << 32, |b| {
        let reference = class(Format::Binary32, b);
        let core = from_category(f32::from_bits(b as u32).classify());
        if reference == core { Ok(()) } else { Err(format!("{b:#010x}: reference {reference:?}, core {core:?}")) }
    })
    .unwrap();
}

#[test]
fn binary64_reference_agrees_with_core_on_the_sampled_domain() {
    let family = Family::Classify(Format::Binary64);
    check_all(0..domain::count(family), |i| {
        let b = domain::input(family, i);
        let reference = class(Format::Binary64, b);
        let core = from_category(f64::from_bits(b).classify());
        if reference == core { Ok(()) } else { Err(format!("{b:#018x}: reference {reference:?}, core {core:?}")) }
    })
    .unwrap();
}

#[test]
fn fp8_e5m2_reference_agrees_with_binary16_and_float8() {
    // E5M2 is binary16 with the low 8 mantissa bits dropped: same sign, exponent and
    // specials, so the classes of `b` and of the binary16 `b << 8` are the same.
    for b in 0..=u8::MAX {
        let reference = class(Format::Fp8E5m2, u64::from(b));
        let widened = f16::from_bits(u16::from(b) << 8);
        assert_eq!(reference, from_category(widened.classify()), "binary16 disagrees at {b:#04x}");
        let (value, widened) = (float8::F8E5M2::from_bits(b).to_f32(), widened as f32);
        let same = value.to_bits() == widened.to_bits() || (value.is_nan() && widened.is_nan());
        assert!(same, "float8 decodes {b:#04x} as {value:e}, binary16 as {widened:e}");
    }
}

/// E4M3 constants from the OCP 8-bit Floating Point Specification, rev. 1.0, table 1.
const E4M3_MAX: f32 = 448.0;
const E4M3_MIN_NORMAL: f32 = 1.0 / 64.0; // 2^-6
const E4M3_MIN_SUBNORMAL: f32 = 1.0 / 512.0; // 2^-9

#[test]
fn fp8_e4m3_reference_agrees_with_float8_values_and_the_ocp_ranges() {
    // float8's decoding to f32 (not its predicates: see the README) gives each
    // encoding's value; the class follows from the value and the OCP ranges.
    let mut counts = [0; 5];
    for b in 0..=u8::MAX {
        let reference = class(Format::Fp8E4m3, u64::from(b));
        counts[usize::from(reference as u8)] += 1;
        let value = float8::F8E4M3::from_bits(b).to_f32();
        let from_value = if value.is_nan() {
            Class::Nan
        } else if value == 0.0 {
            Class::Zero
        } else if value.abs() < E4M3_MIN_NORMAL {
            assert!(value.abs() >= E4M3_MIN_SUBNORMAL, "{b:#04x}: {value:e} below the smallest subnormal");
            Class::Subnormal
        } else {
            assert!(value.abs() <= E4M3_MAX, "{b:#04x}: {value:e} above the E4M3 maximum");
            Class::Normal
        };
        assert_eq!(reference, from_value, "{b:#04x} ({value:e})");
    }
    // 2 zeros, 2 × 7 subnormals, 2 NaNs, no infinities, the rest normal.
    assert_eq!(counts, [2, 14, 256 - 2 - 14 - 2, 0, 2]);
}

#[test]
fn fp8_named_values_from_the_ocp_specification() {
    let e4m3 = |b: u8| float8::F8E4M3::from_bits(b).to_f32();
    let e5m2 = |b: u8| float8::F8E5M2::from_bits(b).to_f32();
    let cases: [(&str, Format, u8, Class, f32); 14] = [
        ("E4M3 max normal", Format::Fp8E4m3, 0b0_1111_110, Class::Normal, E4M3_MAX),
        ("E4M3 -max normal", Format::Fp8E4m3, 0b1_1111_110, Class::Normal, -E4M3_MAX),
        ("E4M3 min normal", Format::Fp8E4m3, 0b0_0001_000, Class::Normal, E4M3_MIN_NORMAL),
        ("E4M3 max subnormal", Format::Fp8E4m3, 0b0_0000_111, Class::Subnormal, 7.0 / 512.0),
        ("E4M3 min subnormal", Format::Fp8E4m3, 0b0_0000_001, Class::Subnormal, E4M3_MIN_SUBNORMAL),
        ("E4M3 -0", Format::Fp8E4m3, 0b1_0000_000, Class::Zero, -0.0),
        ("E4M3 top binade, normal", Format::Fp8E4m3, 0b0_1111_000, Class::Normal, 256.0),
        ("E5M2 max normal", Format::Fp8E5m2, 0b0_11110_11, Class::Normal, 57344.0),
        ("E5M2 min normal", Format::Fp8E5m2, 0b0_00001_00, Class::Normal, 1.0 / 16384.0),
        ("E5M2 min subnormal", Format::Fp8E5m2, 0b0_00000_01, Class::Subnormal, 1.0 / 65536.0),
        ("E5M2 +inf", Format::Fp8E5m2, 0b0_11111_00, Class::Infinite, f32::INFINITY),
        ("E5M2 -inf", Format::Fp8E5m2, 0b1_11111_00, Class::Infinite, f32::NEG_INFINITY),
        ("E5M2 -0", Format::Fp8E5m2, 0b1_00000_00, Class::Zero, -0.0),
        ("E5M2 +0", Format::Fp8E5m2, 0b0_00000_00, Class::Zero, 0.0),
    ];
    for (name, format, bits, expected_class, value) in cases {
        assert_eq!(class(format, u64::from(bits)), expected_class, "{name}");
        let decoded = if format == Format::Fp8E4m3 { e4m3(bits) } else { e5m2(bits) };
        assert_eq!(decoded.to_bits(), value.to_bits(), "{name}: float8 decodes {decoded:e}");
    }
    for nan in [0b0_1111_111, 0b1_1111_111] {
        assert_eq!(class(Format::Fp8E4m3, nan), Class::Nan, "E4M3 {nan:#04x}");
    }
    for nan in [0b0_11111_01, 0b0_11111_10, 0b0_11111_11, 0b1_11111_01, 0b1_11111_10, 0b1_11111_11] {
        assert_eq!(class(Format::Fp8E5m2, nan), Class::Nan, "E5M2 {nan:#04x}");
    }
}

/// An FNUZ encoding's value, decoded from the definition in Noune et al.,
/// arXiv:2206.02915 (section 3): exponent bias `2^(E-1)`, no infinities, every exponent
/// field a binade, subnormals at exponent field 0, and 0x80 (which would be -0) NaN.
fn fnuz_value(b: u8, exponent_bits: u32, mantissa_bits: u32) -> f64 {
    if b == 0x80 {
        return f64::NAN;
    }
    let bias = 1 << (exponent_bits - 1);
    let exponent = i32::from(b >> mantissa_bits) & ((1 << exponent_bits) - 1);
    let mantissa = f64::from(b & ((1 << mantissa_bits) - 1));
    let scale = |e: i32| 2f64.powi(e - bias - mantissa_bits as i32);
    let magnitude =
        if exponent == 0 { mantissa * scale(1) } else { (mantissa + f64::from(1 << mantissa_bits)) * scale(exponent) };
    if b & 0x80 != 0 { -magnitude } else { magnitude }
}

#[test]
fn fp8_fnuz_reference_agrees_with_the_papers_decoding_and_ranges() {
    // (format, exponent bits, mantissa bits, largest, smallest normal, smallest
    // subnormal), the ranges from the paper's table 1 (also ONNX's float8 table).
    let formats = [
        (Format::Fp8E4m3Fnuz, 4, 3, 240.0, 2f64.powi(-7), 2f64.powi(-10)),
        (Format::Fp8E5m2Fnuz, 5, 2, 57344.0, 2f64.powi(-15), 2f64.powi(-17)),
    ];
    for (format, exponent_bits, mantissa_bits, largest, min_normal, min_subnormal) in formats {
        let mut counts = [0; 5];
        let mut magnitudes = Vec::new();
        for b in 0..=u8::MAX {
            let reference = class(format, u64::from(b));
            counts[usize::from(reference as u8)] += 1;
            let value = fnuz_value(b, exponent_bits, mantissa_bits);
            let from_value = if value.is_nan() {
                Class::Nan
            } else if value == 0.0 {
                Class::Zero
            } else if value.abs() < min_normal {
                Class::Subnormal
            } else {
                Class::Normal
            };
            assert_eq!(reference, from_value, "{format:?} {b:#04x} ({value:e})");
            if !value.is_nan() {
                magnitudes.push(value.abs());
            }
        }
        let subnormals = 2 * ((1 << mantissa_bits) - 1);
        // One zero (no -0), no infinities, one NaN (0x80), the rest normal.
        assert_eq!(counts, [1, subnormals, 256 - 1 - subnormals - 1, 0, 1], "{format:?}");
        let max = magnitudes.iter().copied().fold(0.0, f64::max);
        let min = magnitudes.iter().copied().filter(|&m| m > 0.0).fold(f64::INFINITY, f64::min);
        assert_eq!((max, min), (largest, min_subnormal), "{format:?}");
        assert_eq!(fnuz_value(0x7F, exponent_bits, mantissa_bits), largest, "{format:?}: 0x7F is the largest");
        assert_eq!(fnuz_value(0xFF, exponent_bits, mantissa_bits), -largest, "{format:?}: 0xFF is its negative");
    }
}
