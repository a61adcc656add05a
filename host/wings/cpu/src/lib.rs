//! The CPU's instruction-set level, chosen at run time, and the CPU loops compiled for
//! each level. The API is the level ([`Level`], [`level`], [`choose`]), the f32 ↔
//! binary16 / bfloat16 / FP8 slice conversions of [`convert`], and the scaled FP8, MX and
//! NVFP4 loops of [`fp8_scale`] (per tensor, per channel, per block), which `cast` runs.
//! The other loops are the wings' own plumbing, `#[doc(hidden)]`: `map_bits` (a table
//! variant over a slice), `with_level` (any loop, such as `scan`'s count, a `LevelLoop`)
//! and `normalize`'s UNORM conversions in the form fastest at each level (`unorm`).
//!
//! The binary is built for the baseline target (x86-64 with SSE2 only) and runs
//! everywhere. At the first call, [`level`] takes the best [`Level`] the CPU has
//! ([`Level::detect`], by `is_x86_feature_detected!`), or the lower one the environment
//! variable [`LEVEL_VARIABLE`] (`BITEXACT_CPU_LEVEL=portable`) or the command line's
//! `--cpu-level` ([`choose`]) asks for, so that one machine can test every level it has.
//! A level the CPU lacks is refused ([`LevelError`]), never run.
//!
//! # How a loop is compiled for a level
//!
//! Each level has one function with `#[target_feature(enable = ...)]` that runs a
//! `LevelLoop` (`with_level`); its `#[inline(always)]` body, inlined into it, is compiled with that level's
//! instructions, so the same `shared` code that the GPU runs, branch-free and over a
//! slice, is vectorised by LLVM for AVX2 or AVX-512, and `core::f32::math::mul_add`
//! becomes one `vfmadd` instead of a call per element into compiler_builtins' `fmaf`
//! (which it is on the baseline target, where the FMA schemes of UNORM16 cost about 2 ns
//! per element).
//! Where the CPU has a conversion instruction that is proven on every input
//! (`host/wings/cpu/src/tests/cpu_levels.rs`), [`convert`] uses it through `std::arch`.
//!
//! We use `#[target_feature]` and `std::arch` rather than a crate such as `multiversion`
//! or `pulp`: the work is already written once, as scalar `shared` functions that
//! vectorise well, so all a crate would add is the dispatch, which is the dozen lines of
//! `with_level`; and `pulp` would have us rewrite the conversions in its SIMD types,
//! which the GPU could not share. The conversion instructions (`vcvtps2ph`,
//! `vcvtneps2bf16`) need `std::arch` in any case. The one `unsafe` is the call of a
//! `#[target_feature]` function, made only for a level [`Level::detect`] found.
//!
//! Owns: the level, its choice and the per-level loops. Uses: nothing else of `host`
//! (the element types come from `shared`).
#![deny(unsafe_code)]

pub mod convert;
pub mod fp8_scale;
#[doc(hidden)]
pub mod unorm;
#[cfg(target_arch = "x86_64")]
mod x86;

use shared::{Primitive, Stored};
use std::sync::atomic::{AtomicU8, Ordering};

/// The environment variable that lowers the level: `portable`, `avx2` or `avx512`.
pub const LEVEL_VARIABLE: &str = "BITEXACT_CPU_LEVEL";

/// An instruction-set level the CPU loops are compiled for, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// The baseline target's instructions (SSE2 on x86-64): runs on every CPU.
    Portable,
    /// x86-64 with AVX2, FMA and F16C (Haswell, Zen and later).
    Avx2,
    /// x86-64 with AVX-512 F, BW and VL on top of [`Level::Avx2`] (Skylake-X, Zen 4 and
    /// later); AVX512-BF16's `vcvtneps2bf16` where the CPU has it.
    Avx512,
}

