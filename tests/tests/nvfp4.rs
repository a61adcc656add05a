//! NVFP4 (`shared::nvfp4`) against integer arithmetic
//! (`conformance::reference::nvfp4`: each exact value rounded on integers, no
//! floating-point operation):
//! - every recipe's tensor scale, block scale and elements on a sample of f32 at eight
//!   tensor scales and seven block scales;
//! - with `--ignored`: the exact recipe's tensor factor on every f32 `amax`; every
//!   recipe's block scale on every `amax` at one full-significand tensor scale; every
//!   recipe's elements on every f32 at one block scale and tensor scale. The reference is
//!   computed where it changes (monotone in the magnitude), or checked by multiplication;
//! - `quantize_blocks` on a tensor of several blocks, and `bitexact cast`'s form of it at
//!   every CPU level this machine has; the choices that tell the recipes apart, named:
//!   zero blocks, `−0`, ties.
//!
//! ModelOpt's and compressed-tensors' recipes are checked against their steps as read in
//! their sources, not against the producers' own code.

use bitexact::verify::reference::fill_f32_monotone;
use conformance::check_all;
use conformance::reference::{nvfp4 as reference, scaled};
use shared::fp4::e2m1;
use shared::nvfp4::{self, Nvfp4Recipe, WeightDtype};
use std::f32::consts::FRAC_1_SQRT_2;

use bitexact::cpu::fp8_scale as cpu_fp8;
use test_fixtures::levels::levels;

const SIGN: u32 = 0x8000_0000;
/// f32 +inf: magnitudes above it are NaN.
const INFINITY: u32 = 0x7F80_0000;

/// Every 4099th f32 magnitude and those around each power of two (NaNs included).
fn sampled_magnitudes() -> impl Iterator<Item = u32> {
    magnitudes_every(4099)
}

/// Every `stride`th f32 magnitude and those around each power of two (NaNs included).
fn magnitudes_every(stride: usize) -> impl Iterator<Item = u32> {
    let strided = (0..1u64 << 31).step_by(stride).map(|x| x as u32);
    let edges = (0..256u32).flat_map(|e| (0..8u32).flat_map(move |d| [(e << 23) + d, (e << 23).wrapping_sub(d + 1)]));
    strided.chain(edges.map(|x| x & !SIGN))
}

/// The finite ones of [`sampled_magnitudes`].
fn finite_magnitudes() -> impl Iterator<Item = u32> {
    sampled_magnitudes().filter(|&m| m < INFINITY)
}

/// Tensor factors `g` (and compressed-tensors' multipliers `gs`) to test at: 1, the
/// factors of tensors whose amax is 1, 0.02 and 3.7e4 (one of them a bfloat16 value's),
/// and factors with a full significand, large and small (`s · g` then needs 28 bits).
fn factors() -> Vec<f32> {
    vec![1.0, 1.0 / 2688.0, 0.02 / 2688.0, 3.7e4 / 2688.0, 2688.0, FRAC_1_SQRT_2, 1.2345678e-30, 9.876543e25]
}

/// E4M3 block scale codes to test at: the smallest subnormal 2^-9, a subnormal with two
/// bits, the smallest normal, 1, 0.125, 22 (mantissa 3) and 448.
const SCALES: [u8; 7] = [0x01, 0x03, 0x08, 0x38, 0x20, 0x5B, 0x7E];

#[test]
fn tensor_factors_equal_the_reference_on_a_sample() {
    for m in finite_magnitudes() {
        let amax = f32::from_bits(m);
        let got = nvfp4::global_scale(amax).to_bits();
        assert_eq!(got, reference::global_scale(m), "exact g of amax {m:#x}");
        let got = nvfp4::modelopt_global_scale(amax).to_bits();
        assert_eq!(got, reference::modelopt_global_scale(m), "ModelOpt g of amax {m:#x}");
        for (source, bf16) in [(WeightDtype::F32, false), (WeightDtype::Bf16, true)] {
            if bf16 && m & 0xFFFF != 0 {
                continue; // a bfloat16 tensor's amax is a bfloat16 value
            }
            let got = nvfp4::compressed_tensors_global_scale(amax, source).to_bits();
            assert_eq!(got, reference::compressed_tensors_global_scale(m, bf16), "compressed-tensors gs of {m:#x}");
        }
    }
}

