//! Every kernel of the embedded PTX modules against the parameter list its kind declares
//! (`bitexact::gpu::kind_params`, from `shared::KernelKind`'s documented signatures),
//! through the same check a declared kernel of one's own gets when its module loads
//! (`bitexact::gpu::check_params`): the count, and each parameter's kind and width. No
//! GPU needed: the PTX is embedded in the library.

use bitexact::gpu::{check_params, kind_params, ptx};
use bitexact::verify::table::VARIANTS;

#[test]
fn every_embedded_kernel_takes_the_parameters_of_its_kind() {
    let mut checked = 0;
    for variant in VARIANTS {
        let (input_bytes, output_bytes) = (variant.input_bits as usize / 8, variant.output_bits as usize / 8);
        for kind in variant.kinds.iter().copied() {
            let name = variant.kernel(kind).expect("a kind of the entry").to_string();
            let Some(module) = ptx::MODULES.iter().find(|m| ptx::entry_names(m.ptx).contains(&name.as_str())) else {
                panic!("{name}: in no embedded module");
            };
            let declared = kind_params(kind, input_bytes.max(1), output_bytes.max(1));
            check_params(&name, &declared, module.ptx).unwrap_or_else(|e| panic!("{e}"));
            checked += 1;
        }
    }
    assert!(checked > 400, "{checked} kernels checked");
    eprintln!("{checked} embedded kernels take their kind's parameters");
}
