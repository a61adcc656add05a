//! The MX block scale (`shared::mx`) against integer arithmetic:
//! - `scale_code`, for every element format and rule (compressed-tensors' and torchao's
//!   RCEIL among them; RCEIL's `fl32(amax · fl32(1 / max))` by the integer reference's
//!   product, its reciprocal checked by multiplication),
//!   against the inequalities that define its exponent `k` on a sample, and with
//!   `--ignored` on every f32 `amax` against the least `k` whose upper bound holds (the
//!   same definition, monotone in `amax`, so computed where it changes);
//! - `quantize_blocks` on a tensor of several blocks against those two per block, and
//!   `bitexact cast`'s form of it at every CPU level this machine has;
//! - `quantize` against the rational reference of `x · 2^-k` rounded once
//!   (`conformance::reference::scaled`): on a sample of f32 at every one of the 255
//!   scales, then, for E2M1, on every f32 at the extreme scales (`k = ±127`) and at
//!   `k = 0`.

use bitexact::verify::reference::{FP8_E4M3, FP8_E5M2, exact_f32_bits, f32_magnitude_parts, fill_f32_monotone};
use conformance::check_all;
use conformance::reference::{nvfp4, scaled};
use shared::e8m0;
use shared::mx::{self, ElementFormat, ScaleRule};
use std::cmp::Ordering;

use bitexact::cpu::fp8_scale as cpu_fp8;
use test_fixtures::levels::levels;

/// The largest finite value of each element format as `significand · 2^exponent`, from
/// the OCP specifications: 448 = 7 · 2^6, 57344 = 7 · 2^13, 6 = 3 · 2^1.
fn max_finite(element: ElementFormat) -> (u64, i32) {
    match element {
        ElementFormat::E4M3 => (7, 6),
        ElementFormat::E5M2 => (7, 13),
        ElementFormat::E2M1 => (3, 1),
    }
}

/// How `a · 2^ea` compares with `b · 2^eb` (`a`, `b` non-zero), on integers.
fn cmp_scaled(a: u64, ea: i32, b: u64, eb: i32) -> Ordering {
    // The exclusive top bit of each value first; with equal tops, the exponents differ
    // by less than 64 and both fit a u128 at the smaller one.
    let (top_a, top_b) = (ea + 64 - a.leading_zeros() as i32, eb + 64 - b.leading_zeros() as i32);
    if top_a != top_b {
        return top_a.cmp(&top_b);
    }
    let e = ea.min(eb);
    (u128::from(a) << (ea - e)).cmp(&(u128::from(b) << (eb - e)))
}

const SIGN: u32 = 0x8000_0000;

/// `fl32(1 / max)` of `element`, checked to be the correctly rounded quotient by
/// multiplication on integers (`scaled::is_rounded_quotient`).
fn reciprocal_of_max(element: ElementFormat) -> u32 {
    let (max, r) = (element.max_finite(), (1.0 / element.max_finite()).to_bits());
    assert!(scaled::is_rounded_quotient(1f32.to_bits(), max.to_bits(), r), "{element:?}: fl32(1 / max)");
    r
}

/// torchao's RCEIL descale `fl32(amax · fl32(1 / max))` of the finite magnitude `m`, by the
/// integer reference's rounded product.
fn rceil_descale(m: u32, element: ElementFormat) -> u32 {
    nvfp4::multiply(m, reciprocal_of_max(element))
}

/// Whether `descale` (f32 bits) is at most `2^k`: a zero one always is.
fn at_most_power(descale: u32, k: i32) -> bool {
    let (sig, exp) = f32_magnitude_parts(descale);
    sig == 0 || cmp_scaled(sig, exp, 1, k) != Ordering::Greater
}