#[test]
fn block_scales_equal_the_reference_on_a_sample() {
    for g in factors() {
        let gb = g.to_bits();
        for m in finite_magnitudes() {
            let amax = f32::from_bits(m);
            let (got, want) = (nvfp4::block_scale(amax, g), reference::block_scale(m, gb));
            assert_eq!(got, want, "exact s of amax {m:#x} at g {gb:#x}");
            let (got, want) = (nvfp4::modelopt_block_scale(amax, g), reference::modelopt_block_scale(m, gb));
            assert_eq!(got, want, "ModelOpt s of amax {m:#x} at g {gb:#x}");
            for (source, bf16) in [(WeightDtype::F32, false), (WeightDtype::Bf16, true)] {
                if bf16 && m & 0xFFFF != 0 {
                    continue;
                }
                let got = nvfp4::compressed_tensors_block_scale(amax, g, source);
                let want = reference::compressed_tensors_block_scale(m, gb, bf16);
                assert_eq!(got, want, "compressed-tensors s of amax {m:#x} at gs {gb:#x} ({source:?})");
            }
        }
    }
}

/// On a sparser sample than the scales' (every 16411th magnitude, and the edges), at
/// 56 pairs of scales: every f32 at one pair is `--ignored`'s.
#[test]
fn elements_equal_the_reference_on_a_sample() {
    for g in factors() {
        let gb = g.to_bits();
        for scale in SCALES {
            for m in magnitudes_every(16411) {
                for x in [m, m | SIGN] {
                    let (got, want) = (nvfp4::quantize(x, scale, g), reference::quantize(x, scale, gb));
                    assert_eq!(got, want, "exact q of {x:#x} at s {scale:#x}, g {gb:#x}");
                    if m > INFINITY {
                        continue; // the producers' NaN is not modelled
                    }
                    let (got, want) =
                        (nvfp4::modelopt_quantize(x, scale, g), reference::modelopt_quantize(x, scale, gb));
                    assert_eq!(got, want, "ModelOpt q of {x:#x} at s {scale:#x}, g {gb:#x}");
                    let got = nvfp4::compressed_tensors_quantize(x, scale, g);
                    let want = reference::compressed_tensors_quantize(x, scale, gb);
                    assert_eq!(got, want, "compressed-tensors q of {x:#x} at s {scale:#x}, gs {gb:#x}");
                }
            }
        }
    }
}

/// The recipes in the order the checks take them, each with the weights' dtype it is
/// checked for.
const RECIPES: [(Nvfp4Recipe, WeightDtype); 4] = [
    (Nvfp4Recipe::Exact, WeightDtype::F32),
    (Nvfp4Recipe::ModelOpt, WeightDtype::F32),
    (Nvfp4Recipe::CompressedTensors, WeightDtype::F32),
    (Nvfp4Recipe::CompressedTensors, WeightDtype::Bf16),
];

