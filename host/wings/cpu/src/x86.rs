//! x86-64: the functions compiled with each level's `#[target_feature]`s, and the
//! conversion instructions of F16C, AVX-512F and AVX512-BF16 over slices.
//!
//! The only `unsafe` of the CPU loops: calling a `#[target_feature]` function, done only
//! after [`Level::check`] (or `is_x86_feature_detected!`) found every feature it enables.
//! The instructions themselves are called through `std::arch`'s safe intrinsics, on
//! arrays cast to and from vector types with `bytemuck` (no pointers).
#![allow(unsafe_code)]

use super::{Level, LevelLoop, SliceFn};
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

/// `Some` of a form that needs AVX2, FMA and F16C (and no more) where `level` is avx2 or
/// avx512 and the CPU has them, else `None`: the guard of every such form's selector.
macro_rules! at_avx2_and_above {
    ($level:expr, $form:ident) => {
        match $level {
            // SAFETY: the guard checked the features `$form` enables (avx512 includes them).
            Level::Avx2 | Level::Avx512 if Level::Avx2.check("").is_ok() => Some(|s, d| unsafe { $form(s, d) }),
            _ => None,
        }
    };
}

/// F16C's immediate: round to nearest, ties to even, whatever MXCSR says (bit 2 clear:
/// the immediate's mode). Exceptions stay masked, as Rust leaves MXCSR.
const NEAREST: i32 = _MM_FROUND_TO_NEAREST_INT;
/// AVX-512's: the same, and suppress all exceptions.
const NEAREST_NO_EXC: i32 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

/// `dst[i] = f(src[i])` over `min(src.len(), dst.len())` elements, `N` at a time by
/// `block`: the elements before `dst`'s first cache-line boundary, then the rest, so
/// that the rest's vector stores each fall within one line ([`super::split_at_line`]).
/// The results are [`blocks_anywhere`]'s.
#[inline(always)]
fn blocks<I: bytemuck::Pod, O: bytemuck::Pod, const N: usize>(
    src: &[I],
    dst: &mut [O],
    block: impl Fn([I; N]) -> [O; N],
) {
    let ((s_head, d_head), (s_rest, d_rest)) = super::split_at_line(src, dst);
    blocks_anywhere(s_head, d_head, &block);
    blocks_anywhere(s_rest, d_rest, &block);
}

/// `dst[i] = f(src[i])` over `min(src.len(), dst.len())` elements, `N` at a time by
/// `block`; the tail goes through `block` too, padded with zeros, so that every element
/// is converted by the same instruction.
#[inline(always)]
fn blocks_anywhere<I: bytemuck::Pod, O: bytemuck::Pod, const N: usize>(
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

/// bfloat16 bits → binary16 bits in one pass: each bfloat16 widened exactly in a register
/// (`vpmovzxwd`, `vpslld 16`: [`shared::bfloat16::to_f32_bits`]), then F16C
/// `vcvtps2ph ymm`, [`f32_to_f16_f16c`]'s instruction; no f32 reaches memory.
#[target_feature(enable = "avx2,fma,f16c")]
fn bf16_to_f16_f16c(src: &[u16], dst: &mut [u16]) {
    blocks(src, dst, |b: [u16; 8]| {
        let widened = _mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(bytemuck::cast(b)));
        bytemuck::cast(_mm256_cvtps_ph::<NEAREST>(_mm256_castsi256_ps(widened)))
    });
}

/// The fused form of bfloat16 → binary16 ([`bf16_to_f16_f16c`]), at [`Level::Avx2`] and
/// above on a CPU that has them.
pub(super) fn bf16_to_f16_instruction(level: Level) -> Option<SliceFn<u16, u16>> {
    at_avx2_and_above!(level, bf16_to_f16_f16c)
}

