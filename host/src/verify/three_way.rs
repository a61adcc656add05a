//! The three-way check of a conversion the GPU has an instruction for: the variant's
//! software form on the GPU (its `Map` kernel), the instruction on the GPU (its
//! `Hardware` kernel) and the software form on the CPU, on the same inputs.
//!
//! The CPU result is the pivot: the report counts the inputs where each GPU result
//! differs from it, by [`InputClass`], and keeps the first such input. [`ThreeWay::tally`]
//! is a pure function of the four slices; [`three_way`] runs the kernels to get them.

use crate::gpu::{Bits, Gpu, GpuError};
use crate::support::element::Element;
use crate::verify::reference::{InputClass, conversion_input_class};
use rayon::prelude::*;
use shared::{Family, Stored, kind};
use std::fmt;

/// One input on which a GPU result differs from the CPU's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Difference {
    /// Index in the family's domain.
    pub index: u64,
    /// Input bits.
    pub input: u64,
    /// The GPU's result bits.
    pub gpu: u64,
    /// The CPU's result bits.
    pub cpu: u64,
}

/// Where one GPU result differs from the CPU's.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Disagreement {
    /// Inputs on which the results differ.
    pub inputs: u64,
    /// Those inputs counted by class, in the order of [`InputClass::ALL`].
    pub by_class: [u64; InputClass::ALL.len()],
    /// The one with the smallest domain index.
    pub first: Option<Difference>,
}

impl Disagreement {
    /// Counts a difference.
    fn record(&mut self, class: InputClass, difference: Difference) {
        self.inputs += 1;
        self.by_class[class_index(class)] += 1;
        if self.first.is_none_or(|f| difference.index < f.index) {
            self.first = Some(difference);
        }
    }

    /// Both parts' differences; the same in whichever order they are merged.
    fn merge(mut self, other: Disagreement) -> Disagreement {
        self.inputs += other.inputs;
        for (a, b) in self.by_class.iter_mut().zip(other.by_class) {
            *a += b;
        }
        self.first = match (self.first, other.first) {
            (Some(a), Some(b)) => Some(if b.index < a.index { b } else { a }),
            (a, b) => a.or(b),
        };
        self
    }

    /// The differing inputs of `class`.
    pub fn count(&self, class: InputClass) -> u64 {
        self.by_class[class_index(class)]
    }

    /// Whether every difference is in one of `classes`.
    pub fn only_in(&self, classes: &[InputClass]) -> bool {
        InputClass::ALL.iter().all(|c| classes.contains(c) || self.count(*c) == 0)
    }
}

fn class_index(class: InputClass) -> usize {
    InputClass::ALL.iter().position(|&c| c == class).expect("every class is in ALL")
}

/// `agrees everywhere`, or `differs on N inputs: nan N, overflow M (first: input 0x..,
/// gpu 0x.., cpu 0x..)`.
impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.inputs == 0 {
            return f.write_str("agrees everywhere");
        }
        write!(f, "differs on {} inputs:", self.inputs)?;
        let classes = InputClass::ALL.iter().filter(|&&c| self.count(c) > 0);
        for (i, &class) in classes.enumerate() {
            write!(f, "{} {} {}", if i == 0 { "" } else { "," }, class.name(), self.count(class))?;
        }
        if let Some(d) = self.first {
            write!(f, " (first: input {:#x}, gpu {:#x}, cpu {:#x})", d.input, d.gpu, d.cpu)?;
        }
        Ok(())
    }
}

/// The three-way comparison over some inputs of a family's domain.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ThreeWay {
    /// Inputs compared.
    pub elements: u64,
    /// The software form on the GPU against the CPU.
    pub software: Disagreement,
    /// The hardware instruction on the GPU against the CPU.
    pub hardware: Disagreement,
}

