//! Block-scaled FP8 by the exact recipe (`shared::fp8_block`) against the rational
//! reference on integers (`conformance::reference::scaled`):
//! - `quantize_quotient`, the exact quotient `x / d` rounded once, on a sample of every
//!   binade at many scales in the quick run, and with `--ignored` on every f32 at a scale
//!   that is not a power of two, for E4M3 and E5M2;
//! - `dequant_scale_for`, `fl32(amax / max)`, on a sample, and with `--ignored` on every
//!   finite non-negative `amax` for both formats;
//! - `quantize_quotient_to_odd` and `compressed_tensors_quantize_by_addition`, the forms
//!   of the vector loops, in the same checks as `quantize_quotient` and
//!   `compressed_tensors_quantize` (every input they see, every walk);
//! - `quantize_blocks` on whole tensors (partial tiles, rows, non-finite values, an
//!   all-zero block) against the reference applied block by block, with each block's
//!   `amax` found by a loop of its own; every recipe, as `shared` runs it and as
//!   `bitexact::cpu::fp8_scale::quantize_blocks_at` runs it at every CPU level this
//!   machine has;
//! - DeepGEMM's recipe ([`Recipe::DeepGemm`]): its scale `sf` and the reciprocal the
//!   codes use on a sample, and with `--ignored` on every finite `amax`, against the
//!   recipe written on integers (the clamp, the division `1 / max`, the product rounded
//!   to f32, `1 / sf`); its codes on whole tensors against the reference's two-step
//!   rounding `rne(fl32(x · fl32(1 / sf)))` (`scaled::quantize_two_step`, which
//!   `fp8_scale.rs` proves `quantize` equal to on every f32 at its walked scales);
//! - the exact recipe with a power-of-two scale ([`Recipe::ExactUe8m0`]): `ue8m0_scale_for`
//!   on a sample, and with `--ignored` on every finite `amax` for both formats, against
//!   the inequalities that define it, in exact f64 arithmetic (`max · 2^k` and `amax` are
//!   f64 values); its codes on whole tensors against the reference's exact quotient;
//! - DeepGEMM's with a power-of-two scale ([`Recipe::DeepGemmUe8m0`]): on the same sample
//!   and `amax`s as its `sf` (every finite one for E4M3 with `--ignored`), the least power
//!   of two at or above that `sf`, and the exact recipe's UE8M0 scale from `1e-4` up; its
//!   codes on whole tensors.
//! - the exact recipe with a bfloat16 scale ([`Recipe::ExactBf16`]): `bf16_scale_for` on a
//!   sample against the least bfloat16 that fits, found by a search, and with `--ignored`
//!   on every finite `amax` for both formats against the inequalities that define it (exact
//!   in f64); its codes on whole tensors against the reference's exact quotient;
//! - compressed-tensors' recipe ([`Recipe::CompressedTensors`]), against its steps on
//!   integers (`scaled::compressed_tensors_scale`, `compressed_tensors_quantize`): for
//!   bfloat16 weights, the scale on every bfloat16 amax, and the code of every bfloat16
//!   weight at every 257th positive finite bfloat16 scale (with `--ignored` at every one:
//!   the whole domain); for f32
//!   weights, the scale on a sample and with `--ignored` on every finite amax (checked by
//!   multiplication), the codes on a sample at many scales and with `--ignored` on every
//!   f32 at a scale that is not a power of two; and on whole tensors, both dtypes.

use bitexact::cpu::fp8_scale as cpu_fp8;
use bitexact::verify::reference::{FP8_E4M3, FP8_E5M2, NarrowFormat, fill_f32_monotone};
use conformance::reference::scaled;
use conformance::{check_all, splitmix};
use shared::fp8_block::{self, BlockError, Blocks, Recipe};
use shared::fp8_scale::Fp8Format;
use shared::nvfp4::WeightDtype;

use test_fixtures::levels::levels;

fn reference_format(format: Fp8Format) -> NarrowFormat {
    match format {
        Fp8Format::E4M3 => FP8_E4M3,
        Fp8Format::E5M2 => FP8_E5M2,
    }
}

/// An f32's sign bit.
const SIGN: u32 = 0x8000_0000;

/// A form of `quantize_quotient`: `(x, d, format)` to a code.
type QuotientFn = fn(u32, f32, Fp8Format) -> u8;

/// `quantize_quotient` of `x` at `d`, and its vector loop's form `quantize_quotient_to_odd`,
/// against the reference; the difference, in hex.
///
/// Both forms are called directly (inlined into the walks, not through function pointers),
/// and compared at once; the form that differs is named only on a difference.
#[inline(always)]
fn check_quotient(format: Fp8Format, d: f32, x: u32, want: u8) -> Result<(), String> {
    let codes = [fp8_block::quantize_quotient(x, d, format), fp8_block::quantize_quotient_to_odd(x, d, format)];
    if codes == [want; 2] {
        return Ok(());
    }
    for (form, got) in ["quantize_quotient", "to odd"].into_iter().zip(codes) {
        if got != want {
            return Err(format!(
                "{format:?} {form}: x = {x:#010x} ({:e}), d = {d:e} ({:#010x}): got {got:#04x}, exact {want:#04x}",
                f32::from_bits(x),
                d.to_bits()
            ));
        }
    }
    Ok(())
}

/// The reference's code for `x / d`.
#[inline(always)]
fn exact(format: Fp8Format, d: f32, x: u32) -> u8 {
    scaled::quantize_quotient(reference_format(format), x, d.to_bits())
}

/// Every 65537th f32 (a prime stride: every binade, both signs, NaNs included) and the
/// encodings around each power of two, with either sign.
fn sampled_f32() -> impl Iterator<Item = u32> {
    let strided = (0..1u64 << 32).step_by(65537).map(|x| x as u32);
    let edges = (0..256u32).flat_map(|e| (0..8u32).flat_map(move |d| [(e << 23) + d, (e << 23).wrapping_sub(d + 1)]));
    strided.chain(edges.flat_map(|x| [x, x | SIGN]))
}

