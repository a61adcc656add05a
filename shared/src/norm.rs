//! UNORMn / SNORMn codes ↔ f32, for every code width the graphics APIs use.
//!
//! * UNORMn → f32 (n = 1..=16): `x / (2^n - 1)`, correctly rounded (nearest, ties to
//!   even; no quotient here is a tie).
//! * SNORMn → f32 (n = 2..=16): `max(x / (2^(n-1) - 1), -1.0)` for the n-bit two's
//!   complement `x`, correctly rounded: the D3D/Vulkan rule, under which the two most
//!   negative codes both give -1.0.
//! * f32 → UNORM8 / UNORM16: NaN → 0, clamp to [0, 1] (±inf included), then the exact
//!   product `c · (2^n - 1)` rounded to the nearest integer.
//!
//! # Inputs
//!
//! The n-bit code sits in the low n bits of a `u16`; the high bits are **ignored**
//! (UNORM masks them off, SNORM sign-extends from bit n-1), so a code can be read
//! straight out of a packed word. Tests check every one of the 65,536 `u16` values for
//! every n against the reference on the masked code.
//!
//! # Why the conversions are exact
//!
//! To f32: UNORMk and SNORM(k+1) both divide by `d = 2^k - 1`, and share the one
//! division-free [`Scheme`] that `bitexact search` found cheapest among those correct on
//! every code of both, written to [`crate::schemes`]; the proof is the exhaustive
//! comparison with the exact rational reference (all 2^k UNORM and 2^(k+1) SNORM codes),
//! rerun by `cargo test` and `bitexact verify`. SNORM clamps the integer to `-d` first,
//! so the scheme sees only `-d ..= d`.
//!
//! From f32: see [`f32_to_unorm8`].

use crate::scheme::Scheme;
use crate::schemes;

/// The proven scheme for the denominator `2^k - 1` (k in 1..=16), for UNORMk and
/// SNORM(k+1) alike.
const fn scheme_for(k: u32) -> Scheme {
    schemes::BY_BITS[k as usize - 1]
}

/// UNORMn → f32 with the scheme `scheme`, for a code of `bits` bits (1..=16) in the low
/// bits of `x`. Exact iff `scheme` is exact for `2^bits - 1`; [`unorm_to_f32`] uses the
/// proven one. `bits` is a runtime value here, so the arithmetic wraps rather than
/// panics: a `bits` outside 1..=16 gives a meaningless value, never a panic.
#[inline(always)]
pub fn unorm_with(scheme: Scheme, bits: u32, x: u16) -> f32 {
    let code = u32::from(x) & 1u32.wrapping_shl(bits).wrapping_sub(1);
    scheme.apply(code as i32)
}

/// SNORMn → f32 with the scheme `scheme`, for a two's complement code of `bits` bits
/// (2..=16) in the low bits of `x`. The most negative code is first raised to
/// `-(2^(bits-1) - 1)`, so it gives -1.0 like the next one. Exact iff `scheme` is exact
/// for `2^(bits-1) - 1` on `-d ..= d`; [`snorm_to_f32`] uses the proven one. As in
/// [`unorm_with`], a `bits` outside 2..=16 gives a meaningless value, never a panic.
#[inline(always)]
pub fn snorm_with(scheme: Scheme, bits: u32, x: u16) -> f32 {
    let unused = u32::BITS.wrapping_sub(bits);
    let code = (u32::from(x).wrapping_shl(unused) as i32).wrapping_shr(unused);
    // At most 2^31 - 1 after the wrapping subtraction, so its negation cannot overflow.
    let denominator = 1i32.wrapping_shl(bits.wrapping_sub(1)).wrapping_sub(1);
    scheme.apply(code.max(-denominator))
}

/// UNORM`N` → f32 (`N` in 1..=16): `x / (2^N - 1)` correctly rounded, high bits of `x`
/// ignored. Exact on every code (proven exhaustively), with the scheme of
/// [`schemes::BY_BITS`] for `2^N - 1`.
#[inline]
pub fn unorm_to_f32<const N: u32>(x: u16) -> f32 {
    unorm_with(const { scheme_for(N) }, N, x)
}

