//! Every `unsafe` call of the GPU layer: the driver probe, kernel launches, and the
//! JIT log. Each block states why its arguments match the kernel's signature.
//!
//! Kernels are launched only through the typed functions here, one per
//! [`KernelKind`]: `launch_stream::<P>` needs `P: kind::Stream`, which `shared`'s table
//! implements exactly for the variants whose entry lists `Stream`, the same entries for
//! which `kernels-gpu` emits that kernel, under the name [`KernelName::of`] gives
//! and with the signature [`KernelKind::Stream`] documents. Looking a kernel up by name and
//! launching it with arguments of one's choosing stays private to this module.
#![allow(unsafe_code)]

use super::{Bits, GpuError};
use crate::support::element::Element;
use cudarc::driver::sys::{self, CUjit_option};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, CudaView, CudaViewMut, DeviceRepr};
use cudarc::driver::{DriverError, LaunchConfig, PinnedHostSlice, PushKernelArg};
use shared::{KernelKind, KernelName, kind};
use std::sync::Arc;

/// Whether the CUDA driver library (`libcuda.so`) can be loaded. Must be asked before any
/// other cudarc call: cudarc panics when the library is missing.
pub fn driver_library_present() -> bool {
    // SAFETY: only tries to dlopen the library by its usual names; no CUDA call is made.
    unsafe { sys::is_culib_present() }
}

/// Whether `module` has the kernel `name` (loading it is harmless; launching is not).
pub fn load(module: &Arc<CudaModule>, name: KernelName) -> Result<(), GpuError> {
    function(module, name).map(drop)
}

/// The kernel `name` of `module`.
fn function(module: &Arc<CudaModule>, name: KernelName) -> Result<CudaFunction, GpuError> {
    module.load_function(&name.to_string()).map_err(|_| GpuError::KernelMissing { name: name.to_string() })
}

/// Queues a launch whose arguments `typed::TypedKernel::launch` checked: the parameter
/// list against the PTX, the argument types against the declaration, the shape against
/// the device. The caller of that `unsafe fn` vouches for the kernel's memory accesses.
pub(super) fn launch_checked(
    mut launch: cudarc::driver::LaunchArgs<'_>,
    config: LaunchConfig,
) -> Result<(), DriverError> {
    // SAFETY: see above: everything a launch needs beyond the kernel's own contract is
    // checked by `TypedKernel::launch`, and that contract is its caller's promise.
    unsafe { launch.launch(config) }.map(drop)
}

/// A [`GpuError::Length`] for kernel `name`.
fn length_error(name: KernelName, detail: String) -> GpuError {
    GpuError::Length { kernel: name.to_string(), detail }
}

/// Queues `P`'s [`KernelKind::Map`] kernel over `input` → `output` (equal lengths).
pub fn launch_map<P>(
    stream: &CudaStream,
    module: &Arc<CudaModule>,
    config: LaunchConfig,
    input: &CudaView<'_, P::In>,
    output: &mut CudaViewMut<'_, Bits<P>>,
) -> Result<(), GpuError>
where
    P: kind::Map,
    P::In: DeviceRepr,
    Bits<P>: DeviceRepr,
{
    // SAFETY: `P: kind::Map`, so this is kernels-gpu's `map::<P>`, whose signature is
    // `(*const P::In, *mut Bits<P>, u64)`.
    unsafe { launch_elementwise(stream, module, KernelName::of::<P>(KernelKind::Map), config, input, output) }
}

/// Queues `P`'s [`KernelKind::Stream`] kernel over `input` → `output` (equal lengths).
pub fn launch_stream<P>(
    stream: &CudaStream,
    module: &Arc<CudaModule>,
    config: LaunchConfig,
    input: &CudaView<'_, P::In>,
    output: &mut CudaViewMut<'_, Bits<P>>,
) -> Result<(), GpuError>
where
    P: kind::Stream,
    P::In: DeviceRepr,
    Bits<P>: DeviceRepr,
{
    // SAFETY: `P: kind::Stream`, so this is kernels-gpu's `stream::<P>`, whose signature
    // is `(*const P::In, *mut Bits<P>, u64)`, and it accesses only elements below `n` (a
    // misaligned start for its vector accesses sends it down its scalar pass).
    unsafe { launch_elementwise(stream, module, KernelName::of::<P>(KernelKind::Stream), config, input, output) }
}

