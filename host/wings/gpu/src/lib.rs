//! A small safe GPU layer over cudarc's driver API (loaded at run time, so nothing here
//! needs CUDA to build): open a device, load the embedded PTX once, run any kernel of the
//! table (or of one's own) over device buffers, and staged over host data too big to
//! copy up whole; the hardware conversion kernels from the newer targets' modules where
//! the device can run them.
//!
//! Layered as cudarc is (its `sys`/`result` → `safe`):
//! - `raw`: every `unsafe` driver call (the driver probe, the one kernel launch
//!   `raw::launch_checked`, pinned memory, views of words as another integer type, the
//!   JIT log). Nothing else here calls the driver unsafely.
//! - the typed module: [`KernelModule`] (`own`: a loaded module, its PTX's `.param`
//!   lists, and loading modules of one's own), its typed handle [`TypedKernel`]
//!   (`typed`: a declaration checked against the PTX, the host arguments against the
//!   declaration by the compiler, the [`LaunchShape`] (`shape`) against the device),
//!   and the kinds' launches (`kinds`: each [`shared::KernelKind`] declared as
//!   [`shared::kind::KindKernel`] and launched through that one handle; [`staging`]'s
//!   two-lane pipeline over them).
//! - [`Gpu`] (this file): the device, holding its modules (the embedded baseline and
//!   the newer targets' as [`KernelModule`]s), its buffers, events and limits;
//!   [`Gpu::module_for`] gives the module that holds a primitive's kernel of a kind.
//! - `errors`: what can go wrong, by stage ([`GpuError`]).
//!
//! Kernels are launched through one typed method per kind of kernel
//! ([`shared::KernelKind`]) on the module that holds them, bound by that kind's trait:
//! [`KernelModule::map`] needs `P: kind::Map`, [`KernelModule::launch_stream`]
//! `P: kind::Stream`, and so on (`gpu.module_for::<P>(KernelKind::Map)?.map::<P>(..)`). The table implements a
//! kind's trait only for the variants that have the kernel, so the method's signature is
//! the kernel's, and the declaration is checked against the PTX's own `.param` list
//! before the launch; no safe function launches a kernel by name.
//!
//! A PTX module of one's own loads next to the embedded ones ([`Gpu::load_user_module`],
//! `unsafe`: see its contract; [`KernelModule`]); its kernels launch through the same typed
//! methods, for primitives of one's own whose kind traits the user implements with an
//! `unsafe impl`, and any kernel declared with [`shared::kernel!`] through
//! [`KernelModule::kernel`]'s typed handle. Such a module gets what the embedded ones get:
//! the same kind launches, staging ([`KernelModule::stream_staged`],
//! [`KernelModule::count_staged`]) and timing ([`Gpu::time_ms`] times work on the stream
//! every module of the `Gpu` launches on).
//!
//! Nothing here panics on a machine without CUDA: [`Gpu::open`] asks for the driver
//! library before cudarc can panic, and every failure is a [`GpuError`].
//!
//! Host data too big to copy up whole goes through [`staging`]: pinned buffers in two
//! lanes, so that reading, copies and kernels overlap.
//!
//! Owns: the CUDA context, device buffers, the embedded PTX ([`ptx`]) and every kernel
//! launch (the `unsafe` driver calls stay in `raw`). Uses: [`bitexact_support`] of the
//! library's wings (and `ptx_builder::ptx_text` to read PTX); it knows kernels by their
//! `shared` types, never the variant table.
#![deny(unsafe_code)]

mod errors;
mod kinds;
mod own;
#[doc(hidden)]
pub mod ptx;
mod raw;
mod shape;
pub mod staging;
mod typed;

pub use errors::{DeviceCopy, GpuError, ModuleUnavailable};
pub use own::{Failing, KernelModule, RESERVED_PREFIX};
pub use shape::{LaunchLimits, LaunchShape, ShapeProblem};
pub use shared::launch::Dim3;
pub use typed::{HostArg, HostArgs, TypedKernel, check_params};

use bitexact_support::element::Element;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DeviceRepr};
use cudarc::driver::{LaunchConfig, ValidAsZeroBits, sys};
use errors::{alloc_error, driver};
use shared::hardware::{Conversion, PtxTarget};
use shared::{KernelKind, KernelName, Primitive};
use std::sync::Arc;

pub use cudarc::driver::CudaSlice as DeviceBuffer;

/// The stored result type of a primitive (`shared`'s, the kernels' too).
pub use shared::Bits;

