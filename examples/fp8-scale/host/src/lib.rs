//! The host side of the block-level worked example of docs/own-kernel.md: per-tensor
//! scaled FP8 on the GPU through typed launches of `fp8-scale-kernels`' declared kernels,
//! each checked against this PTX's `.param` list when its handle is made.
//!
//! ```no_run
//! use fp8_scale::{PTX, Scaled, scale_on_gpu};
//! use fp8_scale_kernels::{Fp8Format, Rounding};
//! let gpu = bitexact::gpu::Gpu::open(0)?;
//! // SAFETY: `PTX` is `fp8-scale-kernels`' own.
//! let module = unsafe { gpu.load_user_module(PTX)? };
//! let x: Vec<u32> = [0.5f32, -3.0, 1.25].iter().map(|v| v.to_bits()).collect();
//! let Ok(scaled) = scale_on_gpu(&gpu, &module, &x, Fp8Format::E4M3, Rounding::Once)? else {
//!     panic!("a NaN or infinity in the tensor");
//! };
//! assert_eq!(scaled.scale, 448.0 / 3.0);
//! # Ok::<(), bitexact::gpu::GpuError>(())
//! ```

use bitexact::gpu::{Gpu, GpuError, KernelModule, LaunchShape};
use fp8_scale_kernels::{
    Amax, Fp8Format, NonFinite, QuantizeE4m3Once, QuantizeE4m3TwoStep, QuantizeE5m2Once, QuantizeE5m2TwoStep, Rounding,
};
use shared::launch::DeclaredKernel;

/// The kernel crate's PTX (sm_75; the driver compiles it for the device it loads on).
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// Threads per block of both passes (a multiple of 32, as pass 1 needs).
pub const BLOCK_THREADS: u32 = 256;

/// A tensor scaled into FP8.
#[derive(Clone, Debug, PartialEq)]
pub struct Scaled {
    /// The FP8 codes.
    pub codes: Vec<u8>,
    /// `max |x|`.
    pub amax: f32,
    /// The scale `s = fl32(max / amax)` the codes were computed with.
    pub scale: f32,
    /// The dequantisation scale `fl32(1 / s)` stored beside them.
    pub dequant: f32,
}

/// The grid of a launch over `n` elements: enough blocks of [`BLOCK_THREADS`] for one
/// element per thread, at most 16 per multiprocessor (a grid-stride loop does the rest),
/// at least one.
pub fn grid_for(gpu: &Gpu, n: usize) -> u32 {
    let wanted = (n as u64).div_ceil(u64::from(BLOCK_THREADS));
    wanted.clamp(1, u64::from(gpu.info().multiprocessors.max(1) * 16)) as u32
}

/// Both passes on the GPU: `x` (f32 bits) scaled into `format` with `rounding`, or the
/// index of its first NaN or infinity (nothing quantised then). Equal to the CPU twin
/// (`fp8_scale_kernels::{amax, quantize}`) bit for bit (the example's GPU test).
pub fn scale_on_gpu(
    gpu: &Gpu,
    module: &KernelModule,
    x: &[u32],
    format: Fp8Format,
    rounding: Rounding,
) -> Result<Result<Scaled, NonFinite>, GpuError> {
    let n = x.len() as u64;
    let input = gpu.upload(x)?;
    let mut amax = gpu.upload(&[0u32])?;
    let mut first_nonfinite = gpu.upload(&[u64::MAX])?;
    let shape = LaunchShape::linear(grid_for(gpu, x.len()), BLOCK_THREADS);
    let pass1 = module.kernel::<Amax>()?;
    // SAFETY: `input` holds `n` values, `amax` and `first_nonfinite` one each, set to 0
    // and u64::MAX; the launch is 1-D with 256-thread blocks, every thread runs to the end.
    unsafe { pass1.launch(shape, (&input, n, &mut amax, &mut first_nonfinite))? };
    if let [first] = gpu.download(&first_nonfinite)?[..]
        && first != u64::MAX
    {
        return Ok(Err(NonFinite { index: first }));
    }
    let mut codes = gpu.zeros::<u8>(x.len())?;
    let mut dequant = gpu.zeros::<f32>(1)?;
    let args = (&input, &mut codes, n, &amax, &mut dequant);
    // SAFETY (each arm): `input` holds `n` values, `codes` `n` bytes, `amax` pass 1's
    // finite result (checked above), `dequant` one f32; the launch is 1-D.
    match (format, rounding) {
        (Fp8Format::E4M3, Rounding::Once) => unsafe { module.kernel::<QuantizeE4m3Once>()?.launch(shape, args)? },
        (Fp8Format::E4M3, Rounding::TwoStep) => unsafe { module.kernel::<QuantizeE4m3TwoStep>()?.launch(shape, args)? },
        (Fp8Format::E5M2, Rounding::Once) => unsafe { module.kernel::<QuantizeE5m2Once>()?.launch(shape, args)? },
        (Fp8Format::E5M2, Rounding::TwoStep) => unsafe { module.kernel::<QuantizeE5m2TwoStep>()?.launch(shape, args)? },
    }
    let amax = f32::from_bits(gpu.download(&amax)?[0]);
    let dequant = gpu.download(&dequant)?[0];
    let codes = gpu.download(&codes)?;
    Ok(Ok(Scaled { codes, amax, scale: shared::fp8_scale::scale_for(amax, format), dequant }))
}

/// A fixed tensor of `n` f32 (bits) for the example's tests and benchmarks: both signs,
/// exponents 2^-17 … 2^12 around 1, every mantissa pattern a hash gives; `seed` varies it.
pub fn sample_tensor(n: usize, seed: u64) -> Vec<u32> {
    (0..n as u64)
        .map(|i| {
            let h = (i ^ seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 29;
            ((h as u32) & 0x807F_FFFF) | ((110 + (h as u32 >> 23) % 30) << 23)
        })
        .collect()
}

/// The names of the example's declared kernels, for the PTX checks.
pub const KERNELS: [&str; 5] =
    [Amax::NAME, QuantizeE4m3Once::NAME, QuantizeE4m3TwoStep::NAME, QuantizeE5m2Once::NAME, QuantizeE5m2TwoStep::NAME];
