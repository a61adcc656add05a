//! The CUDA C++ baseline: the forms a CUDA C++ programmer writes for the jobs of our Rust
//! variants (`cuda-baseline/forms.cu`), each paired with its Rust variant in [`FORMS`],
//! compiled at run time by NVRTC ([`crate::nvrtc`]) and set beside the Rust
//! variant in the SASS report ([`cost_report`]).
//!
//! Nothing in `cargo build` compiles the C++: the source is embedded as text
//! ([`SOURCE`]). Each `FORM(name, In, Bits)` in it defines `cxx_<name>` with the
//! signature of the paired variant's `Map` kernel, `(const In*, Bits*, unsigned long
//! long n)`, grid-stride, and its `cxx_<name>_skeleton` twin (same loop, the input's bits
//! cast to the output width, no work), which the report subtracts as it does for the
//! Rust kernels ([`sass::work`]).
//!
//! The report compiles the source once per architecture and per [`Flags`] (default,
//! `--use_fast_math`, and each of `--ftz=true`, `--prec-div=false`, `--fmad=false`
//! alone), and marks where a flag changes a form's code: for a form [`Expect`]ed exact,
//! that is where the flag may break it, which only a GPU run can count.
//!
//! For that GPU run and the bench, the same table gives each form a marker type in
//! [`cxx`] (`cxx::unorm8_div` for the kernel `cxx_unorm8_div`), a
//! [`shared::Primitive`] with the paired variant's types and family and an
//! `unsafe impl` of [`shared::kind::Map`], so that [`bitexact_gpu::KernelModule::map`]
//! launches it typed and bounds-checked, and a type-erased [`FormKernels`] in
//! [`Form::kernels`] that runs the form's kernel and its Rust variant's on the same
//! device buffers, and the form's latency and throughput chains (the Rust variants'
//! chain step, written in C++ by the `FORM` macro) ([`crate::cxx_gpu`] loads the PTX and compares).

use crate::nvrtc::{Nvrtc, NvrtcError};
use crate::sass::{self, Instruction, Kernel, SassCost, SassError, Work, chain};
use crate::tools::{CudaTools, check_arch};
use bitexact_gpu::{Bits, BufferElement, DeviceBuffer, DeviceElements, Gpu, GpuError, InputAt, KernelModule};
use cudarc::driver::LaunchConfig;
use rayon::prelude::*;
use shared::{Claim, KernelKind, KernelName, Primitive, kind};
use std::fmt;
use std::marker::PhantomData;

/// The C++ source of every form (`cuda-baseline/forms.cu`).
pub const SOURCE: &str = include_str!("../../../../cuda-baseline/forms.cu");

/// The source's name, as NVRTC reports it.
pub(crate) const SOURCE_NAME: &str = "cuda-baseline/forms.cu";

/// What a C++ form is expected to get right against its Rust variant's family reference,
/// under default flags. The GPU proof of these is owed until a GPU runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expect {
    /// Bit-identical to the reference on every input.
    Exact,
    /// Bit-identical on every input but NaNs, where it gives a NaN in other bits: the
    /// GPU's conversion instruction gives its canonical NaN, where the reference keeps
    /// the payload.
    ExactButNanBits,
    /// Within one ULP, wrong on some inputs (the paired Rust variant is 1-ULP too).
    OneUlp,
    /// Wrong on some inputs on purpose: the negative control.
    Incorrect,
}

impl Expect {
    /// Short stable name, for tables and JSON.
    pub const fn name(self) -> &'static str {
        match self {
            Expect::Exact => "exact",
            Expect::ExactButNanBits => "exact but NaN bits",
            Expect::OneUlp => "1-ulp",
            Expect::Incorrect => "incorrect",
        }
    }

    /// Whether the form is expected right on every non-NaN input: then a flag that
    /// changes its code may break it.
    pub const fn is_exact(self) -> bool {
        matches!(self, Expect::Exact | Expect::ExactButNanBits)
    }

    /// The claim of the Rust variant a form of this expectation pairs with, and its
    /// marker's [`Primitive::CLAIM`]: [`Expect::ExactButNanBits`] pairs with an exact
    /// variant (its NaN allowance is the form's own, which the GPU check reads from
    /// [`Form::expect`]).
    pub const fn claim(self) -> Claim {
        match self {
            Expect::Exact | Expect::ExactButNanBits => Claim::Exact,
            Expect::OneUlp => Claim::OneUlp,
            Expect::Incorrect => Claim::Incorrect,
        }
    }
}

