//! f32 ↔ binary16 / bfloat16 / FP8 over slices, on the CPU, at the level
//! [`super::level`] says: each conversion a [`CpuConversion`] (its [`LevelForms`], the
//! idea every CPU conversion shares with `normalize`'s) with up to three forms
//! ([`ConversionForm`]), the one [`CpuConversion::run`] takes for exact results being the fastest
//! that is proven equal to the exact reference on every input.
//!
//! - [`ConversionForm::Scalar`]: the table variant that defines the conversion (`f32_to_f16`, ...),
//!   compiled for the baseline target: the scalar form the GPU's `Map` kernel also runs.
//! - [`ConversionForm::Software`]: a branch-free variant of the same family (`f32_to_f16_branch_free`,
//!   `f16_to_f32_scaled`, ...) compiled for the level, which LLVM vectorises; for the FP8
//!   narrowings a `shared` function that rounds subnormals by one f32 addition
//!   (`fp8::e4m3::from_f32_bits_standard_by_addition`, ...), equal to the branch-free
//!   variant on every input and faster.
//! - [`ConversionForm::Instruction`]: the CPU's own conversion instruction, where it has one:
//!   F16C `vcvtps2ph` / `vcvtph2ps` ([`Level::Avx2`]), their AVX-512F forms and
//!   AVX512-BF16 `vcvtneps2bf16` ([`Level::Avx512`]).
//!
//! `host/wings/cpu/src/tests/cpu_levels.rs` compares the three on every input (2^32 f32s for the
//! narrowings, every encoding for the widenings) at every level the machine has, and
//! counts the inputs on which two differ by class. An instruction is used for exact
//! results ([`CpuConversion::instruction_exact`]) only where that proof finds it equal to
//! the reference on every input:
//!
//! - `vcvtps2ph` (F16C, round to nearest even by its immediate): equal on every f32,
//!   NaN payloads included (both keep the top 9 payload bits and set the quiet bit).
//! - `vcvtph2ps`: alone, it makes a signalling NaN quiet, where the exact widening keeps
//!   every payload bit (the 1,022 signalling NaN encodings differ). Used with a fix-up
//!   that clears the quiet bit again for those inputs (`x86::f16x8_to_f32_f16c`: two
//!   16-bit compares and a sign-extension; at [`Level::Avx512`] a mask register from one
//!   compare and a masked `vpandd`, no shuffle): equal on every encoding.
//! - `vcvtneps2bf16`: not used: it takes subnormal inputs as zero and makes NaNs quiet
//!   in its own way; its differences are counted by the proof where the CPU has it.
//! - The AVX-512 forms of `vcvtps2ph` / `vcvtph2ps` are proven by the same test at
//!   [`Level::Avx512`].
//!
//! Every loop starts its vector stores at the output's first cache-line boundary
//! (`split_at_line`). A level's loop runs only where it pays: where a wider one is
//! not faster for a conversion ([`CpuConversion::widest`], measured), the wider level runs
//! the narrower level's loop, whose instructions it has.

use super::{Level, SliceFn, level, map_bits_at};
use shared::{Family, Primitive, Stored, variants};

/// How a conversion is computed: see the module doc.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConversionForm {
    /// The defining table variant, for the baseline target.
    Scalar,
    /// A branch-free variant of the same family, vectorised for the level.
    Software,
    /// The CPU's conversion instruction.
    Instruction,
}

impl ConversionForm {
    /// Every form, for running (or timing) each with [`CpuConversion::run_form`].
    pub const ALL: [ConversionForm; 3] =
        [ConversionForm::Scalar, ConversionForm::Software, ConversionForm::Instruction];

    /// `scalar`, `software` or `instruction`.
    pub const fn name(self) -> &'static str {
        match self {
            ConversionForm::Scalar => "scalar",
            ConversionForm::Software => "software",
            ConversionForm::Instruction => "instruction",
        }
    }
}

