//! The runtime variant table, built from `shared::for_each_variant!`.

use crate::gpu_check::GpuCheck;
use crate::three_way::ThreeWay;
use bitexact_gpu::{
    Bits, BufferElement, DeviceBuffer, DeviceElements, Gpu, GpuError, HostElements, InputAt, NonFinite,
};
use bitexact_support::element::Element;
use core::marker::PhantomData;
use cudarc::driver::{CudaView, CudaViewMut, DeviceRepr, LaunchConfig};
use shared::{Claim, Family, KernelKind, KernelName, Primitive, Stored, kind};

/// `from..` of a buffer of `len` elements, or a [`GpuError::Length`] for `kernel`.
fn checked_start(kernel: KernelName, from: usize, len: usize) -> Result<usize, GpuError> {
    if from > len {
        return Err(GpuError::Length {
            kernel: kernel.to_string(),
            detail: format!("start {from} past {len} elements"),
        });
    }
    Ok(from)
}

/// The operations every variant supports, type-erased so one table holds them all.
#[doc(hidden)]
pub trait VariantOps: BandwidthKernels + Sync {
    /// The stored result bits of the variant on input bits `input`, zero-extended.
    fn eval(&self, input: u64) -> u64;
    /// [`VariantOps::eval`] for each of `inputs`, into `out` (same length). This default
    /// is monomorphised per implementor, so for [`Ops`] `eval` is a direct call the loop
    /// inlines.
    fn eval_many(&self, inputs: &[u64], out: &mut [u64]) {
        assert_eq!(inputs.len(), out.len(), "eval_many: {} inputs, {} outputs", inputs.len(), out.len());
        for (o, &x) in out.iter_mut().zip(inputs) {
            *o = self.eval(x);
        }
    }
    /// Mean CPU nanoseconds per element over `len` elements: best of `reps` passes over
    /// a buffer, results kept live with `black_box`.
    fn cpu_ns_per_element(&self, len: usize, reps: usize) -> f64;
    /// Runs the variant's kernel on `len` inputs (`input_at(i)` for element `i`) and
    /// compares every result bit for bit with the same function run on the CPU.
    fn gpu_check(&self, gpu: &Gpu, len: usize, input_at: InputAt<'_>) -> Result<GpuCheck, GpuError>;
    /// `KernelModule::latency` with the variant's kernel.
    fn gpu_latency(&self, gpu: &Gpu, seed: u64, iterations: u32, out: &mut DeviceBuffer<u64>) -> Result<(), GpuError>;
    /// `KernelModule::launch_throughput` with the variant's kernel.
    fn gpu_launch_throughput(
        &self,
        gpu: &Gpu,
        config: LaunchConfig,
        seed: u64,
        iterations: u32,
        out: &mut DeviceBuffer<u64>,
    ) -> Result<(), GpuError>;
}

/// The kernels of the kinds only some variants have, type-erased: `Some` exactly for
/// the kinds the variant's table entry lists (the runtime table implements this for
/// each [`Ops`] from its entry).
#[doc(hidden)]
pub trait BandwidthKernels {
    /// The variant's [`KernelKind::Stream`] kernel, if it has one.
    fn stream(&self) -> Option<&dyn StreamKernel> {
        None
    }
    /// The variant's [`KernelKind::CountNonfinite`] kernel, if it has one.
    fn count_nonfinite(&self) -> Option<&dyn CountNonfiniteKernel> {
        None
    }
    /// The variant's [`KernelKind::Hardware`] kernel, if it has one.
    fn hardware(&self) -> Option<&dyn HardwareKernel> {
        None
    }
    /// The variant's [`KernelKind::HardwareStream`] kernel, if it has one: a
    /// [`StreamKernel`] like [`BandwidthKernels::stream`]'s, whose results are the GPU
    /// instruction's.
    fn hardware_stream(&self) -> Option<&dyn StreamKernel> {
        None
    }
}

/// A variant's [`KernelKind::Stream`] kernel (inputs and stored results of 8, 16 or
/// 32 bits; one load of four inputs and one store of their four results per lane per
/// step).
#[doc(hidden)]
pub trait StreamKernel: Sync {
    /// `len` inputs of the kernel's input type, element `i` the low bits of
    /// `input_at(i)`, on the device.
    fn upload(&self, gpu: &Gpu, len: usize, input_at: InputAt<'_>) -> Result<DeviceElements, GpuError>;
    /// `len` zeroed outputs of the kernel's stored result type, on the device.
    fn output(&self, gpu: &Gpu, len: usize) -> Result<DeviceElements, GpuError>;
    /// The kernel ([`KernelModule::launch_stream`](bitexact_gpu::KernelModule::launch_stream) or
    /// [`KernelModule::launch_hardware_stream`](bitexact_gpu::KernelModule::launch_hardware_stream)) over
    /// elements `from..` of `input` → `output` (equal lengths; `from > 0` starts both off
    /// their alignment, for the scalar pass), then waits. Fails with
    /// [`GpuError::Length`] if `input` or `output` holds another element type.
    fn run(&self, gpu: &Gpu, input: &DeviceElements, from: usize, output: &mut DeviceElements) -> Result<(), GpuError>;
    /// The kernel over all of `input` → `output`: queues it; does not wait.
    fn launch(&self, gpu: &Gpu, input: &DeviceElements, output: &mut DeviceElements) -> Result<(), GpuError>;
}

/// A variant's [`KernelKind::CountNonfinite`] kernel (inputs of 8 to 64 bits, one
/// 16-byte load per lane per step).
#[doc(hidden)]
pub trait CountNonfiniteKernel: Sync {
    /// `len` inputs of the kernel's input type, element `i` the low bits of
    /// `input_at(i)`, on the device.
    fn upload(&self, gpu: &Gpu, len: usize, input_at: InputAt<'_>) -> Result<DeviceElements, GpuError>;
    /// [`KernelModule::count_nonfinite`](bitexact_gpu::KernelModule::count_nonfinite) over elements `from..` of `input` (`from > 0` starts off
    /// a 16-byte boundary, for the head pass); indices count from `from`. Fails with
    /// [`GpuError::Length`] if `input` holds another element type.
    fn count(&self, gpu: &Gpu, input: &DeviceElements, from: usize) -> Result<NonFinite, GpuError>;
    /// [`KernelModule::launch_count`](bitexact_gpu::KernelModule::launch_count) over all of `input`: queues it, accumulating into `result`;
    /// does not wait.
    fn launch(&self, gpu: &Gpu, input: &DeviceElements, result: &mut DeviceBuffer<u64>) -> Result<(), GpuError>;
}

/// A variant's [`KernelKind::Hardware`] kernel: its family's conversion instruction
/// ([`shared::hardware::Conversion`]) run on the GPU.
#[doc(hidden)]
pub trait HardwareKernel: Sync {
    /// [`crate::three_way::three_way`]: inputs `first .. first + len` of the
    /// variant's domain through the variant's kernel, the hardware kernel (and its
    /// stream kernel, if the variant has one) and the CPU, compared.
    fn three_way(&self, gpu: &Gpu, first: u64, len: usize) -> Result<ThreeWay, GpuError>;
}

/// [`VariantOps`] for one [`Primitive`], monomorphised so the CPU loop inlines it.
pub(crate) struct Ops<P>(PhantomData<P>);

impl<P> VariantOps for Ops<P>
where
    P: kind::Map + kind::Latency + kind::Throughput + Sync,
    P::In: Element,
    <P::Out as Stored>::Bits: Element,
    Ops<P>: BandwidthKernels,
{
    fn eval(&self, input: u64) -> u64 {
        P::apply(P::In::from_u64(input)).to_stored().to_u64()
    }

    fn cpu_ns_per_element(&self, len: usize, reps: usize) -> f64 {
        crate::timing::ns_per_element::<P>(len, reps)
    }

    fn gpu_check(&self, gpu: &Gpu, len: usize, input_at: InputAt<'_>) -> Result<GpuCheck, GpuError> {
        crate::gpu_check::check_against_cpu::<P>(gpu, len, input_at)
    }

    fn gpu_latency(&self, gpu: &Gpu, seed: u64, iterations: u32, out: &mut DeviceBuffer<u64>) -> Result<(), GpuError> {
        gpu.module_for::<P>(KernelKind::Latency)?.latency::<P>(seed, iterations, out)
    }

    fn gpu_launch_throughput(
        &self,
        gpu: &Gpu,
        config: LaunchConfig,
        seed: u64,
        iterations: u32,
        out: &mut DeviceBuffer<u64>,
    ) -> Result<(), GpuError> {
        gpu.module_for::<P>(KernelKind::Throughput)?.launch_throughput::<P>(config, seed, iterations, out)
    }
}

/// One of `P`'s two stream kernels ([`KernelKind::Stream`], [`KernelKind::HardwareStream`]),
/// as a [`StreamKernel`]: `L` says which ([`ByFunction`] or [`ByInstruction`]).
#[doc(hidden)]
pub struct Streamed<P, L>(PhantomData<(P, L)>);

/// `P`'s [`KernelKind::Stream`] kernel (the variant's function), for [`Streamed`].
#[doc(hidden)]
pub struct ByFunction;

/// `P`'s [`KernelKind::HardwareStream`] kernel (the GPU's instruction), for [`Streamed`].
#[doc(hidden)]
pub struct ByInstruction;

/// How [`Streamed`] queues `P`'s stream kernel of kind [`StreamLaunch::KIND`].
pub(crate) trait StreamLaunch<P: Primitive> {
    /// The kernel's kind.
    const KIND: KernelKind;
    /// Queues it over `input` → `output` (equal lengths); does not wait.
    fn launch(gpu: &Gpu, input: &CudaView<'_, P::In>, output: &mut CudaViewMut<'_, Bits<P>>) -> Result<(), GpuError>;
}

impl<P: kind::Stream> StreamLaunch<P> for ByFunction
where
    P::In: DeviceRepr,
    Bits<P>: DeviceRepr,
{
    const KIND: KernelKind = KernelKind::Stream;
    fn launch(gpu: &Gpu, input: &CudaView<'_, P::In>, output: &mut CudaViewMut<'_, Bits<P>>) -> Result<(), GpuError> {
        gpu.module_for::<P>(KernelKind::Stream)?.launch_stream::<P>(input, output)
    }
}

impl<P: kind::HardwareStream> StreamLaunch<P> for ByInstruction
where
    P::In: DeviceRepr,
    Bits<P>: DeviceRepr,
{
    const KIND: KernelKind = KernelKind::HardwareStream;
    fn launch(gpu: &Gpu, input: &CudaView<'_, P::In>, output: &mut CudaViewMut<'_, Bits<P>>) -> Result<(), GpuError> {
        gpu.module_for::<P>(KernelKind::HardwareStream)?.launch_hardware_stream::<P>(input, output)
    }
}

impl<P, L> StreamKernel for Streamed<P, L>
where
    P: Primitive + Sync,
    P::In: BufferElement,
    Bits<P>: BufferElement,
    L: StreamLaunch<P> + Sync,
{
    fn upload(&self, gpu: &Gpu, len: usize, input_at: InputAt<'_>) -> Result<DeviceElements, GpuError> {
        DeviceElements::upload::<P::In>(gpu, len, input_at)
    }

    fn output(&self, gpu: &Gpu, len: usize) -> Result<DeviceElements, GpuError> {
        DeviceElements::zeros::<Bits<P>>(gpu, len)
    }

    fn run(&self, gpu: &Gpu, input: &DeviceElements, from: usize, output: &mut DeviceElements) -> Result<(), GpuError> {
        let name = KernelName::of::<P>(L::KIND);
        let input = input.typed::<P::In>(name)?;
        let output = output.typed_mut::<Bits<P>>(name)?;
        let from = checked_start(name, from, input.len().min(output.len()))?;
        L::launch(gpu, &input.slice(from..), &mut output.slice_mut(from..))?;
        gpu.wait(name)
    }

    fn launch(&self, gpu: &Gpu, input: &DeviceElements, output: &mut DeviceElements) -> Result<(), GpuError> {
        let name = KernelName::of::<P>(L::KIND);
        let input = input.typed::<P::In>(name)?;
        let output = output.typed_mut::<Bits<P>>(name)?;
        L::launch(gpu, &input.as_view(), &mut output.as_view_mut())
    }
}

impl<P> CountNonfiniteKernel for Ops<P>
where
    P: kind::CountNonfinite + Sync,
    P::In: BufferElement,
{
    fn upload(&self, gpu: &Gpu, len: usize, input_at: InputAt<'_>) -> Result<DeviceElements, GpuError> {
        DeviceElements::upload::<P::In>(gpu, len, input_at)
    }

    fn count(&self, gpu: &Gpu, input: &DeviceElements, from: usize) -> Result<NonFinite, GpuError> {
        let name = KernelName::of::<P>(KernelKind::CountNonfinite);
        let input = input.typed::<P::In>(name)?;
        let from = checked_start(name, from, input.len())?;
        gpu.module_for::<P>(KernelKind::CountNonfinite)?.count_nonfinite::<P>(&input.slice(from..))
    }

    fn launch(&self, gpu: &Gpu, input: &DeviceElements, result: &mut DeviceBuffer<u64>) -> Result<(), GpuError> {
        let input = input.typed::<P::In>(KernelName::of::<P>(KernelKind::CountNonfinite))?;
        gpu.module_for::<P>(KernelKind::CountNonfinite)?.launch_count::<P>(&input.as_view(), result)
    }
}

impl<P> HardwareKernel for Ops<P>
where
    P: kind::Hardware + kind::Map + Sync,
    P::In: Element,
    <P::Out as Stored>::Bits: Element,
    Ops<P>: BandwidthKernels,
{
    fn three_way(&self, gpu: &Gpu, first: u64, len: usize) -> Result<ThreeWay, GpuError> {
        let Some(kernel) = self.hardware_stream() else {
            return crate::three_way::three_way::<P>(gpu, first, len, None);
        };
        // The stream kernel over the same inputs, its results downloaded.
        let stream = |len: usize, input_at: InputAt<'_>| -> Result<HostElements, GpuError> {
            let input = kernel.upload(gpu, len, input_at)?;
            let mut output = kernel.output(gpu, len)?;
            kernel.run(gpu, &input, 0, &mut output)?;
            output.download(gpu)
        };
        crate::three_way::three_way::<P>(gpu, first, len, Some(&stream))
    }
}

/// The [`BandwidthKernels`] method that hands out a kind's kernel, for the kinds only
/// some variants have; nothing for the kinds every variant has. No catch-all: a new
/// kind must be placed here.
macro_rules! bandwidth_kernel {
    ($name:ident, Stream) => {
        fn stream(&self) -> Option<&dyn StreamKernel> {
            Some(&Streamed::<shared::variants::$name, ByFunction>(PhantomData))
        }
    };
    ($name:ident, CountNonfinite) => {
        fn count_nonfinite(&self) -> Option<&dyn CountNonfiniteKernel> {
            Some(self)
        }
    };
    ($name:ident, Hardware) => {
        fn hardware(&self) -> Option<&dyn HardwareKernel> {
            Some(self)
        }
    };
    ($name:ident, HardwareStream) => {
        fn hardware_stream(&self) -> Option<&dyn StreamKernel> {
            Some(&Streamed::<shared::variants::$name, ByInstruction>(PhantomData))
        }
    };
    ($name:ident, Map) => {};
    ($name:ident, Skeleton) => {};
    ($name:ident, Latency) => {};
    ($name:ident, Throughput) => {};
}

/// Largest domain that [`Variant::is_constant`] walks.
#[doc(hidden)]
pub const CONSTANT_CHECK_MAX_INPUTS: u64 = 1 << 16;

/// One row of the variant table.
pub struct Variant {
    /// Name; also its [`KernelKind::Map`] kernel's name, which its other kernels' names
    /// extend with their kind's suffix.
    pub name: &'static str,
    /// Family: fixes the input domain and the reference.
    pub family: Family,
    /// What the variant promises.
    pub claim: Claim,
    /// The formula, in one line.
    pub description: &'static str,
    /// Width in bits of the input element.
    pub input_bits: u32,
    /// Width in bits of the stored result.
    pub output_bits: u32,
    /// The kinds of GPU kernel it has, as its table entry states them.
    pub kinds: &'static [KernelKind],
    /// The type-erased operations.
    #[doc(hidden)]
    pub ops: &'static dyn VariantOps,
}

impl Variant {
    /// Whether it has a GPU kernel of kind `kind`.
    pub fn has(&self, kind: KernelKind) -> bool {
        self.kinds.contains(&kind)
    }

