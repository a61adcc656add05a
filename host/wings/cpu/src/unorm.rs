//! `normalize`'s conversions on the CPU, UNORM8 / UNORM16 → f32 / binary16 / bfloat16,
//! each by the fastest form proven exact at the level ([`UnormPath`], its
//! [`LevelForms`]).
//!
//! The GPU runs each conversion's table variant (its `Stream` kernel). The CPU computes
//! the same correctly rounded results, but its cheapest route differs by level:
//!
//! - [`UnormForm::Variant`]: the table variant itself, vectorised for the level
//!   (`super::map_bits_at`).
//! - [`UnormForm::Software`]: a `shared` function that is cheaper on the CPU than the
//!   variant, such as `unorm16_to_bf16_half_up` (`fl32(x / 65535)` rounded half up to
//!   bfloat16: one add and one shift where the variant rounds ties to even and checks
//!   for NaN), vectorised for the level.
//! - [`UnormForm::Instruction`]: a `shared` f32 quotient that is never a binary16
//!   midpoint, then F16C `vcvtps2ph` (proven equal to the exact f32 → binary16 on all
//!   2^32 inputs) for the rounding to binary16.
//! - [`UnormForm::Table`]: at [`Level::Portable`], a table of every code's result (256
//!   or 65,536 entries), filled once by the table variant. The baseline target has no
//!   FMA instruction, so a variant with one calls `fmaf` per element (about 3 ns); a
//!   load from a table that stays in cache costs about a tenth of that.
//!
//! Every form is proven on every code at every level the machine has against the
//! integer reference (`host/wings/files/src/tests/cpu_levels.rs`); that proof, not the argument, is
//! what lets a form run.

use super::convert::LevelForms;
use super::{Level, map_bits_at, map_fn_at};
use shared::{Primitive, Stored, unorm_narrow, variants};
use std::sync::OnceLock;

/// How a normalize conversion is computed on the CPU at a level: see the module doc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnormForm {
    /// The table variant, vectorised for the level.
    Variant(&'static str),
    /// This `shared` function, vectorised for the level.
    Software(&'static str),
    /// This `shared` f32 quotient, then this instruction.
    Instruction(&'static str, &'static str),
    /// A table of every code's result, filled by this table variant.
    Table(&'static str),
}

impl std::fmt::Display for UnormForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnormForm::Variant(name) => write!(f, "{name}"),
            UnormForm::Software(name) => write!(f, "{name}"),
            UnormForm::Instruction(quotient, instruction) => write!(f, "{quotient}, then {instruction}"),
            UnormForm::Table(name) => write!(f, "a table of every code's {name}"),
        }
    }
}

/// A conversion over bytes of whole elements at a level.
type BytesFn = fn(Level, &[u8], &mut [u8]);

/// One normalize conversion on the CPU, over bytes: its forms per level
/// ([`LevelForms`], as for every CPU conversion). Its results are those of the table
/// variant the GPU runs, at every level. Which conversion gets which is the entry's
/// choice in `normalize`'s table of conversions (one entry per sample width and dtype).
#[derive(Clone, Copy)]
pub struct UnormPath {
    run: BytesFn,
    /// The streaming twin, where the form has one.
    streaming: Option<BytesFn>,
    form: fn(Level) -> UnormForm,
}

impl LevelForms<u8, u8> for UnormPath {
    /// The conversion over whole elements of the input (`u8` or `u16` codes) and output
    /// (`f32`, binary16 or bfloat16 bits) at `level` (a level the CPU lacks runs the
    /// portable form). The caller checks lengths and alignment (`SampleConversion`).
    fn run_at(&self, level: Level, src: &[u8], dst: &mut [u8]) {
        (self.run)(level, src, dst);
    }

    /// Where the form has a streaming twin, [`LevelForms::run_at`]'s results with stores
    /// that go around the caches (`vmovntdq`), so that no line of `dst` is read before
    /// it is written; elsewhere `false`, `dst` untouched.
    fn run_streaming_at(&self, level: Level, src: &[u8], dst: &mut [u8]) -> bool {
        match self.streaming {
            Some(streaming) => {
                streaming(level, src, dst);
                true
            }
            None => false,
        }
    }

