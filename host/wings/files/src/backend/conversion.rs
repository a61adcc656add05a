//! A conversion the backends run ([`SampleConversion`]): one table variant with a
//! [`Stream`](shared::KernelKind::Stream) kernel, its types erased, with its two runs:
//! on the CPU (the variant's function, or a form proven equal to it:
//! [`bitexact_cpu::unorm`]) and on the GPU (its stream kernel over staged chunks).

use crate::backend::BackendError;
use bitexact_cpu::Level;
use bitexact_cpu::convert::LevelForms;
use bitexact_cpu::unorm::{UnormForm, UnormPath};
use bitexact_gpu::staging::Staging;
use bitexact_gpu::{Bits, Gpu};
use bitexact_support::element::Element;
use rayon::prelude::*;
use shared::{KernelKind, kind};

/// A conversion a backend runs over buffers: one variant `P` of the table with a
/// [`Stream`](shared::KernelKind::Stream) kernel, made with [`SampleConversion::of`].
/// The CPU runs `P`'s function ([`bitexact_cpu::map_bits`]), the GPU its stream kernel;
/// the buffers are bytes, whole and aligned elements of `P`'s input and of its stored
/// result.
#[derive(Clone, Copy)]
pub struct SampleConversion {
    name: &'static str,
    in_bytes: usize,
    out_bytes: usize,
    family: shared::Family,
    cpu: UnormPath,
    gpu: GpuConvert,
}

/// A conversion's run on the GPU through the staging buffers given, its variant's types
/// erased: [`stream_staged`].
type GpuConvert = fn(&Gpu, &mut Staging, &[u8], &mut [u8]) -> Result<(), BackendError>;

impl std::fmt::Debug for SampleConversion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl SampleConversion {
    /// The conversion by the variant `P`, which the CPU runs too, at every level.
    pub fn of<P>() -> SampleConversion
    where
        P: kind::Stream,
        P::In: Element,
        Bits<P>: Element,
    {
        SampleConversion::with_cpu_forms::<P>(UnormPath::variant::<P>())
    }

    /// The conversion by the variant `P` on the GPU and by `cpu` on the CPU: forms of
    /// its own per level, which must give `P`'s results on every code (what
    /// `host/wings/files/src/tests/cpu_levels.rs` proves of every entry of `normalize`'s table).
    pub(crate) fn with_cpu_forms<P>(cpu: UnormPath) -> SampleConversion
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
            cpu,
            gpu: |gpu, staging, src, dst| {
                stream_staged::<P>(gpu, staging, bytemuck::cast_slice(src), bytemuck::cast_slice_mut(dst))
            },
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
    /// lacks runs the portable code): what [`CpuBackend`](super::CpuBackend) runs on each
    /// block at [`bitexact_cpu::level`]. For the tests that prove every level; errors as
    /// [`Backend::convert`](super::Backend::convert)'s.
    pub fn convert_on_cpu_at(&self, level: Level, src: &[u8], dst: &mut [u8]) -> Result<(), BackendError> {
        self.elements(src, dst)?;
        self.cpu.run_at(level, src, dst);
        Ok(())
    }

    /// How the CPU computes it at `level`: `P` itself, or a form of its own proven to give
    /// `P`'s results on every code ([`bitexact_cpu::unorm`]).
    pub fn cpu_form(&self, level: Level) -> UnormForm {
        self.cpu.form(level)
    }

    /// [`SampleConversion::convert_on_cpu_at`] with the stores `CpuBackend` uses for
    /// outputs too large to stay in cache ([`LevelForms::run_streaming_at`], where the
    /// level has such a form): the same results.
    pub fn convert_on_cpu_streaming_at(&self, level: Level, src: &[u8], dst: &mut [u8]) -> Result<(), BackendError> {
        self.elements(src, dst)?;
        if !self.cpu.run_streaming_at(level, src, dst) {
            self.cpu.run_at(level, src, dst);
        }
        Ok(())
    }

    /// The CPU forms, per level, for [`CpuBackend`](super::CpuBackend)'s blocks.
    pub(super) fn cpu_path(&self) -> &UnormPath {
        &self.cpu
    }

    /// The conversion on `gpu` through `staging`, over buffers that
    /// [`SampleConversion::elements`] accepted.
    pub(super) fn run_on_gpu(
        &self,
        gpu: &Gpu,
        staging: &mut Staging,
        src: &[u8],
        dst: &mut [u8],
    ) -> Result<(), BackendError> {
        (self.gpu)(gpu, staging, src, dst)
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
    pub(crate) fn elements(&self, src: &[u8], dst: &[u8]) -> Result<usize, BackendError> {
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

/// [`Backend::convert`](super::Backend::convert) over typed slices: `src` of the
/// conversion's input type, `dst` of its stored result (or a type of the same width,
/// such as `f32` for its bits).
pub fn convert_slices<I: bytemuck::Pod, O: bytemuck::Pod>(
    backend: &dyn super::Backend,
    conversion: SampleConversion,
    src: &[I],
    dst: &mut [O],
) -> Result<(), BackendError> {
    backend.convert(conversion, bytemuck::cast_slice(src), bytemuck::cast_slice_mut(dst))
}

/// The smallest chunk a conversion is cut into on the GPU, in samples: a call of fewer
/// than four times this many goes in fewer, bigger chunks.
const GPU_MIN_CHUNK_SAMPLES: usize = 64 << 10;

/// `dst.copy_from_slice(src)` on all cores.
fn copy_parallel<T: Copy + Send + Sync>(src: &[T], dst: &mut [T]) {
    let block = super::count::BLOCK_BYTES / size_of::<T>();
    dst.par_chunks_mut(block).zip(src.par_chunks(block)).for_each(|(d, s)| d.copy_from_slice(s));
}

/// The stored bits of `f(src[i])` for the
/// [`KernelKind::Stream`](shared::KernelKind::Stream) kernel of `P` over `src` into
/// `dst` (an f32's bits, or a binary16 / bfloat16 encoding), through `staging`: at least
/// four chunks when there are samples enough, so that copies and kernel overlap within
/// one call.
fn stream_staged<P>(gpu: &Gpu, staging: &mut Staging, src: &[P::In], dst: &mut [Bits<P>]) -> Result<(), BackendError>
where
    P: kind::Stream,
    P::In: Element,
    Bits<P>: Element,
{
    let capacity = (staging.input_bytes() / size_of::<P::In>()).min(staging.output_bytes() / size_of::<Bits<P>>());
    let chunk = src.len().div_ceil(4).clamp(GPU_MIN_CHUNK_SAMPLES, capacity.max(1));
    let piece = |i: usize| i * chunk..((i + 1) * chunk).min(src.len());
    gpu.module_for::<P>(KernelKind::Stream)?.stream_staged::<P, BackendError>(
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
}