/// Why a level cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LevelError {
    /// The name is not a level.
    #[error("{from}: {name:?} is not a CPU level (portable, avx2, avx512)")]
    Unknown {
        /// Where it came from: [`LEVEL_VARIABLE`] or `--cpu-level`.
        from: &'static str,
        /// The name given.
        name: String,
    },
    /// The CPU lacks a feature of the level.
    #[error("{from}: this CPU cannot run level {level}: it lacks {feature} (best here: {})", Level::detect())]
    Missing {
        /// Where the level was asked for.
        from: &'static str,
        /// The level.
        level: Level,
        /// The first feature it needs that the CPU lacks.
        feature: &'static str,
    },
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Level {
    /// Every level, lowest first.
    pub const ALL: [Level; 3] = [Level::Portable, Level::Avx2, Level::Avx512];

    /// `portable`, `avx2` or `avx512`.
    pub const fn name(self) -> &'static str {
        match self {
            Level::Portable => "portable",
            Level::Avx2 => "avx2",
            Level::Avx512 => "avx512",
        }
    }

    /// The level named `name`, as [`Level::name`] writes it.
    pub fn parse(name: &str, from: &'static str) -> Result<Level, LevelError> {
        Level::ALL
            .into_iter()
            .find(|level| level.name() == name)
            .ok_or_else(|| LevelError::Unknown { from, name: name.to_string() })
    }

    /// The features the level needs, in the order they are checked.
    pub(crate) const fn features(self) -> &'static [&'static str] {
        match self {
            Level::Portable => &[],
            Level::Avx2 => &["avx2", "fma", "f16c"],
            Level::Avx512 => &["avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl"],
        }
    }

    /// `Ok` if this CPU can run the level, else the first feature it lacks.
    pub fn check(self, from: &'static str) -> Result<Level, LevelError> {
        // The guard of every level's loop, run per call (`cast` calls one per task of its
        // block loops, and once per block row in earlier forms): the features, asked once
        // per process, answer it.
        if self.supported() {
            return Ok(self);
        }
        match self.features().iter().find(|&&feature| !has_feature(feature)) {
            None => Ok(self),
            Some(&feature) => Err(LevelError::Missing { from, level: self, feature }),
        }
    }

    /// Whether this CPU has every feature of the level: [`SUPPORTED`]'s bit for it, found
    /// by [`has_feature`] on the first call (the features do not change while a process
    /// runs).
    fn supported(self) -> bool {
        let mut bits = SUPPORTED.load(Ordering::Relaxed);
        if bits == UNSET {
            bits = Level::ALL
                .into_iter()
                .filter(|level| level.features().iter().all(|feature| has_feature(feature)))
                .fold(0, |bits, level| bits | 1 << level as u8);
            SUPPORTED.store(bits, Ordering::Relaxed);
        }
        bits & 1 << self as u8 != 0
    }

    /// The best level this CPU can run.
    pub fn detect() -> Level {
        Level::ALL.into_iter().rev().find(|level| level.check("").is_ok()).unwrap_or(Level::Portable)
    }

    /// What [`Level::check`] says of every level, lowest first: for the tests that run
    /// each level the machine has and skip, visibly, the others.
    pub fn each() -> impl Iterator<Item = Result<Level, LevelError>> {
        Level::ALL.into_iter().map(|level| level.check("this machine"))
    }
}

/// Whether the CPU has `feature` (an `is_x86_feature_detected!` name); always false off
/// x86-64, where only [`Level::Portable`] runs.
pub(crate) fn has_feature(feature: &str) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        match feature {
            "avx2" => std::arch::is_x86_feature_detected!("avx2"),
            "fma" => std::arch::is_x86_feature_detected!("fma"),
            "f16c" => std::arch::is_x86_feature_detected!("f16c"),
            "avx512f" => std::arch::is_x86_feature_detected!("avx512f"),
            "avx512bw" => std::arch::is_x86_feature_detected!("avx512bw"),
            "avx512vl" => std::arch::is_x86_feature_detected!("avx512vl"),
            "avx512bf16" => std::arch::is_x86_feature_detected!("avx512bf16"),
            _ => false,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = feature;
        false
    }
}

/// Per level, whether this CPU has its features (bit `level as u8`), [`UNSET`] until the
/// first [`Level::check`].
static SUPPORTED: AtomicU8 = AtomicU8::new(UNSET);
/// The level in effect, [`UNSET`] until the first [`level`] or [`choose`].
static CHOSEN: AtomicU8 = AtomicU8::new(UNSET);
const UNSET: u8 = u8::MAX;