/// One f32 ↔ narrow conversion on the CPU, in its forms: see the module doc.
pub struct CpuConversion<I: 'static, O: 'static> {
    /// The defining variant's name (`f32_to_f16`).
    pub name: &'static str,
    /// Its family: what the exact reference computes.
    pub family: Family,
    /// The branch-free table variant, or the `shared` function (for the FP8 narrowings,
    /// `from_f32_bits_*_by_addition`, whose rounding is one f32 addition in the binade), that
    /// the software form runs.
    pub software_name: &'static str,
    /// The instruction's mnemonic, where the CPU may have one.
    pub instruction_name: Option<&'static str>,
    /// Whether [`CpuConversion::run`] uses the instruction (where the level has it): it
    /// is proven equal to the reference on every input.
    pub instruction_exact: bool,
    /// The widest level whose loop pays for this conversion: at a wider level,
    /// [`CpuConversion::run_at`] runs this level's loop instead ([`CpuConversion::loop_level`]),
    /// as measured by `narrow_vs_crates` (docs/files.md, "CPU throughput").
    pub widest: Level,
    /// The form [`CpuConversion::run_at`] takes for outputs of
    /// [`super::STREAMING_BYTES`] or more, where the level has one: the exact form's
    /// results, stored around the caches (`vmovntdq`), so that no line of the output is
    /// read before it is written ([`CpuConversion::run_streaming_at`]).
    streaming: fn(Level) -> Option<SliceFn<I, O>>,
    scalar: SliceFn<I, O>,
    software: fn(Level, &[I], &mut [O]),
    instruction: fn(Level) -> Option<SliceFn<I, O>>,
}

impl<I: Copy, O: Copy> CpuConversion<I, O> {
    /// The exact result of every element, by the fastest proven form at the chosen level:
    /// the instruction where [`CpuConversion::instruction_exact`] and the CPU has it, else
    /// the software form (branch-free, faster than the scalar one even for the baseline).
    /// Converts `min(src.len(), dst.len())` elements, f32s and narrow values as their bits.
    ///
    /// ```
    /// # mod bitexact { pub use bitexact_cpu as cpu; }
    /// use bitexact::cpu::convert::{F16_TO_F32, F32_TO_BF16, F32_TO_F16};
    /// let values = [1.0f32, 0.1, 65520.0, f32::NAN];
    /// let bits: Vec<u32> = values.iter().map(|v| v.to_bits()).collect();
    /// let mut f16 = [0u16; 4];
    /// F32_TO_F16.run(&bits, &mut f16);
    /// // 65520 is the midpoint past 65504 that rounds to infinity; NaN stays NaN.
    /// assert_eq!(f16, [0x3c00, 0x2e66, 0x7c00, 0x7e00]);
    /// let mut bf16 = [0u16; 4];
    /// F32_TO_BF16.run(&bits, &mut bf16);
    /// assert_eq!(bf16[..3], [0x3f80, 0x3dcd, 0x4780]);
    /// let mut back = [0u32; 4];
    /// F16_TO_F32.run(&f16, &mut back);
    /// assert_eq!(f32::from_bits(back[1]), 0.0999755859375); // 0.1 rounded to binary16
    /// ```
    pub fn run(&self, src: &[I], dst: &mut [O]) {
        self.run_at(level(), src, dst);
    }

    /// [`CpuConversion::run`] at `level` (a level this CPU lacks runs the portable code):
    /// the form [`CpuConversion::exact_form`] names at [`CpuConversion::loop_level`].
    /// An output of [`super::STREAMING_BYTES`] or more is written by the streaming form
    /// where the level has one ([`CpuConversion::run_streaming_at`]).
    pub fn run_at(&self, level: Level, src: &[I], dst: &mut [O]) {
        let level = self.loop_level(level);
        if size_of_val(dst) >= super::STREAMING_BYTES && self.run_streaming_at(level, src, dst) {
            return;
        }
        match self.exact_form(level) {
            ConversionForm::Instruction => (self.instruction(level).expect("exact_form checked it"))(src, dst),
            ConversionForm::Software => (self.software)(level, src, dst),
            ConversionForm::Scalar => (self.scalar)(src, dst),
        }
    }

    /// The level whose loop [`CpuConversion::run_at`] runs when asked for `level`: `level`,
    /// or [`CpuConversion::widest`] where that is lower (a wider loop that is not faster
    /// for this conversion is not run). The lower level's instructions are a subset of
    /// `level`'s, so the CPU has them.
    pub fn loop_level(&self, level: Level) -> Level {
        level.min(self.widest)
    }

    /// The form [`CpuConversion::run_at`] takes with the loop of `level`: the one proven
    /// to give the exact results there.
    pub fn exact_form(&self, level: Level) -> ConversionForm {
        match self.instruction(level) {
            Some(_) if self.instruction_exact => ConversionForm::Instruction,
            _ => ConversionForm::Software,
        }
    }

