//! A kernel crate of one's own, the worked example of docs/own-kernel.md: loading a
//! binary16 tensor (an fp16 checkpoint) as f32, exactly, and counting in the same pass
//! the values that are not finite, with the first one's index, so that a loader can
//! refuse a corrupt tensor without a second pass over memory.
//!
//! Everything here compiles for the host and for `nvptx64-nvidia-cuda`:
//!
//! * [`F16ToF32Checked`], the primitive: `shared`'s exact widening and `shared`'s
//!   finiteness test, with the `unsafe impl` that describes its kernel to the host;
//! * [`to_f32_checked`], the CPU twin, from the same two functions;
//! * the kernel `f16_to_f32_checked_stream_count` (`extern "ptx-kernel"` on nvptx64; checked
//!   against its kind's declaration by `shared::kind_kernel!`), from the same two
//!   functions through `device_support::stream_count`.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

use shared::kind::StreamCount;
use shared::{Claim, Family, Format, KernelKind, Primitive};

device_support::trap_on_panic!();

/// binary16 bits → f32, exact (every binary16 value is an f32 value; NaN payloads are
/// kept), and whether the input was finite. The kernel counts the inputs that were not.
pub struct F16ToF32Checked;

impl Primitive for F16ToF32Checked {
    type In = u16;
    type Out = f32;
    const NAME: &'static str = "f16_to_f32_checked";
    const FAMILY: Family = Family::NarrowToF32 { format: Format::Binary16 };
    const CLAIM: Claim = Claim::Exact;
    const DESCRIPTION: &'static str = "binary16 -> f32 (exact), counting the non-finite inputs";
    const KINDS: &'static [KernelKind] = &[KernelKind::StreamCount];

    #[inline(always)]
    fn apply(b: u16) -> f32 {
        f32::from_bits(shared::binary16::to_f32_bits(b))
    }
}

// SAFETY: this crate's PTX has `f16_to_f32_checked_stream_count` (below, the name
// `KernelName::of::<F16ToF32Checked>(StreamCount)` gives) with the parameters
// `(*const u16, *mut u32, u64, *mut u64)`, and `device_support::stream_count` touches
// only elements below `n` and `result[0..2]`.
unsafe impl StreamCount for F16ToF32Checked {
    #[inline(always)]
    fn passes(b: u16, _: f32) -> bool {
        shared::binary16::is_finite(b)
    }
}

/// The CPU twin of the kernel: `output[i]` = `input[i]` widened to f32 (exact), and the
/// number of non-finite inputs with the first one's index. The GPU's results equal
/// these bit for bit on every input (the example's tests prove it for all 65,536).
///
/// Host only: a public function of a kernel crate is compiled into its PTX too, and this
/// one's slice indexing has a panic path, which `ptx-builder` rejects in a kernel module.
///
/// # Panics
/// If `output` is shorter than `input`.
#[cfg(not(target_arch = "nvptx64"))]
pub fn to_f32_checked(input: &[u16], output: &mut [f32]) -> (u64, Option<u64>) {
    let (mut count, mut first) = (0, None);
    for (i, (&b, y)) in input.iter().zip(&mut output[..input.len()]).enumerate() {
        *y = F16ToF32Checked::apply(b);
        if !F16ToF32Checked::passes(b, *y) {
            count += 1;
            first = first.or(Some(i as u64));
        }
    }
    (count, first)
}

shared::kind_kernel! {
    F16ToF32Checked: StreamCount;
    /// `output[i]` = `input[i]` widened, bits of f32, for `i < n`, and the non-finite inputs
    /// counted into `result[0]`, the first one's index lowered into `result[1]`; coalesced
    /// (each lane loads four halves and stores four f32s per grid-stride step).
    ///
    /// `kind_kernel!` checks at compile time that the name and the parameters are those of
    /// the `StreamCount` declaration the host launches it by.
    ///
    /// # Safety
    /// `input` and `output` are device pointers to `n` elements each, `result` to 2 `u64`s
    /// (0 and `u64::MAX` before the launch).
    pub unsafe fn f16_to_f32_checked_stream_count(input: *const u16, output: *mut u32, n: u64, result: *mut u64) {
        let lane = device_support::block::lane_x();
        // SAFETY: forwarded from this kernel's contract.
        unsafe { device_support::stream_count::<F16ToF32Checked>(lane, input, output, n, result) }
    }
}
