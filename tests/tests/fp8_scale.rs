//! Per-tensor scaled FP8 (`shared::fp8_scale`) against the rational reference on integers
//! (`conformance::reference::scaled`), and the CPU's loops
//! (`bitexact::cpu::fp8_scale`) at every level this machine has.
//!
//! With `--ignored`, on every input of each domain:
//! - at a power-of-two scale and at a scale that is not one, for E4M3 and E5M2 (the proven
//!   scales), every f32 input in one walk: the reference of the quantisation once and in
//!   two steps, for each magnitude (computed where it changes: it is monotone in the
//!   magnitude); against it, `quantize` on the magnitude with either sign, and
//!   `quantize_at` at every level, both roundings;
//! - at scale 1 (where two-step is the plain conversion), `quantize_at` at every level
//!   against the reference on every f32 (computed where it changes), for E4M3 and E5M2;
//! - the scale `fl32(max / amax)` on every positive finite amax and the dequantisation
//!   scale `fl32(1 / s)` on every positive finite s;
//! - the in-binade rounding (`shared::narrow::round_magnitude_in_binade`) on every
//!   magnitude up to its limit, against the reference's two-step rounding at scale 1.
//!
//! In the quick run, the reference checks on a sample of every binade at many scales, and
//! the fast forms (`quantize_slice`) and every level against `quantize` on that sample and
//! around the FP8 grid at many scales. Plus, for publication, how often the two roundings
//! differ on tensors that look like weights.

use bitexact::cpu::Level;
use bitexact::cpu::fp8_scale as cpu_fp8;
use bitexact::verify::reference::{FP8_E4M3, FP8_E5M2, NarrowFormat, fill_f32_monotone};
use conformance::reference::scaled;
use conformance::{check_all, splitmix};
use shared::fp8_scale::{self, Fp8Format, Rounding};

fn reference_format(format: Fp8Format) -> NarrowFormat {
    match format {
        Fp8Format::E4M3 => FP8_E4M3,
        Fp8Format::E5M2 => FP8_E5M2,
    }
}

/// The two roundings, in the order the checks take them and the expected codes come in.
const ROUNDINGS: [Rounding; 2] = [Rounding::Once, Rounding::TwoStep];

/// An f32's sign bit.
const SIGN: u32 = 0x8000_0000;

/// The reference's code for the f32 magnitude `abs` (sign bit clear) at scale `s`.
#[inline(always)]
fn exact_magnitude(format: Fp8Format, rounding: Rounding, s: f32, abs: u32) -> u8 {
    let reference = reference_format(format);
    match rounding {
        Rounding::Once => scaled::quantize_once(reference, abs, s.to_bits()),
        Rounding::TwoStep => scaled::quantize_two_step(reference, abs, s.to_bits()),
    }
}

/// The exact code of `x` from that of its magnitude, `code`: `x · s` with `s > 0` has
/// `x`'s sign, and rounding to nearest even is symmetric, so the exact result of `-x` is
/// that of `x` with the sign bit set.
fn with_sign(code: u8, x: u32) -> u8 {
    code | ((x >> 24) as u8 & 0x80)
}

/// Both roundings of `x` at scale `s` against the reference.
fn check_quantize(format: Fp8Format, s: f32, x: u32) -> Result<(), String> {
    check_magnitude(format, s, x, &[x])
}

/// Both roundings of each input of `signed` (the magnitude `magnitude` with either sign)
/// at scale `s` against the reference, computed once for the magnitude ([`with_sign`]).
fn check_magnitude(format: Fp8Format, s: f32, magnitude: u32, signed: &[u32]) -> Result<(), String> {
    let abs = magnitude & !SIGN;
    for rounding in ROUNDINGS {
        check_signs(format, s, rounding, exact_magnitude(format, rounding, s, abs), signed)?;
    }
    Ok(())
}