impl ThreeWay {
    /// Compares, element by element, the results `software` (GPU, the variant's kernel)
    /// and `hardware` (GPU, the instruction's kernel) with `cpu` on the inputs `inputs`
    /// of `family`, which are its domain's inputs from index `first` on. The slices have
    /// equal lengths (panics otherwise). Differences are counted by
    /// [`conversion_input_class`], so `family` must be a conversion between f32 and a
    /// narrow format. Pure; splits the work over the rayon pool, with a result that does
    /// not depend on how.
    pub fn tally<I: Element, O: Element>(
        family: Family,
        first: u64,
        inputs: &[I],
        cpu: &[O],
        software: &[O],
        hardware: &[O],
    ) -> ThreeWay {
        let len = inputs.len();
        assert!(
            cpu.len() == len && software.len() == len && hardware.len() == len,
            "three-way tally of {len} inputs with {}, {} and {} results",
            cpu.len(),
            software.len(),
            hardware.len()
        );
        const PART: usize = 1 << 16;
        let (software, hardware) = (0..len.div_ceil(PART))
            .into_par_iter()
            .map(|part| {
                let (mut sw, mut hw) = (Disagreement::default(), Disagreement::default());
                for i in part * PART..((part + 1) * PART).min(len) {
                    let (input, cpu) = (inputs[i].to_u64(), cpu[i].to_u64());
                    for (tally, gpu) in [(&mut sw, software[i].to_u64()), (&mut hw, hardware[i].to_u64())] {
                        if gpu != cpu {
                            let class = conversion_input_class(family, input);
                            tally.record(class, Difference { index: first + i as u64, input, gpu, cpu });
                        }
                    }
                }
                (sw, hw)
            })
            .reduce(
                || (Disagreement::default(), Disagreement::default()),
                |(a_sw, a_hw), (b_sw, b_hw)| (a_sw.merge(b_sw), a_hw.merge(b_hw)),
            );
        ThreeWay { elements: len as u64, software, hardware }
    }

    /// Both parts' comparisons (e.g. consecutive chunks of a domain).
    pub fn merge(self, other: ThreeWay) -> ThreeWay {
        ThreeWay {
            elements: self.elements + other.elements,
            software: self.software.merge(other.software),
            hardware: self.hardware.merge(other.hardware),
        }
    }
}

/// `N inputs; GPU software form: ...; GPU hardware instruction: ...`.
impl fmt::Display for ThreeWay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} inputs; GPU software form vs CPU: {}; GPU hardware instruction vs CPU: {}",
            self.elements, self.software, self.hardware
        )
    }
}