/// One C++ form and its Rust variant.
#[derive(Clone, Copy, Debug)]
pub struct Form {
    /// The name in `FORM(name, ...)`; its kernels are `cxx_<name>` and
    /// `cxx_<name>_skeleton`.
    pub name: &'static str,
    /// The paired Rust variant, a name in [`bitexact_verify::table::VARIANTS`], with the
    /// same input and output widths.
    pub variant: &'static str,
    /// What the form is expected to get right under default flags.
    pub expect: Expect,
    /// The form as a CUDA C++ programmer writes it, in one line.
    pub code: &'static str,
    /// Its kernel and its Rust variant's `Map` kernel, launched through their marker
    /// types ([`cxx`], [`shared::variants`]).
    pub kernels: &'static dyn FormKernels,
}

impl Form {
    /// Its kernel's name.
    pub fn kernel(&self) -> String {
        format!("cxx_{}", self.name)
    }

    /// Its skeleton kernel's name.
    pub fn skeleton(&self) -> String {
        format!("cxx_{}_skeleton", self.name)
    }
}

macro_rules! forms {
    ($({ $name:ident, $variant:ident, $expect:ident, $code:literal })*) => {
        /// Every form of [`SOURCE`], paired with its Rust variant: one row per
        /// `FORM(...)` line, in source order.
        pub const FORMS: &[Form] = &[$(Form {
            name: stringify!($name),
            variant: stringify!($variant),
            expect: Expect::$expect,
            code: $code,
            kernels: &Paired::<cxx::$name, shared::variants::$variant>(PhantomData),
        }),*];

        /// One marker type per form of [`FORMS`], named like the form: `cxx::unorm8_div`
        /// describes the kernel `cxx_unorm8_div` ([`Primitive::NAME`]) of the PTX that
        /// NVRTC makes of [`SOURCE`]. Its types, family and function are its Rust
        /// variant's (the function is what the form is written to compute; the GPU check
        /// compares the kernel with the family's reference, not with it), its claim
        /// [`Expect::claim`], its kinds `Map`, `Skeleton`, `Latency` and `Throughput`.
        #[allow(non_camel_case_types, unsafe_code)]
        pub mod cxx {
            use super::Expect;
            use shared::Primitive;
            $(
                #[doc = concat!("`cxx_", stringify!($name), "`: `", $code, "`, paired with [`shared::variants::", stringify!($variant), "`].")]
                #[derive(Clone, Copy, Debug)]
                pub struct $name;

                impl Primitive for $name {
                    type In = <shared::variants::$variant as Primitive>::In;
                    type Out = <shared::variants::$variant as Primitive>::Out;
                    const NAME: &'static str = concat!("cxx_", stringify!($name));
                    const FAMILY: shared::Family = <shared::variants::$variant as Primitive>::FAMILY;
                    const CLAIM: shared::Claim = Expect::$expect.claim();
                    const DESCRIPTION: &'static str = $code;
                    const KINDS: &'static [shared::KernelKind] = &[
                        shared::KernelKind::Map,
                        shared::KernelKind::Skeleton,
                        shared::KernelKind::Latency,
                        shared::KernelKind::Throughput,
                    ];
                    fn apply(x: Self::In) -> Self::Out {
                        <shared::variants::$variant as Primitive>::apply(x)
                    }
                }

                // SAFETY: a `cxx_<name>` kernel can be loaded only through
                // `FormsPtx::load`: our embedded modules have none, and `load_user_module`
                // refuses the `cxx_` prefix (`gpu::RESERVED_PREFIX`). That load is
                // `unsafe`: its caller vouches that the PTX is NVRTC's compilation of
                // `SOURCE` against genuine headers, or files `--emit-ptx` wrote from it
                // (read back with every kernel's shape checked, `cxx_gpu::read`). There its
                // `FORM(name, In, Bits)` line writes the kernel as
                // `(const In*, Bits*, unsigned long long n)` with the paired variant's `In`
                // and stored `Bits` (the widths a test checks against the variant), and its
                // grid-stride loop touches only `i < n`.
                unsafe impl shared::kind::Map for $name {}
                // SAFETY: as for `Map`: the same `FORM` line writes `cxx_<name>_skeleton`
                // with the same signature and loop.
                unsafe impl shared::kind::Skeleton for $name {}
                // SAFETY: the same `FORM` line writes `cxx_<name>_latency` and
                // `cxx_<name>_throughput` as `(unsigned long long seed, unsigned int
                // iterations, unsigned long long* out)`, the timing signature; the latency
                // kernel writes `out[0..2]`, the throughput kernel `out[thread]` for each
                // launched thread (its index counts the x dimensions only), as the Rust
                // timing kernels do.
                unsafe impl shared::kind::Latency for $name {}
                // SAFETY: as for `Latency`.
                unsafe impl shared::kind::Throughput for $name {}
            )*
        }
    };
}

