//! The bottom layer of `gpu`: every `unsafe` driver call, each block stating why it is
//! sound: the driver probe, the one kernel launch ([`launch_checked`], which only the
//! typed handle `typed::TypedKernel` reaches, after checking the declaration against the
//! PTX, the arguments against the declaration and the shape against the device), pinned
//! memory, views of word buffers as other integer types, and the JIT log.
#![allow(unsafe_code)]

use bitexact_support::element::Element;
use cudarc::driver::sys::{self, CUjit_option};
use cudarc::driver::{CudaContext, CudaSlice, CudaView, CudaViewMut, DriverError, LaunchConfig, PinnedHostSlice};
use std::sync::Arc;

/// Whether the CUDA driver library (`libcuda.so`) can be loaded. Must be asked before any
/// other cudarc call: cudarc panics when the library is missing.
pub(crate) fn driver_library_present() -> bool {
    // SAFETY: only tries to dlopen the library by its usual names; no CUDA call is made.
    unsafe { sys::is_culib_present() }
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

/// `words` `u64`s of page-locked host memory (cacheable: the host reads it back as well
/// as writing it), zeroed, for asynchronous copies. At least one word.
pub(crate) fn alloc_pinned_zeroed(ctx: &Arc<CudaContext>, words: usize) -> Result<PinnedHostSlice<u64>, DriverError> {
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
pub(crate) fn words_as<T: Element>(buffer: &CudaSlice<u64>, len: usize) -> Option<CudaView<'_, T>> {
    // SAFETY: `T` is an `Element`, a plain integer (bytemuck::Pod): every bit pattern is
    // a valid `T`; a `u64` allocation is aligned for it (alignment at most 8); cudarc
    // checks that `len` elements fit in the buffer.
    unsafe { buffer.transmute::<T>(len) }
}

/// [`words_as`], writable.
pub(crate) fn words_as_mut<T: Element>(buffer: &mut CudaSlice<u64>, len: usize) -> Option<CudaViewMut<'_, T>> {
    // SAFETY: as for `words_as`; the view borrows the buffer mutably, so it is the only
    // access to it while it lives.
    unsafe { buffer.transmute_mut::<T>(len) }
}

/// Loads `ptx` once more with the JIT's error log switched on and returns that log; the
/// module, if it loads this time, is unloaded again. Used only after a load failed.
pub(crate) fn jit_error_log(ptx: &str) -> String {
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