/// The scale code of the magnitude `m` (and of `-m`: the sign is ignored) for every
/// element format and rule, against the definitions: `Fit`'s `k` is the smallest with
/// `amax ≤ max · 2^k`, `Floor`'s `2^(k + emax) ≤ amax < 2^(k + emax + 1)`,
/// `CompressedTensors`' `0.875 · 2^(k + emax) ≤ amax < 1.75 · 2^(k + emax)` (its power of
/// two rounded up from a significand of 1.75), each clamped at −127; zero gives code 0,
/// NaN and ±inf the NaN code.
fn check_scale(m: u32) -> Result<(), String> {
    for element in ElementFormat::ALL {
        for rule in RULES {
            let code = mx::scale_code(m, element, rule);
            if mx::scale_code(m | SIGN, element, rule) != code {
                return Err(format!("{element:?} {rule:?}: {m:#010x} and its negative differ"));
            }
            let holds = if m >= 0x7F80_0000 {
                code == e8m0::NAN
            } else if m == 0 {
                code == 0
            } else {
                let k = i32::from(code) - 127;
                let (sig, exp) = f32_magnitude_parts(m);
                let (max_sig, max_exp) = max_finite(element);
                let emax = element.emax();
                let clamped = k == -127;
                code != e8m0::NAN
                    && match rule {
                        ScaleRule::Fit => {
                            cmp_scaled(sig, exp, max_sig, max_exp + k) != Ordering::Greater
                                && (clamped || cmp_scaled(sig, exp, max_sig, max_exp + k - 1) == Ordering::Greater)
                        }
                        ScaleRule::Floor => {
                            cmp_scaled(sig, exp, 1, k + emax + 1) == Ordering::Less
                                && (clamped || cmp_scaled(sig, exp, 1, k + emax) != Ordering::Less)
                        }
                        // 0.875 · 2^(k + emax) ≤ amax < 1.75 · 2^(k + emax), as 7 · 2^(k + emax − 3)
                        // and 7 · 2^(k + emax − 2).
                        ScaleRule::CompressedTensors => {
                            cmp_scaled(sig, exp, 7, k + emax - 2) == Ordering::Less
                                && (clamped || cmp_scaled(sig, exp, 7, k + emax - 3) != Ordering::Less)
                        }
                        // descale ≤ 2^k, and descale > 2^(k − 1) unless clamped.
                        ScaleRule::Rceil => {
                            let descale = rceil_descale(m, element);
                            at_most_power(descale, k) && (clamped || !at_most_power(descale, k - 1))
                        }
                    }
            };
            if !holds {
                return Err(format!("{element:?} {rule:?}: amax {m:#010x}: scale code {code}"));
            }
        }
    }
    Ok(())
}

/// Every 4099th f32 magnitude and those around each power of two.
fn sampled_magnitudes() -> impl Iterator<Item = u32> {
    let strided = (0..1u64 << 31).step_by(4099).map(|x| x as u32);
    let edges = (0..256u32).flat_map(|e| (0..8u32).flat_map(move |d| [(e << 23) + d, (e << 23).wrapping_sub(d + 1)]));
    strided.chain(edges.map(|x| x & !SIGN))
}