forms! {
    { f16_finite_exp_mask, f16_finite_exp_mask, Exact, "(b & 0x7C00) != 0x7C00" }
    { f16_finite_abs_bits_lt_inf, f16_finite_abs_bits_lt_inf, Exact, "(b & 0x7FFF) < 0x7C00" }
    { f16_finite_hisinf_hisnan, f16_finite_not_inf_not_nan, Exact, "!__hisinf(h) && !__hisnan(h)" }
    { f16_finite_hlt_habs_inf, f16_finite_ordered_lt_inf, Exact, "__hlt(__habs(h), inf)" }
    { f16_finite_isfinite_half2float, f16_finite_via_f32, Exact, "isfinite(__half2float(h))" }
    { f16_finite_hltu_habs_inf, f16_finite_unordered_lt_inf, Incorrect, "__hltu(__habs(h), inf): true for NaN" }
    { unorm8_div, unorm8_div_ieee, Exact, "(float)x / 255.0f" }
    { unorm8_mul_recip, unorm8_mul_recip, OneUlp, "(float)x * (1.0f / 255.0f)" }
    { unorm8_via_double, unorm8_via_f64, Exact, "(float)((double)x * (1.0 / 255.0))" }
    { unorm8_series, unorm8_series, Exact, "t * k0 + t * k1" }
    { unorm8_series_fmaf, unorm8_series_fma, Exact, "fmaf(t, k0, t * k1)" }
    { unorm8_times3_float, unorm8_times3_float, Exact, "((float)x * 3.0f) * (1.0f / 765.0f)" }
    { unorm8_times3_int, unorm8_times3_int, Exact, "(float)(x * 3u) * (1.0f / 765.0f)" }
    { f32_to_f16_rn, f32_to_f16, ExactButNanBits, "__float2half_rn(x)" }
    { f32_to_bf16_rn, f32_to_bf16, ExactButNanBits, "__float2bfloat16_rn(x)" }
    { f32_to_e4m3_nosat, f32_to_e4m3, ExactButNanBits, "__nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3)" }
    { f32_to_e4m3_satfinite, f32_to_e4m3_satfinite, ExactButNanBits, "__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)" }
    { f32_to_e5m2_nosat, f32_to_e5m2, ExactButNanBits, "__nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2)" }
    { f32_to_e5m2_satfinite, f32_to_e5m2_satfinite, ExactButNanBits, "__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2)" }
    { f16_to_f32_half2float, f16_to_f32, ExactButNanBits, "__half2float(h)" }
    { bf16_to_f32_bfloat162float, bf16_to_f32, ExactButNanBits, "__bfloat162float(h)" }
    { e4m3_to_f32_via_halfraw, e4m3_to_f32, ExactButNanBits, "__half2float(__nv_cvt_fp8_to_halfraw(b, __NV_E4M3))" }
    { e5m2_to_f32_via_halfraw, e5m2_to_f32, ExactButNanBits, "__half2float(__nv_cvt_fp8_to_halfraw(b, __NV_E5M2))" }
}

