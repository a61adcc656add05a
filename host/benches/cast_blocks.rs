//! `bitexact cast` file to file to FP8 E4M3 scaled per channel, per 128 × 128 block (with
//! f32 or power-of-two scales, and by DeepGEMM's (with either) and compressed-tensors' recipes) and MX (a power of two per 32 values), and to NVFP4 (ModelOpt's
//! and compressed-tensors' layouts, each recipe),
//! against the per-tensor cast of the same checkpoint in the same run
//! (`cargo bench -p host --bench cast_blocks [-- --mib N --reps N --cols N]`).
//!
//! The checkpoint is one f32 weight of `--mib` MiB (default 256) of `--cols` columns
//! (default 4096), values of magnitudes from 2^-20 to 2^4, in a temporary folder (the page cache,
//! so mostly memory traffic); each cast writes a new output there without a sync
//! (`CastOptions::sync = false`: the wait for the disk is not the loop's) and removes it.
//! Each row's best time over `--reps` runs is set against the per-tensor cast's, run in
//! turn with it: `per-tensor/row` ≥ 1 means as fast. The per-tensor cast reads the data
//! twice (amax, then the values); the block-scaled FP8 ones once (each block row's
//! codes by a loop compiled for the CPU level); NVFP4 twice (the tensor's amax, then its blocks).

use bitexact::files::cast::convert::{CastTarget, Target};
use bitexact::files::cast::{CastOptions, CastRecipe, ScaleFormat, ScaleLayout, ScaleMode, cast};
use bitexact::support::best_of_pair;
use std::path::Path;

/// The f32 bits of element `i`: a scrambled mantissa, exponents from 2^-20 to 2^4.
fn value(i: u64) -> u32 {
    let r = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20;
    let exponent = 107 + (r % 24) as u32;
    (r as u32 >> 31) << 31 | exponent << 23 | (r >> 8) as u32 & 0x007F_FFFF
}

/// A safetensors file holding the f32 tensor `w.weight` of `rows × cols`.
fn write_checkpoint(path: &Path, rows: usize, cols: usize) {
    let header =
        format!(r#"{{"w.weight":{{"dtype":"F32","shape":[{rows},{cols}],"data_offsets":[0,{}]}}}}"#, rows * cols * 4);
    let mut header = header.into_bytes();
    while !(8 + header.len()).is_multiple_of(8) {
        header.push(b' ');
    }
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(&header);
    bytes.extend((0..(rows * cols) as u64).flat_map(|i| value(i).to_le_bytes()));
    std::fs::write(path, bytes).expect("write the checkpoint");
}

/// One cast of `input` to `output` by `options` (not synced), the output removed after.
fn cast_once(input: &Path, output: &Path, options: &CastOptions) {
    let options = CastOptions { sync: false, ..options.clone() };
    cast(&[input.to_path_buf()], output, &options).expect("cast");
    std::fs::remove_file(output).expect("remove the output");
}

/// E4M3 scaled by `scale` and `recipe`, with scales of `format`.
fn e4m3(scale: ScaleMode, recipe: CastRecipe, format: ScaleFormat) -> CastOptions {
    CastOptions { to: Target::E4m3.into(), scale, recipe, scale_format: format, ..CastOptions::default() }
}

/// NVFP4 in `layout` by `recipe`.
fn nvfp4(layout: ScaleLayout, recipe: CastRecipe) -> CastOptions {
    CastOptions { to: CastTarget::Nvfp4, layout, recipe, ..CastOptions::default() }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut mib, mut reps, mut cols) = (256usize, 5usize, 4096usize);
    while let Some(arg) = args.next() {
        let value = args.next().and_then(|v| v.parse().ok());
        match arg.as_str() {
            "--mib" => mib = value.unwrap_or(mib),
            "--reps" => reps = value.unwrap_or(reps),
            "--cols" => cols = value.unwrap_or(cols).max(1),
            _ => {}
        }
    }
    let rows = ((mib << 20) / 4 / cols).max(1);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let input = dir.path().join("w.safetensors");
    write_checkpoint(&input, rows, cols);
    let output = dir.path().join("out.safetensors");
    let bytes = (rows * cols * 4) as f64;
    println!(
        "cast f32 file to file, [{rows}, {cols}] ({} MiB), {} threads, CPU level {}",
        (rows * cols * 4) >> 20,
        rayon::current_num_threads(),
        bitexact::cpu::level()
    );
    let f32_scales = ScaleFormat::F32;
    let rows = [
        ("per-channel", e4m3(ScaleMode::PerChannel, CastRecipe::Exact, f32_scales)),
        ("block 128x128", e4m3(ScaleMode::Block, CastRecipe::Exact, f32_scales)),
        ("block ue8m0", e4m3(ScaleMode::Block, CastRecipe::Exact, ScaleFormat::Ue8m0)),
        ("block deepgemm", e4m3(ScaleMode::Block, CastRecipe::DeepGemm, f32_scales)),
        ("block dg ue8m0", e4m3(ScaleMode::Block, CastRecipe::DeepGemm, ScaleFormat::Ue8m0)),
        ("block c-tensors", e4m3(ScaleMode::Block, CastRecipe::CompressedTensors, f32_scales)),
        ("mx", e4m3(ScaleMode::Mx, CastRecipe::Exact, f32_scales)),
        ("mx c-tensors", e4m3(ScaleMode::Mx, CastRecipe::CompressedTensors, f32_scales)),
        ("nvfp4 exact", nvfp4(ScaleLayout::ModelOpt, CastRecipe::Exact)),
        ("nvfp4 modelopt", nvfp4(ScaleLayout::ModelOpt, CastRecipe::ModelOpt)),
        ("nvfp4 c-tensors", nvfp4(ScaleLayout::CompressedTensors, CastRecipe::CompressedTensors)),
    ];
    let per_tensor = e4m3(ScaleMode::PerTensor, CastRecipe::Exact, f32_scales);
    for (name, options) in rows {
        let (row_s, tensor_s) =
            best_of_pair(reps, || cast_once(&input, &output, &options), || cast_once(&input, &output, &per_tensor));
        println!(
            "{name:<15} {:>6.2} GB/s in   per-tensor {:>6.2} GB/s   per-tensor/row {:.2}x",
            bytes / row_s / 1e9,
            bytes / tensor_s / 1e9,
            tensor_s / row_s
        );
    }
}
