//! Every `unsafe` call of the GPU layer: the driver probe, kernel launches, and the
//! JIT log. Each block states why its arguments match the kernel's signature.
#![allow(unsafe_code)]

use cudarc::driver::sys::{self, CUjit_option};
use cudarc::driver::{CudaFunction, CudaStream, DriverError, LaunchConfig, PushKernelArg};

/// Whether the CUDA driver library (`libcuda.so`) can be loaded. Must be asked before any
/// other cudarc call: cudarc panics when the library is missing.
pub fn driver_library_present() -> bool {
    // SAFETY: only tries to dlopen the library by its usual names; no CUDA call is made.
    unsafe { sys::is_culib_present() }
}

/// Launches a per-element kernel `(input: *const I, output: *mut O, n: u64)`.
///
/// The caller passes buffers of exactly `n` elements each (checked by `Gpu`).
pub fn launch_map<I, O>(
    stream: &CudaStream,
    kernel: &CudaFunction,
    config: LaunchConfig,
    input: &cudarc::driver::CudaSlice<I>,
    output: &mut cudarc::driver::CudaSlice<O>,
    n: u64,
) -> Result<(), DriverError> {
    let mut launch = stream.launch_builder(kernel);
    launch.arg(input).arg(output).arg(&n);
    // SAFETY: every kernel launched through here has the signature
    // `(*const I, *mut O, u64)` (kernels-gpu `map`, `skeleton` and `_wide` entries), the
    // device pointers come from live `CudaSlice`s of element types I and O, and the
    // caller checked both hold at least `n` elements, so every access is in bounds.
    unsafe { launch.launch(config) }.map(drop)
}

/// Launches a `_count_nonfinite` kernel `(input: *const u16, n: u64, result: *mut u64)`.
pub fn launch_count(
    stream: &CudaStream,
    kernel: &CudaFunction,
    config: LaunchConfig,
    input: &cudarc::driver::CudaSlice<u16>,
    n: u64,
    result: &mut cudarc::driver::CudaSlice<u64>,
) -> Result<(), DriverError> {
    let mut launch = stream.launch_builder(kernel);
    launch.arg(input).arg(&n).arg(result);
    // SAFETY: the kernel's signature is `(*const u16, u64, *mut u64)`; `input` holds at
    // least `n` elements and `result` at least 2 (checked by the caller).
    unsafe { launch.launch(config) }.map(drop)
}

/// Launches a `_latency` or `_throughput` kernel `(seed: u64, iterations: u32, out: *mut u64)`.
pub fn launch_timing(
    stream: &CudaStream,
    kernel: &CudaFunction,
    config: LaunchConfig,
    seed: u64,
    iterations: u32,
    out: &mut cudarc::driver::CudaSlice<u64>,
) -> Result<(), DriverError> {
    let mut launch = stream.launch_builder(kernel);
    launch.arg(&seed).arg(&iterations).arg(out);
    // SAFETY: the kernel's signature is `(u64, u32, *mut u64)`; it writes 2 elements
    // (latency) or one per launched thread (throughput), and the caller sized `out` to
    // at least that.
    unsafe { launch.launch(config) }.map(drop)
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
