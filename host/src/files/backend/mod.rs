//! Where `scan` and `normalize` do their work: the CPU (all cores), the GPU
//! ([`GpuBackend`]), or whichever of the two is faster for the job at hand
//! ([`AutoBackend`], the default: `--device auto`).
//!
//! A backend does two things ([`Backend`]): [`Backend::count`] counts the non-finite
//! values of a buffer, and [`Backend::convert`] runs a [`SampleConversion`], a table
//! variant with a [`Stream`](shared::KernelKind::Stream) kernel, over one. It must give
//! bit for bit what the CPU gives: counts equal to [`count::count_slice`] (the format's
//! count variant from the table, [`count::with_count_variant`]), and converted values
//! equal to [`map_bits`] of the conversion's variant, which every backend runs: the CPU
//! as Rust, the GPU as that variant's kernel. A new conversion is a new table entry and
//! a [`SampleConversion::of`] of it; the backends need nothing more. A device backend may
//! hand any part it has no kernel for to [`CpuBackend`].
//!
//! Owns: the backends, the device choice ([`select`]), the CPU counting loops
//! ([`count`]) and the `--device auto` rule ([`auto`]). Uses: [`crate::gpu`],
//! [`crate::cpu`] (the CPU loops compiled for the level chosen at run time) and
//! [`crate::files::source`] (the bytes a count reads).

pub mod auto;
pub mod count;

use crate::cpu::Level;
use crate::cpu::unorm::{UnormForm, UnormPath};
use crate::files::backend::auto::{AutoChoice, AutoReason, AutoRule, GpuProbe, Measured, NextStep, Pick, next_step};
use crate::files::backend::count::{Counts, Endian, WithCountVariant, with_count_variant};
use crate::files::source::{Source, SourceReadError};
use crate::gpu::staging::Staging;
use crate::gpu::{Bits, Gpu, GpuError, NonFinite};
use crate::support::element::Element;
use rayon::prelude::*;
use shared::{Format, Primitive, kind};
use std::ops::Range;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

/// `dst[i]` = the stored bits of `P(src[i])` (an f32's bits, a binary16 or bfloat16
/// encoding) over `min(src.len(), dst.len())` elements on the calling thread, exactly as
/// `P` computes them: [`crate::cpu::map_bits`], compiled for the CPU level chosen at run
/// time (vectorised, with FMA where `P` asks for it).
pub fn map_bits<P: Primitive>(src: &[P::In], dst: &mut [Bits<P>]) {
    crate::cpu::map_bits::<P>(src, dst);
}

/// A conversion a backend runs over buffers: one variant `P` of the table with a
/// [`Stream`](shared::KernelKind::Stream) kernel, made with [`SampleConversion::of`].
/// The CPU runs `P`'s function ([`map_bits`]), the GPU its stream kernel; the buffers
/// are bytes, whole and aligned elements of `P`'s input and of its stored result.
#[derive(Clone, Copy)]
pub struct SampleConversion {
    name: &'static str,
    in_bytes: usize,
    out_bytes: usize,
    family: shared::Family,
    cpu: UnormPath,
    gpu: GpuConvert,
}

/// A conversion's run on the GPU backend, its variant's types erased.
type GpuConvert = fn(&GpuBackend, &[u8], &mut [u8]) -> Result<(), BackendError>;

impl std::fmt::Debug for SampleConversion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl SampleConversion {
    /// The conversion by the variant `P`.
    pub fn of<P>() -> SampleConversion
    where
        P: kind::Stream,
        P::In: Element,
        Bits<P>: Element,
    {
        SampleConversion {
            name: P::NAME,
            in_bytes: size_of::<P::In>(),
            out_bytes: size_of::<Bits<P>>(),
            family: P::FAMILY,
            cpu: crate::cpu::unorm::path_for(P::NAME).unwrap_or_else(UnormPath::variant::<P>),
            gpu: |gpu, src, dst| gpu.convert_with::<P>(bytemuck::cast_slice(src), bytemuck::cast_slice_mut(dst)),
        }
    }

    /// The variant's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The variant's family: what the exact reference computes.
    pub fn family(&self) -> shared::Family {
        self.family
    }

