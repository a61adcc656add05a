//! The example's kernels, compiled for the host, run by `device_support::emulator` as
//! real blocks (barriers, static shared memory, warps of 32 and their shuffles, atomics),
//! equal their CPU twins, `shared`'s block functions that `bitexact cast` runs, bit for
//! bit: every MXFP8 kernel (both formats, every scale rule), every FP8 tile kernel (both
//! formats, every recipe, 128 × 128 tiles, rows and small tiles), and every NVFP4 kernel
//! (both passes, every recipe), on lengths and shapes around the warp, the group and the
//! tile, at several block and grid sizes (the grid-stride loops wrap), and with NaN or
//! infinity planted. No GPU needed.

use block_scale::{Fp8Tiles, MxBlocks, Nvfp4Blocks, sample_tensor};
use block_scale_kernels::{
    Fp8Format, Nvfp4Recipe, Recipe, ScaleRule, WeightDtype, fp8_tiles_kernel, mx_kernel, nvfp4_amax, nvfp4_kernel,
};
use device_support::block::Dim3;
use device_support::emulator::{EmulatorError, KernelArgs, Launch, launch};
use shared::fp8::e4m3;
use shared::fp8_block::{self, Blocks};
use shared::{fp8_scale, mx, nvfp4};
use std::time::Instant;

/// Every MX scale rule.
pub const RULES: [ScaleRule; 4] = [ScaleRule::Fit, ScaleRule::Floor, ScaleRule::Rceil, ScaleRule::CompressedTensors];
/// Every FP8 block recipe (the example has bfloat16 scales, DeepGEMM's UE8M0 and
/// compressed-tensors' for E4M3 only).
pub const FP8_RECIPES: [Recipe; 7] = Recipe::ALL;

/// The weights a recipe takes: `x` itself, but rounded to bfloat16 (by truncation) for
/// compressed-tensors' bfloat16 recipe.
pub fn weights_for(recipe: Recipe, x: &[u32]) -> Vec<u32> {
    match recipe {
        Recipe::CompressedTensors(WeightDtype::Bf16) => x.iter().map(|&v| v & 0xFFFF_0000).collect(),
        _ => x.to_vec(),
    }
}
/// Every NVFP4 kernel's recipe and weight dtype.
pub const NVFP4_CASES: [(Nvfp4Recipe, WeightDtype); 4] = [
    (Nvfp4Recipe::Exact, WeightDtype::F32),
    (Nvfp4Recipe::ModelOpt, WeightDtype::F32),
    (Nvfp4Recipe::CompressedTensors, WeightDtype::F32),
    (Nvfp4Recipe::CompressedTensors, WeightDtype::Bf16),
];

fn shape(kernel: &'static str, grid: u32, block: u32) -> Launch {
    Launch { kernel, grid: Dim3::x(grid), block: Dim3::x(block), dynamic_shared_bytes: 0 }
}

fn found(index: u64) -> Option<u64> {
    (index != u64::MAX).then_some(index)
}

/// The MXFP8 twin: `shared::mx::quantize_blocks`.
pub fn twin_mx(x: &[u32], format: Fp8Format, rule: ScaleRule) -> MxBlocks {
    let element = match format {
        Fp8Format::E4M3 => mx::ElementFormat::E4M3,
        Fp8Format::E5M2 => mx::ElementFormat::E5M2,
    };
    let (mut codes, mut scales) = (vec![0u8; x.len()], vec![0u8; x.len().div_ceil(mx::BLOCK_SIZE)]);
    let first = mx::quantize_blocks(x, element, rule, &mut codes, &mut scales).expect("lengths");
    MxBlocks { codes, scales, first_nonfinite: first.map(|i| i as u64) }
}

/// The FP8 tile twin: `shared::fp8_block::quantize_blocks_with`.
pub fn twin_fp8_tiles(
    x: &[u32],
    (rows, cols): (usize, usize),
    blocks: Blocks,
    format: Fp8Format,
    recipe: Recipe,
) -> Fp8Tiles {
    let (down, across) = blocks.scale_shape(rows, cols).expect("a tile with sides");
    let (mut codes, mut scales) = (vec![0u8; x.len()], vec![0f32; down * across]);
    let first = fp8_block::quantize_blocks_with(recipe, x, rows, cols, blocks, format, &mut codes, &mut scales)
        .expect("lengths");
    Fp8Tiles { codes, scales, first_nonfinite: first.map(|i| i as u64) }
}

