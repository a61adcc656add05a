//! The CPU loops at every level this machine has, proven on every input: the f32 ↔
//! binary16 / bfloat16 / FP8 conversions in their three forms (the CPU's instruction
//! where it has one, the vectorised software form, the scalar table variant), all 2^32
//! f32 inputs for the narrowings (`#[ignore]`d: `-- --ignored` runs them, as CI does) and
//! every encoding for the widenings. (It was the conformance crate's `cpu_levels`; the
//! conversions `normalize` runs are proven at every level by the files wing's
//! `host/wings/files/src/tests/cpu_levels.rs`.)
//!
//! A level this machine lacks prints `skipped: <reason>`; `REQUIRE_CPU_LEVEL=avx512`
//! (or `avx2`) makes a missing level up to that one fail instead. Where two forms differ,
//! the inputs are counted by the input's own class (its encoding: zero, subnormal, …) and
//! by where the exact conversion puts it (`bitexact_verify::reference::InputClass`), and
//! printed; a form used for exact results (`CpuConversion::exact_form`) must not differ
//! at all, and an instruction not used for them may differ only in the ways it is
//! documented to ([`Documented`]), each difference checked against that documented result.

use super::levels;
use crate::Level;
use crate::convert::{self, ConversionForm, CpuConversion};
use bitexact_verify::reference::{self, InputClass};
use rayon::prelude::*;
use shared::{Class, Family};
use std::fmt::Write as _;

/// `text` on the process's stderr in one piece, past the test harness's capture: the
/// reports of what was proved (a skip goes through `bitexact_support::skip`).
fn say(text: &str) {
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), text.as_bytes());
}

/// What a CPU instruction that is not used for exact results is documented, and was
/// measured, to do differently from the exact conversion. A difference that none of an
/// instruction's allowances explains fails the proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Documented {
    /// A subnormal input is read as a zero of its sign, whatever it would round to
    /// (`vcvtneps2bf16`: Intel's SDM says it "treats input denormals as zero"). Measured
    /// at avx512 on all 2^32 f32: 16,711,678 inputs, every one a subnormal f32, of which
    /// 65,536 round to the smallest normal bfloat16 when rounded exactly.
    SubnormalInputAsZero,
    /// A NaN input gives a NaN, quieted or with a payload of the instruction's own
    /// (`vcvtph2ps` quiets the 1,022 signalling NaNs of binary16; the fix-up that makes
    /// it exact clears the quiet bit again).
    NanAsSomeNan,
}

impl Documented {
    /// Whether this allowance explains `got` for `input` in `family`.
    fn explains(self, family: Family, input: u64, got: u64) -> bool {
        let format = reference::conversion_input_format(family);
        let class = reference::class(format, input);
        match self {
            Documented::SubnormalInputAsZero => {
                let signed_zero = input & (1 << (format.bits() - 1));
                class == Class::Subnormal && got == reference::expected(family, signed_zero)
            }
            Documented::NanAsSomeNan => class == Class::Nan && reference::conversion_output_is_nan(family, got),
        }
    }
}

/// Inputs on which a form differs from the scalar form: by the input's own class, by
/// where the exact conversion puts it, and those that no allowance explains.
#[derive(Default)]
struct Differences {
    by_class: [u64; InputClass::ALL.len()],
    by_input_class: [u64; Class::ALL.len()],
    /// The smallest such input: (input, form's bits, scalar's bits).
    first: Option<(u64, u64, u64)>,
    /// Differences that none of the allowances passed to [`three_way`] explains.
    unexplained: u64,
    /// The smallest unexplained one.
    first_unexplained: Option<(u64, u64, u64)>,
}

impl Differences {
    fn total(&self) -> u64 {
        self.by_class.iter().sum()
    }

    fn merge(mut self, other: Differences) -> Differences {
        for (a, b) in self.by_class.iter_mut().zip(other.by_class) {
            *a += b;
        }
        for (a, b) in self.by_input_class.iter_mut().zip(other.by_input_class) {
            *a += b;
        }
        let smaller = |a: Option<(u64, u64, u64)>, b: Option<(u64, u64, u64)>| match (a, b) {
            (Some(a), Some(b)) => Some(if b.0 < a.0 { b } else { a }),
            (a, b) => a.or(b),
        };
        self.first = smaller(self.first, other.first);
        self.unexplained += other.unexplained;
        self.first_unexplained = smaller(self.first_unexplained, other.first_unexplained);
        self
    }

