//! The kinds of GPU kernel `kernels-gpu` builds for a variant, their names, and one
//! trait per kind that ties the kind to the types its kernel needs.
//!
//! A variant `V`'s kernel of kind `K` is the PTX entry point named `V` followed by
//! `K`'s suffix ([`kernel_suffix!`](crate::kernel_suffix), the one place the suffixes
//! are written). Which kinds a variant has is stated by its entry in
//! [`for_each_variant!`](crate::for_each_variant): the four kinds every variant has
//! (`Map`, `Skeleton`, `Latency`, `Throughput`, which the macro adds) and the ones the
//! entry lists. For each, the table
//! implements the kind's trait of this module for the variant's marker type, so
//! `P: kind::Stream` is a proof that `P`'s `Stream` kernel exists and takes what its
//! signature says; an entry that lists a kind its types cannot have does not compile.
//!
//! The two bandwidth kinds are generic over the element width, within the widths their
//! coalesced layout serves ([`StreamElement`], [`CountElement`]): see each kind's
//! documentation for what one lane's load and store instructions touch.
//!
//! # Safety
//!
//! The kind traits are `unsafe` to implement, because the host's safe, typed launches
//! (`bitexact::gpu::KernelModule::map::<P>`, `stream_staged::<P, _>`, ...) trust them: a launch of
//! `P`'s kernel of kind `K` looks the kernel up by name ([`KernelName::of`]) and
//! passes it buffers of `P::In` and of `P::Out`'s stored bits. (It goes through the
//! kind's declaration, [`KindKernel`], so the host first checks the entry's `.param`
//! list, the count, widths and pointer or value, against it; what the PTX cannot show,
//! the pointees' types and how far the kernel reaches, rests on this promise.)
//! Implementing `K` for `P`
//! asserts that every PTX module the host may launch `P`'s kernels from either lacks
//! an entry point of that name (the launch then fails with an error) or has one whose
//! parameters are exactly those [`KernelKind`] documents for `K`, with `In = P::In` and
//! `Bits = <P::Out as Stored>::Bits`, and which touches no element at or past the
//! length it is given. A wrong implementation lets safe code read or write device
//! memory out of bounds.
//!
//! The marker types of [`crate::variants`] implement them for the kinds their table
//! entry lists, and `kernels-gpu` builds exactly those kernels from the same entries
//! with the same types, so the promise holds by construction. The macro that writes
//! those implementations is private to this crate. Another crate cannot implement a
//! kind trait without writing `unsafe` itself:
//!
//! ```compile_fail,E0200
//! use shared::{Claim, Family, Primitive};
//! /// A primitive of one's own, named like one of the table's kernels.
//! struct Mine;
//! impl Primitive for Mine {
//!     type In = u32; // the real `unorm8_times3_int_stream` reads bytes
//!     type Out = f32;
//!     const NAME: &'static str = "unorm8_times3_int";
//!     const FAMILY: Family = Family::UnormToF32 { bits: 8 };
//!     const CLAIM: Claim = Claim::Exact;
//!     const DESCRIPTION: &'static str = "mine";
//!     const KINDS: &'static [shared::KernelKind] = &[];
//!     fn apply(x: u32) -> f32 {
//!         x as f32
//!     }
//! }
//! impl shared::kind::Stream for Mine {} // error[E0200]: requires an `unsafe impl`
//! ```
//!
//! The same with `unsafe impl` compiles: the implementer then vouches for the kernel,
//! as the [`Safety`](crate::kind#safety) section above says (this is how a kernel crate of
//! one's own describes its kernels to the host).
//!
//! ```
//! use shared::{Claim, Family, Primitive};
//! struct Mine;
//! impl Primitive for Mine {
//!     type In = u8;
//!     type Out = f32;
//!     const NAME: &'static str = "my_unorm8";
//!     const FAMILY: Family = Family::UnormToF32 { bits: 8 };
//!     const CLAIM: Claim = Claim::Exact;
//!     const DESCRIPTION: &'static str = "mine";
//!     const KINDS: &'static [shared::KernelKind] = &[shared::KernelKind::Map, shared::KernelKind::Stream];
//!     fn apply(x: u8) -> f32 {
//!         shared::unorm8::times3_int(x)
//!     }
//! }
//! // SAFETY: every module the host launches `my_unorm8`'s kernels from builds
//! // `my_unorm8` with `(*const u8, *mut u32, u64)`, touching only elements below `n`.
//! unsafe impl shared::kind::Map for Mine {}
//! // SAFETY: as above, for `my_unorm8_stream`, which also reads and writes only below `n`.
//! unsafe impl shared::kind::Stream for Mine {}
//! ```
//!
//! The table's own macro cannot be called from outside either, so it cannot write
//! those `unsafe impl`s for another crate's types:
//!
//! ```compile_fail,E0433
//! shared::define_primitives! {}
//! ```

