//! The three-way check of a conversion the GPU has an instruction for: the variant's
//! software form on the GPU (its `Map` kernel), the instruction on the GPU (its
//! `Hardware` kernel) and the software form on the CPU, on the same inputs; and, for a
//! variant with one, the instruction in its stream loop (its `HardwareStream` kernel).
//!
//! The CPU result is the pivot: the report counts the inputs where each GPU result
//! differs from it, by [`InputClass`], and keeps the first such input. [`ThreeWay::tally`]
//! is a pure function of the slices; [`three_way`] runs the kernels to get them.

use crate::reference::{InputClass, conversion_input_class};
use bitexact_gpu::{Bits, Gpu, GpuError, HostElements, InputAt};
use bitexact_support::element::Element;
use rayon::prelude::*;
use shared::{Family, KernelKind, KernelName, Stored, kind};
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
    /// The instruction's stream kernel on the GPU against the CPU, for a variant with
    /// one: equal to [`ThreeWay::hardware`] when the stream loop computes what the
    /// per-element kernel does (the instruction's NaN results included).
    pub hardware_stream: Option<Disagreement>,
    /// Inputs on which the stream kernel's result differs from the per-element
    /// kernel's (0 when it has none): the two run the same instruction, so any is a
    /// bug of the stream loop.
    pub stream_vs_hardware: u64,
}

impl ThreeWay {
    /// Compares, element by element, the results `software` (GPU, the variant's kernel),
    /// `hardware` (GPU, the instruction's kernel) and `hardware_stream` (GPU, the
    /// instruction's stream kernel, if any) with `cpu` on the inputs `inputs` of
    /// `family`, which are its domain's inputs from index `first` on, and
    /// `hardware_stream` with `hardware`. The slices have equal lengths (panics
    /// otherwise). Differences are counted by [`conversion_input_class`], so `family`
    /// must be a conversion between f32 and a narrow format. Pure; splits the work over
    /// the rayon pool, with a result that does not depend on how.
    pub fn tally<I: Element, O: Element>(
        family: Family,
        first: u64,
        inputs: &[I],
        cpu: &[O],
        software: &[O],
        hardware: &[O],
        hardware_stream: Option<&[O]>,
    ) -> ThreeWay {
        let len = inputs.len();
        let stream_len = hardware_stream.map_or(len, <[O]>::len);
        assert!(
            cpu.len() == len && software.len() == len && hardware.len() == len && stream_len == len,
            "three-way tally of {len} inputs with {}, {}, {} and {stream_len} results",
            cpu.len(),
            software.len(),
            hardware.len()
        );
        const PART: usize = 1 << 16;
        let empty = || ThreeWay {
            elements: 0,
            software: Disagreement::default(),
            hardware: Disagreement::default(),
            hardware_stream: hardware_stream.map(|_| Disagreement::default()),
            stream_vs_hardware: 0,
        };
        (0..len.div_ceil(PART))
            .into_par_iter()
            .map(|part| {
                let mut t = empty();
                for i in part * PART..((part + 1) * PART).min(len) {
                    t.elements += 1;
                    let (input, cpu, index) = (inputs[i].to_u64(), cpu[i].to_u64(), first + i as u64);
                    let streamed = hardware_stream.map(|s| s[i].to_u64());
                    let results = [Some(software[i].to_u64()), Some(hardware[i].to_u64()), streamed];
                    let tallies = [Some(&mut t.software), Some(&mut t.hardware), t.hardware_stream.as_mut()];
                    for (tally, gpu) in tallies.into_iter().zip(results) {
                        if let (Some(tally), Some(gpu)) = (tally, gpu)
                            && gpu != cpu
                        {
                            let class = conversion_input_class(family, input);
                            tally.record(class, Difference { index, input, gpu, cpu });
                        }
                    }
                    t.stream_vs_hardware += u64::from(streamed.is_some_and(|s| s != hardware[i].to_u64()));
                }
                t
            })
            .reduce(empty, ThreeWay::merge)
    }

