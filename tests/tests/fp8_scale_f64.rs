//! Per-tensor scaled FP8 of **f64** sources (`shared::fp8_scale::*_f64`) against the
//! rational reference on integers (`conformance::reference::scaled::*_f64`), which
//! multiplies and divides the operands' integer significands exactly (77-bit products in
//! a `u128`) and shares nothing with the round-to-odd of `shared`.
//!
//! An f64 input has 2^64 values, so no walk covers them. What is walked instead is where
//! a wrong rounding can happen: for every FP8 value and every midpoint between two (the
//! saturation boundary included), at 90 scales, the f64 inputs whose exact product lands
//! on it and 32 f64 on either side, so the exact product is within 2^-48 (relative) of a
//! tie, above, on and below it; a random sample over every f64 binade with the specials;
//! the scale `fl32(max / amax)` for amax values whose quotient lies on and next to an f32
//! midpoint, on a random sample, and on every f32 amax (`--ignored`: equal to the f32
//! scale, itself proven on every f32).

use bitexact::verify::reference::{FP8_E4M3, FP8_E5M2, NarrowFormat};
use conformance::reference::scaled;
use conformance::{check_all, splitmix};
use shared::fp8_scale::{self, Fp8Format, Rounding};

fn reference_format(format: Fp8Format) -> NarrowFormat {
    match format {
        Fp8Format::E4M3 => FP8_E4M3,
        Fp8Format::E5M2 => FP8_E5M2,
    }
}

/// Both roundings of the f64 `x` (bits) at scale `s` against the reference.
fn check(format: Fp8Format, s: f32, x: u64) -> Result<(), String> {
    let reference = reference_format(format);
    for rounding in [Rounding::Once, Rounding::TwoStep] {
        let want = match rounding {
            Rounding::Once => scaled::quantize_once_f64(reference, x, s.to_bits()),
            Rounding::TwoStep => scaled::quantize_two_step_f64(reference, x, s.to_bits()),
        };
        let got = fp8_scale::quantize_f64(x, s, format, rounding);
        if got != want {
            return Err(format!(
                "{format:?} {rounding:?}: x = {x:#018x} ({:e}), s = {s:e} ({:#010x}): got {got:#04x}, exact {want:#04x}",
                f64::from_bits(x),
                s.to_bits()
            ));
        }
    }
    Ok(())
}

/// Random finite f64 with magnitudes in `2^min_exp .. 2^max_exp`, random signs and
/// mantissas (subnormals where the range reaches them).
fn random_f64(n: usize, min_exp: i32, max_exp: i32, seed: u64) -> Vec<u64> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            let (r, m) = (splitmix(&mut state), splitmix(&mut state));
            let exp = min_exp + (r % (max_exp - min_exp) as u64) as i32;
            let biased = (exp + 1023).max(0) as u64;
            (r >> 63) << 63 | biased << 52 | (m & 0x000F_FFFF_FFFF_FFFF)
        })
        .collect()
}

/// The scales the quantisation is checked at: powers of two, 1, subnormal scales (which
/// an f64 amax past `max · 2^126` gives: down to just above `2^-128`, and the smallest
/// subnormal), and the f64 scales of amax values over every f64 binade up to 2^140
/// (`f32::MAX` for the tiny ones; the scales of the largest are subnormal).
fn scales(format: Fp8Format) -> Vec<f32> {
    let mut all = vec![1.0, 2f32.powi(-4), 2f32.powi(3), 2f32.powi(100), 2f32.powi(-120), f32::MAX];
    all.extend([2f32.powi(-127), 2f32.powi(-128) + f32::from_bits(1), 3.0 * 2f32.powi(-140), f32::from_bits(1)]);
    for amax in [0.0123f64, 3.7, 1.0, 448.0, 1e-30, 1e-300, 1e30, 1e38, 0.1 + 2f64.powi(-40)] {
        all.push(fp8_scale::scale_for_f64(amax, format));
    }
    let mut state = 7u64;
    for _ in 0..75 {
        let amax = f64::from_bits(random_f64(1, -1074, 140, splitmix(&mut state))[0] & 0x7FFF_FFFF_FFFF_FFFF);
        all.push(fp8_scale::scale_for_f64(amax, format));
    }
    all.retain(|s| *s > 0.0);
    all
}