use crate::{Primitive, Stored};

/// The name suffix of a kernel kind, as a literal: `kernel_suffix!(Stream)` is `"_stream"`.
///
/// The one place the suffixes are written. A macro, so that `kernels-gpu` can build an
/// entry point's name with `concat!` (`#[export_name]` needs a literal);
/// [`KernelKind::suffix`] gives the same strings at run time.
#[macro_export]
macro_rules! kernel_suffix {
    (Map) => {
        ""
    };
    (Skeleton) => {
        "_skeleton"
    };
    (Latency) => {
        "_latency"
    };
    (Throughput) => {
        "_throughput"
    };
    (Stream) => {
        "_stream"
    };
    (CountNonfinite) => {
        "_count_nonfinite"
    };
    (Hardware) => {
        "_hw"
    };
    (HardwareStream) => {
        "_hw_stream"
    };
    (StreamCount) => {
        "_stream_count"
    };
}

/// Defines [`KernelKind`] with the given variants, its [`KernelKind::ALL`] and its
/// [`KernelKind::suffix`] (from [`kernel_suffix!`], which must have an arm for each).
macro_rules! kernel_kinds {
    ($($(#[doc = $doc:literal])* $kind:ident,)*) => {
        /// What a kernel does with its variant's function. Each kind has a trait of the
        /// same name in this module, and the kernel the signature given here.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum KernelKind {
            $($(#[doc = $doc])* $kind,)*
        }

        impl KernelKind {
            /// Every kind.
            pub const ALL: &'static [KernelKind] = &[$(KernelKind::$kind),*];

            /// What follows the variant's name in the name of its kernel of this kind.
            #[inline]
            pub const fn suffix(self) -> &'static str {
                match self {
                    $(KernelKind::$kind => kernel_suffix!($kind),)*
                }
            }
        }
    };
}

kernel_kinds! {
    /// `(input: *const In, output: *mut Bits, n: u64)`: `output[i] = V(input[i])` for
    /// `i < n`, one element per thread per grid-stride step (conformance).
    Map,
    /// The same signature and loop as [`KernelKind::Map`] with no computation: the
    /// stored value is the input's bits cast to the output width (the SASS report
    /// subtracts it).
    Skeleton,
    /// `(seed: u64, iterations: u32, out: *mut u64)`, launched on one thread: a
    /// dependent chain of `iterations` steps; writes the cycles it took and its final
    /// value to `out[0]` and `out[1]`.
    Latency,
    /// `(seed: u64, iterations: u32, out: *mut u64)`: every thread runs four
    /// independent chains and writes their combined final value to `out[thread]`.
    Throughput,
    /// `(input: *const In, output: *mut Bits, n: u64)`: [`KernelKind::Map`], coalesced,
    /// for a variant whose input and stored output are [`StreamElement`]s (`u8`, `u16`,
    /// `u32`; [`Stream`]): per grid-stride step each lane loads
    /// [`STREAM_LANE_ELEMENTS`] consecutive inputs in one load of `4 · size_of::<In>()`
    /// bytes and stores their four results in one store of `4 · size_of::<Bits>()`
    /// bytes, the lanes of a warp on consecutive pieces, so that a warp's load covers
    /// 128, 256 or 512 contiguous bytes and its store as many for its width (UNORM8 →
    /// f32: 128 in, 512 out; f32 → binary16: 512 in, 256 out). A scalar pass
    /// ([`KernelKind::Map`]'s loop) does the last `n % 4` elements, or all of them if a
    /// pointer is misaligned for those accesses (bandwidth benchmark, GPU backend of
    /// `normalize`).
    Stream,
    /// `(input: *const In, n: u64, result: *mut u64)`: for a finiteness variant
    /// ([`CountNonfinite`]: `In` is `u8`, `u16`, `u32` or `u64`), adds the count of
    /// non-finite inputs to `result[0]` and lowers `result[1]` to the first one's index.
    /// Coalesced: per grid-stride step each lane loads one aligned 16-byte piece
    /// ([`count_lane_elements`] elements), the lanes of a warp on consecutive pieces
    /// (512 contiguous bytes per warp load); the elements before the first 16-byte
    /// boundary and after the last are done one per lane. Nothing is stored until the
    /// end: one pair of atomics per thread that found a non-finite value (bandwidth
    /// benchmark, GPU backend of `scan`).
    CountNonfinite,
    /// The [`KernelKind::Map`] signature, `output[i]` computed by the GPU's own
    /// conversion instruction for the variant's family ([`crate::hardware::Conversion`])
    /// instead of by the variant's function: what the software form is checked against
    /// on the GPU. Built into the PTX module of the oldest target that has the
    /// instruction ([`crate::hardware::Conversion::target`]).
    Hardware,
    /// The [`KernelKind::Stream`] signature and loop (one load of four inputs, one store
    /// of their four results per lane per step) with each result computed by the GPU's
    /// own conversion instruction, as in [`KernelKind::Hardware`], and built into the
    /// same module: the cheapest streaming form of a conversion the GPU has an
    /// instruction for (bandwidth benchmark). Equal to the `Hardware` kernel on every
    /// input, which the GPU three-way check compares.
    HardwareStream,
    /// `(input: *const In, output: *mut Bits, n: u64, result: *mut u64)`: two jobs in one
    /// pass, for kernels of one's own ([`StreamCount`]; the table builds none). The
    /// [`KernelKind::Stream`] loop (`output[i] = V(input[i])`, one load of four inputs and
    /// one store of their results per lane per step), and, as [`KernelKind::CountNonfinite`]
    /// does, adds to `result[0]` the number of elements that fail [`StreamCount::passes`]
    /// and lowers `result[1]` to the first one's index.
    StreamCount,
}

impl KernelKind {
    /// Whether the table's variants can have kernels of this kind (every kind but
    /// [`KernelKind::StreamCount`], which only kernel crates of one's own implement).
    #[inline]
    pub const fn in_table(self) -> bool {
        !matches!(self, KernelKind::StreamCount)
    }
}

/// The name of one kernel: its variant's name followed by its kind's suffix
/// (`Display` writes it, e.g. `unorm8_series_stream`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelName {
    /// The variant's name ([`Primitive::NAME`]).
    pub variant: &'static str,
    /// The kernel's kind.
    pub kind: KernelKind,
}

impl KernelName {
    /// The name of `P`'s kernel of kind `kind` (whether `P` has one or not).
    #[inline]
    pub const fn of<P: Primitive>(kind: KernelKind) -> KernelName {
        KernelName { variant: P::NAME, kind }
    }
}

impl core::fmt::Display for KernelName {
    #[inline]
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}{}", self.variant, self.kind.suffix())
    }
}

