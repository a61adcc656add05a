//! The host side of the worked example of docs/own-kernel.md: the PTX of
//! `f16-load-kernels` (`../kernels`, so `kernels.ptx`), embedded at build time, and one function that runs its kernel
//! through `host`'s typed launches.
//!
//! ```no_run
//! use f16_load::{PTX, load_checked};
//! let gpu = bitexact::gpu::Gpu::open(0)?;
//! // SAFETY: `PTX` is `f16-load-kernels`' own, whose `unsafe impl StreamCount` it keeps.
//! let module = unsafe { gpu.load_user_module(PTX)? };
//! let halves: Vec<u16> = vec![0x3C00, 0x7C00, 0xC000]; // 1.0, +inf, -2.0
//! let (values, failing) = load_checked(&gpu, &module, &halves)?;
//! assert_eq!(values, [1.0, f32::INFINITY, -2.0]);
//! assert_eq!((failing.count, failing.first), (1, Some(1)));
//! # Ok::<(), bitexact::gpu::GpuError>(())
//! ```

use bitexact::gpu::{Failing, Gpu, GpuError, KernelModule};
use f16_load_kernels::F16ToF32Checked;

/// The kernel crate's PTX (sm_75; the driver compiles it for the device it loads on).
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// `halves` (binary16 bits) widened to f32 on the GPU, exactly, and the non-finite ones
/// counted with the first one's index, in one pass: the GPU twin of
/// [`f16_load_kernels::to_f32_checked`], equal to it bit for bit.
pub fn load_checked(gpu: &Gpu, module: &KernelModule, halves: &[u16]) -> Result<(Vec<f32>, Failing), GpuError> {
    let input = gpu.upload(halves)?;
    let mut output = gpu.zeros::<u32>(halves.len())?;
    let failing = module.stream_count::<F16ToF32Checked>(&input.as_view(), &mut output.as_view_mut())?;
    let bits = gpu.download(&output)?;
    Ok((bits.into_iter().map(f32::from_bits).collect(), failing))
}
