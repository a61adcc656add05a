//! The kernel entry points the embedded PTX must have, named from the variant table
//! (`shared::for_each_variant!`) by the rules of `kernels-gpu`'s generator, written out
//! again here so that the two can be compared: for every variant `V`, `V`,
//! `V_skeleton`, `V_latency` and `V_throughput`; also `V_wide` for the UNORM8 → f32
//! variants that take a `u8`, and `V_count_nonfinite` for the binary16 finiteness
//! variants (which take a `u16`).

use shared::{Family, Format, Primitive};
use std::any::TypeId;
use std::collections::BTreeSet;

macro_rules! variant_inputs {
    ($({ $name:ident, $family:expr, $in:ty => $out:ty, $f:path, $claim:ident, $desc:literal })*) => {
        /// Every variant of the table: its name, family and input type.
        fn variant_inputs() -> Vec<(&'static str, Family, TypeId)> {
            vec![$((
                <shared::variants::$name as Primitive>::NAME,
                <shared::variants::$name as Primitive>::FAMILY,
                TypeId::of::<$in>(),
            ),)*]
        }
    };
}
shared::for_each_variant!(variant_inputs);

/// Every kernel name the table calls for.
pub fn names() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (variant, family, input) in variant_inputs() {
        names.extend([
            variant.to_string(),
            host::ptx::skeleton_name(variant),
            format!("{variant}_latency"),
            format!("{variant}_throughput"),
        ]);
        if family == (Family::UnormToF32 { bits: 8 }) && input == TypeId::of::<u8>() {
            names.insert(format!("{variant}_wide"));
        }
        if family == Family::IsFinite(Format::Binary16) && input == TypeId::of::<u16>() {
            names.insert(format!("{variant}_count_nonfinite"));
        }
    }
    names
}

/// [`names`], after checking that they are exactly the entry points of the embedded
/// PTX (panics with the names missing on either side).
pub fn names_checked_against_the_ptx() -> BTreeSet<String> {
    let expected = names();
    for suffix in ["_wide", "_count_nonfinite"] {
        assert!(expected.iter().any(|n| n.ends_with(suffix)), "the table names no {suffix} kernel");
    }
    let entries = host::ptx::entry_names(host::ptx::PTX);
    let found: BTreeSet<String> = entries.iter().map(|e| e.to_string()).collect();
    assert_eq!(found.len(), entries.len(), "an entry point is defined twice: {entries:?}");
    let missing: Vec<&String> = expected.difference(&found).collect();
    let unexpected: Vec<&String> = found.difference(&expected).collect();
    assert!(
        missing.is_empty() && unexpected.is_empty(),
        "kernels the table names but the PTX lacks: {missing:?}; PTX entries the table does not name: {unexpected:?}"
    );
    expected
}
