//! Counting NaN, +inf and -inf in raw floating-point encodings, on the CPU: in buffers,
//! or in bytes read on demand ([`Source`]).
//!
//! One generic loop (`count`) serves every [`shared::Format`]. What classifies an
//! element comes from the variant table ([`shared::for_each_variant!`]), not from a list
//! of its own: the format's count variant ([`with_count_variant`], the exact
//! `IsFinite(format)` whose `CountNonfinite` kernel the GPU backend runs) decides
//! finiteness, and its `IsNan` and `IsInfinite` variants tell NaNs from infinities in the
//! rare groups that hold one.
//!
//! Speed comes from the loop's shape, not from intrinsics: elements are tested in
//! groups of `GROUP` with a branch-free OR of `!is_finite` (which LLVM turns into
//! vector compares, compiled for the CPU level chosen at run time by
//! [`bitexact_cpu::with_level`]), and only a group that holds a non-finite value is counted
//! in detail and searched for its first index. No per-element branch, no early exit.

use crate::source::{Source, SourceReadError};

use bitexact_gpu::BufferElement;
use bitexact_support::element::{Element, Endian};
use rayon::prelude::*;
use shared::{Claim, Family, Format, Primitive, Stored, kind};
use std::cell::RefCell;
use std::marker::PhantomData;

/// Bytes per parallel work item: a multiple of every element size, large enough that
/// scheduling costs nothing, small enough that all cores get work on small tensors. A
/// scan's heap holds at most one such block per thread of the pool.
pub const BLOCK_BYTES: usize = 1 << 20;
/// Elements tested together before the one branch that decides whether the group
/// needs counting.
const GROUP: usize = 256;

/// Non-finite values found in a buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// NaNs, any sign and payload.
    pub nan: u64,
    /// +infinity.
    pub pos_inf: u64,
    /// -infinity.
    pub neg_inf: u64,
    /// Flat index (in storage order) of the first NaN or infinity, if any.
    pub first_non_finite: Option<u64>,
}

impl Counts {
    /// NaNs plus infinities.
    pub fn non_finite(&self) -> u64 {
        self.nan + self.pos_inf + self.neg_inf
    }

    /// The counts of a piece that starts at index `first_index` of a larger buffer, with
    /// its first index made absolute.
    pub(crate) fn shifted(self, first_index: u64) -> Counts {
        Counts { first_non_finite: self.first_non_finite.map(|i| i + first_index), ..self }
    }

    /// The counts of two disjoint pieces of one buffer, whose indices are already
    /// absolute: sums, and the smaller first index. Associative and commutative.
    pub(crate) fn merged(self, other: Counts) -> Counts {
        let first_non_finite = match (self.first_non_finite, other.first_non_finite) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Counts {
            nan: self.nan + other.nan,
            pos_inf: self.pos_inf + other.pos_inf,
            neg_inf: self.neg_inf + other.neg_inf,
            first_non_finite,
        }
    }
}

/// A computation over the variant whose [`CountNonfinite`](shared::KernelKind::CountNonfinite)
/// kernel and CPU function count a format's non-finite values: see [`with_count_variant`].
pub trait WithCountVariant {
    /// What it gives.
    type Output;
    /// Runs it with the variant `P`.
    fn call<P>(self) -> Self::Output
    where
        P: kind::CountNonfinite + Sync,
        P::In: BufferElement + Raw;
}

/// Whether `P` is the variant `scan` counts `format` with: an [`Claim::Exact`]
/// `IsFinite(format)` (the first in table order that has a
/// [`CountNonfinite`](shared::KernelKind::CountNonfinite) kernel is taken).
const fn counts_format<P: Primitive>(format: Format) -> bool {
    matches!(P::FAMILY, Family::IsFinite(f) if f as u8 == format as u8) && matches!(P::CLAIM, Claim::Exact)
}