/// `quantize_blocks` on a tensor of several blocks (the last one partial, of odd length)
/// by each recipe, against `tensor_scale` of the tensor's amax and, per block, the
/// recipe's block scale of the block's amax (found here by a plain max) and its element
/// function, unpacked two per byte; a NaN or an infinity makes its block's scale NaN and
/// is the index returned. `bitexact cast`'s form, `cpu::fp8_scale::quantize_nvfp4_blocks_at`,
/// gives the same bytes at every CPU level this machine has.
#[test]
fn quantize_blocks_scales_each_block_of_16_and_packs_pairs() {
    let levels = levels();
    let same_at_every_level = |x: &[u32], recipe, tensor, source, packed: &[u8], scales: &[u8], first| {
        for &level in &levels {
            let (mut level_packed, mut level_scales) = (vec![!0u8; packed.len()], vec![0u8; scales.len()]);
            let at = cpu_fp8::quantize_nvfp4_blocks_at(
                level,
                x,
                recipe,
                tensor,
                source,
                &mut level_packed,
                &mut level_scales,
            );
            assert_eq!(at, first, "{level} {recipe:?} {source:?}");
            assert_eq!(level_scales, scales, "{level} {recipe:?} {source:?}: scales");
            assert_eq!(level_packed, packed, "{level} {recipe:?} {source:?}: packed codes");
        }
    };
    let mut state = 7u64;
    // bfloat16 values over many binades with both signs, a block of zeros, a −0.
    let mut x: Vec<u32> = (0..5 * nvfp4::BLOCK_SIZE + 7)
        .map(|i| {
            let v = conformance::splitmix(&mut state);
            match i / nvfp4::BLOCK_SIZE {
                1 => 0,
                _ => ((v as u32 & SIGN) | ((v >> 32) as u32 % 0x2000_0000 + 0x3000_0000)) & 0xFFFF_0000,
            }
        })
        .collect();
    x[3 * nvfp4::BLOCK_SIZE + 2] = SIGN;
    let magnitude = |v: u32| f32::from_bits(v & !SIGN);
    for (recipe, source) in RECIPES {
        let amax = x.iter().map(|&v| magnitude(v)).fold(0.0, f32::max);
        let tensor = nvfp4::tensor_scale(recipe, amax, source);
        let (mut packed, mut scales) = (vec![0u8; x.len().div_ceil(2)], vec![0u8; x.len().div_ceil(nvfp4::BLOCK_SIZE)]);
        assert_eq!(nvfp4::quantize_blocks(&x, recipe, tensor, source, &mut packed, &mut scales), Ok(None));
        for (b, block) in x.chunks(nvfp4::BLOCK_SIZE).enumerate() {
            let amax = block.iter().map(|&v| magnitude(v)).fold(0.0, f32::max);
            let want = match recipe {
                Nvfp4Recipe::Exact => nvfp4::block_scale(amax, tensor),
                Nvfp4Recipe::ModelOpt => nvfp4::modelopt_block_scale(amax, tensor),
                Nvfp4Recipe::CompressedTensors => nvfp4::compressed_tensors_block_scale(amax, tensor, source),
            };
            assert_eq!(scales[b], want, "{recipe:?} {source:?} block {b}");
        }
        for (i, &v) in x.iter().enumerate() {
            let scale = scales[i / nvfp4::BLOCK_SIZE];
            let want = match recipe {
                Nvfp4Recipe::Exact => nvfp4::quantize(v, scale, tensor),
                Nvfp4Recipe::ModelOpt => nvfp4::modelopt_quantize(v, scale, tensor),
                Nvfp4Recipe::CompressedTensors => nvfp4::compressed_tensors_quantize(v, scale, tensor),
            };
            assert_eq!(e2m1::unpack(packed[i / 2])[i % 2], want, "{recipe:?} {source:?} element {i}");
        }
        assert_eq!(packed[packed.len() - 1] >> 4, 0, "an odd length's last high nibble");
        same_at_every_level(&x, recipe, tensor, source, &packed, &scales, Ok(None));
    }
    // An infinity in the fourth block and a NaN in the fifth: their blocks' scales are NaN,
    // the first one's index is returned, and the other blocks are as before.
    x[3 * nvfp4::BLOCK_SIZE + 5] = f32::NEG_INFINITY.to_bits();
    x[4 * nvfp4::BLOCK_SIZE + 1] = 0x7FC0_0000;
    let (mut packed, mut scales) = (vec![0u8; x.len().div_ceil(2)], vec![0u8; 6]);
    let first = nvfp4::quantize_blocks(&x, Nvfp4Recipe::Exact, 1.0, WeightDtype::F32, &mut packed, &mut scales);
    assert_eq!(first, Ok(Some(3 * nvfp4::BLOCK_SIZE + 5)));
    assert_eq!((scales[3], scales[4]), (0x7F, 0x7F));
    assert!(scales.iter().enumerate().all(|(b, &s)| (s == 0x7F) == (b == 3 || b == 4)));
    same_at_every_level(&x, Nvfp4Recipe::Exact, 1.0, WeightDtype::F32, &packed, &scales, first);
    // Lengths that do not match are refused.
    let refused = nvfp4::quantize_blocks(&x, Nvfp4Recipe::Exact, 1.0, WeightDtype::F32, &mut packed[1..], &mut scales);
    assert!(refused.is_err());
    let refused = nvfp4::quantize_blocks(&x, Nvfp4Recipe::Exact, 1.0, WeightDtype::F32, &mut packed, &mut scales[1..]);
    assert!(refused.is_err());
}