/// Scales a block meets: powers of two, the least (`2^-149`), the largest, and the
/// scales of typical and extreme `amax` values.
fn scales(format: Fp8Format) -> Vec<f32> {
    let mut scales = vec![1.0, 2f32.powi(-4), 2f32.powi(3), 2f32.powi(100), f32::from_bits(1), f32::MAX];
    for amax in [0.0123f32, 3.7, 1.0, 448.0, 1e-30, 1e-42, f32::MAX, 0.5 + f32::EPSILON] {
        scales.push(fp8_block::dequant_scale_for(amax, format));
    }
    scales
}

#[test]
fn the_quotient_equals_the_rational_reference_on_a_sample_at_many_scales() {
    for format in Fp8Format::ALL {
        for d in scales(format) {
            for x in sampled_f32() {
                check_quotient(format, d, x, exact(format, d, x)).unwrap_or_else(|m| panic!("{m}"));
            }
        }
    }
}

#[test]
fn the_quotient_rounds_to_nearest_even_and_saturates() {
    // 0.0625 / d with d = 1.5 · 2^-8 is 10.666…: E4M3's neighbours are 10 and 11, and 11
    // (0x53) is nearest. Between 16 and 32 E4M3's step is 2: 17 ties to 16 (0x58, an even
    // mantissa) and 19 to 20 (0x5A).
    // Each form: the scalar one and the vector loop's.
    let d = 1.5 * 2f32.powi(-8);
    let forms: [(&str, QuotientFn); 2] =
        [("quantize_quotient", fp8_block::quantize_quotient), ("to odd", fp8_block::quantize_quotient_to_odd)];
    for (form, quantize) in forms {
        assert_eq!(quantize(0.0625f32.to_bits(), d, Fp8Format::E4M3), 0x53, "{form}");
        assert_eq!(quantize(17.0f32.to_bits(), 1.0, Fp8Format::E4M3), 0x58, "{form}: 17 ties to 16");
        assert_eq!(quantize(19.0f32.to_bits(), 1.0, Fp8Format::E4M3), 0x5A, "{form}: 19 ties to 20");
        // Saturating, signed zero and NaN.
        assert_eq!(quantize(1e30f32.to_bits(), 1.0, Fp8Format::E4M3), 0x7E, "{form}");
        assert_eq!(quantize(f32::NEG_INFINITY.to_bits(), 1.0, Fp8Format::E5M2), 0xFB, "{form}");
        assert_eq!(quantize((-0.0f32).to_bits(), 1.0, Fp8Format::E4M3), 0x80, "{form}");
        assert_eq!(quantize(0xFFC0_0000, 1.0, Fp8Format::E4M3), 0xFF, "{form}");
    }
}

/// Every f32 at `d`, in blocks of 2^16 magnitudes, each with both signs, against the
/// reference's code for the magnitude (with the input's sign). The reference is monotone
/// in the magnitude, so it is computed where it changes (`fill_f32_monotone`).
fn every_f32_at(format: Fp8Format, d: f32) {
    check_all(0..1 << 15, |block| {
        let mut codes = vec![0; 1 << 16];
        fill_f32_monotone(block << 16, &mut codes, |m| exact(format, d, m));
        ((block as u32) << 16..((block + 1) << 16) as u32).zip(codes).try_for_each(|(m, code)| {
            check_quotient(format, d, m, code)?;
            check_quotient(format, d, m | SIGN, code | 0x80)
        })
    })
    .unwrap_or_else(|m| panic!("{m}"));
}

// The proven scales: one per format that is not a power of two (a power of two only
// moves the exponent). The module's argument covers every scale; the walks prove the
// code that carries it out on every input.
#[test]
#[ignore = "2^32 inputs"]
fn the_quotient_e4m3_equals_the_reference_on_every_f32_at_a_scale_that_is_not_a_power_of_two() {
    every_f32_at(Fp8Format::E4M3, fp8_block::dequant_scale_for(0.0123, Fp8Format::E4M3));
}

#[test]
#[ignore = "2^32 inputs"]
fn the_quotient_e5m2_equals_the_reference_on_every_f32_at_a_scale_that_is_not_a_power_of_two() {
    every_f32_at(Fp8Format::E5M2, fp8_block::dequant_scale_for(3.7, Fp8Format::E5M2));
}

/// `dequant_scale_for(amax)` for both formats against the reference's definition,
/// checked by multiplication (`scaled::is_block_dequant_scale`: no division per input);
/// the message names the reference's value, found by its division.
fn check_scale(amax: u32) -> Result<(), String> {
    for format in Fp8Format::ALL {
        let got = fp8_block::dequant_scale_for(f32::from_bits(amax), format).to_bits();
        if !scaled::is_block_dequant_scale(reference_format(format), amax, got) {
            let want = scaled::block_dequant_scale(reference_format(format), amax);
            return Err(format!("{format:?}: amax = {amax:#010x}: scale {got:#010x}, exact {want:#010x}"));
        }
    }
    Ok(())
}

#[test]
fn the_scale_equals_the_rational_reference_on_a_sample() {
    for amax in sampled_f32().filter(|&x| x < 0x7F80_0000) {
        for format in Fp8Format::ALL {
            // The reference's division and its check by multiplication agree.
            let d = scaled::block_dequant_scale(reference_format(format), amax);
            assert!(scaled::is_block_dequant_scale(reference_format(format), amax, d), "{format:?} {amax:#x}");
        }
        check_scale(amax).unwrap_or_else(|m| panic!("{m}"));
    }
    assert_eq!(fp8_block::dequant_scale_for(0.0, Fp8Format::E4M3), 1.0);
    assert_eq!(fp8_block::dequant_scale_for(448.0, Fp8Format::E4M3), 1.0);
    assert_eq!(fp8_block::dequant_scale_for(f32::from_bits(1), Fp8Format::E4M3), f32::from_bits(1));
}

