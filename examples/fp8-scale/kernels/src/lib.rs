//! A block-level kernel crate of one's own, the second worked example of
//! docs/own-kernel.md: per-tensor scaled FP8 (E4M3 and E5M2) in two passes, on
//! `shared::fp8_scale`'s definitions.
//!
//! * Pass 1, [`fp8_amax`] (declared as [`Amax`]): `amax = max |x|` over the tensor, by a grid-stride loop, warp
//!   shuffles, shared memory and one atomic per block; a NaN or infinity is reported
//!   with its index (the smallest such), not hidden in the max.
//! * Pass 2, [`fp8_quantize_e4m3_once`] and its three siblings (declared as
//!   [`QuantizeE4m3Once`], …): the scale `s = fl32(max / amax)` (each thread computes it
//!   from pass 1's result), `q[i] = sat_rne(x[i] · s)` rounded [`Rounding::Once`] or
//!   [`Rounding::TwoStep`], and the dequantisation scale `fl32(1 / s)` written by thread 0.
//!
//! * [`fp8_dequantize_e4m3`] and [`fp8_dequantize_e5m2`]: `y = fl32(value(q) · dequant)`,
//!   a kernel with a scalar argument.
//!
//! Each kernel is declared once with [`shared::kernel!`]: on nvptx64 it is the
//! `extern "ptx-kernel"` entry point, on the host the same function as an ordinary
//! `unsafe fn`, which `device_support::emulator` runs as real blocks (barriers, shared
//! memory, warps of 32, atomics); its marker type gives `bitexact::gpu` the typed launch,
//! checked against this crate's PTX. [`amax`] and [`quantize`] are the CPU twin, from
//! the same `shared` functions.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

use device_support::block::{self, AtomicInteger, Scope};
pub use shared::fp8_scale::{Fp8Format, Rounding};
#[cfg(not(target_arch = "nvptx64"))]
use shared::fp8_scale::{Residual, amax_slice, quantize_slice};
use shared::fp8_scale::{dequant_scale, is_nonfinite, magnitude_bits, quantize as quantize_one, scale_for};

device_support::trap_on_panic!();

// The CPU twin detects AVX2 at run time (host only; the kernels never use std).
#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

// One partial maximum per warp of the block (at most 32 warps of 32).
device_support::static_shared!(fn warp_maxima: [u32; 32]);

shared::kernel! {
    /// Pass 1's declaration: `fp8_amax(x, n, amax, first_nonfinite)`.
    pub struct Amax;
    /// Pass 1: raises `amax[0]` to the largest `|x[i]|` (as magnitude bits,
    /// [`magnitude_bits`]) over `i < n`, and lowers `first_nonfinite[0]` to the smallest
    /// `i` whose `x[i]` is NaN or infinite. One device-scope atomic max per block (after
    /// a block reduction: warp shuffles, then the warps' maxima through static shared
    /// memory), one atomic min per thread that met a non-finite value.
    ///
    /// # Safety
    /// `x` is a device pointer to `n` f32 (bits); `amax` to one `u32` (0 before the first
    /// launch), `first_nonfinite` to one `u64` (`u64::MAX` before); the launch is 1-D with
    /// a block size that is a multiple of 32, at most 1024, and every thread of the block
    /// runs this kernel to its end (it holds block barriers).
    pub unsafe fn fp8_amax(x: *const u32, n: u64, amax: *mut u32, first_nonfinite: *mut u64) {
        let (mut local, mut first) = (0u32, u64::MAX);
        device_support::grid_stride(block::lane_x(), n, |i| {
            // SAFETY: `i < n`, and `x` holds `n` values.
            let magnitude = magnitude_bits(unsafe { x.add(i).read() });
            local = local.max(magnitude);
            // A lane visits its indices in increasing order: its first is its smallest.
            if is_nonfinite(magnitude) && first == u64::MAX {
                first = i as u64;
            }
        });
        if first != u64::MAX {
            // SAFETY: `first_nonfinite` is one u64 that every access reaches atomically.
            unsafe { u64::atomic_min(first_nonfinite, first, Scope::Device) };
        }
        // SAFETY: every thread of the block runs this call (the contract); the block size
        // is a multiple of 32 and at most 1024, so 32 partials fit, and nothing else
        // touches them.
        let block_max = unsafe { block::block_max_u32(local, warp_maxima()) };
        if block::thread_rank() == 0 {
            // SAFETY: `amax` is one u32 that every access reaches atomically.
            unsafe { u32::atomic_max(amax, block_max, Scope::Device) };
        }
    }
}