/// What tells the recipes apart, each named.
#[test]
fn the_recipes_differ_where_their_sources_say() {
    // An all-zero block: 1 for the exact recipe and ModelOpt, 0.125 for compressed-tensors.
    assert_eq!(nvfp4::block_scale(0.0, 1.0), 0x38);
    assert_eq!(nvfp4::modelopt_block_scale(0.0, 1.0), 0x38);
    assert_eq!(nvfp4::compressed_tensors_block_scale(0.0, 1.0, WeightDtype::Bf16), 0x20);
    // An all-zero tensor: the exact factor 1; compressed-tensors' 2688 / tiny overflows
    // f32 and is made 1; ModelOpt's is 0.
    assert_eq!(nvfp4::global_scale(0.0), 1.0);
    assert_eq!(nvfp4::compressed_tensors_global_scale(0.0, WeightDtype::F32), 1.0);
    assert_eq!(nvfp4::modelopt_global_scale(0.0), 0.0);
    // −0: the exact recipe keeps its sign; both producers give +0's code (`w < 0`,
    // `torch.sign`), and −0's to a small negative value.
    let negative_zero = (-0.0f32).to_bits();
    assert_eq!(nvfp4::quantize(negative_zero, 0x38, 1.0), 0b1000);
    assert_eq!(nvfp4::modelopt_quantize(negative_zero, 0x38, 1.0), 0);
    assert_eq!(nvfp4::compressed_tensors_quantize(negative_zero, 0x38, 1.0), 0);
    assert_eq!(nvfp4::modelopt_quantize((-0.1f32).to_bits(), 0x38, 1.0), 0b1000);
    // Ties go to the even code in all three: 0.25 → 0, 0.75 → 1, 2.5 → 2, 5 → 4.
    for (x, code) in [(0.25f32, 0u8), (0.75, 0b010), (2.5, 0b100), (5.0, 0b110)] {
        assert_eq!(nvfp4::quantize(x.to_bits(), 0x38, 1.0), code, "{x}");
        assert_eq!(nvfp4::modelopt_quantize(x.to_bits(), 0x38, 1.0), code, "{x}");
        assert_eq!(nvfp4::compressed_tensors_quantize(x.to_bits(), 0x38, 1.0), code, "{x}");
    }
    // The tensor's largest block gets 448, E4M3's largest value, by the exact recipe and
    // by ModelOpt's.
    let amax = 0.0371f32;
    let g = nvfp4::global_scale(amax);
    assert_eq!(nvfp4::block_scale(amax, g), 0x7E);
    assert_eq!(nvfp4::modelopt_block_scale(amax, nvfp4::modelopt_global_scale(amax)), 0x7E);
    // compressed-tensors from 0.19 divides the block's amax by 6 (a tensor by a tensor);
    // 0.18 multiplied by fl32(1/6) on CUDA, which gives another code here (found by the
    // every-amax proof).
    let (amax, gs) = (f32::from_bits(0x356E_CBFB), 72452.83f32);
    let want = reference::compressed_tensors_block_scale(amax.to_bits(), gs.to_bits(), false);
    assert_eq!(nvfp4::compressed_tensors_block_scale(amax, gs, WeightDtype::F32), want);
    assert_eq!(want, 0x5);
    let by_reciprocal = reference::e4m3_of(reference::multiply(gs.to_bits(), (amax * (1.0 / 6.0)).to_bits()));
    assert_eq!(by_reciprocal, 0x6, "the reciprocal's product rounds to another code");
}

/// Every finite f32 magnitude `m`, in blocks of 2^16: `check(m, key(m))`, with the
/// reference's step `key`, monotone in `m`, computed where it changes
/// (`fill_f32_monotone`).
fn every_finite_magnitude(key: impl Fn(u32) -> u32 + Sync, check: impl Fn(u32, u32) -> Result<(), String> + Sync) {
    check_all(0..u64::from(INFINITY >> 16), |block| {
        let mut keys = vec![0u32; 1 << 16];
        fill_f32_monotone(block << 16, &mut keys, &key);
        ((block as u32) << 16..).zip(keys).try_for_each(|(m, k)| check(m, k))
    })
    .unwrap_or_else(|e| panic!("{e}"));
}

/// `Ok` if `got == want`, else the message naming `what`.
fn same<T: PartialEq + std::fmt::LowerHex>(got: T, want: T, what: impl FnOnce() -> String) -> Result<(), String> {
    if got == want { Ok(()) } else { Err(format!("{}: got {got:#x}, reference {want:#x}", what())) }
}

/// `Ok` if `holds`, else the message naming `what`.
fn holds(holds: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if holds { Ok(()) } else { Err(what()) }
}