    /// Counts one difference: `input` gave `form` where the scalar form gave `scalar`.
    fn count(&mut self, family: Family, input: u64, (form, scalar): (u64, u64), allowed: &[Documented]) {
        let class = reference::conversion_input_class(family, input);
        self.by_class[InputClass::ALL.iter().position(|&c| c == class).expect("a class")] += 1;
        let own = reference::class(reference::conversion_input_format(family), input);
        self.by_input_class[Class::ALL.iter().position(|&c| c == own).expect("a class")] += 1;
        self.first = self.first.or(Some((input, form, scalar)));
        if !allowed.iter().any(|a| a.explains(family, input, form)) {
            self.unexplained += 1;
            self.first_unexplained = self.first_unexplained.or(Some((input, form, scalar)));
        }
    }

    /// `none`, or `12 (inputs: nan 12; exactly: nan 12), first 0x7c01: 0x7fc02000 vs
    /// 0x7f802000`, and the unexplained ones where there are any.
    fn describe(&self) -> String {
        if self.total() == 0 {
            return "none".into();
        }
        let list = |counts: &mut dyn Iterator<Item = (&'static str, u64)>| -> String {
            counts.filter(|&(_, n)| n > 0).map(|(name, n)| format!("{name} {n}")).collect::<Vec<_>>().join(", ")
        };
        let inputs = list(&mut Class::ALL.iter().map(fp_class_name).zip(self.by_input_class));
        let exactly = list(&mut InputClass::ALL.iter().map(|c| c.name()).zip(self.by_class));
        let mut text = format!("{} (inputs: {inputs}; exactly: {exactly})", self.total());
        if let Some((input, form, scalar)) = self.first {
            let _ = write!(text, ", first {input:#x}: {form:#x} vs {scalar:#x}");
        }
        if let Some((input, form, scalar)) = self.first_unexplained {
            let _ = write!(text, "; {} unexplained, first {input:#x}: {form:#x} vs {scalar:#x}", self.unexplained);
        }
        text
    }
}

/// A short name of an input's own class, for reports.
fn fp_class_name(class: &Class) -> &'static str {
    match class {
        Class::Zero => "zero",
        Class::Subnormal => "subnormal",
        Class::Normal => "normal",
        Class::Infinite => "infinite",
        Class::Nan => "nan",
    }
}

/// Compares, on the inputs `range` (bit patterns of `I`), each form of `conversion` at
/// each of `levels` with the scalar form (which `exhaustive_cpu.rs` proves equal to the
/// exact reference on every input; a difference is checked against the reference here
/// too), in blocks on all cores. The scalar form is the baseline code whatever the level,
/// so each block's scalar results are computed once and every level's forms compared with
/// them, a whole block at a time, element by element only where it differs. What
/// [`CpuConversion::run_at`] runs at a level must equal them (it panics otherwise), and so
/// must its streaming form where it has one. Returns, for each of `levels` in order, the
/// differences of the software and the instruction form (`None` where the CPU has no
/// instruction at that level); the instruction's are checked against `allowed`, the
/// software form's against nothing.
fn three_way<I, O>(
    conversion: &CpuConversion<I, O>,
    levels: &[Level],
    range: std::ops::Range<u64>,
    allowed: &[Documented],
) -> Vec<(Differences, Option<Differences>)>
where
    I: bytemuck::Pod + Send + Sync,
    O: bytemuck::Pod + Into<u64> + Send + Sync + PartialEq,
    u64: TryInto<I>,
{
    const BLOCK: u64 = 1 << 16;
    let blocks = range.end.div_ceil(BLOCK) - range.start / BLOCK;
    // No difference yet at any level; an instruction's count only where the level has it.
    let none_yet = || {
        let at = |level: Level| conversion.instruction(level).is_some().then(Differences::default);
        levels.iter().map(|&level| (Differences::default(), at(level))).collect::<Vec<_>>()
    };
    (0..blocks)
        .into_par_iter()
        .map(|block| {
            let start = range.start + block * BLOCK;
            let inputs: Vec<I> = (start..(start + BLOCK).min(range.end))
                .map(|x| x.try_into().unwrap_or_else(|_| unreachable!("in range")))
                .collect();
            let run = |level: Level, form: ConversionForm| {
                let mut out = vec![O::zeroed(); inputs.len()];
                conversion.run_form(level, form, &inputs, &mut out).then_some(out)
            };
            // The same at every level (`run_form` runs the baseline code for it): once a block.
            let scalar = run(Level::Portable, ConversionForm::Scalar).expect("always there");
            let tally = |form: &[O], allowed: &[Documented]| {
                let mut differences = Differences::default();
                // The whole block equal, as it almost always is: nothing to count.
                if *form == scalar[..] {
                    return differences;
                }
                for (i, (&f, &s)) in form.iter().zip(&scalar).enumerate() {
                    if f != s {
                        let input = start + i as u64;
                        let (f, s) = (f.into(), s.into());
                        assert_eq!(
                            s,
                            reference::expected(conversion.family, input),
                            "{}: the scalar form is wrong on {input:#x}",
                            conversion.name
                        );
                        differences.count(conversion.family, input, (f, s), allowed);
                    }
                }
                differences
            };
            levels
                .iter()
                .map(|&level| {
                    // What `run_at` picks at this level (the loop of `loop_level`, its exact
                    // form) is what the commands run: it must equal the scalar form too.
                    let mut picked = vec![O::zeroed(); inputs.len()];
                    conversion.run_at(level, &inputs, &mut picked);
                    let picked = tally(&picked, &[]);
                    assert_eq!(
                        picked.total(),
                        0,
                        "{} at {level}: run_at (the loop of {}) differs from the scalar form: {}",
                        conversion.name,
                        conversion.loop_level(level),
                        picked.describe()
                    );
                    let mut streamed = vec![O::zeroed(); inputs.len()];
                    if conversion.run_streaming_at(level, &inputs, &mut streamed) {
                        let streamed = tally(&streamed, &[]);
                        assert_eq!(
                            streamed.total(),
                            0,
                            "{} at {level}: the streaming form differs from the scalar form: {}",
                            conversion.name,
                            streamed.describe()
                        );
                    }
                    let software = tally(&run(level, ConversionForm::Software).expect("always there"), &[]);
                    let instruction = run(level, ConversionForm::Instruction).map(|out| tally(&out, allowed));
                    (software, instruction)
                })
                .collect::<Vec<_>>()
        })
        .reduce(none_yet, |a, b| {
            a.into_iter()
                .zip(b)
                .map(|((s1, i1), (s2, i2))| {
                    let instruction = match (i1, i2) {
                        (Some(a), Some(b)) => Some(a.merge(b)),
                        (a, b) => a.or(b),
                    };
                    (s1.merge(s2), instruction)
                })
                .collect()
        })
}

