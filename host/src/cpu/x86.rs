//! x86-64: the functions compiled with each level's `#[target_feature]`s, and the
//! conversion instructions of F16C, AVX-512F and AVX512-BF16 over slices.
//!
//! The only `unsafe` of the CPU loops: calling a `#[target_feature]` function, done only
//! after [`Level::check`] (or `is_x86_feature_detected!`) found every feature it enables.
//! The instructions themselves are called through `std::arch`'s safe intrinsics, on
//! arrays cast to and from vector types with `bytemuck` (no pointers).
#![allow(unsafe_code)]

use super::convert::SliceFn;
use super::{Level, LevelLoop};
use std::arch::x86_64::*;

/// `kernel.run()` compiled for `level`; see [`super::with_level`].
#[inline(always)]
pub(super) fn with_level<K: LevelLoop>(level: Level, kernel: K) -> K::Output {
    match level {
        // SAFETY: the CPU has every feature `avx512` enables (checked just now).
        Level::Avx512 if level.check("").is_ok() => unsafe { avx512(kernel) },
        // SAFETY: the CPU has every feature `avx2` enables (checked just now).
        Level::Avx2 | Level::Avx512 if Level::Avx2.check("").is_ok() => unsafe { avx2(kernel) },
        _ => kernel.run(),
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
fn avx2<K: LevelLoop>(kernel: K) -> K::Output {
    kernel.run()
}

#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
fn avx512<K: LevelLoop>(kernel: K) -> K::Output {
    kernel.run()
}

/// F16C's immediate: round to nearest, ties to even, whatever MXCSR says (bit 2 clear:
/// the immediate's mode). Exceptions stay masked, as Rust leaves MXCSR.
const NEAREST: i32 = _MM_FROUND_TO_NEAREST_INT;
/// AVX-512's: the same, and suppress all exceptions.
const NEAREST_NO_EXC: i32 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

/// `dst[i] = f(src[i])` over `min(src.len(), dst.len())` elements, `N` at a time by
/// `block`; the tail goes through `block` too, padded with zeros, so that every element
/// is converted by the same instruction.
#[inline(always)]
fn blocks<I: bytemuck::Pod, O: bytemuck::Pod, const N: usize>(
    src: &[I],
    dst: &mut [O],
    block: impl Fn([I; N]) -> [O; N],
) {
    let n = src.len().min(dst.len());
    let (s, s_tail) = src[..n].as_chunks::<N>();
    let (d, d_tail) = dst[..n].as_chunks_mut::<N>();
    for (s, d) in s.iter().zip(d) {
        *d = block(*s);
    }
    if !s_tail.is_empty() {
        let mut padded = [I::zeroed(); N];
        padded[..s_tail.len()].copy_from_slice(s_tail);
        d_tail.copy_from_slice(&block(padded)[..s_tail.len()]);
    }
}

/// F16C `vcvtps2ph ymm` (round to nearest even): f32 bits → binary16 bits.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn f32_to_f16_f16c(src: &[u32], dst: &mut [u16]) {
    blocks(src, dst, |x: [u32; 8]| bytemuck::cast(_mm256_cvtps_ph::<NEAREST>(bytemuck::cast(x))));
}

/// `widened`, the result of `vcvtph2ps` for the binary16 bits `b`, with the quiet bit
/// (f32 bit 22) cleared again where `b` is a signalling NaN (exponent all ones, payload
/// non-zero, its top bit clear): `vcvtph2ps` makes such a NaN quiet, where the exact
/// widening keeps every payload bit. Every other result of `vcvtph2ps` is already the
/// exact widening (`tests/tests/cpu_levels.rs` proves both on every encoding).
#[inline(always)]
fn keep_signalling(b: u16, widened: u32) -> u32 {
    let signalling = b & 0x7C00 == 0x7C00 && b & 0x03FF != 0 && b & 0x0200 == 0;
    widened & !(u32::from(signalling) << 22)
}

/// F16C `vcvtph2ps ymm`: binary16 bits → f32 bits, signalling NaNs kept
/// ([`keep_signalling`]).
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn f16_to_f32_f16c(src: &[u16], dst: &mut [u32]) {
    blocks(src, dst, |x: [u16; 8]| {
        let widened: [u32; 8] = bytemuck::cast(_mm256_cvtph_ps(bytemuck::cast(x)));
        core::array::from_fn(|k| keep_signalling(x[k], widened[k]))
    });
}

/// AVX-512F `vcvtps2ph zmm` (round to nearest even): f32 bits → binary16 bits.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
pub(super) fn f32_to_f16_avx512(src: &[u32], dst: &mut [u16]) {
    blocks(src, dst, |x: [u32; 16]| bytemuck::cast(_mm512_cvtps_ph::<NEAREST_NO_EXC>(bytemuck::cast(x))));
}

/// AVX-512F `vcvtph2ps zmm`: binary16 bits → f32 bits, signalling NaNs kept
/// ([`keep_signalling`]).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
pub(super) fn f16_to_f32_avx512(src: &[u16], dst: &mut [u32]) {
    blocks(src, dst, |x: [u16; 16]| {
        let widened: [u32; 16] = bytemuck::cast(_mm512_cvtph_ps(bytemuck::cast(x)));
        core::array::from_fn(|k| keep_signalling(x[k], widened[k]))
    });
}

/// AVX512-BF16 `vcvtneps2bf16 zmm`: f32 bits → bfloat16 bits. Intel documents it as
/// round to nearest even with denormal inputs taken as zero and no exceptions; what it
/// does on every input is what `tests/tests/cpu_levels.rs` counts.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512bf16")]
pub(super) fn f32_to_bf16_avx512bf16(src: &[u32], dst: &mut [u16]) {
    blocks(src, dst, |x: [u32; 16]| bytemuck::cast(_mm512_cvtneps_pbh(bytemuck::cast(x))));
}

/// Whether the CPU has what [`f32_to_bf16_avx512bf16`] needs.
pub(super) fn has_avx512bf16() -> bool {
    Level::Avx512.check("").is_ok() && is_x86_feature_detected!("avx512bf16")
}

/// The instruction forms by name, each `Some` only when this CPU can run it.
pub(super) fn f32_to_f16_instruction(level: Level) -> Option<SliceFn<u32, u16>> {
    match level {
        // SAFETY (both): the level's features, checked by the guard, are the ones the
        // function enables.
        Level::Avx2 if level.check("").is_ok() => Some(|s, d| unsafe { f32_to_f16_f16c(s, d) }),
        Level::Avx512 if level.check("").is_ok() => Some(|s, d| unsafe { f32_to_f16_avx512(s, d) }),
        _ => None,
    }
}

/// See [`f32_to_f16_instruction`].
pub(super) fn f16_to_f32_instruction(level: Level) -> Option<SliceFn<u16, u32>> {
    match level {
        // SAFETY (both): the level's features, checked by the guard, are the ones the
        // function enables.
        Level::Avx2 if level.check("").is_ok() => Some(|s, d| unsafe { f16_to_f32_f16c(s, d) }),
        Level::Avx512 if level.check("").is_ok() => Some(|s, d| unsafe { f16_to_f32_avx512(s, d) }),
        _ => None,
    }
}

/// See [`f32_to_f16_instruction`]: `vcvtneps2bf16`, at [`Level::Avx512`] on a CPU with
/// AVX512-BF16.
pub(super) fn f32_to_bf16_instruction(level: Level) -> Option<SliceFn<u32, u16>> {
    match level {
        // SAFETY: the guard checked avx512bf16 and the level's features.
        Level::Avx512 if has_avx512bf16() => Some(|s, d| unsafe { f32_to_bf16_avx512bf16(s, d) }),
        _ => None,
    }
}