/// Pass 2: `q[i] = sat_rne(x[i] · s)` for `i < n`, rounded as `rounding`, with `s =
/// fl32(max / amax)` from pass 1's `amax[0]` ([`scale_for`]), four elements per lane per
/// step (coalesced); global thread 0 writes `fl32(1 / s)` to `dequant[0]`.
///
/// # Safety
/// `x` is a device pointer to `n` f32 (bits), `q` to `n` bytes, `amax` to pass 1's
/// result (a finite magnitude: the caller checked `first_nonfinite`), `dequant` to one
/// f32; the launch is 1-D.
#[inline(always)]
unsafe fn quantize_body(
    x: *const u32,
    q: *mut u8,
    n: u64,
    amax: *const u32,
    dequant: *mut f32,
    format: Fp8Format,
    rounding: Rounding,
) {
    // SAFETY: `amax` points to one u32, written by pass 1 before this launch.
    let s = scale_for(f32::from_bits(unsafe { amax.read() }), format);
    let lane = block::lane_x();
    if lane.index == 0 {
        // SAFETY: `dequant` points to one f32 that only this thread writes.
        unsafe { dequant.write(dequant_scale(s)) };
    }
    // SAFETY: `x` and `q` hold `n` elements each.
    unsafe { device_support::stream_with(lane, x, q, n, |v| quantize_one(v, s, format, rounding)) };
}

macro_rules! quantize_kernels {
    ($($marker:ident = $name:ident: $format:ident, $rounding:ident;)*) => {$(
        shared::kernel! {
            #[doc = concat!("Pass 2's declaration for ", stringify!($format), ", rounding ", stringify!($rounding), ".")]
            pub struct $marker;
            #[doc = concat!("Pass 2 for ", stringify!($format), ", rounding ", stringify!($rounding), ": `q[i] = sat_rne(x[i] · s)`, `s = fl32(max / amax[0])`, `dequant[0] = fl32(1 / s)`.")]
            ///
            /// # Safety
            /// `x` is a device pointer to `n` f32 (bits), `q` to `n` bytes, `amax` to pass
            /// 1's result (a finite magnitude), `dequant` to one f32; the launch is 1-D.
            pub unsafe fn $name(x: *const u32, q: *mut u8, n: u64, amax: *const u32, dequant: *mut f32) {
                // SAFETY: forwarded from the launch's contract.
                unsafe { quantize_body(x, q, n, amax, dequant, Fp8Format::$format, Rounding::$rounding) }
            }
        }
    )*};
}

quantize_kernels! {
    QuantizeE4m3Once = fp8_quantize_e4m3_once: E4M3, Once;
    QuantizeE4m3TwoStep = fp8_quantize_e4m3_two_step: E4M3, TwoStep;
    QuantizeE5m2Once = fp8_quantize_e5m2_once: E5M2, Once;
    QuantizeE5m2TwoStep = fp8_quantize_e5m2_two_step: E5M2, TwoStep;
}

