//! The independent exact reference, one per family.
//!
//! Nothing here calls `shared`'s computations: only its descriptive enums `Family` and
//! `Format` are used, and `Family::domain` (through [`crate::domain`]) only to reject
//! inputs outside a family's domain, never to compute a result. Encodings are decoded
//! field by field with integer operations from the field widths each format's
//! specification gives; quotients are rounded to f32 with integer arithmetic on the
//! exact rational (round to nearest, ties to even); f32 → UNORM multiplies the float's
//! integer significand exactly and rounds by comparing the remainder with one half. No
//! floating-point operation is involved anywhere.
//!
//! [`expected`] is the one entry point; [`expected_many`] is the same for a slice. The
//! parts, one per kind of format: [`classify`] (field layouts and the class of any
//! encoding), [`norm`] (UNORM/SNORM codes and the integer division to f32), [`narrow`]
//! (binary16, bfloat16 and FP8: rounding onto their grids and back to f32), [`ulp`]
//! (distances between results) and [`runs`] (a rounding's results on a run of consecutive
//! f32s, computed only where they change, which [`expected_many`] uses for the
//! verification's chunks). The parts are the wing's plumbing, `#[doc(hidden)]`; what
//! they offer callers (the formats, the roundings and their inverses, the exact parts of
//! an f32's or f64's magnitude, the UNORM/SNORM references, the class of any encoding,
//! the run fillers) is re-exported here, so callers name `verify::reference::x`.
//!
//! The references of the block-scaled recipes (scaled FP8 per tensor and per block, which
//! the MX proofs use at power-of-two scales, and NVFP4, with their producers' steps) are
//! the proofs' own and live beside them, in the conformance crate (`tests/src/reference`),
//! built on the roundings here: nothing the library runs needs them.
//!
//! Classes are [`shared::Class`]: one enum for the class of a value in the whole
//! workspace (the reference computes it on its own, by field decoding).
//!
//! Owns: the right answer of every family, on every input of its domain.
//! Uses: `shared`'s descriptive enums and [`crate::domain`] (to reject inputs).

#[doc(hidden)]
pub mod classify;
#[doc(hidden)]
pub mod narrow;
#[doc(hidden)]
pub mod norm;
#[doc(hidden)]
pub mod runs;
#[doc(hidden)]
pub mod ulp;

#[doc(hidden)]
pub use classify::{FieldLayout, Specials, layout, packed_finite_mask};
pub use classify::{binary16_class, class};
pub use narrow::{
    BFLOAT16, BINARY16, BINARY32, FP4_E2M1, FP8_E4M3, FP8_E5M2, NarrowFormat, Rounded, div_to_narrow, exact_f32_bits,
    f32_magnitude_parts, f64_magnitude_parts, fp4_e2m1_from_f32_bits, fp4_e2m1_to_f32_bits, narrow_to_f32_bits,
    round_f32_to, round_to, round_wide,
};
#[doc(hidden)]
pub use narrow::{
    InputClass, NarrowConversion, conversion_input_class, conversion_input_format, conversion_output_is_nan,
    narrow_format,
};
pub use norm::{div_to_f32, f32_to_unorm_exact, snorm_to_f32_bits, unorm_to_f32_bits, unorm_to_narrow_bits};
pub use runs::{fill_f32_monotone, fill_monotone};
#[doc(hidden)]
pub use ulp::{f32_ulp_distance, float16_ulp_distance, narrow_ulp_distance, ulp_distance};

use shared::{Family, Format};

/// How a family's stored result is to be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// One byte, 0 or 1.
    Bool,
    /// One byte, the [`shared::Class`] discriminant (zero 0, subnormal 1, normal 2,
    /// infinite 3, NaN 4).
    ClassCode,
    /// A `u32` lane mask.
    LaneMask,
    /// The bits of an f32.
    F32,
    /// The bits of a 16-bit floating-point format (binary16 or bfloat16).
    Float16(Format),
    /// An unsigned integer code.
    UnormCode,
    /// The bits of a value of this narrow format.
    Narrow(Format),
}

