//! Where `scan` and `normalize` do their work: the CPU (all cores), or the GPU through
//! [`gpu_backend`].
//!
//! A backend gets raw buffers and must give bit for bit what the CPU gives: counts
//! equal to [`FloatFormat::count`], and converted samples equal to [`map_slice`] (f32)
//! or [`map_bits`] (binary16 / bfloat16 bits) of the one primitive bound to each sample
//! width and output type ([`Unorm8Primitive`], [`Unorm16Primitive`],
//! [`Unorm8ToF16Primitive`], [`Unorm16ToF16Primitive`], [`Unorm8ToBf16Primitive`],
//! [`Unorm16ToBf16Primitive`]), which every backend runs: the CPU as Rust, the GPU as that
//! primitive's kernel. A device backend may hand any part it has no kernel for to
//! [`CpuBackend`].

use crate::files::scan::{self, Counts, Endian, FloatFormat, Source, SourceReadError};
use crate::gpu::GpuError;
use rayon::prelude::*;
use shared::{Primitive, Stored};

/// The primitive `normalize` runs on 8-bit samples, on every backend: `x / 255`
/// correctly rounded (the ×3 form, proven exact on all 256 codes by verify).
pub type Unorm8Primitive = shared::variants::unorm8_times3_int;

/// The primitive `normalize` runs on 16-bit samples, on every backend: `x / 65535`
/// correctly rounded (IEEE division, proven exact on all 65,536 codes by verify).
pub type Unorm16Primitive = shared::variants::unorm16_div_ieee;

/// The primitive `normalize --dtype f16` runs on 8-bit samples, on every backend:
/// `x / 255` correctly rounded to binary16, by rounding to odd at f32 precision (exact by
/// construction, and proven on all 256 codes by verify).
pub type Unorm8ToF16Primitive = shared::variants::unorm8_to_f16_odd;

/// The primitive `normalize --dtype f16` runs on 16-bit samples: `x / 65535` correctly
/// rounded to binary16 by rounding to odd (proven on all 65,536 codes; the form through
/// f32 is one ULP off on two of them).
pub type Unorm16ToF16Primitive = shared::variants::unorm16_to_f16_odd;

/// The primitive `normalize --dtype bf16` runs on 8-bit samples: `x / 255` correctly
/// rounded to bfloat16, through the exact f32 quotient (two roundings that are never
/// wrong for 255: proven on all 256 codes; the cheapest exact form on the CPU).
pub type Unorm8ToBf16Primitive = shared::variants::unorm8_to_bf16_via_f32;

/// The primitive `normalize --dtype bf16` runs on 16-bit samples: `x / 65535` correctly
/// rounded to bfloat16, through the exact f32 quotient (never wrong for 65535: proven on
/// all 65,536 codes).
pub type Unorm16ToBf16Primitive = shared::variants::unorm16_to_bf16_via_f32;

/// `dst[i] = P(src[i])` over `min(src.len(), dst.len())` elements on the calling
/// thread, exactly as `P` computes it; the loop vectorises for the conversions above.
pub fn map_slice<P: Primitive<Out = f32>>(src: &[P::In], dst: &mut [f32]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = P::apply(s);
    }
}

/// `dst[i]` = the stored bits of `P(src[i])` over `min(src.len(), dst.len())` elements
/// on the calling thread, exactly as `P` computes them (for the 16-bit float outputs).
pub fn map_bits<P: Primitive>(src: &[P::In], dst: &mut [Bits<P>]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = P::apply(s).to_stored();
    }
}

/// The stored bits of `P`'s result.
type Bits<P> = <<P as Primitive>::Out as Stored>::Bits;

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

/// Why a backend could not do its work.
#[derive(Debug)]
#[non_exhaustive]
pub enum BackendError {
    /// The GPU failed (a copy, a launch, a result).
    Gpu(GpuError),
    /// `--device gpu` was asked for and no GPU could be opened.
    NoGpu(GpuError),
    /// The data could not be read.
    Read(SourceReadError),
    /// The GPU's count of a chunk differs from the CPU's classification of it.
    Disagree {
        /// What the GPU found, as text.
        gpu: String,
        /// What the CPU found, as text.
        cpu: String,
    },
}

impl std::fmt::Display for BackendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BackendError::Gpu(e) => write!(f, "{e}"),
            BackendError::NoGpu(e) => write!(f, "--device gpu: {e}"),
            BackendError::Read(e) => write!(f, "{e}"),
            BackendError::Disagree { gpu, cpu } => write!(f, "GPU and CPU disagree on a chunk: gpu {gpu}, cpu {cpu}"),
        }
    }
}