#[test]
fn the_scale_is_the_defined_power_of_two_on_a_sample() {
    for m in sampled_magnitudes() {
        check_scale(m).unwrap_or_else(|e| panic!("{e}"));
    }
    // Named: 448 fits E4M3 at k = 0 under both rules; 449 needs k = 1 to fit, and OCP's
    // floor keeps k = 0 (it saturates).
    assert_eq!(mx::scale_code(448f32.to_bits(), ElementFormat::E4M3, ScaleRule::Fit), 127);
    assert_eq!(mx::scale_code(449f32.to_bits(), ElementFormat::E4M3, ScaleRule::Fit), 128);
    assert_eq!(mx::scale_code(449f32.to_bits(), ElementFormat::E4M3, ScaleRule::Floor), 127);
    assert_eq!(mx::scale_code(6f32.to_bits(), ElementFormat::E2M1, ScaleRule::Fit), 127);
    assert_eq!(mx::scale_code(7f32.to_bits(), ElementFormat::E2M1, ScaleRule::Fit), 128);
    // compressed-tensors' rounding goes up at a significand of 1.75: 448 itself gets
    // k = 1, where it fits at k = 0; just below it, both give k = 0.
    assert_eq!(mx::scale_code(448f32.to_bits(), ElementFormat::E4M3, ScaleRule::CompressedTensors), 128);
    assert_eq!(mx::scale_code(447.99997f32.to_bits(), ElementFormat::E4M3, ScaleRule::CompressedTensors), 127);
    assert_eq!(mx::scale_code(447.99997f32.to_bits(), ElementFormat::E4M3, ScaleRule::Fit), 127);
    // torchao's RCEIL: fl32(1 / 448) is above 1/448, so its product never rounds down onto
    // a power of two the exact quotient exceeds, but in f32's subnormal range: one ulp past
    // 448 · 2^-127 (0x04600001) its descale rounds down to 2^-127 and k stays -127, where
    // the block needs k = -126 to fit. Its neighbours agree with the exact rule.
    let rceil = |m: u32| mx::scale_code(m, ElementFormat::E4M3, ScaleRule::Rceil);
    let fit = |m: u32| mx::scale_code(m, ElementFormat::E4M3, ScaleRule::Fit);
    assert_eq!((rceil(0x0460_0001), fit(0x0460_0001)), (0, 1));
    assert_eq!((rceil(0x0460_0000), rceil(0x0460_0002)), (fit(0x0460_0000), fit(0x0460_0002)));
    assert_eq!((rceil(448f32.to_bits()), rceil(449f32.to_bits())), (127, 128));
    // The same one amax per format, one ulp past max · 2^-127: E5M2's and E2M1's.
    for (element, m) in [(ElementFormat::E5M2, 0x07E0_0001), (ElementFormat::E2M1, 0x0140_0001)] {
        let rceil = |m: u32| mx::scale_code(m, element, ScaleRule::Rceil);
        let fit = |m: u32| mx::scale_code(m, element, ScaleRule::Fit);
        assert_eq!((rceil(m), fit(m)), (0, 1), "{element:?}");
        assert_eq!((rceil(m - 1), rceil(m + 1)), (fit(m - 1), fit(m + 1)), "{element:?}");
    }
}

/// `quantize_blocks` on a tensor of several blocks (the last one partial) against
/// `scale_code` of each block's amax, found here by a plain max, and `quantize` per
/// element; a NaN or an infinity makes its block's scale NaN and is the index returned.
/// `bitexact cast`'s form, `cpu::fp8_scale::quantize_mx_blocks_at`, gives the same at
/// every CPU level this machine has.
#[test]
fn quantize_blocks_scales_each_block_of_32_by_its_own_amax() {
    let levels = levels();
    let same_at_every_level = |x: &[u32], element, rule, q: &[u8], scales: &[u8], first| {
        for &level in &levels {
            let (mut level_q, mut level_scales) = (vec![!0u8; q.len()], vec![0u8; scales.len()]);
            let at = cpu_fp8::quantize_mx_blocks_at(level, x, element, rule, &mut level_q, &mut level_scales);
            assert_eq!(at, first, "{level} {rule:?} {element:?}");
            assert_eq!(level_scales, scales, "{level} {rule:?} {element:?}: scales");
            assert_eq!(level_q, q, "{level} {rule:?} {element:?}: codes");
        }
    };
    let mut state = 7u64;
    let mut x: Vec<u32> = (0..5 * mx::BLOCK_SIZE + 9)
        .map(|i| {
            // Values over many binades, a block of zeros, and 448 · 2^j where the rules differ.
            let v = conformance::splitmix(&mut state);
            match i / mx::BLOCK_SIZE {
                1 => 0,
                2 if i % 7 == 0 => 448f32.to_bits() | (v as u32 & SIGN),
                _ => (v as u32 & 0x8000_0000) | ((v >> 32) as u32 % 0x6000_0000 + 0x0800_0000),
            }
        })
        .collect();
    for rule in RULES {
        for element in ElementFormat::ALL {
            let (mut q, mut scales) = (vec![0u8; x.len()], vec![0u8; x.len().div_ceil(mx::BLOCK_SIZE)]);
            assert_eq!(mx::quantize_blocks(&x, element, rule, &mut q, &mut scales), Ok(None));
            for (b, block) in x.chunks(mx::BLOCK_SIZE).enumerate() {
                let amax = block.iter().map(|v| v & !SIGN).max().expect("not empty");
                assert_eq!(scales[b], mx::scale_code(amax, element, rule), "{rule:?} {element:?} block {b}");
                for (i, &v) in block.iter().enumerate() {
                    let at = b * mx::BLOCK_SIZE + i;
                    assert_eq!(q[at], mx::quantize(v, scales[b], element), "{rule:?} {element:?} element {at}");
                }
            }
            same_at_every_level(&x, element, rule, &q, &scales, Ok(None));
        }
    }
    // An infinity in the fourth block and a NaN in the fifth: their blocks' scales are NaN,
    // the first one's index is returned, and the other blocks are as before.
    x[3 * mx::BLOCK_SIZE + 5] = f32::NEG_INFINITY.to_bits();
    x[4 * mx::BLOCK_SIZE + 1] = 0x7FC0_0000;
    let (mut q, mut scales) = (vec![0u8; x.len()], vec![0u8; 6]);
    let first = mx::quantize_blocks(&x, ElementFormat::E4M3, ScaleRule::Fit, &mut q, &mut scales);
    assert_eq!(first, Ok(Some(3 * mx::BLOCK_SIZE + 5)));
    assert_eq!((scales[3], scales[4]), (e8m0::NAN, e8m0::NAN));
    assert!(q[3 * mx::BLOCK_SIZE..5 * mx::BLOCK_SIZE].iter().all(|&c| c & 0x7F == 0x7F));
    assert_ne!(scales[5], e8m0::NAN);
    same_at_every_level(&x, ElementFormat::E4M3, ScaleRule::Fit, &q, &scales, first);
    // Lengths that do not match are refused.
    let refused = mx::quantize_blocks(&x, ElementFormat::E4M3, ScaleRule::Fit, &mut q[1..], &mut scales);
    assert!(refused.is_err());
}