#[test]
#[ignore = "2^31 inputs"]
fn the_scale_equals_the_rational_reference_on_every_finite_amax() {
    check_all(0..0x7F80_0000, |amax| check_scale(amax as u32)).unwrap_or_else(|m| panic!("{m}"));
}

/// Whether `d` (f32 bits) is the UE8M0 scale of a block whose largest magnitude is `amax`
/// (f32 bits, finite): 1 for `amax = 0`; otherwise `2^k` with `k` in `−127 ..= 127`,
/// `amax ≤ max · 2^k`, and `k = −127` or `amax > max · 2^(k − 1)` (the least such `k`).
/// Every product here is an f64 value (`max` has at most 3 significant bits), so the
/// comparisons are exact.
fn is_ue8m0_scale(format: Fp8Format, amax: u32, d: u32) -> bool {
    let (amax, d) = (f64::from(f32::from_bits(amax)), f64::from(f32::from_bits(d)));
    if amax == 0.0 {
        return d == 1.0;
    }
    let bits = d.to_bits();
    let k = ((bits >> 52) & 0x7FF) as i32 - 1023;
    let power_of_two = d > 0.0 && bits & 0x000F_FFFF_FFFF_FFFF == 0 && (-127..=127).contains(&k);
    let max = f64::from(format.max_finite());
    power_of_two && amax <= max * d && (k == -127 || amax > max * d / 2.0)
}

/// The UE8M0 scale of `amax` (f32 bits, finite) by its definition: the least `k` in
/// `−127 ..= 127` with `amax ≤ max · 2^k` (exact in f64), as f32 bits; 1 for `amax = 0`.
fn reference_ue8m0_scale(format: Fp8Format, amax: u32) -> u32 {
    let value = f64::from(f32::from_bits(amax));
    if value == 0.0 {
        return 1f32.to_bits();
    }
    let max = f64::from(format.max_finite());
    let k = (-127..=127).find(|&k| value <= max * 2f64.powi(k)).unwrap_or(127);
    (2f64.powi(k) as f32).to_bits()
}

fn check_ue8m0_scale(amax: u32) -> Result<(), String> {
    for format in Fp8Format::ALL {
        let got = fp8_block::ue8m0_scale_for(f32::from_bits(amax), format).to_bits();
        if !is_ue8m0_scale(format, amax, got) {
            let want = reference_ue8m0_scale(format, amax);
            return Err(format!("{format:?}: amax = {amax:#010x}: UE8M0 scale {got:#010x}, exact {want:#010x}"));
        }
    }
    Ok(())
}

#[test]
fn the_ue8m0_scale_is_the_least_power_of_two_that_fits_on_a_sample() {
    for amax in sampled_f32().filter(|&x| x < 0x7F80_0000) {
        for format in Fp8Format::ALL {
            // The definition by search and the check by inequalities agree.
            let d = reference_ue8m0_scale(format, amax);
            assert!(is_ue8m0_scale(format, amax, d), "{format:?} {amax:#x}");
            for wrong in [d.wrapping_add(1 << 23), d.wrapping_sub(1 << 23), d ^ 1] {
                assert!(!is_ue8m0_scale(format, amax, wrong) || amax == 0, "{format:?} {amax:#x} {wrong:#x}");
            }
        }
        check_ue8m0_scale(amax).unwrap_or_else(|m| panic!("{m}"));
    }
    let ue8m0 = |amax: f32| fp8_block::ue8m0_scale_for(amax, Fp8Format::E4M3);
    assert_eq!((ue8m0(0.0), ue8m0(448.0), ue8m0(449.0), ue8m0(224.0)), (1.0, 1.0, 2.0, 0.5));
    assert_eq!(ue8m0(f32::from_bits(1)), f32::from_bits(0x0040_0000), "2^-127, E8M0's least");
}

#[test]
#[ignore = "2^31 inputs"]
fn the_ue8m0_scale_is_the_least_power_of_two_that_fits_on_every_finite_amax() {
    check_all(0..0x7F80_0000, |amax| check_ue8m0_scale(amax as u32)).unwrap_or_else(|m| panic!("{m}"));
}

/// DeepGEMM's `sf` of `amax` on integers (`scaled::deepgemm_scale`).
fn reference_deepgemm_scale(format: Fp8Format, amax: u32) -> u32 {
    scaled::deepgemm_scale(reference_format(format), amax)
}

/// The reciprocal DeepGEMM's codes multiply by, `fl32(1 / sf)`, on integers.
fn reference_inverse(sf: u32) -> u32 {
    scaled::divide(1f32.to_bits(), sf).expect("sf is at least 1e-4 / 57344: its inverse is finite")
}

/// Whether `d` is the least power of two at or above `sf` (both f32 values, `sf`
/// positive): `d` a power of two, `sf ≤ d` and `d / 2 < sf`, each exact in f64.
fn is_least_power_of_two_at_least(sf: f32, d: f32) -> bool {
    let (sf, d) = (f64::from(sf), f64::from(d));
    d > 0.0 && d.to_bits() & 0x000F_FFFF_FFFF_FFFF == 0 && sf <= d && d / 2.0 < sf
}

/// DeepGEMM's UE8M0 scale of `amax` by its definition on the reference's `sf`: the least
/// power of two at or above it (a search over exact f64 powers), as f32 bits.
fn reference_deepgemm_ue8m0_scale(format: Fp8Format, amax: u32) -> u32 {
    let sf = f64::from(f32::from_bits(reference_deepgemm_scale(format, amax)));
    let k = (-149..=127).find(|&k| sf <= 2f64.powi(k)).expect("sf is finite and at most 2^127");
    (2f64.powi(k) as f32).to_bits()
}