/// `quantize` of each input of `signed` (one magnitude with either sign) at scale `s`
/// against `exact`, the reference's code for the magnitude, with the input's sign.
fn check_signs(format: Fp8Format, s: f32, rounding: Rounding, exact: u8, signed: &[u32]) -> Result<(), String> {
    for &x in signed {
        let got = fp8_scale::quantize(x, s, format, rounding);
        let want = with_sign(exact, x);
        if got != want {
            return Err(format!(
                "{format:?} {rounding:?}: x = {x:#010x} ({}), s = {s:e} ({:#010x}): got {got:#04x}, exact {want:#04x}",
                f32::from_bits(x),
                s.to_bits()
            ));
        }
    }
    Ok(())
}

/// The 2^16 magnitudes of `block` (`block · 2^16 ..`, below 2^31) at scale `s`, each with
/// both signs: the reference's code of each magnitude, for each rounding (computed where
/// it changes); against it `quantize` on
/// each input ([`check_signs`]), then `quantize_at` at every level in `levels` on the
/// block's 2^16 positive inputs and on its 2^16 negative ones ([`check_levels_against`]).
/// The first difference, in hex.
fn check_block(levels: &[Level], format: Fp8Format, s: f32, block: u64) -> Result<(), String> {
    // One loop per format, with the format a constant in it: the reference's roundings
    // are always inlined, so its fields fold (about half the walk's time went to them).
    match format {
        Fp8Format::E4M3 => check_block_in(levels, Fp8Format::E4M3, s, block),
        Fp8Format::E5M2 => check_block_in(levels, Fp8Format::E5M2, s, block),
    }
}

#[inline(always)]
fn check_block_in(levels: &[Level], format: Fp8Format, s: f32, block: u64) -> Result<(), String> {
    let magnitudes: Vec<u32> = (block << 16..(block + 1) << 16).map(|m| m as u32).collect();
    // Both roundings of `m · s` are monotone in the magnitude `m`: the reference is called
    // only where its code changes (`fill_f32_monotone`), and every magnitude gets its code.
    let exact: [Vec<u8>; 2] = ROUNDINGS.map(|rounding| {
        let mut codes = vec![0; magnitudes.len()];
        fill_f32_monotone(block << 16, &mut codes, |m| exact_magnitude(format, rounding, s, m));
        codes
    });
    for (rounding, codes) in ROUNDINGS.into_iter().zip(&exact) {
        // One pass without an early exit, the rounding a constant in it (the format is
        // one already): it vectorises, where a per-element check with its error path was
        // half of the walk's time. The first difference is searched only if there is one.
        let differs = match rounding {
            Rounding::Once => signs_differ(&magnitudes, codes, |x| fp8_scale::quantize(x, s, format, Rounding::Once)),
            Rounding::TwoStep => {
                signs_differ(&magnitudes, codes, |x| fp8_scale::quantize(x, s, format, Rounding::TwoStep))
            }
        };
        if differs {
            for (&m, &code) in magnitudes.iter().zip(codes) {
                check_signs(format, s, rounding, code, &[m, m | SIGN])?;
            }
            unreachable!("{format:?} {rounding:?}: a difference that check_signs does not find");
        }
    }
    for sign in [0, SIGN] {
        let x: Vec<u32> = magnitudes.iter().map(|&m| m | sign).collect();
        let want: [Vec<u8>; 2] =
            exact.each_ref().map(|codes| codes.iter().zip(&x).map(|(&code, &v)| with_sign(code, v)).collect());
        check_levels_against(levels, format, s, &x, &want, "exact")?;
    }
    Ok(())
}

/// Whether `quantize` differs from the reference's `codes` on any magnitude of
/// `magnitudes` or its negative ([`with_sign`]): every element is computed (no early
/// exit), so that the loop vectorises.
#[inline(always)]
fn signs_differ(magnitudes: &[u32], codes: &[u8], quantize: impl Fn(u32) -> u8) -> bool {
    let differences = magnitudes
        .iter()
        .zip(codes)
        .fold(0u8, |acc, (&m, &code)| acc | (quantize(m) ^ code) | (quantize(m | SIGN) ^ with_sign(code, m | SIGN)));
    differences != 0
}

