//! Guards that catch, without a GPU, machine code that does not do what its source says.
//!
//! The first real GPU run found `f32_to_unorm8` returning 255 for every input while its
//! CPU twin was exact. LLVM had folded `(fma(..).to_bits() - 0x4B00_0000) as u8` into a
//! byte store of the `fma`'s own register (`st.global.b8 [a], %r8` after
//! `fma.rn.f32 %r8, ..`), and ptxas compiles a narrow store of a register last written
//! by a float instruction as a saturating float → integer conversion
//! (`F2IP.U8.F32.TRUNC.NTZ`), not as a truncation of the bits. Two checks, each of which
//! fails on that code (commit 846e06b) and passes on today's:
//!
//! * [`ptx_builder::guards::narrow_float_stores`], on the PTX alone: no `st` of 8 or 16
//!   bits takes a register written by a floating-point instruction (directly or through
//!   `mov`s).
//! * [`unrequested_float_to_int`], on the SASS of one architecture: a kernel has an
//!   `F2I*` instruction only if its PTX has an explicit float → integer `cvt`. (A Rust
//!   `as` from a float to an integer is such a `cvt`; nothing else should become one.)
//!
//! Both are pure functions on text; the wing's tests (`host/wings/cuda_tools/src/tests/ptx_tools.rs`) run them on
//! the embedded PTX (and its SASS for every architecture) and on a fixture holding the
//! 846e06b kernels.
//!
//! The PTX half lives in `ptx_builder::guards` (the API is there; the wings' own
//! re-export here is not), so `PtxBuilder` runs it on every kernel crate it builds, ours
//! and a user's.

use crate::sass::Kernel as SassKernel;
#[doc(hidden)]
pub use ptx_builder::guards::{NarrowFloatStore, PtxInstruction, PtxKernel, narrow_float_stores, ptx_kernels};
use std::collections::HashSet;

/// A float → integer conversion in the SASS that the kernel's PTX did not ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnrequestedConversion {
    /// The architecture of the listing.
    pub arch: String,
    /// The kernel.
    pub kernel: String,
    /// The SASS instruction (`F2IP.U8.F32.TRUNC.NTZ R5, RZ, R0, RZ`).
    pub instruction: String,
}

impl std::fmt::Display for UnrequestedConversion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: SASS has `{}` but the PTX has no float → integer cvt",
            self.arch, self.kernel, self.instruction
        )
    }
}

/// Every `F2I*` instruction in `sass` (the parsed listing of `ptx` assembled for `arch`)
/// that sits in a kernel whose PTX has no float → integer `cvt`.
pub fn unrequested_float_to_int(ptx: &str, sass: &[SassKernel], arch: &str) -> Vec<UnrequestedConversion> {
    let requested: HashSet<String> = ptx_kernels(ptx)
        .into_iter()
        .filter(|k| k.instructions.iter().any(PtxInstruction::is_float_to_int_conversion))
        .map(|k| k.name)
        .collect();
    sass.iter()
        .filter(|k| !requested.contains(&k.name))
        .flat_map(|k| {
            k.instructions.iter().filter(|i| i.opcode.starts_with("F2I")).map(|i| UnrequestedConversion {
                arch: arch.to_string(),
                kernel: k.name.clone(),
                instruction: i.text.clone(),
            })
        })
        .collect()
}
#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel whose SASS converts though its PTX asks for no conversion (the 846e06b
    /// fold), one that asks for one, and one with neither.
    const PTX: &str = "
.visible .entry f32_to_unorm8()
{
\tfma.rn.f32 \t%r8, %r7, 0f437F0000, 0f4B000000;
\tst.global.b8 \t[%rd12], %r8;
}
.visible .entry converts()
{
\tcvt.rzi.u16.f32 \t%rs1, %r11;
\tst.global.b8 \t[%rd12], %rs1;
}
.visible .entry fixed()
{
\tcvt.u16.u32 \t%rs1, %r8;
}
";

    #[test]
    fn only_f2i_outside_converting_kernels_is_reported() {
        let listing = "
        Function : f32_to_unorm8
        /*0000*/  FFMA R0, R0, R7, 8388608 ;
        /*0010*/  F2IP.U8.F32.TRUNC.NTZ R5, RZ, R0, RZ ;
        /*0020*/  EXIT ;
        Function : converts
        /*0000*/  F2I.U16.TRUNC.NTZ R9, R0 ;
        /*0010*/  EXIT ;
        Function : fixed
        /*0000*/  VIADD R9, R0, 0xfffffffe ;
        ";
        let sass = crate::sass::parse_listing(listing);
        let found = unrequested_float_to_int(PTX, &sass, "sm_90");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].kernel.as_str(), found[0].instruction.as_str()),
            ("f32_to_unorm8", "F2IP.U8.F32.TRUNC.NTZ R5, RZ, R0, RZ")
        );
    }
}
