//! The example's GPU proof: each kernel on the GPU equals its CPU twin (`shared`'s block
//! functions, which `bitexact cast` runs) bit for bit, for every format and rule or
//! recipe, on lengths and shapes around the warp, the group and the tile, and with NaN or
//! infinity planted. Without a GPU it prints `skipped: ...` (`REQUIRE_GPU=1` makes that
//! a failure).

use bitexact::gpu::{GpuError, open_or_skip};
use block_scale::{PTX, fp8_tiles_on_gpu, mx_on_gpu, nvfp4_on_gpu, sample_tensor};
use block_scale_kernels::{Fp8Format, Nvfp4Recipe, Recipe, ScaleRule, WeightDtype};
use shared::fp8_block::Blocks;

use crate::emulator::{
    FP8_RECIPES, NVFP4_CASES, RULES, assert_nvfp4_equal, twin_fp8_tiles, twin_mx, twin_nvfp4, weights_for,
};

#[test]
fn the_gpu_equals_the_cpu_twins() -> Result<(), GpuError> {
    let Some(gpu) = open_or_skip() else { return Ok(()) };
    // SAFETY: `PTX` is `block-scale-kernels`' own.
    let module = unsafe { gpu.load_user_module(PTX)? };
    let mut big = sample_tensor(1 << 22, 7);
    for n in [0usize, 1, 16, 31, 32, 33, 1000, 65_537, 1 << 22] {
        let x = &big[..n];
        for format in Fp8Format::ALL {
            for rule in RULES {
                let got = mx_on_gpu(&gpu, &module, x, format, rule)?;
                assert_eq!(got, twin_mx(x, format, rule), "MX {format:?} {rule:?}, n = {n}");
            }
        }
        for (recipe, source) in NVFP4_CASES {
            let got = nvfp4_on_gpu(&gpu, &module, x, recipe, source)?;
            assert_nvfp4_equal(&twin_nvfp4(x, recipe, source), &got, &format!("NVFP4 {recipe:?} {source:?}, n = {n}"));
        }
    }
    for (rows, cols) in [(1, 1), (3, 200), (130, 257), (1024, 1024), (2048, 2048)] {
        let x = &big[..rows * cols];
        for blocks in [Blocks::TILE_128, Blocks::PerRow] {
            for format in Fp8Format::ALL {
                for recipe in FP8_RECIPES {
                    let x = &weights_for(recipe, x);
                    let got = fp8_tiles_on_gpu(&gpu, &module, x, (rows, cols), blocks, format, recipe)?;
                    // compressed-tensors' recipe has an E4M3 kernel only.
                    let twin = block_scale_kernels::fp8_tiles_kernel(format, recipe)
                        .map(|_| twin_fp8_tiles(x, (rows, cols), blocks, format, recipe));
                    assert_eq!(got, twin, "tiles {blocks:?} {format:?} {recipe:?}, {rows} × {cols}");
                }
            }
        }
    }
    // A NaN or infinity: reported with the first index, its group's scale NaN.
    big[777_777] = f32::INFINITY.to_bits();
    big[123_457] = 0xFFC0_0001;
    let x = &big[..1 << 20];
    assert_eq!(
        mx_on_gpu(&gpu, &module, x, Fp8Format::E4M3, ScaleRule::Fit)?,
        twin_mx(x, Fp8Format::E4M3, ScaleRule::Fit)
    );
    let got = nvfp4_on_gpu(&gpu, &module, x, Nvfp4Recipe::Exact, WeightDtype::F32)?;
    assert_eq!(got.first_nonfinite, Some(123_457));
    assert_nvfp4_equal(&twin_nvfp4(x, Nvfp4Recipe::Exact, WeightDtype::F32), &got, "NVFP4 with NaN and infinity");
    let got = fp8_tiles_on_gpu(&gpu, &module, x, (1024, 1024), Blocks::TILE_128, Fp8Format::E4M3, Recipe::Exact)?;
    assert_eq!(got.and_then(|t| t.first_nonfinite), Some(123_457));
    Ok(())
}
