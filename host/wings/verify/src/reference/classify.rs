//! The bit fields of every format and the class of any encoding, decoded field by field
//! from the widths each specification gives.

use shared::{Class, Family, Format};

/// How a format encodes its special values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Specials {
    /// IEEE 754: exponent field all ones is ±inf (mantissa zero) or NaN (non-zero).
    Ieee,
    /// OCP FP8 E4M3: no infinities; exponent field all ones is an ordinary binade except
    /// for mantissa all ones, the only NaN (S.1111.111).
    NanOnlyAtAllOnes,
    /// FNUZ ("finite, NaN, unsigned zero"): no infinities, every exponent field an
    /// ordinary binade, and the encoding of -0 (sign set, all else clear) the only NaN.
    NanAtNegativeZero,
}

/// The bit fields of a format: sign on top, then the exponent, then the mantissa.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldLayout {
    /// Exponent field width.
    pub exponent_bits: u32,
    /// Mantissa (trailing significand) field width.
    pub mantissa_bits: u32,
    /// Where the special values (infinities, NaNs) are.
    pub specials: Specials,
}

/// The field widths of `format`, from its specification (IEEE 754-2019 table 3.5,
/// Google Brain bfloat16, OCP 8-bit Floating Point Specification rev. 1.0, and for FNUZ
/// Noune et al., arXiv:2206.02915, section 3).
pub const fn layout(format: Format) -> FieldLayout {
    let (exponent_bits, mantissa_bits, specials) = match format {
        Format::Binary16 => (5, 10, Specials::Ieee),
        Format::Bfloat16 => (8, 7, Specials::Ieee),
        Format::Binary32 => (8, 23, Specials::Ieee),
        Format::Binary64 => (11, 52, Specials::Ieee),
        Format::Fp8E4m3 => (4, 3, Specials::NanOnlyAtAllOnes),
        Format::Fp8E5m2 => (5, 2, Specials::Ieee),
        Format::Fp8E4m3Fnuz => (4, 3, Specials::NanAtNegativeZero),
        Format::Fp8E5m2Fnuz => (5, 2, Specials::NanAtNegativeZero),
    };
    FieldLayout { exponent_bits, mantissa_bits, specials }
}

/// The [`Fields`] type of a format, its widths taken from [`layout`].
macro_rules! fields {
    ($format:expr) => {
        Fields::<
            { layout($format).exponent_bits },
            { layout($format).mantissa_bits },
            { layout($format).specials as u8 },
        >
    };
}

/// Evaluates `$body` with `$fields` bound to the [`Fields`] value of `$format`.
macro_rules! with_fields {
    ($format:expr, |$fields:ident| $body:expr) => {
        match $format {
            Format::Binary16 => {
                let $fields = fields!(Format::Binary16);
                $body
            }
            Format::Bfloat16 => {
                let $fields = fields!(Format::Bfloat16);
                $body
            }
            Format::Binary32 => {
                let $fields = fields!(Format::Binary32);
                $body
            }
            Format::Binary64 => {
                let $fields = fields!(Format::Binary64);
                $body
            }
            Format::Fp8E4m3 => {
                let $fields = fields!(Format::Fp8E4m3);
                $body
            }
            Format::Fp8E5m2 => {
                let $fields = fields!(Format::Fp8E5m2);
                $body
            }
            Format::Fp8E4m3Fnuz => {
                let $fields = fields!(Format::Fp8E4m3Fnuz);
                $body
            }
            Format::Fp8E5m2Fnuz => {
                let $fields = fields!(Format::Fp8E5m2Fnuz);
                $body
            }
        }
    };
}

/// Class of the encoding `bits` of `format` (bits above the format's width ignored),
/// decoded field by field.
pub fn class(format: Format, bits: u64) -> Class {
    with_fields!(format, |fields| fields.class(bits))
}

/// A format's field widths as constants (from [`layout`]), so that the decoding loops
/// of [`super::expected_many`] compile to straight-line code per format.
#[derive(Clone, Copy, Debug)]
struct Fields<const EXPONENT_BITS: u32, const MANTISSA_BITS: u32, const SPECIALS: u8>;

