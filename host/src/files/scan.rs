//! Counting NaN, +inf and -inf in raw floating-point encodings, on the CPU: in buffers,
//! or in bytes read on demand ([`Source`]).
//!
//! One generic loop ([`count`]) serves every format; [`float_formats!`] is the table that
//! binds each [`FloatFormat`] to the `shared` module whose exact predicates classify it.
//!
//! Speed comes from the loop's shape, not from intrinsics: elements are tested in
//! groups of [`GROUP`] with a branch-free OR of `!is_finite` (which LLVM turns into
//! vector compares), and only a group that holds a non-finite value is counted in detail
//! and searched for its first index. No per-element branch, no early exit.

use crate::files::message::io_message;
use rayon::prelude::*;
use std::cell::RefCell;
use std::ops::Range;

/// Bytes per parallel work item: a multiple of every element size, large enough that
/// scheduling costs nothing, small enough that all cores get work on small tensors.
pub const BLOCK_BYTES: usize = 1 << 20;
/// Elements tested together before the one branch that decides whether the group
/// needs counting.
const GROUP: usize = 256;

/// Byte order of stored elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Endian {
    /// Least significant byte first (safetensors, `<` in npy).
    Little,
    /// Most significant byte first (`>` in npy).
    Big,
}

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
    pub fn shifted(self, first_index: u64) -> Counts {
        Counts { first_non_finite: self.first_non_finite.map(|i| i + first_index), ..self }
    }

    /// The counts of two disjoint pieces of one buffer, whose indices are already
    /// absolute: sums, and the smaller first index. Associative and commutative.
    pub fn merged(self, other: Counts) -> Counts {
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

/// A raw encoding of `N` bytes, classified by one `shared` module's exact predicates.
trait Encoding<const N: usize> {
    type Bits: Copy;
    fn from_le(bytes: [u8; N]) -> Self::Bits;
    fn from_be(bytes: [u8; N]) -> Self::Bits;
    fn is_finite(bits: Self::Bits) -> bool;
    fn is_nan(bits: Self::Bits) -> bool;
    fn is_infinite(bits: Self::Bits) -> bool;
    fn is_negative(bits: Self::Bits) -> bool;
}

/// The table: variant = serialized name: storage type, `shared` module.
macro_rules! float_formats {
    ($($(#[$doc:meta])* $format:ident = $name:literal: $bits:ty, $($module:ident)::+;)*) => {
        /// A floating-point format `scan` checks.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
        pub enum FloatFormat {
            $($(#[$doc])* #[serde(rename = $name)] $format,)*
        }

        /// One marker type per [`FloatFormat`], implementing [`Encoding`].
        mod encoding {
            $(pub struct $format;)*
        }

        $(impl Encoding<{ size_of::<$bits>() }> for encoding::$format {
            type Bits = $bits;
            #[inline(always)]
            fn from_le(bytes: [u8; size_of::<$bits>()]) -> $bits {
                <$bits>::from_le_bytes(bytes)
            }
            #[inline(always)]
            fn from_be(bytes: [u8; size_of::<$bits>()]) -> $bits {
                <$bits>::from_be_bytes(bytes)
            }
            #[inline(always)]
            fn is_finite(bits: $bits) -> bool {
                $($module)::+::is_finite(bits)
            }
            #[inline(always)]
            fn is_nan(bits: $bits) -> bool {
                $($module)::+::is_nan(bits)
            }
            #[inline(always)]
            fn is_infinite(bits: $bits) -> bool {
                $($module)::+::is_infinite(bits)
            }
            #[inline(always)]
            fn is_negative(bits: $bits) -> bool {
                bits & $($module)::+::SIGN_MASK != 0
            }
        })*

        impl FloatFormat {
            /// Every format, in table order.
            pub const ALL: &[FloatFormat] = &[$(FloatFormat::$format),*];

            /// Short name (`binary16`, `fp8_e4m3`, ...), as in JSON reports.
            pub const fn name(self) -> &'static str {
                match self {
                    $(FloatFormat::$format => $name,)*
                }
            }

            /// Bytes per element.
            pub const fn bytes(self) -> usize {
                match self {
                    $(FloatFormat::$format => size_of::<$bits>(),)*
                }
            }

            /// Counts the non-finite elements of `data` on the calling thread; indices
            /// start at `first_index`. A trailing partial element is ignored.
            pub fn count(self, endian: Endian, data: &[u8], first_index: u64) -> Counts {
                match (self, endian) {
                    $(
                        (FloatFormat::$format, Endian::Little) => {
                            count::<{ size_of::<$bits>() }, encoding::$format, false>(data, first_index)
                        }
                        (FloatFormat::$format, Endian::Big) => {
                            count::<{ size_of::<$bits>() }, encoding::$format, true>(data, first_index)
                        }
                    )*
                }
            }
        }
    };
}

float_formats! {
    /// IEEE 754 binary16.
    Binary16 = "binary16": u16, shared::binary16;
    /// bfloat16.
    Bfloat16 = "bfloat16": u16, shared::bfloat16;
    /// IEEE 754 binary32.
    Binary32 = "binary32": u32, shared::binary32;
    /// IEEE 754 binary64.
    Binary64 = "binary64": u64, shared::binary64;
    /// OCP FP8 E4M3 (no infinities; NaN only 0x7F/0xFF).
    Fp8E4m3 = "fp8_e4m3": u8, shared::fp8::e4m3;
    /// OCP FP8 E5M2.
    Fp8E5m2 = "fp8_e5m2": u8, shared::fp8::e5m2;
    /// FP8 E4M3FNUZ (no infinities; NaN only 0x80).
    Fp8E4m3Fnuz = "fp8_e4m3fnuz": u8, shared::fp8::e4m3fnuz;
    /// FP8 E5M2FNUZ (no infinities; NaN only 0x80).
    Fp8E5m2Fnuz = "fp8_e5m2fnuz": u8, shared::fp8::e5m2fnuz;
}

#[inline(always)]
fn load<const N: usize, E: Encoding<N>, const BIG: bool>(bytes: [u8; N]) -> E::Bits {
    if BIG { E::from_be(bytes) } else { E::from_le(bytes) }
}

/// The scan loop, written once for every format and byte order.
fn count<const N: usize, E: Encoding<N>, const BIG: bool>(data: &[u8], first_index: u64) -> Counts {
    let (elements, _partial) = data.as_chunks::<N>();
    let mut counts = Counts::default();
    for (group_no, group) in elements.chunks(GROUP).enumerate() {
        let any_non_finite = group.iter().fold(0u8, |any, &b| any | u8::from(!E::is_finite(load::<N, E, BIG>(b))));
        if any_non_finite != 0 {
            counts = counts.merged(count_group::<N, E, BIG>(group, first_index + (group_no * GROUP) as u64));
        }
    }
    counts
}

/// Detailed, branch-free counts of one group known to hold a non-finite value.
#[cold]
fn count_group<const N: usize, E: Encoding<N>, const BIG: bool>(group: &[[u8; N]], first_index: u64) -> Counts {
    let mut counts = Counts::default();
    for &b in group {
        let bits = load::<N, E, BIG>(b);
        let (infinite, negative) = (E::is_infinite(bits), E::is_negative(bits));
        counts.nan += u64::from(E::is_nan(bits));
        counts.pos_inf += u64::from(infinite & !negative);
        counts.neg_inf += u64::from(infinite & negative);
    }
    counts.first_non_finite =
        group.iter().position(|&b| !E::is_finite(load::<N, E, BIG>(b))).map(|i| first_index + i as u64);
    counts
}

/// `read(offset, buf)`: fills `buf` with the bytes from `offset` on, or says why it
/// cannot.
pub type ReadAt<'a> = dyn Fn(u64, &mut [u8]) -> Result<(), SourceReadError> + Sync + 'a;

/// A read of a [`Source`] (a positioned read of a file) that failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum SourceReadError {
    /// The read went past the end: the file is shorter than when its header was read
    /// (another program truncated or rewrote it).
    Shrank {
        /// The file's length now, or why it could not be had.
        now: std::io::Result<u64>,
        /// The length the read at hand needed.
        needed: u64,
    },
    /// The read failed.
    Failed(std::io::Error),
}

impl std::fmt::Display for SourceReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceReadError::Shrank { now, needed } => {
                let now = now.as_ref().map_or_else(io_message, |len| format!("{len} bytes"));
                write!(f, "file shrank while being read (now {now}, {needed} needed): truncated by another program?")
            }
            SourceReadError::Failed(error) => write!(f, "read failed: {}", io_message(error)),
        }
    }
}

