//! Scaled FP8 over slices on the CPU, at a level: pass 1 ([`amax`]) and pass 2
//! ([`quantize`]) of `shared::fp8_scale`'s definitions, for `bitexact cast`'s per-tensor
//! scales, and its FP8 scales per channel and per block ([`quantize_blocks_at`]), MX
//! ([`quantize_mx_blocks_at`]) and NVFP4 ([`quantize_nvfp4_blocks_at`]).
//!
//! Both are `shared` code compiled for each level (`with_level`) and vectorised
//! by LLVM: pass 1 is [`shared::fp8_scale::amax_slice`] (the loop the example's CPU twin
//! runs too), pass 2 is [`shared::fp8_scale::quantize_slice`] (round to odd, then the
//! by-addition FP8 rounding), with the product's rounding error found by FMA at
//! [`Level::Avx2`] and [`Level::Avx512`] and by the f64 product at [`Level::Portable`]
//! (the baseline target has no FMA instruction). Every level gives
//! [`shared::fp8_scale::quantize`]'s bits (`tests/tests/fp8_scale.rs`: a sample at many
//! scales at every level this machine has, all 2^32 f32 at the proven scales with
//! `--ignored`).

use super::{Level, LevelLoop, level, prefetch_lines, split_at_line, with_level};
use shared::fp8_block::{BlockError, Blocks, Recipe, quantize_blocks_inline};
use shared::fp8_scale::{Fp8Format, Residual, Rounding, amax_slice, quantize_slice};
use shared::mx::{ElementFormat, ScaleRule};
use shared::nvfp4::{Nvfp4Recipe, WeightDtype};

/// Pass 1 at [`level`]: the largest magnitude's f32 bits among the finite elements of `x`
/// (f32 bits; 0 for none), and the index of the first NaN or infinity, if any
/// ([`amax_slice`]).
pub fn amax(x: &[u32]) -> (u32, Option<usize>) {
    amax_at(level(), x)
}

/// [`amax`] at `level` (a level the CPU lacks runs the portable loop): the same result at
/// every level, [`amax_slice`]'s.
pub fn amax_at(level: Level, x: &[u32]) -> (u32, Option<usize>) {
    with_level(level, Maxima { x })
}

/// Pass 2 at [`level`]: `q[i] = shared::fp8_scale::quantize(x[i], s, format, rounding)`
/// over `min(x.len(), q.len())` elements, for a positive finite scale `s`: the same bits
/// at every level. The codes for any other `s` are not specified.
pub fn quantize(x: &[u32], s: f32, format: Fp8Format, rounding: Rounding, q: &mut [u8]) {
    quantize_at(level(), x, s, format, rounding, q);
}

/// [`quantize`] at `level` (a level the CPU lacks runs the portable loop).
pub fn quantize_at(level: Level, x: &[u32], s: f32, format: Fp8Format, rounding: Rounding, q: &mut [u8]) {
    let residual = residual_at(level);
    with_level(level, Quantize { x, s, format, rounding, residual, q });
}

/// `shared::fp8_block::quantize_blocks_with` compiled for `level` (a level the CPU lacks
/// runs the portable loop): [`quantize_blocks_inline`], whose per-row loops LLVM
/// vectorises for the level's instructions. The same scales, codes and result at every
/// level (`tests/tests/fp8_block.rs` checks each level this machine has against the
/// rational reference).
#[allow(clippy::too_many_arguments)]
pub fn quantize_blocks_at(
    level: Level,
    recipe: Recipe,
    x: &[u32],
    rows: usize,
    cols: usize,
    blocks: Blocks,
    format: Fp8Format,
    q: &mut [u8],
    d: &mut [f32],
) -> Result<Option<usize>, BlockError> {
    with_level(level, QuantizeBlocks { recipe, x, rows, cols, blocks, format, q, d })
}

/// The loop of [`quantize_blocks_at`].
struct QuantizeBlocks<'a> {
    recipe: Recipe,
    x: &'a [u32],
    rows: usize,
    cols: usize,
    blocks: Blocks,
    format: Fp8Format,
    q: &'a mut [u8],
    d: &'a mut [f32],
}

impl LevelLoop for QuantizeBlocks<'_> {
    type Output = Result<Option<usize>, BlockError>;

    #[inline(always)]
    fn run(self) -> Self::Output {
        let QuantizeBlocks { recipe, x, rows, cols, blocks, format, q, d } = self;
        quantize_blocks_inline(recipe, x, rows, cols, blocks, format, q, d)
    }
}

