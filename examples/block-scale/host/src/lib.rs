//! The host side of the block-scaled worked example of docs/own-kernel.md: MXFP8, FP8
//! tiles and NVFP4 on the GPU through typed launches of `block-scale-kernels`' declared
//! kernels, each checked against this PTX's `.param` list when its handle is made.
//!
//! ```no_run
//! use block_scale::{PTX, mx_on_gpu};
//! use block_scale_kernels::{Fp8Format, ScaleRule};
//! let gpu = bitexact::gpu::Gpu::open(0)?;
//! // SAFETY: `PTX` is `block-scale-kernels`' own.
//! let module = unsafe { gpu.load_user_module(PTX)? };
//! let x: Vec<u32> = (0..64).map(|i| (i as f32 * 0.25).to_bits()).collect();
//! let mx = mx_on_gpu(&gpu, &module, &x, Fp8Format::E4M3, ScaleRule::Fit)?;
//! assert_eq!((mx.codes.len(), mx.scales.len(), mx.first_nonfinite), (64, 2, None));
//! # Ok::<(), bitexact::gpu::GpuError>(())
//! ```

use bitexact::gpu::{Gpu, GpuError, KernelModule, LaunchShape};
use block_scale_kernels::{
    Fp8Format, Fp8TilesE4m3CompressedTensorsBf16, Fp8TilesE4m3CompressedTensorsF32, Fp8TilesE4m3DeepGemm,
    Fp8TilesE4m3DeepGemmUe8m0, Fp8TilesE4m3Exact, Fp8TilesE4m3ExactBf16, Fp8TilesE4m3ExactUe8m0, Fp8TilesE5m2DeepGemm,
    Fp8TilesE5m2Exact, Fp8TilesE5m2ExactUe8m0, MxE4m3CompressedTensors, MxE4m3Fit, MxE4m3Floor, MxE4m3Rceil,
    MxE5m2CompressedTensors, MxE5m2Fit, MxE5m2Floor, MxE5m2Rceil, Nvfp4Amax, Nvfp4CompressedTensorsBf16,
    Nvfp4CompressedTensorsF32, Nvfp4Exact, Nvfp4ModelOpt, Nvfp4Recipe, Recipe, ScaleRule, WeightDtype,
};
use shared::fp8_block::Blocks;
use shared::launch::DeclaredKernel;

/// The kernel crate's PTX (sm_75; the driver compiles it for the device it loads on).
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// Threads per block of the MXFP8 and NVFP4 kernels (a multiple of 32: whole warps).
pub const BLOCK_THREADS: u32 = 256;

/// Threads per block of the FP8 tile kernels: one per column of a 128-wide tile.
pub const TILE_THREADS: u32 = 128;

/// MXFP8 codes and scales.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MxBlocks {
    /// One FP8 code per value.
    pub codes: Vec<u8>,
    /// One E8M0 scale code per group of 32.
    pub scales: Vec<u8>,
    /// The smallest index of a NaN or infinity, if any.
    pub first_nonfinite: Option<u64>,
}

/// FP8 codes and one scale per tile; equal where every field is, the scales bit for bit.
#[derive(Clone, Debug)]
pub struct Fp8Tiles {
    /// One FP8 code per value.
    pub codes: Vec<u8>,
    /// One stored scale per tile, row-major over the tiles.
    pub scales: Vec<f32>,
    /// The smallest index of a NaN or infinity, if any.
    pub first_nonfinite: Option<u64>,
}

/// NVFP4 codes, scales and the tensor scale; equal where every field is, the f32 ones bit
/// for bit.
#[derive(Clone, Debug)]
pub struct Nvfp4Blocks {
    /// Two E2M1 codes per byte, the even index in the low nibble.
    pub packed: Vec<u8>,
    /// One E4M3 scale code per group of 16.
    pub scales: Vec<u8>,
    /// The tensor's largest finite magnitude (pass 1).
    pub amax: f32,
    /// The tensor scale the recipe stores (`g`, or compressed-tensors' `gs`).
    pub tensor_scale: f32,
    /// The smallest index of a NaN or infinity, if any.
    pub first_nonfinite: Option<u64>,
}

impl PartialEq for Fp8Tiles {
    fn eq(&self, other: &Fp8Tiles) -> bool {
        let bits = |scales: &[f32]| scales.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
        (&self.codes, bits(&self.scales), self.first_nonfinite)
            == (&other.codes, bits(&other.scales), other.first_nonfinite)
    }
}