/// The rules, in the order the checks take them.
const RULES: [ScaleRule; 4] = [ScaleRule::Fit, ScaleRule::Floor, ScaleRule::CompressedTensors, ScaleRule::Rceil];

/// The scale code that the definition gives the magnitude `m` (sign bit clear): the least
/// `k` in `−127..=127` whose upper bound holds (`Fit`: `amax ≤ max · 2^k`; `Floor`:
/// `amax < 2^(k + emax + 1)`; `CompressedTensors`: `amax < 1.75 · 2^(k + emax)`), as
/// `k + 127`; zero gives 0, NaN and ±inf the NaN code. (The least such `k` is the one whose
/// bound fails at `k − 1`: [`check_scale`]'s lower bounds.) Monotone in `m`, as each bound
/// grows with `k`.
fn defined_code(m: u32, element: ElementFormat, rule: ScaleRule) -> u8 {
    if m >= 0x7F80_0000 {
        return e8m0::NAN;
    }
    if m == 0 {
        return 0;
    }
    let (sig, exp) = f32_magnitude_parts(m);
    let (max_sig, max_exp) = max_finite(element);
    let emax = element.emax();
    let descale = if rule == ScaleRule::Rceil { rceil_descale(m, element) } else { 0 };
    let holds = |k: i32| match rule {
        ScaleRule::Fit => cmp_scaled(sig, exp, max_sig, max_exp + k) != Ordering::Greater,
        ScaleRule::Floor => cmp_scaled(sig, exp, 1, k + emax + 1) == Ordering::Less,
        ScaleRule::CompressedTensors => cmp_scaled(sig, exp, 7, k + emax - 2) == Ordering::Less,
        ScaleRule::Rceil => at_most_power(descale, k),
    };
    // Below every rule's answer: amax ≥ 2^floor(log2 amax) and every bound at k is below
    // 2^(k + emax + 1), so k ≥ floor(log2 amax) − emax; checked rather than trusted.
    let floor_log2 = exp + 63 - sig.leading_zeros() as i32;
    let start = (floor_log2 - emax - 2).max(-127);
    assert!(start == -127 || !holds(start), "{m:#010x}: the search starts at its answer");
    let k = (start..=127).find(|&k| holds(k)).expect("f32's largest magnitude fits at k = 127");
    (k + 127) as u8
}