/// A form's kernel and its Rust variant's `Map` kernel, type-erased so that [`FORMS`]
/// holds them all ([`Paired`]). Both read the same input buffer and write outputs of the
/// same element type, and both wait for their kernel.
pub trait FormKernels: Sync {
    /// The C++ kernel's name, `cxx_<name>` (its marker's [`Primitive::NAME`]).
    fn name(&self) -> &'static str;
    /// The family both compute: the domain and the reference.
    fn family(&self) -> shared::Family;
    /// `len` inputs of the kernels' input type, element `i` the low bits of
    /// `input_at(i)`, on the device.
    fn upload(&self, gpu: &Gpu, len: usize, input_at: InputAt<'_>) -> Result<DeviceElements, GpuError>;
    /// `len` zeroed outputs of the kernels' stored result type, on the device.
    fn output(&self, gpu: &Gpu, len: usize) -> Result<DeviceElements, GpuError>;
    /// The C++ kernel of `module` (PTX that NVRTC made of [`SOURCE`]) over `input` →
    /// `output` (equal lengths, the types of [`FormKernels::upload`] and
    /// [`FormKernels::output`], else [`GpuError::Length`]); waits for it.
    fn run_cxx(
        &self,
        module: &KernelModule,
        input: &DeviceElements,
        output: &mut DeviceElements,
    ) -> Result<(), GpuError>;
    /// The Rust variant's `Map` kernel over the same, on `gpu`'s embedded module; waits.
    fn run_rust(&self, gpu: &Gpu, input: &DeviceElements, output: &mut DeviceElements) -> Result<(), GpuError>;
    /// The C++ form's latency kernel of `module` on one thread ([`KernelModule::latency`]):
    /// `out[0]` its cycles, `out[1]` its final value; waits.
    fn cxx_latency(
        &self,
        module: &KernelModule,
        seed: u64,
        iterations: u32,
        out: &mut DeviceBuffer<u64>,
    ) -> Result<(), GpuError>;
    /// Queues the C++ form's throughput kernel of `module` with `config`
    /// ([`KernelModule::launch_throughput`]; `out` holds one element per launched thread).
    fn cxx_launch_throughput(
        &self,
        module: &KernelModule,
        config: LaunchConfig,
        seed: u64,
        iterations: u32,
        out: &mut DeviceBuffer<u64>,
    ) -> Result<(), GpuError>;
}

impl fmt::Debug for dyn FormKernels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FormKernels({})", self.name())
    }
}

/// [`FormKernels`] of the C++ form with marker `C` and its Rust variant `V`, which has
/// the same input and output types.
pub struct Paired<C, V>(PhantomData<(C, V)>);

impl<C, V> FormKernels for Paired<C, V>
where
    C: kind::Map + kind::Latency + kind::Throughput + Sync,
    V: kind::Map + Primitive<In = C::In, Out = C::Out> + Sync,
    C::In: BufferElement,
    Bits<C>: BufferElement,
{
    fn name(&self) -> &'static str {
        C::NAME
    }

    fn family(&self) -> shared::Family {
        C::FAMILY
    }

    fn upload(&self, gpu: &Gpu, len: usize, input_at: InputAt<'_>) -> Result<DeviceElements, GpuError> {
        DeviceElements::upload::<C::In>(gpu, len, input_at)
    }

    fn output(&self, gpu: &Gpu, len: usize) -> Result<DeviceElements, GpuError> {
        DeviceElements::zeros::<Bits<C>>(gpu, len)
    }

    fn run_cxx(
        &self,
        module: &KernelModule,
        input: &DeviceElements,
        output: &mut DeviceElements,
    ) -> Result<(), GpuError> {
        let name = KernelName::of::<C>(KernelKind::Map);
        let input = input.typed::<C::In>(name)?;
        let output = output.typed_mut::<Bits<C>>(name)?;
        module.map::<C>(&input.as_view(), &mut output.as_view_mut())
    }

    fn run_rust(&self, gpu: &Gpu, input: &DeviceElements, output: &mut DeviceElements) -> Result<(), GpuError> {
        let name = KernelName::of::<V>(KernelKind::Map);
        let (input, output) = (input.typed::<V::In>(name)?, output.typed_mut::<Bits<V>>(name)?);
        gpu.module_for::<V>(KernelKind::Map)?.map::<V>(&input.as_view(), &mut output.as_view_mut())
    }

    fn cxx_latency(
        &self,
        module: &KernelModule,
        seed: u64,
        iterations: u32,
        out: &mut DeviceBuffer<u64>,
    ) -> Result<(), GpuError> {
        module.latency::<C>(seed, iterations, out)
    }

    fn cxx_launch_throughput(
        &self,
        module: &KernelModule,
        config: LaunchConfig,
        seed: u64,
        iterations: u32,
        out: &mut DeviceBuffer<u64>,
    ) -> Result<(), GpuError> {
        module.launch_throughput::<C>(config, seed, iterations, out)
    }
}