impl PartialEq for Nvfp4Blocks {
    fn eq(&self, other: &Nvfp4Blocks) -> bool {
        let fields = |b: &Nvfp4Blocks| {
            (b.packed.clone(), b.scales.clone(), b.amax.to_bits(), b.tensor_scale.to_bits(), b.first_nonfinite)
        };
        fields(self) == fields(other)
    }
}

/// The grid of a launch of `per_block`-thread blocks over `n` elements: enough blocks for
/// one element per thread, at most 16 per multiprocessor (a grid-stride loop does the
/// rest), at least one.
pub fn grid_for(gpu: &Gpu, n: usize, per_block: u32) -> u32 {
    let wanted = (n as u64).div_ceil(u64::from(per_block));
    wanted.clamp(1, u64::from(gpu.info().multiprocessors.max(1) * 16)) as u32
}

/// `Some(index)` unless it is `u64::MAX`, the "none met" value.
fn found(index: u64) -> Option<u64> {
    (index != u64::MAX).then_some(index)
}

/// MXFP8 of `x` (f32 bits; a row-major tensor whose rows are a multiple of 32 long, so
/// that no group spans two rows) on the GPU with `format` elements and `rule`. Equal to
/// [`shared::mx::quantize_blocks`] bit for bit (the example's GPU test).
pub fn mx_on_gpu(
    gpu: &Gpu,
    module: &KernelModule,
    x: &[u32],
    format: Fp8Format,
    rule: ScaleRule,
) -> Result<MxBlocks, GpuError> {
    let n = x.len() as u64;
    let input = gpu.upload(x)?;
    let mut codes = gpu.zeros::<u8>(x.len())?;
    let mut scales = gpu.zeros::<u8>(x.len().div_ceil(32))?;
    let mut first = gpu.upload(&[u64::MAX])?;
    // One warp per group: 8 groups per block of 256.
    let shape = LaunchShape::linear(grid_for(gpu, x.len().div_ceil(32) * 32, BLOCK_THREADS), BLOCK_THREADS);
    let args = (&input, &mut codes, &mut scales, n, &mut first);
    // SAFETY (each arm): `input` holds `n` values, `codes` `n` bytes, `scales` one per
    // group of 32, `first` one u64 set to u64::MAX; the blocks are whole warps.
    macro_rules! launch {
        ($kernel:ty) => {
            unsafe { module.kernel::<$kernel>()?.launch(shape, args)? }
        };
    }
    match (format, rule) {
        (Fp8Format::E4M3, ScaleRule::Fit) => launch!(MxE4m3Fit),
        (Fp8Format::E4M3, ScaleRule::Floor) => launch!(MxE4m3Floor),
        (Fp8Format::E4M3, ScaleRule::Rceil) => launch!(MxE4m3Rceil),
        (Fp8Format::E4M3, ScaleRule::CompressedTensors) => launch!(MxE4m3CompressedTensors),
        (Fp8Format::E5M2, ScaleRule::Fit) => launch!(MxE5m2Fit),
        (Fp8Format::E5M2, ScaleRule::Floor) => launch!(MxE5m2Floor),
        (Fp8Format::E5M2, ScaleRule::Rceil) => launch!(MxE5m2Rceil),
        (Fp8Format::E5M2, ScaleRule::CompressedTensors) => launch!(MxE5m2CompressedTensors),
    }
    Ok(MxBlocks {
        codes: gpu.download(&codes)?,
        scales: gpu.download(&scales)?,
        first_nonfinite: found(gpu.download(&first)?[0]),
    })
}

