//! One typed launch for any kernel declared with [`shared::kernel!`]: the parameter list
//! is written once, next to the kernel; the compiler checks the host's arguments against
//! it ([`HostArgs`]); and [`KernelModule::kernel`] checks it against the PTX's own
//! `.param` list when the handle is made ([`check_params`]), so a kernel whose PTX does
//! not take what its declaration says is a [`GpuError::Signature`] naming the kernel,
//! never a launch. The launch shape (1-, 2- or 3-D, with dynamic shared memory) is
//! checked against the device's limits ([`LaunchShape::check`]).
//!
//! What is left to the caller, and why [`TypedKernel::launch`] is `unsafe`: what the
//! kernel does with its pointers. Neither the PTX nor the declaration says how many
//! elements a kernel reads or writes; its own documented contract does.
//!
//! ```no_run
//! # use bitexact_gpu::{Gpu, LaunchShape};
//! shared::kernel! {
//!     /// `y[i] = x[i] · k` for `i < n`.
//!     pub struct Scale;
//!     /// # Safety
//!     /// `x` and `y` hold `n` values.
//!     pub unsafe fn scale_f32(x: *const f32, y: *mut f32, n: u64, k: f32) {
//!         for i in 0..n as usize {
//!             unsafe { y.add(i).write(x.add(i).read() * k) };
//!         }
//!     }
//! }
//! # fn run(gpu: &Gpu, ptx: &str) -> Result<(), bitexact_gpu::GpuError> {
//! // SAFETY: `ptx` is this crate's kernel crate's PTX, whose kernels keep their contracts.
//! let module = unsafe { gpu.load_user_module(ptx)? };
//! let scale = module.kernel::<Scale>()?; // the PTX's `.param` list checked here
//! let x = gpu.upload(&[1.0f32, 2.0, 3.0])?;
//! let mut y = gpu.zeros::<f32>(3)?;
//! // SAFETY: `x` and `y` hold 3 values, and `scale_f32` touches `n = 3` of each.
//! unsafe { scale.launch(LaunchShape::linear(1, 32), (&x, &mut y, 3u64, 2.0f32))? };
//! assert_eq!(gpu.download(&y)?, [2.0, 4.0, 6.0]);
//! # Ok(()) }
//! ```

use super::own::KernelModule;
use super::ptx::{PtxParam, entry_params};
use super::shape::{DEFAULT_DYNAMIC_SHARED_LIMIT, LaunchShape};
use super::{GpuError, raw};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, LaunchArgs, PushKernelArg, sys};
use shared::launch::{DeclaredKernel, Param};
use std::marker::PhantomData;

/// Checks the declared parameter list `declared` of kernel `name` against the `.param`
/// list of its entry in `ptx`: the same count, and each parameter of the same kind and
/// width (a pointer is a `.u64` LLVM marks `.ptr`; an integer `.u8`/`.s8`/`.b8` …
/// `.u64` of its width; a float `.f32` or `.f64`). PTX that marks no parameter `.ptr`
/// (NVRTC's and nvcc's, such as the C++ baseline's) cannot tell a pointer from a `u64`:
/// there a pointer is any `.u64` that is not marked. [`GpuError::KernelMissing`] if the
/// PTX has no such entry, [`GpuError::Signature`] naming the kernel and the first
/// difference.
pub fn check_params(name: &str, declared: &[Param], ptx: &str) -> Result<(), GpuError> {
    check_found(name, declared, entry_params(ptx, name).as_deref(), marks_pointers(ptx))
}

/// Whether `ptx` marks pointer parameters `.ptr` (LLVM's NVPTX backend, so rustc, does;
/// NVVM, so NVRTC and nvcc, does not): whether any `.param` line has the mark.
pub(super) fn marks_pointers(ptx: &str) -> bool {
    ptx.lines().any(|line| line.trim_start().starts_with(".param") && line.split_whitespace().any(|w| w == ".ptr"))
}

/// [`check_params`] against `found`, the entry's parameters as its PTX declares them
/// (`None`: the PTX has no entry `name`), in PTX that marks pointers `.ptr` or not
/// (`pointers_marked`, [`marks_pointers`]).
pub(super) fn check_found(
    name: &str,
    declared: &[Param],
    found: Option<&[PtxParam]>,
    pointers_marked: bool,
) -> Result<(), GpuError> {
    let found = found.ok_or_else(|| GpuError::KernelMissing { name: name.to_string() })?;
    let mismatch = |detail: String| GpuError::Signature { kernel: name.to_string(), detail };
    if found.len() != declared.len() {
        return Err(mismatch(format!(
            "its declaration has {} parameters but the PTX's entry has {}",
            declared.len(),
            found.len()
        )));
    }
    for (i, (&param, ptx_param)) in declared.iter().zip(found).enumerate() {
        if !matches_ptx(param, ptx_param, pointers_marked) {
            return Err(mismatch(format!(
                "parameter {i} is declared {} but the PTX has {}",
                describe(param),
                describe_ptx(ptx_param)
            )));
        }
    }
    Ok(())
}