/// The level [`LEVEL_VARIABLE`] asks for (checked against this CPU), or `None` when it
/// is unset or empty.
pub(crate) fn level_from_env() -> Result<Option<Level>, LevelError> {
    match std::env::var(LEVEL_VARIABLE) {
        Ok(name) if !name.is_empty() => Level::parse(&name, LEVEL_VARIABLE)?.check(LEVEL_VARIABLE).map(Some),
        _ => Ok(None),
    }
}

/// Sets the level the CPU loops run at from now on: `asked` (the command line's
/// `--cpu-level`), else [`LEVEL_VARIABLE`], else [`Level::detect`]. Errors, and changes
/// nothing, when the one asked for is not a level or the CPU lacks it.
pub fn choose(asked: Option<Level>) -> Result<Level, LevelError> {
    let level = match asked {
        Some(level) => level.check("--cpu-level")?,
        None => level_from_env()?.unwrap_or_else(Level::detect),
    };
    CHOSEN.store(level as u8, Ordering::Relaxed);
    Ok(level)
}

/// The level the CPU loops run at: the one [`choose`] set; at a first call without it,
/// [`LEVEL_VARIABLE`]'s if it names a level this CPU has, else [`Level::detect`] (the
/// command line refuses a bad [`LEVEL_VARIABLE`] at start-up; a library caller gets the
/// best level instead).
pub fn level() -> Level {
    match CHOSEN.load(Ordering::Relaxed) {
        UNSET => {
            let level = level_from_env().ok().flatten().unwrap_or_else(Level::detect);
            CHOSEN.store(level as u8, Ordering::Relaxed);
            level
        }
        n => Level::ALL[usize::from(n)],
    }
}

/// A loop to compile once per level: see [`with_level`].
#[doc(hidden)]
pub trait LevelLoop {
    /// What it gives.
    type Output;
    /// Runs it. Implementations are `#[inline(always)]`, so that the body is compiled
    /// into each level's function (a closure called from three of them would be compiled
    /// once, for the baseline, and called).
    fn run(self) -> Self::Output;
}

/// `kernel.run()` compiled for `level`'s instructions (inlined into a function with its
/// `#[target_feature]`s); for a level this CPU lacks, compiled for the baseline instead,
/// so that no caller can run an instruction the CPU does not have.
#[inline(always)]
#[doc(hidden)]
pub fn with_level<K: LevelLoop>(level: Level, kernel: K) -> K::Output {
    #[cfg(target_arch = "x86_64")]
    {
        x86::with_level(level, kernel)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = level;
        kernel.run()
    }
}

/// A slice conversion: `dst[i]` = the result for `src[i]` over
/// `min(src.len(), dst.len())` elements (the forms of [`convert`] and [`unorm`], some of
/// them the CPU's own instructions).
pub(crate) type SliceFn<I, O> = fn(&[I], &mut [O]);

/// Outputs of at least this many bytes are written around the caches by
/// `CpuBackend::convert`, where a conversion has a streaming form
/// ([`convert::LevelForms::run_streaming_at`]): more than a CPU's last-level cache holds for a
/// core, so the output would not stay there anyway, and a normal store would first read
/// every line of it. Smaller outputs (`normalize` converts about 1 Mi values at a time,
/// which it then writes to its file) stay in cache for whoever reads them next.
#[doc(hidden)]
pub const STREAMING_BYTES: usize = 16 << 20;

/// `dst[i]` = the stored bits of `P(src[i])` over `min(src.len(), dst.len())` elements,
/// on the calling thread, at the level [`level`] says: exactly what `P` computes, at
/// every level (`host/wings/files/src/tests/cpu_levels.rs` checks the conversions `normalize` runs on
/// every input, at every level this machine has).
#[doc(hidden)]
pub fn map_bits<P: Primitive>(src: &[P::In], dst: &mut [<P::Out as Stored>::Bits]) {
    map_bits_at::<P>(level(), src, dst);
}

/// [`map_bits`] at `level`.
pub(crate) fn map_bits_at<P: Primitive>(level: Level, src: &[P::In], dst: &mut [<P::Out as Stored>::Bits]) {
    with_level(level, MapBits::<P> { src, dst });
}