    /// Both parts' comparisons (e.g. consecutive chunks of a domain). Panics if one has a
    /// stream kernel's results and the other not (a caller bug).
    pub fn merge(self, other: ThreeWay) -> ThreeWay {
        let hardware_stream = match (self.hardware_stream, other.hardware_stream) {
            (Some(a), Some(b)) => Some(a.merge(b)),
            (None, None) => None,
            _ => panic!("merging three-way tallies with and without a hardware stream kernel"),
        };
        ThreeWay {
            elements: self.elements + other.elements,
            software: self.software.merge(other.software),
            hardware: self.hardware.merge(other.hardware),
            hardware_stream,
            stream_vs_hardware: self.stream_vs_hardware + other.stream_vs_hardware,
        }
    }
}

/// `N inputs; GPU software form vs CPU: ...; GPU hardware instruction vs CPU: ...`, then
/// for a variant with a hardware stream kernel `; its stream kernel vs CPU: ...; differs
/// from the instruction's per-element kernel on N inputs`.
impl fmt::Display for ThreeWay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} inputs; GPU software form vs CPU: {}; GPU hardware instruction vs CPU: {}",
            self.elements, self.software, self.hardware
        )?;
        if let Some(stream) = &self.hardware_stream {
            write!(
                f,
                "; its stream kernel vs CPU: {stream}; stream vs per-element instruction: {} inputs differ",
                self.stream_vs_hardware
            )?;
        }
        Ok(())
    }
}