    /// The form [`LevelForms::run_at`] takes at `level` ([`UnormPath::form`]'s text).
    fn form_at(&self, level: Level) -> String {
        self.form(level).to_string()
    }
}

impl UnormPath {
    /// The form [`LevelForms::run_at`] takes at `level`, for `--verbose` and the bench.
    pub fn form(&self, level: Level) -> UnormForm {
        (self.form)(level)
    }

    /// The table variant `P` at every level.
    pub fn variant<P: Primitive>() -> UnormPath
    where
        P::In: bytemuck::Pod,
        <P::Out as Stored>::Bits: bytemuck::Pod,
    {
        UnormPath {
            run: |level, src, dst| map_bits_at::<P>(level, bytemuck::cast_slice(src), bytemuck::cast_slice_mut(dst)),
            streaming: None,
            form: |_| UnormForm::Variant(P::NAME),
        }
    }
}

/// UNORM16 → f32: a table at the portable level, else the variant.
pub const UNORM16_TO_F32: UnormPath = UnormPath {
    run: |level, src, dst| match level {
        Level::Portable => by_table::<variants::unorm16_to_f32, u32, { 1 << 16 }>(&UNORM16_F32, src, dst),
        _ => map_bits_at::<variants::unorm16_to_f32>(level, cast(src), cast_mut(dst)),
    },
    streaming: None,
    form: |level| match level {
        Level::Portable => UnormForm::Table(<variants::unorm16_to_f32 as Primitive>::NAME),
        _ => UnormForm::Variant(<variants::unorm16_to_f32 as Primitive>::NAME),
    },
};

/// UNORM8 → binary16: `vcvtps2ph` of the f32 quotient where the CPU has F16C, else a table.
pub const UNORM8_TO_F16: UnormPath = UnormPath {
    run: |level, src, dst| match instruction::unorm8_to_f16(level) {
        Some(f) => f(src, cast_mut(dst)),
        None => by_table::<variants::unorm8_to_f16_odd, u16, { 1 << 8 }>(&UNORM8_F16, src, dst),
    },
    streaming: None,
    form: |level| match instruction::unorm8_to_f16(level) {
        Some(_) => UnormForm::Instruction("unorm8_times3_int", "vcvtps2ph"),
        None => UnormForm::Table(<variants::unorm8_to_f16_odd as Primitive>::NAME),
    },
};

/// UNORM16 → binary16: `vcvtps2ph` of `unorm16_to_f32_sticky` where the CPU has F16C,
/// else a table.
pub const UNORM16_TO_F16: UnormPath = UnormPath {
    run: |level, src, dst| match instruction::unorm16_to_f16(level) {
        Some(f) => f(cast(src), cast_mut(dst)),
        None => by_table::<variants::unorm16_to_f16_odd, u16, { 1 << 16 }>(&UNORM16_F16, src, dst),
    },
    streaming: Some(|level, src, dst| match instruction::unorm16_to_f16_streaming(level) {
        Some(f) => f(cast(src), cast_mut(dst)),
        None => (UNORM16_TO_F16.run)(level, src, dst),
    }),
    form: |level| match instruction::unorm16_to_f16(level) {
        Some(_) => UnormForm::Instruction("unorm16_to_f32_sticky", "vcvtps2ph"),
        None => UnormForm::Table(<variants::unorm16_to_f16_odd as Primitive>::NAME),
    },
};

/// UNORM8 → bfloat16: the half-up form at every level (it has no FMA, so it vectorises
/// for the baseline too).
pub const UNORM8_TO_BF16: UnormPath = UnormPath {
    run: |level, src, dst| map_fn_at(level, src, cast_mut(dst), unorm_narrow::unorm8_to_bf16_half_up),
    streaming: None,
    form: |_| UnormForm::Software("unorm8_to_bf16_half_up"),
};