/// The quiet bit of an f32 NaN (bit 22), which `vcvtph2ps` sets on every NaN.
const F32_QUIET: i32 = 0x0040_0000;
/// binary16: sign cleared, and the bounds of the signalling NaNs between them
/// (exponent all ones, payload non-zero, its top bit clear: `0x7C01..=0x7DFF`).
const F16_ABS: i16 = 0x7FFF;
const F16_INF: i16 = 0x7C00;
const F16_QUIET_NAN: i16 = 0x7E00;

/// F16C `vcvtph2ps ymm` of 8 binary16 encodings, with the quiet bit cleared again where
/// the input is a signalling NaN: `vcvtph2ps` makes such a NaN quiet, where the exact
/// widening keeps every payload bit; every other result of it is already the exact
/// widening (`host/wings/cpu/src/tests/cpu_levels.rs` proves the whole on every encoding).
///
/// The signalling inputs are found on the 16-bit lanes (`F16_INF < |b| < F16_QUIET_NAN`,
/// two compares) and the mask is sign-extended once to the 32-bit lanes: in a loop in
/// cache this costs about 1.5× the bare instruction, where LLVM's vectorisation of the
/// same test written per element (a pack, an extract and two sign-extensions per 8)
/// cost 2.3×.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn f16x8_to_f32_f16c(b: [u16; 8]) -> [u32; 8] {
    let b: __m128i = bytemuck::cast(b);
    let abs = _mm_and_si128(b, _mm_set1_epi16(F16_ABS));
    let signalling = _mm_and_si128(
        _mm_cmpgt_epi16(abs, _mm_set1_epi16(F16_INF)),
        _mm_cmpgt_epi16(_mm_set1_epi16(F16_QUIET_NAN), abs),
    );
    let clear = _mm256_and_si256(_mm256_cvtepi16_epi32(signalling), _mm256_set1_epi32(F32_QUIET));
    bytemuck::cast(_mm256_andnot_si256(clear, _mm256_castps_si256(_mm256_cvtph_ps(b))))
}

/// F16C `vcvtph2ps ymm`: binary16 bits → f32 bits, signalling NaNs kept
/// ([`f16x8_to_f32_f16c`]).
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn f16_to_f32_f16c(src: &[u16], dst: &mut [u32]) {
    blocks(src, dst, |b| f16x8_to_f32_f16c(b));
}

/// `dst[i]` = `vcvtps2ph(quotient(src[i]))` over `min(src.len(), dst.len())` elements:
/// the quotients go into a small f32 tile in a loop the compiler vectorises (widening the
/// codes with `vpmovzx`), then [`f32_to_f16_f16c`] converts the tile.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn then_f32_to_f16_f16c<I: Copy>(src: &[I], dst: &mut [u16], quotient: impl Fn(I) -> f32) {
    const TILE: usize = 512;
    let mut tile = [0u32; TILE];
    for (s, d) in src.chunks(TILE).zip(dst.chunks_mut(TILE)) {
        for (t, &x) in tile.iter_mut().zip(s) {
            *t = quotient(x).to_bits();
        }
        let n = s.len().min(d.len());
        f32_to_f16_f16c(&tile[..n], &mut d[..n]);
    }
}

/// UNORM8 → binary16 bits: `vcvtps2ph ymm` of [`shared::unorm8::times3_int`] (the
/// correctly rounded f32 quotient `x / 255`): `unorm8_to_f16_via_f32` with the instruction
/// for its second rounding, exact on every code (`host/wings/cpu/src/tests/cpu_levels.rs`).
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn unorm8_to_f16_f16c(src: &[u8], dst: &mut [u16]) {
    then_f32_to_f16_f16c(src, dst, shared::unorm8::times3_int);
}

/// UNORM16 → binary16 bits: `vcvtps2ph ymm` of [`shared::unorm_narrow::unorm16_to_f32_sticky`]
/// (the f32 quotient `x / 65535` made odd on the right side: never a binary16 midpoint),
/// exact on every code (`host/wings/cpu/src/tests/cpu_levels.rs`).
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn unorm16_to_f16_f16c(src: &[u16], dst: &mut [u16]) {
    then_f32_to_f16_f16c(src, dst, shared::unorm_narrow::unorm16_to_f32_sticky);
}

