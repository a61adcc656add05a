//! UNORM16 → f32: the correctly rounded value of `x / 65535` for every `u16`.

/// The UNORM16 denominator, `2^16 - 1`.
pub const MAX: u16 = u16::MAX;

/// `x / 65535` by IEEE division: correctly rounded by definition, for all 65,536 inputs.
#[inline]
pub fn div_ieee(x: u16) -> f32 {
    f32::from(x) / f32::from(MAX)
}
