//! A kernel crate of one's own for the block-scaled formats that checkpoints ship in, the
//! third worked example of docs/own-kernel.md: MXFP8, FP8 in 128 × 128 tiles (or per
//! row), and NVFP4, each on `shared`'s definitions, the same functions `bitexact cast`
//! runs on the CPU.
//!
//! * **MXFP8**, [`mx_e4m3_fit`] and its siblings (declared as [`MxE4m3Fit`], …, one per
//!   element format and [`ScaleRule`]): one warp per group of 32 consecutive values, a
//!   shuffle max of the magnitudes, the E8M0 scale ([`shared::mx::scale_code`]) written by
//!   the group's lane 0, each element [`shared::mx::quantize`]d by its lane.
//! * **FP8 blocks**, [`fp8_tiles_e4m3_exact`] and its siblings (declared as
//!   [`Fp8TilesE4m3Exact`], …, one per format and [`Recipe`], the bfloat16 scales and
//!   compressed-tensors' for E4M3 only, the latter for f32 and for bfloat16 weights): one
//!   thread block per tile of
//!   `tile_rows × tile_cols` (128 × 128 for DeepSeek's and compressed-tensors' `block`, or
//!   `1 × cols` per row), the amax of its finite values by a shared-memory reduction, the
//!   scale by the recipe ([`shared::fp8_block`]) written by thread 0, each element by the
//!   recipe; a grid-stride loop over the tiles.
//! * **NVFP4** in two passes: [`nvfp4_amax`] (declared as [`Nvfp4Amax`]), the tensor's
//!   largest finite magnitude; then [`nvfp4_exact`] and its siblings (declared as
//!   [`Nvfp4Exact`], …, one per [`Nvfp4Recipe`], and per [`WeightDtype`] for
//!   compressed-tensors'), where each thread computes the tensor scale from pass 1's
//!   amax ([`shared::nvfp4::tensor_scale`]), each half-warp takes a group of 16 (a shuffle
//!   max, the E4M3 block scale), and each even lane packs its code with its odd
//!   neighbour's (a shuffle) into one byte, the even index in the low nibble.
//!
//! The MXFP8 and tile kernels and NVFP4's pass 1 lower `first_nonfinite[0]` to the
//! smallest index of a NaN or infinity they met (one atomic min per thread that met
//! one), for the caller that refuses such tensors, as `bitexact cast` does. MXFP8 and
//! NVFP4 groups holding one get the NaN scale code, as the CPU forms set it.
//!
//! **The CPU twins are `shared`'s own** block functions, which `bitexact cast` runs:
//! [`shared::mx::quantize_blocks`], [`shared::fp8_block::quantize_blocks_with`],
//! [`shared::fp8_scale::amax_slice`] and [`shared::nvfp4::quantize_blocks`]. The
//! example's tests run each kernel under `device_support::emulator` (and on a GPU where
//! there is one) against them, bit for bit. [`mx_kernel`], [`fp8_tiles_kernel`] and
//! [`nvfp4_kernel`] name the kernel (and, on the host, give its body) for a choice of
//! format and rule.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

use device_support::block::{self, AtomicInteger, FULL_MASK, Scope};
use shared::fp4::e2m1;
use shared::fp8::e4m3;
pub use shared::fp8_block::Recipe;
use shared::fp8_block::{
    bf16_scale_for, compressed_tensors_quantize, compressed_tensors_scale, deepgemm_scale, deepgemm_ue8m0_scale,
    dequant_scale_for, quantize_quotient, ue8m0_scale_for,
};
pub use shared::fp8_scale::Fp8Format;
use shared::fp8_scale::{Rounding, is_nonfinite, magnitude_bits};
pub use shared::mx::ScaleRule;
use shared::mx::{self, ElementFormat};
use shared::nvfp4;
pub use shared::nvfp4::{Nvfp4Recipe, WeightDtype};

device_support::trap_on_panic!();

/// Lowers `first_nonfinite[0]` to `first` where the calling thread met a NaN or an
/// infinity (`first` is then below `u64::MAX`).
///
/// # Safety
/// `first_nonfinite` points to one `u64` that every access reaches atomically.
#[inline(always)]
unsafe fn report_nonfinite(first_nonfinite: *mut u64, first: u64) {
    if first != u64::MAX {
        // SAFETY: forwarded from the caller.
        unsafe { u64::atomic_min(first_nonfinite, first, Scope::Device) };
    }
}

