//! `cast`'s element loops over one block of a tensor, at the CPU level [`bitexact_cpu`]
//! chose: what [`super::output`] runs on every core, a block per task.
//!
//! - **Plain** f32, bfloat16 and binary16 sources: the 16-bit ones widened to f32 by
//!   [`convert::BF16_TO_F32`] / [`convert::F16_TO_F32`] (exact: both formats are subsets
//!   of f32), then narrowed by the [`CpuConversion`] of the target and overflow mode
//!   (`narrowing_u16`, `narrowing_u8`): each is proven equal to the exact reference on
//!   every input at every level (`host/wings/cpu/src/tests/cpu_levels.rs`), and its scalar form is the
//!   very function `crate::cast::convert::narrow_f32` calls, so the results are
//!   [`ElementCast::run`]'s, bit for bit (`chunks_equal_the_scalar_path` below), and the
//!   exact reference's on all 2^32 f32 inputs (the ignored
//!   `host/wings/files/src/tests/cast_block_loop.rs`).
//!   bfloat16 → binary16 runs both in one pass ([`convert::bf16_to_f16_at`]: the same
//!   bits, the bfloat16 widened in a register), checked by `cpu::convert`'s own test on
//!   every encoding. A narrowing with no such conversion (a saturating bfloat16 or
//!   binary16, which `cast` never asks for) and f64 sources run [`ElementCast::run`], the
//!   scalar loop.
//! - **Scaled** FP8: the block widened to f32 bits, then one function over the `&[u32]`
//!   for the amax pass and one for the quantisation ([`bitexact_cpu::fp8_scale`], at the CPU's level).
//!   f64 sources: the same two passes on `&[u64]` ([`bitexact_cpu::fp8_scale::amax_f64`],
//!   [`bitexact_cpu::fp8_scale::quantize_f64`]).
//!
//! The index of the first refused element is found after the whole block is converted
//! (a vectorisable pass over the output, and over the input too where an infinity may
//! saturate: `checked_inputs`), so it is the first one, as the scalar loop's.

use crate::cast::convert::{ElementCast, Outcome, SourceDtype, Target, f32_is_nonfinite, f64_is_nonfinite};
use bitexact_cpu::convert::{self, CpuConversion};
use bitexact_cpu::{LevelLoop, level, with_level};
use shared::narrow::Overflow;

// The output buffers are written as native-endian `u16`s and stored as they are:
// safetensors is little-endian.
const _: () = assert!(cfg!(target_endian = "little"), "cast stores native u16s as little-endian bytes");

// The scaled FP8 passes at the CPU's level (`cpu::fp8_scale`, proven equal to the exact
// reference on every f32 at every level, at scale 1 and at the walked scales:
// `tests/tests/fp8_scale.rs`).
use bitexact_cpu::fp8_scale::{amax, amax_f64, quantize, quantize_f64};

/// The proven f32 → 16-bit conversion for `target` under `overflow`, if there is one.
pub(crate) fn narrowing_u16(target: Target, overflow: Overflow) -> Option<&'static CpuConversion<u32, u16>> {
    match (target, overflow) {
        (Target::Bf16, Overflow::Standard) => Some(&convert::F32_TO_BF16),
        (Target::F16, Overflow::Standard) => Some(&convert::F32_TO_F16),
        _ => None,
    }
}

/// The proven f32 → FP8 conversion for `target` under `overflow`, if there is one.
pub(crate) fn narrowing_u8(target: Target, overflow: Overflow) -> Option<&'static CpuConversion<u32, u8>> {
    match (target, overflow) {
        (Target::E4m3, Overflow::Standard) => Some(&convert::F32_TO_E4M3),
        (Target::E4m3, Overflow::SatFinite) => Some(&convert::F32_TO_E4M3_SATFINITE),
        (Target::E5m2, Overflow::Standard) => Some(&convert::F32_TO_E5M2),
        (Target::E5m2, Overflow::SatFinite) => Some(&convert::F32_TO_E5M2_SATFINITE),
        _ => None,
    }
}

