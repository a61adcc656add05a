//! UNORM16 → f32: the correctly rounded value of `x / 65535` for every `u16`.

/// The UNORM16 denominator, `2^16 - 1`.
pub const MAX: u16 = u16::MAX;

/// `x / 65535` by IEEE division: correctly rounded by definition, for all 65,536 inputs.
#[inline]
pub fn div_ieee(x: u16) -> f32 {
    f32::from(x) / f32::from(MAX)
}

/// `fl(1/65535)`, the reciprocal the common shortcut multiplies by.
pub const RECIP_65535: f32 = 1.0 / 65535.0;

/// `x · fl(1/65535)`: one multiply, the common shortcut (the UNORM16 analogue of
/// [`crate::unorm8::mul_recip`]). NOT exact: within 1 ULP, wrong on the inputs the
/// tests derive from the reference.
#[inline]
pub fn mul_recip(x: u16) -> f32 {
    f32::from(x) * RECIP_65535
}
