//! The typed module, [`KernelModule`], and kernels of one's own: a PTX module built from a
//! kernel crate of one's own (with `ptx-builder`), loaded next to the embedded ones, its
//! kernels launched through the same typed, bounds-checked methods as the table's (the
//! kinds' launches are `kinds`', the typed handle `typed`'s).
//!
//! A kernel of one's own is described to the host by a primitive of one's own (a type
//! implementing [`shared::Primitive`]) and an `unsafe impl` of the kind trait of each
//! kernel it has ([`shared::kind`]'s `Map`, `Stream`, `CountNonfinite`, `StreamCount`):
//! that `unsafe impl` is the user's promise that the module's kernel of that name takes
//! exactly that kind's parameters. See docs/own-kernel.md for a whole example.
//!
//! The embedded modules' kernels keep their own promise because [`Gpu::load_user_module`]
//! refuses a module that defines any of their names ([`GpuError::NameTaken`]): a safe
//! launch of a table variant from a module of one's own finds no kernel and fails with
//! [`GpuError::KernelMissing`]. The same holds for the CUDA C++ baseline's kernels, whose
//! names ([`RESERVED_PREFIX`]) only the baseline's own loader may use.

use super::ptx::PtxParam;
use super::shape::{LaunchLimits, LaunchShape};
use super::{Gpu, GpuError, NonFinite, grid_stride_config, ptx, raw};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use shared::{KernelKind, KernelName};
use std::collections::HashMap;
use std::sync::Arc;

/// A loaded PTX module and its typed launches, on a [`Gpu`]'s stream: one of one's own
/// ([`Gpu::load_user_module`]), the C++ baseline's, or one of the embedded modules
/// ([`Gpu::module_for`] gives the one that holds a kernel). Every launch,
/// of a kind or of a kernel of one's own, goes through [`KernelModule::kernel`]'s typed
/// handle, whose declaration is checked against the module's PTX first.
pub struct KernelModule {
    module: Arc<CudaModule>,
    stream: Arc<CudaStream>,
    multiprocessors: u32,
    limits: LaunchLimits,
    entries: Vec<String>,
    /// Each entry's `.param` list, read from the PTX once when the module loaded:
    /// [`KernelModule::kernel`] checks declarations against it.
    params: HashMap<String, Vec<PtxParam>>,
    /// Whether the PTX marks pointer parameters `.ptr` (`typed::marks_pointers`).
    marks_pointers: bool,
    /// The module's text.
    ptx: Arc<str>,
}

/// How many elements failed a [`shared::kind::StreamCount`] kernel's check, and the first one:
/// the same type as a count kernel's [`NonFinite`] (the count, the first index).
pub type Failing = NonFinite;

impl Gpu {
    /// Loads `ptx`, a module of one's own (built by `ptx_builder::PtxBuilder`, or by
    /// NVRTC), next to the embedded modules. Fails with [`GpuError::NameTaken`] if it
    /// defines a kernel named like one of the embedded kernels or starting with
    /// [`RESERVED_PREFIX`], and with
    /// [`GpuError::PtxRejected`] (the JIT's log) if the driver rejects it.
    ///
    /// # Safety
    /// The safe launches of the returned module rest on promises about its kernels: each
    /// `unsafe impl` of a [`shared::kind`] trait for a primitive `P` promises that the
    /// kernel of `P`'s name takes that kind's parameters and touches only the elements it
    /// says. Those promises are about the kernels of `P`'s own kernel crate, so `ptx` must
    /// be that crate's PTX (built by `ptx_builder` from it, typically `include_str!`-ed),
    /// or a module whose every kernel named like a kind kernel of a primitive keeps that
    /// primitive's promise. A safe call could otherwise load a kernel of the same name
    /// that does something else and launch it through `stream_count::<P>`. (Kernels
    /// declared with [`shared::kernel!`] launch through [`KernelModule::kernel`], whose
    /// launch is `unsafe` itself and whose parameter list is checked against this PTX.)
    ///
    /// Calling it without `unsafe` does not compile:
    ///
    /// ```compile_fail,E0133
    /// # mod bitexact { pub use bitexact_gpu as gpu; }
    /// fn load(gpu: &bitexact::gpu::Gpu, foreign_ptx: &str) {
    ///     let _ = gpu.load_user_module(foreign_ptx);
    /// }
    /// ```
    // Declaring it `unsafe` is the point (its contract above); it does nothing unsafe.
    #[allow(unsafe_code)]
    pub unsafe fn load_user_module(&self, ptx: &str) -> Result<KernelModule, GpuError> {
        check_ones_own_names(ptx, false)?;
        self.load_module(ptx)
    }