/// SNORM`N` → f32 (`N` in 2..=16): `max(x / (2^(N-1) - 1), -1)` correctly rounded, high
/// bits of `x` ignored. Exact on every code (proven exhaustively), with the scheme of
/// [`schemes::BY_BITS`] for `2^(N-1) - 1`, the one UNORM(N-1) uses. Code 0 gives +0.0,
/// never -0.0.
#[inline]
pub fn snorm_to_f32<const N: u32>(x: u16) -> f32 {
    snorm_with(const { scheme_for(N - 1) }, N, x)
}

/// `2^23 + 2`: the rounding bias of the f32 → UNORM conversions.
///
/// Every f32 in `[2^23, 2^24)` is an integer and consecutive integers there have
/// consecutive encodings, so a single rounding of `y + ROUNDING_BIAS` (for
/// `0 <= y <= 2^16`) rounds `y` to the nearest integer, and the encoding minus
/// `ROUNDING_BIAS`'s is that integer. The bias is even, so a tie rounds `y` to even
/// exactly as it rounds the sum to even (an odd bias would round ties to odd).
///
/// Why not plain `2^23` (encoding `0x4B00_0000`): its low 16 bits are zero, so LLVM
/// folds `(bits - 0x4B00_0000) as u8` into a byte store of the float register itself,
/// and ptxas (12.9 and 13.0 alike) compiles a narrow store of a register last written by
/// a float instruction as a saturating float → integer conversion (`F2IP.U8.F32.TRUNC`),
/// which turns every code into 255 on the GPU. With `+ 2` the subtraction changes the low
/// bits, so it survives as an integer instruction between the `fma` and the store. The
/// README's toolchain section has the reproducer; `bitexact::cuda_tools::guards` checks every kernel for
/// the pattern.
const ROUNDING_BIAS: f32 = 8_388_610.0;
const ROUNDING_BIAS_BITS: u32 = 0x4B00_0002;
const _: () = assert!(ROUNDING_BIAS.to_bits() == ROUNDING_BIAS_BITS && ROUNDING_BIAS_BITS & 0xFFFF != 0);

/// The f32 with encoding `bits`, NaN made 0 and everything else clamped to [0, 1].
/// `f32::max` returns the non-NaN operand, so NaN becomes 0 (`f32::clamp` would keep the
/// NaN, and it has a panic path); ±inf clamp like any value; -0 may stay -0.
#[inline(always)]
#[allow(clippy::manual_clamp)]
fn unit_interval(bits: u32) -> f32 {
    f32::from_bits(bits).max(0.0).min(1.0)
}

/// f32 → UNORM code with `max = 2^n - 1`, `n <= 16`: see [`f32_to_unorm8`].
#[inline(always)]
fn f32_to_unorm_code(bits: u32, max: f32) -> u32 {
    let c = unit_interval(bits);
    core::f32::math::mul_add(c, max, ROUNDING_BIAS).to_bits() - ROUNDING_BIAS_BITS
}

/// f32 bits → UNORM8: NaN → 0, clamp to [0, 1] (-inf → 0, +inf → 255), then
/// `c · 255` rounded to the nearest integer.
///
/// Exact by construction, and proven on all 2^32 inputs against integer arithmetic on
/// the float's fields: `fma(c, 255, 2^23 + 2)` rounds the *exact* product once, at a place
/// where the f32 grid is the integers (see `ROUNDING_BIAS` above). A tie needs
/// `c · 255 = k + 1/2`, i.e. `c = (2k+1)/510`, which is a binary fraction only for
/// `c = 0.5`; there ties-to-even gives 128, the same as rounding half up.
#[inline]
pub fn f32_to_unorm8(bits: u32) -> u8 {
    f32_to_unorm_code(bits, 255.0) as u8
}

/// f32 bits → UNORM16: as [`f32_to_unorm8`] with `c · 65535` (the one tie, `c = 0.5`,
/// gives 32768). Exact, proven on all 2^32 inputs.
#[inline]
pub fn f32_to_unorm16(bits: u32) -> u16 {
    f32_to_unorm_code(bits, 65535.0) as u16
}

/// f32 bits → UNORM8 the common way, `(c * 255.0 + 0.5) as u8` after the same clamp.
/// NOT exact: `c * 255.0` is rounded before the `+ 0.5`, so a product just below a
/// half-integer can round up onto it. Within one code of the exact result; the tests
/// count the inputs where it is off from the reference.
#[inline]
pub fn f32_to_unorm8_mul_add_half(bits: u32) -> u8 {
    (unit_interval(bits) * 255.0 + 0.5) as u8
}