/// Whether `P` is of `family`, an `IsNan` or `IsInfinite` family (the cold path's
/// classifiers); `false` for any other.
const fn classifies<P: Primitive>(family: Family) -> bool {
    match (P::FAMILY, family) {
        (Family::IsNan(a), Family::IsNan(b)) | (Family::IsInfinite(a), Family::IsInfinite(b)) => a as u8 == b as u8,
        _ => false,
    }
}

/// `$then` for a [`CountNonfinite`](shared::KernelKind::CountNonfinite) kind, nothing for
/// any other: only variants with that kernel can count.
macro_rules! if_count_kind {
    (CountNonfinite, $($then:tt)*) => { $($then)* };
    ($other:ident, $($then:tt)*) => {};
}

/// Callback for [`shared::for_each_variant!`]: the lookups of [`with_count_variant`],
/// [`count_variant_name`], [`classifier`] and [`has_classifier`], one arm per entry, in
/// table order.
macro_rules! scan_lookups {
    ($({ $name:ident, $family:expr, $in:ty => $out:ty, $f:path, $claim:ident, [$($kind:ident),*], $desc:literal })*) => {
        /// `with.call::<P>()` for the variant `P` that counts `format`'s non-finite
        /// values, on the CPU (its function, `count`) and on the GPU (its
        /// [`CountNonfinite`](shared::KernelKind::CountNonfinite) kernel): the first
        /// exact `IsFinite(format)` variant of the table with that kernel.
        pub fn with_count_variant<W: WithCountVariant>(format: Format, with: W) -> W::Output {
            $($(if_count_kind!($kind, if counts_format::<shared::variants::$name>(format) {
                return with.call::<shared::variants::$name>();
            });)*)*
            unreachable!("every format has a count variant: checked at compile time (EVERY_FORMAT_COUNTS)")
        }

        /// The name of the variant [`with_count_variant`] runs for `format`, if the table
        /// has one.
        pub const fn count_variant_name(format: Format) -> Option<&'static str> {
            $($(if_count_kind!($kind, if counts_format::<shared::variants::$name>(format) {
                return Some(<shared::variants::$name as Primitive>::NAME);
            });)*)*
            None
        }

        /// The cold path's counter for the single-format predicate `family` (`IsNan`,
        /// `IsInfinite`), from the table.
        fn classifier(family: Family) -> Option<Classifier> {
            $(if classifies::<shared::variants::$name>(family) {
                return Some(count_where::<shared::variants::$name>);
            })*
            None
        }

        /// Whether [`classifier`] finds one for `family`.
        const fn has_classifier(family: Family) -> bool {
            $(if classifies::<shared::variants::$name>(family) {
                return true;
            })*
            false
        }
    };
}
shared::for_each_variant!(scan_lookups);

/// Every format has a count variant and both classifiers, so neither
/// [`with_count_variant`] nor [`classifiers`] can fail.
const EVERY_FORMAT_COUNTS: () = {
    let mut i = 0;
    while i < Format::ALL.len() {
        let format = Format::ALL[i];
        assert!(
            count_variant_name(format).is_some(),
            "a format has no exact IsFinite variant with a CountNonfinite kernel"
        );
        assert!(has_classifier(Family::IsNan(format)), "a format has no IsNan variant");
        assert!(has_classifier(Family::IsInfinite(format)), "a format has no IsInfinite variant");
        i += 1;
    }
};
const _: () = EVERY_FORMAT_COUNTS;

/// Counts, among the elements of `group` (whole elements of `P::In`, stored in the
/// byte order `big` says), those `P` holds for: (all of them, those with the sign bit
/// set).
type Classifier = fn(group: &[u8], big: bool) -> (u64, u64);

/// [`Classifier`] of `P` (a predicate on one encoding).
fn count_where<P>(group: &[u8], big: bool) -> (u64, u64)
where
    P: Primitive,
    P::In: Raw,
    <P::Out as Stored>::Bits: Element,
{
    let elements: &[<P::In as Raw>::Bytes] = bytemuck::cast_slice(group);
    if big { count_where_in::<P, true>(elements) } else { count_where_in::<P, false>(elements) }
}