/// `deepgemm_scale` of each amax of `amaxes` (non-negative finite f32 bits) and the
/// reciprocal `quantize_blocks_with` takes of it, against the recipe on integers:
/// `sf` the product `max(amax, fl32(1e-4)) · fl32(1 / max)` rounded to nearest even,
/// `1 / sf` the quotient rounded so, each checked by multiplication against the
/// midpoints around it (`scaled::is_rounded_product`, `is_rounded_quotient`: no
/// division per input); and the claim that DeepGEMM's products need no clamp: the
/// largest, `A · fl32(1 / sf)` (exact in f64), is below the format's overflow threshold.
/// And `deepgemm_ue8m0_scale`: the least power of two at or above that `sf`, and, for
/// every `amax` from `1e-4` up, the exact recipe's UE8M0 scale (`ue8m0_scale_for`).
/// The message names the reference's values.
fn check_deepgemm_scales(format: Fp8Format, amaxes: impl Iterator<Item = u32>) -> Result<(), String> {
    let r = scaled::divide(1f32.to_bits(), format.max_finite().to_bits()).expect("1 / max is finite");
    let clamp = 1e-4f32.to_bits();
    let overflow = match format {
        Fp8Format::E4M3 => 464.0,
        Fp8Format::E5M2 => 61440.0,
    };
    for amax in amaxes {
        let sf = fp8_block::deepgemm_scale(f32::from_bits(amax), format);
        let inverse = 1.0 / sf;
        let largest = f64::from(f32::from_bits(amax.max(clamp))) * f64::from(inverse);
        if largest >= overflow {
            return Err(format!("{format:?}: amax {amax:#010x}: the largest product {largest:e} would overflow"));
        }
        let ue8m0 = fp8_block::deepgemm_ue8m0_scale(f32::from_bits(amax), format);
        if !is_least_power_of_two_at_least(sf, ue8m0) {
            return Err(format!("{format:?}: amax {amax:#010x}: UE8M0 {ue8m0:e} is not sf {sf:e} rounded up"));
        }
        let exact = fp8_block::ue8m0_scale_for(f32::from_bits(amax), format);
        if amax >= clamp && ue8m0 != exact {
            return Err(format!("{format:?}: amax {amax:#010x}: UE8M0 {ue8m0:e}, the exact recipe's {exact:e}"));
        }
        let (sf, inverse) = (sf.to_bits(), inverse.to_bits());
        if !scaled::is_rounded_product(amax.max(clamp), r, sf)
            || !scaled::is_rounded_quotient(1f32.to_bits(), sf, inverse)
        {
            let want = scaled::deepgemm_scale(reference_format(format), amax);
            return Err(format!(
                "{format:?}: amax {amax:#010x}: sf {sf:#010x} (exact {want:#010x}), 1/sf {inverse:#010x} (exact {:#010x})",
                reference_inverse(want)
            ));
        }
    }
    Ok(())
}

#[test]
fn deepgemm_scales_equal_the_recipe_on_integers_on_a_sample() {
    for format in Fp8Format::ALL {
        let finite = || sampled_f32().filter(|&x| x < 0x7F80_0000);
        // The checks by multiplication agree with the reference's division and rounding.
        for amax in finite() {
            let sf = scaled::deepgemm_scale(reference_format(format), amax);
            let r = scaled::divide(1f32.to_bits(), format.max_finite().to_bits()).unwrap();
            assert!(scaled::is_rounded_product(amax.max(1e-4f32.to_bits()), r, sf), "{format:?} {amax:#x}");
            assert!(!scaled::is_rounded_product(amax.max(1e-4f32.to_bits()), r, sf + 1), "{format:?} {amax:#x}");
            assert_eq!(fp8_block::deepgemm_scale(f32::from_bits(amax), format).to_bits(), sf, "{format:?} {amax:#x}");
        }
        check_deepgemm_scales(format, finite()).unwrap_or_else(|m| panic!("{m}"));
        // Around the clamp: below it every amax gives the clamp's scale.
        let clamp = 1e-4f32.to_bits();
        check_deepgemm_scales(format, clamp - 5000..clamp + 5000).unwrap_or_else(|m| panic!("{m}"));
        let at_clamp = fp8_block::deepgemm_scale(1e-4, format);
        assert_eq!(fp8_block::deepgemm_scale(0.0, format), at_clamp);
        assert_eq!(fp8_block::deepgemm_scale(f32::from_bits(1), format), at_clamp);
        // UE8M0: the definition by search and the check by inequalities agree, and below
        // the clamp (an all-zero block too) every amax gets the clamp's power of two.
        for amax in finite() {
            let d = f32::from_bits(reference_deepgemm_ue8m0_scale(format, amax));
            assert!(is_least_power_of_two_at_least(fp8_block::deepgemm_scale(f32::from_bits(amax), format), d));
            assert_eq!(fp8_block::deepgemm_ue8m0_scale(f32::from_bits(amax), format), d, "{format:?} {amax:#x}");
        }
        let ue8m0 = |amax: f32| fp8_block::deepgemm_ue8m0_scale(amax, format);
        let least = match format {
            Fp8Format::E4M3 => 2f32.powi(-22),
            Fp8Format::E5M2 => 2f32.powi(-29),
        };
        assert_eq!((ue8m0(0.0), ue8m0(f32::from_bits(1)), ue8m0(1e-4)), (least, least, least), "{format:?}");
        assert_eq!(ue8m0(format.max_finite()), 1.0, "{format:?}: amax = max gives sf = 1 exactly");
    }
    // Where a mutation would show: the bit rule rounds sf up from one ulp above a power of
    // two, where ceil(log2(sf)) in f32 (DeepGEMM before 7f2a703) stays at that power.
    // sf = 2^-10 · (1 + 2^-23): log2 is -10 + 1.7e-7, which f32 rounds to -10.
    let amax = f32::from_bits(0.4375f32.to_bits() + 1);
    assert_eq!(fp8_block::deepgemm_scale(amax, Fp8Format::E4M3).to_bits(), 2f32.powi(-10).to_bits() + 1);
    assert_eq!(fp8_block::deepgemm_ue8m0_scale(amax, Fp8Format::E4M3), 2f32.powi(-9));
    assert!(is_least_power_of_two_at_least(1.0, 1.0) && !is_least_power_of_two_at_least(1.0, 2.0));
    assert!(!is_least_power_of_two_at_least(1.5, 1.0) && !is_least_power_of_two_at_least(1.5, 3.0));
}