/// Whether the PTX parameter `found` is what `param` is passed as, in PTX that marks
/// pointers `.ptr` or not (`pointers_marked`).
fn matches_ptx(param: Param, found: &PtxParam, pointers_marked: bool) -> bool {
    let width = |ty: &str| ty[1..].parse::<usize>().ok().map(|bits| bits / 8);
    if found.aggregate {
        return false;
    }
    match param {
        Param::ConstPtr { .. } | Param::MutPtr { .. } => (found.pointer || !pointers_marked) && found.ty == "u64",
        Param::Integer { bytes } => {
            !found.pointer
                && matches!(found.ty.as_bytes().first(), Some(b'u' | b's' | b'b'))
                && width(&found.ty) == Some(bytes)
        }
        Param::Float { bytes } => !found.pointer && found.ty.starts_with('f') && width(&found.ty) == Some(bytes),
    }
}

fn describe(param: Param) -> String {
    match param {
        Param::ConstPtr { element_bytes } => format!("a pointer (*const, {element_bytes}-byte elements)"),
        Param::MutPtr { element_bytes } => format!("a pointer (*mut, {element_bytes}-byte elements)"),
        Param::Integer { bytes } => format!("a {bytes}-byte integer"),
        Param::Float { bytes } => format!("a {bytes}-byte float"),
    }
}

fn describe_ptx(found: &PtxParam) -> String {
    let pointer = if found.pointer { " .ptr (a pointer)" } else { "" };
    let aggregate = if found.aggregate { " (an aggregate by value)" } else { "" };
    format!(".param .{}{pointer}{aggregate}", found.ty)
}

/// A host value that a kernel parameter of type `P` is launched with: `&CudaSlice<T>` or
/// `&CudaView<T>` for `*const T`, `&mut CudaSlice<T>` or `&mut CudaViewMut<T>` for
/// `*mut T`, and the integers and floats by value for themselves. The element type must
/// match; a mismatch does not compile.
pub trait HostArg<P> {
    /// Adds the value to a launch.
    #[doc(hidden)]
    fn push<'a>(&'a mut self, launch: &mut LaunchArgs<'a>);
}

impl<T> HostArg<*const T> for &CudaSlice<T> {
    fn push<'a>(&'a mut self, launch: &mut LaunchArgs<'a>) {
        launch.arg(*self);
    }
}

impl<T> HostArg<*const T> for &CudaView<'_, T> {
    fn push<'a>(&'a mut self, launch: &mut LaunchArgs<'a>) {
        launch.arg(*self);
    }
}

impl<T> HostArg<*mut T> for &mut CudaSlice<T> {
    fn push<'a>(&'a mut self, launch: &mut LaunchArgs<'a>) {
        launch.arg(&mut **self);
    }
}

impl<T> HostArg<*mut T> for &mut CudaViewMut<'_, T> {
    fn push<'a>(&'a mut self, launch: &mut LaunchArgs<'a>) {
        launch.arg(&mut **self);
    }
}

macro_rules! value_args {
    ($($t:ty),*) => {$(
        impl HostArg<$t> for $t {
            fn push<'a>(&'a mut self, launch: &mut LaunchArgs<'a>) {
                launch.arg(&*self);
            }
        }
    )*};
}

value_args!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

/// The host arguments of a whole launch: a tuple of [`HostArg`]s, one per parameter of
/// the tuple `Params` (a kernel's [`DeclaredKernel::Params`]), in order.
pub trait HostArgs<Params> {
    /// Adds every value to a launch, in order.
    #[doc(hidden)]
    fn push_all<'a>(&'a mut self, launch: &mut LaunchArgs<'a>);
}

macro_rules! tuple_args {
    ($(($($p:ident $a:ident $v:ident),*);)*) => {$(
        impl<$($p, $a: HostArg<$p>),*> HostArgs<($($p,)*)> for ($($a,)*) {
            #[allow(unused_variables)]
            fn push_all<'a>(&'a mut self, launch: &mut LaunchArgs<'a>) {
                let ($($v,)*) = self;
                $($v.push(launch);)*
            }
        }
    )*};
}