    /// The streaming form at `level` over the slices, whatever their size, or `false`
    /// when the level has none (then `dst` is untouched). Its results are the exact
    /// form's: `host/wings/cpu/src/tests/cpu_levels.rs` proves it on every encoding.
    #[doc(hidden)]
    pub fn run_streaming_at(&self, level: Level, src: &[I], dst: &mut [O]) -> bool {
        match (self.streaming)(level) {
            Some(streaming) => {
                streaming(src, dst);
                true
            }
            None => false,
        }
    }

    /// The instruction form, if this CPU can run it at `level` (for [`Level::Avx2`]
    /// F16C; for [`Level::Avx512`] the AVX-512 forms).
    #[doc(hidden)]
    pub fn instruction(&self, level: Level) -> Option<SliceFn<I, O>> {
        (self.instruction)(level)
    }

    /// `form` at `level` over the slices, or `false` when this CPU has no such form (an
    /// instruction it lacks): one form alone, to compare or time it against the others.
    /// Only [`CpuConversion::exact_form`] is proven to give the exact results at every
    /// level; an instruction that is not the exact form there may differ (its doc says
    /// where).
    ///
    /// ```
    /// # mod bitexact { pub use bitexact_cpu as cpu; }
    /// use bitexact::cpu::Level;
    /// use bitexact::cpu::convert::{ConversionForm, F32_TO_F16};
    ///
    /// let src = [1.0f32, 65504.0, 1e-8].map(f32::to_bits);
    /// for form in ConversionForm::ALL {
    ///     let mut dst = [0u16; 3];
    ///     // The portable level has no instruction form.
    ///     let ran = F32_TO_F16.run_form(Level::Portable, form, &src, &mut dst);
    ///     assert_eq!(ran, form != ConversionForm::Instruction);
    ///     assert!(!ran || dst == [0x3c00, 0x7bff, 0x0000], "{form:?}");
    /// }
    /// assert_eq!(F32_TO_F16.exact_form(Level::Portable), ConversionForm::Software);
    /// assert_eq!(F32_TO_F16.loop_level(Level::Portable), Level::Portable);
    /// ```
    pub fn run_form(&self, level: Level, form: ConversionForm, src: &[I], dst: &mut [O]) -> bool {
        match form {
            ConversionForm::Scalar => (self.scalar)(src, dst),
            ConversionForm::Software => (self.software)(level, src, dst),
            ConversionForm::Instruction => match self.instruction(level) {
                Some(f) => f(src, dst),
                None => return false,
            },
        }
        true
    }
}

/// A conversion's CPU forms per level: what runs at each level, its streaming twin, and
/// which form it is. The one idea behind [`CpuConversion`] (f32 ↔ binary16 / bfloat16 /
/// FP8, typed) and [`super::unorm::UnormPath`] (`normalize`'s UNORM conversions, over
/// bytes, their types erased by the variant that defines them).
#[doc(hidden)]
pub trait LevelForms<I, O> {
    /// The exact result of every element at `level` (a level this CPU lacks runs the
    /// portable code), by the fastest form proven equal to the reference there.
    fn run_at(&self, level: Level, src: &[I], dst: &mut [O]);

    /// [`LevelForms::run_at`]'s results with stores around the caches, where `level`
    /// has such a form: `true`; else `false`, `dst` untouched.
    fn run_streaming_at(&self, level: Level, src: &[I], dst: &mut [O]) -> bool;

    /// What [`LevelForms::run_at`] computes with at `level`, for `--verbose`, the bench
    /// and the proofs' messages.
    fn form_at(&self, level: Level) -> String;
}

#[doc(hidden)] // the proofs' trait, not API
impl<I: Copy, O: Copy> LevelForms<I, O> for CpuConversion<I, O> {
    fn run_at(&self, level: Level, src: &[I], dst: &mut [O]) {
        CpuConversion::run_at(self, level, src, dst);
    }

    fn run_streaming_at(&self, level: Level, src: &[I], dst: &mut [O]) -> bool {
        CpuConversion::run_streaming_at(self, level, src, dst)
    }

    /// The instruction's mnemonic, the software form's name, or the variant's.
    fn form_at(&self, level: Level) -> String {
        match self.exact_form(self.loop_level(level)) {
            ConversionForm::Instruction => self.instruction_name.unwrap_or(self.name).to_string(),
            ConversionForm::Software => self.software_name.to_string(),
            ConversionForm::Scalar => self.name.to_string(),
        }
    }
}

/// No instruction at any level.
fn none<I, O>(_: Level) -> Option<SliceFn<I, O>> {
    None
}