/// Whether `scale_code` for the element format `ElementFormat::ALL[E]` and the rule
/// `RULES[R]` differs from `want` on a magnitude of `first..` or on its negative: one pass
/// without an early exit, the format and the rule constants in it (as loop variables they
/// made the walk twice as long).
fn differs<const E: usize, const R: usize>(first: u32, want: &[u8]) -> bool {
    let code = |m: u32| mx::scale_code(m, ElementFormat::ALL[E], RULES[R]);
    (first..).zip(want).fold(0u8, |acc, (m, &w)| acc | (code(m) ^ w) | (code(m | SIGN) ^ w)) != 0
}

/// [`differs`] of one element format and rule.
type Differs = fn(u32, &[u8]) -> bool;

/// [`differs`] for each element format (rows, in the order of `ElementFormat::ALL`) and
/// rule (columns, in the order of [`RULES`]).
const DIFFERS: [[Differs; 4]; 3] = [
    [differs::<0, 0>, differs::<0, 1>, differs::<0, 2>, differs::<0, 3>],
    [differs::<1, 0>, differs::<1, 1>, differs::<1, 2>, differs::<1, 3>],
    [differs::<2, 0>, differs::<2, 1>, differs::<2, 2>, differs::<2, 3>],
];

/// The 2^16 magnitudes of `block` (`block · 2^16 ..`, below 2^31), each with both signs:
/// `scale_code` for every element format and rule against [`defined_code`], computed where
/// it changes (`fill_f32_monotone`), one comparison pass per format and rule ([`differs`]);
/// the first difference, in hex.
fn check_scales_in(block: u64) -> Result<(), String> {
    let first = (block << 16) as u32;
    let mut want = vec![0u8; 1 << 16];
    for (e, element) in ElementFormat::ALL.into_iter().enumerate() {
        for (r, rule) in RULES.into_iter().enumerate() {
            fill_f32_monotone(block << 16, &mut want, |m| defined_code(m, element, rule));
            if DIFFERS[e][r](first, &want) {
                let code = |m: u32| mx::scale_code(m, element, rule);
                let (m, w) =
                    (first..).zip(&want).find(|&(m, &w)| code(m) != w || code(m | SIGN) != w).expect("differs");
                return Err(format!(
                    "{element:?} {rule:?}: amax {m:#010x}: scale code {} (negative {}), defined {w}",
                    code(m),
                    code(m | SIGN)
                ));
            }
        }
    }
    Ok(())
}