/// Runs inputs `first .. first + len` of `P`'s domain through `P`'s hardware kernel and
/// its own kernel on the GPU, and through `P` on the CPU, and compares them
/// ([`ThreeWay::tally`]). [`GpuError::NeedsTarget`] if the device cannot run the
/// instruction, before anything else runs.
pub fn three_way<P>(gpu: &Gpu, first: u64, len: usize) -> Result<ThreeWay, GpuError>
where
    P: kind::Map + kind::Hardware,
    P::In: Element,
    Bits<P>: Element,
{
    let family = P::FAMILY;
    let inputs: Vec<P::In> = crate::support::parallel::map_indices(len, |i| {
        P::In::from_u64(crate::verify::domain::input(family, first + i as u64))
    });
    let device_input = gpu.upload(&inputs)?;
    let mut device_output = gpu.zeros::<Bits<P>>(len)?;
    gpu.map_hardware::<P>(&device_input, &mut device_output)?;
    let hardware = gpu.download(&device_output)?;
    gpu.map::<P>(&device_input, &mut device_output)?;
    let software = gpu.download(&device_output)?;
    drop((device_input, device_output));
    let cpu: Vec<Bits<P>> = crate::support::parallel::map_indices(len, |i| P::apply(inputs[i]).to_stored());
    Ok(ThreeWay::tally(family, first, &inputs, &cpu, &software, &hardware))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared::Format;
    use shared::narrow::Overflow;

    const F16: Family = Family::F32ToNarrow { format: Format::Binary16, overflow: Overflow::Standard };

    /// Inputs of every class, the CPU's binary16 results for them, and a "hardware" that
    /// returns the canonical NaN 0x7FFF for every NaN and flushes one subnormal result.
    fn sample() -> (Vec<u32>, Vec<u16>, Vec<u16>) {
        let inputs: Vec<u32> = vec![
            0x0000_0000, // +0
            0x3F80_0000, // 1.0
            0x3380_0000, // 2^-24: the smallest binary16 subnormal
            0x4780_0000, // 65536: overflows
            0x7F80_0000, // +inf
            0x7FC0_0001, // quiet NaN, payload 1
            0xFF80_0001, // negative signalling NaN
            0x7FFF_FFFF, // NaN, all ones
            0xBF80_0000, // -1.0
        ];
        let cpu: Vec<u16> = inputs.iter().map(|&x| shared::binary16::from_f32_bits(x)).collect();
        let mut hardware = cpu.clone();
        for (h, &x) in hardware.iter_mut().zip(&inputs) {
            if f32::from_bits(x).is_nan() {
                *h = 0x7FFF;
            }
        }
        hardware[2] = 0; // flushed to zero
        (inputs, cpu, hardware)
    }

    #[test]
    fn differences_are_counted_by_class_with_the_first_kept() {
        let (inputs, cpu, hardware) = sample();
        let report = ThreeWay::tally(F16, 100, &inputs, &cpu, &cpu, &hardware);
        assert_eq!(report.elements, 9);
        assert_eq!(report.software, Disagreement::default());
        assert_eq!(report.software.to_string(), "agrees everywhere");
        let hw = &report.hardware;
        // 0x7FFF_FFFF keeps its top payload bits on the CPU: 0x7FFF, like the hardware.
        assert_eq!(hw.inputs, 3, "{hw}");
        assert_eq!((hw.count(InputClass::Nan), hw.count(InputClass::Subnormal)), (2, 1));
        assert_eq!(hw.count(InputClass::Overflow) + hw.count(InputClass::Normal) + hw.count(InputClass::Zero), 0);
        assert_eq!(hw.first, Some(Difference { index: 102, input: 0x3380_0000, gpu: 0, cpu: 1 }));
        assert!(hw.only_in(&[InputClass::Nan, InputClass::Subnormal]) && !hw.only_in(&[InputClass::Nan]));
        assert_eq!(
            hw.to_string(),
            "differs on 3 inputs: subnormal 1, nan 2 (first: input 0x33800000, gpu 0x0, cpu 0x1)"
        );
    }

    #[test]
    fn an_overflow_difference_is_told_from_an_infinite_one() {
        let inputs: Vec<u32> = vec![0x4780_0000, 0x7F80_0000, 0xC780_0000];
        let cpu: Vec<u16> = inputs.iter().map(|&x| shared::binary16::from_f32_bits(x)).collect();
        let saturated: Vec<u16> = inputs.iter().map(|&x| shared::binary16::from_f32_bits_satfinite(x)).collect();
        let report = ThreeWay::tally(F16, 0, &inputs, &cpu, &saturated, &cpu);
        assert_eq!(report.hardware.inputs, 0);
        assert_eq!((report.software.count(InputClass::Overflow), report.software.count(InputClass::Infinite)), (2, 1));
        assert_eq!(report.software.first.map(|d| (d.gpu, d.cpu)), Some((0x7BFF, 0x7C00)));
    }

    #[test]
    fn merging_chunks_gives_the_whole_tally() {
        let (inputs, cpu, hardware) = sample();
        let whole = ThreeWay::tally(F16, 0, &inputs, &cpu, &hardware, &hardware);
        let (a, b) = (
            ThreeWay::tally(F16, 0, &inputs[..4], &cpu[..4], &hardware[..4], &hardware[..4]),
            ThreeWay::tally(F16, 4, &inputs[4..], &cpu[4..], &hardware[4..], &hardware[4..]),
        );
        assert_eq!(b.clone().merge(a.clone()), whole);
        assert_eq!(a.merge(b), whole);
        // The widening direction classifies the narrow encoding.
        let widen = Family::NarrowToF32 { format: Format::Fp8E4m3 };
        let (codes, cpu): (Vec<u8>, Vec<u32>) = ([0x7Fu8, 0x01, 0x08].to_vec(), vec![0x7FF0_0000, 1, 2]);
        let report = ThreeWay::tally(widen, 0, &codes, &cpu, &cpu, &[0x7FC0_0000, 1, 2]);
        assert_eq!((report.hardware.inputs, report.hardware.count(InputClass::Nan)), (1, 1));
    }

    #[test]
    #[should_panic(expected = "three-way tally of 2 inputs")]
    fn slices_of_different_lengths_are_a_caller_bug() {
        let _ = ThreeWay::tally(F16, 0, &[0u32, 1], &[0u16, 0], &[0u16], &[0u16, 0]);
    }
}
