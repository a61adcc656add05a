//! The kernel entry points the embedded PTX modules must have: for every variant of the
//! table, one per kind of kernel its entry has ([`bitexact::verify::table::Variant::kernels`], from
//! `shared::Primitive::KINDS`), named as `shared::KernelName` says, each in the module
//! [`bitexact::gpu::ptx::module_of`] names (a `Hardware` kernel in its instruction's target's).
//! `kernels-gpu` generates its entry points from the same kinds, so a kind it stops
//! emitting, or emits for a variant whose entry does not list it, is a difference here.

use bitexact::gpu::ptx::{MODULES, module_of};
use bitexact::verify::table::{VARIANTS, Variant};
use shared::KernelKind;
use shared::hardware::Conversion;
use std::collections::BTreeSet;

/// Every kernel name the table calls for.
pub fn names() -> BTreeSet<String> {
    VARIANTS.iter().flat_map(Variant::kernels).map(|name| name.to_string()).collect()
}

/// [`names`], after checking that they are exactly the entry points of the embedded
/// PTX modules (panics with the names missing on either side), each in the module
/// [`module_of`] names, and that every kind of kernel is among them (a kind the table
/// stopped giving to any variant is dropped on both sides, so the comparison alone would
/// not see it; [`KernelKind::in_table`] says which kinds the table can give).
pub fn names_checked_against_the_ptx() -> BTreeSet<String> {
    for &kind in KernelKind::ALL.iter().filter(|k| k.in_table()) {
        assert!(VARIANTS.iter().any(|v| v.has(kind)), "no variant of the table has a {kind:?} kernel");
    }
    for v in VARIANTS {
        for name in v.kernels() {
            let module = module_of(name, Conversion::of(v.family));
            let entries = bitexact::gpu::ptx::entry_names(module.ptx);
            assert!(entries.contains(&name.to_string().as_str()), "{name} is not in the {} module", module.target);
        }
    }
    let expected = names();
    let entries: Vec<&str> = MODULES.iter().flat_map(|m| bitexact::gpu::ptx::entry_names(m.ptx)).collect();
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
