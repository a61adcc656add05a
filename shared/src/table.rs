//! The one table of variants, and the types that describe an entry.

/// What a group of variants computes; every variant of a family is checked against the
/// family's one exact reference on the family's whole input domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// binary16 bits (`u16`) → is the value finite (`bool`). Domain: all 2^16 encodings.
    Binary16IsFinite,
    /// UNORM8 byte (`u8`) → `x / 255` correctly rounded to f32. Domain: all 2^8 bytes.
    Unorm8ToF32,
}

impl Family {
    /// Every family, in table order.
    pub const ALL: [Family; 2] = [Family::Binary16IsFinite, Family::Unorm8ToF32];

    /// Short stable name, used in reports and JSON.
    pub const fn name(self) -> &'static str {
        match self {
            Family::Binary16IsFinite => "binary16_is_finite",
            Family::Unorm8ToF32 => "unorm8_to_f32",
        }
    }

    /// Width in bits of the input; the domain is every value of that width.
    pub const fn input_bits(self) -> u32 {
        match self {
            Family::Binary16IsFinite => 16,
            Family::Unorm8ToF32 => 8,
        }
    }

    /// Number of inputs in the domain, `2^input_bits`.
    pub const fn domain_size(self) -> u64 {
        1u64 << self.input_bits()
    }
}

/// What a variant promises, and so what its tests assert.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Claim {
    /// Bit-identical to the family's exact reference on every input.
    Exact,
    /// Not exact: within one ULP of the reference on every input, wrong on some.
    OneUlp,
    /// Deliberately wrong, kept to show why the right form is needed; its doc comment
    /// says on which inputs it is wrong, and a test pins exactly those.
    Incorrect,
}

impl Claim {
    /// Short stable name, used in reports and JSON.
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
    /// Variant name: also the GPU kernel's name.
    const NAME: &'static str;
    /// The family, which fixes the domain and the reference.
    const FAMILY: Family;
    /// What the variant promises.
    const CLAIM: Claim;
    /// One-line description (the formula).
    const DESCRIPTION: &'static str;
    /// The computation itself.
    fn apply(x: Self::In) -> Self::Out;
}

/// Expands `$callback! { ... }` once with the whole variant table, one braced entry per
/// variant: `{ name, Family, In => Out, function_path, Claim, "description" }`.
///
/// This is the single source of truth: `shared` builds its marker types from it,
/// `kernels-gpu` one kernel per entry, `host` its runtime table (tests, CLI, SASS report,
/// benchmarks). Adding a variant is adding one line here.
#[macro_export]
macro_rules! for_each_variant {
    ($callback:path) => {
        $callback! {
            { f16_finite_exp_mask, Binary16IsFinite, u16 => bool, $crate::binary16::is_finite_exp_mask, Exact, "(b & 0x7C00) != 0x7C00" }
            { f16_finite_abs_bits_lt_inf, Binary16IsFinite, u16 => bool, $crate::binary16::is_finite_abs_bits_lt_inf, Exact, "(b & 0x7FFF) < 0x7C00" }
            { f16_finite_not_inf_not_nan, Binary16IsFinite, u16 => bool, $crate::binary16::is_finite_not_inf_not_nan, Exact, "!is_inf(b) && !is_nan(b)" }
            { f16_finite_ordered_lt_inf, Binary16IsFinite, u16 => bool, $crate::binary16::is_finite_ordered_lt_inf, Exact, "|x| < +inf, ordered f16 compare" }
            { f16_finite_unordered_lt_inf, Binary16IsFinite, u16 => bool, $crate::binary16::is_finite_unordered_lt_inf, Incorrect, "!(|x| >= +inf): unordered, true for NaN (wrong on purpose)" }
            { f16_finite_via_f32, Binary16IsFinite, u16 => bool, $crate::binary16::is_finite_via_f32, Exact, "(x as f32).is_finite()" }
            { unorm8_div_ieee, Unorm8ToF32, u8 => f32, $crate::unorm8::div_ieee, Exact, "x as f32 / 255.0 (IEEE division, reference form)" }
            { unorm8_via_f64, Unorm8ToF32, u8 => f32, $crate::unorm8::via_f64, Exact, "(x as f64 * (1.0/255.0)) as f32" }
            { unorm8_mul_recip, Unorm8ToF32, u8 => f32, $crate::unorm8::mul_recip, OneUlp, "x as f32 * fl(1/255) (common shortcut, inexact)" }
            { unorm8_series, Unorm8ToF32, u8 => f32, $crate::unorm8::series, Exact, "t*k0 + t*k1, k0=(1+2^8+2^16)/2^24, k1=k0/2^24" }
            { unorm8_series_fma, Unorm8ToF32, u8 => f32, $crate::unorm8::series_fma, Exact, "fma(t, k0, t*k1)" }
            { unorm8_times3_float, Unorm8ToF32, u8 => f32, $crate::unorm8::times3_float, Exact, "(t * 3.0) * fl(1/765)" }
            { unorm8_times3_int, Unorm8ToF32, u8 => f32, $crate::unorm8::times3_int, Exact, "((x * 3) as f32) * fl(1/765)" }
        }
    };
}

/// Callback for [`for_each_variant!`] that defines the marker types of
/// [`crate::variants`].
#[doc(hidden)]
#[macro_export]
macro_rules! define_primitives {
    ($({ $name:ident, $family:ident, $in:ty => $out:ty, $f:path, $claim:ident, $desc:literal })*) => {$(
        #[doc = $desc]
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $name;

        impl $crate::Primitive for $name {
            type In = $in;
            type Out = $out;
            const NAME: &'static str = stringify!($name);
            const FAMILY: $crate::Family = $crate::Family::$family;
            const CLAIM: $crate::Claim = $crate::Claim::$claim;
            const DESCRIPTION: &'static str = $desc;
            #[inline(always)]
            fn apply(x: $in) -> $out {
                $f(x)
            }
        }
    )*};
}
