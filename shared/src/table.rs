//! The one table of variants, and the types that describe an entry.

/// A floating-point storage format, as the classification families see it: raw bits of
/// the width [`Format::bits`], sign in the top bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// IEEE 754 binary16: 1 sign, 5 exponent, 10 mantissa bits.
    Binary16,
    /// bfloat16: 1 sign, 8 exponent, 7 mantissa bits (the top half of a binary32).
    Bfloat16,
    /// IEEE 754 binary32: 1 sign, 8 exponent, 23 mantissa bits.
    Binary32,
    /// IEEE 754 binary64: 1 sign, 11 exponent, 52 mantissa bits.
    Binary64,
    /// OCP FP8 E4M3: 1 sign, 4 exponent, 3 mantissa bits; no infinities, NaN only at
    /// S.1111.111.
    Fp8E4m3,
    /// OCP FP8 E5M2: 1 sign, 5 exponent, 2 mantissa bits; IEEE-like (±inf, NaNs).
    Fp8E5m2,
    /// FP8 E4M3FNUZ: 1 sign, 4 exponent, 3 mantissa bits; no infinities, no negative
    /// zero, NaN only at 0x80.
    Fp8E4m3Fnuz,
    /// FP8 E5M2FNUZ: 1 sign, 5 exponent, 2 mantissa bits; no infinities, no negative
    /// zero, NaN only at 0x80.
    Fp8E5m2Fnuz,
}

impl Format {
    /// Every format.
    pub const ALL: [Format; 8] = [
        Format::Binary16,
        Format::Bfloat16,
        Format::Binary32,
        Format::Binary64,
        Format::Fp8E4m3,
        Format::Fp8E5m2,
        Format::Fp8E4m3Fnuz,
        Format::Fp8E5m2Fnuz,
    ];

    /// Short stable name, used in family names, reports and JSON.
    #[inline]
    pub const fn name(self) -> &'static str {
        match self {
            Format::Binary16 => "binary16",
            Format::Bfloat16 => "bfloat16",
            Format::Binary32 => "binary32",
            Format::Binary64 => "binary64",
            Format::Fp8E4m3 => "fp8_e4m3",
            Format::Fp8E5m2 => "fp8_e5m2",
            Format::Fp8E4m3Fnuz => "fp8_e4m3fnuz",
            Format::Fp8E5m2Fnuz => "fp8_e5m2fnuz",
        }
    }

    /// Width of an encoding in bits.
    #[inline]
    pub const fn bits(self) -> u32 {
        match self {
            Format::Fp8E4m3 | Format::Fp8E5m2 | Format::Fp8E4m3Fnuz | Format::Fp8E5m2Fnuz => 8,
            Format::Binary16 | Format::Bfloat16 => 16,
            Format::Binary32 => 32,
            Format::Binary64 => 64,
        }
    }

    /// Bytes per stored element: [`Format::bits`] / 8.
    #[inline]
    pub const fn bytes(self) -> usize {
        self.bits() as usize / 8
    }
}

/// What a group of variants computes; every variant of a family is checked against the
/// family's one exact reference (`bitexact::verify::reference::expected`) on the family's
/// [`Domain`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Encoding of the format → is the value finite (`bool`, stored as 0 or 1).
    IsFinite(Format),
    /// Encoding → is the value a NaN, any sign or payload (`bool`).
    IsNan(Format),
    /// Encoding → is the value ±infinity (`bool`; always false for FP8 E4M3 and the FNUZ
    /// formats).
    IsInfinite(Format),
    /// Encoding → its [`crate::Class`], stored as the class's one-byte code.
    Classify(Format),
    /// A `u32` word holding `32 / bits` lanes of the format (lane 0 in the low bits) →
    /// a `u32` mask with each lane's bits all ones if that lane is finite, all zeros if
    /// not. Only for formats of 8 or 16 bits.
    PackedIsFinite(Format),
    /// UNORM code of `bits` bits (1..=16) → `code / (2^bits - 1)` correctly rounded to
    /// f32 (round to nearest, ties to even).
    UnormToF32 {
        /// Code width n.
        bits: u32,
    },
    /// UNORM code of `bits` bits (8 or 16) → `code / (2^bits - 1)` correctly rounded to
    /// binary16 (round to nearest, ties to even, subnormals kept), stored as its bits.
    UnormToF16 {
        /// Code width n.
        bits: u32,
    },
    /// UNORM code of `bits` bits (8 or 16) → `code / (2^bits - 1)` correctly rounded to
    /// bfloat16 (round to nearest, ties to even), stored as its bits.
    UnormToBf16 {
        /// Code width n.
        bits: u32,
    },
    /// SNORM code of `bits` bits (2..=16, two's complement) →
    /// `max(code / (2^(bits-1) - 1), -1)` correctly rounded to f32, as D3D and Vulkan
    /// define it: the two most negative codes both give -1.0.
    SnormToF32 {
        /// Code width n.
        bits: u32,
    },
    /// f32 bits → UNORM code of `bits` bits (8 or 16): NaN → 0, clamp to [0, 1] (±inf
    /// included), then the exact product `c · (2^bits - 1)` rounded to the nearest
    /// integer (the only tie, c = 0.5, rounds up).
    F32ToUnorm {
        /// Code width n.
        bits: u32,
    },
    /// f32 bits → the bits of `format` (binary16, bfloat16, FP8 E4M3 or E5M2), rounded to
    /// nearest, ties to even, the sign kept (-0 included). `overflow` says what a value
    /// past the format's largest finite one after rounding, and ±inf, give: ±inf (NaN for
    /// E4M3, which has no infinity) or ± the largest finite value. NaN gives a quiet NaN
    /// with the input's sign: for binary16 and bfloat16 with the top payload bits kept
    /// (as x86 F16C and the `half` crate do; NVIDIA's `cvt` gives 0x7FFF instead), for
    /// the FP8 formats the NaN with every mantissa bit set (S.1111.111, S.11111.11).
    F32ToNarrow {
        /// The target format.
        format: Format,
        /// What overflow gives.
        overflow: crate::narrow::Overflow,
    },
    /// The bits of `format` (binary16, bfloat16, FP8 E4M3 or E5M2) → f32 bits. Exact for
    /// every value (each is an f32); a NaN keeps its sign and its payload, which goes to
    /// the top of the f32 mantissa (the E4M3 NaN S.1111.111 gives 0x7FF0_0000 with that
    /// sign).
    NarrowToF32 {
        /// The source format.
        format: Format,
    },
}