/// UNORM16 → bfloat16: the half-up form, or a table at the portable level (its quotient
/// takes an FMA).
pub const UNORM16_TO_BF16: UnormPath = UnormPath {
    run: |level, src, dst| match level {
        Level::Portable => by_table::<variants::unorm16_to_bf16_via_f32, u16, { 1 << 16 }>(&UNORM16_BF16, src, dst),
        _ => map_fn_at(level, cast(src), cast_mut(dst), unorm_narrow::unorm16_to_bf16_half_up),
    },
    streaming: Some(|level, src, dst| match instruction::unorm16_to_bf16_streaming(level) {
        Some(f) => f(cast(src), cast_mut(dst)),
        None => (UNORM16_TO_BF16.run)(level, src, dst),
    }),
    form: |level| match level {
        Level::Portable => UnormForm::Table(<variants::unorm16_to_bf16_via_f32 as Primitive>::NAME),
        _ => UnormForm::Software("unorm16_to_bf16_half_up"),
    },
};

static UNORM16_F32: OnceLock<Box<[u32; 1 << 16]>> = OnceLock::new();
static UNORM8_F16: OnceLock<Box<[u16; 1 << 8]>> = OnceLock::new();
static UNORM16_F16: OnceLock<Box<[u16; 1 << 16]>> = OnceLock::new();
static UNORM16_BF16: OnceLock<Box<[u16; 1 << 16]>> = OnceLock::new();

fn cast<T: bytemuck::Pod>(bytes: &[u8]) -> &[T] {
    bytemuck::cast_slice(bytes)
}

fn cast_mut<T: bytemuck::Pod>(bytes: &mut [u8]) -> &mut [T] {
    bytemuck::cast_slice_mut(bytes)
}

/// A UNORM code: `u8` or `u16`, every value an index of a table of `1 << bits` entries.
trait Code: bytemuck::Pod + Into<usize> + TryFrom<usize> {}
impl Code for u8 {}
impl Code for u16 {}

/// `dst[i] = table[src[i]]`, the table holding `P`'s stored result for every code (`N` of
/// them), filled at the first call.
fn by_table<P, O, const N: usize>(table: &'static OnceLock<Box<[O; N]>>, src: &[u8], dst: &mut [u8])
where
    P: Primitive,
    P::In: Code,
    P::Out: Stored<Bits = O>,
    O: bytemuck::Pod,
{
    let table = table.get_or_init(|| {
        let mut table = Box::new([O::zeroed(); N]);
        for (code, entry) in table.iter_mut().enumerate() {
            let Ok(code) = P::In::try_from(code) else { unreachable!("N is the number of codes") };
            *entry = P::apply(code).to_stored();
        }
        table
    });
    let (src, dst): (&[P::In], &mut [O]) = (cast(src), cast_mut(dst));
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = table[s.into() & (N - 1)];
    }
}

/// The instruction forms, where this CPU has them.
mod instruction {
    #[cfg(not(target_arch = "x86_64"))]
    use super::super::{Level, SliceFn};

    #[cfg(target_arch = "x86_64")]
    pub(super) use super::super::x86::{
        unorm8_to_f16_instruction as unorm8_to_f16, unorm16_to_bf16_streaming_avx2 as unorm16_to_bf16_streaming,
        unorm16_to_f16_instruction as unorm16_to_f16, unorm16_to_f16_streaming_instruction as unorm16_to_f16_streaming,
    };

    #[cfg(not(target_arch = "x86_64"))]
    pub(super) fn unorm8_to_f16(_: Level) -> Option<SliceFn<u8, u16>> {
        None
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub(super) fn unorm16_to_f16(_: Level) -> Option<SliceFn<u16, u16>> {
        None
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub(super) use unorm16_to_f16 as unorm16_to_f16_streaming;

    #[cfg(not(target_arch = "x86_64"))]
    pub(super) use unorm16_to_f16 as unorm16_to_bf16_streaming;
}
