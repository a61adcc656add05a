//! The per-element conversions of `cast`: each source value rounded once, to nearest,
//! ties to even, from its own value straight to the target format.
//!
//! - f32, binary16 and bfloat16 sources are first widened to f32 (`widen_to_f32`):
//!   exact, since both 16-bit formats are subsets of f32, so the one rounding that
//!   follows is the only one.
//! - f64 sources are rounded straight from the f64 (`narrow_f64`, on
//!   [`shared::narrow::round_magnitude_f64`]), never through f32.
//! - Scaled FP8 is [`shared::fp8_scale`]'s definition: `q = sat_rne(x · s)`, once or in
//!   two steps; for f64 sources its f64 forms (`quantize_scaled_f64`: the 77-bit exact
//!   product rounded to odd in f64, then once to FP8).
//!
//! Every function here is pure; [`Outcome`] says whether a value was out of range so
//! that the caller can refuse it.

use shared::fp8::{e4m3, e5m2};
use shared::fp8_scale::{Fp8Format, Rounding};
use shared::narrow::{Overflow, round_magnitude_f64};

crate::dtype::roles! {
    /// A source element type `cast` reads and converts (its other tensors are copied as
    /// they are): a role of [`crate::dtype`]'s table.
    pub enum SourceDtype { F64, F32, Bf16, F16 }
}

impl SourceDtype {
    /// Bytes per element.
    #[doc(hidden)]
    pub const fn bytes(self) -> usize {
        self.element().bytes()
    }
}

crate::dtype::roles! {
    /// The format `cast` writes (`--to`, in this order): a role of [`crate::dtype`]'s
    /// table.
    pub enum Target { Bf16, F16, E4m3, E5m2 }
}

impl Target {
    /// Bytes per element.
    #[doc(hidden)]
    pub const fn bytes(self) -> usize {
        self.element().bytes()
    }

    /// The largest finite magnitude's encoding (sign clear): `0x7F7F`, `0x7BFF`, `0x7E`,
    /// `0x7B`.
    pub(crate) const fn max_finite_bits(self) -> u32 {
        encodings(self).max_finite
    }

    /// The bits that are all set in an encoding exactly when it is NaN or infinite (its
    /// magnitude past [`Target::max_finite_bits`]): the exponent field for bf16, f16 and
    /// E5M2, and the whole magnitude for E4M3 (whose only NaN is `S.1111.111`). A test
    /// that vectorises with no unsigned compare (`nonfinite_bits_say_which_encodings_are_not_finite`
    /// checks it on every encoding).
    pub(crate) const fn nonfinite_bits(self) -> u32 {
        encodings(self).overflow
    }

    /// The FP8 format, for the two FP8 targets.
    #[doc(hidden)]
    pub const fn fp8(self) -> Option<Fp8Format> {
        match self {
            Target::E4m3 => Some(Fp8Format::E4M3),
            Target::E5m2 => Some(Fp8Format::E5M2),
            Target::Bf16 | Target::F16 => None,
        }
    }

    /// Whether `source` already is this format (the tensor is then copied as it is).
    pub(crate) const fn is(self, source: SourceDtype) -> bool {
        self.is_element(source.element())
    }
}

/// What `cast` writes (`--to`): an element format of the table ([`Target`]), or NVFP4,
/// which is no element type of its own (E2M1 codes packed two per byte, stored as U8,
/// with an E4M3 scale per 16 values of a row and an f32 scale per tensor:
/// [`shared::nvfp4`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CastTarget {
    /// Each value converted to an element format, scaled or not.
    Element(Target),
    /// NVFP4.
    Nvfp4,
}

impl CastTarget {
    /// Every member, in the order `--to` lists them: the table's targets, then NVFP4.
    #[doc(hidden)]
    pub const ALL: [CastTarget; Target::ALL.len() + 1] = {
        let mut all = [CastTarget::Nvfp4; Target::ALL.len() + 1];
        let mut i = 0;
        while i < Target::ALL.len() {
            all[i] = CastTarget::Element(Target::ALL[i]);
            i += 1;
        }
        all
    };