/// For every value of the format and the midpoint above it (past the largest finite:
/// the saturation boundary), `x = fl64(t / s)` and the 32 f64 on either side, both signs:
/// the inputs whose exact product is a tie or within a few f64 ULPs of one.
fn around_the_grid(format: Fp8Format, s: f32) -> Vec<u64> {
    let max_code = match format {
        Fp8Format::E4M3 => shared::fp8::e4m3::MAX_ABS,
        Fp8Format::E5M2 => shared::fp8::e5m2::MAX_FINITE,
    };
    let value = |code: u8| f64::from(f32::from_bits(format.to_f32_bits(code)));
    let mut inputs = Vec::new();
    for code in 0..=max_code {
        let next = if code == max_code { 2.0 * value(code) - value(code - 1) } else { value(code + 1) };
        for t in [value(code), (value(code) + next) / 2.0] {
            let x = (t / f64::from(s)).to_bits();
            for d in 0..=64u64 {
                let near = x.wrapping_add(d).wrapping_sub(32) & 0x7FFF_FFFF_FFFF_FFFF;
                if near < 0x7FF0_0000_0000_0000 {
                    inputs.extend([near, near | 1 << 63]);
                }
            }
        }
    }
    inputs
}

/// ±0, the smallest subnormal, the largest finite, ±inf and NaNs of either sign.
const SPECIALS: [u64; 10] = [
    0,
    1 << 63,
    1,
    0x7FEF_FFFF_FFFF_FFFF,
    0x7FF0_0000_0000_0000,
    0xFFF0_0000_0000_0000,
    0x7FF8_0000_0000_0000,
    0xFFF8_0000_0000_0000,
    0x7FF0_0000_0000_0001,
    0x0010_0000_0000_0000,
];

/// `check(format, s, i)` for both formats and each of their [`scales`] (`i` its index,
/// for seeds), in parallel; panics with the first failure's message.
fn at_every_scale(check: impl Fn(Fp8Format, f32, u64) -> Result<(), String> + Sync) {
    for format in Fp8Format::ALL {
        let scales = scales(format);
        if let Err(message) = check_all(0..scales.len() as u64, |i| check(format, scales[i as usize], i)) {
            panic!("{message}");
        }
    }
}

#[test]
fn quantize_f64_equals_the_rational_reference_around_the_grid_at_many_scales() {
    at_every_scale(|format, s, _| around_the_grid(format, s).into_iter().try_for_each(|x| check(format, s, x)));
}

#[test]
fn quantize_f64_equals_the_rational_reference_on_a_sample_of_every_binade() {
    at_every_scale(|format, s, i| {
        let mut xs = random_f64(4000, -1074, 1024, 100 + i);
        xs.extend(SPECIALS);
        xs.into_iter().try_for_each(|x| check(format, s, x))
    });
}

/// The f64 scale of `amax` (bits, positive finite) against the reference, and its
/// dequantisation scale where the scale is positive.
fn check_scale(format: Fp8Format, amax: u64) -> Result<(), String> {
    let got = fp8_scale::scale_for_f64(f64::from_bits(amax), format);
    let want = scaled::scale_for_f64(reference_format(format), amax);
    if got.to_bits() != want {
        return Err(format!(
            "{format:?}: amax = {amax:#018x} ({:e}): scale {:#010x}, exact {want:#010x}",
            f64::from_bits(amax),
            got.to_bits()
        ));
    }
    if got > 0.0 && fp8_scale::dequant_scale(got).to_bits() != scaled::dequant_scale(want) {
        return Err(format!("{format:?}: s = {want:#010x}: 1/s differs from the reference"));
    }
    Ok(())
}

/// amax values whose quotient `max / amax` lies on an f32 midpoint or next to one: for
/// midpoints `m` (an f32 and half its ULP, f32 subnormals included) in every f32 binade,
/// `fl64(max / m)` and the 16 f64 on either side.
fn amax_near_scale_midpoints(format: Fp8Format) -> Vec<u64> {
    let max = f64::from(format.max_finite());
    let mut state = 11u64;
    let mut out = Vec::new();
    for biased in 0..255u32 {
        for _ in 0..8 {
            let f = biased << 23 | (splitmix(&mut state) as u32 & 0x007F_FFFF);
            let (v, next) = (f64::from(f32::from_bits(f)), f64::from(f32::from_bits(f + 1)));
            let amax = (max / ((v + next) / 2.0)).to_bits();
            out.extend((0..=32u64).map(|d| amax.wrapping_add(d).wrapping_sub(16)));
        }
    }
    out.retain(|&a| a > 0 && a < 0x7FF0_0000_0000_0000);
    out
}