    /// [`Gpu::load_user_module`] for a module the library built at run time, whose
    /// kernels may have [`RESERVED_PREFIX`] names: only the cuda_tools wing calls it
    /// (`cuda_tools::cxx_gpu::FormsPtx::load`, with the C++ baseline's PTX). Public only
    /// because that wing is another crate; not API.
    ///
    /// # Safety
    /// As [`Gpu::load_user_module`]'s, for the `unsafe impl`s of the C++ baseline's
    /// markers (`cuda_tools::baseline`), which vouch for the kernels of that PTX only.
    ///
    /// Calling it without `unsafe` does not compile:
    ///
    /// ```compile_fail,E0133
    /// fn load(gpu: &bitexact_gpu::Gpu, foreign_ptx: &str) {
    ///     let _ = gpu.load_reserved_module(foreign_ptx);
    /// }
    /// ```
    #[doc(hidden)]
    #[allow(unsafe_code)] // the contract above; it does nothing unsafe itself
    pub unsafe fn load_reserved_module(&self, ptx: &str) -> Result<KernelModule, GpuError> {
        check_ones_own_names(ptx, true)?;
        self.load_module(ptx)
    }

    fn load_module(&self, ptx: &str) -> Result<KernelModule, GpuError> {
        KernelModule::from_ptx(&self.ctx, &self.stream, self.info.multiprocessors, self.limits, ptx)
            .map_err(|JitLog(log)| GpuError::PtxRejected { log })
    }
}

/// Why the driver refused a module: the JIT's log ([`KernelModule::from_ptx`]).
pub(super) struct JitLog(pub(super) String);

/// The start of the kernel names this project reserves for the modules it builds at run
/// time: the CUDA C++ baseline's (`cxx_<form>`, whose markers in
/// `cuda_tools::baseline::cxx` vouch for them and which load through
/// `cuda_tools::cxx_gpu::FormsPtx::load`). A module of one's own may not use it.
pub const RESERVED_PREFIX: &str = "cxx_";

/// [`GpuError::NameTaken`] for the first kernel of `ptx`, a module of one's own, that is
/// also a kernel of the embedded modules or, unless `reserved_allowed`, starts with
/// [`RESERVED_PREFIX`].
fn check_ones_own_names(ptx: &str, reserved_allowed: bool) -> Result<(), GpuError> {
    let entries = ptx::entry_names(ptx);
    let mut ours = ptx::MODULES.iter().flat_map(|m| ptx::entry_names(m.ptx));
    if let Some(name) = ours.find(|name| entries.contains(name)) {
        return Err(GpuError::NameTaken { name: name.to_string() });
    }
    match entries.iter().find(|e| !reserved_allowed && e.starts_with(RESERVED_PREFIX)) {
        Some(name) => Err(GpuError::NameTaken { name: name.to_string() }),
        None => Ok(()),
    }
}