/// The MX element format of an FP8 format.
#[inline(always)]
const fn mx_element(format: Fp8Format) -> ElementFormat {
    match format {
        Fp8Format::E4M3 => ElementFormat::E4M3,
        Fp8Format::E5M2 => ElementFormat::E5M2,
    }
}

// ---------------------------------------------------------------------------------------
// MXFP8: a warp per group of 32.

/// MXFP8 over `x[..n]`: group `j` (elements `32j .. 32j + 32`, the last one partial) is
/// taken by one warp, lane `l` holding element `32j + l` (0 past `n`, as the CPU form
/// pads); the warp's shuffle max of the magnitudes is the group's amax (a NaN or infinity
/// wins it, so the group's scale is the NaN code), lane 0 writes `scales[j]`, and each
/// lane its `q`. The warps stride over the groups.
///
/// # Safety
/// `x` is a device pointer to `n` f32 (bits), `q` to `n` bytes, `scales` to `⌈n / 32⌉`
/// bytes, `first_nonfinite` to one `u64` (`u64::MAX` before the launch); the launch is
/// 1-D with a block size that is a multiple of 32 (every lane of a warp runs the same
/// iterations: the shuffles need the whole warp).
#[inline(always)]
unsafe fn mx_body(
    x: *const u32,
    q: *mut u8,
    scales: *mut u8,
    n: u64,
    first_nonfinite: *mut u64,
    format: Fp8Format,
    rule: ScaleRule,
) {
    let element = mx_element(format);
    let lane = block::lane_x();
    let (warp, warps, lane_in_warp) = (lane.index >> 5, lane.lanes >> 5, u64::from(block::lane_id()));
    let groups = n.div_ceil(mx::BLOCK_SIZE as u64);
    let mut first = u64::MAX;
    let mut group = warp;
    while group < groups {
        let i = group * mx::BLOCK_SIZE as u64 + lane_in_warp;
        // SAFETY: `i < n`, and `x` holds `n` values.
        let value = if i < n { unsafe { x.add(i as usize).read() } } else { 0 };
        if is_nonfinite(value) && first == u64::MAX {
            // A lane visits its indices in increasing order: its first is its smallest.
            first = i;
        }
        // SAFETY: every lane of the warp runs this iteration (`group` is the warp's).
        let amax = unsafe { block::warp_max_u32(magnitude_bits(value)) };
        let scale = mx::scale_code(amax, element, rule);
        if i < n {
            // SAFETY: `i < n`, and `q` holds `n` bytes; only this lane writes it.
            unsafe { q.add(i as usize).write(mx::quantize(value, scale, element)) };
        }
        if lane_in_warp == 0 {
            // SAFETY: `group < ⌈n / 32⌉`, the length of `scales`; only this lane writes it.
            unsafe { scales.add(group as usize).write(scale) };
        }
        group = match group.checked_add(warps) {
            Some(next) => next,
            None => break,
        };
    }
    // SAFETY: the launch's contract.
    unsafe { report_nonfinite(first_nonfinite, first) };
}

/// The host form of an MXFP8 kernel, for `device_support::emulator`.
#[cfg(not(target_arch = "nvptx64"))]
pub type MxKernelFn = unsafe fn(*const u32, *mut u8, *mut u8, u64, *mut u64);

