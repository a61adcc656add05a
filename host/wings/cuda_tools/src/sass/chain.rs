//! Whether a timing kernel times the variant's work: the dependent-chain loop of each
//! [`Latency`](shared::KernelKind::Latency) and
//! [`Throughput`](shared::KernelKind::Throughput) kernel, found in its SASS listing,
//! and how many applications of the variant's function it holds.
//!
//! The criterion, all on the listings:
//!
//! 1. **The work to look for** is the variant kernel's instructions beyond its
//!    skeleton's (as in [`super::work`]) without memory accesses, moves and control flow
//!    (how the map kernel loads, stores and loops, not the function), each reduced to
//!    its `chain_operation`: the mnemonic without modifiers, uniform-datapath spellings
//!    as the per-thread ones, the integer adds (`IADD3`, `VIADD`, `IMAD.IADD`) as one,
//!    and select and integer min/max (`SEL`, `VIMNMX`) as one.
//!    Nothing left: the function is constant, there is nothing to time.
//! 2. **Loops**: every backward branch closes one, from its target to it ([`loops`]). A
//!    loop whose trip counter starts from `n & m`, `m = 2^k - 1 <= 255`, is the
//!    remainder loop LLVM appends to a loop it unrolled by `m + 1`: it runs at most `m`
//!    times per launch, whatever the step count, so it is not the chain. This is what
//!    the folded chains of commit 846e06b left: the unrolled loop had folded to nothing
//!    and only its remainder kept the work, a remainder that the bench's step counts
//!    (multiples of 2^12) never run.
//! 3. **Applications per iteration** of every other loop: for each instruction of the
//!    work, how many times the loop holds its operation (without the loop's counter
//!    update, exit compare and back edge, with the subroutines it calls), divided by how
//!    many times the work holds it; the lower median of that over the work's
//!    instructions. So a strict majority of the work's instructions must be there that
//!    many times: a few may differ (ptxas spells or places some differently in a loop,
//!    e.g. a conversion that the map kernel fused into its byte store, or a 64-bit add
//!    where the map kernel had a 32-bit one), but a loop with the work missing counts 0.
//! 4. **The chain loop** is the loop of step 3 with the most applications (the first of
//!    equals); the kernel holds the work if it has at least one.
//!
//! The reported loop size counts every instruction from the branch target to the back
//! edge, loop control included, so `instructions / applications` is the cost of one
//! step as the GPU issues it.

use super::{Instruction, Kernel, instructions_not_in};
use std::collections::HashMap;
use std::fmt;

/// A loop of a kernel: a backward branch and the instructions from its target to it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loop {
    /// Index in [`Kernel::instructions`] of the loop's first instruction (the target).
    pub first: usize,
    /// Index of the backward branch that closes it.
    pub last: usize,
    /// `Some(m)` if the loop's trip counter starts from `n & m` for a mask
    /// `m = 2^k - 1 <= 255`: a remainder loop, at most `m` iterations per launch.
    pub remainder_of: Option<u64>,
}

impl Loop {
    /// Instructions from the branch target to the back edge, both included.
    pub fn instructions(&self) -> usize {
        self.last + 1 - self.first
    }
}

/// The loop of a timing kernel that holds its chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ChainLoop {
    /// Instructions in the loop, loop control included.
    pub instructions: usize,
    /// Applications of the variant's function per iteration (steps of the chain for the
    /// latency kernel, steps of all four chains for the throughput kernel).
    pub applications: usize,
}

/// Why a timing kernel has no loop that holds the work.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NoChain {
    /// The kernel has no loop at all.
    NoLoop,
    /// Only remainder loops hold the work; the largest runs at most `max_trips` times.
    OnlyRemainder {
        /// Most iterations of the remainder loop per launch.
        max_trips: u64,
    },
    /// There are loops, but none holds the work.
    NoWork,
}