/// Every one of the 2^32 f32 inputs at `s`, in one walk: 2^15 blocks of 2^16 magnitudes,
/// each magnitude with both signs ([`check_block`]), on the levels this machine has.
fn every_f32_at(format: Fp8Format, s: f32) {
    let levels = levels();
    if let Err(message) = check_all(0..1 << 15, |block| check_block(&levels, format, s, block)) {
        panic!("{message}");
    }
}

/// Every 4099th f32 (a prime stride: every binade, both signs, NaNs included) and the
/// encodings around each power of two.
fn sampled_f32() -> impl Iterator<Item = u32> {
    let strided = (0..1u64 << 32).step_by(4099).map(|x| x as u32);
    let edges = (0..256u32).flat_map(|e| (0..8u32).flat_map(move |d| [(e << 23) + d, (e << 23).wrapping_sub(d + 1)]));
    strided.chain(edges.flat_map(|x| [x, x | 0x8000_0000]))
}

/// Scales a per-tensor quantiser meets: powers of two, the scales of typical amax values,
/// of the smallest subnormal (f32::MAX) and of f32::MAX (tiny), and 1.
fn scales(format: Fp8Format) -> Vec<f32> {
    let mut scales = vec![1.0, 2f32.powi(-4), 2f32.powi(3), 2f32.powi(100), 2f32.powi(-120)];
    for amax in [0.0123f32, 3.7, 1.0, 448.0, 1e-30, f32::from_bits(1), f32::MAX, 0.5 + f32::EPSILON] {
        scales.push(fp8_scale::scale_for(amax, format));
    }
    scales
}

#[test]
fn quantize_equals_the_rational_reference_on_a_sample_at_many_scales() {
    for format in Fp8Format::ALL {
        for s in scales(format) {
            for x in sampled_f32() {
                if let Err(message) = check_quantize(format, s, x) {
                    panic!("{message}");
                }
            }
        }
    }
}

// The proven scales. Each walks the 2^32 inputs once, as 2^31 magnitudes with both signs
// against the reference's result for each magnitude and rounding: `quantize` on each input, and
// `cpu::fp8_scale::quantize_at` at every level on each block of 2^16 inputs.
#[test]
#[ignore = "2^32 inputs"]
fn quantize_and_every_cpu_level_e4m3_on_every_f32_at_a_power_of_two_scale() {
    every_f32_at(Fp8Format::E4M3, 2f32.powi(-4));
}

#[test]
#[ignore = "2^32 inputs"]
fn quantize_and_every_cpu_level_e4m3_on_every_f32_at_a_scale_that_is_not_a_power_of_two() {
    every_f32_at(Fp8Format::E4M3, fp8_scale::scale_for(0.0123, Fp8Format::E4M3));
}

#[test]
#[ignore = "2^32 inputs"]
fn quantize_and_every_cpu_level_e5m2_on_every_f32_at_a_power_of_two_scale() {
    every_f32_at(Fp8Format::E5M2, 2f32.powi(3));
}

#[test]
#[ignore = "2^32 inputs"]
fn quantize_and_every_cpu_level_e5m2_on_every_f32_at_a_scale_that_is_not_a_power_of_two() {
    every_f32_at(Fp8Format::E5M2, fp8_scale::scale_for(3.7, Fp8Format::E5M2));
}