/// Runs [`three_way`] for `conversion` at every level this machine has (`levels`), all of
/// them in one walk of `range`, prints each level's differences, and checks the claims:
/// the software form and, where the conversion uses it for exact results, the
/// instruction, equal the scalar form on every input; an instruction not used for exact
/// results differs only where one of `allowed` explains the difference.
fn prove<I, O>(conversion: &CpuConversion<I, O>, levels: &[Level], range: std::ops::Range<u64>, allowed: &[Documented])
where
    I: bytemuck::Pod + Send + Sync,
    O: bytemuck::Pod + Into<u64> + Send + Sync + PartialEq,
    u64: TryInto<I>,
{
    let mut report = String::new();
    let mut failures = Vec::new();
    let each_level = three_way(conversion, levels, range, allowed);
    for (&level, (software, instruction)) in levels.iter().zip(each_level) {
        let _ = writeln!(
            report,
            "{} at {level}: software form ({}) vs scalar: {}",
            conversion.name,
            conversion.software_name,
            software.describe()
        );
        if software.total() != 0 {
            failures.push(format!("{} at {level}: the software form differs", conversion.name));
        }
        let Some(instruction) = instruction else {
            let _ = writeln!(report, "{} at {level}: no instruction here", conversion.name);
            continue;
        };
        let name = conversion.instruction_name.unwrap_or("the instruction");
        let used = conversion.exact_form(level) == ConversionForm::Instruction;
        let _ = writeln!(
            report,
            "{} at {level}: {name} vs scalar: {} ({})",
            conversion.name,
            instruction.describe(),
            if used { "used for exact results" } else { "not used for exact results" }
        );
        if used && instruction.total() != 0 {
            failures.push(format!("{} at {level}: {name} is used for exact results but differs", conversion.name));
        }
        if !used && instruction.unexplained != 0 {
            failures
                .push(format!("{} at {level}: {name} differs where none of {allowed:?} explains it", conversion.name));
        }
    }
    say(&report);
    assert!(failures.is_empty(), "{}\n{report}", failures.join("\n"));
}

#[test]
fn widenings_from_16_bits_agree_three_ways_on_every_encoding() {
    // vcvtph2ps alone makes a signalling NaN quiet; with its fix-up it is used for exact
    // results, so it must equal the reference everywhere (the allowance is for the
    // instruction alone, should the fix-up ever be taken out).
    let levels = levels();
    prove(&convert::F16_TO_F32, &levels, 0..1 << 16, &[Documented::NanAsSomeNan]);
    prove(&convert::BF16_TO_F32, &levels, 0..1 << 16, &[]);
    let every: Vec<u16> = (0..=u16::MAX).collect();
    for conversion in convert::WIDENINGS_16 {
        prove_streaming(conversion, &levels, &every);
    }
}