macro_rules! mx_kernels {
    ($($marker:ident = $name:ident: $format:ident, $rule:ident;)*) => {
        $(shared::kernel! {
            #[doc = concat!("The declaration of MXFP8 with ", stringify!($format), " elements and the `", stringify!($rule), "` scale rule.")]
            pub struct $marker;
            #[doc = concat!("MXFP8, ", stringify!($format), " elements, scale rule `", stringify!($rule), "`: `", stringify!($name), "(x, q, scales, n, first_nonfinite)`, a warp per group of 32 (the crate's doc).")]
            ///
            /// # Safety
            /// `x` is a device pointer to `n` f32 (bits), `q` to `n` bytes, `scales` to
            /// `⌈n / 32⌉` bytes, `first_nonfinite` to one `u64` (`u64::MAX` before); the
            /// launch is 1-D with a block size that is a multiple of 32.
            pub unsafe fn $name(x: *const u32, q: *mut u8, scales: *mut u8, n: u64, first_nonfinite: *mut u64) {
                // SAFETY: forwarded from the launch's contract.
                unsafe { mx_body(x, q, scales, n, first_nonfinite, Fp8Format::$format, ScaleRule::$rule) }
            }
        })*

        /// The MXFP8 kernel for `format` and `rule`: its name and (on the host) its body.
        #[cfg(not(target_arch = "nvptx64"))]
        pub fn mx_kernel(format: Fp8Format, rule: ScaleRule) -> (&'static str, MxKernelFn) {
            match (format, rule) {
                $((Fp8Format::$format, ScaleRule::$rule) => (stringify!($name), $name),)*
            }
        }
    };
}

mx_kernels! {
    MxE4m3Fit = mx_e4m3_fit: E4M3, Fit;
    MxE4m3Floor = mx_e4m3_floor: E4M3, Floor;
    MxE4m3Rceil = mx_e4m3_rceil: E4M3, Rceil;
    MxE4m3CompressedTensors = mx_e4m3_compressed_tensors: E4M3, CompressedTensors;
    MxE5m2Fit = mx_e5m2_fit: E5M2, Fit;
    MxE5m2Floor = mx_e5m2_floor: E5M2, Floor;
    MxE5m2Rceil = mx_e5m2_rceil: E5M2, Rceil;
    MxE5m2CompressedTensors = mx_e5m2_compressed_tensors: E5M2, CompressedTensors;
}

// ---------------------------------------------------------------------------------------
// FP8 blocks: a thread block per tile.

// One partial maximum per warp of the block (at most 32 warps of 32).
device_support::static_shared!(fn tile_maxima: [u32; 32]);