impl std::error::Error for SourceReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SourceReadError::Shrank { now: Err(error), .. } | SourceReadError::Failed(error) => Some(error),
            SourceReadError::Shrank { now: Ok(_), .. } => None,
        }
    }
}

/// The bytes to scan: in memory, or read on demand (a tensor in a file).
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// Bytes in memory.
    Bytes(&'a [u8]),
    /// `len` bytes; `read(offset, buf)` fills `buf` with those from `offset` on, or says
    /// why it cannot (the file shrank, a read failed).
    Read {
        /// Number of bytes.
        len: usize,
        /// Fills a buffer from an offset.
        read: &'a ReadAt<'a>,
    },
}

impl<'a> Source<'a> {
    /// Number of bytes.
    pub fn len(&self) -> usize {
        match *self {
            Source::Bytes(bytes) => bytes.len(),
            Source::Read { len, .. } => len,
        }
    }

    /// `true` for no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes `range` (inside `0..len()`): borrowed from memory, or read into `buffer`.
    pub fn get<'b>(&self, range: Range<usize>, buffer: &'b mut Vec<u8>) -> Result<&'b [u8], SourceReadError>
    where
        'a: 'b,
    {
        match *self {
            Source::Bytes(bytes) => Ok(&bytes[range]),
            Source::Read { .. } => {
                buffer.resize(range.len(), 0);
                self.read_into(range.start, buffer)?;
                Ok(buffer)
            }
        }
    }

    /// Fills `buf` with the bytes from `offset` on (a range inside `0..len()`): copied
    /// from memory, or read.
    pub fn read_into(&self, offset: usize, buf: &mut [u8]) -> Result<(), SourceReadError> {
        match *self {
            Source::Bytes(bytes) => {
                buf.copy_from_slice(&bytes[offset..offset + buf.len()]);
                Ok(())
            }
            Source::Read { read, .. } => read(offset as u64, buf),
        }
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
/// Gives exactly the result of `format.count(endian, bytes, 0)` on the source's bytes,
/// or the first read error met.
pub fn count_parallel(
    format: FloatFormat,
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
                let counts = format.count(endian, block, block_no as u64 * elements_per_block);
                progress(block.len() as u64);
                Ok(counts)
            })
        })
        .try_reduce(Counts::default, |a, b| Ok(a.merged(b)))
}