    /// The conversion on the calling thread at the CPU level `level` (a level this CPU
    /// lacks runs the portable code): what [`CpuBackend`] runs on each block at
    /// [`crate::cpu::level`]. For the tests that prove every level; errors as
    /// [`Backend::convert`]'s.
    pub fn convert_on_cpu_at(&self, level: Level, src: &[u8], dst: &mut [u8]) -> Result<(), BackendError> {
        self.elements(src, dst)?;
        self.cpu.run(level, src, dst);
        Ok(())
    }

    /// How the CPU computes it at `level`: `P` itself, or a form of its own proven to give
    /// `P`'s results on every code ([`crate::cpu::unorm`]).
    pub fn cpu_form(&self, level: Level) -> UnormForm {
        self.cpu.form(level)
    }

    /// [`SampleConversion::convert_on_cpu_at`] with the stores `CpuBackend` uses for
    /// outputs too large to stay in cache ([`UnormPath::run_streaming`]): the same results.
    pub fn convert_on_cpu_streaming_at(&self, level: Level, src: &[u8], dst: &mut [u8]) -> Result<(), BackendError> {
        self.elements(src, dst)?;
        self.cpu.run_streaming(level, src, dst);
        Ok(())
    }

    /// Bytes per input element.
    pub fn in_bytes(&self) -> usize {
        self.in_bytes
    }

    /// Bytes per stored result.
    pub fn out_bytes(&self) -> usize {
        self.out_bytes
    }

    /// The number of elements `src` and `dst` hold, or why they cannot be converted:
    /// not the same number ([`BackendError::Lengths`]), or not whole, aligned elements
    /// ([`BackendError::Misaligned`]).
    pub fn elements(&self, src: &[u8], dst: &[u8]) -> Result<usize, BackendError> {
        let whole = |bytes: &[u8], size: usize| {
            bytes.len().is_multiple_of(size) && (bytes.as_ptr() as usize).is_multiple_of(size)
        };
        if !whole(src, self.in_bytes) || !whole(dst, self.out_bytes) {
            return Err(BackendError::Misaligned { conversion: self.name, src: src.len(), dst: dst.len() });
        }
        let (n, m) = (src.len() / self.in_bytes, dst.len() / self.out_bytes);
        if n == m { Ok(n) } else { Err(BackendError::Lengths { src: n, dst: m }) }
    }
}

/// [`Backend::convert`] over typed slices: `src` of the conversion's input type, `dst`
/// of its stored result (or a type of the same width, such as `f32` for its bits).
pub fn convert_slices<I: bytemuck::Pod, O: bytemuck::Pod>(
    backend: &dyn Backend,
    conversion: SampleConversion,
    src: &[I],
    dst: &mut [O],
) -> Result<(), BackendError> {
    backend.convert(conversion, bytemuck::cast_slice(src), bytemuck::cast_slice_mut(dst))
}

/// Where a job runs (the command line's `--device`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// Whichever of the CPU and the GPU is faster for the job, measured on its first
    /// slices ([`crate::files::backend::auto`]); the CPU when there is no usable GPU.
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

/// A place to run `scan` and `normalize` on.
pub trait Backend: Send + Sync {
    /// What the reports print as the device (`cpu (16 threads)`, `gpu 0: ...`; for
    /// `auto`, the one picked and why).
    fn name(&self) -> String;

    /// Counts the non-finite elements of `data` (whole elements of `format`, stored in
    /// `endian` order), indices from 0, calling `progress` with bytes done as it goes.
    /// Errors: the source's read errors, or the device's.
    fn count(
        &self,
        format: Format,
        endian: Endian,
        data: Source<'_>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Counts, BackendError>;

    /// `dst[i]` = the stored result of `conversion` on `src[i]`, where `src` and `dst`
    /// are whole, aligned elements of its input and result types, as many of each
    /// ([`SampleConversion::elements`] says why not). [`convert_slices`] takes typed
    /// slices.
    fn convert(&self, conversion: SampleConversion, src: &[u8], dst: &mut [u8]) -> Result<(), BackendError>;
}

/// The CPU backend: every core of the global rayon pool, in blocks of
/// [`count::BLOCK_BYTES`].
pub struct CpuBackend;

impl Backend for CpuBackend {
    fn name(&self) -> String {
        format!("cpu ({})", crate::support::output::count_of(rayon::current_num_threads() as u64, "thread"))
    }