/// The inputs a family is checked on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Domain {
    /// Every integer in `0..2^bits`, which is every possible input: a proof by
    /// exhaustion.
    Exhaustive {
        /// Input width.
        bits: u32,
    },
    /// Too many encodings to enumerate (binary64): every sign × every exponent × the
    /// boundary mantissas and some random ones, plus a large uniformly random sample
    /// with a fixed seed. `bitexact::verify::domain` generates it.
    Sampled(Format),
}

impl Domain {
    /// Width in bits of an input: `bits` for an exhaustive domain, the format's width
    /// for a sampled one.
    #[inline]
    pub const fn input_bits(self) -> u32 {
        match self {
            Domain::Exhaustive { bits } => bits,
            Domain::Sampled(format) => format.bits(),
        }
    }

    /// The bits an input may have set: the low [`Domain::input_bits`].
    #[inline]
    pub const fn input_mask(self) -> u64 {
        u64::MAX >> (u64::BITS - self.input_bits())
    }

    /// Whether `input` fits the domain's width (an n-bit value for an n-bit domain, any
    /// encoding of the format for a sampled one).
    #[inline]
    pub const fn contains(self, input: u64) -> bool {
        input & !self.input_mask() == 0
    }
}

impl Family {
    /// The inputs this family's variants are checked on.
    ///
    /// UNORM/SNORM families take the n-bit code: their domain is the 2^n codes. (The
    /// variants read the code from the low bits of a wider integer and ignore the high
    /// bits; tests check that on every value of the wider type separately.)
    #[inline]
    pub const fn domain(self) -> Domain {
        match self {
            Family::IsFinite(Format::Binary64)
            | Family::IsNan(Format::Binary64)
            | Family::IsInfinite(Format::Binary64)
            | Family::Classify(Format::Binary64) => Domain::Sampled(Format::Binary64),
            Family::IsFinite(f) | Family::IsNan(f) | Family::IsInfinite(f) | Family::Classify(f) => {
                Domain::Exhaustive { bits: f.bits() }
            }
            Family::PackedIsFinite(_) | Family::F32ToUnorm { .. } | Family::F32ToNarrow { .. } => {
                Domain::Exhaustive { bits: 32 }
            }
            Family::NarrowToF32 { format } => Domain::Exhaustive { bits: format.bits() },
            Family::UnormToF32 { bits }
            | Family::UnormToF16 { bits }
            | Family::UnormToBf16 { bits }
            | Family::SnormToF32 { bits } => Domain::Exhaustive { bits },
        }
    }
}

/// The family's stable name, used in reports and JSON: `binary16_is_finite`,
/// `fp8_e4m3_classify`, `binary16x2_is_finite` (packed), `unorm8_to_f32`, `unorm16_to_f16`,
/// `unorm8_to_bf16`, `snorm16_to_f32`, `f32_to_unorm8`, `f32_to_binary16`,
/// `f32_to_fp8_e4m3_satfinite`, `bfloat16_to_f32`.
impl core::fmt::Display for Family {
    #[inline]
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Family::IsFinite(format) => write!(f, "{}_is_finite", format.name()),
            Family::IsNan(format) => write!(f, "{}_is_nan", format.name()),
            Family::IsInfinite(format) => write!(f, "{}_is_infinite", format.name()),
            Family::Classify(format) => write!(f, "{}_classify", format.name()),
            Family::PackedIsFinite(format) => write!(f, "{}x{}_is_finite", format.name(), 32 / format.bits()),
            Family::UnormToF32 { bits } => write!(f, "unorm{bits}_to_f32"),
            Family::UnormToF16 { bits } => write!(f, "unorm{bits}_to_f16"),
            Family::UnormToBf16 { bits } => write!(f, "unorm{bits}_to_bf16"),
            Family::SnormToF32 { bits } => write!(f, "snorm{bits}_to_f32"),
            Family::F32ToUnorm { bits } => write!(f, "f32_to_unorm{bits}"),
            Family::F32ToNarrow { format, overflow } => {
                let suffix = match overflow {
                    crate::narrow::Overflow::Standard => "",
                    crate::narrow::Overflow::SatFinite => "_satfinite",
                };
                write!(f, "f32_to_{}{suffix}", format.name())
            }
            Family::NarrowToF32 { format } => write!(f, "{}_to_f32", format.name()),
        }
    }
}

