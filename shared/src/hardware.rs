//! The GPU's own conversion instructions, for the families that have one, and the PTX
//! targets whose modules hold the [`KernelKind::Hardware`](crate::KernelKind::Hardware)
//! kernels that run them.
//!
//! A hardware kernel runs the instruction where the variant's kernel runs the variant's
//! function; the GPU checks compare the two, and both with the CPU, on every input. The
//! instructions need newer targets than the baseline PTX (`.target sm_75`) for bfloat16
//! and FP8, and `ptxas` rejects a whole module that uses an instruction its target lacks,
//! so `host/build.rs` builds one PTX module per entry of [`TARGETS`] and puts each
//! hardware kernel in the module of its instruction's [`Conversion::target`]; the host
//! loads a module only on a device that can run it.

use crate::narrow::Overflow;
use crate::{Family, Format};

/// A PTX target: the architecture in the module's `.target` and the PTX ISA version in
/// its `.version`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PtxTarget {
    /// The architecture `sm_XX` as the number XX (75 for sm_75, 89 for sm_89).
    pub sm: u32,
    /// The PTX ISA version times ten (70 for 7.0, 81 for 8.1).
    pub ptx: u32,
}

impl PtxTarget {
    /// Whether a module for this target can use an instruction that needs `needs`.
    #[inline]
    pub const fn covers(self, needs: PtxTarget) -> bool {
        self.sm >= needs.sm && self.ptx >= needs.ptx
    }
}

/// `sm_89`: the architecture's name.
impl core::fmt::Display for PtxTarget {
    #[inline]
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "sm_{}", self.sm)
    }
}

/// The baseline module's target: Turing, and the PTX ISA version LLVM writes for it.
/// Every software kernel is in this module, with the hardware kernels it can hold.
pub const BASELINE: PtxTarget = PtxTarget { sm: 75, ptx: 70 };

/// Every PTX module `host/build.rs` builds, oldest first: [`BASELINE`], then one per newer
/// target some instruction needs, holding only hardware kernels (bfloat16 and the
/// saturating binary16/bfloat16 forms need sm_80 and PTX 8.1, FP8 sm_89 and PTX 8.1).
pub const TARGETS: [PtxTarget; 3] = [BASELINE, PtxTarget { sm: 80, ptx: 81 }, PtxTarget { sm: 89, ptx: 81 }];

/// A conversion the GPU does in hardware: a PTX `cvt` (two for FP8 → f32), rounding to
/// nearest, ties to even, with subnormals kept (no `.ftz`).
///
/// On non-NaN inputs each computes what its family defines. On NaN, NVIDIA documents
/// only that the result is a NaN: the GPU checks count the NaN inputs whose hardware
/// result differs from the family's (the canonical NaN 0x7FFF for binary16 and bfloat16,
/// where the family keeps the payload).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Conversion {
    /// `cvt.rn.f16.f32`.
    F32ToF16,
    /// `cvt.rn.satfinite.f16.f32`.
    F32ToF16Satfinite,
    /// `cvt.rn.bf16.f32`.
    F32ToBf16,
    /// `cvt.rn.satfinite.bf16.f32`.
    F32ToBf16Satfinite,
    /// `cvt.rn.satfinite.e4m3x2.f32` (the only f32 → E4M3 mode the hardware has), on a
    /// pair whose low byte is kept.
    F32ToE4m3Satfinite,
    /// `cvt.rn.satfinite.e5m2x2.f32`, on a pair whose low byte is kept.
    F32ToE5m2Satfinite,
    /// `cvt.f32.f16`.
    F16ToF32,
    /// `cvt.f32.bf16`.
    Bf16ToF32,
    /// `cvt.rn.f16x2.e4m3x2` (the low half kept), then `cvt.f32.f16`.
    E4m3ToF32,
    /// `cvt.rn.f16x2.e5m2x2` (the low half kept), then `cvt.f32.f16`.
    E5m2ToF32,
}

impl Conversion {
    /// Every instruction.
    pub const ALL: [Conversion; 10] = [
        Conversion::F32ToF16,
        Conversion::F32ToF16Satfinite,
        Conversion::F32ToBf16,
        Conversion::F32ToBf16Satfinite,
        Conversion::F32ToE4m3Satfinite,
        Conversion::F32ToE5m2Satfinite,
        Conversion::F16ToF32,
        Conversion::Bf16ToF32,
        Conversion::E4m3ToF32,
        Conversion::E5m2ToF32,
    ];

    /// The instruction that computes `family`, if the GPU has one. (The OCP
    /// non-saturating FP8 modes have none: the hardware only saturates.)
    #[inline]
    pub const fn of(family: Family) -> Option<Conversion> {
        use Format::{Bfloat16, Binary16, Fp8E4m3, Fp8E5m2};
        use Overflow::{SatFinite, Standard};
        match family {
            Family::F32ToNarrow { format: Binary16, overflow: Standard } => Some(Conversion::F32ToF16),
            Family::F32ToNarrow { format: Binary16, overflow: SatFinite } => Some(Conversion::F32ToF16Satfinite),
            Family::F32ToNarrow { format: Bfloat16, overflow: Standard } => Some(Conversion::F32ToBf16),
            Family::F32ToNarrow { format: Bfloat16, overflow: SatFinite } => Some(Conversion::F32ToBf16Satfinite),
            Family::F32ToNarrow { format: Fp8E4m3, overflow: SatFinite } => Some(Conversion::F32ToE4m3Satfinite),
            Family::F32ToNarrow { format: Fp8E5m2, overflow: SatFinite } => Some(Conversion::F32ToE5m2Satfinite),
            Family::NarrowToF32 { format: Binary16 } => Some(Conversion::F16ToF32),
            Family::NarrowToF32 { format: Bfloat16 } => Some(Conversion::Bf16ToF32),
            Family::NarrowToF32 { format: Fp8E4m3 } => Some(Conversion::E4m3ToF32),
            Family::NarrowToF32 { format: Fp8E5m2 } => Some(Conversion::E5m2ToF32),
            _ => None,
        }
    }