/// The f32 bits of the little-endian elements `input` of `source` (f32, bf16 or f16),
/// widened exactly: borrowed where `input` is an aligned f32 slice, else in `scratch`.
pub(crate) fn widened<'a>(source: SourceDtype, input: &'a [u8], scratch: &'a mut Vec<u32>) -> &'a [u32] {
    let n = input.len() / source.bytes();
    match source {
        SourceDtype::F32 => match bytemuck::try_cast_slice::<u8, u32>(input) {
            Ok(x) => x,
            Err(_) => {
                scratch.clear();
                scratch.extend(input.as_chunks::<4>().0.iter().map(|&b| u32::from_le_bytes(b)));
                scratch
            }
        },
        SourceDtype::Bf16 | SourceDtype::F16 => {
            let widening = if source == SourceDtype::Bf16 { &convert::BF16_TO_F32 } else { &convert::F16_TO_F32 };
            // Resized, not cleared: only a longer block pays for zeroing the new part.
            scratch.resize(n, 0);
            match bytemuck::try_cast_slice::<u8, u16>(input) {
                Ok(x) => widening.run(x, scratch),
                Err(_) => {
                    let x: Vec<u16> = input.as_chunks::<2>().0.iter().map(|&b| u16::from_le_bytes(b)).collect();
                    widening.run(&x, scratch);
                }
            }
            scratch
        }
        SourceDtype::F64 => unreachable!("f64 is rounded straight to the target, never widened"),
    }
}

/// Runs `narrow` from `x` into `output` (the little-endian bytes of `O`s), through a
/// scratch buffer where `output` is not aligned for `O`.
fn narrow_into<O: bytemuck::Pod + Default>(narrow: &CpuConversion<u32, O>, x: &[u32], output: &mut [u8]) {
    match bytemuck::try_cast_slice_mut::<u8, O>(output) {
        Ok(out) => narrow.run(x, out),
        Err(_) => {
            let mut out = vec![O::default(); x.len()];
            narrow.run(x, &mut out);
            output.copy_from_slice(bytemuck::cast_slice(&out));
        }
    }
}

/// Elements per group of the search for the first refused element: a group is tested
/// whole (vectorised), and only a group that holds one is searched element by element.
const SEARCH_GROUP: usize = 64;

/// Whether a converted block holds an element to refuse: a NaN or infinity among `x`
/// (f32 bits; empty where the output alone shows every refusal), or among `out` (the
/// block's output, [`Target::nonfinite_bits`] `bits` all set). A pass over each (still
/// in cache), each an OR of equality tests with no
/// short-circuit, which LLVM vectorises (there is no unsigned 32-bit compare below
/// AVX-512); compiled for the CPU's level by [`with_level`].
struct AnyRefused<'a, O> {
    x: &'a [u32],
    out: &'a [O],
    bits: u32,
}

impl<O: Copy + Into<u32>> LevelLoop for AnyRefused<'_, O> {
    type Output = bool;

    #[inline(always)]
    fn run(self) -> bool {
        const EXPONENT: u32 = 0x7F80_0000;
        let input = self.x.iter().fold(0u32, |any, &v| any | u32::from(v & EXPONENT == EXPONENT));
        let output = self.out.iter().fold(0u32, |any, &v| any | u32::from(v.into() & self.bits == self.bits));
        input | output != 0
    }
}

/// [`AnyRefused`] on the little-endian `O`s `output` of `target` (none for `None`),
/// at the CPU's level; through a copy where `output` is not aligned for `O`.
fn any_refused<O: bytemuck::Pod + Into<u32>>(x: &[u32], output: &[u8], target: Option<Target>) -> bool {
    let Some(target) = target else {
        return with_level(level(), AnyRefused::<O> { x, out: &[], bits: 0 });
    };
    let bits = target.nonfinite_bits();
    match bytemuck::try_cast_slice::<u8, O>(output) {
        Ok(out) => with_level(level(), AnyRefused { x, out, bits }),
        Err(_) => {
            let out: Vec<O> = bytemuck::pod_collect_to_vec(output);
            with_level(level(), AnyRefused { x, out: &out, bits })
        }
    }
}