/// What a variant promises, and so what its tests assert. Each claim is checked both
/// ways on the family's domain (`bitexact::verify::cpu::Verification::claim_holds`, which
/// `bitexact verify` reports): a variant that is right everywhere must claim
/// [`Claim::Exact`], so a 1-ULP or incorrect variant that stops being wrong is a
/// broken claim, like an exact one that starts to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Claim {
    /// Bit-identical to the family's exact reference on every input.
    Exact,
    /// Not exact: within one ULP of the reference on every input, wrong on at least one.
    OneUlp,
    /// Deliberately wrong, kept to show why the right form is needed: wrong on at least
    /// one input. Its doc comment says on which inputs, and a test pins exactly those.
    Incorrect,
}

impl Claim {
    /// Short stable name, used in reports and JSON.
    #[inline]
    pub const fn name(self) -> &'static str {
        match self {
            Claim::Exact => "exact",
            Claim::OneUlp => "1-ulp",
            Claim::Incorrect => "incorrect",
        }
    }
}

/// How a result is stored in memory: its exact bit pattern, so that CPU and GPU results
/// compare bit-for-bit (f32 by its bits, `bool` as one byte 0 or 1).
pub trait Stored: Copy {
    /// The stored representation.
    type Bits: Copy;
    /// The stored representation of `self`.
    fn to_stored(self) -> Self::Bits;
}

impl Stored for bool {
    type Bits = u8;
    #[inline(always)]
    fn to_stored(self) -> u8 {
        u8::from(self)
    }
}

impl Stored for f32 {
    type Bits = u32;
    #[inline(always)]
    fn to_stored(self) -> u32 {
        self.to_bits()
    }
}

macro_rules! stored_as_itself {
    ($($t:ty)*) => {$(
        impl Stored for $t {
            type Bits = $t;
            #[inline(always)]
            fn to_stored(self) -> $t {
                self
            }
        }
    )*};
}
stored_as_itself!(u8 u16 u32 u64);

/// One entry of the variant table, as a type: see [`crate::variants`].
pub trait Primitive {
    /// Input element (raw bits of the source format).
    type In: Copy;
    /// Result; stored as [`Stored::Bits`].
    type Out: Stored;
    /// Variant name: also its [`crate::KernelKind::Map`] kernel's name, and the start of
    /// its other kernels' names ([`crate::KernelName`]).
    const NAME: &'static str;
    /// The family, which fixes the domain and the reference.
    const FAMILY: Family;
    /// What the variant promises.
    const CLAIM: Claim;
    /// One-line description (the formula).
    const DESCRIPTION: &'static str;
    /// The kinds of GPU kernel `kernels-gpu` builds for this variant, as its table entry
    /// states them; for each, `Self` implements the trait of that name in [`crate::kind`].
    const KINDS: &'static [crate::KernelKind];
    /// The computation itself.
    fn apply(x: Self::In) -> Self::Out;
}