macro_rules! dequantize_kernels {
    ($($marker:ident = $name:ident: $format:ident;)*) => {$(
        shared::kernel! {
            #[doc = concat!("The dequantisation's declaration for ", stringify!($format), ": a kernel with a scalar argument.")]
            pub struct $marker;
            #[doc = concat!("`y[i] = fl32(value(q[i]) · dequant)` for `i < n`, ", stringify!($format), " codes.")]
            ///
            /// # Safety
            /// `q` is a device pointer to `n` bytes, `y` to `n` f32 (bits); the launch is 1-D.
            pub unsafe fn $name(q: *const u8, y: *mut u32, n: u64, dequant: f32) {
                let lane = block::lane_x();
                let widen = |b: u8| (f32::from_bits(Fp8Format::$format.to_f32_bits(b)) * dequant).to_bits();
                // SAFETY: forwarded from the launch's contract.
                unsafe { device_support::stream_with(lane, q, y, n, widen) }
            }
        }
    )*};
}

dequantize_kernels! {
    DequantizeE4m3 = fp8_dequantize_e4m3: E4M3;
    DequantizeE5m2 = fp8_dequantize_e5m2: E5M2;
}

/// A NaN or infinity in the tensor: the smallest index holding one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NonFinite {
    pub index: u64,
}

/// The CPU twin of pass 1: `max |x|` (as magnitude bits), or the first non-finite value's
/// index. Equal to the kernel's results on every input (the example's tests run both).
/// [`shared::fp8_scale::amax_slice`], the loop `bitexact::cpu::fp8_scale::amax` runs too;
/// on x86-64 with AVX2 (detected at run time) compiled for AVX2.
#[cfg(not(target_arch = "nvptx64"))]
pub fn amax(x: &[u32]) -> Result<u32, NonFinite> {
    // `bitexact::cpu::fp8_scale::amax`'s loop: one vectorised max, the rest only where it
    // says a NaN or infinity is there.
    match with_avx2_if_present(|| amax_slice(x)) {
        (max, None) => Ok(max),
        (_, Some(index)) => Err(NonFinite { index: index as u64 }),
    }
}

/// `f()`, compiled for AVX2 where the CPU has it (a loop inlined into it is then
/// vectorised with AVX2), else as it is.
#[cfg(not(target_arch = "nvptx64"))]
#[inline(always)]
fn with_avx2_if_present<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2")]
        fn avx2<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (detected just above).
            return unsafe { avx2(f) };
        }
    }
    f()
}

/// The CPU twin of pass 2: `q[i] = sat_rne(x[i] · s)` with `s = fl32(max / amax)`, and
/// returns `(s, fl32(1 / s))`. Through [`shared::fp8_scale::quantize_slice`], the
/// branch-free forms equal to [`shared::fp8_scale::quantize`] on every f32
/// (`tests/tests/fp8_scale.rs`), which LLVM vectorises: compiled for AVX2 and FMA where
/// the CPU has them (detected at run time; `Once` then finds the product's rounding
/// error by FMA), else for the baseline (`Once` by the f64 product). The kernels' results
/// equal these (the example's emulator and GPU tests).
///
/// # Panics
/// If `q` is shorter than `x`.
#[cfg(not(target_arch = "nvptx64"))]
pub fn quantize(x: &[u32], amax: u32, format: Fp8Format, rounding: Rounding, q: &mut [u8]) -> (f32, f32) {
    let s = scale_for(f32::from_bits(amax), format);
    let q = &mut q[..x.len()];
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has AVX2 and FMA (detected just above).
        unsafe { quantize_avx2_fma(x, s, format, rounding, q) };
        return (s, dequant_scale(s));
    }
    quantize_slice(x, s, format, rounding, Residual::F64, q);
    (s, dequant_scale(s))
}

/// [`quantize_slice`] compiled for AVX2 and FMA (it is `#[inline(always)]`, so its loops
/// are vectorised with them), the product's error found by FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn quantize_avx2_fma(x: &[u32], s: f32, format: Fp8Format, rounding: Rounding, q: &mut [u8]) {
    quantize_slice(x, s, format, rounding, Residual::Fma, q);
}
