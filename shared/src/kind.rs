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
//! `P: kind::Wide` is a proof that `P`'s `Wide` kernel exists and takes what its
//! signature says; an entry that lists a kind its types cannot have does not compile.

use crate::Primitive;

/// The name suffix of a kernel kind, as a literal: `kernel_suffix!(Wide)` is `"_wide"`.
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
    (Wide) => {
        "_wide"
    };
    (CountNonfinite) => {
        "_count_nonfinite"
    };
    (Hardware) => {
        "_hw"
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
    /// `(input: *const u8, output: *mut u32, n: u64)`: [`KernelKind::Map`] for a UNORM8
    /// → f32 variant, 16 input bytes per thread per step (bandwidth benchmark).
    Wide,
    /// `(input: *const u16, n: u64, result: *mut u64)`: for a binary16 finiteness
    /// variant, adds the count of non-finite inputs to `result[0]` and lowers
    /// `result[1]` to the first one's index; 16 bytes per thread per step.
    CountNonfinite,
    /// The [`KernelKind::Map`] signature, `output[i]` computed by the GPU's own
    /// conversion instruction for the variant's family ([`crate::hardware::Instruction`])
    /// instead of by the variant's function: what the software form is checked against
    /// on the GPU. Built into the PTX module of the oldest target that has the
    /// instruction ([`crate::hardware::Instruction::target`]).
    Hardware,
}

/// The name of one kernel: its variant's name followed by its kind's suffix
/// (`Display` writes it, e.g. `unorm8_series_wide`).
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
pub trait Map: Primitive {}

/// `P` has a [`KernelKind::Skeleton`] kernel (every variant does).
pub trait Skeleton: Primitive {}

/// `P` has a [`KernelKind::Latency`] kernel (every variant does).
pub trait Latency: Primitive {}

/// `P` has a [`KernelKind::Throughput`] kernel (every variant does).
pub trait Throughput: Primitive {}

/// `P` has a [`KernelKind::Wide`] kernel, which only a `u8` → `f32` function can have.
pub trait Wide: Primitive<In = u8, Out = f32> {}

/// `P` has a [`KernelKind::CountNonfinite`] kernel, which only a `u16` → `bool`
/// (binary16 is-finite) function can have.
pub trait CountNonfinite: Primitive<In = u16, Out = bool> {}

/// `P` has a [`KernelKind::Hardware`] kernel: its family has a conversion instruction
/// ([`crate::hardware::Instruction::of`] is `Some`, which `kernels-gpu` asserts when it
/// builds the kernel).
pub trait Hardware: Primitive {}