/// FP8 of the `rows × cols` tensor `x` (f32 bits, row-major) in `blocks` on the GPU by
/// `recipe`: the codes and one scale per block (row-major, of
/// [`Blocks::scale_shape`]). Equal to [`shared::fp8_block::quantize_blocks_with`] bit for
/// bit (the example's GPU test). `None` where the shape does not fit (a tile with a zero
/// side, or `x` not `rows · cols` long), and for E5M2 with bfloat16 scales or
/// compressed-tensors' recipe (the example has no such kernels).
pub fn fp8_tiles_on_gpu(
    gpu: &Gpu,
    module: &KernelModule,
    x: &[u32],
    shape: (usize, usize),
    blocks: Blocks,
    format: Fp8Format,
    recipe: Recipe,
) -> Result<Option<Fp8Tiles>, GpuError> {
    let (rows, cols) = shape;
    let (Some((tile_rows, tile_cols)), Some((down, across))) = (blocks.extent(cols), blocks.scale_shape(rows, cols))
    else {
        return Ok(None);
    };
    if block_scale_kernels::fp8_tiles_kernel(format, recipe).is_none() {
        return Ok(None);
    }
    if rows.checked_mul(cols) != Some(x.len()) {
        return Ok(None);
    }
    let tiles = down * across;
    if x.is_empty() {
        // Every block is empty (amax 0): scale 1, as the CPU form stores it.
        return Ok(Some(Fp8Tiles { codes: Vec::new(), scales: vec![1.0; tiles], first_nonfinite: None }));
    }
    let input = gpu.upload(x)?;
    let mut codes = gpu.zeros::<u8>(x.len())?;
    let mut scales = gpu.zeros::<f32>(tiles)?;
    let mut first = gpu.upload(&[u64::MAX])?;
    let launch_shape = LaunchShape::linear(grid_for(gpu, tiles * TILE_THREADS as usize, TILE_THREADS), TILE_THREADS);
    let (rows, cols, tile_rows, tile_cols) = (rows as u64, cols as u64, tile_rows as u64, tile_cols as u64);
    let args = (&input, &mut codes, &mut scales, rows, cols, tile_rows, tile_cols, &mut first);
    // SAFETY (each arm): `input` holds `rows · cols` values, `codes` as many bytes,
    // `scales` one f32 per tile, `first` one u64 set to u64::MAX; the blocks are 128
    // threads, and every thread runs to the end.
    macro_rules! launch {
        ($kernel:ty) => {
            unsafe { module.kernel::<$kernel>()?.launch(launch_shape, args)? }
        };
    }
    match (format, recipe) {
        (Fp8Format::E4M3, Recipe::Exact) => launch!(Fp8TilesE4m3Exact),
        (Fp8Format::E4M3, Recipe::DeepGemm) => launch!(Fp8TilesE4m3DeepGemm),
        (Fp8Format::E4M3, Recipe::DeepGemmUe8m0) => launch!(Fp8TilesE4m3DeepGemmUe8m0),
        (Fp8Format::E4M3, Recipe::ExactUe8m0) => launch!(Fp8TilesE4m3ExactUe8m0),
        (Fp8Format::E4M3, Recipe::ExactBf16) => launch!(Fp8TilesE4m3ExactBf16),
        (Fp8Format::E4M3, Recipe::CompressedTensors(WeightDtype::F32)) => launch!(Fp8TilesE4m3CompressedTensorsF32),
        (Fp8Format::E4M3, Recipe::CompressedTensors(WeightDtype::Bf16)) => launch!(Fp8TilesE4m3CompressedTensorsBf16),
        (Fp8Format::E5M2, Recipe::Exact) => launch!(Fp8TilesE5m2Exact),
        (Fp8Format::E5M2, Recipe::DeepGemm) => launch!(Fp8TilesE5m2DeepGemm),
        (Fp8Format::E5M2, Recipe::ExactUe8m0) => launch!(Fp8TilesE5m2ExactUe8m0),
        (Fp8Format::E5M2, Recipe::CompressedTensors(_) | Recipe::ExactBf16 | Recipe::DeepGemmUe8m0) => {
            return Ok(None);
        }
    }
    Ok(Some(Fp8Tiles {
        codes: gpu.download(&codes)?,
        scales: gpu.download(&scales)?,
        first_nonfinite: found(gpu.download(&first)?[0]),
    }))
}