/// [`count_where`] in one byte order.
#[inline(always)]
fn count_where_in<P, const BIG: bool>(elements: &[<P::In as Raw>::Bytes]) -> (u64, u64)
where
    P: Primitive,
    P::In: Raw,
    <P::Out as Stored>::Bits: Element,
{
    let sign_shift = <P::In as Element>::BITS - 1;
    elements.iter().fold((0, 0), |(all, negative), &b| {
        let bits = load::<P::In, BIG>(b);
        let holds = u64::from(P::apply(bits).to_stored().to_u64() != 0);
        (all + holds, negative + (holds & (bits.to_u64() >> sign_shift)))
    })
}

/// The two cold-path counters of `format`: its `IsNan` and `IsInfinite` variants.
fn classifiers(format: Format) -> (Classifier, Classifier) {
    let of = |family| classifier(family).unwrap_or_else(|| unreachable!("{family}: checked by EVERY_FORMAT_COUNTS"));
    (of(Family::IsNan(format)), of(Family::IsInfinite(format)))
}

/// Counts the non-finite elements of `data` (whole elements of `format`, stored in
/// `endian` order) on the calling thread; indices start at `first_index`. A trailing
/// partial element is ignored. `first_index` plus the number of elements must fit in a
/// `u64` (the indices of data in memory or in a file always do).
///
/// ```
/// # mod bitexact { pub use bitexact_files as files; pub use bitexact_support as support; }
/// use bitexact::files::scan::count_slice;
/// use bitexact::support::element::Endian;
/// let data: Vec<u8> = [1.0f32, f32::NAN, f32::NEG_INFINITY].iter().flat_map(|v| v.to_le_bytes()).collect();
/// let counts = count_slice(shared::Format::Binary32, Endian::Little, &data, 0);
/// assert_eq!(counts.non_finite(), 2);
/// ```
pub fn count_slice(format: Format, endian: Endian, data: &[u8], first_index: u64) -> Counts {
    with_count_variant(format, CountSlice { format, endian, data, first_index })
}

/// [`count_slice`] with the format's count variant.
struct CountSlice<'a> {
    format: Format,
    endian: Endian,
    data: &'a [u8],
    first_index: u64,
}

impl WithCountVariant for CountSlice<'_> {
    type Output = Counts;

    fn call<P>(self) -> Counts
    where
        P: kind::CountNonfinite + Sync,
        P::In: BufferElement + Raw,
    {
        let classifiers = classifiers(self.format);
        let level = bitexact_cpu::level();
        match self.endian {
            Endian::Little => bitexact_cpu::with_level(
                level,
                CountLoop::<P, false>(self.data, self.first_index, classifiers, PhantomData),
            ),
            Endian::Big => bitexact_cpu::with_level(
                level,
                CountLoop::<P, true>(self.data, self.first_index, classifiers, PhantomData),
            ),
        }
    }
}

/// [`count`] as a [`bitexact_cpu::LevelLoop`]: compiled for each CPU level.
struct CountLoop<'a, P, const BIG: bool>(&'a [u8], u64, (Classifier, Classifier), PhantomData<P>);

impl<P, const BIG: bool> bitexact_cpu::LevelLoop for CountLoop<'_, P, BIG>
where
    P: kind::CountNonfinite,
    P::In: Raw,
{
    type Output = Counts;

    #[inline(always)]
    fn run(self) -> Counts {
        count::<P, BIG>(self.0, self.1, self.2)
    }
}

/// An element type as raw bytes: its bytes as an array (alignment 1, so that any byte
/// buffer is a slice of them), read in either byte order.
pub trait Raw: Element {
    /// `[u8; size_of::<Self>()]`.
    type Bytes: bytemuck::Pod;
    /// The element stored least significant byte first.
    fn from_le(bytes: Self::Bytes) -> Self;
    /// The element stored most significant byte first.
    fn from_be(bytes: Self::Bytes) -> Self;
}