/// AVX-512F `vcvtps2ph zmm` (round to nearest even): f32 bits → binary16 bits.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
pub(super) fn f32_to_f16_avx512(src: &[u32], dst: &mut [u16]) {
    blocks(src, dst, |x: [u32; 16]| bytemuck::cast(_mm512_cvtps_ph::<NEAREST_NO_EXC>(bytemuck::cast(x))));
}

/// AVX-512F `vcvtph2ps zmm` of 16 binary16 encodings, signalling NaNs kept as in
/// [`f16x8_to_f32_f16c`], here by a mask register: one unsigned compare of the 16-bit
/// lanes (`|b| - 0x7C01 < 0x1FF`, AVX512-BW/VL) gives one bit per element, in element
/// order, and a masked `vpandd` clears the quiet bit of those elements. No shuffle: in a
/// loop in cache it costs about what the bare instruction does.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
fn f16x16_to_f32_avx512(b: [u16; 16]) -> [u32; 16] {
    let b: __m256i = bytemuck::cast(b);
    let above_inf = _mm256_sub_epi16(_mm256_and_si256(b, _mm256_set1_epi16(F16_ABS)), _mm256_set1_epi16(F16_INF + 1));
    let signalling = _mm256_cmplt_epu16_mask(above_inf, _mm256_set1_epi16(F16_QUIET_NAN - F16_INF - 1));
    let widened = _mm512_castps_si512(_mm512_cvtph_ps(b));
    bytemuck::cast(_mm512_mask_and_epi32(widened, signalling, widened, _mm512_set1_epi32(!F32_QUIET)))
}

/// AVX-512F `vcvtph2ps zmm`: binary16 bits → f32 bits, signalling NaNs kept
/// ([`f16x16_to_f32_avx512`]).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
pub(super) fn f16_to_f32_avx512(src: &[u16], dst: &mut [u32]) {
    blocks(src, dst, |b| f16x16_to_f32_avx512(b));
}

/// AVX512-BF16 `vcvtneps2bf16 zmm`: f32 bits → bfloat16 bits. Intel documents it as
/// round to nearest even with denormal inputs taken as zero and no exceptions; what it
/// does on every input is what `host/wings/cpu/src/tests/cpu_levels.rs` counts.
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

/// The F16C form of UNORM8 → binary16 ([`unorm8_to_f16_f16c`]), at [`Level::Avx2`] and
/// above on a CPU that has them.
pub(super) fn unorm8_to_f16_instruction(level: Level) -> Option<SliceFn<u8, u16>> {
    at_avx2_and_above!(level, unorm8_to_f16_f16c)
}

/// The F16C form of UNORM16 → binary16 ([`unorm16_to_f16_f16c`]): see
/// [`unorm8_to_f16_instruction`].
pub(super) fn unorm16_to_f16_instruction(level: Level) -> Option<SliceFn<u16, u16>> {
    at_avx2_and_above!(level, unorm16_to_f16_f16c)
}