impl fmt::Display for NoChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoChain::NoLoop => f.write_str("no loop: the chain was folded away"),
            NoChain::OnlyRemainder { max_trips } => write!(
                f,
                "only a remainder loop (at most {max_trips} steps per launch) holds the work: the unrolled chain was folded away"
            ),
            NoChain::NoWork => f.write_str("no loop holds the work"),
        }
    }
}

/// What the timing kernels of a variant time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChainVerdict {
    /// Both timing kernels have a chain loop that holds the work.
    HoldsWork,
    /// The variant's kernel has no work beyond its skeleton (nothing but moves, memory
    /// accesses and control flow): the function is constant, there is nothing to time.
    Constant,
    /// At least one timing kernel does not time the work; why, per kernel.
    Missing(MissingChain),
}

/// Which timing kernels of a variant do not time its work, and why: at least one of the
/// two is `Some`. `Display`: `latency: <why>; throughput: <why>`, the kernels that miss.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingChain {
    /// Why the latency kernel does not, if it does not.
    pub latency: Option<NoChain>,
    /// Why the throughput kernel does not, if it does not.
    pub throughput: Option<NoChain>,
}

impl fmt::Display for MissingChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut separator = "";
        for (kind, why) in [("latency", &self.latency), ("throughput", &self.throughput)] {
            if let Some(why) = why {
                write!(f, "{separator}{kind}: {why}")?;
                separator = "; ";
            }
        }
        Ok(())
    }
}

impl fmt::Display for ChainVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainVerdict::HoldsWork => f.write_str("holds the work"),
            ChainVerdict::Constant => f.write_str("constant: nothing to time"),
            ChainVerdict::Missing(why) => write!(f, "MISSING: {why}"),
        }
    }
}

impl serde::Serialize for ChainVerdict {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The chain loops of a variant's two timing kernels, and the verdict.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ChainCheck {
    /// Instructions of the latency kernel's chain loop (none if it has none).
    pub latency_loop_instructions: Option<usize>,
    /// Applications (chain steps) per iteration of that loop.
    pub latency_loop_applications: Option<usize>,
    /// Instructions of the throughput kernel's chain loop.
    pub throughput_loop_instructions: Option<usize>,
    /// Applications per iteration of that loop (four chains × the steps of each).
    pub throughput_loop_applications: Option<usize>,
    /// Whether both loops hold the work ([`ChainVerdict::HoldsWork`]).
    pub chain_holds_work: bool,
    /// The verdict, as text: `holds the work`, `constant: nothing to time`, or
    /// `MISSING: ` and why.
    pub chain: ChainVerdict,
}

/// Checks the timing kernels of a variant against the work of its map kernel over its
/// skeleton; see the module documentation for the criterion.
pub fn check(variant: &Kernel, skeleton: &Kernel, latency: &Kernel, throughput: &Kernel) -> ChainCheck {
    let work: Vec<&str> = instructions_not_in(variant, skeleton).into_iter().filter_map(chain_operation).collect();
    let (latency, throughput) = (chain_loop(&work, latency), chain_loop(&work, throughput));
    let chain = if work.is_empty() {
        ChainVerdict::Constant
    } else {
        let missing =
            MissingChain { latency: latency.as_ref().err().cloned(), throughput: throughput.as_ref().err().cloned() };
        if missing.latency.is_none() && missing.throughput.is_none() {
            ChainVerdict::HoldsWork
        } else {
            ChainVerdict::Missing(missing)
        }
    };
    let field = |found: &Result<ChainLoop, NoChain>, get: fn(&ChainLoop) -> usize| found.as_ref().ok().map(get);
    ChainCheck {
        latency_loop_instructions: field(&latency, |l| l.instructions),
        latency_loop_applications: field(&latency, |l| l.applications),
        throughput_loop_instructions: field(&throughput, |l| l.instructions),
        throughput_loop_applications: field(&throughput, |l| l.applications),
        chain_holds_work: chain == ChainVerdict::HoldsWork,
        chain,
    }
}