tuple_args! {
    ();
    (P0 A0 a0);
    (P0 A0 a0, P1 A1 a1);
    (P0 A0 a0, P1 A1 a1, P2 A2 a2);
    (P0 A0 a0, P1 A1 a1, P2 A2 a2, P3 A3 a3);
    (P0 A0 a0, P1 A1 a1, P2 A2 a2, P3 A3 a3, P4 A4 a4);
    (P0 A0 a0, P1 A1 a1, P2 A2 a2, P3 A3 a3, P4 A4 a4, P5 A5 a5);
    (P0 A0 a0, P1 A1 a1, P2 A2 a2, P3 A3 a3, P4 A4 a4, P5 A5 a5, P6 A6 a6);
    (P0 A0 a0, P1 A1 a1, P2 A2 a2, P3 A3 a3, P4 A4 a4, P5 A5 a5, P6 A6 a6, P7 A7 a7);
    (P0 A0 a0, P1 A1 a1, P2 A2 a2, P3 A3 a3, P4 A4 a4, P5 A5 a5, P6 A6 a6, P7 A7 a7, P8 A8 a8);
    (P0 A0 a0, P1 A1 a1, P2 A2 a2, P3 A3 a3, P4 A4 a4, P5 A5 a5, P6 A6 a6, P7 A7 a7, P8 A8 a8, P9 A9 a9);
}

/// A kernel of a loaded module whose declaration `K` was checked against the module's PTX
/// ([`KernelModule::kernel`]).
pub struct TypedKernel<'m, K> {
    module: &'m KernelModule,
    function: CudaFunction,
    _kernel: PhantomData<fn() -> K>,
}

impl KernelModule {
    /// The typed handle of kernel `K`: fails with [`GpuError::KernelMissing`] if the
    /// module has no entry `K::NAME`, and with [`GpuError::Signature`] if the entry's
    /// `.param` list is not `K::PARAMS` ([`check_params`], against the lists read once
    /// when the module loaded). The same for a kernel of one's own and for the kinds'
    /// declarations ([`shared::kind::KindKernel`]), which every kind launch makes first.
    pub fn kernel<K: DeclaredKernel>(&self) -> Result<TypedKernel<'_, K>, GpuError> {
        check_found(K::NAME, K::PARAMS, self.entry_params(K::NAME), self.marks_pointers())?;
        let function = self.function(K::NAME)?;
        Ok(TypedKernel { module: self, function, _kernel: PhantomData })
    }
}