    /// The name of its kernel of kind `kind`, if it has one.
    pub fn kernel(&self, kind: KernelKind) -> Option<KernelName> {
        self.has(kind).then_some(KernelName { variant: self.name, kind })
    }

    /// Its stored result bits, zero-extended, on the input whose bits are `input` cut to
    /// [`Variant::input_bits`], computed on the CPU by the `shared` function its table
    /// entry names: the code its GPU kernels run. Any `input` is accepted; nothing panics.
    ///
    /// ```
    /// # mod bitexact { pub use bitexact_verify as verify; }
    /// let v = bitexact::verify::table::find("unorm8_times3_int").unwrap();
    /// assert_eq!(v.eval(255), u64::from(1.0f32.to_bits()));
    /// ```
    #[inline]
    pub fn eval(&self, input: u64) -> u64 {
        self.ops.eval(input)
    }

    /// Whether its function is proven constant: its domain has at most
    /// [`CONSTANT_CHECK_MAX_INPUTS`] inputs, all of them, and the CPU gives one result for
    /// every one. A constant function has nothing to time (its chain folds away, and
    /// rightly so: E4M3's `is_infinite` is `false`), so `bench` does not time it and the
    /// SASS shows no work. A constant variant with a larger domain would not be found
    /// here; it would be timed and its figures flagged invalid.
    #[doc(hidden)]
    pub fn is_constant(&self) -> bool {
        if crate::domain::count(self.family) > CONSTANT_CHECK_MAX_INPUTS {
            return false;
        }
        let mut results = crate::domain::inputs(self.family).map(|x| self.ops.eval(x));
        let first = results.next();
        results.all(|r| Some(r) == first)
    }