/// `P` has a [`KernelKind::Map`] kernel (every variant does).
///
/// # Safety
///
/// See [the module's `Safety` section](crate::kind#safety): implementing it vouches for the
/// kernel's name, parameters and bounds.
pub unsafe trait Map: Primitive {}

/// `P` has a [`KernelKind::Skeleton`] kernel (every variant does).
///
/// # Safety
///
/// See [the module's `Safety` section](crate::kind#safety): implementing it vouches for the
/// kernel's name, parameters and bounds.
pub unsafe trait Skeleton: Primitive {}

/// `P` has a [`KernelKind::Latency`] kernel (every variant does).
///
/// # Safety
///
/// See [the module's `Safety` section](crate::kind#safety): implementing it vouches for the
/// kernel's name, parameters and bounds.
pub unsafe trait Latency: Primitive {}

/// `P` has a [`KernelKind::Throughput`] kernel (every variant does).
///
/// # Safety
///
/// See [the module's `Safety` section](crate::kind#safety): implementing it vouches for the
/// kernel's name, parameters and bounds.
pub unsafe trait Throughput: Primitive {}

/// `P` has a [`KernelKind::Stream`] kernel, which only a function from a
/// [`StreamElement`] (`u8`, `u16`, `u32`) to a result stored as one (`f32`, an integer
/// code of 8 to 32 bits) can have.
///
/// # Safety
///
/// See [the module's `Safety` section](crate::kind#safety): implementing it vouches for the
/// kernel's name, parameters and bounds.
pub unsafe trait Stream: Primitive<In: StreamElement, Out: Stored<Bits: StreamElement>> {}