#[test]
fn the_f64_scale_equals_the_rational_reference_near_every_f32_midpoint_and_on_a_sample() {
    for format in Fp8Format::ALL {
        let mut amaxes = amax_near_scale_midpoints(format);
        amaxes.extend(random_f64(200_000, -1074, 1024, 5).into_iter().map(|a| a & 0x7FFF_FFFF_FFFF_FFFF));
        // The edges: 0, the smallest subnormal, the smallest normal, the largest finite,
        // and the amax whose quotient is f32's smallest subnormal, 2^-149, with its
        // neighbours (where the scale becomes 0).
        let tiny = (f64::from(format.max_finite()) * 2f64.powi(149)).to_bits();
        amaxes.extend([0, 1, 0x0010_0000_0000_0000, 0x7FEF_FFFF_FFFF_FFFF]);
        amaxes.extend((0..=8u64).map(|d| tiny + d - 4));
        amaxes.extend((0..=8u64).map(|d| 2 * tiny + d - 4));
        let failure = check_all(0..amaxes.len() as u64, |i| check_scale(format, amaxes[i as usize]));
        if let Err(message) = failure {
            panic!("{message}");
        }
    }
}

#[test]
fn the_f64_scale_follows_its_definition_at_the_edges() {
    let e4m3 = Fp8Format::E4M3;
    assert_eq!(fp8_scale::scale_for_f64(0.0, e4m3), 1.0);
    assert_eq!(fp8_scale::scale_for_f64(f64::from_bits(1), e4m3), f32::MAX);
    assert_eq!(fp8_scale::scale_for_f64(448.0, e4m3), 1.0);
    // 448 · 2^149 gives f32's smallest subnormal; past 2 · 448 · 2^149 the scale is 0,
    // and its dequantisation scale is infinite: `cast` refuses such a tensor.
    assert_eq!(fp8_scale::scale_for_f64(448.0 * 2f64.powi(149), e4m3).to_bits(), 1);
    assert_eq!(fp8_scale::scale_for_f64(448.0 * 2f64.powi(151), e4m3), 0.0);
    assert!(fp8_scale::dequant_scale(fp8_scale::scale_for_f64(1e42, e4m3)).is_infinite());
    assert!(fp8_scale::dequant_scale(fp8_scale::scale_for_f64(1e41, e4m3)).is_finite());
}

/// The f64 scale of an f32 amax is the f32 scale (the same real quotient, rounded once).
fn check_same_as_f32(amax: u32) -> Result<(), String> {
    for format in Fp8Format::ALL {
        let (wide, narrow) = (
            fp8_scale::scale_for_f64(f64::from(f32::from_bits(amax)), format),
            fp8_scale::scale_for(f32::from_bits(amax), format),
        );
        if wide.to_bits() != narrow.to_bits() {
            return Err(format!("{format:?}: amax {amax:#010x}: f64 scale {wide:e}, f32 scale {narrow:e}"));
        }
    }
    Ok(())
}

#[test]
fn the_f64_scale_of_an_f32_amax_is_the_f32_scale_on_a_sample() {
    if let Err(message) = check_all(0..0x7F80_0000 / 4099, |i| check_same_as_f32((i * 4099) as u32)) {
        panic!("{message}");
    }
}

#[test]
#[ignore = "2^31 inputs"]
fn the_f64_scale_of_an_f32_amax_is_the_f32_scale_on_every_positive_finite_f32() {
    if let Err(message) = check_all(0..0x7F80_0000, |a| check_same_as_f32(a as u32)) {
        panic!("{message}");
    }
}