impl<K: DeclaredKernel> TypedKernel<'_, K> {
    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        K::NAME
    }

    /// Queues the kernel with `shape` and `args` on the module's stream; does not wait
    /// ([`TypedKernel::wait`]). The argument types were checked by the compiler, the
    /// parameter list against the PTX when the handle was made; `shape` is checked here
    /// ([`LaunchShape::check`], [`GpuError::LaunchShape`]), and shared memory above 48 KiB
    /// (static and dynamic together) is opted into for this kernel.
    ///
    /// # Safety
    /// With these arguments and this shape, the kernel keeps to its own contract: every
    /// pointer it dereferences is inside the buffer passed for it (for example, `n` no
    /// larger than the buffers), and the buffers it writes are not read or written by
    /// anything else until it completes.
    // Declaring an `unsafe fn` is the one `unsafe` here: its contract is the caller's; the
    // launch call itself is `raw::launch_checked`'s.
    #[allow(unsafe_code)]
    pub unsafe fn launch<A: HostArgs<K::Params>>(&self, shape: LaunchShape, args: A) -> Result<(), GpuError> {
        // SAFETY: the caller's contract is this function's own.
        unsafe { self.launch_on(self.module.stream(), shape, args) }
    }

    /// [`TypedKernel::launch`] on `stream`, a stream of the module's context (a staging
    /// lane's).
    ///
    /// # Safety
    /// As for [`TypedKernel::launch`].
    #[allow(unsafe_code)]
    pub(super) unsafe fn launch_on<A: HostArgs<K::Params>>(
        &self,
        stream: &CudaStream,
        shape: LaunchShape,
        mut args: A,
    ) -> Result<(), GpuError> {
        let failed = |error| GpuError::Launch { kernel: K::NAME.to_string(), error };
        let attribute = |a| self.function.get_attribute(a).map_err(failed);
        let static_shared = attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?;
        let kernel_threads = attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?;
        shape
            .check(self.module.limits(), static_shared.max(0) as u32, kernel_threads.max(0) as u32)
            .map_err(|problem| GpuError::LaunchShape { kernel: K::NAME.to_string(), problem })?;
        // Without the opt-in a block gets 48 KiB of shared memory, static and dynamic
        // together: opt in whenever the two exceed it, not only the dynamic part.
        if u64::from(static_shared.max(0) as u32) + u64::from(shape.dynamic_shared_bytes)
            > u64::from(DEFAULT_DYNAMIC_SHARED_LIMIT)
        {
            self.function
                .set_attribute(
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shape.dynamic_shared_bytes as i32,
                )
                .map_err(failed)?;
        }
        let mut launch = stream.launch_builder(&self.function);
        args.push_all(&mut launch);
        // The parameter list matches the PTX's (checked when the handle was made), each
        // argument is of its parameter's type (the compiler checked
        // `HostArgs<K::Params>`), the shape fits the device (checked above), and the
        // caller guarantees the kernel's memory accesses stay inside the buffers.
        raw::launch_checked(launch, shape.config()).map_err(failed)
    }

    /// Waits for the module's stream: every kernel queued on it, this one's included.
    pub fn wait(&self) -> Result<(), GpuError> {
        self.module.stream().synchronize().map_err(|error| GpuError::Launch { kernel: K::NAME.to_string(), error })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    shared::kernel! {
        /// The declaration the PTX below is checked against.
        pub struct Quantize;
        /// A host twin with this signature; never called.
        ///
        /// # Safety
        /// None needed: it does nothing.
        #[allow(dead_code)]
        pub unsafe fn quantize(x: *const u32, q: *mut u8, n: u64, scale: f32) {
            let _ = (x, q, n, scale);
        }
    }

    fn entry(name: &str, params: &[&str]) -> String {
        let list: Vec<String> =
            params.iter().enumerate().map(|(i, p)| format!("\t.param {p} {name}_param_{i}")).collect();
        format!(".visible .entry {name}(\n{}\n)\n{{\n\tret;\n}}\n", list.join(",\n"))
    }

    #[test]
    fn a_declaration_is_checked_against_the_ptx_param_list() {
        let good = entry("quantize", &[".u64 .ptr .align 1", ".u64 .ptr .align 1", ".u64", ".f32"]);
        check_params(Quantize::NAME, Quantize::PARAMS, &good).expect("the same list");
        let cases = [
            (
                entry("quantize", &[".u64 .ptr .align 1", ".u64 .ptr .align 1", ".u64"]),
                "4 parameters but the PTX's entry has 3",
            ),
            (
                entry("quantize", &[".u64 .ptr .align 1", ".u64 .ptr .align 1", ".u64", ".u32"]),
                "parameter 3 is declared a 4-byte float but the PTX has .param .u32",
            ),
            (
                entry("quantize", &[".u64 .ptr .align 1", ".u64", ".u64", ".f32"]),
                "parameter 1 is declared a pointer (*mut, 1-byte elements) but the PTX has .param .u64",
            ),
            (
                entry("quantize", &[".u64 .ptr .align 1", ".u64 .ptr .align 1", ".u32", ".f32"]),
                "parameter 2 is declared a 8-byte integer",
            ),
            (
                entry("quantize", &[".u64 .ptr .align 1", ".u64 .ptr .align 1", ".u64", ".align 4 .b8 x[4]"]),
                "an aggregate by value",
            ),
        ];
        for (ptx, expected) in cases {
            let error = check_params(Quantize::NAME, Quantize::PARAMS, &ptx).unwrap_err();
            assert!(matches!(&error, GpuError::Signature { kernel, .. } if kernel == "quantize"), "{error}");
            assert!(error.to_string().contains(expected), "{error} should say {expected:?}");
        }
        // NVRTC's PTX marks no pointer: a `.u64` may be one; the widths are still checked.
        let nvrtc = entry("quantize", &[".u64", ".u64", ".u64", ".f32"]);
        check_params(Quantize::NAME, Quantize::PARAMS, &nvrtc).expect("pointers unmarked in the whole module");
        let narrow = entry("quantize", &[".u64", ".u32", ".u64", ".f32"]);
        let error = check_params(Quantize::NAME, Quantize::PARAMS, &narrow).unwrap_err().to_string();
        assert!(
            error.contains("parameter 1 is declared a pointer (*mut, 1-byte elements) but the PTX has .param .u32")
        );
        let missing = check_params(Quantize::NAME, Quantize::PARAMS, &entry("other", &[])).unwrap_err();
        assert!(matches!(missing, GpuError::KernelMissing { name } if name == "quantize"));
    }
}