/// A `FORM(name, In, Bits)` line of a source, with the widths of its C types.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declared {
    /// The form's name.
    pub name: String,
    /// Width in bits of `In`, `None` for a type other than `unsigned char`, `short`, `int`.
    pub input_bits: Option<u32>,
    /// Width in bits of `Bits`, likewise.
    pub output_bits: Option<u32>,
}

/// Every `FORM(name, In, Bits)` line of `source` (one at the start of a line; the
/// macro's own `#define` is not one), in source order.
pub fn declared_forms(source: &str) -> Vec<Declared> {
    let width = |c_type: &str| match c_type.trim() {
        "unsigned char" => Some(8),
        "unsigned short" => Some(16),
        "unsigned int" => Some(32),
        _ => None,
    };
    source
        .lines()
        .filter_map(|line| line.strip_prefix("FORM(")?.strip_suffix(')'))
        .filter_map(|args| {
            let parts: Vec<&str> = args.split(',').collect();
            let [name, input, output] = parts[..] else { return None };
            Some(Declared { name: name.trim().to_string(), input_bits: width(input), output_bits: width(output) })
        })
        .collect()
}

/// The operations a work does, as a sorted multiset: each work opcode reduced as the
/// chain check reduces it (`chain::chain_operation`: no modifiers, no moves, loads,
/// stores or control flow, one name per integer add and per select), less those of the
/// skeleton's opcodes the kernel lacks. Two works with the same operations differ only
/// in spelling and in how their skeletons happened to compile (the Rust skeletons of
/// the boolean kernels keep a move that their map kernels do not).
pub fn operations(work: &Work) -> Vec<String> {
    let reduce = |opcodes: &[String]| -> Vec<String> {
        opcodes
            .iter()
            .filter_map(|opcode| {
                let instruction = Instruction { address: 0, opcode: opcode.clone(), text: opcode.clone() };
                chain::chain_operation(&instruction).map(str::to_string)
            })
            .collect()
    };
    let mut left = reduce(&work.work_opcodes);
    for gone in reduce(&work.skeleton_only_opcodes) {
        if let Some(at) = left.iter().position(|o| *o == gone) {
            left.remove(at);
        }
    }
    left.sort();
    left
}

/// A set of NVRTC flags the report compiles the baseline with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Flags {
    /// No flag: NVRTC's defaults (IEEE division and square root, denormals kept,
    /// multiply-adds contracted).
    Default,
    /// `--use_fast_math`: `--ftz=true --prec-div=false --prec-sqrt=false --fmad=true`
    /// and the fast intrinsics.
    UseFastMath,
    /// `--ftz=true` alone: single-precision denormals flushed to zero.
    Ftz,
    /// `--prec-div=false` alone: single-precision division and reciprocal approximate.
    NoPrecDiv,
    /// `--fmad=false` alone: no multiply-add contraction.
    NoFmad,
}

impl Flags {
    /// Every set, the default first.
    pub const ALL: [Flags; 5] = [Flags::Default, Flags::UseFastMath, Flags::Ftz, Flags::NoPrecDiv, Flags::NoFmad];