/// E4M3, the format DeepGEMM's recipe makes (`cast` takes it for no other); E5M2's
/// scale is checked on the sample.
#[test]
#[ignore = "2^31 inputs"]
fn deepgemm_scales_equal_the_recipe_on_integers_on_every_finite_amax() {
    check_all(0..0x7F80_0000 >> 16, |block| {
        let first = (block << 16) as u32;
        check_deepgemm_scales(Fp8Format::E4M3, first..first + (1 << 16))
    })
    .unwrap_or_else(|m| panic!("{m}"));
}

/// A `rows × cols` tensor whose magnitudes span many binades, row by row (so the blocks'
/// scales differ), from a fixed seed.
fn tensor(rows: usize, cols: usize, seed: u64) -> Vec<u32> {
    let mut state = seed;
    (0..rows * cols)
        .map(|i| {
            let row = (i / cols) as i32;
            let mantissa = (splitmix(&mut state) >> 41) as f32 / (1u64 << 23) as f32 - 0.5;
            (mantissa * 2f32.powi(row % 40 - 20)).to_bits()
        })
        .collect()
}

/// The reference's scales and codes of `x`, block by block: each block's `amax` by a loop
/// of its own over its finite values (`f32::abs`, not `shared`'s magnitude bits).
fn reference_blocks(
    recipe: Recipe,
    x: &[u32],
    rows: usize,
    cols: usize,
    (h, w): (usize, usize),
    format: Fp8Format,
) -> (Vec<u8>, Vec<u32>) {
    let (block_rows, block_cols) = (rows.div_ceil(h), cols.div_ceil(w));
    let mut q = vec![0u8; rows * cols];
    let mut d = vec![0u32; block_rows * block_cols];
    for (b, scale) in d.iter_mut().enumerate() {
        let (rs, cs) = ((b / block_cols) * h, (b % block_cols) * w);
        let indices = || (rs..rows.min(rs + h)).flat_map(move |r| (cs..cols.min(cs + w)).map(move |c| r * cols + c));
        let amax =
            indices().map(|i| f32::from_bits(x[i])).filter(|v| v.is_finite()).fold(0.0f32, |a, v| a.max(v.abs()));
        let reference = reference_format(format);
        *scale = match recipe {
            Recipe::Exact => scaled::block_dequant_scale(reference, amax.to_bits()),
            Recipe::DeepGemm => reference_deepgemm_scale(format, amax.to_bits()),
            Recipe::DeepGemmUe8m0 => reference_deepgemm_ue8m0_scale(format, amax.to_bits()),
            Recipe::ExactUe8m0 => reference_ue8m0_scale(format, amax.to_bits()),
            Recipe::ExactBf16 => reference_bf16_scale(format, amax.to_bits()),
            Recipe::CompressedTensors(weights) => {
                scaled::compressed_tensors_scale(reference, amax.to_bits(), weights == WeightDtype::Bf16)
            }
        };
        for i in indices() {
            q[i] = match recipe {
                Recipe::Exact | Recipe::ExactUe8m0 | Recipe::ExactBf16 => {
                    scaled::quantize_quotient(reference, x[i], *scale)
                }
                Recipe::DeepGemm | Recipe::DeepGemmUe8m0 => scaled::deepgemm_quantize(reference, x[i], *scale),
                Recipe::CompressedTensors(weights) => {
                    scaled::compressed_tensors_quantize(reference, x[i], *scale, weights == WeightDtype::Bf16)
                }
            };
        }
    }
    (q, d)
}

#[test]
fn whole_tensors_equal_the_reference_block_by_block() {
    let levels = levels();
    let (rows, cols) = (300, 260);
    let mut x = tensor(rows, cols, 0xB10C);
    // An all-zero block (the second tile of the first tile row), a NaN in a later block
    // and an infinity in an earlier one: the first non-finite value in `x`'s order.
    for r in 0..128 {
        x[r * cols + 128..r * cols + 256].fill(0);
    }
    // A NaN in a later tile row; in the first tile row, an infinity in the first tile
    // (row 9) and another in the last tile (row 5), which the loop meets later but which
    // comes first in `x`: the first non-finite value in `x`'s order is reported.
    let (nan_at, inf_at, later_inf_at) = (200 * cols + 7, 5 * cols + 259, 9 * cols + 3);
    x[nan_at] = 0x7FC0_0000;
    x[inf_at] = f32::NEG_INFINITY.to_bits();
    x[later_inf_at] = f32::INFINITY.to_bits();
    for (blocks, extent) in
        [(Blocks::TILE_128, (128, 128)), (Blocks::PerRow, (1, cols)), (Blocks::Tiles { rows: 1, cols: 32 }, (1, 32))]
    {
        for (format, recipe) in Fp8Format::ALL.into_iter().flat_map(|f| Recipe::ALL.map(|r| (f, r))) {
            // compressed-tensors' bfloat16 recipe takes bfloat16 weights: `x` rounded to
            // bfloat16 by truncation (its NaN and infinities stay so).
            let x: Vec<u32> = match recipe {
                Recipe::CompressedTensors(WeightDtype::Bf16) => x.iter().map(|&v| v & 0xFFFF_0000).collect(),
                _ => x.clone(),
            };
            let (block_rows, block_cols) = blocks.scale_shape(rows, cols).expect("non-empty tiles");
            let (want_q, want_d) = reference_blocks(recipe, &x, rows, cols, extent, format);
            // `shared`'s entry (compiled for the baseline target: the kernels' CPU twin),
            // then `bitexact cast`'s, compiled for each CPU level this machine has.
            let runs = [None].into_iter().chain(levels.iter().map(Some));
            for level in runs {
                let mut q = vec![0u8; rows * cols];
                let mut d = vec![0f32; block_rows * block_cols];
                let first = match (level, recipe) {
                    (Some(&level), _) => {
                        cpu_fp8::quantize_blocks_at(level, recipe, &x, rows, cols, blocks, format, &mut q, &mut d)
                    }
                    (None, Recipe::Exact) => fp8_block::quantize_blocks(&x, rows, cols, blocks, format, &mut q, &mut d),
                    (None, _) => {
                        fp8_block::quantize_blocks_with(recipe, &x, rows, cols, blocks, format, &mut q, &mut d)
                    }
                };
                let at = level.map_or("shared".to_string(), |level| format!("level {level}"));
                assert_eq!(first, Ok(Some(inf_at)), "{at} {blocks:?} {format:?}");
                let d_bits: Vec<u32> = d.iter().map(|v| v.to_bits()).collect();
                assert_eq!(d_bits, want_d, "{at} {blocks:?} {format:?} {recipe:?}: scales");
                if let Some(i) = (0..q.len()).find(|&i| q[i] != want_q[i]) {
                    panic!(
                        "{at} {blocks:?} {format:?} {recipe:?}: element {i} ({:#010x}): {:#04x}, exact {:#04x}",
                        x[i], q[i], want_q[i]
                    );
                }
            }
        }
    }
    let (block_rows, block_cols) = Blocks::TILE_128.scale_shape(rows, cols).expect("non-empty tiles");
    assert_eq!((block_rows, block_cols), (3, 3));
    assert_eq!(Blocks::PerRow.scale_shape(rows, cols), Some((300, 1)));
}