/// Expands `$callback! { ... }` once with the whole variant table, one braced entry per
/// variant: `{ name, family, In => Out, function_path, Claim, [Kind, ...], "description" }`,
/// where `family` is a [`Family`] expression written with the variants of [`Family`],
/// [`Format`] and [`crate::narrow::Overflow`] in scope (`IsFinite(Binary16)`,
/// `UnormToF32 { bits: 8 }`, `F32ToNarrow { format: Fp8E4m3, overflow: SatFinite }`):
/// callbacks match it as `$family:expr`.
///
/// `[Kind, ...]` lists the kinds of GPU kernel the variant has ([`crate::KernelKind`]
/// variant names, matched as `[$($kind:ident),*]`). An entry writes only its extra
/// kinds (`[Stream]`, `[CountNonfinite]`, `[Stream, Hardware, HardwareStream]`, `[]`, ...);
/// callbacks receive them after the four every variant has (`[Map, Skeleton, Latency,
/// Throughput, Stream]` for an entry that writes `[Stream]`). The marker type implements
/// each kind's trait of [`crate::kind`], whose bounds reject a kind the variant's types
/// cannot have.
///
/// This is the single source of truth: `shared` builds its marker types from it,
/// `kernels-gpu` one kernel per entry and kind, `host` its runtime table (tests, CLI,
/// SASS report, benchmarks). Adding a variant is adding one line here.
#[macro_export]
macro_rules! for_each_variant {
    ($callback:path) => {
        $crate::with_every_variants_kinds! { $callback;
            { f16_finite_exp_mask, IsFinite(Binary16), u16 => bool, $crate::binary16::is_finite, Exact, [CountNonfinite], "(b & 0x7C00) != 0x7C00" }
            { f16_finite_abs_bits_lt_inf, IsFinite(Binary16), u16 => bool, $crate::binary16::is_finite_abs_bits_lt_inf, Exact, [CountNonfinite], "(b & 0x7FFF) < 0x7C00" }
            { f16_finite_not_inf_not_nan, IsFinite(Binary16), u16 => bool, $crate::binary16::is_finite_not_inf_not_nan, Exact, [CountNonfinite], "!is_inf(b) && !is_nan(b)" }
            { f16_finite_ordered_lt_inf, IsFinite(Binary16), u16 => bool, $crate::binary16::is_finite_ordered_lt_inf, Exact, [CountNonfinite], "|x| < +inf, ordered f16 compare" }
            { f16_finite_unordered_lt_inf, IsFinite(Binary16), u16 => bool, $crate::binary16::is_finite_unordered_lt_inf, Incorrect, [CountNonfinite], "!(|x| >= +inf): unordered, true for NaN (wrong on purpose)" }
            { f16_finite_via_f32, IsFinite(Binary16), u16 => bool, $crate::binary16::is_finite_via_f32, Exact, [CountNonfinite], "(x as f32).is_finite()" }
            { f16_is_nan, IsNan(Binary16), u16 => bool, $crate::binary16::is_nan, Exact, [], "(b & ABS) > INF" }
            { f16_is_infinite, IsInfinite(Binary16), u16 => bool, $crate::binary16::is_infinite, Exact, [], "(b & ABS) == INF" }
            { f16_classify, Classify(Binary16), u16 => $crate::Class, $crate::binary16::classify, Exact, [], "count of class boundaries reached by b & ABS" }
            { bf16_is_finite, IsFinite(Bfloat16), u16 => bool, $crate::bfloat16::is_finite, Exact, [CountNonfinite], "exponent field not all ones" }
            { bf16_is_nan, IsNan(Bfloat16), u16 => bool, $crate::bfloat16::is_nan, Exact, [], "(b & ABS) > INF" }
            { bf16_is_infinite, IsInfinite(Bfloat16), u16 => bool, $crate::bfloat16::is_infinite, Exact, [], "(b & ABS) == INF" }
            { bf16_classify, Classify(Bfloat16), u16 => $crate::Class, $crate::bfloat16::classify, Exact, [], "count of class boundaries reached by b & ABS" }
            { f32_is_finite, IsFinite(Binary32), u32 => bool, $crate::binary32::is_finite, Exact, [CountNonfinite], "exponent field not all ones" }
            { f32_is_nan, IsNan(Binary32), u32 => bool, $crate::binary32::is_nan, Exact, [], "(b & ABS) > INF" }
            { f32_is_infinite, IsInfinite(Binary32), u32 => bool, $crate::binary32::is_infinite, Exact, [], "(b & ABS) == INF" }
            { f32_classify, Classify(Binary32), u32 => $crate::Class, $crate::binary32::classify, Exact, [], "count of class boundaries reached by b & ABS" }
            { f64_is_finite, IsFinite(Binary64), u64 => bool, $crate::binary64::is_finite, Exact, [CountNonfinite], "exponent field not all ones" }
            { f64_is_nan, IsNan(Binary64), u64 => bool, $crate::binary64::is_nan, Exact, [], "(b & ABS) > INF" }
            { f64_is_infinite, IsInfinite(Binary64), u64 => bool, $crate::binary64::is_infinite, Exact, [], "(b & ABS) == INF" }
            { f64_classify, Classify(Binary64), u64 => $crate::Class, $crate::binary64::classify, Exact, [], "count of class boundaries reached by b & ABS" }
            { e4m3_is_finite, IsFinite(Fp8E4m3), u8 => bool, $crate::fp8::e4m3::is_finite, Exact, [CountNonfinite], "(b & 0x7F) != 0x7F" }
            { e4m3_is_nan, IsNan(Fp8E4m3), u8 => bool, $crate::fp8::e4m3::is_nan, Exact, [], "(b & 0x7F) == 0x7F" }
            { e4m3_is_infinite, IsInfinite(Fp8E4m3), u8 => bool, $crate::fp8::e4m3::is_infinite, Exact, [], "false: E4M3 has no infinities" }
            { e4m3_classify, Classify(Fp8E4m3), u8 => $crate::Class, $crate::fp8::e4m3::classify, Exact, [], "count of class boundaries reached by b & ABS" }
            { e5m2_is_finite, IsFinite(Fp8E5m2), u8 => bool, $crate::fp8::e5m2::is_finite, Exact, [CountNonfinite], "exponent field not all ones" }
            { e5m2_is_nan, IsNan(Fp8E5m2), u8 => bool, $crate::fp8::e5m2::is_nan, Exact, [], "(b & ABS) > INF" }
            { e5m2_is_infinite, IsInfinite(Fp8E5m2), u8 => bool, $crate::fp8::e5m2::is_infinite, Exact, [], "(b & ABS) == INF" }
            { e5m2_classify, Classify(Fp8E5m2), u8 => $crate::Class, $crate::fp8::e5m2::classify, Exact, [], "count of class boundaries reached by b & ABS" }
            { e4m3fnuz_is_finite, IsFinite(Fp8E4m3Fnuz), u8 => bool, $crate::fp8::e4m3fnuz::is_finite, Exact, [CountNonfinite], "b != 0x80" }
            { e4m3fnuz_is_nan, IsNan(Fp8E4m3Fnuz), u8 => bool, $crate::fp8::e4m3fnuz::is_nan, Exact, [], "b == 0x80" }
            { e4m3fnuz_is_infinite, IsInfinite(Fp8E4m3Fnuz), u8 => bool, $crate::fp8::e4m3fnuz::is_infinite, Exact, [], "false: FNUZ has no infinities" }
            { e4m3fnuz_classify, Classify(Fp8E4m3Fnuz), u8 => $crate::Class, $crate::fp8::e4m3fnuz::classify, Exact, [], "count of class boundaries reached by b & ABS, + 4 for 0x80" }
            { e5m2fnuz_is_finite, IsFinite(Fp8E5m2Fnuz), u8 => bool, $crate::fp8::e5m2fnuz::is_finite, Exact, [CountNonfinite], "b != 0x80" }
            { e5m2fnuz_is_nan, IsNan(Fp8E5m2Fnuz), u8 => bool, $crate::fp8::e5m2fnuz::is_nan, Exact, [], "b == 0x80" }
            { e5m2fnuz_is_infinite, IsInfinite(Fp8E5m2Fnuz), u8 => bool, $crate::fp8::e5m2fnuz::is_infinite, Exact, [], "false: FNUZ has no infinities" }
            { e5m2fnuz_classify, Classify(Fp8E5m2Fnuz), u8 => $crate::Class, $crate::fp8::e5m2fnuz::classify, Exact, [], "count of class boundaries reached by b & ABS, + 4 for 0x80" }
            { f16x2_finite_swar, PackedIsFinite(Binary16), u32 => u32, $crate::packed::f16x2_is_finite_swar, Exact, [], "2 lanes: ((!w & P) + LOW) & TOP, spread to lanes by a multiply" }
            { f16x2_finite_lanes, PackedIsFinite(Binary16), u32 => u32, $crate::packed::f16x2_is_finite_lanes, Exact, [], "2 lanes: one scalar is_finite per lane" }
            { bf16x2_finite_swar, PackedIsFinite(Bfloat16), u32 => u32, $crate::packed::bf16x2_is_finite_swar, Exact, [], "2 lanes: ((!w & P) + LOW) & TOP, spread to lanes by a multiply" }
            { bf16x2_finite_lanes, PackedIsFinite(Bfloat16), u32 => u32, $crate::packed::bf16x2_is_finite_lanes, Exact, [], "2 lanes: one scalar is_finite per lane" }
            { e4m3x4_finite_swar, PackedIsFinite(Fp8E4m3), u32 => u32, $crate::packed::e4m3x4_is_finite_swar, Exact, [], "4 lanes: ((!w & P) + LOW) & TOP, spread to lanes by a multiply" }
            { e4m3x4_finite_lanes, PackedIsFinite(Fp8E4m3), u32 => u32, $crate::packed::e4m3x4_is_finite_lanes, Exact, [], "4 lanes: one scalar is_finite per lane" }
            { e5m2x4_finite_swar, PackedIsFinite(Fp8E5m2), u32 => u32, $crate::packed::e5m2x4_is_finite_swar, Exact, [], "4 lanes: ((!w & P) + LOW) & TOP, spread to lanes by a multiply" }
            { e5m2x4_finite_lanes, PackedIsFinite(Fp8E5m2), u32 => u32, $crate::packed::e5m2x4_is_finite_lanes, Exact, [], "4 lanes: one scalar is_finite per lane" }
            { unorm8_div_ieee, UnormToF32 { bits: 8 }, u8 => f32, $crate::unorm8::div_ieee, Exact, [Stream], "x as f32 / 255.0 (IEEE division, reference form)" }
            { unorm8_via_f64, UnormToF32 { bits: 8 }, u8 => f32, $crate::unorm8::via_f64, Exact, [Stream], "(x as f64 * (1.0/255.0)) as f32" }
            { unorm8_mul_recip, UnormToF32 { bits: 8 }, u8 => f32, $crate::unorm8::mul_recip, OneUlp, [Stream], "x as f32 * fl(1/255) (common shortcut, inexact)" }
            { unorm8_series, UnormToF32 { bits: 8 }, u8 => f32, $crate::unorm8::series, Exact, [Stream], "t*k0 + t*k1, k0=(1+2^8+2^16)/2^24, k1=k0/2^24" }
            { unorm8_series_fma, UnormToF32 { bits: 8 }, u8 => f32, $crate::unorm8::series_fma, Exact, [Stream], "fma(t, k0, t*k1)" }
            { unorm8_times3_float, UnormToF32 { bits: 8 }, u8 => f32, $crate::unorm8::times3_float, Exact, [Stream], "(t * 3.0) * fl(1/765)" }
            { unorm8_times3_int, UnormToF32 { bits: 8 }, u8 => f32, $crate::unorm8::times3_int, Exact, [Stream], "((x * 3) as f32) * fl(1/765)" }
            { unorm16_div_ieee, UnormToF32 { bits: 16 }, u16 => f32, $crate::unorm16::div_ieee, Exact, [Stream], "x as f32 / 65535.0 (IEEE division, reference form)" }
            { unorm16_mul_recip, UnormToF32 { bits: 16 }, u16 => f32, $crate::unorm16::mul_recip, OneUlp, [Stream], "x as f32 * fl(1/65535) (common shortcut, inexact)" }
            { unorm1_to_f32, UnormToF32 { bits: 1 }, u16 => f32, $crate::norm::unorm_to_f32::<1>, Exact, [], "low 1 bits / 1, scheme from schemes.rs" }
            { unorm2_to_f32, UnormToF32 { bits: 2 }, u16 => f32, $crate::norm::unorm_to_f32::<2>, Exact, [], "low 2 bits / 3, scheme from schemes.rs" }
            { unorm3_to_f32, UnormToF32 { bits: 3 }, u16 => f32, $crate::norm::unorm_to_f32::<3>, Exact, [], "low 3 bits / 7, scheme from schemes.rs" }
            { unorm4_to_f32, UnormToF32 { bits: 4 }, u16 => f32, $crate::norm::unorm_to_f32::<4>, Exact, [], "low 4 bits / 15, scheme from schemes.rs" }
            { unorm5_to_f32, UnormToF32 { bits: 5 }, u16 => f32, $crate::norm::unorm_to_f32::<5>, Exact, [], "low 5 bits / 31, scheme from schemes.rs" }
            { unorm6_to_f32, UnormToF32 { bits: 6 }, u16 => f32, $crate::norm::unorm_to_f32::<6>, Exact, [], "low 6 bits / 63, scheme from schemes.rs" }
            { unorm7_to_f32, UnormToF32 { bits: 7 }, u16 => f32, $crate::norm::unorm_to_f32::<7>, Exact, [], "low 7 bits / 127, scheme from schemes.rs" }
            { unorm8_to_f32, UnormToF32 { bits: 8 }, u16 => f32, $crate::norm::unorm_to_f32::<8>, Exact, [Stream], "low 8 bits / 255, scheme from schemes.rs" }
            { unorm9_to_f32, UnormToF32 { bits: 9 }, u16 => f32, $crate::norm::unorm_to_f32::<9>, Exact, [], "low 9 bits / 511, scheme from schemes.rs" }
            { unorm10_to_f32, UnormToF32 { bits: 10 }, u16 => f32, $crate::norm::unorm_to_f32::<10>, Exact, [], "low 10 bits / 1023, scheme from schemes.rs" }
            { unorm11_to_f32, UnormToF32 { bits: 11 }, u16 => f32, $crate::norm::unorm_to_f32::<11>, Exact, [], "low 11 bits / 2047, scheme from schemes.rs" }
            { unorm12_to_f32, UnormToF32 { bits: 12 }, u16 => f32, $crate::norm::unorm_to_f32::<12>, Exact, [], "low 12 bits / 4095, scheme from schemes.rs" }
            { unorm13_to_f32, UnormToF32 { bits: 13 }, u16 => f32, $crate::norm::unorm_to_f32::<13>, Exact, [], "low 13 bits / 8191, scheme from schemes.rs" }
            { unorm14_to_f32, UnormToF32 { bits: 14 }, u16 => f32, $crate::norm::unorm_to_f32::<14>, Exact, [], "low 14 bits / 16383, scheme from schemes.rs" }
            { unorm15_to_f32, UnormToF32 { bits: 15 }, u16 => f32, $crate::norm::unorm_to_f32::<15>, Exact, [], "low 15 bits / 32767, scheme from schemes.rs" }
            { unorm16_to_f32, UnormToF32 { bits: 16 }, u16 => f32, $crate::norm::unorm_to_f32::<16>, Exact, [Stream], "low 16 bits / 65535, scheme from schemes.rs" }
            { unorm8_to_f16_via_f32, UnormToF16 { bits: 8 }, u8 => u16, $crate::unorm_narrow::unorm8_to_f16_via_f32, Exact, [], "binary16 of fl32(x/255) (two roundings, never wrong for 255)" }
            { unorm8_to_f16_odd, UnormToF16 { bits: 8 }, u8 => u16, $crate::unorm_narrow::unorm8_to_f16_odd, Exact, [Stream], "binary16 of fl32(x/255) rounded to odd by the sign of fma(-q, 255, x)" }
            { unorm8_to_bf16_via_f32, UnormToBf16 { bits: 8 }, u8 => u16, $crate::unorm_narrow::unorm8_to_bf16_via_f32, Exact, [Stream], "bfloat16 of fl32(x/255) (two roundings, never wrong for 255)" }
            { unorm8_to_bf16_odd, UnormToBf16 { bits: 8 }, u8 => u16, $crate::unorm_narrow::unorm8_to_bf16_odd, Exact, [], "bfloat16 of fl32(x/255) rounded to odd by the sign of fma(-q, 255, x)" }
            { unorm16_to_f16_via_f32, UnormToF16 { bits: 16 }, u16 => u16, $crate::unorm_narrow::unorm16_to_f16_via_f32, OneUlp, [], "binary16 of fl32(x/65535) (two roundings: 1 ULP off where fl32 lands on a midpoint)" }
            { unorm16_to_f16_odd, UnormToF16 { bits: 16 }, u16 => u16, $crate::unorm_narrow::unorm16_to_f16_odd, Exact, [Stream], "binary16 of fl32(x/65535) rounded to odd by the sign of fma(-q, 65535, x)" }
            { unorm16_to_bf16_via_f32, UnormToBf16 { bits: 16 }, u16 => u16, $crate::unorm_narrow::unorm16_to_bf16_via_f32, Exact, [Stream], "bfloat16 of fl32(x/65535) (two roundings, never wrong for 65535)" }
            { unorm16_to_bf16_odd, UnormToBf16 { bits: 16 }, u16 => u16, $crate::unorm_narrow::unorm16_to_bf16_odd, Exact, [], "bfloat16 of fl32(x/65535) rounded to odd by the sign of fma(-q, 65535, x)" }
            { snorm2_to_f32, SnormToF32 { bits: 2 }, u16 => f32, $crate::norm::snorm_to_f32::<2>, Exact, [], "max(low 2 bits signed / 1, -1), scheme from schemes.rs" }
            { snorm3_to_f32, SnormToF32 { bits: 3 }, u16 => f32, $crate::norm::snorm_to_f32::<3>, Exact, [], "max(low 3 bits signed / 3, -1), scheme from schemes.rs" }
            { snorm4_to_f32, SnormToF32 { bits: 4 }, u16 => f32, $crate::norm::snorm_to_f32::<4>, Exact, [], "max(low 4 bits signed / 7, -1), scheme from schemes.rs" }
            { snorm5_to_f32, SnormToF32 { bits: 5 }, u16 => f32, $crate::norm::snorm_to_f32::<5>, Exact, [], "max(low 5 bits signed / 15, -1), scheme from schemes.rs" }
            { snorm6_to_f32, SnormToF32 { bits: 6 }, u16 => f32, $crate::norm::snorm_to_f32::<6>, Exact, [], "max(low 6 bits signed / 31, -1), scheme from schemes.rs" }
            { snorm7_to_f32, SnormToF32 { bits: 7 }, u16 => f32, $crate::norm::snorm_to_f32::<7>, Exact, [], "max(low 7 bits signed / 63, -1), scheme from schemes.rs" }
            { snorm8_to_f32, SnormToF32 { bits: 8 }, u16 => f32, $crate::norm::snorm_to_f32::<8>, Exact, [Stream], "max(low 8 bits signed / 127, -1), scheme from schemes.rs" }
            { snorm9_to_f32, SnormToF32 { bits: 9 }, u16 => f32, $crate::norm::snorm_to_f32::<9>, Exact, [], "max(low 9 bits signed / 255, -1), scheme from schemes.rs" }
            { snorm10_to_f32, SnormToF32 { bits: 10 }, u16 => f32, $crate::norm::snorm_to_f32::<10>, Exact, [], "max(low 10 bits signed / 511, -1), scheme from schemes.rs" }
            { snorm11_to_f32, SnormToF32 { bits: 11 }, u16 => f32, $crate::norm::snorm_to_f32::<11>, Exact, [], "max(low 11 bits signed / 1023, -1), scheme from schemes.rs" }
            { snorm12_to_f32, SnormToF32 { bits: 12 }, u16 => f32, $crate::norm::snorm_to_f32::<12>, Exact, [], "max(low 12 bits signed / 2047, -1), scheme from schemes.rs" }
            { snorm13_to_f32, SnormToF32 { bits: 13 }, u16 => f32, $crate::norm::snorm_to_f32::<13>, Exact, [], "max(low 13 bits signed / 4095, -1), scheme from schemes.rs" }
            { snorm14_to_f32, SnormToF32 { bits: 14 }, u16 => f32, $crate::norm::snorm_to_f32::<14>, Exact, [], "max(low 14 bits signed / 8191, -1), scheme from schemes.rs" }
            { snorm15_to_f32, SnormToF32 { bits: 15 }, u16 => f32, $crate::norm::snorm_to_f32::<15>, Exact, [], "max(low 15 bits signed / 16383, -1), scheme from schemes.rs" }
            { snorm16_to_f32, SnormToF32 { bits: 16 }, u16 => f32, $crate::norm::snorm_to_f32::<16>, Exact, [Stream], "max(low 16 bits signed / 32767, -1), scheme from schemes.rs" }
            { f32_to_unorm8, F32ToUnorm { bits: 8 }, u32 => u8, $crate::norm::f32_to_unorm8, Exact, [Stream], "fma(clamp(c), 255, 2^23 + 2) bits - 0x4B000002" }
            { f32_to_unorm8_mul_add_half, F32ToUnorm { bits: 8 }, u32 => u8, $crate::norm::f32_to_unorm8_mul_add_half, OneUlp, [], "(clamp(c) * 255.0 + 0.5) as u8 (common form, inexact)" }
            { f32_to_unorm16, F32ToUnorm { bits: 16 }, u32 => u16, $crate::norm::f32_to_unorm16, Exact, [Stream], "fma(clamp(c), 65535, 2^23 + 2) bits - 0x4B000002" }
            { f32_to_f16, F32ToNarrow { format: Binary16, overflow: Standard }, u32 => u16, $crate::binary16::from_f32_bits, Exact, [Stream, Hardware, HardwareStream], "round_magnitude::<5, 10>(|x|) | sign, inf past 65504, quiet NaN keeping its payload" }
            { f32_to_f16_satfinite, F32ToNarrow { format: Binary16, overflow: SatFinite }, u32 => u16, $crate::binary16::from_f32_bits_satfinite, Exact, [Hardware], "round_magnitude::<5, 10>(|x|) | sign, 65504 past it, quiet NaN keeping its payload" }
            { f32_to_f16_branch_free, F32ToNarrow { format: Binary16, overflow: Standard }, u32 => u16, $crate::binary16::from_f32_bits_branch_free, Exact, [], "f32_to_f16 with both roundings (normal, subnormal) computed and one selected" }
            { f32_to_f16_satfinite_branch_free, F32ToNarrow { format: Binary16, overflow: SatFinite }, u32 => u16, $crate::binary16::from_f32_bits_satfinite_branch_free, Exact, [], "f32_to_f16_satfinite with both roundings computed and one selected" }
            { f32_to_bf16, F32ToNarrow { format: Bfloat16, overflow: Standard }, u32 => u16, $crate::bfloat16::from_f32_bits, Exact, [Stream, Hardware, HardwareStream], "round_magnitude::<8, 7>(|x|) | sign (top half, rounded), quiet NaN keeping its payload" }
            { f32_to_bf16_satfinite, F32ToNarrow { format: Bfloat16, overflow: SatFinite }, u32 => u16, $crate::bfloat16::from_f32_bits_satfinite, Exact, [Hardware], "round_magnitude::<8, 7>(|x|) | sign, largest finite past it, quiet NaN keeping its payload" }
            { f32_to_e4m3, F32ToNarrow { format: Fp8E4m3, overflow: Standard }, u32 => u8, $crate::fp8::e4m3::from_f32_bits_standard, Exact, [Stream, Hardware, HardwareStream], "round_magnitude::<4, 3>(|x|) | sign, NaN past 448 (OCP non-saturating)" }
            { f32_to_e4m3_satfinite, F32ToNarrow { format: Fp8E4m3, overflow: SatFinite }, u32 => u8, $crate::fp8::e4m3::from_f32_bits_satfinite, Exact, [Stream, Hardware, HardwareStream], "round_magnitude::<4, 3>(|x|) | sign, 448 past it" }
            { f32_to_e4m3_branch_free, F32ToNarrow { format: Fp8E4m3, overflow: Standard }, u32 => u8, $crate::fp8::e4m3::from_f32_bits_standard_branch_free, Exact, [], "f32_to_e4m3 with both roundings computed and one selected" }
            { f32_to_e4m3_satfinite_branch_free, F32ToNarrow { format: Fp8E4m3, overflow: SatFinite }, u32 => u8, $crate::fp8::e4m3::from_f32_bits_satfinite_branch_free, Exact, [], "f32_to_e4m3_satfinite with both roundings computed and one selected" }
            { f32_to_e5m2, F32ToNarrow { format: Fp8E5m2, overflow: Standard }, u32 => u8, $crate::fp8::e5m2::from_f32_bits_standard, Exact, [Stream, Hardware, HardwareStream], "round_magnitude::<5, 2>(|x|) | sign, inf past 57344 (OCP non-saturating)" }
            { f32_to_e5m2_satfinite, F32ToNarrow { format: Fp8E5m2, overflow: SatFinite }, u32 => u8, $crate::fp8::e5m2::from_f32_bits_satfinite, Exact, [Stream, Hardware, HardwareStream], "round_magnitude::<5, 2>(|x|) | sign, 57344 past it" }
            { f32_to_e5m2_branch_free, F32ToNarrow { format: Fp8E5m2, overflow: Standard }, u32 => u8, $crate::fp8::e5m2::from_f32_bits_standard_branch_free, Exact, [], "f32_to_e5m2 with both roundings computed and one selected" }
            { f32_to_e5m2_satfinite_branch_free, F32ToNarrow { format: Fp8E5m2, overflow: SatFinite }, u32 => u8, $crate::fp8::e5m2::from_f32_bits_satfinite_branch_free, Exact, [], "f32_to_e5m2_satfinite with both roundings computed and one selected" }
            { f16_to_f32, NarrowToF32 { format: Binary16 }, u16 => u32, $crate::binary16::to_f32_bits, Exact, [Hardware], "widen_magnitude::<5, 10>(|b|) | sign, payload kept" }
            { f16_to_f32_scaled, NarrowToF32 { format: Binary16 }, u16 => u32, $crate::binary16::to_f32_bits_scaled, Exact, [Stream], "sign | (f32(|b| << 13) * 2^112, or inf/NaN selected)" }
            { bf16_to_f32, NarrowToF32 { format: Bfloat16 }, u16 => u32, $crate::bfloat16::to_f32_bits, Exact, [Stream, Hardware], "b << 16" }
            { e4m3_to_f32, NarrowToF32 { format: Fp8E4m3 }, u8 => u32, $crate::fp8::e4m3::to_f32_bits, Exact, [Hardware], "widen_magnitude::<4, 3>(|b|) | sign, S.1111.111 to NaN" }
            { e4m3_to_f32_scaled, NarrowToF32 { format: Fp8E4m3 }, u8 => u32, $crate::fp8::e4m3::to_f32_bits_scaled, Exact, [Stream], "sign | (f32(|b| << 20) * 2^120, or NaN selected)" }
            { e5m2_to_f32, NarrowToF32 { format: Fp8E5m2 }, u8 => u32, $crate::fp8::e5m2::to_f32_bits, Exact, [Hardware], "binary16::to_f32_bits(b << 8)" }
            { e5m2_to_f32_scaled, NarrowToF32 { format: Fp8E5m2 }, u8 => u32, $crate::fp8::e5m2::to_f32_bits_scaled, Exact, [Stream], "binary16::to_f32_bits_scaled(b << 8)" }
        }
    };
}

