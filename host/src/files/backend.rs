//! Where `scan` and `normalize` do their work: the CPU (all cores), or the GPU through
//! [`gpu_backend`].
//!
//! A backend gets raw buffers and must give bit for bit what the CPU gives: counts
//! equal to [`FloatFormat::count`], and f32 outputs equal to [`map_slice`] of the one
//! primitive bound to each sample width ([`Unorm8Primitive`], [`Unorm16Primitive`]),
//! which every backend runs: the CPU as Rust, the GPU as that primitive's kernel. A
//! device backend may hand any part it has no kernel for to [`CpuBackend`].

use crate::files::scan::{self, Counts, Endian, FloatFormat, Source};
use rayon::prelude::*;
use shared::Primitive;

/// The primitive `normalize` runs on 8-bit samples, on every backend: `x / 255`
/// correctly rounded (the ×3 form, proven exact on all 256 codes by verify).
pub type Unorm8Primitive = shared::variants::unorm8_times3_int;

/// The primitive `normalize` runs on 16-bit samples, on every backend: `x / 65535`
/// correctly rounded (IEEE division, proven exact on all 65,536 codes by verify).
pub type Unorm16Primitive = shared::variants::unorm16_div_ieee;

/// `dst[i] = P(src[i])` over `min(src.len(), dst.len())` elements on the calling
/// thread, exactly as `P` computes it; the loop vectorises for the conversions above.
pub fn map_slice<P: Primitive<Out = f32>>(src: &[P::In], dst: &mut [f32]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = P::apply(s);
    }
}

/// The `--device` choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Device {
    /// The GPU when one is present and usable, else the CPU.
    Auto,
    /// The CPU, all cores.
    Cpu,
    /// The GPU; an error when there is none.
    Gpu,
}

/// A place to run `scan` and `normalize` on.
pub trait Backend: Sync {
    /// What the reports print as the device (`cpu`, `gpu 0: ...`).
    fn name(&self) -> String;

    /// Counts the non-finite elements of `data` (whole elements of `format`, stored in
    /// `endian` order), indices from 0, calling `progress` with bytes done as it goes.
    /// Errors: the source's read errors, or the device's.
    fn count_non_finite(
        &self,
        format: FloatFormat,
        endian: Endian,
        data: Source<'_>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Counts, String>;

    /// `dst[i] = src[i] / 255`, correctly rounded. `dst.len() == src.len()`.
    fn unorm8_to_f32(&self, src: &[u8], dst: &mut [f32]) -> Result<(), String>;

    /// `dst[i] = src[i] / 65535`, correctly rounded. `dst.len() == src.len()`.
    fn unorm16_to_f32(&self, src: &[u16], dst: &mut [f32]) -> Result<(), String>;
}

/// The CPU backend: every core of the global rayon pool, in blocks of
/// [`scan::BLOCK_BYTES`].
pub struct CpuBackend;

impl Backend for CpuBackend {
    fn name(&self) -> String {
        format!("cpu ({})", crate::support::output::count_of(rayon::current_num_threads() as u64, "thread"))
    }

    fn count_non_finite(
        &self,
        format: FloatFormat,
        endian: Endian,
        data: Source<'_>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Counts, String> {
        scan::count_parallel(format, endian, data, progress).map_err(|e| e.to_string())
    }

    fn unorm8_to_f32(&self, src: &[u8], dst: &mut [f32]) -> Result<(), String> {
        convert_parallel(src, dst, map_slice::<Unorm8Primitive>);
        Ok(())
    }