    /// The names of all its kernels, in the order of [`Variant::kinds`].
    pub fn kernels(&self) -> impl Iterator<Item = KernelName> + use<> {
        let name = self.name;
        self.kinds.iter().map(move |&kind| KernelName { variant: name, kind })
    }
}

impl core::fmt::Debug for Variant {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Variant").field("name", &self.name).field("family", &self.family).finish()
    }
}

macro_rules! runtime_table {
    ($({ $name:ident, $family:expr, $in:ty => $out:ty, $f:path, $claim:ident, [$($kind:ident),*], $desc:literal })*) => {
        $(impl BandwidthKernels for Ops<shared::variants::$name> {
            $(bandwidth_kernel!($name, $kind);)*
        })*

        /// Every variant of `shared::for_each_variant!`, in table order.
        pub static VARIANTS: &[Variant] = &[$(
            Variant {
                name: <shared::variants::$name as Primitive>::NAME,
                family: <shared::variants::$name as Primitive>::FAMILY,
                claim: <shared::variants::$name as Primitive>::CLAIM,
                description: <shared::variants::$name as Primitive>::DESCRIPTION,
                input_bits: <$in as Element>::BITS,
                output_bits: <<$out as Stored>::Bits as Element>::BITS,
                kinds: <shared::variants::$name as Primitive>::KINDS,
                ops: &Ops::<shared::variants::$name>(PhantomData),
            },
        )*];
    };
}
shared::for_each_variant!(runtime_table);

/// Every family of the table, each once, in table order.
pub fn families() -> Vec<Family> {
    families_of(VARIANTS)
}

/// The families of `variants`, each once, in order of first appearance.
pub(crate) fn families_of<'a>(variants: impl IntoIterator<Item = &'a Variant>) -> Vec<Family> {
    let mut families: Vec<Family> = Vec::new();
    for v in variants {
        if !families.contains(&v.family) {
            families.push(v.family);
        }
    }
    families
}