/// `dst[i] = f(src[i])` over `min(src.len(), dst.len())` elements, compiled for `level`
/// ([`with_level`]): for the CPU forms that run a `shared` function rather than a table
/// variant. `f` is a function item or closure, not a pointer, so that its body is
/// inlined into the level's loop.
#[inline(always)]
pub(crate) fn map_fn_at<I: Copy, O, F: Fn(I) -> O>(level: Level, src: &[I], dst: &mut [O], f: F) {
    struct MapFn<'a, I, O, F> {
        src: &'a [I],
        dst: &'a mut [O],
        f: F,
    }
    impl<I: Copy, O, F: Fn(I) -> O> LevelLoop for MapFn<'_, I, O, F> {
        type Output = ();
        #[inline(always)]
        fn run(self) {
            map_from_line(self.src, self.dst, self.f);
        }
    }
    with_level(level, MapFn { src, dst, f });
}

/// Asks the CPU to bring the cache lines of elements `start..start + len` (clipped to
/// `total`) of the buffer at `base` into its caches; a hint, with no effect on any result.
/// Loops that stream from memory ask for their input a few KiB ahead of where they
/// compute, so that its latency overlaps the work (`fp8_scale`, `files::cast::chunks`).
#[inline(always)]
#[allow(unsafe_code)]
#[doc(hidden)]
pub fn prefetch_lines<T>((base, total): (*const T, usize), start: usize, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for i in (start..(start + len).min(total)).step_by((LINE / size_of::<T>()).max(1)) {
        // SAFETY: a prefetch reads nothing a program sees and cannot fault, whatever the
        // address (here one inside the buffer: `i < total`).
        unsafe { core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(base.wrapping_add(i).cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (base, total, start, len);
}

/// The bytes of a cache line on the x86-64 CPUs this runs on. The vector loops start
/// storing at a multiple of it ([`split_at_line`]).
pub(crate) const LINE: usize = 64;

/// `(head, rest)` of the first `min(src.len(), dst.len())` elements, cut where `dst`
/// reaches a [`LINE`]-byte boundary: the head is the (at most `LINE` bytes of) `dst`
/// before it, the rest starts on it.
///
/// Why: a 32- or 64-byte store that straddles two cache lines costs about two stores,
/// and the large buffers the allocator hands out (`mmap`ed, 16 bytes into a page) would
/// make half of the 32-byte stores and every 64-byte store straddle. A loop that
/// converts the head first stores every vector of the rest within one line.
#[inline(always)]
#[allow(clippy::type_complexity)]
pub(crate) fn split_at_line<'a, I, O>(
    src: &'a [I],
    dst: &'a mut [O],
) -> ((&'a [I], &'a mut [O]), (&'a [I], &'a mut [O])) {
    let n = src.len().min(dst.len());
    let head = dst.as_ptr().align_offset(LINE).min(n);
    let (s_head, s_rest) = src[..n].split_at(head);
    let (d_head, d_rest) = dst[..n].split_at_mut(head);
    ((s_head, d_head), (s_rest, d_rest))
}

/// `dst[i] = f(src[i])` over `min(src.len(), dst.len())` elements: the elements before
/// `dst`'s first line boundary, then the rest ([`split_at_line`]), each in a loop that
/// LLVM vectorises. The results are `f`'s; only where the vector stores fall changes.
#[inline(always)]
fn map_from_line<I: Copy, O>(src: &[I], dst: &mut [O], f: impl Fn(I) -> O) {
    let ((s_head, d_head), (s_rest, d_rest)) = split_at_line(src, dst);
    for (d, &s) in d_head.iter_mut().zip(s_head) {
        *d = f(s);
    }
    for (d, &s) in d_rest.iter_mut().zip(s_rest) {
        *d = f(s);
    }
}

/// The loop of [`map_bits_at`].
struct MapBits<'a, P: Primitive> {
    src: &'a [P::In],
    dst: &'a mut [<P::Out as Stored>::Bits],
}

impl<P: Primitive> LevelLoop for MapBits<'_, P> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        map_from_line(self.src, self.dst, |s| P::apply(s).to_stored());
    }
}

#[cfg(test)]
mod tests;
