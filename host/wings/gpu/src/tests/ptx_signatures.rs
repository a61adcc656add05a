//! Every kernel of the embedded PTX modules against its kind's declaration
//! (`shared::kind::KindKernel<P, tag::Kind>`, the one the kind launches make their typed
//! handle from), through the same check a declared kernel of one's own gets before its
//! launch (`crate::check_params`): the count, and each parameter's kind and
//! width. Every entry of every module is one of these. No GPU needed: the PTX is
//! embedded in the library. (It was one of `host`'s integration tests.)

use crate::ptx;
use crate::{GpuError, check_params};
use shared::kind::{KindKernel, tag};
use shared::launch::DeclaredKernel;
use std::collections::BTreeSet;

/// Checks `K` against the embedded module that holds its entry, and records its name.
fn check<K: DeclaredKernel>(checked: &mut Vec<&'static str>) {
    let Some(module) = ptx::MODULES.iter().find(|m| ptx::entry_names(m.ptx).contains(&K::NAME)) else {
        panic!("{}: in no embedded module", K::NAME);
    };
    check_params(K::NAME, K::PARAMS, module.ptx).unwrap_or_else(|e| panic!("{e}"));
    checked.push(K::NAME);
}

/// The declaration of each kind of each variant, as the table lists them, checked.
macro_rules! check_table {
    ($({ $name:ident, $family:expr, $in:ty => $out:ty, $f:path, $claim:ident, [$($kind:ident),*], $desc:literal })*) => {
        fn check_every_declaration() -> Vec<&'static str> {
            let mut checked = Vec::new();
            $($(check::<KindKernel<shared::variants::$name, tag::$kind>>(&mut checked);)*)*
            checked
        }
    };
}
shared::for_each_variant!(check_table);

#[test]
fn every_embedded_kernel_takes_the_parameters_of_its_kind_declaration() {
    let checked = check_every_declaration();
    let declared: BTreeSet<&str> = checked.iter().copied().collect();
    assert_eq!(declared.len(), checked.len(), "a kernel declared twice");
    let entries: BTreeSet<&str> = ptx::MODULES.iter().flat_map(|m| ptx::entry_names(m.ptx)).collect();
    let undeclared: Vec<&&str> = entries.difference(&declared).collect();
    assert!(undeclared.is_empty(), "entries no declaration checks: {undeclared:?}");
    assert!(checked.len() > 400, "{} kernels checked", checked.len());
    eprintln!("{} embedded kernels take their kind declaration's parameters", checked.len());
}

/// The check fails on the real PTX: the timing kinds' declaration against a `Map`
/// kernel's entry.
#[test]
fn another_kinds_declaration_is_refused_by_the_embedded_ptx() {
    type V = shared::variants::unorm8_times3_int;
    let map = <KindKernel<V, tag::Map>>::NAME;
    let timing = <KindKernel<V, tag::Throughput>>::PARAMS;
    let error = check_params(map, timing, ptx::PTX).unwrap_err();
    assert!(matches!(&error, GpuError::Signature { kernel, .. } if kernel == map), "{error}");
    assert!(error.to_string().contains("parameter 0 is declared a 8-byte integer"), "{error}");
}
