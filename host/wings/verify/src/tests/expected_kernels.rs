//! The kernel entry points the embedded PTX modules must have: for every variant of the
//! table, one per kind of kernel its entry has ([`crate::table::Variant::kernels`], from
//! `shared::Primitive::KINDS`), named as `shared::KernelName` says, each in the module
//! `bitexact_gpu::ptx::module_of` names (a `Hardware` kernel in its instruction's target's).
//! `kernels-gpu` generates its entry points from the same kinds, so a kind it stops
//! emitting, or emits for a variant whose entry does not list it, is a difference here.
//! (It was `host`'s `expected_kernels` and `ptx_tools`; `gpu.rs` loads each of these
//! kernels on a GPU.)

use crate::table::{VARIANTS, Variant};
use bitexact_gpu::ptx::{MODULES, module_of};
use shared::KernelKind;
use shared::hardware::Conversion;
use std::collections::BTreeSet;

/// Every kernel name the table calls for.
fn names() -> BTreeSet<String> {
    VARIANTS.iter().flat_map(Variant::kernels).map(|name| name.to_string()).collect()
}

/// [`names`], checked to be exactly the entry points of the embedded
/// PTX modules (panics with the names missing on either side), each in the module
/// [`module_of`] names, and that every kind of kernel is among them (a kind the table
/// stopped giving to any variant is dropped on both sides, so the comparison alone would
/// not see it; [`KernelKind::in_table`] says which kinds the table can give).
#[test]
fn the_ptx_entries_are_exactly_the_kernels_the_table_names() {
    for &kind in KernelKind::ALL.iter().filter(|k| k.in_table()) {
        assert!(VARIANTS.iter().any(|v| v.has(kind)), "no variant of the table has a {kind:?} kernel");
    }
    for v in VARIANTS {
        for name in v.kernels() {
            let module = module_of(name, Conversion::of(v.family));
            let entries = bitexact_gpu::ptx::entry_names(module.ptx);
            assert!(entries.contains(&name.to_string().as_str()), "{name} is not in the {} module", module.target);
        }
    }
    let expected = names();
    let entries: Vec<&str> = MODULES.iter().flat_map(|m| bitexact_gpu::ptx::entry_names(m.ptx)).collect();
    let found: BTreeSet<String> = entries.iter().map(|e| e.to_string()).collect();
    assert_eq!(found.len(), entries.len(), "an entry point is defined twice: {entries:?}");
    let missing: Vec<&String> = expected.difference(&found).collect();
    let unexpected: Vec<&String> = found.difference(&expected).collect();
    assert!(
        missing.is_empty() && unexpected.is_empty(),
        "kernels the table names but the PTX lacks: {missing:?}; PTX entries the table does not name: {unexpected:?}"
    );
    println!("{} kernels for {} variants", expected.len(), VARIANTS.len());
}
