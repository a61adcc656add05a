//! The GPU's own conversion instructions ([`shared::hardware::Conversion`]) as inline
//! PTX, for the `Hardware` kernels (nvptx64 only).
//!
//! Every result leaves the `asm!` block through an integer instruction (`cvt.u32.u16`)
//! or as a 32-bit value: a 16-bit register written by a float `cvt` never reaches a
//! narrow store, so `ptxas` has no float register to turn into a float → integer
//! conversion there (the issue-9 miscompilation `bitexact::cuda_tools::guards` looks for), and the
//! guards see an integer writer. Each block declares its temporaries in its own scope, so
//! it can be inlined any number of times.

use core::arch::asm;
use shared::hardware::{Conversion, e4m3_standard, e5m2_standard};

/// f32 bits → the 16-bit result of `cvt.$mode.$ty.f32`, zero-extended.
macro_rules! f32_to_16_bits {
    ($x:expr, $cvt:literal) => {{
        let out: u32;
        // SAFETY: register-only conversions, no memory access or other effect.
        unsafe {
            asm!(
                concat!("{{ .reg .b16 %bx_h; ", $cvt, " %bx_h, {x}; cvt.u32.u16 {out}, %bx_h; }}"),
                x = in(reg32) $x,
                out = out(reg32) out,
                options(pure, nomem, nostack),
            )
        };
        out
    }};
}

/// f32 bits → the FP8 byte of `cvt.rn.satfinite.$ty.f32` on the pair `(x, x)`, its low
/// byte (the conversion of the second operand), zero-extended.
macro_rules! f32_to_fp8 {
    ($x:expr, $cvt:literal) => {{
        let out: u32;
        // SAFETY: register-only conversions, no memory access or other effect.
        unsafe {
            asm!(
                concat!("{{ .reg .b16 %bx_h; ", $cvt, " %bx_h, {x}, {x}; cvt.u32.u16 {out}, %bx_h; }}"),
                x = in(reg32) $x,
                out = out(reg32) out,
                options(pure, nomem, nostack),
            )
        };
        out & 0xFF
    }};
}

/// The 16-bit encoding `x` (low half) → f32 bits by `cvt.f32.$ty`.
macro_rules! widen_16_bits {
    ($x:expr, $cvt:literal) => {{
        let out: u32;
        // SAFETY: a register-only conversion, no memory access or other effect.
        unsafe {
            asm!(
                concat!($cvt, " {out}, {x};"),
                x = in(reg16) $x as u16,
                out = out(reg32) out,
                options(pure, nomem, nostack),
            )
        };
        out
    }};
}

/// The FP8 byte `x` (low byte) → f32 bits: `cvt.rn.f16x2.$ty` on the pair whose low byte
/// is `x`, then `cvt.f32.f16` of the pair's low half.
macro_rules! widen_fp8 {
    ($x:expr, $cvt:literal) => {{
        let out: u32;
        // SAFETY: register-only conversions, no memory access or other effect.
        unsafe {
            asm!(
                concat!(
                    "{{ .reg .b32 %bx_p; .reg .b16 %bx_lo, %bx_hi; ",
                    $cvt,
                    " %bx_p, {x}; mov.b32 {{%bx_lo, %bx_hi}}, %bx_p; cvt.f32.f16 {out}, %bx_lo; }}"
                ),
                x = in(reg16) ($x & 0xFF) as u16,
                out = out(reg32) out,
                options(pure, nomem, nostack),
            )
        };
        out
    }};
}

/// `instruction` on the input bits `x` (zero-extended): the result's bits,
/// zero-extended. Only the arm of `instruction` is compiled into a kernel (it is a
/// constant there), so a module holds only the instructions its target has.
#[inline(always)]
pub fn convert(instruction: Conversion, x: u32) -> u32 {
    match instruction {
        Conversion::F32ToF16 => f32_to_16_bits!(x, "cvt.rn.f16.f32"),
        Conversion::F32ToF16Satfinite => f32_to_16_bits!(x, "cvt.rn.satfinite.f16.f32"),
        Conversion::F32ToBf16 => f32_to_16_bits!(x, "cvt.rn.bf16.f32"),
        Conversion::F32ToBf16Satfinite => f32_to_16_bits!(x, "cvt.rn.satfinite.bf16.f32"),
        Conversion::F32ToE4m3Satfinite => f32_to_fp8!(x, "cvt.rn.satfinite.e4m3x2.f32"),
        Conversion::F32ToE5m2Satfinite => f32_to_fp8!(x, "cvt.rn.satfinite.e5m2x2.f32"),
        Conversion::F32ToE4m3 => e4m3_standard(x, f32_to_fp8!(x, "cvt.rn.satfinite.e4m3x2.f32")),
        Conversion::F32ToE5m2 => e5m2_standard(x, f32_to_fp8!(x, "cvt.rn.satfinite.e5m2x2.f32")),
        Conversion::F16ToF32 => widen_16_bits!(x, "cvt.f32.f16"),
        Conversion::Bf16ToF32 => widen_16_bits!(x, "cvt.f32.bf16"),
        Conversion::E4m3ToF32 => widen_fp8!(x, "cvt.rn.f16x2.e4m3x2"),
        Conversion::E5m2ToF32 => widen_fp8!(x, "cvt.rn.f16x2.e5m2x2"),
    }
}