/// The scale of `amax` for both formats, and the dequantisation scale of `s = amax`,
/// against the reference's definitions, checked by multiplication
/// (`scaled::is_scale_for`, `is_rounded_quotient`: no division per input); the message
/// names the reference's value, found by its division.
fn check_scale(amax: u32) -> Result<(), String> {
    for format in Fp8Format::ALL {
        let got = fp8_scale::scale_for(f32::from_bits(amax), format).to_bits();
        if !scaled::is_scale_for(reference_format(format), amax, got) {
            let want = scaled::scale_for(reference_format(format), amax);
            return Err(format!("{format:?}: amax = {amax:#010x}: scale {got:#010x}, exact {want:#010x}"));
        }
    }
    let s = f32::from_bits(amax);
    if amax != 0 {
        let got = fp8_scale::dequant_scale(s).to_bits();
        if !scaled::is_rounded_quotient(1.0f32.to_bits(), amax, got) {
            let want = scaled::dequant_scale(amax);
            return Err(format!("s = {amax:#010x}: 1/s {got:#010x}, exact {want:#010x}"));
        }
    }
    Ok(())
}

/// The reference's division and its check by multiplication agree (on the sample).
fn check_scale_reference(amax: u32) {
    for format in Fp8Format::ALL {
        let s = scaled::scale_for(reference_format(format), amax);
        assert!(scaled::is_scale_for(reference_format(format), amax, s), "{format:?} {amax:#x}");
    }
    if amax != 0 {
        assert!(scaled::is_rounded_quotient(1.0f32.to_bits(), amax, scaled::dequant_scale(amax)), "{amax:#x}");
    }
}

#[test]
fn the_scales_equal_the_rational_reference_on_a_sample() {
    for amax in sampled_f32().filter(|&x| x < 0x7F80_0000) {
        check_scale_reference(amax);
        if let Err(message) = check_scale(amax) {
            panic!("{message}");
        }
    }
}

#[test]
#[ignore = "2^31 inputs"]
fn the_scales_equal_the_rational_reference_on_every_positive_finite_f32() {
    if let Err(message) = check_all(0..0x7F80_0000, |x| check_scale(x as u32)) {
        panic!("{message}");
    }
}

#[test]
fn the_scale_follows_its_definition_at_the_edges() {
    assert_eq!(fp8_scale::scale_for(0.0, Fp8Format::E4M3), 1.0);
    assert_eq!(fp8_scale::scale_for(f32::from_bits(1), Fp8Format::E4M3), f32::MAX);
    assert_eq!(fp8_scale::scale_for(448.0, Fp8Format::E4M3), 1.0);
    assert_eq!(fp8_scale::scale_for(57344.0, Fp8Format::E5M2), 1.0);
    // NaN is found by the amax (its magnitude bits exceed infinity's), not dropped.
    assert!(fp8_scale::magnitude_bits(0xFFC0_0000) > fp8_scale::magnitude_bits(f32::INFINITY.to_bits()));
    assert!(fp8_scale::is_nonfinite(0xFF80_0000) && !fp8_scale::is_nonfinite(f32::MAX.to_bits()));
}