macro_rules! raw {
    ($($t:ty)*) => {$(
        impl Raw for $t {
            type Bytes = [u8; size_of::<$t>()];
            #[inline(always)]
            fn from_le(bytes: Self::Bytes) -> $t {
                <$t>::from_le_bytes(bytes)
            }
            #[inline(always)]
            fn from_be(bytes: Self::Bytes) -> $t {
                <$t>::from_be_bytes(bytes)
            }
        }
    )*};
}
raw!(u8 u16 u32 u64);

/// An element of `T` from its bytes, in the byte order `BIG` says.
#[inline(always)]
fn load<T: Raw, const BIG: bool>(bytes: T::Bytes) -> T {
    if BIG { T::from_be(bytes) } else { T::from_le(bytes) }
}

/// The scan loop, written once for every format and byte order: `P` is the format's
/// count variant (an is-finite), run on every element. Inlined into the level's
/// function of [`bitexact_cpu::with_level`] (as [`CountLoop`]), so that it is compiled
/// for that level.
#[inline(always)]
fn count<P, const BIG: bool>(data: &[u8], first_index: u64, classifiers: (Classifier, Classifier)) -> Counts
where
    P: kind::CountNonfinite,
    P::In: Raw,
{
    let whole = data.len() / size_of::<P::In>() * size_of::<P::In>();
    let elements: &[<P::In as Raw>::Bytes] = bytemuck::cast_slice(&data[..whole]);
    let mut counts = Counts::default();
    for (group_no, group) in elements.chunks(GROUP).enumerate() {
        let any_non_finite = group.iter().fold(0u8, |any, &b| any | u8::from(!P::apply(load::<P::In, BIG>(b))));
        if any_non_finite != 0 {
            counts = counts.merged(count_group::<P, BIG>(group, first_index + (group_no * GROUP) as u64, classifiers));
        }
    }
    counts
}

/// Counts of one group known to hold a non-finite value: NaNs and infinities by the
/// format's `IsNan` and `IsInfinite` variants, the first index by its count variant `P`.
#[cold]
fn count_group<P, const BIG: bool>(
    group: &[<P::In as Raw>::Bytes],
    first_index: u64,
    (nan, infinite): (Classifier, Classifier),
) -> Counts
where
    P: kind::CountNonfinite,
    P::In: Raw,
{
    let bytes: &[u8] = bytemuck::cast_slice(group);
    let (infinities, negative) = infinite(bytes, BIG);
    Counts {
        nan: nan(bytes, BIG).0,
        pos_inf: infinities - negative,
        neg_inf: negative,
        first_non_finite: group.iter().position(|&b| !P::apply(load::<P::In, BIG>(b))).map(|i| first_index + i as u64),
    }
}

thread_local! {
    /// Each worker's block buffer for [`Source::Read`]: a block is read and counted by the
    /// same thread while it is in that core's cache, one buffer per thread in all.
    static BLOCK_BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Counts the non-finite elements of `source` on all cores of the current rayon pool,
/// in blocks of [`BLOCK_BYTES`] (each read, if it must be, by the thread that counts it),
/// calling `progress` with the bytes of each finished block.
///
/// Gives exactly the result of [`count_slice`]`(format, endian, bytes, 0)` on the
/// source's bytes, or the first read error met.
pub fn count_parallel(
    format: Format,
    endian: Endian,
    source: Source<'_>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Counts, SourceReadError> {
    let elements_per_block = (BLOCK_BYTES / format.bytes()) as u64;
    let len = source.len();
    (0..len.div_ceil(BLOCK_BYTES))
        .into_par_iter()
        .map(|block_no| {
            let start = block_no * BLOCK_BYTES;
            BLOCK_BUFFER.with_borrow_mut(|buffer| {
                let block = source.get(start..(start + BLOCK_BYTES).min(len), buffer)?;
                let counts = count_slice(format, endian, block, block_no as u64 * elements_per_block);
                progress(block.len() as u64);
                Ok(counts)
            })
        })
        .try_reduce(Counts::default, |a, b| Ok(a.merged(b)))
}