    /// Its name, as the CLI, the reports and the JSON spell it.
    pub const fn name(self) -> &'static str {
        match self {
            CastTarget::Element(target) => target.name(),
            CastTarget::Nvfp4 => "nvfp4",
        }
    }

    /// What it is, in words.
    pub const fn title(self) -> &'static str {
        match self {
            CastTarget::Element(target) => target.title(),
            CastTarget::Nvfp4 => {
                "NVFP4: FP4 E2M1 packed two per byte, an E4M3 scale per 16 values of a row, an F32 scale per tensor"
            }
        }
    }

    /// The element format, for all but NVFP4.
    pub(crate) const fn element(self) -> Option<Target> {
        match self {
            CastTarget::Element(target) => Some(target),
            CastTarget::Nvfp4 => None,
        }
    }

    /// The FP8 format, for the two FP8 targets.
    pub(crate) const fn fp8(self) -> Option<Fp8Format> {
        match self {
            CastTarget::Element(target) => target.fp8(),
            CastTarget::Nvfp4 => None,
        }
    }

    /// Whether `source` already is this format (the tensor is then copied as it is).
    pub(crate) const fn is(self, source: SourceDtype) -> bool {
        match self {
            CastTarget::Element(target) => target.is(source),
            CastTarget::Nvfp4 => false,
        }
    }

    /// The `.safetensors` dtype string of a cast tensor's data (U8 for NVFP4's packed
    /// codes).
    pub(crate) const fn safetensors_name(self) -> &'static str {
        match self {
            CastTarget::Element(target) => target.safetensors_name(),
            CastTarget::Nvfp4 => crate::dtype::ElementType::U8.safetensors_name(),
        }
    }

    /// The bytes of a cast tensor of `elements` values (NVFP4: two to a byte, a last odd
    /// one alone).
    pub(crate) const fn data_bytes(self, elements: u64) -> u64 {
        match self {
            CastTarget::Element(target) => elements * target.bytes() as u64,
            CastTarget::Nvfp4 => elements.div_ceil(2),
        }
    }
}

impl From<Target> for CastTarget {
    fn from(target: Target) -> CastTarget {
        CastTarget::Element(target)
    }
}

/// Serialised as its name.
impl serde::Serialize for CastTarget {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// What one element's conversion gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub enum Outcome {
    /// A finite input, converted to a finite value (saturated, where asked).
    Finite,
    /// A NaN or infinite input.
    NonFiniteValues,
    /// A finite input that became infinite or NaN: past the target's range without
    /// saturation.
    Overflow,
}

/// The f32 bits of the element at `bytes` (little-endian) of an f32, binary16 or
/// bfloat16 source: exact. Not for f64 (see [`narrow_f64`]).
#[inline]
pub(crate) fn widen_to_f32(source: SourceDtype, bytes: &[u8]) -> u32 {
    match source {
        SourceDtype::F32 => u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
        SourceDtype::Bf16 => shared::bfloat16::to_f32_bits(u16::from_le_bytes([bytes[0], bytes[1]])),
        SourceDtype::F16 => shared::binary16::to_f32_bits(u16::from_le_bytes([bytes[0], bytes[1]])),
        SourceDtype::F64 => unreachable!("an f64 is never widened to f32: it is rounded straight to the target"),
    }
}

/// Whether the f32 `x` (bits) is NaN or infinite.
#[inline]
pub(crate) const fn f32_is_nonfinite(x: u32) -> bool {
    shared::fp8_scale::is_nonfinite(x)
}

/// Whether the f64 `x` (bits) is NaN or infinite.
#[inline]
pub(crate) const fn f64_is_nonfinite(x: u64) -> bool {
    x & 0x7FF0_0000_0000_0000 == 0x7FF0_0000_0000_0000
}

/// The encoding fields of a target, for the f64 rounding: largest finite magnitude,
/// infinity (E4M3 has none: its NaN), and the NaN produced.
struct Encodings {
    max_finite: u32,
    overflow: u32,
    nan: u32,
    sign_shift: u32,
}