/// FP8 by `recipe` over the `rows × cols` tensor `x` (row-major) in tiles of `tile_rows
/// × tile_cols`, the last ones partial: thread block `b` takes tiles `b`, `b + grid`, …
/// (row-major order over the tiles); its threads stride over each row of the tile for the
/// largest finite magnitude, which the block reduces through shared memory; thread 0
/// writes the tile's scale to `d` (row-major, `⌈rows / tile_rows⌉ × ⌈cols / tile_cols⌉`),
/// and the threads quantise the tile's elements. A tile with a zero side writes nothing.
///
/// # Safety
/// `x` is a device pointer to `rows · cols` f32 (bits), `q` to as many bytes, `d` to one
/// f32 per tile, `first_nonfinite` to one `u64` (`u64::MAX` before); `rows · cols` fits a
/// `u64`; the launch is 1-D with a block size that is a multiple of 32 and at most 1024,
/// and every thread of the block runs the kernel to its end (it holds block barriers).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn fp8_tiles_body(
    x: *const u32,
    q: *mut u8,
    d: *mut f32,
    shape: [u64; 4],
    first_nonfinite: *mut u64,
    format: Fp8Format,
    recipe: Recipe,
) {
    let [rows, cols, tile_rows, tile_cols] = shape;
    if tile_rows == 0 || tile_cols == 0 {
        return;
    }
    let tiles_across = cols.div_ceil(tile_cols);
    let tiles = rows.div_ceil(tile_rows).saturating_mul(tiles_across);
    let (threads, rank) = (u64::from(block::block_dim().x), u64::from(block::thread_rank()));
    let mut first = u64::MAX;
    let mut tile = u64::from(block::block_idx().x);
    while tile < tiles {
        let (Some(tile_row), Some(tile_col)) = (tile.checked_div(tiles_across), tile.checked_rem(tiles_across)) else {
            break;
        };
        let (row0, col0) = (tile_row * tile_rows, tile_col * tile_cols);
        let (height, width) = (tile_rows.min(rows - row0), tile_cols.min(cols - col0));
        // Each thread's largest finite magnitude over its columns of the tile's rows.
        let mut local = 0u32;
        for row in row0..row0 + height {
            let mut col = rank;
            while col < width {
                let i = row * cols + col0 + col;
                // SAFETY: `i < rows · cols`, and `x` holds that many values.
                let magnitude = magnitude_bits(unsafe { x.add(i as usize).read() });
                if is_nonfinite(magnitude) {
                    first = first.min(i);
                } else {
                    local = local.max(magnitude);
                }
                col += threads;
            }
        }
        // SAFETY: every thread of the block runs this iteration (`tile` is the block's);
        // the block size is a multiple of 32 and at most 1024, so 32 partials fit, and
        // the barrier at the end of the iteration keeps the next one's writes after
        // every thread's read.
        let amax = f32::from_bits(unsafe { block::block_max_u32(local, tile_maxima()) });
        let scale = match recipe {
            Recipe::Exact => dequant_scale_for(amax, format),
            Recipe::DeepGemm => deepgemm_scale(amax, format),
            Recipe::DeepGemmUe8m0 => deepgemm_ue8m0_scale(amax, format),
            Recipe::ExactUe8m0 => ue8m0_scale_for(amax, format),
            Recipe::ExactBf16 => bf16_scale_for(amax, format),
            Recipe::CompressedTensors(weights) => compressed_tensors_scale(amax, format, weights),
        };
        if rank == 0 {
            // SAFETY: `tile` is below the number of tiles, `d`'s length; only thread 0
            // of the tile's block writes it.
            unsafe { d.add(tile as usize).write(scale) };
        }
        // DeepGEMM multiplies by the scale's f32 reciprocal, taken once per block.
        let inverse = 1.0 / scale;
        for row in row0..row0 + height {
            let mut col = rank;
            while col < width {
                let i = row * cols + col0 + col;
                // SAFETY: `i < rows · cols`, and `x` holds that many values.
                let value = unsafe { x.add(i as usize).read() };
                let code = match recipe {
                    Recipe::Exact | Recipe::ExactUe8m0 | Recipe::ExactBf16 => quantize_quotient(value, scale, format),
                    Recipe::DeepGemm | Recipe::DeepGemmUe8m0 => {
                        shared::fp8_scale::quantize(value, inverse, format, Rounding::TwoStep)
                    }
                    Recipe::CompressedTensors(weights) => compressed_tensors_quantize(value, scale, format, weights),
                };
                // SAFETY: `i < rows · cols`, `q`'s length; only this thread writes it.
                unsafe { q.add(i as usize).write(code) };
                col += threads;
            }
        }
        block::sync_threads();
        tile = match tile.checked_add(u64::from(block::grid_dim().x)) {
            Some(next) => next,
            None => break,
        };
    }
    // SAFETY: the launch's contract.
    unsafe { report_nonfinite(first_nonfinite, first) };
}

/// The host form of an FP8 tile kernel, for `device_support::emulator`.
#[cfg(not(target_arch = "nvptx64"))]
pub type Fp8TilesKernelFn = unsafe fn(*const u32, *mut u8, *mut f32, u64, u64, u64, u64, *mut u64);

macro_rules! fp8_tiles_kernels {
    ($($marker:ident = $name:ident: $format:ident, $recipe:expr;)*) => {
        $(shared::kernel! {
            #[doc = concat!("The declaration of FP8 ", stringify!($format), " in tiles by `", stringify!($recipe), "`.")]
            pub struct $marker;
            #[doc = concat!("FP8 ", stringify!($format), " in tiles by `", stringify!($recipe), "`: `", stringify!($name), "(x, q, d, rows, cols, tile_rows, tile_cols, first_nonfinite)`, a thread block per tile (the crate's doc).")]
            ///
            /// # Safety
            /// `x` is a device pointer to `rows · cols` f32 (bits), `q` to as many bytes,
            /// `d` to `⌈rows / tile_rows⌉ · ⌈cols / tile_cols⌉` f32, `first_nonfinite` to
            /// one `u64` (`u64::MAX` before); the launch is 1-D with a block size that is
            /// a multiple of 32 and at most 1024, and every thread of the block runs the
            /// kernel to its end.
            #[allow(clippy::too_many_arguments)]
            pub unsafe fn $name(
                x: *const u32,
                q: *mut u8,
                d: *mut f32,
                rows: u64,
                cols: u64,
                tile_rows: u64,
                tile_cols: u64,
                first_nonfinite: *mut u64,
            ) {
                let shape = [rows, cols, tile_rows, tile_cols];
                // SAFETY: forwarded from the launch's contract.
                unsafe { fp8_tiles_body(x, q, d, shape, first_nonfinite, Fp8Format::$format, $recipe) }
            }
        })*

        /// The FP8 tile kernel for `format` and `recipe`: its name and (on the host) its
        /// body; `None` for E5M2 with bfloat16 scales or compressed-tensors' recipe (its FP8
        /// is E4M3).
        #[cfg(not(target_arch = "nvptx64"))]
        pub fn fp8_tiles_kernel(format: Fp8Format, recipe: Recipe) -> Option<(&'static str, Fp8TilesKernelFn)> {
            $(if (format, recipe) == (Fp8Format::$format, $recipe) {
                return Some((stringify!($name), $name));
            })*
            None
        }
    };
}