    fn count(
        &self,
        format: Format,
        endian: Endian,
        data: Source<'_>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Counts, BackendError> {
        Ok(count::count_parallel(format, endian, data, progress)?)
    }

    fn convert(&self, conversion: SampleConversion, src: &[u8], dst: &mut [u8]) -> Result<(), BackendError> {
        conversion.elements(src, dst)?;
        let block = count::BLOCK_BYTES / conversion.out_bytes;
        let level = crate::cpu::level();
        let streaming = dst.len() >= crate::cpu::STREAMING_BYTES;
        let (in_bytes, out_bytes) = (conversion.in_bytes, conversion.out_bytes);
        dst.par_chunks_mut(block * out_bytes).zip(src.par_chunks(block * in_bytes)).for_each(|(d, s)| {
            if streaming {
                conversion.cpu.run_streaming(level, s, d);
            } else {
                conversion.cpu.run(level, s, d);
            }
        });
        Ok(())
    }
}

/// `dst.copy_from_slice(src)` on all cores.
fn copy_parallel<T: Copy + Send + Sync>(src: &[T], dst: &mut [T]) {
    let block = count::BLOCK_BYTES / size_of::<T>();
    dst.par_chunks_mut(block).zip(src.par_chunks(block)).for_each(|(d, s)| d.copy_from_slice(s));
}

/// Bytes per read when a staging chunk is filled: 16 reads in flight per chunk.
const STAGING_READ_BYTES: usize = GPU_CHUNK_BYTES / 16;

/// Fills `buf` with the bytes of `data` from `offset` on, in blocks of
/// [`STAGING_READ_BYTES`] on all cores (for a file, as many reads in flight).
fn read_parallel(data: Source<'_>, offset: usize, buf: &mut [u8]) -> Result<(), SourceReadError> {
    buf.par_chunks_mut(STAGING_READ_BYTES)
        .enumerate()
        .try_for_each(|(n, block)| data.read_into(offset + n * STAGING_READ_BYTES, block))
}

/// Bytes of input each of the GPU backend's two staging lanes holds: the largest chunk
/// moved to the device in one step. Bounds host and device memory whatever the file
/// size; small enough that a call gets several chunks in flight.
pub const GPU_CHUNK_BYTES: usize = 4 << 20;

/// The smallest chunk a conversion is cut into, in samples: a call of fewer than four
/// times this many goes in fewer, bigger chunks.
const GPU_MIN_CHUNK_SAMPLES: usize = 64 << 10;

/// The GPU backend: scans of every format with the coalesced count kernel of the
/// format's count variant ([`with_count_variant`]: the same `shared` function the CPU
/// scan uses), and every [`SampleConversion`] with its variant's stream kernel. Data goes
/// through pinned staging buffers in two lanes ([`crate::gpu::staging`]): the host reads or copies
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
    pub fn new(gpu: Gpu) -> GpuBackend {
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

    /// The stored bits of `f(src[i])` for the
    /// [`KernelKind::Stream`](shared::KernelKind::Stream) kernel of `P` over `src` into
    /// `dst` (an f32's bits, or a binary16 / bfloat16 encoding), staged: at least four
    /// chunks when there are samples enough, so that copies and kernel overlap within one
    /// call.
    fn convert_with<P>(&self, src: &[P::In], dst: &mut [Bits<P>]) -> Result<(), BackendError>
    where
        P: kind::Stream,
        P::In: Element,
        Bits<P>: Element,
    {
        self.with_staging(|staging| {
            let capacity =
                (staging.input_bytes() / size_of::<P::In>()).min(staging.output_bytes() / size_of::<Bits<P>>());
            let chunk = src.len().div_ceil(4).clamp(GPU_MIN_CHUNK_SAMPLES, capacity.max(1));
            let piece = |i: usize| i * chunk..((i + 1) * chunk).min(src.len());
            self.gpu.stream_staged::<P, BackendError>(
                staging,
                src.len().div_ceil(chunk),
                |i, input| {
                    let samples = &src[piece(i)];
                    copy_parallel(samples, &mut input[..samples.len()]);
                    Ok(samples.len())
                },
                |i, _, output| {
                    copy_parallel(output, &mut dst[piece(i)]);
                    Ok(())
                },
            )
        })
    }
}

/// [`Backend::count`] on the GPU for little-endian data of one format.
struct GpuCount<'a> {
    backend: &'a GpuBackend,
    format: Format,
    data: Source<'a>,
    progress: &'a (dyn Fn(u64) + Sync),
}