const fn encodings(target: Target) -> Encodings {
    match target {
        Target::Bf16 => Encodings { max_finite: 0x7F7F, overflow: 0x7F80, nan: 0x7FC0, sign_shift: 48 },
        Target::F16 => Encodings { max_finite: 0x7BFF, overflow: 0x7C00, nan: 0x7E00, sign_shift: 48 },
        Target::E4m3 => Encodings {
            max_finite: e4m3::MAX_ABS as u32,
            overflow: e4m3::NAN_ABS as u32,
            nan: e4m3::NAN_ABS as u32,
            sign_shift: 56,
        },
        Target::E5m2 => Encodings {
            max_finite: e5m2::MAX_FINITE as u32,
            overflow: e5m2::POS_INFINITY as u32,
            nan: e5m2::NAN_ABS as u32,
            sign_shift: 56,
        },
    }
}

/// The f64 `x` (bits) rounded once, to nearest, ties to even, straight to `target`
/// (never through f32), with `overflow` deciding what a finite value past the largest
/// finite gives (and ±inf: the largest finite under [`Overflow::SatFinite`]). NaN gives
/// the target's quiet NaN with `x`'s sign (its payload is not kept). Returns the
/// encoding (in the low bits) and the [`Outcome`].
#[inline]
pub(crate) fn narrow_f64(x: u64, target: Target, overflow: Overflow) -> (u16, Outcome) {
    let e = encodings(target);
    let sign = (x >> e.sign_shift) as u32 & if target.bytes() == 2 { 0x8000 } else { 0x80 };
    let abs = x & 0x7FFF_FFFF_FFFF_FFFF;
    if abs > 0x7FF0_0000_0000_0000 {
        return ((sign | e.nan) as u16, Outcome::NonFiniteValues);
    }
    let rounded = match target {
        Target::Bf16 => round_magnitude_f64::<8, 7>(abs),
        Target::F16 => round_magnitude_f64::<5, 10>(abs),
        Target::E4m3 => round_magnitude_f64::<4, 3>(abs),
        Target::E5m2 => round_magnitude_f64::<5, 2>(abs),
    };
    let finite_input = abs < 0x7FF0_0000_0000_0000;
    let (magnitude, outcome) = match overflow {
        _ if rounded <= e.max_finite => (rounded, Outcome::Finite),
        Overflow::SatFinite => (e.max_finite, if finite_input { Outcome::Finite } else { Outcome::NonFiniteValues }),
        Overflow::Standard => (e.overflow, if finite_input { Outcome::Overflow } else { Outcome::NonFiniteValues }),
    };
    ((sign | magnitude) as u16, outcome)
}

/// The f32 `x` (bits) rounded to nearest, ties to even, to `target`, with `overflow`
/// deciding what a value past the largest finite (and ±inf) gives; through `shared`'s
/// exact conversions. Returns the encoding and the [`Outcome`].
#[inline]
pub(crate) fn narrow_f32(x: u32, target: Target, overflow: Overflow) -> (u16, Outcome) {
    let out = match target {
        Target::Bf16 => shared::bfloat16::from_f32_bits_overflow(x, overflow),
        Target::F16 => shared::binary16::from_f32_bits_overflow(x, overflow),
        Target::E4m3 => u16::from(e4m3::from_f32_bits(x, overflow)),
        Target::E5m2 => u16::from(e5m2::from_f32_bits(x, overflow)),
    };
    (out, outcome_of(f32_is_nonfinite(x), target, out))
}

/// The outcome of a conversion of an input (non-finite or not) that gave `out`.
#[inline]
fn outcome_of(input_nonfinite: bool, target: Target, out: u16) -> Outcome {
    let e = encodings(target);
    let magnitude = u32::from(out) & if target.bytes() == 2 { 0x7FFF } else { 0x7F };
    if input_nonfinite {
        Outcome::NonFiniteValues
    } else if magnitude > e.max_finite {
        Outcome::Overflow
    } else {
        Outcome::Finite
    }
}

/// `sat_rne(x · s)` of the f32 `x` (bits) with [`shared::fp8_scale::quantize`]: never an
/// overflow (it saturates); NaN and ±inf inputs are [`Outcome::NonFiniteValues`] (NaN gives
/// NaN, ±inf the largest finite).
#[inline]
pub(crate) fn quantize_scaled(x: u32, s: f32, format: Fp8Format, rounding: Rounding) -> (u8, Outcome) {
    let q = shared::fp8_scale::quantize(x, s, format, rounding);
    (q, if f32_is_nonfinite(x) { Outcome::NonFiniteValues } else { Outcome::Finite })
}

