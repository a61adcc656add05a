//! The GPU's own conversion instructions, for the families that have one, and the PTX
//! targets whose modules hold the [`KernelKind::Hardware`](crate::KernelKind::Hardware)
//! kernels that run them.
//!
//! A hardware kernel runs the instruction where the variant's kernel runs the variant's
//! function; the GPU checks compare the two, and both with the CPU, on every input. The
//! instructions need newer targets than the baseline PTX (`.target sm_75`) for bfloat16
//! and FP8, and `ptxas` rejects a whole module that uses an instruction its target lacks,
//! so `host/wings/gpu/build.rs` builds one PTX module per entry of [`TARGETS`] and puts each
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

/// Every PTX module `host/wings/gpu/build.rs` builds, oldest first: [`BASELINE`], then one per newer
/// target some instruction needs, holding only hardware kernels (bfloat16 and the
/// saturating binary16/bfloat16 forms need sm_80 and PTX 8.1, FP8 sm_89 and PTX 8.1).
pub const TARGETS: [PtxTarget; 3] = [BASELINE, PtxTarget { sm: 80, ptx: 81 }, PtxTarget { sm: 89, ptx: 81 }];

/// A conversion the GPU does in hardware: a PTX `cvt` (two for FP8 → f32), rounding to
/// nearest, ties to even, with subnormals kept (no `.ftz`). The OCP non-saturating FP8
/// modes have no instruction: for them it is the saturating instruction with the
/// overflow's result selected on the input's magnitude (one compare and select each,
/// [`Conversion::F32ToE4m3`], [`Conversion::F32ToE5m2`]).
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
    /// OCP non-saturating E4M3, which has no instruction: [`Conversion::F32ToE4m3Satfinite`]
    /// and then [`e4m3_standard`] (NaN with the input's sign past 464, ±inf and NaN
    /// included).
    F32ToE4m3,
    /// OCP non-saturating E5M2, which has no instruction: [`Conversion::F32ToE5m2Satfinite`]
    /// and then [`e5m2_standard`] (±inf from 61440 on, S.11111.11 for NaN).
    F32ToE5m2,
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
    pub const ALL: [Conversion; 12] = [
        Conversion::F32ToF16,
        Conversion::F32ToF16Satfinite,
        Conversion::F32ToBf16,
        Conversion::F32ToBf16Satfinite,
        Conversion::F32ToE4m3Satfinite,
        Conversion::F32ToE5m2Satfinite,
        Conversion::F32ToE4m3,
        Conversion::F32ToE5m2,
        Conversion::F16ToF32,
        Conversion::Bf16ToF32,
        Conversion::E4m3ToF32,
        Conversion::E5m2ToF32,
    ];

    /// The hardware form of `family`, if the GPU has one: every f32 ↔ binary16 /
    /// bfloat16 / FP8 conversion (the OCP non-saturating FP8 modes by the saturating
    /// instruction and a select: the hardware only saturates).
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
            Family::F32ToNarrow { format: Fp8E4m3, overflow: Standard } => Some(Conversion::F32ToE4m3),
            Family::F32ToNarrow { format: Fp8E5m2, overflow: Standard } => Some(Conversion::F32ToE5m2),
            Family::NarrowToF32 { format: Binary16 } => Some(Conversion::F16ToF32),
            Family::NarrowToF32 { format: Bfloat16 } => Some(Conversion::Bf16ToF32),
            Family::NarrowToF32 { format: Fp8E4m3 } => Some(Conversion::E4m3ToF32),
            Family::NarrowToF32 { format: Fp8E5m2 } => Some(Conversion::E5m2ToF32),
            _ => None,
        }
    }

    /// The PTX it is, as the PTX ISA spells it (with the select, for the two forms that
    /// add one).
    #[inline]
    pub const fn ptx(self) -> &'static str {
        match self {
            Conversion::F32ToF16 => "cvt.rn.f16.f32",
            Conversion::F32ToF16Satfinite => "cvt.rn.satfinite.f16.f32",
            Conversion::F32ToBf16 => "cvt.rn.bf16.f32",
            Conversion::F32ToBf16Satfinite => "cvt.rn.satfinite.bf16.f32",
            Conversion::F32ToE4m3Satfinite => "cvt.rn.satfinite.e4m3x2.f32",
            Conversion::F32ToE5m2Satfinite => "cvt.rn.satfinite.e5m2x2.f32",
            Conversion::F32ToE4m3 => "cvt.rn.satfinite.e4m3x2.f32 + NaN past 464",
            Conversion::F32ToE5m2 => "cvt.rn.satfinite.e5m2x2.f32 + inf from 61440",
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
            | Conversion::F32ToE4m3
            | Conversion::F32ToE5m2
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

/// Magnitude bits of f32 464.0, the tie between E4M3's 448 and the 480 it lacks (it
/// rounds to even, 448): past it the non-saturating E4M3 conversion gives NaN.
pub const E4M3_NAN_PAST: u32 = 0x43E8_0000;
/// Magnitude bits of f32 61440.0, the tie between E5M2's 57344 and 2^16 (it rounds to
/// even, up): from it on the non-saturating E5M2 conversion gives infinity.
pub const E5M2_INF_FROM: u32 = 0x4770_0000;
/// Magnitude bits of f32 +inf: above it, NaN.
const F32_INF: u32 = 0x7F80_0000;

/// The OCP non-saturating E4M3 byte of f32 bits `x`, given `saturated`, the byte the
/// saturating conversion gives for `x` (zero-extended): S.1111.111 (NaN, the input's
/// sign) where `|x| > 464`, ±inf and NaN included; `saturated` elsewhere, which is then
/// the non-saturating result too (the two modes differ only past 464). The select that
/// [`Conversion::F32ToE4m3`] adds to the instruction.
#[inline]
pub const fn e4m3_standard(x: u32, saturated: u32) -> u32 {
    let sign = (x >> 24) & 0x80;
    if x & 0x7FFF_FFFF > E4M3_NAN_PAST { sign | 0x7F } else { saturated }
}

/// The OCP non-saturating E5M2 byte of f32 bits `x`, given `saturated`, the byte the
/// saturating conversion gives for `x` (zero-extended): S.11111.11 (NaN) where `x` is
/// NaN, S.11111.00 (±inf) where `|x| >= 61440` (±inf included), `saturated` elsewhere.
/// The select that [`Conversion::F32ToE5m2`] adds to the instruction.
#[inline]
pub const fn e5m2_standard(x: u32, saturated: u32) -> u32 {
    let (sign, magnitude) = ((x >> 24) & 0x80, x & 0x7FFF_FFFF);
    // S.11111.00, and 3 more where `F32_INF - magnitude` wraps (`magnitude` a NaN's).
    let special = sign | 0x7C | ((F32_INF.wrapping_sub(magnitude) >> 31) * 3);
    if magnitude >= E5M2_INF_FROM { special } else { saturated }
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
    fn every_narrow_conversion_has_a_hardware_form_and_only_they_do() {
        for format in [Format::Binary16, Format::Bfloat16, Format::Fp8E4m3, Format::Fp8E5m2] {
            assert!(Conversion::of(Family::NarrowToF32 { format }).is_some(), "{format:?}");
            for overflow in [Overflow::SatFinite, Overflow::Standard] {
                assert!(Conversion::of(Family::F32ToNarrow { format, overflow }).is_some(), "{format:?} {overflow:?}");
            }
        }
        // The non-saturating FP8 forms are the saturating instruction plus a select.
        for (standard, saturating) in [
            (Conversion::F32ToE4m3, Conversion::F32ToE4m3Satfinite),
            (Conversion::F32ToE5m2, Conversion::F32ToE5m2Satfinite),
        ] {
            assert!(standard.ptx().starts_with(saturating.ptx()), "{standard:?}");
            assert_eq!(standard.needs(), saturating.needs());
        }
        assert_eq!(Conversion::of(Family::IsNan(Format::Binary16)), None);
        assert_eq!(
            Conversion::of(Family::F32ToNarrow { format: Format::Fp8E4m3Fnuz, overflow: Overflow::Standard }),
            None
        );
    }

    /// The selects on the saturating conversion give the non-saturating one around
    /// both thresholds, at the extremes and on a sweep of every 2^12th input (the tests
    /// crate's exhaustive CPU test does all 2^32).
    #[test]
    fn the_selects_turn_the_saturating_conversions_into_the_standard_ones() {
        use crate::fp8::{e4m3, e5m2};
        let near = |t: u32| (t - 4..=t + 4).flat_map(|m| [m, m | 0x8000_0000]);
        let special = [0, 0x8000_0000, 0x7F80_0000, 0xFF80_0000, 0x7F80_0001, 0xFFC0_0000, 0x7FFF_FFFF, u32::MAX];
        let sweep = (0..1u32 << 20).map(|i| i << 12 | i >> 8);
        for x in near(E4M3_NAN_PAST).chain(near(E5M2_INF_FROM)).chain(special).chain(sweep) {
            let e4m3 = e4m3_standard(x, u32::from(e4m3::from_f32_bits_satfinite(x)));
            assert_eq!(e4m3, u32::from(e4m3::from_f32_bits_standard(x)), "e4m3 {x:#010x}");
            let e5m2 = e5m2_standard(x, u32::from(e5m2::from_f32_bits_satfinite(x)));
            assert_eq!(e5m2, u32::from(e5m2::from_f32_bits_standard(x)), "e5m2 {x:#010x}");
        }
        // The thresholds are the ties: 464 still rounds to 448, 61440 already to inf.
        assert_eq!(e4m3::from_f32_bits_standard(E4M3_NAN_PAST), 0x7E);
        assert_eq!(e4m3::from_f32_bits_standard(E4M3_NAN_PAST + 1), 0x7F);
        assert_eq!(e5m2::from_f32_bits_standard(E5M2_INF_FROM - 1), 0x7B);
        assert_eq!(e5m2::from_f32_bits_standard(E5M2_INF_FROM), 0x7C);
    }
}