/// The streaming form of a conversion (what `run_at` writes outputs of 16 MiB or more
/// with) equals the scalar form on `inputs` at every level that has one: all of them, and
/// windows of them that start and end inside a 32-byte store, written from an aligned
/// output address and from one, two and three elements past it (the head before the
/// first aligned store, the tail after the last). The 2^32 walks of [`three_way`] run it
/// too, on every input.
fn prove_streaming<I, O>(conversion: &CpuConversion<I, O>, levels: &[Level], inputs: &[I])
where
    I: bytemuck::Pod + std::fmt::LowerHex,
    O: bytemuck::Pod + std::fmt::LowerHex + PartialEq,
{
    let mut exact = vec![O::zeroed(); inputs.len()];
    conversion.run_form(Level::Portable, ConversionForm::Scalar, inputs, &mut exact);
    for &level in levels {
        let mut buffer = vec![O::zeroed(); inputs.len() + 64];
        let skew = buffer.as_ptr().align_offset(32);
        let mut ran = false;
        for (from, len, past_aligned) in [(0, inputs.len(), 0), (5, inputs.len() - 12, 1), (3, 1000, 2), (1, 7, 3)] {
            let dst = &mut buffer[skew + past_aligned..skew + past_aligned + len];
            dst.fill(O::zeroed());
            ran = conversion.run_streaming_at(level, &inputs[from..from + len], dst);
            if !ran {
                break;
            }
            for (i, (&got, &want)) in dst.iter().zip(&exact[from..from + len]).enumerate() {
                assert!(
                    got == want,
                    "{} at {level}, streaming: input {:#x} gave {got:#x}, want {want:#x} ({len} from {from}, output {past_aligned} past aligned)",
                    conversion.name,
                    inputs[from + i]
                );
            }
        }
        say(&format!(
            "{} at {level}: {}\n",
            conversion.name,
            if ran { "the streaming form equals the scalar form on these inputs" } else { "no streaming form" }
        ));
    }
}

#[test]
fn widenings_from_fp8_agree_three_ways_on_every_encoding() {
    let levels = levels();
    for conversion in convert::WIDENINGS_8 {
        prove(conversion, &levels, 0..1 << 8, &[]);
    }
}

/// What `vcvtneps2bf16` does differently: it takes subnormal inputs as zero. Its NaNs
/// equal the exact conversion's on all 2^32 inputs (measured at avx512), so no NaN
/// difference is allowed.
const BF16_INSTRUCTION: &[Documented] = &[Documented::SubnormalInputAsZero];

#[test]
fn narrowings_agree_three_ways_on_a_sample_of_every_class() {
    // The streaming form's heads and tails, on f32s of every class (a stride over all 2^32).
    let strided: Vec<u32> = (0..1u32 << 16).map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
    for conversion in convert::NARROWINGS {
        prove_streaming(conversion, &levels(), &strided);
    }
    // The quick run: the first and last 2^20 f32s of each sign (zeros, subnormals, NaNs,
    // infinities) and a stride through the normals; the 2^32 walks below are `--ignored`.
    let levels = levels();
    for range in [0..1 << 20, 0x7F70_0000..0x8010_0000, 0xFF70_0000..1 << 32, 0x3F00_0000..0x3F10_0000] {
        prove(&convert::F32_TO_F16, &levels, range.clone(), &[]);
        prove(&convert::F32_TO_BF16, &levels, range.clone(), BF16_INSTRUCTION);
        for conversion in convert::TO_FP8 {
            prove(conversion, &levels, range.clone(), &[]);
        }
    }
}

#[test]
#[ignore = "a 2^32-input proof: `cargo test --workspace --profile proofs -- --ignored` runs it (CI does)"]
fn f32_to_binary16_agrees_three_ways_on_every_f32() {
    prove(&convert::F32_TO_F16, &levels(), 0..1 << 32, &[]);
}

#[test]
#[ignore = "a 2^32-input proof: `cargo test --workspace --profile proofs -- --ignored` runs it (CI does)"]
fn f32_to_bfloat16_agrees_three_ways_on_every_f32() {
    prove(&convert::F32_TO_BF16, &levels(), 0..1 << 32, BF16_INSTRUCTION);
}

#[test]
#[ignore = "a 2^32-input proof: `cargo test --workspace --profile proofs -- --ignored` runs it (CI does)"]
fn f32_to_fp8_agrees_both_ways_on_every_f32() {
    let levels = levels();
    for conversion in convert::TO_FP8 {
        prove(conversion, &levels, 0..1 << 32, &[]);
    }
}

#[test]
fn the_portable_level_runs_everywhere_and_comes_first() {
    assert_eq!(levels().first(), Some(&Level::Portable));
}