impl KernelModule {
    /// Loads `ptx` into `ctx` (the driver JIT-compiles it for the device), launching on
    /// `stream` with grids for `multiprocessors` SMs, within `limits`: the one place a
    /// module is loaded, the embedded ones as well as one's own. If the driver rejects
    /// it, the JIT's log ([`JitLog`]), which each caller wraps in its own error.
    pub(super) fn from_ptx(
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        multiprocessors: u32,
        limits: LaunchLimits,
        ptx: &str,
    ) -> Result<Self, JitLog> {
        let module = ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx)).map_err(|_| JitLog(raw::jit_error_log(ptx)))?;
        let stream = stream.clone();
        let entries = ptx::entry_names(ptx).into_iter().map(String::from).collect();
        let params: HashMap<String, Vec<PtxParam>> =
            ptx::entries_with_params(ptx).into_iter().map(|(name, list)| (name.to_string(), list)).collect();
        let marks_pointers = params.values().flatten().any(|param| param.pointer);
        Ok(KernelModule { module, stream, multiprocessors, limits, entries, params, marks_pointers, ptx: ptx.into() })
    }

    /// The module's PTX text.
    pub fn ptx(&self) -> &str {
        &self.ptx
    }

    /// What the device lets a launch of this module ask for.
    pub fn limits(&self) -> &LaunchLimits {
        &self.limits
    }

    /// The stream its launches are queued on.
    pub(super) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Its kernel `name`, or [`GpuError::KernelMissing`].
    pub(super) fn function(&self, name: &str) -> Result<CudaFunction, GpuError> {
        self.module.load_function(name).map_err(|_| GpuError::KernelMissing { name: name.to_string() })
    }

    /// The `.param` list of its entry `name`, as the PTX declares it; `None` if it has no
    /// such entry.
    pub(super) fn entry_params(&self, name: &str) -> Option<&[PtxParam]> {
        self.params.get(name).map(Vec::as_slice)
    }

    /// Whether its PTX marks pointer parameters `.ptr` (`typed::marks_pointers`).
    pub(super) fn marks_pointers(&self) -> bool {
        self.marks_pointers
    }

    /// The names of the module's kernels, in the PTX's order.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Checks that the module has `P`'s kernel of kind `kind` and that it loads.
    pub fn load<P: shared::Primitive>(&self, kind: KernelKind) -> Result<(), GpuError> {
        self.function(&KernelName::of::<P>(kind).to_string()).map(drop)
    }

    /// A grid-stride launch over `n` elements, `per_thread` per thread per step (the
    /// grids the kind launches have always used: [`super::BLOCK_THREADS`]-thread blocks,
    /// enough to fill the device, at least one).
    pub(super) fn grid_stride(&self, n: usize, per_thread: u64) -> LaunchShape {
        LaunchShape::of_config(grid_stride_config(self.multiprocessors, (n as u64).div_ceil(per_thread)))
    }

    /// Waits for the module's stream; a failure is reported as kernel `name`'s.
    pub(super) fn wait(&self, name: KernelName) -> Result<(), GpuError> {
        self.stream.synchronize().map_err(|error| GpuError::Launch { kernel: name.to_string(), error })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(names: &[&str]) -> String {
        names.iter().map(|n| format!(".visible .entry {n}(\n\t.param .u64 a\n)\n{{\n\tret;\n}}\n")).collect()
    }

    #[test]
    fn a_module_of_ones_own_may_not_reuse_a_name_of_the_table() {
        let mine = module(&["my_widen_stream_count", "unorm8_times3"]);
        assert!(check_ones_own_names(&mine, false).is_ok());
        // A name of the embedded modules' kernels, in the baseline and a newer module.
        let stream = KernelName::of::<shared::variants::unorm8_times3_int>(KernelKind::Stream).to_string();
        let hardware = KernelName::of::<shared::variants::f32_to_e4m3>(KernelKind::Hardware).to_string();
        for taken in [stream, hardware] {
            let error = check_ones_own_names(&module(&["mine", &taken]), true).unwrap_err();
            assert!(matches!(&error, GpuError::NameTaken { name } if *name == taken), "{error}");
            assert!(error.to_string().contains(&taken));
        }
        // The C++ baseline's names: only for the loader of the baseline's own PTX.
        let cxx = module(&["mine", "cxx_unorm8_div"]);
        assert!(
            matches!(check_ones_own_names(&cxx, false), Err(GpuError::NameTaken { name }) if name == "cxx_unorm8_div")
        );
        assert!(check_ones_own_names(&cxx, true).is_ok());
    }
}
