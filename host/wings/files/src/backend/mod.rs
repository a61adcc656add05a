//! Where `scan` and `normalize` do their work: the CPU (all cores, [`CpuBackend`]), the
//! GPU ([`GpuBackend`]), or whichever of the two is faster for the job at hand
//! ([`AutoBackend`], the default: `--device auto`).
//!
//! The API here is the choice, [`Device`], and what fails, [`BackendError`]; the
//! backends themselves are the wing's plumbing (`#[doc(hidden)]`), described below for
//! readers of the source.
//!
//! A backend does two things ([`Backend`]): [`Backend::count`] counts the non-finite
//! values of a buffer ([`CountJob`]), and [`Backend::convert`] runs a
//! [`SampleConversion`], a table variant with a [`Stream`](shared::KernelKind::Stream)
//! kernel, over one. It must give bit for bit what the CPU gives: counts equal to
//! [`count::count_slice`] (the format's count variant from the table,
//! [`count::with_count_variant`]), and converted values equal to
//! [`bitexact_cpu::map_bits`] of the conversion's variant, which every backend runs: the
//! CPU as Rust, the GPU as that variant's kernel. A new conversion is a new table entry
//! and a [`SampleConversion::of`] of it; the backends need nothing more. A device backend
//! may hand any part it has no kernel for to [`CpuBackend`].
//!
//! The rooms: this file (the trait, its errors, the device choice [`select`]),
//! `conversion` ([`SampleConversion`]: a variant's CPU forms and its staged run on the
//! GPU), `cpu` ([`CpuBackend`]), `gpu` ([`GpuBackend`]), [`auto`] (the `--device auto`
//! rule and the backend that follows it) and [`count`] (the CPU counting loops).
//!
//! Owns: the backends, the device choice, the CPU counting loops and the `--device auto`
//! rule. Uses: [`bitexact_gpu`], [`bitexact_cpu`] (the CPU loops compiled for the level
//! chosen at run time) and [`crate::source`] (the bytes a count reads).

#[doc(hidden)]
pub mod auto;
mod conversion;
#[doc(hidden)]
pub mod count;
mod cpu;
mod gpu;

/// What [`BackendError`] names.
pub use crate::source::SourceReadError;

#[doc(hidden)]
pub use conversion::{SampleConversion, convert_slices};
#[doc(hidden)]
pub use cpu::CpuBackend;
#[doc(hidden)]
pub use gpu::{GPU_CHUNK_BYTES, GpuBackend, gpu_backend};

use crate::backend::auto::{AutoBackend, AutoRule};
use crate::backend::count::Counts;
use crate::source::Source;
use bitexact_gpu::{Gpu, GpuError, NonFinite};
use bitexact_support::element::Endian;
use shared::Format;

/// Where a job runs (the command line's `--device`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// Whichever of the CPU and the GPU is faster for the job, measured on its first
    /// slices ([`crate::backend::auto`]); the CPU when there is no usable GPU.
    Auto,
    /// The CPU, all cores.
    Cpu,
    /// The GPU; an error when there is none.
    Gpu,
}

/// Why a backend could not do its work. A GPU error that `--device gpu` meets is in
/// the message, not behind `source()`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// Reading the data failed (the file shrank, a read failed).
    #[error(transparent)]
    Read(#[from] SourceReadError),
    /// The GPU failed.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// `--device gpu` was asked for and there is no usable GPU.
    #[error("--device gpu: {0}")]
    NoGpu(GpuError),
    /// The GPU found non-finite values in a chunk that the CPU counts differently.
    #[error("GPU and CPU disagree on a chunk: gpu {gpu:?}, cpu {cpu:?}")]
    Disagree {
        /// What the GPU found, indices from the chunk's start.
        gpu: NonFinite,
        /// What the CPU found, indices from the data's start.
        cpu: Counts,
    },
    /// A conversion was given buffers of different lengths.
    #[error("{src} samples cannot be converted into {dst} values")]
    Lengths {
        /// Samples.
        src: usize,
        /// Outputs.
        dst: usize,
    },
    /// A conversion was given buffers that are not whole, aligned elements of its types.
    #[error("{src} bytes cannot be converted into {dst} by {conversion}: not whole, aligned elements")]
    Misaligned {
        /// The conversion's variant.
        conversion: &'static str,
        /// Bytes of samples.
        src: usize,
        /// Bytes of outputs.
        dst: usize,
    },
}