/// The variant called `name`, if any.
pub fn find(name: &str) -> Option<&'static Variant> {
    VARIANTS.iter().find(|v| v.name == name)
}

/// What `--only` means for every command that takes it (verify, sass, bench).
#[doc(hidden)]
pub const ONLY_HELP: &str = "Only these variants: a comma-separated list of names or name prefixes \
     (f16_finite, unorm8), or family names (binary16_is_finite, unorm8_to_f32)";

impl Variant {
    /// Whether `--only PATTERNS` selects this variant: one of the comma-separated
    /// patterns is a prefix of its name or exactly its family's name. A prefix, not a
    /// substring, so that `unorm8` does not also select `f32_to_unorm8` (2^32 inputs).
    #[doc(hidden)]
    pub fn matches(&self, patterns: &str) -> bool {
        patterns
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .any(|p| self.name.starts_with(p) || self.family.to_string() == p)
    }
}

/// The variants `--only` selects, in table order: all of them without `only`, and an
/// error naming the patterns if they select none.
#[doc(hidden)]
pub fn selected(only: Option<&str>) -> Result<Vec<&'static Variant>, NoVariantMatches> {
    let selected: Vec<&'static Variant> = VARIANTS.iter().filter(|v| only.is_none_or(|p| v.matches(p))).collect();
    if selected.is_empty() {
        return Err(NoVariantMatches(only.unwrap_or_default().to_string()));
    }
    Ok(selected)
}

