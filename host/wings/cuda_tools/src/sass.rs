//! The SASS cost report: what each variant adds to the machine code of its kernel.
//!
//! Every variant's kernel has a [`Skeleton`](KernelKind::Skeleton) twin that only
//! indexes, loads and stores. Assembled for one architecture, the variant's *work* is
//! what its kernel has beyond the skeleton's: the difference of their instruction
//! counts, and the multiset difference of their opcodes. Parsing and diffing are pure
//! functions on the text of a `cuobjdump -sass` listing; `cost_report` (the binary's
//! report over the embedded modules, not API) runs the tools.
//!
//! The report also checks the timing kernels ([`Latency`](KernelKind::Latency),
//! [`Throughput`](KernelKind::Throughput)): that their chain loop holds that work, see
//! [`chain`]. For a variant with a [`Hardware`](KernelKind::Hardware) kernel it gives the
//! same work for that kernel (the GPU's own conversion instruction), on the
//! architectures its module assembles for ([`HardwareCost`]).

#[doc(hidden)]
pub mod bandwidth;
#[doc(hidden)]
pub mod chain;

use crate::tools::{CudaTools, ToolError, check_arch};
use bitexact_gpu::ptx::Module;
use bitexact_verify::table::Variant;
use rayon::prelude::*;
use shared::hardware::{Conversion, PtxTarget};
use shared::{KernelKind, KernelName};
use std::collections::HashMap;

/// One SASS instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instruction {
    /// Byte offset in the kernel.
    pub address: u64,
    /// Mnemonic with its modifiers (`I2FP.F32.U32`), without the predicate.
    pub opcode: String,
    /// The whole instruction as listed (predicate and operands), without the `;`.
    pub text: String,
}

/// The instructions of one kernel, padding removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// The kernel's name.
    pub name: String,
    /// Its instructions in program order, without `NOP`s and without the self-branch
    /// `BRA` that ends the listing (padding, never executed).
    pub instructions: Vec<Instruction>,
}

/// Splits a `cuobjdump -sass` listing into kernels (`Function : NAME` headers), in
/// listing order. Only instruction lines (`/*ADDR*/ [@P] OPCODE operands ;`) are kept:
/// headers, encodings, labels and comments are not instructions. Padding is removed as
/// described on [`Kernel::instructions`]. Lines before the first header are ignored.
pub fn parse_listing(listing: &str) -> Vec<Kernel> {
    let mut kernels: Vec<Kernel> = Vec::new();
    for line in listing.lines() {
        if let Some(name) = line.trim().strip_prefix("Function :") {
            kernels.push(Kernel { name: name.trim().to_string(), instructions: Vec::new() });
        } else if let (Some(kernel), Some(instruction)) = (kernels.last_mut(), parse_instruction(line)) {
            kernel.instructions.push(instruction);
        }
    }
    for kernel in &mut kernels {
        kernel.instructions.retain(|i| i.opcode != "NOP");
        if kernel.instructions.last().is_some_and(is_self_branch) {
            kernel.instructions.pop();
        }
    }
    kernels
}

/// `/*0170*/  @!P0 IMAD.MOV.U32 R12, RZ, RZ, 0x3b808081 ;  /* 0x... */` → instruction.
fn parse_instruction(line: &str) -> Option<Instruction> {
    let (address, rest) = line.trim_start().strip_prefix("/*")?.split_once("*/")?;
    let address = u64::from_str_radix(address, 16).ok()?;
    let text = rest.split(';').next()?.trim();
    let mut words = text.split_whitespace();
    let first = words.next()?;
    let opcode = if first.starts_with('@') { words.next()? } else { first };
    Some(Instruction { address, opcode: opcode.to_string(), text: text.to_string() })
}

/// An unpredicated `BRA` to its own address: the loop that ends every listing.
fn is_self_branch(instruction: &Instruction) -> bool {
    let mut words = instruction.text.split_whitespace();
    words.next() == Some("BRA")
        && words.next().and_then(|t| u64::from_str_radix(t.strip_prefix("0x")?, 16).ok()) == Some(instruction.address)
        && words.next().is_none()
}