/// A variant's hardware stream kernel run on `len` inputs, element `i` the low bits of
/// `input_at(i)`: its results, downloaded.
pub(crate) type StreamRun<'a> = &'a dyn Fn(usize, InputAt<'_>) -> Result<HostElements, GpuError>;

/// Runs inputs `first .. first + len` of `P`'s domain through `P`'s hardware kernel,
/// its hardware stream kernel (`hardware_stream`, if it has one) and its own kernel on
/// the GPU, and through `P` on the CPU, and compares them ([`ThreeWay::tally`]).
/// [`GpuError::NeedsTarget`] if the device cannot run the instruction, before anything
/// else runs.
pub fn three_way<P>(
    gpu: &Gpu,
    first: u64,
    len: usize,
    hardware_stream: Option<StreamRun<'_>>,
) -> Result<ThreeWay, GpuError>
where
    P: kind::Map + kind::Hardware,
    P::In: Element,
    Bits<P>: Element,
{
    let family = P::FAMILY;
    let inputs: Vec<P::In> = bitexact_support::parallel::map_indices(len, |i| {
        P::In::from_u64(crate::domain::input(family, first + i as u64))
    });
    let device_input = gpu.upload(&inputs)?;
    let mut device_output = gpu.zeros::<Bits<P>>(len)?;
    gpu.module_for::<P>(KernelKind::Hardware)?
        .map_hardware::<P>(&device_input.as_view(), &mut device_output.as_view_mut())?;
    let hardware = gpu.download(&device_output)?;
    gpu.module_for::<P>(KernelKind::Map)?.map::<P>(&device_input.as_view(), &mut device_output.as_view_mut())?;
    let software = gpu.download(&device_output)?;
    drop((device_input, device_output));
    let streamed = match hardware_stream {
        None => None,
        Some(run) => {
            let results = run(len, &|i| inputs[i as usize].to_u64())?;
            if results.len() != len {
                let detail = format!("{} results for {len} inputs", results.len());
                return Err(GpuError::Length {
                    kernel: KernelName::of::<P>(KernelKind::HardwareStream).to_string(),
                    detail,
                });
            }
            // In range: `results` holds `len` elements (checked above).
            Some(bitexact_support::parallel::map_indices(len, |i| Bits::<P>::from_u64(results.get(i).unwrap_or(0))))
        }
    };
    let cpu: Vec<Bits<P>> = bitexact_support::parallel::map_indices(len, |i| P::apply(inputs[i]).to_stored());
    Ok(ThreeWay::tally(family, first, &inputs, &cpu, &software, &hardware, streamed.as_deref()))
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
        let report = ThreeWay::tally(F16, 100, &inputs, &cpu, &cpu, &hardware, None);
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
        let report = ThreeWay::tally(F16, 0, &inputs, &cpu, &saturated, &cpu, None);
        assert_eq!(report.hardware.inputs, 0);
        assert_eq!((report.software.count(InputClass::Overflow), report.software.count(InputClass::Infinite)), (2, 1));
        assert_eq!(report.software.first.map(|d| (d.gpu, d.cpu)), Some((0x7BFF, 0x7C00)));
    }

    #[test]
    fn merging_chunks_gives_the_whole_tally() {
        let (inputs, cpu, hardware) = sample();
        let whole = ThreeWay::tally(F16, 0, &inputs, &cpu, &hardware, &hardware, Some(&cpu));
        let (a, b) = (
            ThreeWay::tally(F16, 0, &inputs[..4], &cpu[..4], &hardware[..4], &hardware[..4], Some(&cpu[..4])),
            ThreeWay::tally(F16, 4, &inputs[4..], &cpu[4..], &hardware[4..], &hardware[4..], Some(&cpu[4..])),
        );
        assert_eq!(b.clone().merge(a.clone()), whole);
        assert_eq!(a.merge(b), whole);
        // The widening direction classifies the narrow encoding.
        let widen = Family::NarrowToF32 { format: Format::Fp8E4m3 };
        let (codes, cpu): (Vec<u8>, Vec<u32>) = ([0x7Fu8, 0x01, 0x08].to_vec(), vec![0x7FF0_0000, 1, 2]);
        let report = ThreeWay::tally(widen, 0, &codes, &cpu, &cpu, &[0x7FC0_0000, 1, 2], None);
        assert_eq!((report.hardware.inputs, report.hardware.count(InputClass::Nan)), (1, 1));
    }

    #[test]
    #[should_panic(expected = "three-way tally of 2 inputs")]
    fn slices_of_different_lengths_are_a_caller_bug() {
        let _ = ThreeWay::tally(F16, 0, &[0u32, 1], &[0u16, 0], &[0u16], &[0u16, 0], None);
    }

    #[test]
    #[should_panic(expected = "three-way tally of 2 inputs")]
    fn a_stream_result_slice_of_another_length_is_a_caller_bug() {
        let _ = ThreeWay::tally(F16, 0, &[0u32, 1], &[0u16, 0], &[0u16, 0], &[0u16, 0], Some(&[0u16]));
    }

    #[test]
    fn the_stream_kernel_is_tallied_against_the_cpu_and_against_the_per_element_kernel() {
        let (inputs, cpu, hardware) = sample();
        // A stream loop that computes what the per-element kernel does.
        let same = ThreeWay::tally(F16, 0, &inputs, &cpu, &cpu, &hardware, Some(&hardware));
        assert_eq!(same.hardware_stream.as_ref(), Some(&same.hardware));
        assert_eq!(same.stream_vs_hardware, 0);
        assert!(same.to_string().ends_with("stream vs per-element instruction: 0 inputs differ"), "{same}");
        // One that swaps two neighbours (a packing bug): both counts see it.
        let mut swapped = hardware.clone();
        swapped.swap(0, 1);
        let bad = ThreeWay::tally(F16, 0, &inputs, &cpu, &cpu, &hardware, Some(&swapped));
        assert_eq!(bad.stream_vs_hardware, 2);
        let stream = bad.hardware_stream.as_ref().expect("tallied");
        assert_eq!((stream.inputs, stream.count(InputClass::Zero), stream.count(InputClass::Normal)), (5, 1, 1));
        assert_eq!(stream.first, Some(Difference { index: 0, input: 0, gpu: 0x3C00, cpu: 0 }));
        // Without a stream kernel, nothing is said of one.
        let none = ThreeWay::tally(F16, 0, &inputs, &cpu, &cpu, &hardware, None);
        assert_eq!((&none.hardware_stream, none.stream_vs_hardware), (&None, 0));
        assert!(!none.to_string().contains("stream"), "{none}");
    }

    #[test]
    #[should_panic(expected = "with and without a hardware stream kernel")]
    fn merging_tallies_with_and_without_a_stream_kernel_is_a_caller_bug() {
        let (inputs, cpu, hardware) = sample();
        let with = ThreeWay::tally(F16, 0, &inputs, &cpu, &cpu, &hardware, Some(&hardware));
        let without = ThreeWay::tally(F16, 0, &inputs, &cpu, &cpu, &hardware, None);
        let _ = with.merge(without);
    }
}