/// `P` has a [`KernelKind::CountNonfinite`] kernel, which only a function from a
/// [`CountElement`] (`u8`, `u16`, `u32`, `u64`) to `bool` (an is-finite) can have.
///
/// # Safety
///
/// See [the module's `Safety` section](crate::kind#safety): implementing it vouches for the
/// kernel's name, parameters and bounds.
pub unsafe trait CountNonfinite: Primitive<In: CountElement, Out = bool> {}

/// `P` has a [`KernelKind::StreamCount`] kernel: a [`Stream`]-shaped function whose
/// kernel also counts the elements that fail [`StreamCount::passes`] (for instance
/// "binary16 → f32, and how many were not finite", in one pass over memory).
///
/// No variant of the table has one; a kernel crate of one's own implements it for its
/// own primitive, with the kernel built from the same `apply` and `passes`
/// (`device_support::stream_count`), and the CPU twin from them too.
///
/// # Safety
///
/// See [the module's `Safety` section](crate::kind#safety): implementing it vouches for the
/// kernel's name, parameters (`(*const In, *mut Bits, u64, *mut u64)`) and bounds; the
/// kernel writes only `result[0]` and `result[1]` of its result buffer.
pub unsafe trait StreamCount: Primitive<In: StreamElement, Out: Stored<Bits: StreamElement>> {
    /// Whether element `input`, whose result is `output`, passes the kernel's check; the
    /// kernel counts the ones that do not.
    fn passes(input: Self::In, output: Self::Out) -> bool;
}

/// Inputs per lane per grid-stride step of a [`KernelKind::Stream`] kernel: one load
/// of four inputs, one store of their four results.
pub const STREAM_LANE_ELEMENTS: u64 = 4;

/// Bytes one lane loads per grid-stride step of a [`KernelKind::CountNonfinite`]
/// kernel.
pub const COUNT_LANE_BYTES: u64 = 16;