/// `dst[i] = f(src[i])` as [`blocks`] computes it, `N` results (32 bytes) at a time, the
/// blocks that fall on 32-byte-aligned addresses of `dst` stored with the non-temporal
/// `vmovntdq`: the stores bypass the caches, so no line of `dst` is read before it is
/// written (as glibc's `memcpy` does for large copies). The caller ends with `sfence`
/// (once: each one waits for the stores to drain), so that the stores are ordered before
/// anything its thread does next. The results are `block`'s; only the way they reach
/// memory differs.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn blocks_streaming<I: bytemuck::Pod, O: bytemuck::Pod, const N: usize>(
    src: &[I],
    dst: &mut [O],
    block: impl Fn([I; N]) -> [O; N],
) {
    const { assert!(N * size_of::<O>() == 32, "one block is one 32-byte store") };
    let n = src.len().min(dst.len());
    let head = dst.as_ptr().align_offset(32).min(n); // in elements
    let (src, dst) = (&src[..n], &mut dst[..n]);
    let (s_head, src) = src.split_at(head);
    let (d_head, dst) = dst.split_at_mut(head);
    blocks_anywhere(s_head, d_head, &block);
    let (s, s_tail) = src.as_chunks::<N>();
    let (d, d_tail) = dst.as_chunks_mut::<N>();
    for (s, d) in s.iter().zip(d) {
        let result = block(*s);
        let bytes: [u8; 32] = bytemuck::cast_slice(&result)[0];
        let value: __m256i = bytemuck::cast(bytes);
        let address: *mut __m256i = d.as_mut_ptr().cast();
        // SAFETY: `address` points to the 32 bytes of `d`, held mutably here, and is
        // 32-byte aligned: `dst` starts at the aligned element `head`, and each `d` is
        // 32 bytes further on. AVX is among this function's features.
        unsafe { _mm256_stream_si256(address, value) };
    }
    blocks_anywhere(s_tail, d_tail, &block);
}

/// [`unorm16_to_f16_f16c`]'s results, the 32-byte-aligned blocks of `dst` stored around
/// the caches with `vmovntdq` (see [`blocks_streaming`]), each computed in registers.
/// Written out rather than through [`blocks_streaming`]: a block closure that calls
/// `vcvtps2ph` is not inlined into the loop (a call per block, 0.5× memcpy measured), and
/// marking it `#[inline(always)]` drops this function's features from it (`fmaf` calls);
/// an f32 tile between the two steps was slower too (0.4–0.6×).
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn unorm16_to_f16_f16c_streaming(src: &[u16], dst: &mut [u16]) {
    let n = src.len().min(dst.len());
    let head = dst.as_ptr().align_offset(32).min(n); // in elements
    let (src, dst) = (&src[..n], &mut dst[..n]);
    let (s_head, src) = src.split_at(head);
    let (d_head, dst) = dst.split_at_mut(head);
    unorm16_to_f16_f16c(s_head, d_head);
    let (s, s_tail) = src.as_chunks::<16>();
    let (d, d_tail) = dst.as_chunks_mut::<16>();
    for (s, d) in s.iter().zip(d) {
        let sticky: [u32; 16] = core::array::from_fn(|k| shared::unorm_narrow::unorm16_to_f32_sticky(s[k]).to_bits());
        let [low, high]: [[u32; 8]; 2] = bytemuck::cast(sticky);
        let low = _mm256_cvtps_ph::<NEAREST>(bytemuck::cast(low));
        let high = _mm256_cvtps_ph::<NEAREST>(bytemuck::cast(high));
        let address: *mut __m256i = d.as_mut_ptr().cast();
        // SAFETY: `address` points to the 32 bytes of `d`, held mutably here, and is
        // 32-byte aligned: `dst` starts at the aligned element `head`, and each `d` is
        // 32 bytes further on. AVX is among this function's features.
        unsafe { _mm256_stream_si256(address, _mm256_set_m128i(high, low)) };
    }
    unorm16_to_f16_f16c(s_tail, d_tail);
    _mm_sfence();
}

/// [`shared::unorm_narrow::unorm16_to_bf16_half_up`] over the slices, stored around the
/// caches ([`blocks_streaming`]).
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn unorm16_to_bf16_streaming(src: &[u16], dst: &mut [u16]) {
    blocks_streaming(
        src,
        dst,
        #[inline(always)]
        |x: [u16; 16]| core::array::from_fn(|k| shared::unorm_narrow::unorm16_to_bf16_half_up(x[k])),
    );
    _mm_sfence();
}

