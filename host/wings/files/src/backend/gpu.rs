//! The GPU backend ([`GpuBackend`]): scans with the format's count kernel and
//! conversions with their variant's stream kernel, through pinned staging buffers in two
//! lanes ([`bitexact_gpu::staging`]).

use crate::backend::conversion::SampleConversion;
use crate::backend::count::{self, Counts, WithCountVariant, with_count_variant};
use crate::backend::cpu::CpuBackend;
use crate::backend::{Backend, BackendError, CountJob};
use crate::source::{Source, SourceReadError};
use bitexact_gpu::Gpu;
use bitexact_gpu::staging::Staging;
use bitexact_support::element::Endian;
use rayon::prelude::*;
use shared::KernelKind;
use std::sync::{Mutex, PoisonError};

/// Bytes of input each of the GPU backend's two staging lanes holds: the largest chunk
/// moved to the device in one step. Bounds host and device memory whatever the file
/// size; small enough that a call gets several chunks in flight.
pub const GPU_CHUNK_BYTES: usize = 4 << 20;

/// Bytes per read when a staging chunk is filled: 16 reads in flight per chunk.
const STAGING_READ_BYTES: usize = GPU_CHUNK_BYTES / 16;

/// Fills `buf` with the bytes of `data` from `offset` on, in blocks of
/// [`STAGING_READ_BYTES`] on all cores (for a file, as many reads in flight).
fn read_parallel(data: Source<'_>, offset: usize, buf: &mut [u8]) -> Result<(), SourceReadError> {
    buf.par_chunks_mut(STAGING_READ_BYTES)
        .enumerate()
        .try_for_each(|(n, block)| data.read_into(offset + n * STAGING_READ_BYTES, block))
}

/// The GPU backend: scans of every format with the coalesced count kernel of the
/// format's count variant ([`with_count_variant`]: the same `shared` function the CPU
/// scan uses), and every [`SampleConversion`] with its variant's stream kernel. Data goes
/// through pinned staging buffers in two lanes ([`bitexact_gpu::staging`]): the host reads or copies
/// chunk `i + 1` (on all cores) while chunk `i` is copied up, run and copied back. A chunk
/// in which the GPU finds non-finite values is classified (NaN / ±inf) by the CPU, which
/// must find the same count. Big-endian data goes to [`CpuBackend`].
pub struct GpuBackend {
    gpu: Gpu,
    /// Made at the first call, then reused.
    staging: Mutex<Option<Staging>>,
}

impl GpuBackend {
    /// The backend on `gpu`.
    pub(crate) fn new(gpu: Gpu) -> GpuBackend {
        GpuBackend { gpu, staging: Mutex::new(None) }
    }

    /// Runs `work` with the staging buffers, made if this is the first call:
    /// [`GPU_CHUNK_BYTES`] of input and four times that of output (f32 results of 8-bit
    /// samples) per lane.
    fn with_staging<R>(&self, work: impl FnOnce(&mut Staging) -> Result<R, BackendError>) -> Result<R, BackendError> {
        let mut staging = self.staging.lock().unwrap_or_else(PoisonError::into_inner);
        let staging = match &mut *staging {
            Some(staging) => staging,
            empty => empty.insert(self.gpu.staging(GPU_CHUNK_BYTES, 4 * GPU_CHUNK_BYTES)?),
        };
        work(staging)
    }
}

/// [`Backend::count`] on the GPU for little-endian data of one format.
struct GpuCount<'a> {
    backend: &'a GpuBackend,
    job: CountJob<'a>,
}

impl WithCountVariant for GpuCount<'_> {
    type Output = Result<Counts, BackendError>;

    fn call<P>(self) -> Result<Counts, BackendError>
    where
        P: shared::kind::CountNonfinite + Sync,
        P::In: bitexact_gpu::BufferElement + count::Raw,
    {
        let GpuCount { backend, job: CountJob { format, data, progress, .. } } = self;
        let size = size_of::<P::In>();
        // Whole elements per chunk; a trailing partial element is ignored, as on the CPU.
        let whole = data.len() / size * size;
        let mut total = Counts::default();
        backend.with_staging(|staging| {
            let chunk_bytes = staging.input_bytes() / size * size;
            let piece = |i: usize| i * chunk_bytes..((i + 1) * chunk_bytes).min(whole);
            backend.gpu.module_for::<P>(KernelKind::CountNonfinite)?.count_staged::<P, BackendError>(
                staging,
                whole.div_ceil(chunk_bytes),
                |i, input| {
                    let bytes = piece(i);
                    // Read into the pinned buffer: aligned, whatever the data's offset.
                    read_parallel(data, bytes.start, &mut bytemuck::cast_slice_mut(input)[..bytes.len()])?;
                    Ok(bytes.len() / size)
                },
                |i, input, found| {
                    let bytes: &[u8] = bytemuck::cast_slice(input);
                    let first_index = (piece(i).start / size) as u64;
                    if found.count > 0 {
                        let counts = count::count_slice(format, Endian::Little, bytes, first_index);
                        if counts.non_finite() != found.count
                            || counts.first_non_finite != found.first.map(|i| i + first_index)
                        {
                            return Err(BackendError::Disagree { gpu: found, cpu: counts });
                        }
                        total = total.merged(counts);
                    }
                    progress(bytes.len() as u64);
                    Ok(())
                },
            )
        })?;
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

    fn count(&self, job: CountJob<'_>) -> Result<Counts, BackendError> {
        if job.endian != Endian::Little {
            return CpuBackend.count(job);
        }
        with_count_variant(job.format, GpuCount { backend: self, job })
    }

    fn convert(&self, conversion: SampleConversion, src: &[u8], dst: &mut [u8]) -> Result<(), BackendError> {
        conversion.elements(src, dst)?;
        self.with_staging(|staging| conversion.run_on_gpu(&self.gpu, staging, src, dst))
    }
}

/// The GPU backend on device 0, or why there is none (no CUDA driver, no device, or
/// a device that could not be opened).
pub fn gpu_backend() -> Result<Box<dyn Backend>, BackendError> {
    Ok(Box::new(GpuBackend::new(Gpu::open(0)?)))
}