    /// NVRTC's options for this set. (cudarc's `CompileOptions::use_fast_math` passes
    /// `--fmad=true` instead of `--use_fast_math`, so the options are spelled here.)
    pub const fn options(self) -> &'static [&'static str] {
        match self {
            Flags::Default => &[],
            Flags::UseFastMath => &["--use_fast_math"],
            Flags::Ftz => &["--ftz=true"],
            Flags::NoPrecDiv => &["--prec-div=false"],
            Flags::NoFmad => &["--fmad=false"],
        }
    }

    /// The name of its precompiled PTX file's flag part
    /// ([`crate::cxx_gpu::ptx_file_name`]): `default`, `use_fast_math`, `ftz`,
    /// `no_prec_div`, `no_fmad`.
    pub(crate) const fn slug(self) -> &'static str {
        match self {
            Flags::Default => "default",
            Flags::UseFastMath => "use_fast_math",
            Flags::Ftz => "ftz",
            Flags::NoPrecDiv => "no_prec_div",
            Flags::NoFmad => "no_fmad",
        }
    }

    /// The column header: the option, or `default`.
    pub const fn label(self) -> &'static str {
        match self {
            Flags::Default => "default",
            Flags::UseFastMath => "--use_fast_math",
            Flags::Ftz => "--ftz=true",
            Flags::NoPrecDiv => "--prec-div=false",
            Flags::NoFmad => "--fmad=false",
        }
    }
}

/// A form's work under one set of flags.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FlagCost {
    /// The flags.
    pub flags: Flags,
    /// Its kernel's work over its skeleton.
    pub work: Work,
    /// Whether its kernel's code differs from its code under default flags (always
    /// false for [`Flags::Default`]).
    pub code_changed: bool,
}

/// One row of the C++ column: one form on one architecture.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CxxCost {
    /// The architecture, e.g. `sm_90`.
    pub arch: String,
    /// The form's kernel, `cxx_<name>`.
    pub kernel: String,
    /// The form in one line.
    pub code: &'static str,
    /// What it is expected to get right under default flags.
    pub expect: Expect,
    /// The paired Rust variant.
    pub variant: &'static str,
    /// The Rust variant's work on this architecture, when the report was given it.
    pub rust_work: Option<Work>,
    /// The form's work under each of [`Flags::ALL`], in that order.
    pub by_flags: Vec<FlagCost>,
}

impl CxxCost {
    /// Its work under default flags.
    pub fn default_work(&self) -> &Work {
        &self.by_flags[0].work
    }

    /// Whether the C++ form's work (default flags) does other operations than the Rust
    /// variant's, see [`operations`].
    pub fn differs_from_rust(&self) -> bool {
        self.rust_work.as_ref().is_some_and(|rust| operations(rust) != operations(self.default_work()))
    }

    /// The flags that change the code of a form expected exact: where a flag may break
    /// it (a GPU run counts the mismatches).
    pub fn flags_changing_exact_code(&self) -> Vec<Flags> {
        if !self.expect.is_exact() {
            return Vec::new();
        }
        self.by_flags.iter().filter(|c| c.code_changed).map(|c| c.flags).collect()
    }
}

/// Why the C++ column could not be made: the error of the step that failed, as it is.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BaselineError {
    /// NVRTC was missing or rejected the source.
    #[error(transparent)]
    Nvrtc(#[from] NvrtcError),
    /// Assembling, disassembling or finding a kernel failed.
    #[error(transparent)]
    Sass(#[from] SassError),
}

/// A tool's failure is a failure of the SASS step (thiserror's `#[from]` converts one
/// level only).
impl From<crate::tools::ToolError> for BaselineError {
    fn from(e: crate::tools::ToolError) -> BaselineError {
        BaselineError::Sass(SassError::Tool(e))
    }
}

/// The baseline's SASS for `arch` under `flags`: [`SOURCE`] through NVRTC, `ptxas` and
/// `cuobjdump`, split into kernels by [`sass::parse_listing`].
pub fn listing(tools: &CudaTools, nvrtc: &Nvrtc, arch: &str, flags: Flags) -> Result<Vec<Kernel>, BaselineError> {
    let ptx = nvrtc.compile(SOURCE, SOURCE_NAME, arch, flags.options())?;
    Ok(sass::parse_listing(&tools.disassemble(&tools.assemble(&ptx, arch)?)?))
}

/// The kernel `name` of a listing for `arch`.
fn find_kernel<'k>(kernels: &'k [Kernel], arch: &str, name: String) -> Result<&'k Kernel, SassError> {
    kernels
        .iter()
        .find(|k| k.name == name)
        .ok_or_else(|| SassError::MissingKernel { arch: arch.to_string(), kernel: name })
}