/// Inputs per lane per grid-stride step of a [`KernelKind::CountNonfinite`] kernel over
/// elements of `T`: `16 / size_of::<T>()`.
#[inline]
pub const fn count_lane_elements<T: CountElement>() -> u64 {
    COUNT_LANE_BYTES / size_of::<T>() as u64
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for u16 {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// An input or stored output element type of [`KernelKind::Stream`] kernels: four of
/// them are one aligned 4-, 8- or 16-byte access.
pub trait StreamElement: Copy + sealed::Sealed {}
impl StreamElement for u8 {}
impl StreamElement for u16 {}
impl StreamElement for u32 {}

/// An input element type of [`KernelKind::CountNonfinite`] kernels: a whole number of
/// them fills a 16-byte load.
pub trait CountElement: Copy + sealed::Sealed {}
impl CountElement for u8 {}
impl CountElement for u16 {}
impl CountElement for u32 {}
impl CountElement for u64 {}

/// `P` has a [`KernelKind::Hardware`] kernel: its family has a conversion instruction
/// ([`crate::hardware::Conversion::of`] is `Some`, which `kernels-gpu` asserts when it
/// builds the kernel).
///
/// # Safety
///
/// See [the module's `Safety` section](crate::kind#safety): implementing it vouches for the
/// kernel's name, parameters and bounds.
pub unsafe trait Hardware: Primitive {}

/// `P` has a [`KernelKind::HardwareStream`] kernel: it has a [`Hardware`] kernel, and
/// its input and stored result are [`StreamElement`]s, as for [`Stream`].
///
/// # Safety
///
/// See [the module's `Safety` section](crate::kind#safety): implementing it vouches for the
/// kernel's name, parameters and bounds.
pub unsafe trait HardwareStream:
    Hardware + Primitive<In: StreamElement, Out: Stored<Bits: StreamElement>>
{
}

/// A [`KernelKind`] as a type, for [`KindKernel`]: the markers of [`tag`].
pub trait KindTag {
    /// The kind.
    const KIND: KernelKind;
}

/// The declaration of `P`'s kernel of kind `K` (a marker of [`tag`]): a
/// [`DeclaredKernel`](crate::launch::DeclaredKernel) whose name is [`KernelName::of`]
/// and whose parameters are the kind's signature as [`KernelKind`] documents it, with
/// `In = P::In` and `Bits = Bits<P>`. It implements the trait only where `P`
/// implements the kind's trait of this module, so a launch through it stands on that
/// trait's promise; the host checks the parameter list against the PTX's before it
/// launches, as it does a kernel of one's own declared with [`kernel!`](crate::kernel).
pub struct KindKernel<P, K>(core::marker::PhantomData<fn() -> (P, K)>);

impl<P: Primitive, K: KindTag> KindKernel<P, K> {
    /// The kernel's name, joined at compile time.
    const JOINED: crate::launch::JoinedName = crate::launch::JoinedName::new(P::NAME, K::KIND.suffix());
}

/// Defines the markers of [`tag`] and each kind's declaration: the kind's trait bound and
/// its parameter tuple, the one place the host's side of each signature is written.
macro_rules! kind_declarations {
    ($($(#[doc = $doc:literal])* $kind:ident: $params:ty;)*) => {
        /// One marker type per [`KernelKind`], named like it, for [`KindKernel`].
        pub mod tag {
            $(
                $(#[doc = $doc])*
                pub struct $kind;
                impl super::KindTag for $kind {
                    const KIND: super::KernelKind = super::KernelKind::$kind;
                }
            )*
        }

        $(
            impl<P: $kind> crate::launch::DeclaredKernel for KindKernel<P, tag::$kind> {
                const NAME: &'static str = Self::JOINED.as_str();
                type Params = $params;
                const PARAMS: &'static [crate::launch::Param] =
                    <Self::Params as crate::launch::ParamList>::PARAMS;
            }
        )*
    };
}

/// The parameters of the element-wise kinds (`Map`, `Skeleton`, `Stream`, `Hardware`,
/// `HardwareStream`): `(input: *const I, output: *mut O, n: u64)`.
pub type Elementwise<I, O> = (*const I, *mut O, u64);

/// The parameters of the timing kinds (`Latency`, `Throughput`):
/// `(seed: u64, iterations: u32, out: *mut u64)`.
pub type Timing = (u64, u32, *mut u64);

kind_declarations! {
    /// [`KernelKind::Map`](crate::KernelKind::Map): [`Elementwise`](super::Elementwise).
    Map: Elementwise<P::In, crate::Bits<P>>;
    /// [`KernelKind::Skeleton`](crate::KernelKind::Skeleton): [`Elementwise`](super::Elementwise).
    Skeleton: Elementwise<P::In, crate::Bits<P>>;
    /// [`KernelKind::Latency`](crate::KernelKind::Latency): [`Timing`](super::Timing).
    Latency: Timing;
    /// [`KernelKind::Throughput`](crate::KernelKind::Throughput): [`Timing`](super::Timing).
    Throughput: Timing;
    /// [`KernelKind::Stream`](crate::KernelKind::Stream): [`Elementwise`](super::Elementwise).
    Stream: Elementwise<P::In, crate::Bits<P>>;
    /// [`KernelKind::CountNonfinite`](crate::KernelKind::CountNonfinite): `(input: *const In, n: u64, result: *mut u64)`.
    CountNonfinite: (*const P::In, u64, *mut u64);
    /// [`KernelKind::Hardware`](crate::KernelKind::Hardware): [`Elementwise`](super::Elementwise).
    Hardware: Elementwise<P::In, crate::Bits<P>>;
    /// [`KernelKind::HardwareStream`](crate::KernelKind::HardwareStream): [`Elementwise`](super::Elementwise).
    HardwareStream: Elementwise<P::In, crate::Bits<P>>;
    /// [`KernelKind::StreamCount`](crate::KernelKind::StreamCount): `(input: *const In, output: *mut Bits, n: u64, result: *mut u64)`.
    StreamCount: (*const P::In, *mut crate::Bits<P>, u64, *mut u64);
}

/// Whether `a` and `b` are the same string, in a `const` (for [`kind_kernel!`]'s
/// compile-time name check).
#[doc(hidden)]
pub const fn same_str(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The compile-time check of a kind's entry point against its declaration: `$decl`'s
/// parameter tuple is exactly `($($ty,)*)` and its name is `$name`. Used by
/// [`kind_kernel!`] and by `kernels-gpu`, whose entry points are named with `concat!`.
#[doc(hidden)]
#[macro_export]
macro_rules! __check_kind_entry {
    ($decl:ty, $name:expr, ($($ty:ty),*)) => {
        const _: () = {
            // Compiles only if the entry's parameter types are the declaration's tuple.
            let _same_types: fn(($($ty,)*)) -> <$decl as $crate::launch::DeclaredKernel>::Params = |params| params;
            assert!(
                $crate::kind::same_str(<$decl as $crate::launch::DeclaredKernel>::NAME, $name),
                "the entry point's name is not the one its kind's declaration gives (variant name, then the kind's suffix)"
            );
        };
    };
}

/// Writes the entry point of primitive `P`'s kernel of kind `Kind` (a kernel crate of
/// one's own, after its `unsafe impl shared::kind::Kind for P`), checked at compile time
/// against the kind's declaration, [`KindKernel`]`<P, tag::Kind>`, which the host
/// launches it by: the parameters must be exactly the kind's (with `In = P::In`, `Bits =
/// Bits<P>`), and the function's name must be `P::NAME` followed by the kind's suffix.
/// Either mismatch is a compile error, not a launch that fails, or worse.
///
/// As with [`kernel!`](crate::kernel), the function is `extern "ptx-kernel"` with
/// `#[unsafe(no_mangle)]` on nvptx64 and an ordinary `unsafe fn` elsewhere. It takes doc
/// comments and no other attribute, so an `#[unsafe(export_name = …)]` cannot give the
/// checked function another symbol.
///
/// ```
/// use shared::{Claim, Family, Primitive};
/// pub struct Widen;
/// impl Primitive for Widen {
///     type In = u16;
///     type Out = f32;
///     const NAME: &'static str = "widen_f16";
///     const FAMILY: Family = Family::NarrowToF32 { format: shared::Format::Binary16 };
///     const CLAIM: Claim = Claim::Exact;
///     const DESCRIPTION: &'static str = "binary16 -> f32";
///     const KINDS: &'static [shared::KernelKind] = &[shared::KernelKind::Map];
///     fn apply(x: u16) -> f32 {
///         f32::from_bits(shared::binary16::to_f32_bits(x))
///     }
/// }
/// // SAFETY: this crate's only `widen_f16` is the entry below, which takes the Map
/// // signature and touches only elements below `n`.
/// unsafe impl shared::kind::Map for Widen {}
///
/// shared::kind_kernel! {
///     Widen: Map;
///     /// `output[i]` = `input[i]` widened, for `i < n`.
///     ///
///     /// # Safety
///     /// `input` and `output` hold `n` elements.
///     pub unsafe fn widen_f16(input: *const u16, output: *mut u32, n: u64) {
///         for i in 0..n as usize {
///             // SAFETY: the function's contract.
///             unsafe { output.add(i).write(Widen::apply(input.add(i).read()).to_bits()) };
///         }
///     }
/// }
/// ```
///
/// A parameter list other than the kind's does not compile:
///
/// ```compile_fail,E0308
/// # use shared::{Claim, Family, Primitive};
/// # pub struct Widen;
/// # impl Primitive for Widen {
/// #     type In = u16;
/// #     type Out = f32;
/// #     const NAME: &'static str = "widen_f16";
/// #     const FAMILY: Family = Family::NarrowToF32 { format: shared::Format::Binary16 };
/// #     const CLAIM: Claim = Claim::Exact;
/// #     const DESCRIPTION: &'static str = "binary16 -> f32";
/// #     const KINDS: &'static [shared::KernelKind] = &[shared::KernelKind::Map];
/// #     fn apply(x: u16) -> f32 { f32::from_bits(shared::binary16::to_f32_bits(x)) }
/// # }
/// # // SAFETY: a doctest that does not compile.
/// # unsafe impl shared::kind::Map for Widen {}
/// shared::kind_kernel! {
///     Widen: Map;
///     /// The output as `f32` where the kind stores its bits, `u32`: refused.
///     pub unsafe fn widen_f16(input: *const u16, output: *mut f32, n: u64) {}
/// }
/// ```
///
/// Nor does a name other than the declaration's:
///
/// ```compile_fail,E0080
/// # use shared::{Claim, Family, Primitive};
/// # pub struct Widen;
/// # impl Primitive for Widen {
/// #     type In = u16;
/// #     type Out = f32;
/// #     const NAME: &'static str = "widen_f16";
/// #     const FAMILY: Family = Family::NarrowToF32 { format: shared::Format::Binary16 };
/// #     const CLAIM: Claim = Claim::Exact;
/// #     const DESCRIPTION: &'static str = "binary16 -> f32";
/// #     const KINDS: &'static [shared::KernelKind] = &[shared::KernelKind::Map, shared::KernelKind::Stream];
/// #     fn apply(x: u16) -> f32 { f32::from_bits(shared::binary16::to_f32_bits(x)) }
/// # }
/// # // SAFETY: a doctest that does not compile.
/// # unsafe impl shared::kind::Stream for Widen {}
/// shared::kind_kernel! {
///     Widen: Stream;
///     /// The Stream kernel must be `widen_f16_stream`.
///     pub unsafe fn widen_f16(input: *const u16, output: *mut u32, n: u64) {}
/// }
/// ```
#[macro_export]
macro_rules! kind_kernel {
    (
        $primitive:ty: $kind:ident;
        $(#[doc = $doc:expr])*
        $fn_vis:vis unsafe fn $name:ident($($param:ident: $ty:ty),* $(,)?) $body:block
    ) => {
        $crate::__check_kind_entry!(
            $crate::kind::KindKernel<$primitive, $crate::kind::tag::$kind>,
            stringify!($name),
            ($($ty),*)
        );

        $(#[doc = $doc])*
        #[cfg(target_arch = "nvptx64")]
        #[unsafe(no_mangle)]
        $fn_vis unsafe extern "ptx-kernel" fn $name($($param: $ty),*) $body

        $(#[doc = $doc])*
        #[cfg(not(target_arch = "nvptx64"))]
        $fn_vis unsafe fn $name($($param: $ty),*) $body
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::{DeclaredKernel, Param};
    use crate::variants::{f16_finite_exp_mask, f32_to_e4m3, unorm8_times3_int};

    /// Every marker of [`tag`] says its own kind, and the kinds are all there.
    #[test]
    fn each_tag_is_its_kind() {
        let tags = [
            tag::Map::KIND,
            tag::Skeleton::KIND,
            tag::Latency::KIND,
            tag::Throughput::KIND,
            tag::Stream::KIND,
            tag::CountNonfinite::KIND,
            tag::Hardware::KIND,
            tag::HardwareStream::KIND,
            tag::StreamCount::KIND,
        ];
        assert_eq!(tags, KernelKind::ALL);
    }

    fn name_and_params<K: DeclaredKernel>() -> (&'static str, &'static [Param]) {
        (K::NAME, K::PARAMS)
    }

    #[test]
    fn a_kind_declaration_is_named_and_typed_as_its_kind_says() {
        let (input, output) = (Param::ConstPtr { element_bytes: 1 }, Param::MutPtr { element_bytes: 4 });
        let (n, result) = (Param::Integer { bytes: 8 }, Param::MutPtr { element_bytes: 8 });
        type U = unorm8_times3_int;
        let stream = name_and_params::<KindKernel<U, tag::Stream>>();
        assert_eq!(stream, ("unorm8_times3_int_stream", &[input, output, n][..]));
        assert_eq!(name_and_params::<KindKernel<U, tag::Map>>(), ("unorm8_times3_int", &[input, output, n][..]));
        let timing = [Param::Integer { bytes: 8 }, Param::Integer { bytes: 4 }, result];
        assert_eq!(name_and_params::<KindKernel<U, tag::Throughput>>(), ("unorm8_times3_int_throughput", &timing[..]));
        let count = name_and_params::<KindKernel<f16_finite_exp_mask, tag::CountNonfinite>>();
        assert_eq!(
            count,
            ("f16_finite_exp_mask_count_nonfinite", &[Param::ConstPtr { element_bytes: 2 }, n, result][..])
        );
        let hardware = name_and_params::<KindKernel<f32_to_e4m3, tag::Hardware>>();
        let narrow = [Param::ConstPtr { element_bytes: 4 }, Param::MutPtr { element_bytes: 1 }, n];
        assert_eq!(hardware, ("f32_to_e4m3_hw", &narrow[..]));
        // The same name as `KernelName`'s `Display`: the variant's, then the kind's suffix.
        let name = KernelName::of::<f32_to_e4m3>(KernelKind::Hardware);
        let joined = <KindKernel<f32_to_e4m3, tag::Hardware>>::NAME;
        assert_eq!(joined.strip_prefix(name.variant).and_then(|rest| rest.strip_suffix(name.kind.suffix())), Some(""));
    }
}