/// `sat_rne(x · s)` of the **f64** `x` (bits) with [`shared::fp8_scale::quantize_f64`]
/// (the exact 77-bit product rounded once, or to f32 first, through round to odd in
/// f64): as [`quantize_scaled`], NaN and ±inf are [`Outcome::NonFiniteValues`].
#[inline]
pub(crate) fn quantize_scaled_f64(x: u64, s: f32, format: Fp8Format, rounding: Rounding) -> (u8, Outcome) {
    let q = shared::fp8_scale::quantize_f64(x, s, format, rounding);
    (q, if f64_is_nonfinite(x) { Outcome::NonFiniteValues } else { Outcome::Finite })
}

/// How the elements of one tensor are converted: straight, or scaled to FP8.
#[derive(Clone, Copy, Debug, PartialEq)]
#[doc(hidden)]
pub enum ElementCast {
    /// Each value rounded to `target` (`narrow_f32` after the exact widening, or
    /// `narrow_f64`), `overflow` deciding what a value past its range gives.
    Plain {
        /// The source dtype.
        source: SourceDtype,
        /// The target.
        target: Target,
        /// Past the largest finite: infinity/NaN or saturation.
        overflow: Overflow,
    },
    /// `sat_rne(x · s)` (`quantize_scaled`, or `quantize_scaled_f64` for an f64
    /// source).
    Scaled {
        /// The source dtype.
        source: SourceDtype,
        /// The FP8 format.
        format: Fp8Format,
        /// The scale `s`.
        s: f32,
        /// Once or in two steps.
        rounding: Rounding,
    },
}

impl ElementCast {
    /// The source dtype.
    pub const fn source(&self) -> SourceDtype {
        match *self {
            ElementCast::Plain { source, .. } | ElementCast::Scaled { source, .. } => source,
        }
    }

    /// Bytes per output element.
    pub const fn output_bytes(&self) -> usize {
        match *self {
            ElementCast::Plain { target, .. } => target.bytes(),
            ElementCast::Scaled { .. } => 1,
        }
    }

    /// One element, its little-endian bytes in `bytes`: the output encoding (in the low
    /// bits) and the [`Outcome`].
    #[inline(always)]
    pub(crate) fn one(&self, bytes: &[u8]) -> (u16, Outcome) {
        match *self {
            ElementCast::Plain { source: SourceDtype::F64, target, overflow } => {
                let x = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
                narrow_f64(x, target, overflow)
            }
            ElementCast::Plain { source, target, overflow } => {
                narrow_f32(widen_to_f32(source, bytes), target, overflow)
            }
            ElementCast::Scaled { source: SourceDtype::F64, format, s, rounding } => {
                let x = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
                let (q, outcome) = quantize_scaled_f64(x, s, format, rounding);
                (u16::from(q), outcome)
            }
            ElementCast::Scaled { source, format, s, rounding } => {
                let (q, outcome) = quantize_scaled(widen_to_f32(source, bytes), s, format, rounding);
                (u16::from(q), outcome)
            }
        }
    }

    /// Converts the elements of `input` into `output` (little-endian, [`Self::output_bytes`]
    /// each); returns the index and outcome of the first element whose outcome is not
    /// [`Outcome::Finite`], if any (the elements after it may then be left unconverted).
    pub fn run(&self, input: &[u8], output: &mut [u8], stop_at_first: bool) -> Option<(usize, Outcome)> {
        // The element sizes as constants in each loop, so that an element is a load and a
        // store, not two calls to copy a slice of a length known only at run time.
        match (self.source().bytes(), self.output_bytes()) {
            (2, 1) => self.run_sized::<2, 1>(input, output, stop_at_first),
            (2, 2) => self.run_sized::<2, 2>(input, output, stop_at_first),
            (4, 1) => self.run_sized::<4, 1>(input, output, stop_at_first),
            (4, 2) => self.run_sized::<4, 2>(input, output, stop_at_first),
            (8, 1) => self.run_sized::<8, 1>(input, output, stop_at_first),
            (8, 2) => self.run_sized::<8, 2>(input, output, stop_at_first),
            (ib, ob) => {
                unreachable!("elements of {ib} bytes to {ob}: every source is 2, 4 or 8 bytes, every target 1 or 2")
            }
        }
    }