    /// The PTX it is, as the PTX ISA spells it.
    #[inline]
    pub const fn ptx(self) -> &'static str {
        match self {
            Conversion::F32ToF16 => "cvt.rn.f16.f32",
            Conversion::F32ToF16Satfinite => "cvt.rn.satfinite.f16.f32",
            Conversion::F32ToBf16 => "cvt.rn.bf16.f32",
            Conversion::F32ToBf16Satfinite => "cvt.rn.satfinite.bf16.f32",
            Conversion::F32ToE4m3Satfinite => "cvt.rn.satfinite.e4m3x2.f32",
            Conversion::F32ToE5m2Satfinite => "cvt.rn.satfinite.e5m2x2.f32",
            Conversion::F16ToF32 => "cvt.f32.f16",
            Conversion::Bf16ToF32 => "cvt.f32.bf16",
            Conversion::E4m3ToF32 => "cvt.rn.f16x2.e4m3x2 + cvt.f32.f16",
            Conversion::E5m2ToF32 => "cvt.rn.f16x2.e5m2x2 + cvt.f32.f16",
        }
    }

    /// The oldest target that has it, as `ptxas` 12.9 accepts it (binary16 needs nothing
    /// newer than the baseline; the `.satfinite` binary16 form needs PTX 8.1; bfloat16
    /// sm_80, with PTX 7.1 for `cvt.f32.bf16` and 8.1 for `.satfinite`; FP8 sm_89 and
    /// PTX 8.1, or sm_90 and PTX 7.8).
    #[inline]
    pub const fn needs(self) -> PtxTarget {
        let (sm, ptx) = match self {
            Conversion::F32ToF16 | Conversion::F16ToF32 => (BASELINE.sm, BASELINE.ptx),
            Conversion::F32ToF16Satfinite => (BASELINE.sm, 81),
            Conversion::F32ToBf16 => (80, 70),
            Conversion::Bf16ToF32 => (80, 71),
            Conversion::F32ToBf16Satfinite => (80, 81),
            Conversion::F32ToE4m3Satfinite
            | Conversion::F32ToE5m2Satfinite
            | Conversion::E4m3ToF32
            | Conversion::E5m2ToF32 => (89, 81),
        };
        PtxTarget { sm, ptx }
    }

    /// The target of the module its hardware kernels are built into: the first of
    /// [`TARGETS`] that [covers](PtxTarget::covers) what it [needs](Conversion::needs).
    #[inline]
    pub const fn target(self) -> PtxTarget {
        let mut i = 0;
        while i < TARGETS.len() {
            if TARGETS[i].covers(self.needs()) {
                return TARGETS[i];
            }
            i += 1;
        }
        // Unreachable while the last target covers every instruction (a test checks it).
        TARGETS[TARGETS.len() - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_ordered_and_every_instruction_has_a_module() {
        assert_eq!(TARGETS[0], BASELINE);
        assert!(TARGETS.windows(2).all(|w| w[0].sm < w[1].sm && w[0].ptx <= w[1].ptx), "{TARGETS:?}");
        for instruction in Conversion::ALL {
            let (needs, target) = (instruction.needs(), instruction.target());
            assert!(target.covers(needs), "{instruction:?}: {target:?} does not cover {needs:?}");
            // The oldest such module: no earlier target covers it.
            let earlier = TARGETS.iter().take_while(|t| **t != target);
            assert!(earlier.clone().all(|t| !t.covers(needs)), "{instruction:?}");
        }
        assert_eq!(Conversion::F32ToF16.target(), BASELINE);
        assert_eq!(Conversion::F32ToF16Satfinite.target(), PtxTarget { sm: 80, ptx: 81 });
        assert_eq!(Conversion::E4m3ToF32.target().sm, 89);
    }

    #[test]
    fn only_the_non_saturating_fp8_conversions_lack_an_instruction() {
        for format in [Format::Binary16, Format::Bfloat16, Format::Fp8E4m3, Format::Fp8E5m2] {
            assert!(Conversion::of(Family::NarrowToF32 { format }).is_some(), "{format:?}");
            let saturating = Family::F32ToNarrow { format, overflow: Overflow::SatFinite };
            assert!(Conversion::of(saturating).is_some(), "{format:?}");
            let standard = Family::F32ToNarrow { format, overflow: Overflow::Standard };
            let is_fp8 = format.bits() == 8;
            assert_eq!(Conversion::of(standard).is_none(), is_fp8, "{format:?}");
        }
        assert_eq!(Conversion::of(Family::IsNan(Format::Binary16)), None);
    }
}