/// Queues `P`'s [`KernelKind::Hardware`] kernel over `input` → `output` (equal lengths);
/// `module` must be the module that holds it.
pub fn launch_hardware<P>(
    stream: &CudaStream,
    module: &Arc<CudaModule>,
    config: LaunchConfig,
    input: &CudaView<'_, P::In>,
    output: &mut CudaViewMut<'_, Bits<P>>,
) -> Result<(), GpuError>
where
    P: kind::Hardware,
    P::In: DeviceRepr,
    Bits<P>: DeviceRepr,
{
    // SAFETY: `P: kind::Hardware`, so this is kernels-gpu's `hardware_map::<P>`, whose
    // signature is `(*const P::In, *mut Bits<P>, u64)` (a kernel missing from `module`
    // is an error, not a launch).
    unsafe { launch_elementwise(stream, module, KernelName::of::<P>(KernelKind::Hardware), config, input, output) }
}

/// Queues `P`'s [`KernelKind::HardwareStream`] kernel over `input` → `output` (equal
/// lengths); `module` must be the module that holds it.
pub fn launch_hardware_stream<P>(
    stream: &CudaStream,
    module: &Arc<CudaModule>,
    config: LaunchConfig,
    input: &CudaView<'_, P::In>,
    output: &mut CudaViewMut<'_, Bits<P>>,
) -> Result<(), GpuError>
where
    P: kind::HardwareStream,
    P::In: DeviceRepr,
    Bits<P>: DeviceRepr,
{
    // SAFETY: `P: kind::HardwareStream`, so this is kernels-gpu's `hardware_stream::<P>`,
    // whose signature is `(*const P::In, *mut Bits<P>, u64)`, and it accesses only
    // elements below `n` (a misaligned start sends it down its scalar pass; a kernel
    // missing from `module` is an error, not a launch).
    unsafe {
        launch_elementwise(stream, module, KernelName::of::<P>(KernelKind::HardwareStream), config, input, output)
    }
}

/// Checks that `input` and `output` have equal lengths and queues kernel `name` with
/// `(input, output, n)`, `n` their length.
///
/// # Safety
/// Kernel `name`'s signature must be `(*const I, *mut O, u64)`, and it must access
/// elements below `n` only.
unsafe fn launch_elementwise<I: DeviceRepr, O: DeviceRepr>(
    stream: &CudaStream,
    module: &Arc<CudaModule>,
    name: KernelName,
    config: LaunchConfig,
    input: &CudaView<'_, I>,
    output: &mut CudaViewMut<'_, O>,
) -> Result<(), GpuError> {
    if input.len() != output.len() {
        return Err(length_error(name, format!("input has {} elements but output {}", input.len(), output.len())));
    }
    let kernel = function(module, name)?;
    let n = input.len() as u64;
    let mut launch = stream.launch_builder(&kernel);
    launch.arg(input).arg(output).arg(&n);
    // SAFETY: the caller guarantees the signature `(*const I, *mut O, u64)`; the device
    // pointers come from live views of element types I and O (at whole elements of
    // their allocations, so aligned for them), both of `n` elements (checked above), and
    // the kernel accesses only elements below `n`.
    unsafe { launch.launch(config) }.map(drop).map_err(|error| GpuError::Launch { kernel: name.to_string(), error })
}

/// Queues `P`'s [`KernelKind::CountNonfinite`] kernel over `input`, accumulating into
/// `result` (at least 2 elements: count, first index).
pub fn launch_count<P>(
    stream: &CudaStream,
    module: &Arc<CudaModule>,
    config: LaunchConfig,
    input: &CudaView<'_, P::In>,
    result: &mut CudaViewMut<'_, u64>,
) -> Result<(), GpuError>
where
    P: kind::CountNonfinite,
    P::In: DeviceRepr,
{
    let name = KernelName::of::<P>(KernelKind::CountNonfinite);
    if result.len() < 2 {
        return Err(length_error(name, "result needs 2 elements".into()));
    }
    let kernel = function(module, name)?;
    let n = input.len() as u64;
    let mut launch = stream.launch_builder(&kernel);
    launch.arg(input).arg(&n).arg(result);
    // SAFETY: `P: kind::CountNonfinite`, so this is kernels-gpu's `count_nonfinite::<P>`,
    // whose signature is `(*const P::In, u64, *mut u64)`; it reads the `n` elements of
    // `input` (a live view, aligned for `P::In`: a view of an allocation at a whole
    // element) and updates `result[0]` and `result[1]`, which exist (checked above).
    unsafe { launch.launch(config) }.map(drop).map_err(|error| GpuError::Launch { kernel: name.to_string(), error })
}