/// What [`Backend::count`] counts: the bytes `data`, whole elements of `format` stored
/// in `endian` order (a trailing partial element is ignored), with `progress` called
/// with the bytes done as the count goes.
#[derive(Clone, Copy)]
#[doc(hidden)]
pub struct CountJob<'a> {
    /// The elements' format.
    pub format: Format,
    /// Their byte order.
    pub endian: Endian,
    /// Their bytes, in memory or read on demand.
    pub data: Source<'a>,
    /// Called with bytes done (a delta), from any thread.
    pub progress: &'a (dyn Fn(u64) + Sync),
}

impl<'a> CountJob<'a> {
    /// The same count over other bytes (a piece of these, or a copy of them).
    pub(crate) fn over<'b>(&self, data: Source<'b>) -> CountJob<'b>
    where
        'a: 'b,
    {
        CountJob { data, ..*self }
    }
}

/// A place to run `scan` and `normalize` on.
#[doc(hidden)]
pub trait Backend: Send + Sync {
    /// What the reports print as the device (`cpu (16 threads)`, `gpu 0: ...`; for
    /// `auto`, the one picked and why).
    fn name(&self) -> String;

    /// The non-finite elements of `job.data`, indices from 0. Errors: the source's read
    /// errors, or the device's.
    fn count(&self, job: CountJob<'_>) -> Result<Counts, BackendError>;

    /// `dst[i]` = the stored result of `conversion` on `src[i]`, where `src` and `dst`
    /// are whole, aligned elements of its input and result types, as many of each
    /// ([`SampleConversion::elements`] says why not). [`convert_slices`] takes typed
    /// slices.
    fn convert(&self, conversion: SampleConversion, src: &[u8], dst: &mut [u8]) -> Result<(), BackendError>;
}

/// What `--device` leaves to be settled once the job is known: see [`select`].
#[doc(hidden)]
pub enum DeviceChoice {
    /// The CPU.
    Cpu,
    /// The GPU, opened.
    Gpu(Box<dyn Backend>),
    /// [`AutoBackend`], for the job `DeviceChoice::for_job` is given.
    Auto,
}

/// `--device`, before the job is known: `gpu` opens the GPU now and fails without a
/// usable one ([`BackendError::NoGpu`]); `cpu` and `auto` open nothing yet.
#[doc(hidden)]
pub fn select(device: Device) -> Result<DeviceChoice, BackendError> {
    match device {
        Device::Cpu => Ok(DeviceChoice::Cpu),
        Device::Gpu => match Gpu::open(0) {
            Ok(gpu) => Ok(DeviceChoice::Gpu(Box::new(GpuBackend::new(gpu)))),
            Err(error) => Err(BackendError::NoGpu(error)),
        },
        Device::Auto => Ok(DeviceChoice::Auto),
    }
}

impl DeviceChoice {
    /// The backend for a job of `job_bytes` bytes of input; for `auto`, an
    /// [`AutoBackend`] with [`AutoRule::DEFAULT`] that opens the GPU only if the rule
    /// asks for it.
    pub(crate) fn for_job(self, job_bytes: u64) -> Box<dyn Backend> {
        match self {
            DeviceChoice::Cpu => Box::new(CpuBackend),
            DeviceChoice::Gpu(backend) => backend,
            DeviceChoice::Auto => {
                Box::new(AutoBackend::new(AutoRule::DEFAULT, job_bytes, Box::new(CpuBackend), Box::new(gpu_backend)))
            }
        }
    }
}