/// The NVFP4 twin: `amax_slice`, `tensor_scale`, `shared::nvfp4::quantize_blocks`.
pub fn twin_nvfp4(x: &[u32], recipe: Nvfp4Recipe, source: WeightDtype) -> Nvfp4Blocks {
    let (amax, first) = fp8_scale::amax_slice(x);
    let amax = f32::from_bits(amax);
    let tensor_scale = nvfp4::tensor_scale(recipe, amax, source);
    let (mut packed, mut scales) = (vec![0u8; x.len().div_ceil(2)], vec![0u8; x.len().div_ceil(nvfp4::BLOCK_SIZE)]);
    let blocks_first =
        nvfp4::quantize_blocks(x, recipe, tensor_scale, source, &mut packed, &mut scales).expect("lengths");
    assert_eq!(first, blocks_first, "amax_slice and quantize_blocks agree on the first non-finite value");
    Nvfp4Blocks { packed, scales, amax, tensor_scale, first_nonfinite: first.map(|i| i as u64) }
}

/// Compares a kernel's NVFP4, `got`, with the twin's: all of it bit for bit, but the
/// codes of a group whose scale is NaN (a NaN or infinity in it), which NVFP4 leaves
/// unspecified.
pub fn assert_nvfp4_equal(twin: &Nvfp4Blocks, got: &Nvfp4Blocks, what: &str) {
    assert_eq!(got.amax.to_bits(), twin.amax.to_bits(), "{what}: amax");
    assert_eq!(got.tensor_scale.to_bits(), twin.tensor_scale.to_bits(), "{what}: tensor scale");
    assert_eq!(got.first_nonfinite, twin.first_nonfinite, "{what}: first non-finite");
    assert_eq!(got.scales, twin.scales, "{what}: block scales");
    assert_eq!(got.packed.len(), twin.packed.len(), "{what}: packed length");
    let half = nvfp4::BLOCK_SIZE / 2;
    for (byte, (g, t)) in got.packed.iter().zip(&twin.packed).enumerate() {
        if twin.scales[byte / half] != e4m3::NAN_ABS {
            assert_eq!(g, t, "{what}: packed byte {byte} (elements {} and {})", 2 * byte, 2 * byte + 1);
        }
    }
}

/// An MXFP8 kernel under the emulator.
fn emulated_mx(
    x: &[u32],
    format: Fp8Format,
    rule: ScaleRule,
    grid: u32,
    block: u32,
) -> Result<MxBlocks, EmulatorError> {
    let (name, kernel) = mx_kernel(format, rule);
    let (mut codes, mut scales, mut first) = (vec![0u8; x.len()], vec![0u8; x.len().div_ceil(32)], u64::MAX);
    let n = x.len() as u64;
    // SAFETY: only the launch's threads use the pointers, and the buffers outlive it.
    let p = unsafe { KernelArgs::new((x.as_ptr(), codes.as_mut_ptr(), scales.as_mut_ptr(), n, &raw mut first)) };
    launch(&shape(name, grid, block), || {
        let (x, q, scales, n, first) = p.get();
        // SAFETY: `x` holds `n` values, `q` `n` bytes, `scales` one per group of 32,
        // `first` one u64 set to u64::MAX; whole warps.
        unsafe { kernel(x, q, scales, n, first) }
    })?;
    Ok(MxBlocks { codes, scales, first_nonfinite: found(first) })
}

/// An FP8 tile kernel under the emulator (a shape with `rows · cols` values and sided tiles).
fn emulated_fp8_tiles(
    x: &[u32],
    (rows, cols): (usize, usize),
    blocks: Blocks,
    format: Fp8Format,
    recipe: Recipe,
    (grid, block): (u32, u32),
) -> Result<Fp8Tiles, EmulatorError> {
    let (name, kernel) = fp8_tiles_kernel(format, recipe).expect("a kernel for the format and recipe");
    let (tile_rows, tile_cols) = blocks.extent(cols).expect("a tile with sides");
    let (down, across) = blocks.scale_shape(rows, cols).expect("a tile with sides");
    let (mut codes, mut scales, mut first) = (vec![0u8; x.len()], vec![0f32; down * across], u64::MAX);
    let dims = [rows, cols, tile_rows, tile_cols].map(|v| v as u64);
    // SAFETY: only the launch's threads use the pointers, and the buffers outlive it.
    let p = unsafe { KernelArgs::new((x.as_ptr(), codes.as_mut_ptr(), scales.as_mut_ptr(), dims, &raw mut first)) };
    launch(&shape(name, grid, block), || {
        let (x, q, d, [rows, cols, tile_rows, tile_cols], first) = p.get();
        // SAFETY: `x` holds `rows · cols` values, `q` as many bytes, `d` one f32 per
        // tile, `first` one u64 set to u64::MAX; whole warps, every thread to the end.
        unsafe { kernel(x, q, d, rows, cols, tile_rows, tile_cols, first) }
    })?;
    if x.is_empty() {
        // The host stores 1 for the empty blocks, as `block_scale::fp8_tiles_on_gpu` does.
        scales.fill(1.0);
    }
    Ok(Fp8Tiles { codes, scales, first_nonfinite: found(first) })
}