/// What a variant's kernel has beyond its skeleton's.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[doc(hidden)]
pub struct Work {
    /// Instructions in the variant's kernel.
    pub variant_instructions: usize,
    /// Instructions in the skeleton's kernel.
    pub skeleton_instructions: usize,
    /// `variant_instructions - skeleton_instructions`: the per-element work.
    pub work_instructions: i64,
    /// Opcodes of the variant's kernel minus those of the skeleton's, as multisets, in
    /// the variant's program order (of several equal opcodes, the last ones are listed).
    pub work_opcodes: Vec<String>,
    /// Opcodes of the skeleton's kernel missing from the variant's (usually empty): the
    /// compiler did the skeleton's part differently there.
    pub skeleton_only_opcodes: Vec<String>,
}

/// The work of `variant`'s kernel over `skeleton`'s; see [`Work`]. Always
/// `work_opcodes.len() - skeleton_only_opcodes.len() == work_instructions`.
#[doc(hidden)]
pub fn work(variant: &Kernel, skeleton: &Kernel) -> Work {
    Work {
        variant_instructions: variant.instructions.len(),
        skeleton_instructions: skeleton.instructions.len(),
        work_instructions: variant.instructions.len() as i64 - skeleton.instructions.len() as i64,
        work_opcodes: opcodes_not_in(variant, skeleton),
        skeleton_only_opcodes: opcodes_not_in(skeleton, variant),
    }
}

/// The operation an opcode performs, for matching: ptxas spells the same register move
/// `MOV` or `IMAD.MOV.U32`, and the same carry-in add `IADD3.X` or `IMAD.X`, in kernels
/// that differ only elsewhere; matched as one, they no longer show up as work.
fn operation(opcode: &str) -> &str {
    match opcode {
        "IMAD.MOV.U32" | "IMAD.MOV" => "MOV",
        "IMAD.X" => "IADD3.X",
        other => other,
    }
}

/// The opcodes of `kernel` left after taking away one occurrence for each in `other`
/// (matching by [`operation`]), in `kernel`'s order; an operation occurring `n` times
/// there and `m < n` times in `other` is listed at its last `n - m` occurrences.
fn opcodes_not_in(kernel: &Kernel, other: &Kernel) -> Vec<String> {
    instructions_not_in(kernel, other).into_iter().map(|i| i.opcode.clone()).collect()
}

/// The instructions behind [`opcodes_not_in`].
fn instructions_not_in<'k>(kernel: &'k Kernel, other: &Kernel) -> Vec<&'k Instruction> {
    let mut available: HashMap<&str, usize> = HashMap::new();
    for i in &other.instructions {
        *available.entry(operation(&i.opcode)).or_default() += 1;
    }
    kernel
        .instructions
        .iter()
        .filter(|i| match available.get_mut(operation(&i.opcode)) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .collect()
}

/// One row of the SASS report: one variant on one architecture.
#[derive(Clone, Debug, serde::Serialize)]
#[doc(hidden)]
pub struct SassCost {
    /// The architecture, e.g. `sm_90`.
    pub arch: String,
    /// The variant's name (its kernel's name).
    pub variant: &'static str,
    /// The variant's family.
    pub family: String,
    /// The variant's claim.
    pub claim: &'static str,
    /// Its work over the skeleton.
    #[serde(flatten)]
    pub work: Work,
    /// Whether its timing kernels' chain loops hold that work.
    #[serde(flatten)]
    pub chain: chain::ChainCheck,
    /// Its hardware kernel's work, for a variant that has one.
    pub hardware: Option<HardwareCost>,
}

/// The work of a variant's [`Hardware`](KernelKind::Hardware) kernel on one
/// architecture, over the same skeleton as the variant's own kernel.
#[derive(Clone, Debug, serde::Serialize)]
#[doc(hidden)]
pub struct HardwareCost {
    /// The instruction, as PTX (`cvt.rn.f16.f32`).
    pub instruction: &'static str,
    /// The target of the module that holds the kernel (`sm_89`).
    pub target: String,
    /// The work, or `None` on an architecture older than `target` (n/a: the
    /// instruction does not exist there).
    pub work: Option<Work>,
}

/// Why the SASS report could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SassError {
    /// A tool was missing or failed.
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// A kernel the table names is not in the listing.
    #[error("kernel {kernel} is not in the {arch} SASS listing")]
    MissingKernel {
        /// The architecture of the listing.
        arch: String,
        /// The kernel looked for.
        kernel: String,
    },
}