impl<const EXPONENT_BITS: u32, const MANTISSA_BITS: u32, const SPECIALS: u8>
    Fields<EXPONENT_BITS, MANTISSA_BITS, SPECIALS>
{
    const EXPONENT_ALL_ONES: u64 = (1 << EXPONENT_BITS) - 1;
    const MANTISSA_ALL_ONES: u64 = (1 << MANTISSA_BITS) - 1;

    const WIDTH: u32 = 1 + EXPONENT_BITS + MANTISSA_BITS;

    /// See [`packed_finite_mask`].
    #[inline(always)]
    fn packed_finite_mask(self, word: u32) -> u32 {
        let lane_max = (1u32 << Self::WIDTH) - 1;
        let mut mask = 0;
        for lane in 0..u32::BITS / Self::WIDTH {
            let shift = lane * Self::WIDTH;
            if self.class(u64::from((word >> shift) & lane_max)).is_finite() {
                mask |= lane_max << shift;
            }
        }
        mask
    }

    #[inline(always)]
    fn class(self, bits: u64) -> Class {
        let exponent = (bits >> MANTISSA_BITS) & Self::EXPONENT_ALL_ONES;
        let mantissa = bits & Self::MANTISSA_ALL_ONES;
        let negative = (bits >> (EXPONENT_BITS + MANTISSA_BITS)) & 1 == 1;
        let top_binade = exponent == Self::EXPONENT_ALL_ONES;
        let (ieee, fnuz) = (SPECIALS == Specials::Ieee as u8, SPECIALS == Specials::NanAtNegativeZero as u8);
        let e4m3 = SPECIALS == Specials::NanOnlyAtAllOnes as u8;
        match exponent {
            0 if mantissa == 0 && fnuz && negative => Class::Nan,
            0 if mantissa == 0 => Class::Zero,
            0 => Class::Subnormal,
            _ if ieee && top_binade && mantissa == 0 => Class::Infinite,
            _ if ieee && top_binade => Class::Nan,
            _ if e4m3 && top_binade && mantissa == Self::MANTISSA_ALL_ONES => Class::Nan,
            _ => Class::Normal,
        }
    }
}

/// Class of a binary16 encoding: [`class`] for [`Format::Binary16`].
pub fn binary16_class(bits: u16) -> Class {
    class(Format::Binary16, u64::from(bits))
}

/// The packed finite mask of `word` holding `32 / bits` lanes of `format`: lane `i`
/// (bits `i·L ..`) all ones iff that lane's encoding is finite.
pub fn packed_finite_mask(format: Format, word: u32) -> u32 {
    with_fields!(format, |fields| fields.packed_finite_mask(word))
}

/// [`super::expected_many`] for the classification families ([`Family::IsFinite`],
/// [`Family::IsNan`], [`Family::IsInfinite`], [`Family::Classify`],
/// [`Family::PackedIsFinite`]), each decoding loop specialised to its format.
///
/// Panics for other families (a caller bug).
pub(super) fn classification_many(family: Family, inputs: &[u64], out: &mut [u64]) {
    use super::fill;
    match family {
        Family::IsFinite(format) => {
            with_fields!(format, |fields| fill(inputs, out, |x| u64::from(fields.class(x).is_finite())))
        }
        Family::IsNan(format) => {
            with_fields!(format, |fields| fill(inputs, out, |x| u64::from(fields.class(x) == Class::Nan)))
        }
        Family::IsInfinite(format) => {
            with_fields!(format, |fields| fill(inputs, out, |x| u64::from(fields.class(x) == Class::Infinite)))
        }
        Family::Classify(format) => {
            with_fields!(format, |fields| fill(inputs, out, |x| u64::from(fields.class(x) as u8)))
        }
        Family::PackedIsFinite(format) => {
            with_fields!(format, |fields| fill(inputs, out, |x| u64::from(fields.packed_finite_mask(x as u32))))
        }
        _ => panic!("{family} is not a classification family"),
    }
}