/// The index and outcome of the first element of `x` (f32 bits) whose conversion
/// `out(i)` (the output's magnitude at `i`, sign cleared) is not finite: a non-finite
/// input, or a finite one past `max_finite`.
fn first_refused(x: &[u32], out: impl Fn(usize) -> u32, max_finite: u32) -> Option<(usize, Outcome)> {
    let bad = |i: usize| f32_is_nonfinite(x[i]) || out(i) > max_finite;
    let group = (0..x.len().div_ceil(SEARCH_GROUP)).find(|&g| {
        let range = g * SEARCH_GROUP..((g + 1) * SEARCH_GROUP).min(x.len());
        range.fold(false, |any, i| any | bad(i))
    })?;
    let index = (group * SEARCH_GROUP..x.len()).find(|&i| bad(i))?;
    let outcome = if f32_is_nonfinite(x[index]) { Outcome::NonFiniteValues } else { Outcome::Overflow };
    Some((index, outcome))
}

/// Converts the little-endian elements `input` into `output` as `conversion` says, the
/// same bits as [`ElementCast::run`]; where `check`, returns the index and outcome of the
/// first element whose outcome is not [`Outcome::Finite`] (and, unlike the scalar loop,
/// every element is converted all the same). `None` when not `check`. The tests'
/// entry: the writer passes its own scratch to [`convert_block_with`].
#[cfg(test)]
pub(crate) fn convert_block(
    conversion: &ElementCast,
    input: &[u8],
    output: &mut [u8],
    check: bool,
) -> Option<(usize, Outcome)> {
    convert_block_with(conversion, input, output, check, &mut Vec::new())
}

/// Elements converted and checked at a time inside a block: few enough that the widened
/// f32s (8 KiB), the input and the output stay in the L1 data cache from one pass to the
/// next (widen, narrow, check).
const PIECE_ELEMENTS: usize = 2048;
/// How far ahead of the piece being converted [`convert_block_with`] asks for the input
/// ([`bitexact_cpu::prefetch_lines`]), in bytes, where [`prefetches`].
const PREFETCH_DISTANCE: usize = 16 * 1024;

/// Whether [`convert_block_with`] asks for its input [`PREFETCH_DISTANCE`] ahead, so that
/// its latency overlaps a piece's work (the element loops' own prefetch does not reach
/// past a piece): for pass 2 (scaled FP8), whose loop waited on its input. Measured
/// 2026-12-03 (`cast_throughput`, 256 MiB, 2 threads, an AVX-512 Xeon, the binaries with
/// and without run alternately, three times each): f32 scaled pass 2 0.70–0.76× →
/// 0.80–0.87× of memcpy; f64 scaled pass 2 unchanged within the noise (0.58–0.74× →
/// 0.65–0.73×); for the plain conversions no gain was seen, so they do not.
fn prefetches(conversion: &ElementCast) -> bool {
    matches!(conversion, ElementCast::Scaled { .. })
}

/// `convert_block`, widening into `scratch` (kept by the caller from block to block,
/// so that a task allocates it once).
pub fn convert_block_with(
    conversion: &ElementCast,
    input: &[u8],
    output: &mut [u8],
    check: bool,
    scratch: &mut Vec<u32>,
) -> Option<(usize, Outcome)> {
    let (ib, ob) = (conversion.source().bytes(), conversion.output_bytes());
    let mut first = None;
    let prefetches = prefetches(conversion);
    for (k, (piece, output)) in
        input.chunks(PIECE_ELEMENTS * ib).zip(output.chunks_mut(PIECE_ELEMENTS * ob)).enumerate()
    {
        if prefetches {
            let ahead = k * PIECE_ELEMENTS * ib + PREFETCH_DISTANCE;
            bitexact_cpu::prefetch_lines((input.as_ptr(), input.len()), ahead, PIECE_ELEMENTS * ib);
        }
        let input = piece;
        let found = convert_piece(conversion, input, output, check && first.is_none(), scratch);
        first = first.or(found.map(|(j, outcome)| (k * PIECE_ELEMENTS + j, outcome)));
    }
    first
}

