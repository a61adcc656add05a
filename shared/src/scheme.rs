//! The division-free ways of computing `x / d` in f32 that `bitexact search` tries, as
//! data: a [`Scheme`] is a shape and its constants, and [`Scheme::apply`] evaluates it.
//!
//! A scheme by itself promises nothing: whether it is correctly rounded for a given
//! denominator is decided by checking every input against the exact rational reference.
//! The schemes the library uses are the ones `bitexact search` proved that way and
//! wrote to [`crate::schemes`].

/// A shape of division-free quotient and its constants. `t` below is `x as f32`, exact
/// for `|x| <= 2^24`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scheme {
    /// `t`: no arithmetic, exact when the denominator is 1.
    Convert,
    /// `t * c`: one multiply (with `c = fl(1/d)`, the common shortcut).
    Mul {
        /// The constant, usually `fl(1/d)`.
        c: f32,
    },
    /// `((x * m) as f32) * c`: an integer pre-multiplier, then one multiply (with
    /// `c = fl(1/(m·d))`; Mutel's ×3 for UNORM8 is `m = 3`). `x * m` and its conversion
    /// are exact while `|x·m| <= 2^24`.
    IntMul {
        /// The integer multiplier.
        m: i32,
        /// The constant, close to `1/(m·d)`.
        c: f32,
    },
    /// `fma(t, c0, t * c1)`: the constant split in two, one multiply and one fused
    /// multiply-add (one rounding for the sum).
    Fma {
        /// Leading part of the constant.
        c0: f32,
        /// Trailing part of the constant.
        c1: f32,
    },
    /// `t * c0 + t * c1`: two multiplies and an add, no contraction (Giesen's series
    /// form when `c0`, `c1` are the series' partial sums).
    MulAdd {
        /// Leading part of the constant.
        c0: f32,
        /// Trailing part of the constant.
        c1: f32,
    },
}

impl Scheme {
    /// The scheme's value on the integer `x` (already decoded from its UNORM or SNORM
    /// code). With a constant `self` (as in [`crate::norm`]) this inlines to the bare
    /// arithmetic of the one shape.
    #[inline(always)]
    pub fn apply(self, x: i32) -> f32 {
        match self {
            Scheme::Convert => x as f32,
            Scheme::Mul { c } => x as f32 * c,
            Scheme::IntMul { m, c } => x.wrapping_mul(m) as f32 * c,
            Scheme::Fma { c0, c1 } => {
                let t = x as f32;
                core::f32::math::mul_add(t, c0, t * c1)
            }
            Scheme::MulAdd { c0, c1 } => {
                let t = x as f32;
                t * c0 + t * c1
            }
        }
    }
}