    /// [`Self::run`] on elements of `IB` bytes (the source's) to `OB` bytes (the
    /// output's).
    fn run_sized<const IB: usize, const OB: usize>(
        &self,
        input: &[u8],
        output: &mut [u8],
        stop_at_first: bool,
    ) -> Option<(usize, Outcome)> {
        let mut first = None;
        let (input, output) = (input.as_chunks::<IB>().0, output.as_chunks_mut::<OB>().0);
        for (index, (i, o)) in input.iter().zip(output).enumerate() {
            let (bits, outcome) = self.one(i);
            *o = bits.to_le_bytes()[..OB].try_into().expect("OB is 1 or 2");
            if outcome != Outcome::Finite && first.is_none() {
                first = Some((index, outcome));
                if stop_at_first {
                    break;
                }
            }
        }
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonfinite_bits_say_which_encodings_are_not_finite() {
        // Each format's own definition of NaN/infinity: half's for the 16-bit formats,
        // the OCP FP8 spec's (E4M3: only S.1111.111; E5M2: exponent 11111) for FP8.
        let not_finite = |target: Target, o: u32| match target {
            Target::Bf16 => !half::bf16::from_bits(o as u16).is_finite(),
            Target::F16 => !half::f16::from_bits(o as u16).is_finite(),
            Target::E4m3 => o & 0x7F == 0x7F,
            Target::E5m2 => (o >> 2) & 0x1F == 0x1F,
        };
        for target in [Target::Bf16, Target::F16, Target::E4m3, Target::E5m2] {
            let (bits, sign) = (target.nonfinite_bits(), 1u32 << (8 * target.bytes() - 1));
            for o in 0..1u32 << (8 * target.bytes()) {
                assert_eq!(o & bits == bits, not_finite(target, o), "{target:?} {o:#x}");
                assert_eq!(o & !sign > target.max_finite_bits(), not_finite(target, o), "{target:?} {o:#x}");
            }
        }
    }

    #[test]
    fn f64_rounds_straight_to_bfloat16_not_through_f32() {
        // 1 + 2^-8 + 2^-30: through f32 it becomes 1 + 2^-8 (the 2^-30 is lost), a tie
        // that goes to even, 1.0; straight, it is above the tie and rounds up.
        let x = (1.0f64 + 2f64.powi(-8) + 2f64.powi(-30)).to_bits();
        assert_eq!(narrow_f64(x, Target::Bf16, Overflow::Standard), (0x3F81, Outcome::Finite));
        let through_f32 = shared::bfloat16::from_f32_bits((f64::from_bits(x) as f32).to_bits());
        assert_eq!(through_f32, 0x3F80);
    }

    #[test]
    fn f64_overflow_is_reported_or_saturated() {
        let big = 1e300f64.to_bits();
        assert_eq!(narrow_f64(big, Target::F16, Overflow::Standard), (0x7C00, Outcome::Overflow));
        assert_eq!(narrow_f64(big, Target::F16, Overflow::SatFinite), (0x7BFF, Outcome::Finite));
        assert_eq!(narrow_f64((-1e300f64).to_bits(), Target::E4m3, Overflow::Standard), (0xFF, Outcome::Overflow));
        assert_eq!(
            narrow_f64(f64::NEG_INFINITY.to_bits(), Target::E5m2, Overflow::SatFinite),
            (0xFB, Outcome::NonFiniteValues)
        );
        assert_eq!(
            narrow_f64(f64::NAN.to_bits(), Target::Bf16, Overflow::Standard),
            (0x7FC0, Outcome::NonFiniteValues)
        );
    }

    #[test]
    fn f32_overflow_is_an_outcome_of_its_own() {
        assert_eq!(narrow_f32(70000f32.to_bits(), Target::F16, Overflow::Standard), (0x7C00, Outcome::Overflow));
        assert_eq!(
            narrow_f32(f32::INFINITY.to_bits(), Target::F16, Overflow::Standard),
            (0x7C00, Outcome::NonFiniteValues)
        );
        assert_eq!(narrow_f32(500f32.to_bits(), Target::E4m3, Overflow::SatFinite), (0x7E, Outcome::Finite));
    }
}