/// Queues `P`'s [`KernelKind::StreamCount`] kernel over `input` → `output` (equal
/// lengths), accumulating into `result` (at least 2 elements: count, first index).
pub fn launch_stream_count<P>(
    stream: &CudaStream,
    module: &Arc<CudaModule>,
    config: LaunchConfig,
    input: &CudaView<'_, P::In>,
    output: &mut CudaViewMut<'_, Bits<P>>,
    result: &mut CudaViewMut<'_, u64>,
) -> Result<(), GpuError>
where
    P: kind::StreamCount,
    P::In: DeviceRepr,
    Bits<P>: DeviceRepr,
{
    let name = KernelName::of::<P>(KernelKind::StreamCount);
    if input.len() != output.len() {
        return Err(length_error(name, format!("input has {} elements but output {}", input.len(), output.len())));
    }
    if result.len() < 2 {
        return Err(length_error(name, "result needs 2 elements".into()));
    }
    let kernel = function(module, name)?;
    let n = input.len() as u64;
    let mut launch = stream.launch_builder(&kernel);
    launch.arg(input).arg(output).arg(&n).arg(result);
    // SAFETY: `P: kind::StreamCount`, whose implementer vouches that this kernel's
    // signature is `(*const P::In, *mut Bits<P>, u64, *mut u64)` and that it accesses only
    // elements below `n` and `result[0..2]`; the device pointers come from live views of
    // those element types (aligned for them), `input` and `output` of `n` elements and
    // `result` of at least 2 (checked above).
    unsafe { launch.launch(config) }.map(drop).map_err(|error| GpuError::Launch { kernel: name.to_string(), error })
}

/// Queues `P`'s [`KernelKind::Latency`] kernel on one thread; it writes `out[0]` and
/// `out[1]`.
pub fn launch_latency<P: kind::Latency>(
    stream: &CudaStream,
    module: &Arc<CudaModule>,
    seed: u64,
    iterations: u32,
    out: &mut CudaSlice<u64>,
) -> Result<(), GpuError> {
    let one_thread = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: `P: kind::Latency`, so this is kernels-gpu's `latency::<P>`, whose
    // signature is the timing one; it writes 2 elements.
    unsafe {
        launch_timing(stream, module, KernelName::of::<P>(KernelKind::Latency), one_thread, 2, seed, iterations, out)
    }
}

/// Queues `P`'s [`KernelKind::Throughput`] kernel with `config`; every launched thread
/// writes its own element of `out`.
pub fn launch_throughput<P: kind::Throughput>(
    stream: &CudaStream,
    module: &Arc<CudaModule>,
    config: LaunchConfig,
    seed: u64,
    iterations: u32,
    out: &mut CudaSlice<u64>,
) -> Result<(), GpuError> {
    let threads = u64::from(config.grid_dim.0) * u64::from(config.block_dim.0);
    // SAFETY: `P: kind::Throughput`, so this is kernels-gpu's `throughput::<P>`, whose
    // signature is the timing one; it writes `out[thread]` for each launched thread
    // (its index counts the x dimensions only), so `threads` elements.
    unsafe {
        launch_timing(
            stream,
            module,
            KernelName::of::<P>(KernelKind::Throughput),
            config,
            threads,
            seed,
            iterations,
            out,
        )
    }
}