/// Both NVFP4 passes under the emulator.
fn emulated_nvfp4(
    x: &[u32],
    recipe: Nvfp4Recipe,
    source: WeightDtype,
    grid: u32,
    block: u32,
) -> Result<Nvfp4Blocks, EmulatorError> {
    let n = x.len() as u64;
    let (mut amax, mut first) = (0u32, u64::MAX);
    // SAFETY: only the launch's threads use the pointers, and the buffers outlive it.
    let p = unsafe { KernelArgs::new((x.as_ptr(), n, &raw mut amax, &raw mut first)) };
    launch(&shape("nvfp4_amax", grid, block), || {
        let (x, n, amax, first) = p.get();
        // SAFETY: `x` holds `n` values, `amax` and `first` one each, set to 0 and
        // u64::MAX; whole warps, every thread to the end.
        unsafe { nvfp4_amax(x, n, amax, first) }
    })?;
    let (name, kernel) = nvfp4_kernel(recipe, source);
    let (mut packed, mut scales, mut tensor) = (vec![0u8; x.len().div_ceil(2)], vec![0u8; x.len().div_ceil(16)], 0f32);
    // SAFETY: only the launch's threads use the pointers, and the buffers outlive it.
    let p = unsafe {
        KernelArgs::new((x.as_ptr(), packed.as_mut_ptr(), scales.as_mut_ptr(), n, &raw const amax, &raw mut tensor))
    };
    launch(&shape(name, grid, block), || {
        let (x, packed, scales, n, amax, tensor) = p.get();
        // SAFETY: `x` holds `n` values, `packed` one byte per two, `scales` one per group
        // of 16, `amax` pass 1's result, `tensor` one f32; whole warps.
        unsafe { kernel(x, packed, scales, n, amax, tensor) }
    })?;
    Ok(Nvfp4Blocks { packed, scales, amax: f32::from_bits(amax), tensor_scale: tensor, first_nonfinite: found(first) })
}

const GRIDS: [(u32, u32); 3] = [(1, 32), (3, 64), (2, 256)];