fp8_tiles_kernels! {
    Fp8TilesE4m3Exact = fp8_tiles_e4m3_exact: E4M3, Recipe::Exact;
    Fp8TilesE4m3DeepGemm = fp8_tiles_e4m3_deepgemm: E4M3, Recipe::DeepGemm;
    Fp8TilesE4m3DeepGemmUe8m0 = fp8_tiles_e4m3_deepgemm_ue8m0: E4M3, Recipe::DeepGemmUe8m0;
    Fp8TilesE4m3ExactUe8m0 = fp8_tiles_e4m3_exact_ue8m0: E4M3, Recipe::ExactUe8m0;
    Fp8TilesE4m3ExactBf16 = fp8_tiles_e4m3_exact_bf16: E4M3, Recipe::ExactBf16;
    Fp8TilesE4m3CompressedTensorsF32 =
        fp8_tiles_e4m3_compressed_tensors_f32: E4M3, Recipe::CompressedTensors(WeightDtype::F32);
    Fp8TilesE4m3CompressedTensorsBf16 =
        fp8_tiles_e4m3_compressed_tensors_bf16: E4M3, Recipe::CompressedTensors(WeightDtype::Bf16);
    Fp8TilesE5m2Exact = fp8_tiles_e5m2_exact: E5M2, Recipe::Exact;
    Fp8TilesE5m2DeepGemm = fp8_tiles_e5m2_deepgemm: E5M2, Recipe::DeepGemm;
    Fp8TilesE5m2ExactUe8m0 = fp8_tiles_e5m2_exact_ue8m0: E5M2, Recipe::ExactUe8m0;
}

// ---------------------------------------------------------------------------------------
// NVFP4: the tensor amax, then a half-warp per group of 16.

// One partial maximum per warp of the block, for pass 1.
device_support::static_shared!(fn amax_maxima: [u32; 32]);

shared::kernel! {
    /// NVFP4 pass 1's declaration: `nvfp4_amax(x, n, amax, first_nonfinite)`.
    pub struct Nvfp4Amax;
    /// NVFP4 pass 1: raises `amax[0]` to the largest finite `|x[i]|` (as magnitude bits)
    /// over `i < n`, [`shared::fp8_scale::amax_slice`]'s first result, and lowers
    /// `first_nonfinite[0]` to the smallest `i` whose `x[i]` is NaN or infinite. A
    /// grid-stride loop, a block reduction (warp shuffles, then the warps' maxima through
    /// static shared memory) and one device-scope atomic max per block.
    ///
    /// # Safety
    /// `x` is a device pointer to `n` f32 (bits); `amax` to one `u32` (0 before the
    /// launch), `first_nonfinite` to one `u64` (`u64::MAX` before); the launch is 1-D with
    /// a block size that is a multiple of 32, at most 1024, and every thread of the block
    /// runs the kernel to its end (it holds block barriers).
    pub unsafe fn nvfp4_amax(x: *const u32, n: u64, amax: *mut u32, first_nonfinite: *mut u64) {
        let (mut local, mut first) = (0u32, u64::MAX);
        device_support::grid_stride(block::lane_x(), n, |i| {
            // SAFETY: `i < n`, and `x` holds `n` values.
            let magnitude = magnitude_bits(unsafe { x.add(i).read() });
            if !is_nonfinite(magnitude) {
                local = local.max(magnitude);
            } else if first == u64::MAX {
                // A lane visits its indices in increasing order: its first is its smallest.
                first = i as u64;
            }
        });
        // SAFETY: the launch's contract.
        unsafe { report_nonfinite(first_nonfinite, first) };
        // SAFETY: every thread of the block runs this call (the contract); the block size
        // is a multiple of 32 and at most 1024, so 32 partials fit, and nothing else
        // touches them.
        let block_max = unsafe { block::block_max_u32(local, amax_maxima()) };
        if block::thread_rank() == 0 {
            // SAFETY: `amax` is one u32 that every access reaches atomically.
            unsafe { u32::atomic_max(amax, block_max, Scope::Device) };
        }
    }
}