/// The inputs whose own values the refusal check must look at, besides the output:
/// none under [`Overflow::Standard`], where every refused element's output is already
/// not finite (a NaN gives a NaN, an infinity an infinity, or NaN in E4M3, which has
/// none, and a finite value past the largest finite one the same), so the output alone
/// shows it; all of `x` under [`Overflow::SatFinite`], where an infinity becomes the
/// largest finite value. (`a_nonfinite_input_alone_is_refused_by_every_conversion`
/// checks both: in the other tests an infinity always shares its piece with a NaN,
/// whose output shows it.)
fn checked_inputs(x: &[u32], overflow: Overflow) -> &[u32] {
    match overflow {
        Overflow::Standard => &[],
        Overflow::SatFinite => x,
    }
}

/// The little-endian `u16` at element `i` of `bytes`.
fn u16_at(bytes: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]])
}

/// bfloat16 → binary16 of the little-endian elements `input` into `output`
/// ([`convert::bf16_to_f16_at`], one pass at the CPU's level: the bits of
/// [`convert::BF16_TO_F32`] then [`convert::F32_TO_F16`]), through copies where either
/// is not aligned for `u16`.
fn bf16_to_f16_into(input: &[u8], output: &mut [u8]) {
    let level = level();
    let copied: Vec<u16>;
    let x = match bytemuck::try_cast_slice::<u8, u16>(input) {
        Ok(x) => x,
        Err(_) => {
            copied = input.as_chunks::<2>().0.iter().map(|&b| u16::from_le_bytes(b)).collect();
            &copied
        }
    };
    match bytemuck::try_cast_slice_mut::<u8, u16>(output) {
        Ok(out) => convert::bf16_to_f16_at(level, x, out),
        Err(_) => {
            let mut out = vec![0u16; x.len().min(output.len() / 2)];
            convert::bf16_to_f16_at(level, x, &mut out);
            output[..2 * out.len()].copy_from_slice(bytemuck::cast_slice(&out));
        }
    }
}

/// [`convert_block_with`] on one piece of a block.
#[inline]
fn convert_piece(
    conversion: &ElementCast,
    input: &[u8],
    output: &mut [u8],
    check: bool,
    scratch: &mut Vec<u32>,
) -> Option<(usize, Outcome)> {
    match *conversion {
        ElementCast::Plain { source: SourceDtype::Bf16, target: Target::F16, overflow: Overflow::Standard } => {
            bf16_to_f16_into(input, output);
            // One vectorised pass over the output (in cache) says whether there is a
            // refused element at all (see `checked_inputs`); only then is it looked for.
            if !check || !any_refused::<u16>(&[], output, Some(Target::F16)) {
                return None;
            }
            let x = widened(SourceDtype::Bf16, input, scratch);
            first_refused(x, |i| u32::from(u16_at(output, i) & 0x7FFF), Target::F16.max_finite_bits())
        }
        ElementCast::Plain { source, target, overflow } if source != SourceDtype::F64 => {
            if let Some(narrow) = narrowing_u16(target, overflow) {
                let x = widened(source, input, scratch);
                narrow_into(narrow, x, output);
                let max = target.max_finite_bits();
                // Vectorised passes over the block (in cache) say whether there is a
                // refused element at all; only then is it looked for.
                if !check || !any_refused::<u16>(checked_inputs(x, overflow), output, Some(target)) {
                    return None;
                }
                first_refused(x, |i| u32::from(u16_at(output, i) & 0x7FFF), max)
            } else if let Some(narrow) = narrowing_u8(target, overflow) {
                let x = widened(source, input, scratch);
                narrow_into(narrow, x, output);
                let max = target.max_finite_bits();
                if !check || !any_refused::<u8>(checked_inputs(x, overflow), output, Some(target)) {
                    return None;
                }
                first_refused(x, |i| u32::from(output[i] & 0x7F), max)
            } else {
                conversion.run(input, output, false).filter(|_| check)
            }
        }
        ElementCast::Plain { .. } => conversion.run(input, output, false).filter(|_| check),
        ElementCast::Scaled { source: SourceDtype::F64, format, s, rounding } => {
            let x = f64_elements(input);
            quantize_f64(&x, s, format, rounding, output);
            // One pass with no early exit (vectorised) says whether to look.
            if !check || !x.iter().fold(false, |any, &v| any | f64_is_nonfinite(v)) {
                return None;
            }
            x.iter().position(|&v| f64_is_nonfinite(v)).map(|i| (i, Outcome::NonFiniteValues))
        }
        ElementCast::Scaled { source, format, s, rounding } => {
            let x = widened(source, input, scratch);
            quantize(x, s, format, rounding, output);
            if !check || !any_refused::<u8>(x, output, None) {
                return None;
            }
            x.iter().position(|&v| f32_is_nonfinite(v)).map(|i| (i, Outcome::NonFiniteValues))
        }
    }
}