/// The instructions' text, for telling whether two builds of a kernel differ.
fn code(kernel: &Kernel) -> Vec<&str> {
    kernel.instructions.iter().map(|i| i.text.as_str()).collect()
}

/// The C++ column: the work of each of `forms` on each of `archs` under each of
/// [`Flags::ALL`], with the paired Rust variant's work taken from `rust` (its
/// [`sass::cost_report`] rows; `None` where `rust` has no row for the variant and
/// architecture). Architecture by architecture, forms in the given order. Compiles
/// `archs.len() * 5` builds on the rayon pool. Fails if an architecture name is
/// malformed (before anything runs), NVRTC or a tool fails, or a form's kernel is
/// missing from a listing.
pub fn cost_report(
    tools: &CudaTools,
    nvrtc: &Nvrtc,
    forms: &[Form],
    rust: &[SassCost],
    archs: &[&str],
) -> Result<Vec<CxxCost>, BaselineError> {
    for arch in archs {
        check_arch(arch)?;
    }
    let builds: Vec<(&str, Flags)> =
        archs.iter().flat_map(|&arch| Flags::ALL.into_iter().map(move |flags| (arch, flags))).collect();
    let listings: Vec<Vec<Kernel>> =
        builds.par_iter().map(|&(arch, flags)| listing(tools, nvrtc, arch, flags)).collect::<Result<_, _>>()?;
    let mut costs = Vec::with_capacity(forms.len() * archs.len());
    for (&arch, per_flags) in archs.iter().zip(listings.chunks(Flags::ALL.len())) {
        for form in forms {
            let mut by_flags = Vec::with_capacity(Flags::ALL.len());
            let default_kernel = find_kernel(&per_flags[0], arch, form.kernel())?;
            for (flags, kernels) in Flags::ALL.into_iter().zip(per_flags) {
                let kernel = find_kernel(kernels, arch, form.kernel())?;
                let skeleton = find_kernel(kernels, arch, form.skeleton())?;
                let code_changed = code(kernel) != code(default_kernel);
                by_flags.push(FlagCost { flags, work: sass::work(kernel, skeleton), code_changed });
            }
            let rust_work = rust.iter().find(|c| c.arch == arch && c.variant == form.variant).map(|c| c.work.clone());
            costs.push(CxxCost {
                arch: arch.to_string(),
                kernel: form.kernel(),
                code: form.code,
                expect: form.expect,
                variant: form.variant,
                rust_work,
                by_flags,
            });
        }
    }
    Ok(costs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_line_is_read_with_its_widths() {
        let source = "#define FORM(name, In, Bits) x\nFORM(a, unsigned short, unsigned char)\n  FORM(b, int, int)\nFORM(c, float, unsigned int)\n";
        let declared = declared_forms(source);
        let rows: Vec<(&str, Option<u32>, Option<u32>)> =
            declared.iter().map(|d| (d.name.as_str(), d.input_bits, d.output_bits)).collect();
        assert_eq!(rows, [("a", Some(16), Some(8)), ("c", None, Some(32))]);
    }

    #[test]
    fn the_table_lists_the_source_forms_in_source_order() {
        let declared: Vec<String> = declared_forms(SOURCE).into_iter().map(|d| d.name).collect();
        let table: Vec<&str> = FORMS.iter().map(|f| f.name).collect();
        assert_eq!(declared, table);
    }
}