#[test]
fn the_mxfp8_kernels_equal_the_twin() -> Result<(), EmulatorError> {
    let big = sample_tensor(5000, 3);
    let (started, mut launches) = (Instant::now(), 0);
    for n in [0usize, 1, 31, 32, 33, 100, 1000, 4099] {
        let x = &big[..n];
        for format in Fp8Format::ALL {
            for rule in RULES {
                let twin = twin_mx(x, format, rule);
                for (grid, block) in GRIDS {
                    let got = emulated_mx(x, format, rule, grid, block)?;
                    assert_eq!(got, twin, "{format:?} {rule:?}, n = {n}, grid {grid} × {block}");
                    launches += 1;
                }
            }
        }
    }
    eprintln!("{launches} emulated MXFP8 launches in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

#[test]
fn the_fp8_tile_kernels_equal_the_twin() -> Result<(), EmulatorError> {
    let big = sample_tensor(256 * 256, 5);
    let (started, mut launches) = (Instant::now(), 0);
    for (rows, cols) in [(0, 7), (1, 1), (3, 200), (130, 257), (256, 256)] {
        let x = &big[..rows * cols];
        for blocks in [Blocks::TILE_128, Blocks::PerRow, Blocks::Tiles { rows: 2, cols: 48 }] {
            for format in Fp8Format::ALL {
                for recipe in FP8_RECIPES.into_iter().filter(|&r| fp8_tiles_kernel(format, r).is_some()) {
                    let x = &weights_for(recipe, x);
                    let twin = twin_fp8_tiles(x, (rows, cols), blocks, format, recipe);
                    for grid in [(1, 32), (3, 128)] {
                        let got = emulated_fp8_tiles(x, (rows, cols), blocks, format, recipe, grid)?;
                        assert_eq!(got, twin, "{blocks:?} {format:?} {recipe:?}, {rows} × {cols}, grid {grid:?}");
                        launches += 1;
                    }
                }
            }
        }
    }
    eprintln!("{launches} emulated FP8 tile launches in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

#[test]
fn the_nvfp4_kernels_equal_the_twin() -> Result<(), EmulatorError> {
    let big = sample_tensor(20_000, 9);
    let (started, mut launches) = (Instant::now(), 0);
    for n in [0usize, 1, 15, 16, 17, 33, 4099, 20_000] {
        let x = &big[..n];
        for (recipe, source) in NVFP4_CASES {
            let twin = twin_nvfp4(x, recipe, source);
            for (grid, block) in GRIDS {
                let got = emulated_nvfp4(x, recipe, source, grid, block)?;
                assert_nvfp4_equal(&twin, &got, &format!("{recipe:?} {source:?}, n = {n}, grid {grid} × {block}"));
                launches += 2;
            }
        }
    }
    eprintln!("{launches} emulated NVFP4 launches in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

#[test]
fn a_nan_or_infinity_is_reported_with_its_first_index_and_its_group_scale_is_nan() -> Result<(), EmulatorError> {
    let mut x = sample_tensor(128 * 96, 11);
    x[9000] = f32::NEG_INFINITY.to_bits();
    x[1234] = 0x7FC0_0000;
    x[2000] = 0xFF80_0001;
    for (grid, block) in [(1, 32), (4, 128)] {
        let mx = emulated_mx(&x, Fp8Format::E4M3, ScaleRule::Fit, grid, block)?;
        assert_eq!(mx, twin_mx(&x, Fp8Format::E4M3, ScaleRule::Fit));
        assert_eq!((mx.first_nonfinite, mx.scales[1234 / 32]), (Some(1234), shared::e8m0::NAN));
        let tiles = emulated_fp8_tiles(&x, (96, 128), Blocks::TILE_128, Fp8Format::E4M3, Recipe::Exact, (grid, block))?;
        assert_eq!(tiles, twin_fp8_tiles(&x, (96, 128), Blocks::TILE_128, Fp8Format::E4M3, Recipe::Exact));
        assert_eq!(tiles.first_nonfinite, Some(1234));
        let nv = emulated_nvfp4(&x, Nvfp4Recipe::Exact, WeightDtype::F32, grid, block)?;
        assert_nvfp4_equal(&twin_nvfp4(&x, Nvfp4Recipe::Exact, WeightDtype::F32), &nv, "planted");
        assert_eq!((nv.first_nonfinite, nv.scales[9000 / 16]), (Some(1234), e4m3::NAN_ABS));
    }
    Ok(())
}

/// A weight of 512 × 4096 (2 Mi values) in an H100's 132 blocks: MXFP8, 128 × 128 tiles
/// and NVFP4, each against the twin (the sanitizer checking every shared-memory access).
#[test]
fn a_real_sized_weight_equals_the_twin() -> Result<(), EmulatorError> {
    let (rows, cols) = (512, 4096);
    let x = sample_tensor(rows * cols, 13);
    let started = Instant::now();
    let mx = emulated_mx(&x, Fp8Format::E4M3, ScaleRule::Fit, 132, 256)?;
    assert!(mx == twin_mx(&x, Fp8Format::E4M3, ScaleRule::Fit), "MXFP8 of 512 × 4096");
    let tiles = emulated_fp8_tiles(&x, (rows, cols), Blocks::TILE_128, Fp8Format::E4M3, Recipe::Exact, (132, 128))?;
    assert!(tiles == twin_fp8_tiles(&x, (rows, cols), Blocks::TILE_128, Fp8Format::E4M3, Recipe::Exact), "tiles");
    let nv = emulated_nvfp4(&x, Nvfp4Recipe::ModelOpt, WeightDtype::F32, 132, 256)?;
    assert_nvfp4_equal(&twin_nvfp4(&x, Nvfp4Recipe::ModelOpt, WeightDtype::F32), &nv, "NVFP4 of 512 × 4096");
    eprintln!("512 × 4096, 4 emulated launches: {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

#[test]
fn a_block_size_that_is_not_whole_warps_is_an_error_not_a_wrong_scale() {
    // The MXFP8 kernels' contract asks for whole warps; the emulator finds the partial
    // warp's missing lanes at the first shuffle.
    let x = sample_tensor(1000, 5);
    let error = emulated_mx(&x, Fp8Format::E4M3, ScaleRule::Fit, 1, 48).unwrap_err();
    assert!(error.to_string().contains("mx_e4m3_fit"), "{error}");
}