/// The little-endian f64 elements `input` as `u64` bits: borrowed where `input` is
/// aligned for them, else copied.
fn f64_elements(input: &[u8]) -> std::borrow::Cow<'_, [u64]> {
    match bytemuck::try_cast_slice::<u8, u64>(input) {
        Ok(x) => std::borrow::Cow::Borrowed(x),
        Err(_) => std::borrow::Cow::Owned(input.as_chunks::<8>().0.iter().map(|&b| u64::from_le_bytes(b)).collect()),
    }
}

/// The amax pass over the little-endian elements `input` of `source`: the largest
/// magnitude among the finite elements (0 for none) as **f64 bits** (exact: every source
/// value is an f64; for non-negative values their integer order is the order of the
/// magnitudes, so blocks reduce by an integer max) and the index of the first non-finite
/// element, if any. At the CPU's level: [`bitexact_cpu::fp8_scale::amax`] of the widened
/// f32s, or [`bitexact_cpu::fp8_scale::amax_f64`].
pub fn amax_block(source: SourceDtype, input: &[u8]) -> (u64, Option<usize>) {
    amax_block_with(source, input, &mut Vec::new())
}

/// [`amax_block`], widening into `scratch` (kept by the caller from block to block).
pub(crate) fn amax_block_with(source: SourceDtype, input: &[u8], scratch: &mut Vec<u32>) -> (u64, Option<usize>) {
    if source == SourceDtype::F64 {
        return amax_f64(&f64_elements(input));
    }
    let (max, first) = amax(widened(source, input, scratch));
    (f64::from(f32::from_bits(max)).to_bits(), first)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use shared::fp8_scale::{Fp8Format, Rounding};

    /// Every (target, overflow) `cast` asks a plain conversion for, and one it never does
    /// (saturating bfloat16: the scalar loop's fallback). The wing's `cast_block_loop`
    /// proof walks the same list.
    pub(crate) const PLAIN: [(Target, Overflow); 7] = [
        (Target::Bf16, Overflow::Standard),
        (Target::F16, Overflow::Standard),
        (Target::E4m3, Overflow::Standard),
        (Target::E4m3, Overflow::SatFinite),
        (Target::E5m2, Overflow::Standard),
        (Target::E5m2, Overflow::SatFinite),
        (Target::Bf16, Overflow::SatFinite),
    ];

    /// `convert_block` against `ElementCast::run` on `input` (little-endian elements),
    /// from a misaligned copy too (the scratch paths): the same output bytes and the same
    /// first refused element.
    fn assert_same(conversion: &ElementCast, input: &[u8]) {
        assert_same_in(conversion, input, &mut Buffers::default());
    }

    /// The buffers of [`assert_same_in`].
    #[derive(Default)]
    struct Buffers {
        expected: Vec<u8>,
        shifted_in: Vec<u8>,
        shifted_out: Vec<u8>,
        scratch: Vec<u32>,
    }

    /// [`assert_same`] in `buffers`.
    fn assert_same_in(conversion: &ElementCast, input: &[u8], buffers: &mut Buffers) {
        let Buffers { expected, shifted_in, shifted_out, scratch } = buffers;
        let n = input.len() / conversion.source().bytes();
        let out_len = n * conversion.output_bytes();
        expected.clear();
        expected.resize(out_len, 0);
        let first = conversion.run(input, expected, false);
        shifted_in.clear();
        shifted_in.push(0);
        shifted_in.extend_from_slice(input);
        // Aligned output in the first half, misaligned (one byte in) in the second.
        shifted_out.clear();
        shifted_out.resize(2 * out_len + 1, 0);
        let (aligned_out, misaligned_out) = shifted_out.split_at_mut(out_len);
        for (input, output) in [(input, aligned_out), (&shifted_in[1..], &mut misaligned_out[1..])] {
            // Each pass over a different fill, so that an element it leaves unwritten shows.
            output.fill(0);
            let got = convert_block_with(conversion, input, output, true, scratch);
            assert!(output == &expected[..], "{conversion:?}: outputs differ");
            assert_eq!(got, first, "{conversion:?}: first refused element");
            output.fill(0xA5);
            assert_eq!(convert_block_with(conversion, input, output, false, scratch), None);
            assert!(output == &expected[..], "{conversion:?}: outputs differ, unchecked");
        }
    }

    fn f32_bytes(x: &[u32]) -> Vec<u8> {
        x.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    /// f32 inputs: a stride over all 2^32 (every class, subnormals, NaN payloads), an odd
    /// count.
    fn sampled_f32() -> Vec<u32> {
        (0..(1u32 << 16) + 3).map(|i| i.wrapping_mul(0x0001_0001).wrapping_add(i.wrapping_mul(0x9E37))).collect()
    }

    #[test]
    fn chunks_equal_the_scalar_path() {
        let sixteen: Vec<u8> = (0..=u16::MAX).flat_map(u16::to_le_bytes).collect();
        let f32s = f32_bytes(&sampled_f32());
        for (target, overflow) in PLAIN {
            for source in [SourceDtype::F32, SourceDtype::Bf16, SourceDtype::F16] {
                let input = if source == SourceDtype::F32 { &f32s } else { &sixteen };
                assert_same(&ElementCast::Plain { source, target, overflow }, input);
                // An odd length, and the first refused element in a later search group.
                assert_same(&ElementCast::Plain { source, target, overflow }, &input[..input.len() / 3 * 3 - 3]);
            }
        }
        let finite: Vec<u32> = sampled_f32().into_iter().filter(|&x| !f32_is_nonfinite(x)).collect();
        for format in [Fp8Format::E4M3, Fp8Format::E5M2] {
            for rounding in [Rounding::Once, Rounding::TwoStep] {
                for (source, input) in [(SourceDtype::F32, &f32_bytes(&finite)), (SourceDtype::Bf16, &sixteen)] {
                    let (max, _) = amax_block(source, input);
                    let s = shared::fp8_scale::scale_for(f64::from_bits(max) as f32, format);
                    assert_same(&ElementCast::Scaled { source, format, s, rounding }, input);
                }
                // f64: the f32 sample widened, and the same nudged by one f64 ULP (not an
                // f32 any more), at the f64 scale of its amax.
                let f64s: Vec<u8> = finite
                    .iter()
                    .flat_map(|&x| {
                        let wide = f64::from(f32::from_bits(x)).to_bits();
                        [wide, wide ^ 1]
                    })
                    .flat_map(u64::to_le_bytes)
                    .collect();
                let (max, _) = amax_block(SourceDtype::F64, &f64s);
                let s = shared::fp8_scale::scale_for_f64(f64::from_bits(max), format);
                assert_same(&ElementCast::Scaled { source: SourceDtype::F64, format, s, rounding }, &f64s);
            }
        }
    }

    #[test]
    fn the_first_refused_element_is_the_first_whichever_group_it_is_in() {
        let mut x = vec![1.0f32.to_bits(); 1000];
        let conversion =
            ElementCast::Plain { source: SourceDtype::F32, target: Target::F16, overflow: Overflow::Standard };
        let mut out = vec![0u8; 2000];
        assert_eq!(convert_block(&conversion, &f32_bytes(&x), &mut out, true), None);
        x[999] = f32::NAN.to_bits();
        x[700] = 1e6f32.to_bits();
        x[130] = f32::NEG_INFINITY.to_bits();
        assert_eq!(convert_block(&conversion, &f32_bytes(&x), &mut out, true), Some((130, Outcome::NonFiniteValues)));
        x[130] = 0;
        assert_eq!(convert_block(&conversion, &f32_bytes(&x), &mut out, true), Some((700, Outcome::Overflow)));
    }

    #[test]
    fn the_first_refused_element_is_the_first_whichever_piece_it_is_in() {
        // Blocks are converted and checked a piece of PIECE_ELEMENTS at a time: refused
        // elements in the second and the third piece, then only in the third.
        let n = 3 * PIECE_ELEMENTS + 5;
        let mut x = vec![1.0f32.to_bits(); n];
        x[2 * PIECE_ELEMENTS + 1] = f32::NAN.to_bits();
        x[PIECE_ELEMENTS + 7] = 1e6f32.to_bits();
        for (target, bytes) in [(Target::F16, 2), (Target::E4m3, 1)] {
            let conversion = ElementCast::Plain { source: SourceDtype::F32, target, overflow: Overflow::Standard };
            let mut out = vec![0u8; n * bytes];
            let got = convert_block(&conversion, &f32_bytes(&x), &mut out, true);
            assert_eq!(got, Some((PIECE_ELEMENTS + 7, Outcome::Overflow)), "{target:?}");
        }
        x[PIECE_ELEMENTS + 7] = 0;
        let conversion =
            ElementCast::Plain { source: SourceDtype::F32, target: Target::Bf16, overflow: Overflow::Standard };
        let mut out = vec![0u8; n * 2];
        let got = convert_block(&conversion, &f32_bytes(&x), &mut out, true);
        assert_eq!(got, Some((2 * PIECE_ELEMENTS + 1, Outcome::NonFiniteValues)));
        let scaled =
            ElementCast::Scaled { source: SourceDtype::F32, format: Fp8Format::E5M2, s: 2.0, rounding: Rounding::Once };
        let got = convert_block(&scaled, &f32_bytes(&x), &mut vec![0u8; n], true);
        assert_eq!(got, Some((2 * PIECE_ELEMENTS + 1, Outcome::NonFiniteValues)));
    }

    /// Each non-finite input alone among finite ones, at the start, the middle and the end
    /// of a block: refused at its index by every plain conversion, from every source, as
    /// the scalar loop refuses it; a saturating conversion's output shows no infinity
    /// (it is the largest finite value), so this is what checks that its inputs are read.
    #[test]
    fn a_nonfinite_input_alone_is_refused_by_every_conversion() {
        let n = 2 * PIECE_ELEMENTS + 3;
        let encodings: [(SourceDtype, [u64; 4]); 3] = [
            (SourceDtype::F32, [0x7F80_0000, 0xFF80_0000, 0x7FC0_0000, 0xFF80_0001]),
            (SourceDtype::Bf16, [0x7F80, 0xFF80, 0x7FC0, 0xFF81]),
            (SourceDtype::F16, [0x7C00, 0xFC00, 0x7E00, 0xFC01]),
        ];
        for (source, nonfinite) in encodings {
            let one = match source {
                SourceDtype::F32 => 0x3F80_0000u64,
                SourceDtype::Bf16 => 0x3F80,
                _ => 0x3C00,
            };
            for (target, overflow) in PLAIN {
                for (&bad, at) in nonfinite.iter().zip([0, PIECE_ELEMENTS + 1, n - 1, PIECE_ELEMENTS - 1]) {
                    let bytes = source.bytes();
                    let input: Vec<u8> = (0..n)
                        .flat_map(|i| (if i == at { bad } else { one }).to_le_bytes()[..bytes].to_vec())
                        .collect();
                    let conversion = ElementCast::Plain { source, target, overflow };
                    let mut out = vec![0u8; n * conversion.output_bytes()];
                    let got = convert_block(&conversion, &input, &mut out, true);
                    assert_eq!(got, Some((at, Outcome::NonFiniteValues)), "{conversion:?}, {bad:#x} at {at}");
                    assert_same(&conversion, &input);
                }
            }
        }
    }
}