/// Passes the table to `$callback`, with the kinds every variant has put before each
/// entry's own (see [`for_each_variant!`]).
#[doc(hidden)]
#[macro_export]
macro_rules! with_every_variants_kinds {
    ($callback:path; $({ $name:ident, $family:expr, $in:ty => $out:ty, $f:path, $claim:ident, [$($kind:ident),*], $desc:literal })*) => {
        $callback! {$(
            { $name, $family, $in => $out, $f, $claim, [Map, Skeleton, Latency, Throughput $(, $kind)*], $desc }
        )*}
    };
}

/// Callback for [`for_each_variant!`] that defines the marker types of
/// [`crate::variants`].
///
/// Private to this crate: it writes `unsafe impl`s of the [`crate::kind`] traits, which
/// are sound only for the entries of the table (see [`crate::kind`]'s `Safety`). Were
/// it exported, safe code in another crate could have it write them for its own types.
macro_rules! define_primitives {
    ($({ $name:ident, $family:expr, $in:ty => $out:ty, $f:path, $claim:ident, [$($kind:ident),*], $desc:literal })*) => {$(
        #[doc = $desc]
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $name;

        impl $crate::Primitive for $name {
            type In = $in;
            type Out = $out;
            const NAME: &'static str = stringify!($name);
            const FAMILY: $crate::Family = {
                #[allow(unused_imports)]
                use $crate::{Family::*, Format::*, narrow::Overflow::*};
                $family
            };
            const CLAIM: $crate::Claim = $crate::Claim::$claim;
            const DESCRIPTION: &'static str = $desc;
            const KINDS: &'static [$crate::KernelKind] = &[$($crate::KernelKind::$kind),*];
            #[inline(always)]
            fn apply(x: $in) -> $out {
                $f(x)
            }
        }

        // SAFETY: `kernels-gpu` builds, from this same entry of `for_each_variant!`,
        // one kernel per listed kind, named `KernelName::of::<$name>(kind)`, generic over
        // this very marker type (so over `$in` and `$out`'s stored bits), with the
        // parameters `KernelKind` documents for the kind, bounded by the length it is
        // given; the host loads no other module under these names.
        $(unsafe impl $crate::kind::$kind for $name {})*
    )*};
}
pub(crate) use define_primitives;
