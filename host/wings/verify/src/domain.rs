//! The inputs each family is checked on: the one definition used by CPU verification
//! (`cpu`, `bitexact verify`, `cargo test`) and by the GPU conformance tests.
//!
//! A [`Domain::Exhaustive`] domain is every integer below `2^bits`, in order. The
//! [`Domain::Sampled`] domain of a float format (binary64) is, in this order:
//!
//! 1. every sign × every biased exponent × `MANTISSAS_PER_EXPONENT` mantissas: the
//!    boundary mantissas (0, 1, 2, 3, the quiet bit ± 1, all ones and all ones − 1),
//!    then random ones;
//! 2. `RANDOM_SAMPLE` uniformly random encodings.
//!
//! Random values come from SplitMix64 keyed by the input's index and `SAMPLE_SEED`,
//! so the sample is the same on every run and every machine, and input `i` can be
//! computed on its own (for splitting the work between threads or GPU blocks).

use crate::reference;
use shared::{Domain, Family, Format};

/// Seed of the random part of sampled domains.
pub(crate) const SAMPLE_SEED: u64 = 0xB17E_4AC7_5EED_0001;
/// Uniformly random encodings in a sampled domain.
pub(crate) const RANDOM_SAMPLE: u64 = 1 << 24;
/// Mantissas per (sign, exponent) pair in a sampled domain: the 9 boundary ones, then
/// random ones.
pub(crate) const MANTISSAS_PER_EXPONENT: u64 = 16;

/// Number of inputs in `family`'s domain.
pub fn count(family: Family) -> u64 {
    match family.domain() {
        Domain::Exhaustive { bits } => 1 << bits,
        Domain::Sampled(format) => structured_count(format) + RANDOM_SAMPLE,
    }
}

/// Input number `index` (`< count(family)`) of `family`'s domain.
///
/// Panics if `index >= count(family)`.
#[inline]
pub fn input(family: Family, index: u64) -> u64 {
    assert!(index < count(family), "input {index} of {family}, which has {}", count(family));
    match family.domain() {
        Domain::Exhaustive { .. } => index,
        Domain::Sampled(format) => sampled_input(format, index),
    }
}

/// Appends inputs `first .. first + len` of `family`'s domain to `out` (the fast way to
/// take a slice of a domain).
///
/// Panics if `first + len > count(family)`.
#[doc(hidden)]
pub fn extend_with_inputs(family: Family, first: u64, len: u64, out: &mut Vec<u64>) {
    let end = first.checked_add(len).filter(|&end| end <= count(family));
    let end = end.unwrap_or_else(|| panic!("inputs {first}..+{len} of {family}, which has {}", count(family)));
    match family.domain() {
        Domain::Exhaustive { .. } => out.extend(first..end),
        Domain::Sampled(format) => out.extend((first..end).map(|index| sampled_input(format, index))),
    }
}

/// Every input of `family`'s domain, in order: `input(family, 0..count(family))`.
pub fn inputs(family: Family) -> impl Iterator<Item = u64> + Clone + Send + 'static {
    (0..count(family)).map(move |index| input(family, index))
}

/// One-line description of the domain, for reports: `all 2^16`, or the sample's
/// makeup.
#[doc(hidden)]
pub fn describe(family: Family) -> String {
    match family.domain() {
        Domain::Exhaustive { bits } => format!("all 2^{bits}"),
        Domain::Sampled(format) => format!(
            "sample of {}: 2 signs × every exponent × {MANTISSAS_PER_EXPONENT} mantissas + 2^{} random (seed {SAMPLE_SEED:#x})",
            format.name(),
            RANDOM_SAMPLE.trailing_zeros()
        ),
    }
}

/// Inputs in part 1 of a sampled domain.
fn structured_count(format: Format) -> u64 {
    2 << reference::layout(format).exponent_bits << MANTISSAS_PER_EXPONENT.trailing_zeros()
}

fn sampled_input(format: Format, index: u64) -> u64 {
    let layout = reference::layout(format);
    let width_mask = u64::MAX >> (u64::BITS - format.bits());
    let structured = structured_count(format);
    if index >= structured {
        return splitmix64(SAMPLE_SEED ^ (index - structured)) & width_mask;
    }
    let mantissa_bits = layout.mantissa_bits;
    let all_ones = (1u64 << mantissa_bits) - 1;
    let quiet = 1u64 << (mantissa_bits - 1);
    let boundary = [0, 1, 2, 3, quiet - 1, quiet, quiet + 1, all_ones - 1, all_ones];
    let (pair, slot) = (index / MANTISSAS_PER_EXPONENT, index % MANTISSAS_PER_EXPONENT);
    let mantissa = match boundary.get(slot as usize) {
        Some(&m) => m,
        None => splitmix64(SAMPLE_SEED.rotate_left(32) ^ index) & all_ones,
    };
    // `pair` runs over sign (high) × biased exponent (low): exactly the bits above the
    // mantissa.
    (pair << mantissa_bits | mantissa) & width_mask
}

/// SplitMix64 (Steele, Lea, Flood 2014): a bijective scramble of `x`.
const fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampled_domain_covers_every_sign_and_exponent_with_the_boundary_mantissas() {
        let family = Family::IsFinite(Format::Binary64);
        let structured = structured_count(Format::Binary64);
        assert_eq!(structured, 2 * 2048 * MANTISSAS_PER_EXPONENT);
        assert_eq!(count(family), structured + RANDOM_SAMPLE);
        let mut seen = std::collections::HashSet::new();
        for i in 0..structured {
            let x = input(family, i);
            seen.insert(x >> 52);
            if i % MANTISSAS_PER_EXPONENT == 0 {
                assert_eq!(x & ((1 << 52) - 1), 0, "block {i} starts with mantissa 0");
            }
        }
        assert_eq!(seen.len(), 4096, "every sign × exponent");
        assert!(input(family, 8) == 0xF_FFFF_FFFF_FFFF, "slot 8 is the all-ones mantissa");
        // The random part is deterministic and not degenerate.
        let random: std::collections::HashSet<u64> =
            (structured..structured + 1000).map(|i| input(family, i)).collect();
        assert_eq!(random.len(), 1000);
        assert_eq!(input(family, structured), input(family, structured));
    }

    #[test]
    fn exhaustive_domains_are_every_value_in_order() {
        let family = Family::UnormToF32 { bits: 5 };
        assert_eq!(count(family), 32);
        assert_eq!(inputs(family).collect::<Vec<_>>(), (0..32).collect::<Vec<_>>());
        assert!(family.domain().contains(31) && !family.domain().contains(32));
        assert_eq!(count(Family::F32ToUnorm { bits: 8 }), 1 << 32);
    }
}