/// How `family`'s results are stored.
pub const fn output_kind(family: Family) -> OutputKind {
    match family {
        Family::IsFinite(_) | Family::IsNan(_) | Family::IsInfinite(_) => OutputKind::Bool,
        Family::Classify(_) => OutputKind::ClassCode,
        Family::PackedIsFinite(_) => OutputKind::LaneMask,
        Family::UnormToF32 { .. } | Family::SnormToF32 { .. } => OutputKind::F32,
        Family::UnormToF16 { .. } => OutputKind::Float16(Format::Binary16),
        Family::UnormToBf16 { .. } => OutputKind::Float16(Format::Bfloat16),
        Family::F32ToUnorm { .. } => OutputKind::UnormCode,
        Family::F32ToNarrow { format, .. } => OutputKind::Narrow(format),
        Family::NarrowToF32 { .. } => OutputKind::F32,
    }
}

/// The exact result of `family` on input bits `input`, as stored bits.
///
/// Panics if `input` is outside the family's domain (a caller bug, never user input).
pub fn expected(family: Family, input: u64) -> u64 {
    let mut out = [0];
    expected_many(family, &[input], &mut out);
    out[0]
}

/// [`expected`] for each of `inputs`, into `out` (same length).
///
/// Panics if the lengths differ or an input is outside the family's domain.
pub fn expected_many(family: Family, inputs: &[u64], out: &mut [u64]) {
    assert_eq!(inputs.len(), out.len(), "expected_many: {} inputs, {} outputs", inputs.len(), out.len());
    let outside = inputs.iter().fold(0, |acc, &x| acc | x) & !family.domain().input_mask();
    if outside != 0 {
        let bad = inputs.iter().find(|&&x| !family.domain().contains(x));
        panic!("{:#x} is outside the domain of {family}", bad.copied().unwrap_or(outside));
    }
    match family {
        Family::IsFinite(_)
        | Family::IsNan(_)
        | Family::IsInfinite(_)
        | Family::Classify(_)
        | Family::PackedIsFinite(_) => classify::classification_many(family, inputs, out),
        Family::UnormToF32 { bits } => fill(inputs, out, |x| u64::from(unorm_to_f32_bits(bits, x))),
        Family::SnormToF32 { bits } => fill(inputs, out, |x| u64::from(snorm_to_f32_bits(bits, x))),
        Family::UnormToF16 { bits } => fill(inputs, out, |x| unorm_to_narrow_bits(BINARY16, bits, x)),
        Family::UnormToBf16 { bits } => fill(inputs, out, |x| unorm_to_narrow_bits(BFLOAT16, bits, x)),
        Family::F32ToUnorm { bits } => fill_rounding(inputs, out, |x| f32_to_unorm_exact(bits, x).0),
        Family::F32ToNarrow { format, overflow } => {
            let conversion = &NarrowConversion::new(format, overflow);
            // One loop per format, with its fields constants in the rounding.
            let constant = |narrow: NarrowFormat| move |x: u32| conversion.convert_as(narrow, x);
            match format {
                Format::Binary16 => fill_rounding(inputs, out, constant(BINARY16)),
                Format::Bfloat16 => fill_rounding(inputs, out, constant(BFLOAT16)),
                Format::Fp8E4m3 => fill_rounding(inputs, out, constant(FP8_E4M3)),
                Format::Fp8E5m2 => fill_rounding(inputs, out, constant(FP8_E5M2)),
                _ => fill_rounding(inputs, out, |x| conversion.convert(x)),
            }
        }
        Family::NarrowToF32 { format } => fill(inputs, out, |x| u64::from(narrow_to_f32_bits(format, x))),
    }
}

/// `out[i] = f(inputs[i])` for the f32 inputs of a rounding (f32 → UNORM or a narrow
/// format), which is monotone on the finite f32s of each sign: on consecutive inputs,
/// such as the verification's chunks, `f` is called only where its result changes
/// ([`fill_f32_monotone`]); otherwise on each input.
#[inline(always)]
fn fill_rounding(inputs: &[u64], out: &mut [u64], f: impl Fn(u32) -> u64) {
    match consecutive_start(inputs) {
        Some(first) => fill_f32_monotone(first, out, f),
        None => fill(inputs, out, |x| f(x as u32)),
    }
}

/// The first of `inputs` if each is the one before plus one.
fn consecutive_start(inputs: &[u64]) -> Option<u64> {
    let first = *inputs.first()?;
    inputs.iter().zip(first..).all(|(&x, i)| x == i).then_some(first)
}

/// `out[i] = f(inputs[i])` for every `i` (the lengths are equal).
#[inline(always)]
fn fill(inputs: &[u64], out: &mut [u64], f: impl Fn(u64) -> u64) {
    for (o, &x) in out.iter_mut().zip(inputs) {
        *o = f(x);
    }
}