/// Threads per block of every launch.
pub const BLOCK_THREADS: u32 = 256;
/// Resident blocks per multiprocessor a grid-stride launch asks for at most.
const BLOCKS_PER_SM: u32 = 16;

/// What the device is.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeviceInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Marketing name, e.g. "NVIDIA H200".
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// Number of multiprocessors.
    pub multiprocessors: u32,
    /// The device's rated SM clock in kHz (the driver's `CLOCK_RATE` attribute).
    pub clock_khz: u32,
    /// Total device memory in bytes.
    pub memory_bytes: usize,
}

impl DeviceInfo {
    /// The compute capability as an `sm_XX` number: 90 for (9, 0), 120 for (12, 0).
    pub fn sm(&self) -> i32 {
        self.compute_capability.0 * 10 + self.compute_capability.1
    }
}

/// Non-finite values found by a count kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NonFinite {
    /// How many elements are NaN or ±inf.
    pub count: u64,
    /// Index of the first one, if any.
    pub first: Option<u64>,
}

/// A grid-stride launch for `work` items on a device of `multiprocessors` SMs: enough
/// blocks of [`BLOCK_THREADS`] to fill it, at least one (so an empty launch still runs
/// the kernel's guard).
fn grid_stride_config(multiprocessors: u32, work: u64) -> LaunchConfig {
    let wanted = work.div_ceil(u64::from(BLOCK_THREADS));
    let cap = u64::from(multiprocessors.max(1) * BLOCKS_PER_SM);
    LaunchConfig {
        grid_dim: (wanted.clamp(1, cap) as u32, 1, 1),
        block_dim: (BLOCK_THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// An open device with the embedded PTX loaded.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// The baseline module ([`ptx::PTX`]), whose kinds' typed launches are
    /// [`KernelModule`]'s.
    baseline: KernelModule,
    /// The newer modules ([`ptx::MODULES`] after the first): loaded, or why not.
    newer: Vec<(PtxTarget, Result<KernelModule, ModuleUnavailable>)>,
    info: DeviceInfo,
    limits: LaunchLimits,
}

impl Gpu {
    /// Opens device `ordinal` and loads the embedded PTX (the driver JIT-compiles it for
    /// the device). Fails with [`GpuError::NoDriver`] or [`GpuError::NoDevice`] on
    /// machines without one, never panics.
    pub fn open(ordinal: usize) -> Result<Gpu, GpuError> {
        if !raw::driver_library_present() {
            return Err(GpuError::NoDriver);
        }
        cudarc::driver::result::init().map_err(driver("initialising the driver"))?;
        let count = CudaContext::device_count().map_err(driver("counting devices"))?.max(0) as usize;
        if ordinal >= count {
            return Err(GpuError::NoDevice { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal).map_err(driver(format!("creating a context on device {ordinal}")))?;
        let attribute = |a| ctx.attribute(a).map_err(driver("reading device attributes"));
        let info = DeviceInfo {
            ordinal,
            name: ctx.name().map_err(driver("reading the device name"))?,
            compute_capability: ctx.compute_capability().map_err(driver("reading the compute capability"))?,
            multiprocessors: attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            clock_khz: attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? as u32,
            memory_bytes: ctx.total_mem().map_err(driver("reading the memory size"))?,
        };
        let dim = |x, y, z| -> Result<Dim3, GpuError> {
            Ok(Dim3::new(attribute(x)? as u32, attribute(y)? as u32, attribute(z)? as u32))
        };
        use sys::CUdevice_attribute as A;
        let limits = LaunchLimits {
            max_threads_per_block: attribute(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)? as u32,
            max_block: dim(
                A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
                A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
                A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z,
            )?,
            max_grid: dim(
                A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
                A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,
            )?,
            max_shared_bytes_per_block: attribute(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as u32,
        };
        let stream = ctx.default_stream();
        let load = |ptx| KernelModule::from_ptx(&ctx, &stream, info.multiprocessors, limits, ptx);
        let baseline = load(ptx::PTX).map_err(|own::JitLog(log)| GpuError::PtxRejected { log })?;
        let newer = ptx::MODULES[1..]
            .iter()
            .map(|m| {
                let loaded = runs_target(&info, m.target).and_then(|()| {
                    load(m.ptx).map_err(|own::JitLog(log)| ModuleUnavailable::Rejected { target: m.target, log })
                });
                (m.target, loaded)
            })
            .collect();
        Ok(Gpu { ctx, stream, baseline, newer, info, limits })
    }

    /// The loaded module that holds `P`'s kernel of kind `kind`, whose typed launch
    /// methods ([`KernelModule::map`], [`KernelModule::launch_stream`],
    /// [`KernelModule::stream_staged`]...) run it: the embedded baseline module, but for
    /// a [`KernelKind::Hardware`] or [`KernelKind::HardwareStream`] kernel, the module of
    /// its instruction's target, or why this device has none ([`GpuError::NeedsTarget`]).
    ///
    /// ```no_run
    /// # fn f(gpu: &bitexact_gpu::Gpu) -> Result<(), bitexact_gpu::GpuError> {
    /// use shared::{KernelKind, variants::unorm8_times3_int};
    /// let input = gpu.upload(&(0..=255u8).collect::<Vec<_>>())?;
    /// let mut output = gpu.zeros::<u32>(256)?;
    /// gpu.module_for::<unorm8_times3_int>(KernelKind::Map)?
    ///     .map::<unorm8_times3_int>(&input.as_view(), &mut output.as_view_mut())?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn module_for<P: Primitive>(&self, kind: KernelKind) -> Result<&KernelModule, GpuError> {
        let name = KernelName::of::<P>(kind);
        self.loaded(name, ptx::module_of(name, Conversion::of(P::FAMILY)).target)
    }

    /// The loaded module of PTX target `target`, or why this device has none, for kernel
    /// `name` ([`GpuError::NeedsTarget`]).
    fn loaded(&self, name: KernelName, target: PtxTarget) -> Result<&KernelModule, GpuError> {
        match self.newer.iter().find(|(t, _)| *t == target) {
            None => Ok(&self.baseline),
            Some((_, Ok(module))) => Ok(module),
            Some((_, Err(reason))) => Err(GpuError::NeedsTarget { kernel: name.to_string(), reason: reason.clone() }),
        }
    }

    /// Whether this device runs the module of PTX target `target` (the baseline always).
    pub fn runs(&self, target: PtxTarget) -> Result<(), ModuleUnavailable> {
        match self.newer.iter().find(|(t, _)| *t == target) {
            Some((_, Err(reason))) => Err(reason.clone()),
            _ => Ok(()),
        }
    }

    /// What the device is.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The stream every operation of this `Gpu` runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The context (for events and other cudarc calls).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Checks that the embedded PTX has the kernel `name` and that it loads; a hardware
    /// kernel from its target's module ([`GpuError::NeedsTarget`] if this device cannot
    /// run that module).
    pub fn load(&self, name: KernelName) -> Result<(), GpuError> {
        let Some(module) = ptx::module_holding(name) else {
            return Err(GpuError::KernelMissing { name: name.to_string() });
        };
        self.loaded(name, module.target)?.function(&name.to_string()).map(drop)
    }

    /// Copies `data` into a new device buffer.
    pub fn upload<T: DeviceRepr>(&self, data: &[T]) -> Result<CudaSlice<T>, GpuError> {
        self.stream.clone_htod(data).map_err(alloc_error(std::mem::size_of_val(data)))
    }

    /// Device time in milliseconds of each of `reps` runs of `work`, after `warmup`
    /// untimed runs; each run is bracketed by events on this `Gpu`'s stream.
    pub fn time_ms(
        &self,
        warmup: usize,
        reps: usize,
        mut work: impl FnMut() -> Result<(), GpuError>,
    ) -> Result<Vec<f64>, GpuError> {
        let event =
            || self.ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(driver("creating an event"));
        let (start, end) = (event()?, event()?);
        for _ in 0..warmup {
            work()?;
        }
        let mut times = Vec::with_capacity(reps);
        for _ in 0..reps {
            start.record(&self.stream).map_err(driver("recording an event"))?;
            work()?;
            end.record(&self.stream).map_err(driver("recording an event"))?;
            end.synchronize().map_err(|error| GpuError::Launch { kernel: "timed work".into(), error })?;
            times.push(f64::from(start.elapsed_ms(&end).map_err(driver("reading an event"))?));
        }
        Ok(times)
    }

    /// A new zeroed device buffer of `len` elements.
    pub fn zeros<T: DeviceRepr + ValidAsZeroBits>(&self, len: usize) -> Result<CudaSlice<T>, GpuError> {
        self.stream.alloc_zeros(len).map_err(alloc_error(len.saturating_mul(size_of::<T>())))
    }

    /// Copies a device buffer back to the host.
    pub fn download<T: DeviceRepr + Default + Clone>(&self, buffer: &CudaSlice<T>) -> Result<Vec<T>, GpuError> {
        self.stream.clone_dtoh(buffer).map_err(driver("copying results to the host"))
    }

    /// Copies a device buffer into `out` (equal lengths).
    pub fn download_into<T: DeviceRepr>(&self, buffer: &CudaSlice<T>, out: &mut [T]) -> Result<(), GpuError> {
        if buffer.len() != out.len() {
            return Err(GpuError::CopyLength { copy: DeviceCopy::ToHost, from: buffer.len(), into: out.len() });
        }
        self.stream.memcpy_dtoh(buffer, out).map_err(driver("copying results to the host"))?;
        self.stream.synchronize().map_err(driver("copying results to the host"))
    }

    /// Waits for everything queued so far; reports a failed kernel as `kernel`'s.
    pub fn wait(&self, kernel: KernelName) -> Result<(), GpuError> {
        self.stream.synchronize().map_err(|error| GpuError::Launch { kernel: kernel.to_string(), error })
    }

    /// Queues a device-to-device copy of `src` into `dst` (equal lengths).
    pub fn copy<T: DeviceRepr>(&self, src: &CudaSlice<T>, dst: &mut CudaSlice<T>) -> Result<(), GpuError> {
        if src.len() != dst.len() {
            return Err(GpuError::CopyLength { copy: DeviceCopy::ToDevice, from: src.len(), into: dst.len() });
        }
        self.stream.memcpy_dtod(src, dst).map_err(driver("copying device to device"))
    }
}

/// Whether the device `info` describes can run a module for `target`: its compute
/// capability is at least the target's, or why not (`needs sm_89; device 0 is sm_80`).
pub(crate) fn runs_target(info: &DeviceInfo, target: PtxTarget) -> Result<(), ModuleUnavailable> {
    if u32::try_from(info.sm()).is_ok_and(|sm| sm >= target.sm) {
        Ok(())
    } else {
        Err(ModuleUnavailable::OlderDevice { target, ordinal: info.ordinal, sm: info.sm() })
    }
}

/// Opens device 0 for a test, or decides the test is skipped: on a machine without a
/// CUDA driver or device this prints `skipped: <reason>` and returns `None`, unless
/// `REQUIRE_GPU=1`, which turns the skip into a failure (a panic, as tests expect). A
/// GPU that is present but unusable always fails.
pub fn open_or_skip() -> Option<Gpu> {
    let opened = match Gpu::open(0) {
        Err(e) if !e.is_unavailable() => panic!("the GPU is present but unusable: {e}"),
        Err(e) => Err(NoGpu(e)),
        Ok(gpu) => Ok(gpu),
    };
    bitexact_support::skip::require_or_skip("REQUIRE_GPU", opened)
}

/// Why [`open_or_skip`] skips: an unavailable-GPU error, shown short
/// (`no CUDA driver`, `no CUDA device (…)`).
struct NoGpu(GpuError);

impl std::fmt::Display for NoGpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            GpuError::NoDriver => f.write_str("no CUDA driver"),
            e => write!(f, "no CUDA device ({e})"),
        }
    }
}

/// The input bits a conformance or length check feeds element `i`.
#[doc(hidden)]
pub type InputAt<'a> = &'a (dyn Fn(u64) -> u64 + Sync);

/// A device buffer of one of the [`Element`] types, for code that meets kernels of every
/// input width (the variant table's type-erased bandwidth kernels).
#[doc(hidden)]
pub enum DeviceElements {
    /// `u8` elements.
    U8(CudaSlice<u8>),
    /// `u16` elements.
    U16(CudaSlice<u16>),
    /// `u32` elements.
    U32(CudaSlice<u32>),
    /// `u64` elements.
    U64(CudaSlice<u64>),
}

impl DeviceElements {
    /// `len` elements of type `T`, element `i` the low bits of `input_at(i)`, made on
    /// all cores and uploaded.
    pub fn upload<T: BufferElement>(gpu: &Gpu, len: usize, input_at: InputAt<'_>) -> Result<DeviceElements, GpuError> {
        let host: Vec<T> = bitexact_support::parallel::map_indices(len, |i| T::from_u64(input_at(i as u64)));
        Ok(T::into_elements(gpu.upload(&host)?))
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            DeviceElements::U8(b) => b.len(),
            DeviceElements::U16(b) => b.len(),
            DeviceElements::U32(b) => b.len(),
            DeviceElements::U64(b) => b.len(),
        }
    }

    /// `true` for no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Width of an element in bits.
    pub fn bits(&self) -> u32 {
        match self {
            DeviceElements::U8(_) => 8,
            DeviceElements::U16(_) => 16,
            DeviceElements::U32(_) => 32,
            DeviceElements::U64(_) => 64,
        }
    }

    /// The buffer as `T`s, or a [`GpuError::Length`] for `kernel` saying that it holds
    /// another type.
    pub fn typed<T: BufferElement>(&self, kernel: KernelName) -> Result<&CudaSlice<T>, GpuError> {
        let bits = self.bits();
        T::of_elements(self).ok_or_else(|| GpuError::Length {
            kernel: kernel.to_string(),
            detail: format!("input holds {bits}-bit elements, the kernel reads {}-bit ones", T::BITS),
        })
    }

    /// `len` zeroed elements of type `T` on the device.
    pub fn zeros<T: BufferElement>(gpu: &Gpu, len: usize) -> Result<DeviceElements, GpuError> {
        Ok(T::into_elements(gpu.zeros::<T>(len)?))
    }

    /// The buffer as `T`s to write, or a [`GpuError::Length`] for `kernel` saying that it
    /// holds another type.
    pub fn typed_mut<T: BufferElement>(&mut self, kernel: KernelName) -> Result<&mut CudaSlice<T>, GpuError> {
        let bits = self.bits();
        T::of_elements_mut(self).ok_or_else(|| GpuError::Length {
            kernel: kernel.to_string(),
            detail: format!("output holds {bits}-bit elements, the kernel writes {}-bit ones", T::BITS),
        })
    }

    /// The elements, copied to the host.
    pub fn download(&self, gpu: &Gpu) -> Result<HostElements, GpuError> {
        Ok(match self {
            DeviceElements::U8(b) => HostElements::U8(gpu.download(b)?),
            DeviceElements::U16(b) => HostElements::U16(gpu.download(b)?),
            DeviceElements::U32(b) => HostElements::U32(gpu.download(b)?),
            DeviceElements::U64(b) => HostElements::U64(gpu.download(b)?),
        })
    }
}