impl std::error::Error for BackendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BackendError::Gpu(e) | BackendError::NoGpu(e) => Some(e),
            BackendError::Read(e) => Some(e),
            BackendError::Disagree { .. } => None,
        }
    }
}

impl From<GpuError> for BackendError {
    fn from(e: GpuError) -> BackendError {
        BackendError::Gpu(e)
    }
}

impl From<SourceReadError> for BackendError {
    fn from(e: SourceReadError) -> BackendError {
        BackendError::Read(e)
    }
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
    ) -> Result<Counts, BackendError>;

    /// `dst[i] = src[i] / 255`, correctly rounded. `dst.len() == src.len()`.
    fn unorm8_to_f32(&self, src: &[u8], dst: &mut [f32]) -> Result<(), BackendError>;

    /// `dst[i] = src[i] / 65535`, correctly rounded. `dst.len() == src.len()`.
    fn unorm16_to_f32(&self, src: &[u16], dst: &mut [f32]) -> Result<(), BackendError>;

    /// `dst[i]` = the binary16 bits of `src[i] / 255`, correctly rounded.
    /// `dst.len() == src.len()`.
    fn unorm8_to_f16(&self, src: &[u8], dst: &mut [u16]) -> Result<(), BackendError>;

    /// `dst[i]` = the binary16 bits of `src[i] / 65535`, correctly rounded (subnormal for
    /// codes 1..=3). `dst.len() == src.len()`.
    fn unorm16_to_f16(&self, src: &[u16], dst: &mut [u16]) -> Result<(), BackendError>;

    /// `dst[i]` = the bfloat16 bits of `src[i] / 255`, correctly rounded.
    /// `dst.len() == src.len()`.
    fn unorm8_to_bf16(&self, src: &[u8], dst: &mut [u16]) -> Result<(), BackendError>;

    /// `dst[i]` = the bfloat16 bits of `src[i] / 65535`, correctly rounded.
    /// `dst.len() == src.len()`.
    fn unorm16_to_bf16(&self, src: &[u16], dst: &mut [u16]) -> Result<(), BackendError>;
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
    ) -> Result<Counts, BackendError> {
        Ok(scan::count_parallel(format, endian, data, progress)?)
    }

    fn unorm8_to_f32(&self, src: &[u8], dst: &mut [f32]) -> Result<(), BackendError> {
        convert_parallel(src, dst, map_slice::<Unorm8Primitive>);
        Ok(())
    }

    fn unorm16_to_f32(&self, src: &[u16], dst: &mut [f32]) -> Result<(), BackendError> {
        convert_parallel(src, dst, map_slice::<Unorm16Primitive>);
        Ok(())
    }

    fn unorm8_to_f16(&self, src: &[u8], dst: &mut [u16]) -> Result<(), BackendError> {
        convert_parallel(src, dst, map_bits::<Unorm8ToF16Primitive>);
        Ok(())
    }

    fn unorm16_to_f16(&self, src: &[u16], dst: &mut [u16]) -> Result<(), BackendError> {
        convert_parallel(src, dst, map_bits::<Unorm16ToF16Primitive>);
        Ok(())
    }

    fn unorm8_to_bf16(&self, src: &[u8], dst: &mut [u16]) -> Result<(), BackendError> {
        convert_parallel(src, dst, map_bits::<Unorm8ToBf16Primitive>);
        Ok(())
    }

    fn unorm16_to_bf16(&self, src: &[u16], dst: &mut [u16]) -> Result<(), BackendError> {
        convert_parallel(src, dst, map_bits::<Unorm16ToBf16Primitive>);
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

/// A computation over the count kernel's variant of a format: see [`with_count_variant`].
pub trait WithCountVariant {
    /// What it gives.
    type Output;
    /// Runs it with the variant `P`.
    fn call<P>(self) -> Self::Output
    where
        P: shared::kind::CountNonfinite + Sync,
        P::In: crate::gpu::BufferElement;
}

/// `with.call::<P>()` for the is-finite variant `P` whose
/// [`CountNonfinite`](shared::KernelKind::CountNonfinite) kernel the GPU backend runs
/// over `format`: for every format, the variant of the very `shared` function
/// [`FloatFormat::count`] classifies with (the unit tests check that they agree on
/// every encoding of 8 and 16 bits and on a sample of the wider ones).
pub fn with_count_variant<W: WithCountVariant>(format: FloatFormat, with: W) -> W::Output {
    use shared::variants::*;
    match format {
        FloatFormat::Binary16 => with.call::<f16_finite_exp_mask>(),
        FloatFormat::Bfloat16 => with.call::<bf16_is_finite>(),
        FloatFormat::Binary32 => with.call::<f32_is_finite>(),
        FloatFormat::Binary64 => with.call::<f64_is_finite>(),
        FloatFormat::Fp8E4m3 => with.call::<e4m3_is_finite>(),
        FloatFormat::Fp8E5m2 => with.call::<e5m2_is_finite>(),
        FloatFormat::Fp8E4m3Fnuz => with.call::<e4m3fnuz_is_finite>(),
        FloatFormat::Fp8E5m2Fnuz => with.call::<e5m2fnuz_is_finite>(),
    }
}

/// The GPU backend: scans of every format with the coalesced count kernel of the
/// format's is-finite variant ([`with_count_variant`]: the same `shared` function the
/// CPU scan uses), the f32 conversions with the stream kernels of the primitives every
/// backend runs ([`Unorm8Primitive`], [`Unorm16Primitive`]), and the binary16 / bfloat16
/// ones with the map kernels of theirs ([`Unorm8ToF16Primitive`], ...). A chunk in which
/// the GPU finds non-finite values is classified (NaN / ±inf) by the CPU, which must find
/// the same count. Big-endian data goes to [`CpuBackend`].
pub struct GpuBackend {
    gpu: crate::gpu::Gpu,
}

impl GpuBackend {
    /// `f(src[i])` for the [`KernelKind::Stream`](shared::KernelKind::Stream) kernel of
    /// `P` over `src` into `dst`, in chunks.
    fn convert<P>(&self, src: &[P::In], dst: &mut [f32]) -> Result<(), BackendError>
    where
        P: shared::kind::Stream<Out = f32>,
        P::In: cudarc::driver::DeviceRepr + bytemuck::Pod,
    {
        let dst: &mut [u32] = bytemuck::cast_slice_mut(dst);
        let per_chunk = GPU_CHUNK_BYTES / size_of::<P::In>();
        for (src, dst) in src.chunks(per_chunk).zip(dst.chunks_mut(per_chunk)) {
            let input = self.gpu.upload(src)?;
            let mut output = self.gpu.zeros::<u32>(src.len())?;
            self.gpu.map_stream::<P>(&input.as_view(), &mut output.as_view_mut())?;
            self.gpu.download_into(&output, dst)?;
        }
        Ok(())
    }

    /// The stored bits of `f(src[i])` for the [`KernelKind::Map`](shared::KernelKind::Map)
    /// kernel of `P` over `src` into `dst`, in chunks (the 16-bit float outputs).
    fn convert_bits<P>(&self, src: &[P::In], dst: &mut [Bits<P>]) -> Result<(), BackendError>
    where
        P: shared::kind::Map,
        P::In: cudarc::driver::DeviceRepr,
        Bits<P>: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits,
    {
        let per_chunk = GPU_CHUNK_BYTES / size_of::<P::In>();
        for (src, dst) in src.chunks(per_chunk).zip(dst.chunks_mut(per_chunk)) {
            let input = self.gpu.upload(src)?;
            let mut output = self.gpu.zeros::<Bits<P>>(src.len())?;
            self.gpu.map::<P>(&input, &mut output)?;
            self.gpu.download_into(&output, dst)?;
        }
        Ok(())
    }
}

/// [`Backend::count_non_finite`] on the GPU for little-endian data of one format.
struct GpuCount<'a> {
    gpu: &'a crate::gpu::Gpu,
    format: FloatFormat,
    data: Source<'a>,
    progress: &'a (dyn Fn(u64) + Sync),
}