#[test]
fn an_all_zero_block_has_scale_one_and_wrong_lengths_and_empty_tiles_are_errors() {
    let x = vec![0u32; 6];
    let (mut q, mut d) = (vec![0xAAu8; 6], vec![0f32; 1]);
    assert_eq!(fp8_block::quantize_blocks(&x, 2, 3, Blocks::TILE_128, Fp8Format::E4M3, &mut q, &mut d), Ok(None));
    assert_eq!((q, d), (vec![0u8; 6], vec![1.0f32]));
    let empty = Blocks::Tiles { rows: 0, cols: 4 };
    assert_eq!(empty.scale_shape(2, 3), None);
    let (mut q, mut d) = (vec![0u8; 6], vec![0f32; 1]);
    assert_eq!(
        fp8_block::quantize_blocks(&x, 2, 3, empty, Fp8Format::E4M3, &mut q, &mut d),
        Err(BlockError::EmptyTile)
    );
    // No elements: every block's amax is 0.
    let mut d = vec![0f32; 2];
    assert_eq!(fp8_block::quantize_blocks(&[], 2, 0, Blocks::PerRow, Fp8Format::E4M3, &mut [], &mut d), Ok(None));
    assert_eq!(d, [1.0, 1.0]);
    let (mut q, mut d) = (vec![0u8; 6], vec![0f32; 1]);
    assert_eq!(
        fp8_block::quantize_blocks(&x[..5], 2, 3, Blocks::TILE_128, Fp8Format::E4M3, &mut q, &mut d),
        Err(BlockError::Length { slice: "x", expected: 6 })
    );
    assert_eq!(
        fp8_block::quantize_blocks(&x, usize::MAX, 3, Blocks::PerRow, Fp8Format::E4M3, &mut q, &mut d),
        Err(BlockError::TooLarge)
    );
    let mut short = vec![0u8; 5];
    assert_eq!(
        fp8_block::quantize_blocks(&x, 2, 3, Blocks::PerRow, Fp8Format::E4M3, &mut short, &mut [0.0; 2]),
        Err(BlockError::Length { slice: "q", expected: 6 })
    );
    assert_eq!(
        fp8_block::quantize_blocks(&x, 2, 3, Blocks::PerRow, Fp8Format::E4M3, &mut q, &mut d),
        Err(BlockError::Length { slice: "d", expected: 2 })
    );
}

// ---------------------------------------------------------------------------------------
// compressed-tensors' recipe.

/// The reference's format and whether the weights are bfloat16.
fn ct_reference(format: Fp8Format, weights: WeightDtype) -> (NarrowFormat, bool) {
    (reference_format(format), weights == WeightDtype::Bf16)
}

/// `compressed_tensors_scale` of `amax` against the reference's steps.
fn check_ct_scale(format: Fp8Format, weights: WeightDtype, amax: u32) -> Result<(), String> {
    let (reference, bf16) = ct_reference(format, weights);
    let got = fp8_block::compressed_tensors_scale(f32::from_bits(amax), format, weights).to_bits();
    let want = scaled::compressed_tensors_scale(reference, amax, bf16);
    if got == want {
        Ok(())
    } else {
        Err(format!("{format:?} {weights:?}: amax {amax:#010x}: scale {got:#010x}, the recipe's {want:#010x}"))
    }
}

/// `compressed_tensors_quantize` of `x` at `s`, and its vector loop's form
/// `compressed_tensors_quantize_by_addition`, against `want`.
///
/// Both forms are called directly and compared at once, as in [`check_quotient`].
#[inline(always)]
fn check_ct_code(format: Fp8Format, weights: WeightDtype, s: f32, x: u32, want: u8) -> Result<(), String> {
    let codes = [
        fp8_block::compressed_tensors_quantize(x, s, format, weights),
        fp8_block::compressed_tensors_quantize_by_addition(x, s, format, weights),
    ];
    if codes == [want; 2] {
        return Ok(());
    }
    for (form, got) in ["compressed_tensors_quantize", "by addition"].into_iter().zip(codes) {
        if got != want {
            return Err(format!(
                "{format:?} {weights:?} {form}: x = {x:#010x} ({:e}), s = {s:e} ({:#010x}): got {got:#04x}, the recipe's {want:#04x}",
                f32::from_bits(x),
                s.to_bits()
            ));
        }
    }
    Ok(())
}