#[test]
#[ignore = "a 2^32-input proof: `cargo test --workspace --profile proofs -- --ignored` runs it (CI does)"]
fn the_scale_is_the_defined_power_of_two_on_every_f32() {
    // Each magnitude with both signs; the definition computed where it changes.
    check_all(0..1 << 15, check_scales_in).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn the_defined_code_is_the_one_that_keeps_the_inequalities_on_a_sample() {
    // The ignored proof's reference against the code that the quick proof checks against
    // both inequalities, and one whole block of the ignored proof (around 448).
    for m in sampled_magnitudes() {
        check_scale(m).unwrap_or_else(|e| panic!("{e}"));
        for element in ElementFormat::ALL {
            for rule in RULES {
                assert_eq!(
                    defined_code(m, element, rule),
                    mx::scale_code(m, element, rule),
                    "{element:?} {rule:?} {m:#x}"
                );
            }
        }
    }
    check_scales_in(u64::from(448f32.to_bits() >> 16)).unwrap_or_else(|e| panic!("{e}"));
}

/// The reference's code for `x` in a block with scale code `code` (not NaN): the exact
/// `x · 2^-k` rounded once, with `2^-k` from its fields, not from `shared::e8m0`.
fn exact(x: u32, code: u8, element: ElementFormat) -> u8 {
    let s = exact_f32_bits(1, 127 - i32::from(code));
    match element {
        ElementFormat::E4M3 => scaled::quantize_once(FP8_E4M3, x, s),
        ElementFormat::E5M2 => scaled::quantize_once(FP8_E5M2, x, s),
        ElementFormat::E2M1 => scaled::quantize_e2m1_once(x, s),
    }
}

fn check_element(x: u32, code: u8, element: ElementFormat) -> Result<(), String> {
    let (got, want) = (mx::quantize(x, code, element), exact(x, code, element));
    if got == want {
        Ok(())
    } else {
        Err(format!("{element:?}: x = {x:#010x}, scale code {code}: got {got:#04x}, exact {want:#04x}"))
    }
}

#[test]
fn elements_equal_the_rational_reference_on_a_sample_at_every_scale() {
    let sample: Vec<u32> = sampled_magnitudes().step_by(61).flat_map(|m| [m, m | SIGN]).collect();
    for code in 0..e8m0::NAN {
        for element in ElementFormat::ALL {
            for &x in &sample {
                check_element(x, code, element).unwrap_or_else(|e| panic!("{e}"));
            }
        }
    }
}

#[test]
fn a_nan_scale_makes_every_element_nan() {
    for x in [0u32, 1.0f32.to_bits(), (-3.5f32).to_bits(), f32::INFINITY.to_bits(), 0xFFC0_0000] {
        let sign = (x >> 24) as u8 & 0x80;
        assert_eq!(mx::quantize(x, e8m0::NAN, ElementFormat::E4M3), sign | 0x7F, "{x:#x}");
        assert_eq!(mx::quantize(x, e8m0::NAN, ElementFormat::E5M2), sign | 0x7F, "{x:#x}");
        assert_eq!(mx::quantize(x, e8m0::NAN, ElementFormat::E2M1), 0b0111, "{x:#x}");
    }
}

/// Every f32 at scale code `code` for E2M1: each of the 2^31 magnitudes with both signs,
/// in blocks of 2^16, against the reference's result for the magnitude (the negative's is
/// the magnitude's with the sign bit set, but for NaN, which gives +6 either way). The
/// reference is monotone in the magnitude, so it is computed where it changes
/// (`fill_f32_monotone`).
fn every_f32_e2m1_at(code: u8) {
    check_all(0..1 << 15, |block| {
        let mut exact_codes = vec![0; 1 << 16];
        fill_f32_monotone(block << 16, &mut exact_codes, |m| exact(m, code, ElementFormat::E2M1));
        ((block as u32) << 16..((block + 1) << 16) as u32)
            .zip(exact_codes)
            .try_for_each(|(m, want)| check_e2m1_signs(m, code, want))
    })
    .unwrap_or_else(|e| panic!("{e}"));
}

/// `quantize` of the magnitude `m` and of `-m` at scale code `code` for E2M1, against
/// `want`, the reference's code for `m`.
fn check_e2m1_signs(m: u32, code: u8, want: u8) -> Result<(), String> {
    let want_negative = if m > 0x7F80_0000 { want } else { want | 0b1000 };
    for (x, want) in [(m, want), (m | SIGN, want_negative)] {
        let got = mx::quantize(x, code, ElementFormat::E2M1);
        if got != want {
            return Err(format!("E2M1: x = {x:#010x}, scale code {code}: got {got:#04x}, exact {want:#04x}"));
        }
    }
    Ok(())
}

// E2M1's rounding of the scaled value is `shared::mx`'s own code, so it is walked on every
// f32 at k = -127 (s = 2^127: every x above 5 · 2^-127 gives 6, smaller ones round onto
// the grid), k = 0, and k = 127 (s = 2^-127, itself an f32 subnormal: x up to
// f32::MAX gives at most about 2). E4M3 and E5M2 are `fp8_scale::quantize_once` at a
// power-of-two scale, which only rounds the exact f64 product: `fp8_scale.rs` walks every
// f32 at one power-of-two scale per format (E4M3 at 2^-4, E5M2 at 2^3), and every product
// x · 2^-k where the FP8 rounding decides anything (about 2^-20 to 2^17) is y · 2^-4 or
// y · 2^3 for some f32 y, so that walk covers it; products far outside that range (which
// round to zero or saturate) are checked here on the sample at every one of the 255 scales.
#[test]
#[ignore = "2^32 inputs per scale: `cargo test --workspace --profile proofs -- --ignored` runs it (CI does)"]
fn e2m1_elements_equal_the_rational_reference_on_every_f32_at_k_minus_127_0_and_127() {
    for code in [0, 127, 254] {
        every_f32_e2m1_at(code);
    }
}