impl WithCountVariant for GpuCount<'_> {
    type Output = Result<Counts, BackendError>;

    fn call<P>(self) -> Result<Counts, BackendError>
    where
        P: shared::kind::CountNonfinite + Sync,
        P::In: crate::gpu::BufferElement,
    {
        let GpuCount { gpu, format, data, progress } = self;
        let size = size_of::<P::In>();
        // Whole elements per chunk; a trailing partial element is ignored, as on the CPU.
        let chunk_bytes = GPU_CHUNK_BYTES / size * size;
        let whole = data.len() / size * size;
        let mut total = Counts::default();
        let mut buffer = Vec::new();
        for start in (0..whole).step_by(chunk_bytes) {
            let bytes = data.get(start..(start + chunk_bytes).min(whole), &mut buffer)?;
            let first_index = (start / size) as u64;
            let elements: std::borrow::Cow<[P::In]> = match bytemuck::try_cast_slice(bytes) {
                Ok(aligned) => aligned.into(),
                Err(_) => bytemuck::pod_collect_to_vec(bytes).into(),
            };
            let input = gpu.upload(&elements)?;
            let found = gpu.count_nonfinite::<P>(&input.as_view())?;
            if found.count > 0 {
                let counts = format.count(Endian::Little, bytes, first_index);
                if counts.non_finite() != found.count || counts.first_non_finite != found.first.map(|i| i + first_index)
                {
                    return Err(BackendError::Disagree { gpu: format!("{found:?}"), cpu: format!("{counts:?}") });
                }
                total = total.merged(counts);
            }
            progress(bytes.len() as u64);
        }
        if whole < data.len() {
            progress((data.len() - whole) as u64);
        }
        Ok(total)
    }
}

