//! The SASS listing of any PTX module, a kernel crate of one's own for instance
//! (`bitexact sass --ptx FILE`): per architecture, each kernel's instructions and
//! opcodes, and the float → integer conversions its PTX did not ask for.

use crate::guards::unrequested_float_to_int;
use crate::sass::{Kernel, SassError, parse_listing};
use crate::tools::{CudaTools, check_arch};
use bitexact_gpu::ptx::arch_number;

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

/// Which of the asked architectures a module can be assembled for: ptxas refuses to
/// assemble a module for an architecture below its `.target`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchChoice<'a> {
    /// The module's `.target` (`sm_86`), if it says one.
    pub target: Option<String>,
    /// The architectures to assemble for, in the order asked.
    pub kept: Vec<&'a str>,
    /// Those skipped: below the target, or any other than an architecture-specific
    /// target itself (`sm_90a` runs on sm_90a only).
    pub skipped: Vec<&'a str>,
}

impl ArchChoice<'_> {
    /// Why architectures are skipped: `the module's .target is sm_86, and ptxas
    /// assembles a module for its target and newer architectures only`.
    pub fn reason(&self) -> String {
        format!(
            "the module's .target is {}, and ptxas assembles a module for its target and newer architectures only",
            self.target.as_deref().unwrap_or("unknown")
        )
    }
}

/// `skipped sm_75, sm_80: ` and the [`ArchChoice::reason`].
impl std::fmt::Display for ArchChoice<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "skipped {}: {}", self.skipped.join(", "), self.reason())
    }
}

/// Splits `archs` into those `ptx`'s `.target` can be assembled for and those it cannot
/// (see [`ArchChoice`]). A module without a `.target`, or with one of another form, keeps
/// every architecture (ptxas then says what is wrong).
pub fn archs_for_module<'a>(ptx: &str, archs: &[&'a str]) -> ArchChoice<'a> {
    let target = ptx_builder::ptx_text::module_target(ptx);
    let assembles = |arch: &str| match target {
        Some(target) if target.ends_with(|c: char| c.is_ascii_lowercase()) => arch == target,
        Some(target) => match (arch_number(target), arch_number(arch)) {
            (Some(target), Some(arch)) => arch >= target,
            _ => true,
        },
        None => true,
    };
    let (kept, skipped) = archs.iter().partition(|arch| assembles(arch));
    ArchChoice { target: target.map(str::to_string), kept, skipped }
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

    const SM_90_LISTING: &str = include_str!("../../../tests/fixtures/sass_sm_90.txt");

    /// A module's header for `target`.
    fn module_for(target: &str) -> String {
        format!(".version 7.8\n.target {target}\n.address_size 64\n")
    }

    #[test]
    fn the_architectures_below_the_modules_target_are_skipped() {
        let archs = crate::tools::ARCHS;
        for target in archs {
            let choice = archs_for_module(&module_for(target), &archs);
            let number = arch_number(target).unwrap();
            let (below, from): (Vec<&str>, Vec<&str>) = archs.iter().partition(|a| arch_number(a).unwrap() < number);
            assert_eq!((choice.kept, choice.skipped), (from, below), "{target}");
        }
        let specific = archs_for_module(&module_for("sm_90a, texmode_independent"), &["sm_80", "sm_90", "sm_90a"]);
        assert_eq!((specific.kept, specific.skipped), (vec!["sm_90a"], vec!["sm_80", "sm_90"]));
        let no_target = archs_for_module(".version 7.0\n", &["sm_75"]);
        assert_eq!((no_target.kept, no_target.target), (vec!["sm_75"], None));
        let choice = archs_for_module(&module_for("sm_86"), &["sm_75", "sm_80", "sm_90"]);
        assert!(choice.to_string().starts_with("skipped sm_75, sm_80: the module's .target is sm_86"), "{choice}");
    }

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