/// `shared::mx::quantize_blocks` compiled for `level` (a level the CPU lacks runs the
/// portable loop): `shared::mx::quantize_blocks_inline`, each block's elements in a loop
/// LLVM vectorises for the level's instructions, the product's rounding error found as
/// [`quantize_at`] finds it. The same scales, codes and result at every level
/// (`tests/tests/mx.rs` checks each level this machine has).
pub fn quantize_mx_blocks_at(
    level: Level,
    x: &[u32],
    element: ElementFormat,
    rule: ScaleRule,
    q: &mut [u8],
    scales: &mut [u8],
) -> Result<Option<usize>, BlockError> {
    let residual = residual_at(level);
    with_level(level, QuantizeMxBlocks { x, element, rule, residual, q, scales })
}

/// The loop of [`quantize_mx_blocks_at`].
struct QuantizeMxBlocks<'a> {
    x: &'a [u32],
    element: ElementFormat,
    rule: ScaleRule,
    residual: Residual,
    q: &'a mut [u8],
    scales: &'a mut [u8],
}

impl LevelLoop for QuantizeMxBlocks<'_> {
    type Output = Result<Option<usize>, BlockError>;

    #[inline(always)]
    fn run(self) -> Self::Output {
        let QuantizeMxBlocks { x, element, rule, residual, q, scales } = self;
        shared::mx::quantize_blocks_inline(x, element, rule, residual, q, scales)
    }
}

/// `shared::nvfp4::quantize_blocks` compiled for `level` (a level the CPU lacks runs the
/// portable loop): `shared::nvfp4::quantize_blocks_inline`, each block's elements in the
/// recipe's branch-free loop, vectorised for the level's instructions. The same scales,
/// packed codes and result at every level (`tests/tests/nvfp4.rs` checks each level this
/// machine has).
pub fn quantize_nvfp4_blocks_at(
    level: Level,
    x: &[u32],
    recipe: Nvfp4Recipe,
    tensor: f32,
    source: WeightDtype,
    packed: &mut [u8],
    scales: &mut [u8],
) -> Result<Option<usize>, BlockError> {
    with_level(level, QuantizeNvfp4Blocks { x, recipe, tensor, source, packed, scales })
}

/// The loop of [`quantize_nvfp4_blocks_at`].
struct QuantizeNvfp4Blocks<'a> {
    x: &'a [u32],
    recipe: Nvfp4Recipe,
    tensor: f32,
    source: WeightDtype,
    packed: &'a mut [u8],
    scales: &'a mut [u8],
}

impl LevelLoop for QuantizeNvfp4Blocks<'_> {
    type Output = Result<Option<usize>, BlockError>;

    #[inline(always)]
    fn run(self) -> Self::Output {
        let QuantizeNvfp4Blocks { x, recipe, tensor, source, packed, scales } = self;
        shared::nvfp4::quantize_blocks_inline(x, recipe, tensor, source, packed, scales)
    }
}

/// How `Once` finds the product's rounding error at `level`: by FMA where the level's
/// loop has the instruction, else (the baseline target, or a level the CPU lacks, which
/// runs the baseline's loop) by the f64 product, not by a call into `fmaf` per element.
fn residual_at(level: Level) -> Residual {
    match level {
        Level::Avx2 | Level::Avx512 if level.check("").is_ok() => Residual::Fma,
        _ => Residual::F64,
    }
}

/// The loop of [`amax_at`]: [`amax_slice`], inlined into each level's function.
struct Maxima<'a> {
    x: &'a [u32],
}

impl LevelLoop for Maxima<'_> {
    type Output = (u32, Option<usize>);

    #[inline(always)]
    fn run(self) -> (u32, Option<usize>) {
        amax_slice(self.x)
    }
}

/// The loop of [`quantize_at`]: the elements before `q`'s first cache-line boundary,
/// then the rest, so that the rest's vector stores each fall within one line.
struct Quantize<'a> {
    x: &'a [u32],
    s: f32,
    format: Fp8Format,
    rounding: Rounding,
    residual: Residual,
    q: &'a mut [u8],
}

impl LevelLoop for Quantize<'_> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        let Quantize { x, s, format, rounding, residual, q } = self;
        let ((x_head, q_head), (x_rest, q_rest)) = split_at_line(x, q);
        quantize_slice(x_head, s, format, rounding, residual, q_head);
        for (x, q) in prefetched_chunks(x_rest, q_rest) {
            quantize_slice(x, s, format, rounding, residual, q);
        }
    }
}