/// The exact recipe's tensor factor `fl32(amax / 2688)` on every f32 `amax`, checked by
/// multiplication on integers (`scaled::is_rounded_quotient`), and compressed-tensors'
/// bfloat16 global scale on every bfloat16 `amax` against the reference's steps. The
/// producers' f32 tensor scales, one or two f32 operations each, are checked on the
/// sample (`tensor_factors_equal_the_reference_on_a_sample`): walking every `amax` for
/// them took 30 s.
#[test]
#[ignore = "2^31 inputs: `cargo test --workspace --profile proofs -- --ignored` runs it (CI does)"]
fn tensor_scales_equal_their_definitions_on_every_amax() {
    let divisor = nvfp4::GLOBAL_DIVISOR.to_bits();
    check_all(1..u64::from(INFINITY), |m| {
        let m = m as u32;
        let g = nvfp4::global_scale(f32::from_bits(m)).to_bits();
        // The quotient, or 2^-149 where it rounds to zero.
        let exact =
            scaled::is_rounded_quotient(m, divisor, g) || (g == 1 && scaled::is_rounded_quotient(m, divisor, 0));
        holds(exact, || format!("exact g of amax {m:#x}: {g:#x}"))
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(nvfp4::global_scale(0.0), 1.0);
    for m in (0..INFINITY).step_by(1 << 16) {
        let got = nvfp4::compressed_tensors_global_scale(f32::from_bits(m), WeightDtype::Bf16).to_bits();
        same(got, reference::compressed_tensors_global_scale(m, true), || format!("compressed-tensors gs of {m:#x}"))
            .unwrap_or_else(|e| panic!("{e} (bfloat16)"));
    }
}

/// The block scales on every f32 `amax` at one full-significand tensor scale (`6 · g`
/// then needs 26 bits): the exact recipe's, ModelOpt's, and compressed-tensors' for f32
/// weights; compressed-tensors' for bfloat16 weights on every bfloat16 `amax`, at that
/// scale and at a bfloat16 one. Each against the reference's codes, computed where they
/// change: the exact code but at `amax = 0` (1, outside the monotone run), ModelOpt's by
/// its quotient (1 where that is zero), compressed-tensors' by its E4M3 rounding (0.125
/// where that is zero).
#[test]
#[ignore = "2^31 inputs per recipe: `cargo test --workspace --profile proofs -- --ignored` runs it (CI does)"]
fn block_scales_equal_the_reference_on_every_amax() {
    let (g, gs) = (FRAC_1_SQRT_2, 72452.83f32);
    let (gb, gsb) = (g.to_bits(), gs.to_bits());
    every_finite_magnitude(
        |m| if m == 0 { 0 } else { u32::from(reference::block_scale(m, gb)) },
        |m, key| {
            let want = if m == 0 { 0x38 } else { key as u8 };
            same(nvfp4::block_scale(f32::from_bits(m), g), want, || format!("exact s of amax {m:#x}"))
        },
    );
    every_finite_magnitude(
        |m| match reference::modelopt_block_quotient(m, gb) {
            0 => 0,
            t => u32::from(reference::modelopt_block_code(t)),
        },
        |m, key| {
            let want = if key == 0 { 0x38 } else { key as u8 };
            same(nvfp4::modelopt_block_scale(f32::from_bits(m), g), want, || format!("ModelOpt s of amax {m:#x}"))
        },
    );
    every_finite_magnitude(
        |m| u32::from(reference::e4m3_of(reference::compressed_tensors_block_product(m, gsb, false))),
        |m, key| {
            let want = if key == 0 { 0x20 } else { key as u8 };
            let got = nvfp4::compressed_tensors_block_scale(f32::from_bits(m), gs, WeightDtype::F32);
            same(got, want, || format!("compressed-tensors s of amax {m:#x} (f32)"))
        },
    );
    for gs in [gs, 72704.0] {
        for m in (0..INFINITY).step_by(1 << 16) {
            let got = nvfp4::compressed_tensors_block_scale(f32::from_bits(m), gs, WeightDtype::Bf16);
            let want = reference::compressed_tensors_block_scale(m, gs.to_bits(), true);
            same(got, want, || format!("compressed-tensors s of {m:#x} at gs {gs} (bfloat16)"))
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// The elements on every f32 `x` at block scale 22 (E4M3 mantissa 3) and a
/// full-significand tensor scale: `s · g` needs 28 significant bits, and the producers'
/// divisors are rounded. Each recipe's slice form (what a block loop runs) on blocks of
/// 2^16 magnitudes and their negatives; their element-wise forms are the same on the
/// samples (`elements_equal_the_reference_on_a_sample`, `slices_equal_their_elements`).
/// - The exact recipe against the reference's codes for the magnitudes (the negatives'
///   are the same with the sign bit, but for NaN, which gives +6 either way).
/// - Each producer against the reference's `fl32(|x| / d)` rounded onto E2M1, with the
///   sign bit where that quotient is not zero; both computed where they change (the key
///   is twice the code, plus one where the quotient is not zero). NaN is not modelled.
#[test]
#[ignore = "2^32 inputs per recipe: `cargo test --workspace --profile proofs -- --ignored` runs it (CI does)"]
fn elements_equal_the_reference_on_every_f32() {
    let (scale, g, gs) = (0x5B, FRAC_1_SQRT_2, 72452.83f32);
    let gb = g.to_bits();
    check_all(0..1 << 15, |block| {
        let mut want = vec![0u8; 1 << 16];
        fill_f32_monotone(block << 16, &mut want, |m| reference::quantize(m, scale, gb));
        let magnitudes: Vec<u32> = ((block as u32) << 16..).take(1 << 16).collect();
        let negatives: Vec<u32> = magnitudes.iter().map(|m| m | SIGN).collect();
        let mut got = vec![0u8; 1 << 16];
        for (x, negative) in [(&magnitudes, false), (&negatives, true)] {
            nvfp4::quantize_slice(x, scale, g, &mut got);
            if let Some(i) = (0..got.len()).find(|&i| {
                let w = if negative && magnitudes[i] <= INFINITY { want[i] | 0b1000 } else { want[i] };
                got[i] != w
            }) {
                return Err(format!("exact q of {:#x}: got {:#x}", x[i], got[i]));
            }
        }
        Ok(())
    })
    .unwrap_or_else(|e| panic!("{e}"));
    let modelopt = reference::modelopt_divisor(scale, gb);
    let compressed_tensors = reference::compressed_tensors_divisor(scale, gs.to_bits());
    type Slice = fn(&[u32], u8, f32, &mut [u8]);
    let producers: [(&str, Slice, f32, u32); 2] = [
        ("ModelOpt", nvfp4::modelopt_quantize_slice, g, modelopt),
        ("compressed-tensors", nvfp4::compressed_tensors_quantize_slice, gs, compressed_tensors),
    ];
    for (name, slice, tensor_scale, d) in producers {
        check_all(0..u64::from(INFINITY >> 16), |block| {
            let mut keys = vec![0u32; 1 << 16];
            fill_f32_monotone(block << 16, &mut keys, |m| {
                let y = reference::element_quotient(m, d);
                2 * u32::from(reference::producer_code(false, y)) + u32::from(y != 0)
            });
            let magnitudes: Vec<u32> = ((block as u32) << 16..).take(1 << 16).collect();
            let negatives: Vec<u32> = magnitudes.iter().map(|m| m | SIGN).collect();
            let mut got = vec![0u8; 1 << 16];
            for (x, negative) in [(&magnitudes, false), (&negatives, true)] {
                slice(x, scale, tensor_scale, &mut got);
                let want = |key: u32| (key >> 1) as u8 | if negative && key & 1 == 1 { 0b1000 } else { 0 };
                if let Some(i) = (0..got.len()).find(|&i| got[i] != want(keys[i])) {
                    return Err(format!("{name} q of {:#x}: got {:#x}, reference {:#x}", x[i], got[i], want(keys[i])));
                }
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The slice forms equal the element-wise ones on the sample, at every tested scale.
#[test]
fn slices_equal_their_elements() {
    let x: Vec<u32> = sampled_magnitudes().flat_map(|m| [m, m | SIGN]).collect();
    let mut got = vec![0u8; x.len()];
    for g in factors() {
        for scale in SCALES {
            nvfp4::quantize_slice(&x, scale, g, &mut got);
            let want: Vec<u8> = x.iter().map(|&x| nvfp4::quantize(x, scale, g)).collect();
            assert!(got == want, "exact slice at s {scale:#x}, g {g}");
            nvfp4::modelopt_quantize_slice(&x, scale, g, &mut got);
            let want: Vec<u8> = x.iter().map(|&x| nvfp4::modelopt_quantize(x, scale, g)).collect();
            assert!(got == want, "ModelOpt slice at s {scale:#x}, g {g}");
            nvfp4::compressed_tensors_quantize_slice(&x, scale, g, &mut got);
            let want: Vec<u8> = x.iter().map(|&x| nvfp4::compressed_tensors_quantize(x, scale, g)).collect();
            assert!(got == want, "compressed-tensors slice at s {scale:#x}, gs {g}");
        }
    }
}