    fn unorm16_to_f32(&self, src: &[u16], dst: &mut [f32]) -> Result<(), String> {
        convert_parallel(src, dst, map_slice::<Unorm16Primitive>);
        Ok(())
    }
}

/// Runs an element-wise `kernel` over matching blocks of `src` and `dst` on all cores.
fn convert_parallel<S: Sync, D: Send>(src: &[S], dst: &mut [D], kernel: fn(&[S], &mut [D])) {
    let block = scan::BLOCK_BYTES / size_of::<D>();
    dst.par_chunks_mut(block).zip(src.par_chunks(block)).for_each(|(d, s)| kernel(s, d));
}

/// Bytes of input moved to the device per step: bounds host and device memory whatever
/// the file size (the host copies a chunk only when it is misaligned for its type).
pub const GPU_CHUNK_BYTES: usize = 16 << 20;

/// The GPU backend: binary16 scans with the 16-bytes-per-thread count kernel of
/// `f16_finite_exp_mask` (the same `shared::binary16::is_finite` the CPU scan uses),
/// and both conversions with the kernels of the very functions the CPU path uses. A
/// chunk in which the GPU finds non-finite values is classified (NaN / ±inf) by the CPU,
/// which must find the same count. Other formats and big-endian data go to [`CpuBackend`].
pub struct GpuBackend {
    gpu: crate::gpu::Gpu,
}

impl GpuBackend {
    /// `f(src[i])` for the GPU kernel of `P` over `src` into `dst`, in chunks.
    fn convert<P>(&self, src: &[P::In], dst: &mut [f32]) -> Result<(), String>
    where
        P: shared::kind::Map<Out = f32>,
        P::In: cudarc::driver::DeviceRepr + bytemuck::Pod,
    {
        let dst: &mut [u32] = bytemuck::cast_slice_mut(dst);
        let per_chunk = GPU_CHUNK_BYTES / size_of::<P::In>();
        for (src, dst) in src.chunks(per_chunk).zip(dst.chunks_mut(per_chunk)) {
            let input = self.gpu.upload(src).map_err(|e| e.to_string())?;
            let mut output = self.gpu.zeros::<u32>(src.len()).map_err(|e| e.to_string())?;
            self.gpu.map::<P>(&input, &mut output).map_err(|e| e.to_string())?;
            self.gpu.download_into(&output, dst).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

impl Backend for GpuBackend {
    fn name(&self) -> String {
        let info = self.gpu.info();
        format!("gpu {}: {} (binary16 scans and conversions; other formats on the cpu)", info.ordinal, info.name)
    }

    fn count_non_finite(
        &self,
        format: FloatFormat,
        endian: Endian,
        data: Source<'_>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Counts, String> {
        if format != FloatFormat::Binary16 || endian != Endian::Little {
            return CpuBackend.count_non_finite(format, endian, data, progress);
        }
        let mut total = Counts::default();
        let mut buffer = Vec::new();
        for start in (0..data.len()).step_by(GPU_CHUNK_BYTES) {
            let bytes =
                data.get(start..(start + GPU_CHUNK_BYTES).min(data.len()), &mut buffer).map_err(|e| e.to_string())?;
            let first_byte = start as u64;
            let halves: std::borrow::Cow<[u16]> = match bytemuck::try_cast_slice(bytes) {
                Ok(aligned) => aligned.into(),
                Err(_) => bytemuck::pod_collect_to_vec(bytes).into(),
            };
            let input = self.gpu.upload(&halves).map_err(|e| e.to_string())?;
            let found =
                self.gpu.count_nonfinite::<shared::variants::f16_finite_exp_mask>(&input).map_err(|e| e.to_string())?;
            if found.count > 0 {
                let counts = format.count(endian, bytes, first_byte / 2);
                if counts.non_finite() != found.count
                    || counts.first_non_finite != found.first.map(|i| i + first_byte / 2)
                {
                    return Err(format!("GPU and CPU disagree on a chunk: gpu {found:?}, cpu {counts:?}"));
                }
                total = total.merged(counts);
            }
            progress(bytes.len() as u64);
        }
        Ok(total)
    }

    fn unorm8_to_f32(&self, src: &[u8], dst: &mut [f32]) -> Result<(), String> {
        self.convert::<Unorm8Primitive>(src, dst)
    }

    fn unorm16_to_f32(&self, src: &[u16], dst: &mut [f32]) -> Result<(), String> {
        self.convert::<Unorm16Primitive>(src, dst)
    }
}

/// The GPU backend on device 0, or why there is none (no CUDA driver, no device, or
/// a device that could not be opened).
pub fn gpu_backend() -> Result<Box<dyn Backend>, String> {
    crate::gpu::Gpu::open(0).map(|gpu| Box::new(GpuBackend { gpu }) as Box<dyn Backend>).map_err(|e| e.to_string())
}

/// The backend for `device`: `gpu` fails without a usable GPU, `auto` falls back to the
/// CPU.
pub fn select(device: Device) -> Result<Box<dyn Backend>, String> {
    match device {
        Device::Cpu => Ok(Box::new(CpuBackend)),
        Device::Gpu => gpu_backend().map_err(|e| format!("--device gpu: {e}")),
        Device::Auto => Ok(gpu_backend().unwrap_or_else(|_| Box::new(CpuBackend))),
    }
}