/// `x` and `q` in chunks of [`PREFETCH_BYTES`] of `x`, the input [`PREFETCH_AHEAD`]
/// chunks ahead asked for ([`prefetch_lines`]) as each chunk is handed out. The caller
/// runs its loop on each chunk in its own body, not in a closure passed here: a closure
/// is not compiled with the level function's target features (measured: pass 2 at
/// avx512 fell to the portable loop's speed, `Once` calling `fmaf` per element).
#[inline(always)]
fn prefetched_chunks<'a, T>(x: &'a [T], q: &'a mut [u8]) -> impl Iterator<Item = (&'a [T], &'a mut [u8])> {
    let chunk = PREFETCH_BYTES / size_of::<T>();
    let lines = (x.as_ptr(), x.len());
    x.chunks(chunk).zip(q.chunks_mut(chunk)).enumerate().map(move |(k, pair)| {
        prefetch_lines(lines, (k + PREFETCH_AHEAD) * chunk, chunk);
        pair
    })
}

/// Bytes of input per chunk of pass 2's loops. Each chunk first asks for the input two
/// chunks ahead ([`prefetch_lines`]): measured 2026-12-03 on an Intel Xeon
/// (AVX-512, 2^26 elements, one thread), pass 2 went from 0.29× to 0.55× of the same-run
/// memcpy at avx2 and from 0.58× to 0.69× at avx512 (computed in cache, the f32 loop runs
/// at 16 and 27 GB/s: out of memory it waited on the input). Asking for the output lines
/// too, or further ahead, or in 1, 2 or 4 KiB chunks, or storing the codes with
/// non-temporal stores, measured no better (2026-12-03, the same machine). `bitexact
/// cast` hands these loops pieces of one chunk or less, where this reaches nothing; it
/// asks for its input ahead itself (`files::cast::chunks`).
const PREFETCH_BYTES: usize = 16 * 1024;
/// How many chunks ahead pass 2 asks for its input.
const PREFETCH_AHEAD: usize = 2;

/// Pass 1 of an **f64** tensor at [`level`]: the largest magnitude's f64 bits among the
/// finite elements of `x` (0 for none) and the index of the first NaN or infinity
/// ([`shared::fp8_scale::amax_slice_f64`]).
pub fn amax_f64(x: &[u64]) -> (u64, Option<usize>) {
    amax_f64_at(level(), x)
}

/// [`amax_f64`] at `level` (a level the CPU lacks runs the portable loop): the same
/// result at every level.
pub fn amax_f64_at(level: Level, x: &[u64]) -> (u64, Option<usize>) {
    with_level(level, MaximaF64 { x })
}

/// Pass 2 of an **f64** tensor at [`level`]: `q[i] = shared::fp8_scale::quantize_f64(x[i],
/// s, format, rounding)` over `min(x.len(), q.len())` elements, for a positive finite `s`
/// (the codes for any other `s` are not specified).
pub fn quantize_f64(x: &[u64], s: f32, format: Fp8Format, rounding: Rounding, q: &mut [u8]) {
    quantize_f64_at(level(), x, s, format, rounding, q);
}

/// [`quantize_f64`] at `level` (a level the CPU lacks runs the portable loop), by
/// [`shared::fp8_scale::quantize_slice_f64`]: the same bits at every level. At
/// [`Level::Portable`] each product's error is a call into `fma` (the baseline target has
/// no FMA instruction), so that loop is not vectorised.
pub fn quantize_f64_at(level: Level, x: &[u64], s: f32, format: Fp8Format, rounding: Rounding, q: &mut [u8]) {
    with_level(level, QuantizeF64 { x, s, format, rounding, q });
}

/// The loop of [`amax_f64`].
struct MaximaF64<'a> {
    x: &'a [u64],
}

impl LevelLoop for MaximaF64<'_> {
    type Output = (u64, Option<usize>);

    #[inline(always)]
    fn run(self) -> (u64, Option<usize>) {
        shared::fp8_scale::amax_slice_f64(self.x)
    }
}

/// The loop of [`quantize_f64_at`].
struct QuantizeF64<'a> {
    x: &'a [u64],
    s: f32,
    format: Fp8Format,
    rounding: Rounding,
    q: &'a mut [u8],
}

impl LevelLoop for QuantizeF64<'_> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        let QuantizeF64 { x, s, format, rounding, q } = self;
        for (x, q) in prefetched_chunks(x, q) {
            shared::fp8_scale::quantize_slice_f64(x, s, format, rounding, q);
        }
    }
}