/// NVFP4 of `x` (f32 bits of weights of dtype `source`; a row-major tensor whose rows are
/// a multiple of 16 long) on the GPU by `recipe`, both passes. Equal to
/// [`shared::fp8_scale::amax_slice`], [`shared::nvfp4::tensor_scale`] and
/// [`shared::nvfp4::quantize_blocks`] bit for bit (the example's GPU test), but for the
/// codes of a group holding a NaN or an infinity, which NVFP4 leaves unspecified.
pub fn nvfp4_on_gpu(
    gpu: &Gpu,
    module: &KernelModule,
    x: &[u32],
    recipe: Nvfp4Recipe,
    source: WeightDtype,
) -> Result<Nvfp4Blocks, GpuError> {
    let n = x.len() as u64;
    let input = gpu.upload(x)?;
    let mut amax = gpu.upload(&[0u32])?;
    let mut first = gpu.upload(&[u64::MAX])?;
    let shape = LaunchShape::linear(grid_for(gpu, x.len(), BLOCK_THREADS), BLOCK_THREADS);
    // SAFETY: `input` holds `n` values, `amax` and `first` one each, set to 0 and
    // u64::MAX; the blocks are 256 threads, and every thread runs to the end.
    unsafe { module.kernel::<Nvfp4Amax>()?.launch(shape, (&input, n, &mut amax, &mut first))? };
    let mut packed = gpu.zeros::<u8>(x.len().div_ceil(2))?;
    let mut scales = gpu.zeros::<u8>(x.len().div_ceil(16))?;
    let mut tensor = gpu.zeros::<f32>(1)?;
    let args = (&input, &mut packed, &mut scales, n, &amax, &mut tensor);
    // SAFETY (each arm): `input` holds `n` values, `packed` one byte per two, `scales`
    // one per group of 16, `amax` pass 1's result, `tensor` one f32; whole warps.
    macro_rules! launch {
        ($kernel:ty) => {
            unsafe { module.kernel::<$kernel>()?.launch(shape, args)? }
        };
    }
    match (recipe, source) {
        (Nvfp4Recipe::Exact, _) => launch!(Nvfp4Exact),
        (Nvfp4Recipe::ModelOpt, _) => launch!(Nvfp4ModelOpt),
        (Nvfp4Recipe::CompressedTensors, WeightDtype::F32) => launch!(Nvfp4CompressedTensorsF32),
        (Nvfp4Recipe::CompressedTensors, WeightDtype::Bf16) => launch!(Nvfp4CompressedTensorsBf16),
    }
    Ok(Nvfp4Blocks {
        packed: gpu.download(&packed)?,
        scales: gpu.download(&scales)?,
        amax: f32::from_bits(gpu.download(&amax)?[0]),
        tensor_scale: gpu.download(&tensor)?[0],
        first_nonfinite: found(gpu.download(&first)?[0]),
    })
}

/// A fixed weight-like tensor of `n` f32 (bits) for the example's tests: each group of 16
/// has its own top binade (2^-122 … 2^7, so block scales differ from group to group),
/// its values spread over the 13 binades below that (subnormals in the smallest groups),
/// and one group in 29 is all zeros; both signs and every mantissa pattern a hash gives;
/// `seed` varies it. Every value is finite.
pub fn sample_tensor(n: usize, seed: u64) -> Vec<u32> {
    let hash = |v: u64| (v ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..n as u64)
        .map(|i| {
            let group = hash(i / 16 + 0x5151) >> 40;
            if group % 29 == 0 {
                return 0;
            }
            let h = hash(i) >> 20;
            let top = 5 + (group % 130) as u32;
            let exponent = top.saturating_sub((h >> 23) as u32 % 13);
            ((h as u32) & 0x807F_FFFF) | (exponent << 23)
        })
        .collect()
}

/// The names of the example's declared kernels, for the PTX checks.
pub const KERNELS: [&str; 23] = [
    MxE4m3Fit::NAME,
    MxE4m3Floor::NAME,
    MxE4m3Rceil::NAME,
    MxE4m3CompressedTensors::NAME,
    MxE5m2Fit::NAME,
    MxE5m2Floor::NAME,
    MxE5m2Rceil::NAME,
    MxE5m2CompressedTensors::NAME,
    Fp8TilesE4m3Exact::NAME,
    Fp8TilesE4m3DeepGemm::NAME,
    Fp8TilesE4m3DeepGemmUe8m0::NAME,
    Fp8TilesE4m3ExactUe8m0::NAME,
    Fp8TilesE4m3ExactBf16::NAME,
    Fp8TilesE4m3CompressedTensorsF32::NAME,
    Fp8TilesE4m3CompressedTensorsBf16::NAME,
    Fp8TilesE5m2Exact::NAME,
    Fp8TilesE5m2DeepGemm::NAME,
    Fp8TilesE5m2ExactUe8m0::NAME,
    Nvfp4Amax::NAME,
    Nvfp4Exact::NAME,
    Nvfp4ModelOpt::NAME,
    Nvfp4CompressedTensorsF32::NAME,
    Nvfp4CompressedTensorsBf16::NAME,
];