/// The maximum of `value` over the calling lane's half of the warp (lanes 0–15 or
/// 16–31), in each of its lanes: the butterfly with masks 8, 4, 2, 1.
///
/// # Safety
/// All 32 lanes of the warp execute this same call.
#[inline(always)]
unsafe fn half_warp_max(mut value: u32) -> u32 {
    let mut lane_mask = 8;
    while lane_mask > 0 {
        // SAFETY: the caller guarantees all 32 lanes execute this call.
        value = value.max(unsafe { block::shfl_xor(FULL_MASK, value, lane_mask) });
        lane_mask /= 2;
    }
    value
}

/// NVFP4 pass 2 by `recipe` over `x[..n]` (f32 bits of weights of dtype `source`):
/// every thread computes the tensor scale from pass 1's amax, and global thread 0 writes
/// it to `tensor[0]`. The warps stride over chunks of 32 elements, a half-warp per group
/// of 16 (lane `l` holds element `32c + l`, 0 past `n`): the half-warp's shuffle max of
/// its finite magnitudes gives the block scale (the NaN code where one of its values is
/// NaN or infinite, as the CPU form sets it), its lane 0 writes `scales[j]`, each lane
/// its E2M1 code, and each even lane the byte of its code and its odd neighbour's.
///
/// # Safety
/// `x` is a device pointer to `n` f32 (bits), `packed` to `⌈n / 2⌉` bytes, `scales` to
/// `⌈n / 16⌉` bytes, `amax` to pass 1's result, `tensor` to one f32; the launch is 1-D
/// with a block size that is a multiple of 32.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn nvfp4_body(
    x: *const u32,
    packed: *mut u8,
    scales: *mut u8,
    n: u64,
    amax: *const u32,
    tensor: *mut f32,
    recipe: Nvfp4Recipe,
    source: WeightDtype,
) {
    // SAFETY: `amax` points to one u32, written by pass 1 before this launch.
    let g = nvfp4::tensor_scale(recipe, f32::from_bits(unsafe { amax.read() }), source);
    let lane = block::lane_x();
    if lane.index == 0 {
        // SAFETY: `tensor` points to one f32 that only this thread writes.
        unsafe { tensor.write(g) };
    }
    let (warp, warps, lane_in_warp) = (lane.index >> 5, lane.lanes >> 5, u64::from(block::lane_id()));
    let chunks = n.div_ceil(32);
    let mut chunk = warp;
    while chunk < chunks {
        let i = chunk * 32 + lane_in_warp;
        // SAFETY: `i < n`, and `x` holds `n` values.
        let value = if i < n { unsafe { x.add(i as usize).read() } } else { 0 };
        let magnitude = magnitude_bits(value);
        let nonfinite = is_nonfinite(magnitude);
        // SAFETY (both): every lane of the warp runs this iteration (`chunk` is the warp's).
        let block_amax = f32::from_bits(unsafe { half_warp_max(if nonfinite { 0 } else { magnitude }) });
        let any_nonfinite = unsafe { half_warp_max(u32::from(nonfinite)) } != 0;
        let scale = match recipe {
            _ if any_nonfinite => e4m3::NAN_ABS,
            Nvfp4Recipe::Exact => nvfp4::block_scale(block_amax, g),
            Nvfp4Recipe::ModelOpt => nvfp4::modelopt_block_scale(block_amax, g),
            Nvfp4Recipe::CompressedTensors => nvfp4::compressed_tensors_block_scale(block_amax, g, source),
        };
        let code = match recipe {
            _ if i >= n => 0,
            Nvfp4Recipe::Exact => nvfp4::quantize(value, scale, g),
            Nvfp4Recipe::ModelOpt => nvfp4::modelopt_quantize(value, scale, g),
            Nvfp4Recipe::CompressedTensors => nvfp4::compressed_tensors_quantize(value, scale, g),
        };
        // SAFETY: every lane of the warp runs this iteration.
        let odd = unsafe { block::shfl_xor(FULL_MASK, u32::from(code), 1) } as u8;
        if i < n && lane_in_warp % 2 == 0 {
            // SAFETY: `i / 2 < ⌈n / 2⌉`, `packed`'s length; only this lane writes it.
            unsafe { packed.add((i / 2) as usize).write(e2m1::pack(code, odd)) };
        }
        if i < n && lane_in_warp % nvfp4::BLOCK_SIZE as u64 == 0 {
            // SAFETY: `i / 16 < ⌈n / 16⌉`, `scales`' length; only this lane writes it.
            unsafe { scales.add(i as usize / nvfp4::BLOCK_SIZE).write(scale) };
        }
        chunk = match chunk.checked_add(warps) {
            Some(next) => next,
            None => break,
        };
    }
}

