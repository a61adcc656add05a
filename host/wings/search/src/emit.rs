//! Writing the answers: formulas, hex floats, `shared/src/schemes.rs` (`--emit-rust`)
//! and the JSON form of a scheme.

use super::*;
use serde::Serialize;
use shared::scheme::Scheme;

/// Exact hexadecimal form of an f32, as C's `%a`: `0x1.010102p-8`, `-0x1p+0`,
/// `0x0.000002p-126` for subnormals, `0x0p+0` for zero.
pub(crate) fn hex_f32(x: f32) -> String {
    let bits = x.to_bits();
    let sign = if bits >> 31 == 1 { "-" } else { "" };
    let exponent = (bits >> 23 & 0xFF) as i32;
    let mantissa = bits & 0x7F_FFFF;
    let (lead, exponent) = match (exponent, mantissa) {
        (0, 0) => return format!("{sign}0x0p+0"),
        (0, _) => (0, -126),
        (0xFF, 0) => return format!("{sign}inf"),
        (0xFF, _) => return "nan".into(),
        (e, _) => (1, e - 127),
    };
    // 23 mantissa bits, shifted to 24 = 6 hex digits, trailing zeros dropped.
    let digits = format!("{:06x}", mantissa << 1);
    let digits = digits.trim_end_matches('0');
    let point = if digits.is_empty() { String::new() } else { format!(".{digits}") };
    format!("{sign}0x{lead}{point}p{exponent:+}")
}

/// The scheme as a formula in `x` (the integer code) and `t = x as f32`, constants as
/// exact hex floats.
pub fn formula(scheme: Scheme) -> String {
    match scheme {
        Scheme::Convert => "t".into(),
        Scheme::Mul { c } => format!("t * {}", hex_f32(c)),
        Scheme::IntMul { m, c } => format!("((x * {m}) as f32) * {}", hex_f32(c)),
        Scheme::Fma { c0, c1 } => format!("fma(t, {}, t * {})", hex_f32(c0), hex_f32(c1)),
        Scheme::MulAdd { c0, c1 } => format!("t * {} + t * {}", hex_f32(c0), hex_f32(c1)),
    }
}

/// The scheme as a Rust expression (constants by their exact bits).
pub(crate) fn rust_expression(scheme: Scheme) -> String {
    let bits = |c: f32| format!("f32::from_bits({:#010x})", c.to_bits());
    match scheme {
        Scheme::Convert => "Scheme::Convert".into(),
        Scheme::Mul { c } => format!("Scheme::Mul {{ c: {} }}", bits(c)),
        Scheme::IntMul { m, c } => format!("Scheme::IntMul {{ m: {m}, c: {} }}", bits(c)),
        Scheme::Fma { c0, c1 } => format!("Scheme::Fma {{ c0: {}, c1: {} }}", bits(c0), bits(c1)),
        Scheme::MulAdd { c0, c1 } => format!("Scheme::MulAdd {{ c0: {}, c1: {} }}", bits(c0), bits(c1)),
    }
}

/// The conversions that divide by `2^k - 1`, as a list: `UNORM8, SNORM9`.
pub fn conversions(k: u32) -> String {
    uses(k).into_iter().map(|(kind, bits)| format!("{}{bits}", kind.label())).collect::<Vec<_>>().join(", ")
}

/// Why [`emit_rust`] cannot write `shared/src/schemes.rs`. `Display` is one line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EmitError {
    /// The answers are not those for every denominator, in order (a partial search).
    #[error("--emit-rust needs every denominator: leave out --unorm and --snorm")]
    NotEveryDenominator,
    /// No scheme tried is exact for one denominator.
    #[error("no division-free scheme tried is exact for d = {denominator} ({}): schemes.rs cannot be written", conversions(*.bits))]
    NoExactScheme {
        /// `2^bits - 1`.
        denominator: u32,
        /// k: the denominator is `2^k - 1`.
        bits: u32,
    },
}

/// The text of `shared/src/schemes.rs` for `found`, which must be the answers for every
/// denominator in the order of [`DENOMINATOR_BITS`] (as [`search_every_denominator`]
/// gives them), each with an exact scheme.
pub fn emit_rust(found: &[Found]) -> Result<String, EmitError> {
    if !found.iter().map(|f| f.bits).eq(DENOMINATOR_BITS) {
        return Err(EmitError::NotEveryDenominator);
    }
    let mut text = String::from(
        "//! Division-free UNORM / SNORM → f32 schemes, one per denominator `d = 2^k - 1`: for\n\
         //! each, the cheapest scheme `bitexact search` found to be correctly rounded on every\n\
         //! code of both conversions that divide by d, UNORMk (codes 0..=d) and SNORM(k+1)\n\
         //! (codes -d..=d once the most negative one is clamped; k <= 15).\n\
         //!\n\
         //! GENERATED FILE: do not edit. Regenerate with\n\
         //!\n\
         //! ```sh\n\
         //! cargo run --release -p host -- search --emit-rust > shared/src/schemes.rs\n\
         //! ```\n\
         //!\n\
         //! `cargo test` proves every entry again on every code of both conversions, and fails\n\
         //! if the finder's answer differs from this file.\n\
         \n\
         use crate::scheme::Scheme;\n",
    );
    text += &format!(
        "\n/// The scheme for `x / (2^k - 1)`, k = {}..={}, at index k - 1: `unorm_to_f32::<N>` uses\n\
         /// `BY_BITS[N - 1]`, `snorm_to_f32::<N>` uses `BY_BITS[N - 2]`.\npub const BY_BITS: [Scheme; {}] = [\n",
        DENOMINATOR_BITS.start(),
        DENOMINATOR_BITS.end(),
        DENOMINATOR_BITS.count()
    );
    for f in found {
        let best = f.best.ok_or(EmitError::NoExactScheme { denominator: f.denominator, bits: f.bits })?;
        text += &format!(
            "    // k = {}, d = {} ({}): {} ({})\n    {},\n",
            f.bits,
            f.denominator,
            conversions(f.bits),
            formula(best.scheme),
            best.family.name(),
            rust_expression(best.scheme)
        );
    }
    text += "];\n";
    Ok(text)
}

pub(super) fn serialize_scheme<S: serde::Serializer>(scheme: &Scheme, s: S) -> Result<S::Ok, S::Error> {
    SchemeJson::from(*scheme).serialize(s)
}

pub(super) fn serialize_option_scheme<S: serde::Serializer>(scheme: &Option<Scheme>, s: S) -> Result<S::Ok, S::Error> {
    scheme.map(SchemeJson::from).serialize(s)
}

/// JSON form of a scheme: its formula and constants as exact hex floats and bits.
#[derive(serde::Serialize)]
pub(super) struct SchemeJson {
    formula: String,
    multiplier: Option<i32>,
    constants_hex: Vec<String>,
    constants_bits: Vec<String>,
}

impl From<Scheme> for SchemeJson {
    fn from(scheme: Scheme) -> SchemeJson {
        let (multiplier, constants) = match scheme {
            Scheme::Convert => (None, vec![]),
            Scheme::Mul { c } => (None, vec![c]),
            Scheme::IntMul { m, c } => (Some(m), vec![c]),
            Scheme::Fma { c0, c1 } | Scheme::MulAdd { c0, c1 } => (None, vec![c0, c1]),
        };
        SchemeJson {
            formula: formula(scheme),
            multiplier,
            constants_hex: constants.iter().map(|&c| hex_f32(c)).collect(),
            constants_bits: constants.iter().map(|c| format!("{:#010x}", c.to_bits())).collect(),
        }
    }
}