/// The loop of `kernel` that holds the most applications of `work` (operations as
/// [`chain_operation`] gives them), remainder loops excepted; see the module
/// documentation. An empty `work` is found nowhere.
pub(crate) fn chain_loop(work: &[&str], kernel: &Kernel) -> Result<ChainLoop, NoChain> {
    let all = loops(kernel);
    if all.is_empty() {
        return Err(NoChain::NoLoop);
    }
    let mut best: Option<ChainLoop> = None;
    let mut remainder_trips: Option<u64> = None;
    for found in &all {
        let applications = applications(work, &loop_operations(kernel, found));
        if applications == 0 {
            continue;
        }
        match found.remainder_of {
            Some(trips) => remainder_trips = remainder_trips.max(Some(trips)),
            None if best.is_none_or(|b| applications > b.applications) => {
                best = Some(ChainLoop { instructions: found.instructions(), applications });
            }
            None => {}
        }
    }
    best.ok_or(match remainder_trips {
        Some(max_trips) => NoChain::OnlyRemainder { max_trips },
        None => NoChain::NoWork,
    })
}

/// Every loop of `kernel`, in the order of their back edges.
pub fn loops(kernel: &Kernel) -> Vec<Loop> {
    let instructions = &kernel.instructions;
    instructions
        .iter()
        .enumerate()
        .filter_map(|(last, branch)| {
            let target = branch_target(branch).filter(|&t| t <= branch.address)?;
            let first = instructions.iter().position(|i| i.address >= target)?;
            Some(Loop { first, last, remainder_of: remainder_mask(instructions, first, last) })
        })
        .collect()
}

/// The operation that the chain check compares, or `None` for what is not the work of
/// a function: memory accesses, moves (`IMAD.MOV`, `HFMA2 R, -RZ, RZ, c`), control flow.
/// Modifiers are dropped (`ISETP.NE.U32.AND` is `ISETP`), a uniform-datapath spelling is
/// the per-thread one (`ULOP3` is `LOP3`), the integer adds are `IADD`, and a select and
/// an integer min/max are `SEL` (ptxas writes `x <= c ? x : c` as `SEL` after a compare in
/// one kernel and as `VIMNMX` in another: the f32 → bfloat16 map kernel and its chain).
pub(crate) fn chain_operation(instruction: &Instruction) -> Option<&str> {
    let opcode = instruction.opcode.as_str();
    let constant_move = opcode.starts_with("HFMA2") && operands(instruction).get(1..3) == Some(&["-RZ", "RZ"][..]);
    if opcode.starts_with("IMAD.MOV") || constant_move {
        return None;
    }
    if opcode.starts_with("IMAD.IADD") || opcode.starts_with("IMAD.X") {
        return Some("IADD");
    }
    let mnemonic = opcode.split('.').next().unwrap_or(opcode);
    let mnemonic = mnemonic.strip_prefix('U').filter(|m| m.len() > 1).unwrap_or(mnemonic);
    match mnemonic {
        "IADD3" | "VIADD" | "IADD" => Some("IADD"),
        "SEL" | "IMNMX" | "VIMNMX" => Some("SEL"),
        m if NOT_WORK.contains(&m) => None,
        m => Some(m),
    }
}

/// Mnemonics (uniform prefix removed) that are not a function's work.
const NOT_WORK: &[&str] = &[
    "MOV", "MOV32I", "S2R", "S2UR", "CS2R", "CS2UR", "LDC", "LDCU", "LDG", "LDS", "LDL", "LD", "STG", "STS", "STL",
    "ST", "ATOM", "ATOMG", "ATOMS", "RED", "REDG", "BRA", "BRX", "JMP", "JMX", "CALL", "RET", "EXIT", "BSSY", "BSYNC",
    "BREAK", "BMOV", "WARPSYNC", "NOP", "YIELD", "BAR",
];

/// How many applications of `work` the operations `found` hold: the lower median, over
/// the instructions of `work`, of `found`'s count of its operation divided by `work`'s.
fn applications(work: &[&str], found: &HashMap<&str, usize>) -> usize {
    let needed = counts(work.iter().copied());
    let mut ratios: Vec<usize> =
        work.iter().map(|op| found.get(op).copied().unwrap_or(0) / needed.get(op).copied().unwrap_or(1)).collect();
    ratios.sort_unstable();
    ratios.get(ratios.len().saturating_sub(1) / 2).copied().unwrap_or(0)
}