/// The host form of an NVFP4 pass 2 kernel, for `device_support::emulator`.
#[cfg(not(target_arch = "nvptx64"))]
pub type Nvfp4KernelFn = unsafe fn(*const u32, *mut u8, *mut u8, u64, *const u32, *mut f32);

macro_rules! nvfp4_kernels {
    ($($marker:ident = $name:ident: $recipe:ident, $source:ident;)*) => {$(
        shared::kernel! {
            #[doc = concat!("The declaration of NVFP4 pass 2 by the `", stringify!($recipe), "` recipe (", stringify!($source), " weights).")]
            pub struct $marker;
            #[doc = concat!("NVFP4 pass 2, recipe `", stringify!($recipe), "` (", stringify!($source), " weights): `", stringify!($name), "(x, packed, scales, n, amax, tensor)`, a half-warp per group of 16 (the crate's doc).")]
            ///
            /// # Safety
            /// `x` is a device pointer to `n` f32 (bits), `packed` to `⌈n / 2⌉` bytes,
            /// `scales` to `⌈n / 16⌉` bytes, `amax` to pass 1's result (the largest finite
            /// magnitude), `tensor` to one f32; the launch is 1-D with a block size that
            /// is a multiple of 32.
            pub unsafe fn $name(x: *const u32, packed: *mut u8, scales: *mut u8, n: u64, amax: *const u32, tensor: *mut f32) {
                // SAFETY: forwarded from the launch's contract.
                unsafe { nvfp4_body(x, packed, scales, n, amax, tensor, Nvfp4Recipe::$recipe, WeightDtype::$source) }
            }
        }
    )*};
}

nvfp4_kernels! {
    Nvfp4Exact = nvfp4_exact: Exact, F32;
    Nvfp4ModelOpt = nvfp4_modelopt: ModelOpt, F32;
    Nvfp4CompressedTensorsF32 = nvfp4_compressed_tensors_f32: CompressedTensors, F32;
    Nvfp4CompressedTensorsBf16 = nvfp4_compressed_tensors_bf16: CompressedTensors, Bf16;
}

/// The NVFP4 pass 2 kernel for `recipe` on weights of dtype `source` (the exact recipe
/// and ModelOpt's compute in f32 whatever the weights' dtype): its name and (on the host)
/// its body.
#[cfg(not(target_arch = "nvptx64"))]
pub fn nvfp4_kernel(recipe: Nvfp4Recipe, source: WeightDtype) -> (&'static str, Nvfp4KernelFn) {
    match (recipe, source) {
        (Nvfp4Recipe::Exact, _) => ("nvfp4_exact", nvfp4_exact),
        (Nvfp4Recipe::ModelOpt, _) => ("nvfp4_modelopt", nvfp4_modelopt),
        (Nvfp4Recipe::CompressedTensors, WeightDtype::F32) => {
            ("nvfp4_compressed_tensors_f32", nvfp4_compressed_tensors_f32)
        }
        (Nvfp4Recipe::CompressedTensors, WeightDtype::Bf16) => {
            ("nvfp4_compressed_tensors_bf16", nvfp4_compressed_tensors_bf16)
        }
    }
}