/// `out[i] = f(first + i)` for a function `f` that does not decrease over the range: `f`
/// is evaluated at the ends of each piece, and a piece whose ends agree is filled.
fn fill_monotone(first: u32, out: &mut [u8], f: &impl Fn(u32) -> u8) {
    let Some(last) = out.len().checked_sub(1) else { return };
    let (low, high) = (f(first), f(first + last as u32));
    if low == high {
        out.fill(low);
    } else if out.len() <= 2 {
        out[0] = low;
        out[last] = high;
    } else {
        let (left, right) = out.split_at_mut(out.len() / 2);
        fill_monotone(first, left, f);
        fill_monotone(first + left.len() as u32, right, f);
    }
}

#[test]
fn compressed_tensors_bf16_scales_equal_the_recipe_on_every_bf16_amax() {
    for format in Fp8Format::ALL {
        for amax in (0..=0x7F7Fu32).map(|b| b << 16) {
            check_ct_scale(format, WeightDtype::Bf16, amax).unwrap_or_else(|m| panic!("{m}"));
        }
    }
    // An all-zero block, and one whose scale underflows, take bfloat16's eps.
    assert_eq!(fp8_block::compressed_tensors_scale(0.0, Fp8Format::E4M3, WeightDtype::Bf16), 2f32.powi(-7));
    assert_eq!(
        fp8_block::compressed_tensors_scale(f32::from_bits(1 << 16), Fp8Format::E4M3, WeightDtype::Bf16),
        2f32.powi(-7)
    );
}

/// Every bfloat16 weight (both signs, infinities included) at every `step`th positive
/// finite bfloat16 scale, both formats. The reference is monotone in the magnitude, so
/// it is computed where it changes.
fn ct_bf16_codes_at_every(step: usize) {
    for format in Fp8Format::ALL {
        let (reference, _) = ct_reference(format, WeightDtype::Bf16);
        check_all(0..0x7F7F_u64.div_ceil(step as u64), |k| {
            let scale = 1 + k * step as u64;
            let s = (scale as u32) << 16;
            let mut codes = vec![0u8; 0x7F81];
            fill_monotone(0, &mut codes, &|m| scaled::compressed_tensors_quantize(reference, m << 16, s, true));
            (0..=0x7F80u32).zip(codes).try_for_each(|(m, code)| {
                let (x, s) = (m << 16, f32::from_bits(s));
                check_ct_code(format, WeightDtype::Bf16, s, x, code)?;
                check_ct_code(format, WeightDtype::Bf16, s, x | SIGN, code | 0x80)
            })
        })
        .unwrap_or_else(|m| panic!("{m}"));
    }
}

#[test]
fn compressed_tensors_bf16_codes_equal_the_recipe_on_every_bf16_weight_at_a_sample_of_scales() {
    ct_bf16_codes_at_every(257);
}

/// The whole domain of compressed-tensors' bfloat16 codes: every bfloat16 weight at every
/// positive finite bfloat16 scale.
#[test]
#[ignore = "2^31 pairs"]
fn compressed_tensors_bf16_codes_equal_the_recipe_on_every_bf16_weight_at_every_bf16_scale() {
    ct_bf16_codes_at_every(1);
}

#[test]
fn compressed_tensors_f32_scales_equal_the_recipe_on_a_sample() {
    for format in Fp8Format::ALL {
        for amax in sampled_f32().filter(|&x| x < 0x7F80_0000) {
            check_ct_scale(format, WeightDtype::F32, amax).unwrap_or_else(|m| panic!("{m}"));
        }
    }
    assert_eq!(fp8_block::compressed_tensors_scale(0.0, Fp8Format::E4M3, WeightDtype::F32), f32::EPSILON);
}

/// Every finite f32 amax, E4M3 (the format compressed-tensors' FP8 presets make): the
/// scale is `fl32(amax / 448)`, checked by multiplication against the midpoints around
/// it (`scaled::is_rounded_quotient`), or f32's eps where that quotient is 0.
#[test]
#[ignore = "2^31 inputs"]
fn compressed_tensors_f32_scales_equal_the_recipe_on_every_finite_amax() {
    let (max, eps) = (448f32.to_bits(), f32::EPSILON.to_bits());
    check_all(0..0x7F80_0000 >> 16, |block| {
        let first = (block << 16) as u32;
        (first..first + (1 << 16)).try_for_each(|amax| {
            let s = fp8_block::compressed_tensors_scale(f32::from_bits(amax), Fp8Format::E4M3, WeightDtype::F32);
            let s = s.to_bits();
            let quotient_is_zero = amax == 0 || scaled::is_rounded_quotient(amax, max, 0);
            let ok = if quotient_is_zero { s == eps } else { scaled::is_rounded_quotient(amax, max, s) };
            match ok {
                true => Ok(()),
                false => {
                    let want = scaled::compressed_tensors_scale(FP8_E4M3, amax, false);
                    Err(format!("amax {amax:#010x}: scale {s:#010x}, not fl32(amax / 448) (the recipe's {want:#010x})"))
                }
            }
        })
    })
    .unwrap_or_else(|m| panic!("{m}"));
}

#[test]
fn compressed_tensors_f32_codes_equal_the_recipe_on_a_sample_at_many_scales() {
    for format in Fp8Format::ALL {
        let (reference, _) = ct_reference(format, WeightDtype::F32);
        let mut scales = scales(format);
        scales.extend(
            [0.0123f32, 3.7, 1e-30, 1e-42].map(|a| fp8_block::compressed_tensors_scale(a, format, WeightDtype::F32)),
        );
        for s in scales {
            for x in sampled_f32() {
                let want = scaled::compressed_tensors_quantize(reference, x, s.to_bits(), false);
                check_ct_code(format, WeightDtype::F32, s, x, want).unwrap_or_else(|m| panic!("{m}"));
            }
        }
    }
}