/// Checks that `out` holds at least `needed` elements and queues kernel `name` with
/// `(seed, iterations, out)`.
///
/// # Safety
/// Kernel `name`'s signature must be `(u64, u32, *mut u64)`, and launched with `config`
/// it must write only elements of `out` below `needed`.
#[allow(clippy::too_many_arguments)]
unsafe fn launch_timing(
    stream: &CudaStream,
    module: &Arc<CudaModule>,
    name: KernelName,
    config: LaunchConfig,
    needed: u64,
    seed: u64,
    iterations: u32,
    out: &mut CudaSlice<u64>,
) -> Result<(), GpuError> {
    if (out.len() as u64) < needed {
        return Err(length_error(name, format!("out has {} elements, needs {needed}", out.len())));
    }
    let kernel = function(module, name)?;
    let mut launch = stream.launch_builder(&kernel);
    launch.arg(&seed).arg(&iterations).arg(out);
    // SAFETY: the caller guarantees the signature `(u64, u32, *mut u64)` and that the
    // kernel writes only elements below `needed`, which `out` holds (checked above).
    unsafe { launch.launch(config) }.map(drop).map_err(|error| GpuError::Launch { kernel: name.to_string(), error })
}

/// `words` `u64`s of page-locked host memory (cacheable: the host reads it back as well
/// as writing it), zeroed, for asynchronous copies. At least one word.
pub fn alloc_pinned_zeroed(ctx: &Arc<CudaContext>, words: usize) -> Result<PinnedHostSlice<u64>, DriverError> {
    let words = words.max(1);
    // SAFETY: the allocation is uninitialised; nothing reads it before the write below
    // zeroes all of it, through a raw pointer (no reference to uninitialised memory is
    // made). Flags 0: plain page-locked memory, not write-combined.
    let mut pinned = unsafe { ctx.alloc_pinned_with_flags::<u64>(words, 0) }?;
    let start = pinned.as_mut_ptr()?;
    // SAFETY: `start` points to `words` u64s just allocated (aligned: cudarc checks),
    // owned by `pinned` and used by no copy yet.
    unsafe { std::ptr::write_bytes(start, 0, words) };
    Ok(pinned)
}

/// The first `len` elements of type `T` of a device buffer of words, or `None` when it
/// holds fewer bytes.
pub fn words_as<T: Element>(buffer: &CudaSlice<u64>, len: usize) -> Option<CudaView<'_, T>> {
    // SAFETY: `T` is an `Element`, a plain integer (bytemuck::Pod): every bit pattern is
    // a valid `T`; a `u64` allocation is aligned for it (alignment at most 8); cudarc
    // checks that `len` elements fit in the buffer.
    unsafe { buffer.transmute::<T>(len) }
}

/// [`words_as`], writable.
pub fn words_as_mut<T: Element>(buffer: &mut CudaSlice<u64>, len: usize) -> Option<CudaViewMut<'_, T>> {
    // SAFETY: as for `words_as`; the view borrows the buffer mutably, so it is the only
    // access to it while it lives.
    unsafe { buffer.transmute_mut::<T>(len) }
}

/// Loads `ptx` once more with the JIT's error log switched on and returns that log; the
/// module, if it loads this time, is unloaded again. Used only after a load failed.
pub fn jit_error_log(ptx: &str) -> String {
    let Ok(image) = std::ffi::CString::new(ptx) else {
        return "the PTX contains a NUL byte".into();
    };
    let mut log = vec![0u8; 64 * 1024];
    let mut options = [CUjit_option::CU_JIT_ERROR_LOG_BUFFER, CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
    let mut values = [log.as_mut_ptr().cast::<core::ffi::c_void>(), log.len() as *mut core::ffi::c_void];
    let mut module = core::ptr::null_mut();
    // SAFETY: `image` is a NUL-terminated PTX string; the two options are given a
    // writable buffer and its size in bytes (passed by value in the pointer slot, as
    // the driver API specifies), and all arrays outlive the call.
    let status = unsafe {
        sys::cuModuleLoadDataEx(
            &mut module,
            image.as_ptr().cast(),
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    if status == sys::CUresult::CUDA_SUCCESS && !module.is_null() {
        // SAFETY: `module` was just loaded by this function and is not used elsewhere.
        unsafe { sys::cuModuleUnload(module) };
    }
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    String::from_utf8_lossy(&log[..end]).trim().to_string()
}