/// The streaming forms of UNORM16 → binary16 / bfloat16, at [`Level::Avx2`] and above on
/// a CPU that has them.
pub(super) fn unorm16_to_f16_streaming_instruction(level: Level) -> Option<SliceFn<u16, u16>> {
    at_avx2_and_above!(level, unorm16_to_f16_f16c_streaming)
}

/// See [`unorm16_to_f16_streaming_instruction`].
pub(super) fn unorm16_to_bf16_streaming_avx2(level: Level) -> Option<SliceFn<u16, u16>> {
    at_avx2_and_above!(level, unorm16_to_bf16_streaming)
}

/// binary16 → f32 for large outputs: [`f16x8_to_f32_f16c`]'s results (the exact form,
/// signalling NaNs kept) stored around the caches ([`blocks_streaming`]). Written the
/// same way at avx512: the loop is bound by memory, and a 32-byte store per 8 elements
/// keeps up with it.
#[target_feature(enable = "avx2,fma,f16c")]
fn f16_to_f32_f16c_streaming(src: &[u16], dst: &mut [u32]) {
    blocks_streaming(src, dst, |b: [u16; 8]| f16x8_to_f32_f16c(b));
    _mm_sfence();
}

/// bfloat16 → f32 for large outputs: `shared::bfloat16::to_f32_bits` (the variant the
/// software form runs) stored around the caches ([`blocks_streaming`]).
#[target_feature(enable = "avx2,fma,f16c")]
fn bf16_to_f32_avx2_streaming(src: &[u16], dst: &mut [u32]) {
    blocks_streaming(
        src,
        dst,
        #[inline(always)]
        |b: [u16; 8]| core::array::from_fn(|k| shared::bfloat16::to_f32_bits(b[k])),
    );
    _mm_sfence();
}

/// The streaming form of binary16 → f32 ([`f16_to_f32_f16c_streaming`]), at
/// [`Level::Avx2`] and above on a CPU that has them.
pub(super) fn f16_to_f32_streaming(level: Level) -> Option<SliceFn<u16, u32>> {
    at_avx2_and_above!(level, f16_to_f32_f16c_streaming)
}

/// The streaming form of bfloat16 → f32 ([`bf16_to_f32_avx2_streaming`]), as
/// [`f16_to_f32_streaming`].
pub(super) fn bf16_to_f32_streaming(level: Level) -> Option<SliceFn<u16, u32>> {
    at_avx2_and_above!(level, bf16_to_f32_avx2_streaming)
}

/// F16C `vcvtps2ph ymm` twice: 16 f32 bits → 16 binary16 bits, one 32-byte block of
/// [`f32_to_f16_f16c_streaming`]. A function of its own, so that the block inlines into
/// the loop with its features (a closure calling the intrinsic directly did not).
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
fn f32x16_to_f16_f16c(x: [u32; 16]) -> [u16; 16] {
    let [low, high]: [[u32; 8]; 2] = bytemuck::cast(x);
    let low = _mm256_cvtps_ph::<NEAREST>(bytemuck::cast(low));
    let high = _mm256_cvtps_ph::<NEAREST>(bytemuck::cast(high));
    bytemuck::cast(_mm256_set_m128i(high, low))
}

/// f32 → binary16 for large outputs: [`f32_to_f16_f16c`]'s results (`vcvtps2ph`, the
/// exact form) stored around the caches ([`blocks_streaming`]).
#[target_feature(enable = "avx2,fma,f16c")]
fn f32_to_f16_f16c_streaming(src: &[u32], dst: &mut [u16]) {
    blocks_streaming(src, dst, |x: [u32; 16]| f32x16_to_f16_f16c(x));
    _mm_sfence();
}

/// The streaming form of f32 → binary16 ([`f32_to_f16_f16c_streaming`]), as
/// [`f16_to_f32_streaming`].
pub(super) fn f32_to_f16_streaming(level: Level) -> Option<SliceFn<u32, u16>> {
    at_avx2_and_above!(level, f32_to_f16_f16c_streaming)
}