/// A [`DeviceElements`] copied to the host.
#[derive(Clone, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub enum HostElements {
    /// `u8` elements.
    U8(Vec<u8>),
    /// `u16` elements.
    U16(Vec<u16>),
    /// `u32` elements.
    U32(Vec<u32>),
    /// `u64` elements.
    U64(Vec<u64>),
}

impl HostElements {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            HostElements::U8(v) => v.len(),
            HostElements::U16(v) => v.len(),
            HostElements::U32(v) => v.len(),
            HostElements::U64(v) => v.len(),
        }
    }

    /// `true` for no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` zero-extended to 64 bits, `None` past the end.
    pub fn get(&self, i: usize) -> Option<u64> {
        match self {
            HostElements::U8(v) => v.get(i).map(|&x| u64::from(x)),
            HostElements::U16(v) => v.get(i).map(|&x| u64::from(x)),
            HostElements::U32(v) => v.get(i).map(|&x| u64::from(x)),
            HostElements::U64(v) => v.get(i).copied(),
        }
    }
}

/// An [`Element`] type a [`DeviceElements`] holds: how to wrap and unwrap its buffer.
#[doc(hidden)]
pub trait BufferElement: Element {
    /// `buffer` as a [`DeviceElements`].
    fn into_elements(buffer: CudaSlice<Self>) -> DeviceElements;
    /// The buffer of `elements`, if it holds elements of this type.
    fn of_elements(elements: &DeviceElements) -> Option<&CudaSlice<Self>>;
    /// The same, to write.
    fn of_elements_mut(elements: &mut DeviceElements) -> Option<&mut CudaSlice<Self>>;
}

macro_rules! buffer_element {
    ($($t:ty: $variant:ident)*) => {$(
        impl BufferElement for $t {
            fn into_elements(buffer: CudaSlice<$t>) -> DeviceElements {
                DeviceElements::$variant(buffer)
            }
            fn of_elements(elements: &DeviceElements) -> Option<&CudaSlice<$t>> {
                match elements {
                    DeviceElements::$variant(buffer) => Some(buffer),
                    _ => None,
                }
            }
            fn of_elements_mut(elements: &mut DeviceElements) -> Option<&mut CudaSlice<$t>> {
                match elements {
                    DeviceElements::$variant(buffer) => Some(buffer),
                    _ => None,
                }
            }
        }
    )*};
}
buffer_element!(u8: U8 u16: U16 u32: U32 u64: U64);

#[cfg(test)]
mod tests;