fn counts<'a>(operations: impl Iterator<Item = &'a str>) -> HashMap<&'a str, usize> {
    let mut counts = HashMap::new();
    for op in operations {
        *counts.entry(op).or_default() += 1;
    }
    counts
}

/// The operations of `found`'s body, without its control (see [`loop_control`]), plus
/// those of the subroutines it calls.
fn loop_operations<'k>(kernel: &'k Kernel, found: &Loop) -> HashMap<&'k str, usize> {
    let instructions = &kernel.instructions;
    let control = loop_control(instructions, found);
    let body = (found.first..=found.last).filter(|i| !control.contains(i)).map(|i| &instructions[i]);
    let called = body.clone().filter(|i| i.opcode.starts_with("CALL")).flat_map(|call| subroutine(instructions, call));
    counts(body.chain(called).filter_map(chain_operation))
}

/// The instructions of the subroutine `call` calls: from its target to the first `RET`.
fn subroutine<'k>(instructions: &'k [Instruction], call: &Instruction) -> &'k [Instruction] {
    let Some(target) = operands(call).last().and_then(|o| hex(o)) else { return &[] };
    let Some(start) = instructions.iter().position(|i| i.address == target) else { return &[] };
    let end = instructions[start..]
        .iter()
        .position(|i| i.opcode.starts_with("RET"))
        .map_or(instructions.len(), |n| start + n + 1);
    &instructions[start..end]
}

/// Indices of the loop's own control: the back edge, the compare that sets its
/// predicate, and the updates of the counter that compare reads.
fn loop_control(instructions: &[Instruction], found: &Loop) -> Vec<usize> {
    let mut control = vec![found.last];
    if let Some(compare) = exit_compare(instructions, found) {
        control.push(compare);
        for counter in registers_read(&instructions[compare]) {
            let updates = (found.first..found.last).filter(|&i| {
                writes_register(&instructions[i], counter) && registers_read(&instructions[i]).contains(&counter)
            });
            control.extend(updates);
        }
    }
    control
}

/// The last instruction of the loop before its back edge that sets a predicate the
/// back edge reads.
fn exit_compare(instructions: &[Instruction], found: &Loop) -> Option<usize> {
    let branch = &instructions[found.last];
    let predicates: Vec<&str> = branch.text.split([' ', ',']).filter_map(predicate).collect();
    (found.first..found.last).rev().find(|&i| {
        let instruction = &instructions[i];
        branch_target(instruction).is_none()
            && operands(instruction).iter().take(2).any(|o| predicates.contains(&o.trim_start_matches('!')))
    })
}

/// `Some(m)` if the counter the loop's exit compare reads was last set, before the
/// loop, to `x & m` with `m = 2^k - 1 <= 255` (through register moves).
fn remainder_mask(instructions: &[Instruction], first: usize, last: usize) -> Option<u64> {
    let found = Loop { first, last, remainder_of: None };
    let compare = exit_compare(instructions, &found)?;
    registers_read(&instructions[compare]).into_iter().find_map(|counter| {
        let mut register = counter.to_string();
        for _ in 0..4 {
            let setter = instructions[..first].iter().rev().find(|i| writes_register(i, &register))?;
            let ops = operands(setter);
            let mnemonic = setter.opcode.trim_start_matches('U');
            if mnemonic.starts_with("LOP3.LUT") && ops.len() >= 5 && ops[4] == "0xc0" && ops[3].ends_with("RZ") {
                return hex(ops[2]).filter(|&m| m <= 0xff && (m + 1).is_power_of_two());
            }
            register = match (setter.opcode.as_str(), ops.as_slice()) {
                ("MOV" | "UMOV", [_, source]) => source.to_string(),
                ("IMAD.MOV.U32" | "IMAD.MOV", [_, "RZ", "RZ", source]) => source.to_string(),
                _ => return None,
            };
        }
        None
    })
}