#[test]
fn amax_slice_f64_finds_the_finite_amax_and_the_first_non_finite_value() {
    let mut xs = random_f64(1000, -1074, 1024, 3);
    let naive = naive_amax;
    assert_eq!(fp8_scale::amax_slice_f64(&xs), naive(&xs));
    assert_eq!(fp8_scale::amax_slice_f64(&xs).1, None);
    xs[700] = 0xFFF0_0000_0000_0000;
    xs[900] = 0x7FF8_0000_0000_0000;
    assert_eq!(fp8_scale::amax_slice_f64(&xs), naive(&xs));
    assert_eq!(fp8_scale::amax_slice_f64(&xs).1, Some(700));
    assert_eq!(fp8_scale::amax_slice_f64(&[]), (0, None));
}

use test_fixtures::levels::levels;

/// The branch-free forms and `cpu::fp8_scale::quantize_f64_at` at every level this
/// machine has, against `quantize_f64` per element, both roundings, on `x`; the output
/// starts one byte past a cache line, and `x` has an odd length, so that the vector
/// loops' heads and tails run.
fn check_fast_forms(levels: &[bitexact::cpu::Level], format: Fp8Format, s: f32, x: &[u64]) -> Result<(), String> {
    let mut buffer = vec![0u8; x.len() + 128];
    let start = buffer.as_ptr().align_offset(64) + 1;
    for rounding in [Rounding::Once, Rounding::TwoStep] {
        let want: Vec<u8> = x.iter().map(|&v| fp8_scale::quantize_f64(v, s, format, rounding)).collect();
        let fast = |v: u64| match rounding {
            Rounding::Once => fp8_scale::quantize_once_f64_to_odd(v, s, format),
            Rounding::TwoStep => fp8_scale::quantize_two_step_f64_by_addition(v, s, format),
        };
        let mut runs: Vec<(String, Vec<u8>)> = vec![("branch-free".into(), x.iter().map(|&v| fast(v)).collect())];
        for &level in levels {
            let q = &mut buffer[start..start + x.len()];
            bitexact::cpu::fp8_scale::quantize_f64_at(level, x, s, format, rounding, q);
            runs.push((level.to_string(), q.to_vec()));
        }
        for (name, got) in runs {
            if let Some(i) = (0..x.len()).find(|&i| got[i] != want[i]) {
                return Err(format!(
                    "{name} {format:?} {rounding:?}: x = {:#018x} ({:e}), s = {s:e}: got {:#04x}, quantize_f64 {:#04x}",
                    x[i],
                    f64::from_bits(x[i]),
                    got[i],
                    want[i]
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn the_fast_forms_and_every_cpu_level_equal_quantize_f64_around_the_grid_and_on_a_sample() {
    let levels = levels();
    at_every_scale(|format, s, i| {
        let mut sample = random_f64(3001, -1074, 1024, 200 + i);
        sample.extend(SPECIALS);
        let mut near = around_the_grid(format, s);
        near.pop();
        check_fast_forms(&levels, format, s, &sample).and_then(|()| check_fast_forms(&levels, format, s, &near))
    });
}

/// The finite amax (magnitude bits) and the first non-finite index of `xs`, by a plain
/// search.
fn naive_amax(xs: &[u64]) -> (u64, Option<usize>) {
    let magnitude = |x: u64| x & !(1 << 63);
    let finite = xs.iter().map(|&x| magnitude(x)).filter(|&m| m < 0x7FF0_0000_0000_0000).max().unwrap_or(0);
    (finite, xs.iter().position(|&x| magnitude(x) >= 0x7FF0_0000_0000_0000))
}

#[test]
fn every_cpu_level_finds_the_f64_amax_and_the_first_non_finite_value() {
    let levels = levels();
    let mut xs = random_f64(10_001, -1074, 1024, 9);
    // The largest magnitude late, with the sign set, past any vector width's head.
    xs[9_998] = 0xFFEF_FFFF_FFFF_FFF0;
    for round in 0..3 {
        if round == 1 {
            xs[7777] = 0x7FF8_0000_0000_0001;
        }
        if round == 2 {
            xs[5] = 0xFFF0_0000_0000_0000;
        }
        for &level in &levels {
            assert_eq!(bitexact::cpu::fp8_scale::amax_f64_at(level, &xs), naive_amax(&xs), "{level}, round {round}");
        }
    }
    assert_eq!(naive_amax(&xs), (0x7FEF_FFFF_FFFF_FFF0, Some(5)));
}