/// The defining variant `P` for the baseline target.
fn scalar<P: Primitive>(src: &[P::In], dst: &mut [<P::Out as Stored>::Bits]) {
    map_bits_at::<P>(Level::Portable, src, dst);
}

/// A conversion's streaming form, or [`none`].
macro_rules! streaming_or_none {
    () => {
        none
    };
    ($streaming:expr) => {
        $streaming
    };
}

macro_rules! conversion {
    ($(#[$doc:meta])* $const:ident: $in:ty => $out:ty, $variant:ident, $software:ident, $instruction:expr, $mnemonic:expr, $exact:expr, $widest:ident $(, streaming: $streaming:expr)?) => {
        $(#[$doc])*
        pub const $const: CpuConversion<$in, $out> = CpuConversion {
            name: <variants::$variant as Primitive>::NAME,
            family: <variants::$variant as Primitive>::FAMILY,
            software_name: <variants::$software as Primitive>::NAME,
            instruction_name: $mnemonic,
            instruction_exact: $exact,
            widest: Level::$widest,
            streaming: streaming_or_none!($($streaming)?),
            scalar: scalar::<variants::$variant>,
            software: map_bits_at::<variants::$software>,
            instruction: $instruction,
        };
    };
    ($(#[$doc:meta])* $const:ident: $in:ty => $out:ty, $variant:ident, fn $software:path, $instruction:expr, $mnemonic:expr, $exact:expr, $widest:ident $(, streaming: $streaming:expr)?) => {
        $(#[$doc])*
        pub const $const: CpuConversion<$in, $out> = CpuConversion {
            name: <variants::$variant as Primitive>::NAME,
            family: <variants::$variant as Primitive>::FAMILY,
            software_name: stringify!($software),
            instruction_name: $mnemonic,
            instruction_exact: $exact,
            widest: Level::$widest,
            streaming: streaming_or_none!($($streaming)?),
            scalar: scalar::<variants::$variant>,
            software: |level, src, dst| super::map_fn_at(level, src, dst, $software),
            instruction: $instruction,
        };
    };
}

#[cfg(target_arch = "x86_64")]
use super::x86::{
    bf16_to_f32_streaming, f16_to_f32_instruction, f16_to_f32_streaming, f32_to_bf16_instruction,
    f32_to_f16_instruction, f32_to_f16_streaming,
};
#[cfg(not(target_arch = "x86_64"))]
use none as f32_to_f16_instruction;
#[cfg(not(target_arch = "x86_64"))]
use none as f16_to_f32_instruction;
#[cfg(not(target_arch = "x86_64"))]
use none as f32_to_bf16_instruction;
#[cfg(not(target_arch = "x86_64"))]
use none as f16_to_f32_streaming;
#[cfg(not(target_arch = "x86_64"))]
use none as bf16_to_f32_streaming;
#[cfg(not(target_arch = "x86_64"))]
use none as f32_to_f16_streaming;

conversion!(
    /// f32 → binary16, infinity past 65504.
    F32_TO_F16: u32 => u16, f32_to_f16, f32_to_f16_branch_free, f32_to_f16_instruction, Some("vcvtps2ph"), true, Avx2,
    streaming: f32_to_f16_streaming
);
conversion!(
    /// binary16 → f32.
    F16_TO_F32: u16 => u32, f16_to_f32, f16_to_f32_scaled, f16_to_f32_instruction, Some("vcvtph2ps + signalling-NaN fix-up"), true, Avx512,
    streaming: f16_to_f32_streaming
);
conversion!(
    /// f32 → bfloat16, infinity past the largest finite value.
    F32_TO_BF16: u32 => u16, f32_to_bf16, f32_to_bf16, f32_to_bf16_instruction, Some("vcvtneps2bf16"), false, Avx512
);
conversion!(
    /// bfloat16 → f32.
    BF16_TO_F32: u16 => u32, bf16_to_f32, bf16_to_f32, none, None, false, Avx512, streaming: bf16_to_f32_streaming
);
conversion!(
    /// f32 → FP8 E4M3, NaN past 448 (OCP non-saturating).
    F32_TO_E4M3: u32 => u8, f32_to_e4m3, fn shared::fp8::e4m3::from_f32_bits_standard_by_addition, none, None, false, Avx512
);
conversion!(
    /// f32 → FP8 E4M3, 448 past it.
    F32_TO_E4M3_SATFINITE: u32 => u8, f32_to_e4m3_satfinite, fn shared::fp8::e4m3::from_f32_bits_satfinite_by_addition, none, None, false, Avx512
);
conversion!(
    /// f32 → FP8 E5M2, infinity past 57344 (OCP non-saturating).
    F32_TO_E5M2: u32 => u8, f32_to_e5m2, fn shared::fp8::e5m2::from_f32_bits_standard_by_addition, none, None, false, Avx512
);
conversion!(
    /// f32 → FP8 E5M2, 57344 past it.
    F32_TO_E5M2_SATFINITE: u32 => u8, f32_to_e5m2_satfinite, fn shared::fp8::e5m2::from_f32_bits_satfinite_by_addition, none, None, false, Avx512
);
conversion!(
    /// FP8 E4M3 → f32.
    E4M3_TO_F32: u8 => u32, e4m3_to_f32, e4m3_to_f32_scaled, none, None, false, Avx512
);
conversion!(
    /// FP8 E5M2 → f32.
    E5M2_TO_F32: u8 => u32, e5m2_to_f32, e5m2_to_f32_scaled, none, None, false, Avx512
);

/// bfloat16 → binary16 (infinity past 65504): [`F32_TO_F16`] of [`BF16_TO_F32`], in one
/// pass. Where the level has F16C ([`Level::Avx2`] and up) each bfloat16 is widened in a
/// register (a shift: the exact widening) and narrowed by `vcvtps2ph`, the instruction
/// [`F32_TO_F16`]'s exact form is; elsewhere the two conversions run in turn over a small
/// tile. Either way the bits are those of the two in turn, which are the exact
/// reference's (both formats' values are f32s, so the one rounding is the narrowing's):
/// `bf16_to_f16_is_the_two_conversions_in_turn` checks every encoding at every level
/// this machine has. Over `min(src.len(), dst.len())` elements.
#[doc(hidden)]
pub fn bf16_to_f16_at(level: Level, src: &[u16], dst: &mut [u16]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(fused) = super::x86::bf16_to_f16_instruction(level) {
        return fused(src, dst);
    }
    const TILE: usize = 512;
    let mut tile = [0u32; TILE];
    for (s, d) in src.chunks(TILE).zip(dst.chunks_mut(TILE)) {
        let n = s.len().min(d.len());
        BF16_TO_F32.run_at(level, &s[..n], &mut tile[..n]);
        F32_TO_F16.run_at(level, &tile[..n], &mut d[..n]);
    }
}

/// The f32 → narrow conversions, for the proofs and the benchmarks.
pub const NARROWINGS: [&CpuConversion<u32, u16>; 2] = [&F32_TO_F16, &F32_TO_BF16];
/// The f32 → FP8 conversions.
pub const TO_FP8: [&CpuConversion<u32, u8>; 4] =
    [&F32_TO_E4M3, &F32_TO_E4M3_SATFINITE, &F32_TO_E5M2, &F32_TO_E5M2_SATFINITE];
/// The binary16 / bfloat16 → f32 conversions.
pub const WIDENINGS_16: [&CpuConversion<u16, u32>; 2] = [&F16_TO_F32, &BF16_TO_F32];
/// The FP8 → f32 conversions.
pub const WIDENINGS_8: [&CpuConversion<u8, u32>; 2] = [&E4M3_TO_F32, &E5M2_TO_F32];

#[cfg(test)]
mod tests {
    use super::*;

    /// [`bf16_to_f16_at`] gives, on every bfloat16 encoding at every level this machine
    /// has, the bits of [`BF16_TO_F32`] then [`F32_TO_F16`] (each proven against the
    /// exact reference by `host/wings/cpu/src/tests/cpu_levels.rs`), from every start in a vector
    /// and for every tail length.
    #[test]
    fn bf16_to_f16_is_the_two_conversions_in_turn() {
        let every: Vec<u16> = (0..=u16::MAX).collect();
        for level in crate::Level::ALL.into_iter().filter(|l| l.check("").is_ok()) {
            let mut widened = vec![0u32; every.len()];
            BF16_TO_F32.run_at(level, &every, &mut widened);
            let mut want = vec![0u16; every.len()];
            F32_TO_F16.run_at(level, &widened, &mut want);
            for start in 0..9 {
                for end in [every.len(), every.len() - 1, every.len() - 7] {
                    let mut got = vec![0xAAAAu16; end - start];
                    bf16_to_f16_at(level, &every[start..end], &mut got);
                    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[start + i]) {
                        panic!(
                            "{level}: bf16 {:#06x} gave {:#06x}, the two conversions {:#06x} (start {start}, end {end})",
                            every[start + i],
                            got[i],
                            want[start + i]
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn each_software_form_is_of_its_conversions_family() {
        let families = |name: &str| host_variant_family(name).unwrap_or_else(|| panic!("{name} is not a variant"));
        for (name, family, software) in [
            (F32_TO_F16.name, F32_TO_F16.family, F32_TO_F16.software_name),
            (F16_TO_F32.name, F16_TO_F32.family, F16_TO_F32.software_name),
            (F32_TO_BF16.name, F32_TO_BF16.family, F32_TO_BF16.software_name),
            (BF16_TO_F32.name, BF16_TO_F32.family, BF16_TO_F32.software_name),
            (F32_TO_E4M3.name, F32_TO_E4M3.family, F32_TO_E4M3.software_name),
            (F32_TO_E4M3_SATFINITE.name, F32_TO_E4M3_SATFINITE.family, F32_TO_E4M3_SATFINITE.software_name),
            (F32_TO_E5M2.name, F32_TO_E5M2.family, F32_TO_E5M2.software_name),
            (F32_TO_E5M2_SATFINITE.name, F32_TO_E5M2_SATFINITE.family, F32_TO_E5M2_SATFINITE.software_name),
            (E4M3_TO_F32.name, E4M3_TO_F32.family, E4M3_TO_F32.software_name),
            (E5M2_TO_F32.name, E5M2_TO_F32.family, E5M2_TO_F32.software_name),
        ] {
            if software.starts_with("shared::") {
                // A `shared` function, not a variant: named for the conversion's target
                // format and overflow mode (cpu_levels proves it on all 2^32 inputs).
                let format = if name.contains("e4m3") { "e4m3" } else { "e5m2" };
                assert!(software.contains(&format!("::{format}::")), "{name}: {software}");
                assert_eq!(software.contains("satfinite"), name.contains("satfinite"), "{name}: {software}");
                continue;
            }
            assert_eq!(families(software), family, "{name}: {software} is of another family");
        }
    }

    /// `run_at` at every level this CPU has equals the scalar form on every 16-bit
    /// encoding, whatever the level it picks ([`CpuConversion::loop_level`]) and wherever
    /// the output starts against a cache line (the loops cut `dst` at its first line
    /// boundary: `super::super::split_at_line`), for lengths that end before, at and past
    /// that boundary.
    #[test]
    fn run_at_every_level_equals_the_scalar_form_at_every_offset() {
        let every: Vec<u16> = (0..=u16::MAX).collect();
        let wide_every: Vec<u32> = (0..1 << 16).map(|i: u32| i.wrapping_mul(0x9E37_79B9)).collect();
        for level in Level::ALL.into_iter().filter(|level| level.check("").is_ok()) {
            for conversion in WIDENINGS_16 {
                check_offsets(conversion, level, &every);
            }
            for conversion in NARROWINGS {
                check_offsets(conversion, level, &wide_every);
            }
        }
    }

    fn check_offsets<I: Copy + Default, O: Copy + Default + PartialEq + std::fmt::Debug>(
        conversion: &CpuConversion<I, O>,
        level: Level,
        input: &[I],
    ) {
        let mut exact = vec![O::default(); input.len()];
        conversion.run_form(Level::Portable, ConversionForm::Scalar, input, &mut exact);
        let mut buffer = vec![O::default(); input.len() + 64];
        for offset in 0..64 / size_of::<O>() + 1 {
            for len in [0, 1, 7, 15, 17, 63, 100, input.len() - 64] {
                let start = input.len() - len - offset; // a different input window per case
                let dst = &mut buffer[offset..offset + len];
                dst.fill(O::default());
                conversion.run_at(level, &input[start..start + len], dst);
                assert_eq!(
                    &dst[..],
                    &exact[start..start + len],
                    "{} at {level}, output {offset} elements in, {len} long",
                    conversion.name
                );
            }
        }
    }

    /// The family of the table variant `name`.
    fn host_variant_family(name: &str) -> Option<Family> {
        macro_rules! find {
            ($({ $name:ident, $family:expr, $in:ty => $out:ty, $f:path, $claim:ident, [$($kind:ident),*], $desc:literal })*) => {
                $(if name == stringify!($name) {
                    return Some(<variants::$name as Primitive>::FAMILY);
                })*
            };
        }
        shared::for_each_variant!(find);
        None
    }
}