/// The kernel `name` of a listing for `arch`.
fn find_kernel<'k>(kernels: &'k [Kernel], arch: &str, name: String) -> Result<&'k Kernel, SassError> {
    kernels
        .iter()
        .find(|k| k.name == name)
        .ok_or_else(|| SassError::MissingKernel { arch: arch.to_string(), kernel: name })
}

/// Assembles each PTX module of `modules` (the baseline first, then the newer targets'
/// hardware modules, as [`bitexact_gpu::ptx::MODULES`]) for each of `archs` it assembles for,
/// disassembles it, and returns the [`Work`] and the [`chain::ChainCheck`] of each of
/// `variants` on each architecture, with its hardware kernel's work where it has one,
/// architecture by architecture in the given orders. Fails if an architecture name is
/// malformed (before anything runs), a tool fails, or one of a variant's kernels (map,
/// skeleton, latency, throughput, and hardware where its module assembles) is missing
/// from a listing.
#[doc(hidden)]
pub fn cost_report(
    tools: &CudaTools,
    modules: &[Module],
    variants: &[&'static Variant],
    archs: &[&str],
) -> Result<Vec<SassCost>, SassError> {
    for arch in archs {
        check_arch(arch)?;
    }
    // The architectures on the global rayon pool (ptxas and cuobjdump are processes of
    // their own), each one's listings dropped once its rows are made; the first error in
    // the order of `archs`, whichever finished first.
    let per_arch: Vec<Result<Vec<SassCost>, SassError>> =
        archs.par_iter().map(|&arch| arch_costs(tools, modules, variants, arch)).collect();
    Ok(per_arch.into_iter().collect::<Result<Vec<_>, _>>()?.concat())
}

/// [`cost_report`]'s rows for one architecture.
fn arch_costs(
    tools: &CudaTools,
    modules: &[Module],
    variants: &[&'static Variant],
    arch: &str,
) -> Result<Vec<SassCost>, SassError> {
    let mut costs = Vec::with_capacity(variants.len());
    // One listing per module, `None` for the modules newer than `arch`.
    let mut listings: Vec<(PtxTarget, Option<Vec<Kernel>>)> = Vec::with_capacity(modules.len());
    for module in modules {
        let listing = if module.assembles_for(arch) {
            Some(parse_listing(&tools.disassemble(&tools.assemble(module.ptx, arch)?)?))
        } else {
            None
        };
        listings.push((module.target, listing));
    }
    let find = |kernels, name| find_kernel(kernels, arch, name);
    let Some((_, Some(baseline))) = listings.first() else { return Ok(costs) };
    for variant in variants {
        let kernel = |kind| find(baseline, KernelName { variant: variant.name, kind }.to_string());
        let (map, skeleton) = (kernel(KernelKind::Map)?, kernel(KernelKind::Skeleton)?);
        let (latency, throughput) = (kernel(KernelKind::Latency)?, kernel(KernelKind::Throughput)?);
        let hardware = match (variant.kernel(KernelKind::Hardware), Conversion::of(variant.family)) {
            (Some(name), Some(instruction)) => {
                let target = bitexact_gpu::ptx::module_of(name, Some(instruction)).target;
                let listing = listings.iter().find(|(t, _)| *t == target).and_then(|(_, l)| l.as_ref());
                let work = match listing {
                    Some(kernels) => Some(work(find(kernels, name.to_string())?, skeleton)),
                    None => None,
                };
                Some(HardwareCost { instruction: instruction.ptx(), target: target.to_string(), work })
            }
            _ => None,
        };
        costs.push(SassCost {
            arch: arch.to_string(),
            variant: variant.name,
            family: variant.family.to_string(),
            claim: variant.claim.name(),
            work: work(map, skeleton),
            chain: chain::check(map, skeleton, latency, throughput),
            hardware,
        });
    }
    Ok(costs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cuobjdump -sass -fun unorm8_times3_int,unorm8_times3_int_skeleton,f16_finite_exp_mask,f16_finite_exp_mask_skeleton`
    /// (cuobjdump 13.5) of the embedded PTX assembled by `ptxas -arch=sm_90` (12.9).
    const SM_90_LISTING: &str = include_str!("../../../tests/fixtures/sass_sm_90.txt");

    const TIMES3: &str = "unorm8_times3_int";
    const MASK: &str = "f16_finite_exp_mask";

    fn name(variant: &'static str, kind: KernelKind) -> String {
        KernelName { variant, kind }.to_string()
    }

    fn kernel<'a>(kernels: &'a [Kernel], variant: &'static str, kind: KernelKind) -> &'a Kernel {
        let name = name(variant, kind);
        kernels.iter().find(|k| k.name == name).unwrap_or_else(|| panic!("{name} not in the listing"))
    }

    fn opcodes(kernel: &Kernel) -> Vec<&str> {
        kernel.instructions.iter().map(|i| i.opcode.as_str()).collect()
    }

    #[test]
    fn a_real_listing_splits_into_kernels_without_padding() {
        let kernels = parse_listing(SM_90_LISTING);
        let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
        use KernelKind::{Map, Skeleton};
        assert_eq!(names, [name(TIMES3, Skeleton), name(TIMES3, Map), name(MASK, Skeleton), name(MASK, Map)]);
        let times3 = kernel(&kernels, TIMES3, Map);
        assert_eq!(times3.instructions.len(), 39);
        assert_eq!(times3.instructions[0].text, "LDC R1, c[0x0][0x28]");
        let last = times3.instructions.last().expect("non-empty");
        assert_eq!((last.address, last.opcode.as_str()), (0x260, "EXIT"));
        assert!(kernels.iter().flat_map(|k| &k.instructions).all(|i| i.opcode != "NOP" && !is_self_branch(i)));
        // The loop's back edge is predicated: kept, and its opcode has no predicate.
        let back_edge = times3.instructions.iter().find(|i| i.text == "@P0 BRA 0x110").expect("back edge");
        assert_eq!(back_edge.opcode, "BRA");
    }

    #[test]
    fn work_is_the_multiset_difference_in_program_order() {
        let kernels = parse_listing(SM_90_LISTING);
        use KernelKind::{Map, Skeleton};
        let times3 = work(kernel(&kernels, TIMES3, Map), kernel(&kernels, TIMES3, Skeleton));
        assert_eq!((times3.variant_instructions, times3.skeleton_instructions, times3.work_instructions), (39, 36, 3));
        // The variant's two `MOV`s match the skeleton's two `IMAD.MOV.U32`s.
        assert_eq!(times3.work_opcodes, ["IMAD", "I2FP.F32.U32", "FMUL"]);
        assert!(times3.skeleton_only_opcodes.is_empty());

        let mask = work(kernel(&kernels, MASK, Map), kernel(&kernels, MASK, Skeleton));
        assert_eq!(mask.work_instructions, 2);
        assert_eq!(mask.work_opcodes, ["LOP3.LUT", "ISETP.NE.U32.AND", "SEL"]);
        assert_eq!(mask.skeleton_only_opcodes, ["IMAD.MOV.U32"]);
        for w in [times3, mask] {
            assert_eq!(w.work_opcodes.len() as i64 - w.skeleton_only_opcodes.len() as i64, w.work_instructions);
        }
    }

    #[test]
    fn only_the_trailing_self_branch_and_nops_are_padding() {
        let listing = "
        Function : k
        /*0000*/                   NOP ;
        /*0010*/               @P0 BRA 0x10 ;
        /*0020*/                   BRA 0x20 ;
        /*0030*/                   EXIT ;
        /*0040*/                   BRA 0x40;
        /*0050*/                   NOP;
        .L_x_0:
        // a comment
        ";
        let kernels = parse_listing(listing);
        assert_eq!(kernels.len(), 1);
        assert_eq!(opcodes(&kernels[0]), ["BRA", "BRA", "EXIT"]);
    }

    #[test]
    fn equal_opcodes_match_first_and_the_last_ones_are_listed() {
        let kernel = |ops: &[&str]| Kernel {
            name: "k".into(),
            instructions: ops
                .iter()
                .zip(0..)
                .map(|(op, n)| Instruction { address: n * 16, opcode: op.to_string(), text: op.to_string() })
                .collect(),
        };
        let w = work(&kernel(&["A", "B", "A", "C", "A"]), &kernel(&["A", "D"]));
        assert_eq!(w.work_opcodes, ["B", "A", "C", "A"]);
        assert_eq!(w.skeleton_only_opcodes, ["D"]);
        assert_eq!(w.work_instructions, 3);
        assert!(parse_listing("no header\n/*0000*/ EXIT ;").is_empty());
    }
}