impl Backend for GpuBackend {
    fn name(&self) -> String {
        let info = self.gpu.info();
        format!("gpu {}: {} (big-endian scans on the cpu)", info.ordinal, info.name)
    }

    fn count_non_finite(
        &self,
        format: FloatFormat,
        endian: Endian,
        data: Source<'_>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Counts, BackendError> {
        if endian != Endian::Little {
            return CpuBackend.count_non_finite(format, endian, data, progress);
        }
        with_count_variant(format, GpuCount { gpu: &self.gpu, format, data, progress })
    }

    fn unorm8_to_f32(&self, src: &[u8], dst: &mut [f32]) -> Result<(), BackendError> {
        self.convert::<Unorm8Primitive>(src, dst)
    }

    fn unorm16_to_f32(&self, src: &[u16], dst: &mut [f32]) -> Result<(), BackendError> {
        self.convert::<Unorm16Primitive>(src, dst)
    }

    fn unorm8_to_f16(&self, src: &[u8], dst: &mut [u16]) -> Result<(), BackendError> {
        self.convert_bits::<Unorm8ToF16Primitive>(src, dst)
    }

    fn unorm16_to_f16(&self, src: &[u16], dst: &mut [u16]) -> Result<(), BackendError> {
        self.convert_bits::<Unorm16ToF16Primitive>(src, dst)
    }

    fn unorm8_to_bf16(&self, src: &[u8], dst: &mut [u16]) -> Result<(), BackendError> {
        self.convert_bits::<Unorm8ToBf16Primitive>(src, dst)
    }

    fn unorm16_to_bf16(&self, src: &[u16], dst: &mut [u16]) -> Result<(), BackendError> {
        self.convert_bits::<Unorm16ToBf16Primitive>(src, dst)
    }
}

/// The GPU backend on device 0, or why there is none (no CUDA driver, no device, or
/// a device that could not be opened).
pub fn gpu_backend() -> Result<Box<dyn Backend>, GpuError> {
    crate::gpu::Gpu::open(0).map(|gpu| Box::new(GpuBackend { gpu }) as Box<dyn Backend>)
}

/// The backend for `device`: `gpu` fails without a usable GPU, `auto` falls back to the
/// CPU.
pub fn select(device: Device) -> Result<Box<dyn Backend>, BackendError> {
    match device {
        Device::Cpu => Ok(Box::new(CpuBackend)),
        Device::Gpu => gpu_backend().map_err(BackendError::NoGpu),
        Device::Auto => Ok(gpu_backend().unwrap_or_else(|_| Box::new(CpuBackend))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::support::element::Element;

    /// Whether `P` and [`FloatFormat::count`] agree on the encoding `bits`.
    struct AgreesOn {
        format: FloatFormat,
        bits: u64,
    }

    impl WithCountVariant for AgreesOn {
        type Output = (shared::Family, bool);

        fn call<P>(self) -> (shared::Family, bool)
        where
            P: shared::kind::CountNonfinite + Sync,
            P::In: crate::gpu::BufferElement,
        {
            let bytes = &self.bits.to_le_bytes()[..self.format.bytes()];
            let cpu_finite = self.format.count(Endian::Little, bytes, 0).non_finite() == 0;
            (P::FAMILY, P::apply(P::In::from_u64(self.bits)) == cpu_finite)
        }
    }

    #[test]
    fn the_gpu_count_kernel_of_every_format_agrees_with_the_cpu_scan() {
        for &format in FloatFormat::ALL {
            let width = format.bytes() * 8;
            // Every encoding up to 16 bits; for binary32 and binary64 every exponent
            // field with both signs and a spread of mantissas.
            let inputs: Vec<u64> = if width <= 16 {
                (0..1u64 << width).collect()
            } else {
                let mantissa_bits = if width == 32 { 23 } else { 52 };
                let mantissas =
                    [0, 1, 2, (1 << (mantissa_bits - 1)) - 1, 1 << (mantissa_bits - 1), (1 << mantissa_bits) - 1];
                (0..1u64 << (width - mantissa_bits))
                    .flat_map(|top| mantissas.map(|m| top << mantissa_bits | m))
                    .collect()
            };
            for &bits in &inputs {
                let (family, agrees) = with_count_variant(format, AgreesOn { format, bits });
                assert!(agrees, "the {family} kernel and the CPU scan disagree on {bits:#x}");
                assert_eq!(family.to_string(), format!("{}_is_finite", format.name()));
            }
        }
    }
}