/// `--only` selected no variant: the patterns given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no variant matches {0:?} (a name prefix or a family name; `bitexact verify --cpu-elements 0` lists them)")]
#[non_exhaustive]
pub struct NoVariantMatches(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    fn names(only: &str) -> Vec<&'static str> {
        selected(Some(only)).map(|v| v.iter().map(|v| v.name).collect()).unwrap_or_default()
    }

    #[test]
    fn only_selects_by_name_prefix_or_family_name() {
        let unorm8 = names("unorm8");
        assert!(unorm8.contains(&"unorm8_times3_int") && unorm8.contains(&"unorm8_to_f32"), "{unorm8:?}");
        assert!(!unorm8.iter().any(|n| n.starts_with("f32_to")), "unorm8 must not select f32_to_unorm8: {unorm8:?}");
        assert_eq!(names("f32_to_unorm8"), ["f32_to_unorm8", "f32_to_unorm8_mul_add_half"]);
        let family = names("unorm8_to_f32");
        assert_eq!(family.len(), VARIANTS.iter().filter(|v| v.family == Family::UnormToF32 { bits: 8 }).count());
        assert!(family.contains(&"unorm8_div_ieee"), "{family:?}");
        assert_eq!(names("f16_is_nan, e4m3_is_nan"), ["f16_is_nan", "e4m3_is_nan"]);
        assert!(names("series").is_empty(), "a substring is not a prefix");
        assert_eq!(selected(Some("nothing")).map(|v| v.len()), Err(NoVariantMatches("nothing".into())));
        assert_eq!(selected(None).map(|v| v.len()), Ok(VARIANTS.len()));
    }

    #[test]
    fn a_variant_hands_out_the_bandwidth_kernels_its_entry_lists() {
        for v in VARIANTS {
            assert_eq!(v.ops.stream().is_some(), v.has(KernelKind::Stream), "{}", v.name);
            assert_eq!(v.ops.count_nonfinite().is_some(), v.has(KernelKind::CountNonfinite), "{}", v.name);
            assert_eq!(v.ops.hardware().is_some(), v.has(KernelKind::Hardware), "{}", v.name);
            assert_eq!(v.ops.hardware_stream().is_some(), v.has(KernelKind::HardwareStream), "{}", v.name);
        }
    }

    /// Every conversion a user streams (f32 → binary16, bfloat16, E4M3, E5M2; the
    /// variants with a software stream kernel) also streams through its instruction.
    #[test]
    fn every_streamed_narrowing_has_a_hardware_stream_kernel() {
        let narrowings: Vec<&str> = VARIANTS
            .iter()
            .filter(|v| matches!(v.family, Family::F32ToNarrow { .. }) && v.has(KernelKind::Stream))
            .map(|v| v.name)
            .collect();
        assert_eq!(narrowings.len(), 6, "{narrowings:?}");
        for v in VARIANTS {
            let expected = narrowings.contains(&v.name);
            assert_eq!(v.has(KernelKind::HardwareStream), expected, "{}", v.name);
            if expected {
                assert!(v.has(KernelKind::Hardware), "{}", v.name);
            }
        }
    }

    #[test]
    fn each_family_with_an_instruction_has_exactly_one_hardware_kernel() {
        use shared::hardware::Conversion;
        for family in families() {
            let with_kernel = VARIANTS.iter().filter(|v| v.family == family && v.has(KernelKind::Hardware)).count();
            let expected = usize::from(Conversion::of(family).is_some());
            assert_eq!(with_kernel, expected, "{family}: {with_kernel} variants list Hardware");
        }
    }

    #[test]
    fn every_variant_has_the_common_kinds_then_its_own() {
        let v = find("unorm8_series").expect("in the table");
        let kinds: Vec<KernelKind> = v.kernels().map(|k| k.kind).collect();
        use KernelKind::*;
        assert_eq!(kinds, [Map, Skeleton, Latency, Throughput, Stream]);
        assert_eq!(v.kernel(Stream), Some(KernelName { variant: "unorm8_series", kind: Stream }));
        assert_eq!(v.kernel(KernelKind::CountNonfinite), None);
    }
}