/// The operands of `instruction`, after its predicate and opcode, split at commas.
pub(super) fn operands(instruction: &Instruction) -> Vec<&str> {
    let text = instruction.text.trim_start();
    let text = if text.starts_with('@') { text.split_once(char::is_whitespace).map_or("", |(_, r)| r) } else { text };
    let rest = text.trim_start().strip_prefix(instruction.opcode.as_str()).unwrap_or("");
    rest.split(',').map(str::trim).filter(|o| !o.is_empty()).collect()
}

/// A branch's target: its last operand, if the opcode is a `BRA` form.
pub(super) fn branch_target(instruction: &Instruction) -> Option<u64> {
    if !instruction.opcode.starts_with("BRA") {
        return None;
    }
    operands(instruction).last().and_then(|o| hex(o))
}

/// `0x1f` → 31.
fn hex(operand: &str) -> Option<u64> {
    u64::from_str_radix(operand.strip_prefix("0x")?, 16).ok()
}

/// `P0`, `!UP1`, `@!P2` → the predicate's name (`PT` is no predicate).
pub(super) fn predicate(token: &str) -> Option<&str> {
    let name = token.trim_start_matches(['@', '!']);
    let digits = name.strip_prefix("UP").or_else(|| name.strip_prefix('P'))?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then_some(name)
}

