//! The SASS listing of any PTX module, a kernel crate of one's own for instance
//! (`bitexact sass --ptx FILE`): per architecture, each kernel's instructions and
//! opcodes, and the float → integer conversions its PTX did not ask for.

use crate::cuda_tools::guards::unrequested_float_to_int;
use crate::cuda_tools::sass::{Kernel, SassError, parse_listing};
use crate::cuda_tools::tools::{CudaTools, check_arch};

/// One kernel of any PTX module (one of one's own) on one architecture: what
/// [`listing_report`] says of it. No skeleton to subtract: the whole kernel.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct KernelListing {
    /// The architecture, e.g. `sm_90`.
    pub arch: String,
    /// The kernel's name.
    pub kernel: String,
    /// Its instructions (padding removed, as [`parse_listing`] does).
    pub instructions: usize,
    /// Each opcode with its number of occurrences, in order of first occurrence.
    pub opcodes: Vec<(String, usize)>,
    /// Its float → integer conversions that its PTX did not ask for
    /// ([`unrequested_float_to_int`]): a narrow store ptxas
    /// turned into a conversion. Should be empty.
    pub unrequested_conversions: Vec<String>,
}

/// Each opcode of `kernel` with its count, in order of first occurrence.
fn opcode_counts(kernel: &Kernel) -> Vec<(String, usize)> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for i in &kernel.instructions {
        match counts.iter_mut().find(|(opcode, _)| *opcode == i.opcode) {
            Some((_, n)) => *n += 1,
            None => counts.push((i.opcode.clone(), 1)),
        }
    }
    counts
}

/// Assembles `ptx` (any module, for instance one built from a kernel crate of one's own
/// by `ptx-builder`) for each of `archs`, disassembles it, and lists each kernel: its
/// instruction count, its opcodes, and the float → integer conversions its PTX did not
/// ask for, architecture by architecture, kernels in listing order. Fails if an
/// architecture name is malformed (before anything runs) or a tool fails (ptxas's log
/// says why, e.g. a target newer than the architecture).
pub fn listing_report(tools: &CudaTools, ptx: &str, archs: &[&str]) -> Result<Vec<KernelListing>, SassError> {
    for arch in archs {
        check_arch(arch)?;
    }
    let mut rows = Vec::new();
    for &arch in archs {
        let kernels = parse_listing(&tools.disassemble(&tools.assemble(ptx, arch)?)?);
        let unrequested = unrequested_float_to_int(ptx, &kernels, arch);
        rows.extend(kernels.iter().map(|kernel| KernelListing {
            arch: arch.to_string(),
            kernel: kernel.name.clone(),
            instructions: kernel.instructions.len(),
            opcodes: opcode_counts(kernel),
            unrequested_conversions:
                unrequested.iter().filter(|u| u.kernel == kernel.name).map(|u| u.instruction.clone()).collect(),
        }));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SM_90_LISTING: &str = include_str!("../../tests/fixtures/sass_sm_90.txt");

    #[test]
    fn opcode_counts_follow_first_occurrence_and_add_up_to_the_kernel() {
        let kernels = parse_listing(SM_90_LISTING);
        let times3 = kernels.iter().find(|k| k.name == "unorm8_times3_int").expect("in the fixture");
        let counts = opcode_counts(times3);
        assert_eq!(counts.iter().map(|(_, n)| n).sum::<usize>(), times3.instructions.len());
        assert_eq!(counts[0], ("LDC".to_string(), times3.instructions.iter().filter(|i| i.opcode == "LDC").count()));
        let mut seen = std::collections::HashSet::new();
        assert!(counts.iter().all(|(opcode, n)| *n > 0 && seen.insert(opcode)), "{counts:?}");
    }
}