impl WithCountVariant for GpuCount<'_> {
    type Output = Result<Counts, BackendError>;

    fn call<P>(self) -> Result<Counts, BackendError>
    where
        P: shared::kind::CountNonfinite + Sync,
        P::In: crate::gpu::BufferElement + count::Raw,
    {
        let GpuCount { backend, format, data, progress } = self;
        let size = size_of::<P::In>();
        // Whole elements per chunk; a trailing partial element is ignored, as on the CPU.
        let whole = data.len() / size * size;
        let mut total = Counts::default();
        backend.with_staging(|staging| {
            let chunk_bytes = staging.input_bytes() / size * size;
            let piece = |i: usize| i * chunk_bytes..((i + 1) * chunk_bytes).min(whole);
            backend.gpu.count_staged::<P, BackendError>(
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

    fn count(
        &self,
        format: Format,
        endian: Endian,
        data: Source<'_>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Counts, BackendError> {
        if endian != Endian::Little {
            return CpuBackend.count(format, endian, data, progress);
        }
        with_count_variant(format, GpuCount { backend: self, format, data, progress })
    }

    fn convert(&self, conversion: SampleConversion, src: &[u8], dst: &mut [u8]) -> Result<(), BackendError> {
        conversion.elements(src, dst)?;
        (conversion.gpu)(self, src, dst)
    }
}

/// The GPU backend on device 0, or why there is none (no CUDA driver, no device, or
/// a device that could not be opened).
pub fn gpu_backend() -> Result<Box<dyn Backend>, BackendError> {
    Ok(Box::new(GpuBackend::new(Gpu::open(0)?)))
}

/// Opens the GPU backend when the auto rule asks for it (a test passes a stand-in).
pub type GpuOpener = Box<dyn FnOnce() -> Result<Box<dyn Backend>, BackendError> + Send>;

/// `--device auto`: runs a job on the CPU or the GPU as [`crate::files::backend::auto`]'s rule
/// says, measuring both on the job's first slices when the job is big enough (every
/// measured slice is real work, on the CPU or the GPU), and says in [`Backend::name`]
/// which it picked and why. A GPU that fails while it is measured is dropped and its
/// slice redone on the CPU.
///
/// The job is everything run through this backend, in call order: the rule sees the
/// bytes of all calls together, whatever their number.
pub struct AutoBackend {
    rule: AutoRule,
    job_bytes: u64,
    cpu: Box<dyn Backend>,
    state: Mutex<AutoState>,
}

/// What [`AutoBackend`] knows so far.
struct AutoState {
    measured: Measured,
    opener: Option<GpuOpener>,
    gpu: Option<Box<dyn Backend>>,
    choice: Option<AutoChoice>,
}

impl AutoBackend {
    /// A backend for a job of `job_bytes` bytes of input (what `scan` reads, the samples
    /// `normalize` converts) that follows `rule` between `cpu` and the GPU `open_gpu`
    /// gives, if the rule asks for it.
    pub fn new(rule: AutoRule, job_bytes: u64, cpu: Box<dyn Backend>, open_gpu: GpuOpener) -> AutoBackend {
        let state = AutoState { measured: Measured::START, opener: Some(open_gpu), gpu: None, choice: None };
        AutoBackend { rule, job_bytes, cpu, state: Mutex::new(state) }
    }

    /// Runs `len` bytes of input through `run(backend, bytes)`, in the pieces the rule
    /// asks for (each piece starts at a multiple of `unit`, the element size).
    fn drive(
        &self,
        len: usize,
        unit: usize,
        mut run: impl FnMut(&dyn Backend, Range<usize>) -> Result<(), BackendError>,
    ) -> Result<(), BackendError> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let state = &mut *state;
        let piece = |at: usize, bytes: u64| {
            at..(at + usize::try_from(bytes).unwrap_or(usize::MAX).next_multiple_of(unit).max(unit)).min(len)
        };
        let mut at = 0;
        while at < len {
            let step = match &state.choice {
                Some(choice) => NextStep::Decided(choice.clone()),
                None => next_step(&self.rule, self.job_bytes, &state.measured),
            };
            match step {
                NextStep::Decided(choice) => {
                    let backend = match (choice.pick, &state.gpu) {
                        (Pick::Gpu, Some(gpu)) => gpu.as_ref(),
                        _ => self.cpu.as_ref(),
                    };
                    state.choice = Some(choice);
                    return run(backend, at..len);
                }
                NextStep::TimeCpu(bytes) => {
                    let range = piece(at, bytes);
                    let start = Instant::now();
                    run(self.cpu.as_ref(), range.clone())?;
                    let m = &mut state.measured;
                    m.cpu = m.cpu.plus(range.len() as u64, start.elapsed().as_secs_f64());
                    m.done_bytes += range.len() as u64;
                    at = range.end;
                }
                NextStep::OpenGpu => {
                    let opened = state.opener.take().map(|open| open());
                    state.measured.gpu = match opened {
                        Some(Ok(gpu)) => {
                            state.gpu = Some(gpu);
                            GpuProbe::Opened
                        }
                        Some(Err(BackendError::Gpu(GpuError::NoDriver))) => {
                            GpuProbe::Unavailable("no CUDA driver".into())
                        }
                        Some(Err(error)) => GpuProbe::Unavailable(error.to_string()),
                        None => GpuProbe::Unavailable("it could not be opened".into()),
                    };
                }
                NextStep::WarmGpu(bytes) | NextStep::TimeGpu(bytes) => {
                    let Some(gpu) = state.gpu.as_deref() else {
                        state.measured.gpu = GpuProbe::Unavailable("it could not be opened".into());
                        continue;
                    };
                    let range = piece(at, bytes);
                    let start = Instant::now();
                    match run(gpu, range.clone()) {
                        // The GPU failed: the CPU redoes the piece and the rest.
                        Err(BackendError::Gpu(error)) => {
                            state.gpu = None;
                            state.measured.gpu = GpuProbe::Unavailable(format!("it failed: {error}"));
                            continue;
                        }
                        result => result?,
                    }
                    let m = &mut state.measured;
                    m.gpu = match (&m.gpu, matches!(step, NextStep::TimeGpu(_))) {
                        (GpuProbe::Timed(rate), true) => {
                            GpuProbe::Timed(rate.plus(range.len() as u64, start.elapsed().as_secs_f64()))
                        }
                        _ => GpuProbe::Timed(Default::default()),
                    };
                    m.done_bytes += range.len() as u64;
                    at = range.end;
                }
            }
        }
        Ok(())
    }
}

impl Backend for AutoBackend {
    fn name(&self) -> String {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let choice = match &state.choice {
            Some(choice) => choice.clone(),
            None => match next_step(&self.rule, self.job_bytes, &state.measured) {
                NextStep::Decided(choice) => choice,
                _ => AutoChoice { pick: Pick::Cpu, reason: AutoReason::EndedWhileMeasuring },
            },
        };
        let picked = match (choice.pick, &state.gpu) {
            (Pick::Gpu, Some(gpu)) => gpu.name(),
            _ => self.cpu.name(),
        };
        format!("{picked} ({choice})")
    }

    fn count(
        &self,
        format: Format,
        endian: Endian,
        data: Source<'_>,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Counts, BackendError> {
        let size = format.bytes();
        let mut total = Counts::default();
        self.drive(data.len(), size, |backend, range| {
            let first_index = (range.start / size) as u64;
            let counts = match data {
                Source::Bytes(bytes) => backend.count(format, endian, Source::Bytes(&bytes[range]), progress),
                Source::Read { read, .. } => {
                    let offset = range.start as u64;
                    let read_piece = |at: u64, buf: &mut [u8]| read(offset + at, buf);
                    backend.count(format, endian, Source::Read { len: range.len(), read: &read_piece }, progress)
                }
            }?;
            total = total.merged(counts.shifted(first_index));
            Ok(())
        })?;
        Ok(total)
    }

    /// Measured in bytes of `src`: each piece a backend gets is whole elements of both.
    fn convert(&self, conversion: SampleConversion, src: &[u8], dst: &mut [u8]) -> Result<(), BackendError> {
        conversion.elements(src, dst)?;
        let (width, out) = (conversion.in_bytes, conversion.out_bytes);
        self.drive(src.len(), width, |backend, bytes| {
            let outputs = bytes.start / width * out..bytes.end / width * out;
            backend.convert(conversion, &src[bytes], &mut dst[outputs])
        })
    }
}

/// What `--device` leaves to be settled once the job is known: see [`select`].
pub enum DeviceChoice {
    /// The CPU.
    Cpu,
    /// The GPU, opened.
    Gpu(Box<dyn Backend>),
    /// [`AutoBackend`], for the job [`DeviceChoice::for_job`] is given.
    Auto,
}

/// `--device`, before the job is known: `gpu` opens the GPU now and fails without a
/// usable one ([`BackendError::NoGpu`]); `cpu` and `auto` open nothing yet.
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
    pub fn for_job(self, job_bytes: u64) -> Box<dyn Backend> {
        match self {
            DeviceChoice::Cpu => Box::new(CpuBackend),
            DeviceChoice::Gpu(backend) => backend,
            DeviceChoice::Auto => {
                Box::new(AutoBackend::new(AutoRule::DEFAULT, job_bytes, Box::new(CpuBackend), Box::new(gpu_backend)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    /// A stand-in device: the CPU's work, then a sleep so that a call takes at least
    /// `bytes / bytes_per_s` (or a GPU error, when `fails`); counts the bytes it ran.
    struct Paced {
        name: &'static str,
        bytes_per_s: f64,
        fails: bool,
        ran: Arc<AtomicU64>,
    }

    impl Paced {
        fn run<R>(&self, bytes: usize, work: impl FnOnce() -> Result<R, BackendError>) -> Result<R, BackendError> {
            if self.fails {
                return Err(GpuError::OutOfMemory { bytes }.into());
            }
            let start = Instant::now();
            let result = work()?;
            let due = std::time::Duration::from_secs_f64(bytes as f64 / self.bytes_per_s);
            std::thread::sleep(due.saturating_sub(start.elapsed()));
            self.ran.fetch_add(bytes as u64, Ordering::Relaxed);
            Ok(result)
        }
    }

    impl Backend for Paced {
        fn name(&self) -> String {
            self.name.into()
        }

        fn count(
            &self,
            format: Format,
            endian: Endian,
            data: Source<'_>,
            progress: &(dyn Fn(u64) + Sync),
        ) -> Result<Counts, BackendError> {
            self.run(data.len(), || CpuBackend.count(format, endian, data, progress))
        }

        fn convert(&self, conversion: SampleConversion, src: &[u8], dst: &mut [u8]) -> Result<(), BackendError> {
            self.run(src.len(), || CpuBackend.convert(conversion, src, dst))
        }
    }

    /// A small rule, so that the tests run on small jobs.
    const SMALL: AutoRule = AutoRule {
        min_job_bytes: 1 << 20,
        measure_bytes: 256 << 10,
        warmup_bytes: 64 << 10,
        gpu_start_s: 0.0,
        gpu_margin: 1.1,
    };

    /// Fast: close to what the CPU does anyway. Slow: 256 KiB take 26 ms.
    const FAST: f64 = 4e9;
    const SLOW: f64 = 1e7;

    struct Setup {
        auto: AutoBackend,
        cpu_ran: Arc<AtomicU64>,
        gpu_ran: Arc<AtomicU64>,
        opened: Arc<AtomicBool>,
    }

    /// An auto backend for a job of `job_bytes` between a CPU stand-in of `cpu` bytes/s
    /// and a GPU stand-in of `gpu` bytes/s (`None`: no GPU; `Some(0.0)`: one that fails).
    fn setup(rule: AutoRule, job_bytes: u64, cpu: f64, gpu: Option<f64>) -> Setup {
        let (cpu_ran, gpu_ran, opened) = (Arc::default(), Arc::<AtomicU64>::default(), Arc::<AtomicBool>::default());
        let cpu = Box::new(Paced { name: "cpu", bytes_per_s: cpu, fails: false, ran: Arc::clone(&cpu_ran) });
        let (ran, was_opened) = (Arc::clone(&gpu_ran), Arc::clone(&opened));
        let opener: GpuOpener = Box::new(move || {
            was_opened.store(true, Ordering::Relaxed);
            match gpu {
                None => Err(GpuError::NoDriver.into()),
                Some(rate) => {
                    Ok(Box::new(Paced { name: "gpu", bytes_per_s: rate, fails: rate == 0.0, ran }) as Box<dyn Backend>)
                }
            }
        });
        Setup { auto: AutoBackend::new(rule, job_bytes, cpu, opener), cpu_ran, gpu_ran, opened }
    }

    /// Binary16 data of `len` bytes (a trailing partial element when odd), finite but
    /// for a NaN, +inf and -inf at the given element indices.
    fn halves(len: usize, specials: &[usize]) -> Vec<u8> {
        let mut bytes: Vec<u8> = (0..len).map(|i| (i as u8) & 0x3B).collect();
        for (&at, bits) in specials.iter().zip([0x7E01u16, 0x7C00, 0xFC00]) {
            bytes[2 * at..2 * at + 2].copy_from_slice(&bits.to_le_bytes());
        }
        bytes
    }

    /// Counts of `bytes` by the auto backend, read on demand from an odd offset as
    /// files are, and by the CPU backend.
    fn both_counts(auto: &AutoBackend, bytes: &[u8]) -> (Counts, Counts) {
        let read = |offset: u64, buf: &mut [u8]| {
            buf.copy_from_slice(&bytes[offset as usize..offset as usize + buf.len()]);
            Ok(())
        };
        let source = Source::Read { len: bytes.len(), read: &read };
        let none = |_: u64| {};
        let format = Format::Binary16;
        let on_auto = auto.count(format, Endian::Little, source, &none).expect("auto");
        (on_auto, CpuBackend.count(format, Endian::Little, Source::Bytes(bytes), &none).expect("cpu"))
    }

    #[test]
    fn auto_on_a_tiny_job_is_the_cpu_without_measuring() {
        let bytes = halves(1001, &[3, 400]);
        let job = setup(SMALL, bytes.len() as u64, FAST, Some(FAST));
        let (auto, cpu) = both_counts(&job.auto, &bytes);
        assert_eq!(auto, cpu);
        assert!(!job.opened.load(Ordering::Relaxed), "the GPU was opened for a tiny job");
        assert_eq!(job.cpu_ran.load(Ordering::Relaxed), bytes.len() as u64);
        assert_eq!(job.auto.name(), "cpu (auto: a job of 1001 bytes, under 1.0 MiB: cpu without measuring)");
    }

    #[test]
    fn auto_without_a_gpu_is_the_cpu() {
        let bytes = halves(3 << 20, &[5, 200_000, 1_500_000]);
        let job = setup(SMALL, bytes.len() as u64, FAST, None);
        let (auto, cpu) = both_counts(&job.auto, &bytes);
        assert_eq!(auto, cpu);
        assert!(job.opened.load(Ordering::Relaxed));
        assert_eq!(job.cpu_ran.load(Ordering::Relaxed), bytes.len() as u64);
        assert_eq!(job.auto.name(), "cpu (auto: no usable gpu (no CUDA driver))");
    }

    #[test]
    fn auto_keeps_the_cpu_when_the_gpu_is_slower() {
        let bytes = halves((3 << 20) + 1, &[1, 140_000, 1_400_000]);
        let job = setup(SMALL, bytes.len() as u64, FAST, Some(SLOW));
        let (auto, cpu) = both_counts(&job.auto, &bytes);
        assert_eq!(auto, cpu);
        // The GPU ran its warm-up and measured slices, nothing more.
        assert_eq!(job.gpu_ran.load(Ordering::Relaxed), SMALL.warmup_bytes + SMALL.measure_bytes);
        let name = job.auto.name();
        assert!(
            name.starts_with("cpu (auto: cpu ") && name.ends_with(", each timed on 256.0 KiB of this job)"),
            "{name}"
        );
    }

    #[test]
    fn auto_moves_to_the_gpu_when_it_is_faster() {
        // Conversions this time: the job spans several calls, as `normalize` makes them.
        let samples: Vec<u8> = (0..(4 << 20) + 7).map(|i: u32| (i * 7) as u8).collect();
        let job = setup(SMALL, samples.len() as u64, SLOW, Some(FAST));
        let mut on_auto = vec![0f32; samples.len()];
        for (src, dst) in samples.chunks(1 << 20).zip(on_auto.chunks_mut(1 << 20)) {
            convert_slices(&job.auto, UNORM8(), src, dst).expect("auto");
        }
        let mut on_cpu = vec![0f32; samples.len()];
        convert_slices(&CpuBackend, UNORM8(), &samples, &mut on_cpu).expect("cpu");
        assert!(on_auto.iter().zip(&on_cpu).all(|(a, c)| a.to_bits() == c.to_bits()));
        assert_eq!(job.cpu_ran.load(Ordering::Relaxed), SMALL.measure_bytes, "the CPU ran its measured slice only");
        assert_eq!(job.gpu_ran.load(Ordering::Relaxed), samples.len() as u64 - SMALL.measure_bytes);
        let name = job.auto.name();
        assert!(name.starts_with("gpu (auto: cpu 0.0 GB/s vs gpu "), "{name}");
    }

    #[test]
    fn auto_drops_a_gpu_that_fails_and_redoes_its_slice_on_the_cpu() {
        let words: Vec<u16> = (0..(1 << 20) + 3).map(|i: u32| (i * 31) as u16).collect();
        let job = setup(SMALL, words.len() as u64 * 2, FAST, Some(0.0));
        let mut on_auto = vec![0f32; words.len()];
        let unorm16 = SampleConversion::of::<shared::variants::unorm16_to_f32>();
        convert_slices(&job.auto, unorm16, &words, &mut on_auto).expect("auto");
        let mut on_cpu = vec![0f32; words.len()];
        convert_slices(&CpuBackend, unorm16, &words, &mut on_cpu).expect("cpu");
        assert!(on_auto.iter().zip(&on_cpu).all(|(a, c)| a.to_bits() == c.to_bits()));
        assert_eq!(job.cpu_ran.load(Ordering::Relaxed), words.len() as u64 * 2);
        let name = job.auto.name();
        assert!(name.starts_with("cpu (auto: no usable gpu (it failed: out of device memory"), "{name}");
    }

    /// A conversion for the tests.
    const UNORM8: fn() -> SampleConversion = SampleConversion::of::<shared::variants::unorm8_times3_int>;

    #[test]
    fn conversions_refuse_buffers_of_different_lengths() {
        let error = convert_slices(&CpuBackend, UNORM8(), &[1u8, 2, 3], &mut [0f32; 2]).expect_err("3 into 2");
        assert_eq!(error.to_string(), "3 samples cannot be converted into 2 values");
    }

    #[test]
    fn conversions_refuse_partial_or_misaligned_elements() {
        let words = [0u32; 4];
        let bytes: &[u8] = bytemuck::cast_slice(&words);
        let mut out = [0f32; 4];
        let out: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
        let unorm16 = SampleConversion::of::<shared::variants::unorm16_to_f32>();
        let error = CpuBackend.convert(unorm16, &bytes[1..7], &mut out[..12]).expect_err("misaligned");
        assert_eq!(
            error.to_string(),
            "6 bytes cannot be converted into 12 by unorm16_to_f32: not whole, aligned elements"
        );
        CpuBackend.convert(unorm16, &bytes[..5], &mut out[..8]).expect_err("a partial sample");
        CpuBackend.convert(unorm16, &bytes[..4], &mut out[..8]).expect("whole");
    }
}