/// Every f32 weight at one scale that is not a power of two, E4M3; the reference is
/// monotone in the magnitude, so it is computed where it changes.
#[test]
#[ignore = "2^32 inputs"]
fn compressed_tensors_f32_codes_equal_the_recipe_on_every_f32_at_a_scale_that_is_not_a_power_of_two() {
    let format = Fp8Format::E4M3;
    let s = fp8_block::compressed_tensors_scale(0.0123, format, WeightDtype::F32);
    let (reference, _) = ct_reference(format, WeightDtype::F32);
    check_all(0..1 << 15, |block| {
        let mut codes = vec![0; 1 << 16];
        fill_f32_monotone(block << 16, &mut codes, |m| {
            scaled::compressed_tensors_quantize(reference, m, s.to_bits(), false)
        });
        ((block as u32) << 16..((block + 1) << 16) as u32).zip(codes).try_for_each(|(m, code)| {
            check_ct_code(format, WeightDtype::F32, s, m, code)?;
            check_ct_code(format, WeightDtype::F32, s, m | SIGN, code | 0x80)
        })
    })
    .unwrap_or_else(|m| panic!("{m}"));
}

// ---------------------------------------------------------------------------------------
// The exact recipe with a bfloat16 scale.

/// bfloat16's least positive value, `2^-133`, and the step between neighbouring positive
/// bfloat16 values, in f32 bits.
const BF16_MIN: u32 = 0x0001_0000;
const BF16_STEP: u32 = 0x0001_0000;

/// Whether `d` (f32 bits) is the bfloat16 scale of a block whose largest magnitude is
/// `amax` (f32 bits, finite): 1 for `amax = 0`; otherwise a positive bfloat16 value (its
/// low 16 bits 0) with `amax ≤ max · d`, and `d = 2^-133` or `amax > max · d'` for the
/// bfloat16 `d'` below it (the least such). Every product is exact in f64.
fn is_bf16_scale(format: Fp8Format, amax: u32, d: u32) -> bool {
    if amax & 0x7FFF_FFFF == 0 {
        return d == 1f32.to_bits();
    }
    let (amax, max) = (f64::from(f32::from_bits(amax & 0x7FFF_FFFF)), f64::from(format.max_finite()));
    let value = |bits: u32| f64::from(f32::from_bits(bits));
    d & 0xFFFF == 0
        && (BF16_MIN..0x7F80_0000).contains(&d)
        && amax <= max * value(d)
        && (d == BF16_MIN || amax > max * value(d - BF16_STEP))
}

/// The bfloat16 scale of `amax` (f32 bits, finite) by its definition: the least positive
/// bfloat16 `d` with `amax ≤ max · d` (exact in f64), found by bisection over the
/// encodings; 1 for `amax = 0`.
fn reference_bf16_scale(format: Fp8Format, amax: u32) -> u32 {
    if amax & 0x7FFF_FFFF == 0 {
        return 1f32.to_bits();
    }
    let (amax, max) = (f64::from(f32::from_bits(amax & 0x7FFF_FFFF)), f64::from(format.max_finite()));
    let fits = |b: u32| amax <= max * f64::from(f32::from_bits(b << 16));
    // The least encoding in 1 ..= 0x7F7F that fits (0x7F7F, bfloat16's largest, always does).
    let (mut low, mut high) = (1u32, 0x7F7F);
    while low < high {
        let mid = (low + high) / 2;
        if fits(mid) { high = mid } else { low = mid + 1 }
    }
    low << 16
}

#[test]
fn the_bf16_scale_is_the_least_bf16_that_fits_on_a_sample() {
    for format in Fp8Format::ALL {
        for amax in sampled_f32().filter(|&x| x & 0x7FFF_FFFF < 0x7F80_0000).map(|x| x & 0x7FFF_FFFF) {
            let d = fp8_block::bf16_scale_for(f32::from_bits(amax), format).to_bits();
            assert_eq!(d, reference_bf16_scale(format, amax), "{format:?}: amax {amax:#010x}");
            assert!(is_bf16_scale(format, amax, d), "{format:?}: amax {amax:#010x}");
        }
    }
    // 448 fits 448 · 1; one ulp above, the next bfloat16 up; an amax past 448 · 2^-133.
    assert_eq!(fp8_block::bf16_scale_for(448.0, Fp8Format::E4M3), 1.0);
    assert_eq!(fp8_block::bf16_scale_for(f32::from_bits(448f32.to_bits() + 1), Fp8Format::E4M3), 1.0078125);
    assert_eq!(fp8_block::bf16_scale_for(f32::from_bits(1), Fp8Format::E4M3).to_bits(), BF16_MIN);
    assert_eq!(fp8_block::bf16_scale_for(0.0, Fp8Format::E5M2), 1.0);
}

#[test]
#[ignore = "2^31 inputs per format"]
fn the_bf16_scale_is_the_least_bf16_that_fits_on_every_finite_amax() {
    for format in Fp8Format::ALL {
        check_all(0..0x7F80_0000 >> 16, |block| {
            let first = (block << 16) as u32;
            (first..first + (1 << 16)).try_for_each(|amax| {
                let d = fp8_block::bf16_scale_for(f32::from_bits(amax), format).to_bits();
                if is_bf16_scale(format, amax, d) {
                    Ok(())
                } else {
                    let want = reference_bf16_scale(format, amax);
                    Err(format!(
                        "{format:?}: amax {amax:#010x}: d {d:#010x}, the least bfloat16 that fits {want:#010x}"
                    ))
                }
            })
        })
        .unwrap_or_else(|m| panic!("{m}"));
    }
}