/// A uniform f64 in (0, 1).
fn uniform(state: &mut u64) -> f64 {
    ((splitmix(state) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// `n` samples of normal(0, 1) (Box–Muller) and of Student's t with 3 degrees of freedom
/// (a normal over the root of a chi-square/3: heavy tails, like many weight tensors),
/// rounded to f32, from a fixed seed.
fn weight_like(n: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut state = seed;
    let mut normal = || {
        let (u, v) = (uniform(&mut state), uniform(&mut state));
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    };
    let gaussian: Vec<f32> = (0..n).map(|_| normal() as f32).collect();
    let student: Vec<f32> = (0..n)
        .map(|_| {
            let z = normal();
            let chi2: f64 = (0..3).map(|_| normal().powi(2)).sum();
            (z / (chi2 / 3.0).sqrt()) as f32
        })
        .collect();
    (gaussian, student)
}

/// How many elements `once` and `two_step` quantise differently, at the tensor's own
/// per-tensor scale.
fn differing(tensor: &[f32], format: Fp8Format) -> (usize, f32) {
    let amax = tensor.iter().map(|x| fp8_scale::magnitude_bits(x.to_bits())).max().unwrap_or(0);
    let s = fp8_scale::scale_for(f32::from_bits(amax), format);
    let count = tensor
        .iter()
        .filter(|x| {
            let x = x.to_bits();
            fp8_scale::quantize_once(x, s, format) != fp8_scale::quantize_two_step(x, s, format)
        })
        .count();
    (count, s)
}

// Prints the counts that docs/own-kernel.md publishes, checks the first 2^16 elements of
// each tensor against the reference, and that the roundings differ on under 1 in 1000.
#[test]
#[ignore = "2^24-element tensors: run with --ignored --nocapture to see the counts"]
fn how_often_once_and_two_step_differ_on_weight_like_tensors() {
    let n = 1 << 24;
    let (gaussian, student) = weight_like(n, 0x5EED_F8F8);
    for (name, tensor) in [("normal(0, 1)", &gaussian), ("Student t(3)", &student)] {
        for format in Fp8Format::ALL {
            let (count, s) = differing(tensor, format);
            eprintln!("{name}, {format:?}, s = {s:e}: once and two_step differ on {count} of {n} elements");
            assert!(count < n / 1000, "{name} {format:?}: {count}");
            for &x in tensor.iter().take(1 << 16) {
                check_quantize(format, s, x.to_bits()).unwrap_or_else(|m| panic!("{m}"));
            }
        }
    }
}

// The fast forms: `quantize_slice` (round to odd, then the by-addition FP8 rounding)
// against `quantize` (proven above against the reference), bit for bit.

/// Every fast form the CPU runs: each rounding, `Once` with each residual.
const FAST_FORMS: [(Rounding, fp8_scale::Residual); 3] = [
    (Rounding::Once, fp8_scale::Residual::Fma),
    (Rounding::Once, fp8_scale::Residual::F64),
    (Rounding::TwoStep, fp8_scale::Residual::Fma),
];

/// `quantize_slice` of `x` at scale `s` in every fast form against `quantize` per
/// element; the first difference, in hex.
fn check_fast_slice(format: Fp8Format, s: f32, x: &[u32]) -> Result<(), String> {
    let mut q = vec![0u8; x.len()];
    for (rounding, residual) in FAST_FORMS {
        fp8_scale::quantize_slice(x, s, format, rounding, residual, &mut q);
        for (&v, &got) in x.iter().zip(&q) {
            let want = fp8_scale::quantize(v, s, format, rounding);
            if got != want {
                return Err(format!(
                    "{format:?} {rounding:?} {residual:?}: x = {v:#010x} ({}), s = {s:e} ({:#010x}): fast {got:#04x}, quantize {want:#04x}",
                    f32::from_bits(v),
                    s.to_bits()
                ));
            }
        }
    }
    Ok(())
}

/// Inputs whose products fall on and around the FP8 grid at scale `s`: for every value
/// of the format, the midpoint above it and the midpoint past the largest finite one (the
/// saturation boundary), `x = fl32(t / s)` and the 8 f32 on either side, both signs.
/// These are the ties and the near-ties where rounding twice would go wrong.
fn around_the_grid(format: Fp8Format, s: f32) -> Vec<u32> {
    let max_code = match format {
        Fp8Format::E4M3 => shared::fp8::e4m3::MAX_ABS,
        Fp8Format::E5M2 => shared::fp8::e5m2::MAX_FINITE,
    };
    let value = |code: u8| f64::from(f32::from_bits(format.to_f32_bits(code)));
    let mut targets = Vec::new();
    for code in 0..=max_code {
        let next = if code == max_code { 2.0 * value(code) - value(code - 1) } else { value(code + 1) };
        targets.extend([value(code), (value(code) + next) / 2.0]);
    }
    let mut inputs = Vec::new();
    for t in targets {
        let x = (t / f64::from(s)) as f32;
        for d in 0..=16u32 {
            let near = x.to_bits().wrapping_add(d).wrapping_sub(8);
            inputs.extend([near & 0x7FFF_FFFF, near | 0x8000_0000]);
        }
    }
    inputs
}

/// [`scales`] and 64 more, from amax values spread over every binade.
fn many_scales(format: Fp8Format) -> Vec<f32> {
    let mut all = scales(format);
    all.extend(
        (1..=64u32).map(|i| fp8_scale::scale_for(f32::from_bits(i.wrapping_mul(0x01FB_6C53) % 0x7F80_0000), format)),
    );
    all
}

#[test]
fn the_fast_forms_equal_quantize_on_a_sample_and_around_the_grid_at_many_scales() {
    let sample: Vec<u32> = sampled_f32().collect();
    for format in Fp8Format::ALL {
        for s in many_scales(format) {
            let near = around_the_grid(format, s);
            if let Err(message) = check_fast_slice(format, s, &sample).and_then(|()| check_fast_slice(format, s, &near))
            {
                panic!("{message}");
            }
        }
    }
}

use test_fixtures::levels::levels;

/// `cpu::fp8_scale::quantize_at` of `x` at every level in `levels`, both roundings,
/// against `quantize` per element; the first difference, in hex.
fn check_levels(levels: &[Level], format: Fp8Format, s: f32, x: &[u32]) -> Result<(), String> {
    let want: [Vec<u8>; 2] =
        ROUNDINGS.map(|rounding| x.iter().map(|&v| fp8_scale::quantize(v, s, format, rounding)).collect());
    check_levels_against(levels, format, s, x, &want, "quantize")
}

/// `cpu::fp8_scale::quantize_at` of `x` at every level in `levels`, each rounding of
/// [`ROUNDINGS`], against the codes `want` holds for that rounding (`what` names where
/// they come from); the first difference, in hex. The output starts one byte past a
/// cache line, so that the loop's head (before the line) runs too.
fn check_levels_against(
    levels: &[Level],
    format: Fp8Format,
    s: f32,
    x: &[u32],
    want: &[Vec<u8>; 2],
    what: &str,
) -> Result<(), String> {
    let mut buffer = vec![0u8; x.len() + 128];
    let start = buffer.as_ptr().align_offset(64) + 1;
    for (rounding, want) in ROUNDINGS.into_iter().zip(want) {
        for &level in levels {
            let q = &mut buffer[start..start + x.len()];
            // Each element first unlike its wanted code, so that one a level leaves
            // unwritten shows (the buffer serves every level and both roundings).
            q.iter_mut().zip(want).for_each(|(q, &w)| *q = !w);
            cpu_fp8::quantize_at(level, x, s, format, rounding, q);
            // One comparison of the slices (vectorised), then the index only where they
            // differ: an element-by-element search here was a sixth of the walks' time.
            if let Some(i) = (q != &want[..]).then(|| (0..x.len()).find(|&i| q[i] != want[i])).flatten() {
                return Err(format!(
                    "{level} {format:?} {rounding:?}: x = {:#010x} ({}), s = {s:e} ({:#010x}): got {:#04x}, {what} {:#04x}",
                    x[i],
                    f32::from_bits(x[i]),
                    s.to_bits(),
                    q[i],
                    want[i]
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn every_cpu_level_quantizes_as_quantize_on_a_sample_at_many_scales() {
    let levels = levels();
    let sample: Vec<u32> = sampled_f32().collect();
    for format in Fp8Format::ALL {
        for s in many_scales(format) {
            let near = around_the_grid(format, s);
            // An odd length, so that the vector loops' tails run.
            let result = check_levels(&levels, format, s, &sample[..(sample.len() - 2) | 1])
                .and_then(|()| check_levels(&levels, format, s, &near));
            if let Err(message) = result {
                panic!("{message}");
            }
        }
    }
}

#[test]
fn every_cpu_level_finds_the_finite_amax_and_the_first_non_finite_value() {
    let sample: Vec<u32> = sampled_f32().collect();
    let finite: Vec<u32> = sample.iter().copied().filter(|&v| !fp8_scale::is_nonfinite(v)).collect();
    let want_max = |x: &[u32]| x.iter().filter(|&&v| !fp8_scale::is_nonfinite(v)).map(|&v| v & 0x7FFF_FFFF).max();
    for level in levels() {
        assert_eq!(cpu_fp8::amax_at(level, &finite), (want_max(&finite).unwrap_or(0), None), "{level}");
        let first = sample.iter().position(|&v| fp8_scale::is_nonfinite(v));
        assert!(first.is_some());
        assert_eq!(cpu_fp8::amax_at(level, &sample), (want_max(&sample).unwrap_or(0), first), "{level}");
        // A NaN and an infinity late in an otherwise small tensor, and nothing at all.
        let mut late = vec![0x3F80_0000u32; 1001];
        late[997] = 0xFF80_0000;
        late[999] = 0x7FC0_0001;
        assert_eq!(cpu_fp8::amax_at(level, &late), (0x3F80_0000, Some(997)), "{level}");
        assert_eq!(cpu_fp8::amax_at(level, &[]), (0, None), "{level}");
    }
}

/// The CPU loops at every level this machine has, on all 2^32 f32 at `s`, in slices of
/// 2^16 inputs, against the reference.
fn every_f32_levels_at(format: Fp8Format, s: f32) {
    let levels = levels();
    let check = |block: u64| {
        let x: Vec<u32> = (block << 16..(block + 1) << 16).map(|v| v as u32).collect();
        // The reference's code of each input, sign included: monotone on each sign's
        // finite f32s (`with_sign` of a monotone magnitude code), so computed where it
        // changes (`fill_f32_monotone`); NaNs and infinities one by one.
        let want: [Vec<u8>; 2] = ROUNDINGS.map(|rounding| {
            let mut codes = vec![0; x.len()];
            fill_f32_monotone(block << 16, &mut codes, |v| {
                with_sign(exact_magnitude(format, rounding, s, v & !SIGN), v)
            });
            codes
        });
        check_levels_against(&levels, format, s, &x, &want, "exact")
    };
    if let Err(message) = check_all(0..1 << 16, check) {
        panic!("{message}");
    }
}

// Scale 1, where two-step is the plain conversion: every level against the reference on
// every input. (`quantize` itself is walked at the proven scales below.)
#[test]
#[ignore = "2^32 inputs"]
fn every_cpu_level_quantizes_e4m3_exactly_on_every_f32_at_scale_one() {
    every_f32_levels_at(Fp8Format::E4M3, 1.0);
}

#[test]
#[ignore = "2^32 inputs"]
fn every_cpu_level_quantizes_e5m2_exactly_on_every_f32_at_scale_one() {
    every_f32_levels_at(Fp8Format::E5M2, 1.0);
}

/// The rational reference's saturating rounding of the f32 magnitude `abs` (the two-step
/// quantisation at scale 1).
#[inline(always)]
fn exact_in_binade(format: Fp8Format, abs: u32) -> u8 {
    scaled::quantize_two_step(reference_format(format), abs, 1f32.to_bits())
}

/// `round_magnitude_in_binade` (saturated at the largest finite code) of every f32
/// magnitude in `magnitudes`, each with its reference code ([`exact_in_binade`]); the
/// first difference, in hex.
fn check_in_binade(format: Fp8Format, magnitudes: impl Iterator<Item = (u32, u8)>) -> Result<(), String> {
    use shared::narrow::{binade_rounding_limit, round_magnitude_in_binade};
    for (abs, want) in magnitudes {
        let (got, max) = match format {
            Fp8Format::E4M3 => (round_magnitude_in_binade::<4, 3>(abs), shared::fp8::e4m3::MAX_ABS),
            Fp8Format::E5M2 => (round_magnitude_in_binade::<5, 2>(abs), shared::fp8::e5m2::MAX_FINITE),
        };
        let limit = match format {
            Fp8Format::E4M3 => binade_rounding_limit::<4, 3>(),
            Fp8Format::E5M2 => binade_rounding_limit::<5, 2>(),
        };
        if abs > limit || got.min(u32::from(max)) != u32::from(want) {
            return Err(format!(
                "{format:?}: |x| = {abs:#010x} ({}): in binade {got:#x}, exact {want:#04x} (limit {limit:#010x})",
                f32::from_bits(abs)
            ));
        }
    }
    Ok(())
}

#[test]
fn rounding_in_binade_equals_the_reference_on_a_sample_of_every_binade_up_to_its_limit() {
    for (format, limit) in [
        (Fp8Format::E4M3, shared::narrow::binade_rounding_limit::<4, 3>()),
        (Fp8Format::E5M2, shared::narrow::binade_rounding_limit::<5, 2>()),
    ] {
        let strided = (0..=limit).step_by(997);
        let edges = (0..=limit >> 23)
            .flat_map(|e| (0..64u32).flat_map(move |d| [(e << 23) + d, (e << 23).saturating_sub(d + 1)]));
        let magnitudes = strided.chain(edges.filter(|&m| m <= limit)).chain([limit]);
        check_in_binade(format, magnitudes.map(|m| (m, exact_in_binade(format, m)))).unwrap_or_else(|m| panic!("{m}"));
    }
}

#[test]
#[ignore = "2^30 inputs per format"]
fn rounding_in_binade_equals_the_reference_on_every_magnitude_up_to_its_limit() {
    for (format, limit) in [
        (Fp8Format::E4M3, shared::narrow::binade_rounding_limit::<4, 3>()),
        (Fp8Format::E5M2, shared::narrow::binade_rounding_limit::<5, 2>()),
    ] {
        // The reference is monotone in the magnitude: computed where it changes.
        let check = |block: u64| {
            let magnitudes = (block << 16) as u32..((block + 1) << 16).min(u64::from(limit) + 1) as u32;
            let mut want = vec![0; magnitudes.len()];
            fill_f32_monotone(block << 16, &mut want, |m| exact_in_binade(format, m));
            check_in_binade(format, magnitudes.zip(want))
        };
        if let Err(message) = check_all(0..(u64::from(limit) >> 16) + 1, check) {
            panic!("{message}");
        }
    }
}

/// `bitexact cast --scale mx` quantises each 32-value block's elements by
/// `quantize_once_to_odd` at `2^-k` (`shared::mx::inverse_scale`) with the residual the
/// CPU level's loop takes (`shared::mx::quantize_blocks_inline`, compiled per level), the
/// same function and residual as that per-tensor loop: at every level this machine has and
/// every E8M0 scale code (the subnormal `2^-127` and `2^127` among them), that loop against
/// `quantize` per element, and `mx::quantize` (what the MX proofs cover) against
/// `quantize_once` at that `2^-k`, on a sample of every binade, signs and edges included.
#[test]
fn every_level_gives_mx_codes_at_every_scale_code() {
    use shared::mx::{self, ElementFormat};
    let sample: Vec<u32> = sampled_f32().step_by(13).collect();
    let levels = levels();
    for code in 0..shared::e8m0::NAN {
        let s = mx::inverse_scale(code);
        for (format, element) in [(Fp8Format::E4M3, ElementFormat::E4M3), (Fp8Format::E5M2, ElementFormat::E5M2)] {
            check_levels(&levels, format, s, &sample).unwrap_or_else(|m| panic!("scale code {code}: {m}"));
            // Blocks of 32 and a partial one, as cast's loop takes them.
            for block in [&sample[..32], &sample[32..41]] {
                check_levels(&levels, format, s, block).unwrap_or_else(|m| panic!("scale code {code}: {m}"));
            }
            for &x in &sample {
                let (got, want) = (mx::quantize(x, code, element), fp8_scale::quantize_once(x, s, format));
                assert_eq!(got, want, "{format:?} scale code {code}: x = {x:#010x}");
            }
        }
    }
}