/// `R4`, `UR12` (not `RZ`): a general or uniform register's name.
fn is_register(token: &str) -> bool {
    let digits = token.strip_prefix("UR").or_else(|| token.strip_prefix('R'));
    digits.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// The registers named in `operand` (`-R4`, `R5.reuse`, `desc[UR4][R2.64]`).
fn registers_in(operand: &str) -> impl Iterator<Item = &str> {
    operand.split(|c: char| !c.is_ascii_alphanumeric()).filter(|t| is_register(t))
}

/// The register `instruction` writes: its first operand, or its second after a
/// predicate output (`LOP3.LUT P1, R4, ...`).
fn written_register(instruction: &Instruction) -> Option<&str> {
    let ops = operands(instruction);
    let first = *ops.first()?;
    let destination = if predicate(first).is_some() || first.ends_with("PT") { *ops.get(1)? } else { first };
    is_register(destination).then_some(destination)
}

fn writes_register(instruction: &Instruction, register: &str) -> bool {
    branch_target(instruction).is_none() && written_register(instruction) == Some(register)
}

/// The registers `instruction` reads: those of its operands after the one it writes.
fn registers_read(instruction: &Instruction) -> Vec<&str> {
    let ops = operands(instruction);
    let skip = match written_register(instruction) {
        Some(w) => ops.iter().position(|o| *o == w).map_or(0, |p| p + 1),
        None => 0,
    };
    ops.iter().skip(skip).flat_map(|o| registers_in(o)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sass::parse_listing;

    /// `cuobjdump -sass -fun` of the map, skeleton, latency and throughput kernels of
    /// `f16_finite_exp_mask` and `e4m3_is_infinite`, from the embedded PTX assembled by
    /// `ptxas -arch=sm_90` (12.9): the chain of this commit.
    const CHAINS: &str = include_str!("../../../../tests/fixtures/sass_chain_sm_90.txt");
    /// The same for `f16_finite_exp_mask` and `f64_is_finite` from the PTX of commit
    /// 846e06b, whose chains `x ^ apply(x)` LLVM folded: on an H200 their latency read
    /// -0.0 cycles, and f64_is_finite's throughput 2,312 applications per SM per cycle.
    const FOLDED: &str = include_str!("../../../../tests/fixtures/sass_folded_chain_sm_90.txt");

    fn check_of(listing: &str, variant: &'static str) -> ChainCheck {
        use shared::KernelKind::{Latency, Map, Skeleton, Throughput};
        let kernels = parse_listing(listing);
        let kernel = |kind| {
            let name = shared::KernelName { variant, kind }.to_string();
            kernels.iter().find(|k| k.name == name).unwrap_or_else(|| panic!("{name} not in the listing"))
        };
        check(kernel(Map), kernel(Skeleton), kernel(Latency), kernel(Throughput))
    }

    /// One kernel `k` from instruction texts, at addresses 0x00, 0x10, ...
    fn kernel(lines: &[&str]) -> Kernel {
        let listing: String = std::iter::once("Function : k\n".to_string())
            .chain(lines.iter().zip(0..).map(|(line, n)| format!("/*{:04x}*/ {line} ;\n", n * 16)))
            .collect();
        parse_listing(&listing).remove(0)
    }

    /// An is_finite-like step: mask, compare, select, feed back.
    const STEP: [&str; 4] = [
        "LOP3.LUT R5, R0, 0x7c00, RZ, 0xc0, !PT",
        "ISETP.NE.U32.AND P0, PT, R5, 0x7c00, PT",
        "SEL R5, RZ, 0x9e37, !P0",
        "LOP3.LUT R0, R5, R0, RZ, 0x3c, !PT",
    ];
    const WORK: [&str; 3] = ["LOP3", "ISETP", "SEL"];

    /// n in R4: a loop unrolled by 2 at 0x50 (counter R4 = n & ~1, step -2) and its
    /// remainder at 0x100 (counter R6 = n & 1, step -1).
    fn unrolled_with_remainder() -> Kernel {
        let mut lines = vec![
            "LDC R4, c[0x0][0x218]",
            "LOP3.LUT R6, R4.reuse, 0x1, RZ, 0xc0, !PT",
            "ISETP.GE.U32.AND P0, PT, R4, 0x2, PT",
            "@!P0 BRA 0x100",
            "LOP3.LUT R4, R4, 0xfffffffe, RZ, 0xc0, !PT",
            "VIADD R4, R4, 0xfffffffe", // 0x50: the unrolled loop
        ];
        lines.extend(STEP);
        lines.extend(STEP);
        lines.extend(["ISETP.NE.U32.AND P0, PT, R4, RZ, PT", "@P0 BRA 0x50", "VIADD R6, R6, 0xffffffff"]);
        lines.extend(STEP); // 0x100 is the VIADD above: the remainder
        lines.extend(["ISETP.NE.U32.AND P0, PT, R6, RZ, PT", "@P0 BRA 0x100", "EXIT"]);
        kernel(&lines)
    }

    #[test]
    fn loops_are_closed_by_backward_branches_and_remainders_are_recognised() {
        let k = unrolled_with_remainder();
        assert_eq!(k.instructions[16].address, 0x100);
        let found = loops(&k);
        assert_eq!(
            found,
            [Loop { first: 5, last: 15, remainder_of: None }, Loop { first: 16, last: 22, remainder_of: Some(1) }]
        );
        assert_eq!((found[0].instructions(), found[1].instructions()), (11, 7));
        // The forward branch at 0x30 closes no loop.
        assert!(found.iter().all(|l| l.last != 3));
    }

    #[test]
    fn the_chain_loop_is_the_unrolled_one_and_counts_its_steps() {
        let k = unrolled_with_remainder();
        // Loop control (VIADD, ISETP on the counter, BRA) is not taken for work, but it
        // counts in the loop's size.
        assert_eq!(chain_loop(&WORK, &k), Ok(ChainLoop { instructions: 11, applications: 2 }));
    }

    #[test]
    fn a_remainder_alone_an_empty_loop_or_no_loop_is_no_chain() {
        let mut lines = vec!["LDC R4, c[0x0][0x218]", "LOP3.LUT R2, R4, 0x7, RZ, 0xc0, !PT", "MOV R6, R2"];
        lines.extend(STEP); // 0x30
        lines.extend(["VIADD R6, R6, 0xffffffff", "ISETP.NE.U32.AND P0, PT, R6, RZ, PT", "@P0 BRA 0x30", "EXIT"]);
        assert_eq!(chain_loop(&WORK, &kernel(&lines)), Err(NoChain::OnlyRemainder { max_trips: 7 }));

        let counting_only = kernel(&[
            "LDC R4, c[0x0][0x218]",
            "VIADD R4, R4, 0xffffffff",
            "ISETP.NE.U32.AND P0, PT, R4, RZ, PT",
            "@P0 BRA 0x10",
            "EXIT",
        ]);
        // The counter's compare is an ISETP, but it is the loop's, not the work's.
        assert_eq!(chain_loop(&WORK, &counting_only), Err(NoChain::NoWork));
        assert_eq!(chain_loop(&WORK, &kernel(&STEP)), Err(NoChain::NoLoop));
        assert_eq!(chain_loop(&[], &counting_only), Err(NoChain::NoWork));
    }

    #[test]
    fn uniform_counters_and_branches_as_on_sm_100() {
        let mut lines = vec![
            "LDCU UR4, c[0x0][0x388]",
            "ULOP3.LUT UR5, UR4, 0x7, URZ, 0xc0, !UPT",
            "ULOP3.LUT UR4, UR4, 0xfffffff8, URZ, 0xc0, !UPT",
            "UIADD3 UR4, UPT, UPT, UR4, -0x8, URZ", // 0x30
        ];
        lines.extend(STEP);
        lines.extend(["UISETP.NE.U32.AND UP0, UPT, UR4, URZ, UPT", "BRA.U UP0, 0x30"]);
        lines.extend(["UIADD3 UR5, UPT, UPT, UR5, -0x1, URZ"]); // 0x90
        lines.extend(STEP);
        lines.extend(["UISETP.NE.U32.AND UP0, UPT, UR5, URZ, UPT", "BRA.U UP0, 0x90", "EXIT"]);
        let k = kernel(&lines);
        let remainders: Vec<Option<u64>> = loops(&k).iter().map(|l| l.remainder_of).collect();
        assert_eq!(remainders, [None, Some(7)]);
        assert_eq!(chain_loop(&WORK, &k), Ok(ChainLoop { instructions: 7, applications: 1 }));
    }

    #[test]
    fn a_strict_majority_of_the_work_must_be_there_as_often() {
        let found = |pairs: &[(&'static str, usize)]| pairs.iter().copied().collect::<HashMap<&str, usize>>();
        let work = ["FADD", "FFMA", "F2IP"];
        // The store's conversion missing from the loop: 2 of 3 are there 8 times.
        assert_eq!(applications(&work, &found(&[("FADD", 8), ("FFMA", 8)])), 8);
        assert_eq!(applications(&work, &found(&[("FADD", 8)])), 0);
        // Half is not a majority.
        assert_eq!(applications(&["A", "B", "C", "D"], &found(&[("A", 8), ("B", 8)])), 0);
        // Repeated operations: two LOP3 per application.
        assert_eq!(applications(&["LOP3", "LOP3", "SEL"], &found(&[("LOP3", 9), ("SEL", 4)])), 4);
        assert_eq!(applications(&[], &found(&[("A", 1)])), 0);
    }

    #[test]
    fn subroutines_called_from_the_loop_count_as_its_work() {
        let k = kernel(&[
            "LDC R4, c[0x0][0x218]",
            "FFMA R0, R0, R1, R2", // 0x10
            "CALL.REL.NOINC 0x60",
            "VIADD R4, R4, 0xffffffff",
            "ISETP.NE.U32.AND P0, PT, R4, RZ, PT",
            "@P0 BRA 0x10",
            "EXIT",
            "MUFU.RCP R3, R0", // 0x60
            "FCHK P0, R0, R3",
            "RET.REL.NODEC R2 0x0",
        ]);
        assert_eq!(chain_loop(&["FFMA", "MUFU", "FCHK"], &k), Ok(ChainLoop { instructions: 5, applications: 1 }));
    }

    #[test]
    fn operations_drop_modifiers_moves_memory_and_control() {
        let operation = |text: &str| {
            let k = kernel(&[text]);
            chain_operation(&k.instructions[0]).map(str::to_string)
        };
        for (text, expected) in [
            ("ISETP.NE.U32.AND P0, PT, R5, 0x7c00, PT", Some("ISETP")),
            ("@!P2 ULOP3.LUT UR5, UR4, 0x7, URZ, 0xc0, !UPT", Some("LOP3")),
            ("VIADD R4, R4, 0xfffffff8", Some("IADD")),
            ("IADD3 R6, P0, -R2, R6, RZ", Some("IADD")),
            ("IMAD.IADD R5, R4, 0x1, R3", Some("IADD")),
            ("IMAD.X R7, R7, 0x1, ~R5, P0", Some("IADD")),
            ("IMAD R5, R5, 0x3, RZ", Some("IMAD")),
            ("@!P1 SEL R10, R10, 0x7f80, !P0", Some("SEL")),
            ("@!P0 VIMNMX.U32 R5, R5, 0x7f800000, PT", Some("SEL")),
            ("F2IP.U8.F32.TRUNC.NTZ R7, R6", Some("F2IP")),
            ("HFMA2 R0, R1, R2, R3", Some("HFMA2")),
            ("HFMA2.MMA R4, -RZ, RZ, 3.748046875, 0", None),
            ("IMAD.MOV.U32 R3, RZ, RZ, RZ", None),
            ("UMOV UR4, 0x1", None),
            ("LDG.E.U16 R7, desc[UR4][R4.64]", None),
            ("ULDC.64 UR4, c[0x0][0x208]", None),
            ("BRA.U !UP0, 0x3e0", None),
            ("CALL.REL.NOINC 0x60", None),
        ] {
            assert_eq!(operation(text).as_deref(), expected, "{text}");
        }
    }

    #[test]
    fn this_commits_chains_hold_the_work() {
        let mask = check_of(CHAINS, "f16_finite_exp_mask");
        assert_eq!(mask.chain, ChainVerdict::HoldsWork);
        assert!(mask.chain_holds_work);
        // 8 steps of LOP3.LUT ISETP.NE.U32.AND SEL + one LOP3.LUT XOR, in 35 instructions;
        // 4 chains × 4 steps in 71 (4 PRMT moves of the 16-bit values among them).
        assert_eq!((mask.latency_loop_instructions, mask.latency_loop_applications), (Some(35), Some(8)));
        assert_eq!((mask.throughput_loop_instructions, mask.throughput_loop_applications), (Some(71), Some(16)));

        let constant = check_of(CHAINS, "e4m3_is_infinite");
        assert_eq!(constant.chain, ChainVerdict::Constant);
        assert!(!constant.chain_holds_work);
        assert_eq!(constant.chain.to_string(), "constant: nothing to time");
    }

    #[test]
    fn the_folded_chains_of_846e06b_do_not() {
        let mask = check_of(FOLDED, "f16_finite_exp_mask");
        assert!(!mask.chain_holds_work);
        assert_eq!(mask.latency_loop_instructions, None);
        // Its throughput chains were not folded (the H200 gave a plausible figure).
        assert_eq!(mask.throughput_loop_applications, Some(8));
        assert_eq!(
            mask.chain.to_string(),
            "MISSING: latency: only a remainder loop (at most 7 steps per launch) holds the work: \
             the unrolled chain was folded away"
        );
        let f64_finite = check_of(FOLDED, "f64_is_finite");
        assert_eq!((f64_finite.latency_loop_instructions, f64_finite.throughput_loop_instructions), (None, None));
        assert_eq!(
            f64_finite.chain,
            ChainVerdict::Missing(MissingChain {
                latency: Some(NoChain::OnlyRemainder { max_trips: 7 }),
                throughput: Some(NoChain::NoLoop)
            })
        );
        assert_eq!(
            f64_finite.chain.to_string(),
            "MISSING: latency: only a remainder loop (at most 7 steps per launch) holds the work: the unrolled chain \
             was folded away; throughput: no loop: the chain was folded away"
        );
    }
}
