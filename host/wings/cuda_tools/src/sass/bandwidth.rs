//! The loop of each bandwidth kernel ([`Stream`](shared::KernelKind::Stream),
//! [`CountNonfinite`](shared::KernelKind::CountNonfinite)) as the SASS has it: what one
//! lane loads and stores per grid-stride step, and what that step costs.
//!
//! The kernels are written so that lane `t` of a grid-stride step handles piece `t` of
//! the buffers, consecutive lanes on consecutive pieces; whether a warp's access is then
//! contiguous depends only on each lane's piece being one access of the piece's width.
//! That is what the SASS can show, and what [`stream_loop`] and [`count_loop`] check:
//!
//! * **Stream** (`In` → `Out`, four elements per lane per step, each of 8, 16 or 32
//!   bits): exactly one loop stores `4 · size_of::<Out>()` bytes per lane, and it holds
//!   exactly one global load, of `4 · size_of::<In>()` bytes, and exactly one global
//!   store: as many elements per load as per store (`LDG.E` + `STG.E.128` for UNORM8
//!   codes → f32, `LDG.E.64` + `STG.E.128` for 16-bit codes, `LDG.E.128` + `STG.E.64`
//!   for f32 → a 16-bit code, `LDG.E.128` + `STG.E` for f32 → an 8-bit code). The layout
//!   before issue 10 loaded 16 codes (`LDG.E.128`) and stored their 64 bytes of f32 in
//!   four `STG.E.128`, so a warp's store touched 32 pieces at a 64-byte stride; it fails
//!   here. Every other loop of the kernel is the scalar pass: at most one load of at
//!   most one input and at most one store of exactly one output (`STG.E.U8` for an 8-bit
//!   result: the narrow store `bitexact::cuda_tools::guards` watches).
//! * **CountNonfinite** (`16 / size_of::<In>()` elements per lane per step): the loop
//!   that loads the most bytes per step holds no store or atomic, and its loads read one
//!   16-byte piece: one `LDG.E.128`, or, where the function reads only part of each
//!   element (binary64's exponent sits in its high word, and LLVM narrows the load to
//!   the words used), one load of equal width per element, at offsets one element
//!   apart, from one address register, all within 16 bytes. Every other loop (the head
//!   and tail pass) loads at most one element per step and stores nothing.
//!
//! The cost of a step is the loop's instructions from its first to its back edge
//! ([`BandwidthLoop::instructions`]) and, on the path that skips every forward branch
//! inside it ([`BandwidthLoop::fast_path_instructions`]: a count loop's branch into the
//! counting of a piece that holds a non-finite value, a division's slow-path call),
//! what a step with none of those costs: per element, that divided by the step's
//! elements.

use super::chain::{Loop, branch_target, loops, operands, predicate};
use super::{Instruction, Kernel};

/// One global memory access of a loop: `LDG*`, `STG*`, or an atomic (`RED*`, `ATOM*`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Access {
    /// The opcode (`LDG.E.128`, `STG.E.128.SYS`).
    pub opcode: String,
    /// Bytes per lane: 1, 2, 4, 8 or 16 from the opcode's size modifier (none: 4).
    pub bytes: u32,
    /// The address register (`R4.64`).
    pub base: String,
    /// The immediate offset added to it.
    pub offset: i64,
}

/// Whether `instruction` is a load, a store, or an atomic on global memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Load,
    Store,
    Atomic,
}

/// The global access `instruction` makes, if it makes one.
fn global_access(instruction: &Instruction) -> Option<(Direction, Access)> {
    let opcode = instruction.opcode.as_str();
    let direction = if opcode.starts_with("LDG") {
        Direction::Load
    } else if opcode.starts_with("STG") {
        Direction::Store
    } else if opcode.starts_with("RED") || opcode.starts_with("ATOM") {
        Direction::Atomic
    } else {
        return None;
    };
    let bytes = opcode
        .split('.')
        .find_map(|modifier| match modifier {
            "U8" | "S8" => Some(1),
            "U16" | "S16" => Some(2),
            "64" => Some(8),
            "128" => Some(16),
            _ => None,
        })
        .unwrap_or(4);
    let address = operands(instruction).into_iter().find(|o| o.contains('['))?;
    // `desc[UR4][R2.64+-0x8]`: the last bracket holds the registers and the offset. The
    // registers may be a pair, `[R8.64+UR4]` (sm_75 adds a uniform register): they are
    // the base together.
    let inside = address.rsplit('[').next()?.trim_end_matches(']');
    let (mut registers, mut offset) = (Vec::new(), 0);
    for term in inside.split('+').map(str::trim).filter(|t| !t.is_empty()) {
        match term.find('-') {
            Some(0) => offset += parse_offset(term)?,
            Some(at) => {
                registers.push(&term[..at]);
                offset += parse_offset(&term[at..])?;
            }
            None if term.starts_with("0x") => offset += parse_offset(term)?,
            None => registers.push(term),
        }
    }
    Some((direction, Access { opcode: opcode.to_string(), bytes, base: registers.join("+"), offset }))
}

/// `+0x10` → 16, `+-0x8` → -8, `-0x8` → -8.
fn parse_offset(text: &str) -> Option<i64> {
    let text = text.trim().trim_start_matches('+');
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let value = i64::from_str_radix(digits.trim().strip_prefix("0x")?, 16).ok()?;
    Some(if negative { -value } else { value })
}

/// What one loop of a kernel holds.
#[derive(Clone, Debug)]
struct Shape {
    found: Loop,
    loads: Vec<Access>,
    /// Stores and atomics.
    stores: Vec<Access>,
    fast_path: usize,
}

impl Shape {
    fn of(kernel: &Kernel, found: Loop) -> Shape {
        let (mut loads, mut stores) = (Vec::new(), Vec::new());
        for instruction in &kernel.instructions[found.first..=found.last] {
            match global_access(instruction) {
                Some((Direction::Load, access)) => loads.push(access),
                Some((_, access)) => stores.push(access),
                None => {}
            }
        }
        let fast_path = fast_path(&kernel.instructions, &found);
        Shape { found, loads, stores, fast_path }
    }

    fn loaded_bytes(&self) -> u32 {
        self.loads.iter().map(|a| a.bytes).sum()
    }

    /// `LDG.E.128 ×1; STG.E.128 ×1`-style text of the accesses, for messages.
    fn accesses(&self) -> String {
        format!("loads [{}], stores [{}]", opcodes(&self.loads), opcodes(&self.stores))
    }

    /// The step of the scalar (head, tail or misaligned) pass: at most one load of at
    /// most one element, and at most one store, of `store_bytes` (none if `None`).
    fn is_scalar(&self, element_bytes: u32, store_bytes: Option<u32>) -> bool {
        let loads_ok = self.loads.len() <= 1 && self.loads.iter().all(|a| a.bytes <= element_bytes);
        let stores_ok = match store_bytes {
            Some(bytes) => self.stores.len() <= 1 && self.stores.iter().all(|a| a.bytes == bytes),
            None => self.stores.is_empty(),
        };
        loads_ok && stores_ok
    }
}

fn opcodes(accesses: &[Access]) -> String {
    accesses.iter().map(|a| a.opcode.as_str()).collect::<Vec<_>>().join(", ")
}

/// Instructions on the shortest path from the loop's first instruction to its back
/// edge, both included: every forward branch inside the loop may be taken, every
/// conditional one may fall through, an unconditional `BRA` or `EXIT` does not fall
/// through, and branches out of the loop or backwards are not followed.
fn fast_path(instructions: &[Instruction], found: &Loop) -> usize {
    let (first, last) = (found.first, found.last);
    let mut distance = vec![usize::MAX; last + 1];
    distance[first] = 1;
    for i in first..last {
        if distance[i] == usize::MAX {
            continue;
        }
        let instruction = &instructions[i];
        let conditional = instruction.text.trim_start().starts_with('@')
            || operands(instruction).iter().any(|o| predicate(o).is_some());
        let mut next = Vec::new();
        if let Some(target) = branch_target(instruction) {
            if let Some(j) = (i + 1..=last).find(|&j| instructions[j].address == target) {
                next.push(j);
            }
            if conditional {
                next.push(i + 1);
            }
        } else if !(instruction.opcode.starts_with("EXIT") && !conditional) {
            next.push(i + 1);
        }
        for j in next {
            distance[j] = distance[j].min(distance[i] + 1);
        }
    }
    distance[last]
}

/// The vector loop of a bandwidth kernel, as checked.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BandwidthLoop {
    /// The kernel's name.
    pub kernel: String,
    /// Elements one lane handles per step.
    pub elements_per_step: u32,
    /// The loop's global loads, in program order.
    pub loads: Vec<Access>,
    /// Its global stores and atomics.
    pub stores: Vec<Access>,
    /// Instructions from the loop's first to its back edge.
    pub instructions: usize,
    /// Instructions of a step that takes every forward branch inside the loop (see the
    /// module documentation).
    pub fast_path_instructions: usize,
}

impl BandwidthLoop {
    /// [`BandwidthLoop::fast_path_instructions`] per element.
    pub fn instructions_per_element(&self) -> f64 {
        self.fast_path_instructions as f64 / f64::from(self.elements_per_step)
    }

    /// `LDG.E.128` or `2 × LDG.E`: the loads of a step, equal opcodes counted.
    pub fn load_summary(&self) -> String {
        summary(&self.loads)
    }

    /// The stores (and atomics) of a step, as [`BandwidthLoop::load_summary`]; `none`.
    pub fn store_summary(&self) -> String {
        summary(&self.stores)
    }
}

fn summary(accesses: &[Access]) -> String {
    let mut parts: Vec<(String, usize)> = Vec::new();
    for a in accesses {
        match parts.iter_mut().find(|(opcode, _)| *opcode == a.opcode) {
            Some((_, n)) => *n += 1,
            None => parts.push((a.opcode.clone(), 1)),
        }
    }
    if parts.is_empty() {
        return "none".to_string();
    }
    let text: Vec<String> = parts.into_iter().map(|(op, n)| if n == 1 { op } else { format!("{n} × {op}") }).collect();
    text.join(" + ")
}

/// Why a bandwidth kernel's SASS does not have the coalesced shape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kernel}: {why}")]
pub struct LayoutError {
    /// The kernel.
    pub kernel: String,
    /// What is wrong.
    pub why: String,
}

fn shapes(kernel: &Kernel) -> Vec<Shape> {
    loops(kernel).into_iter().map(|found| Shape::of(kernel, found)).collect()
}

/// Checks a [`Stream`](shared::KernelKind::Stream) kernel from `in_bytes`-byte inputs
/// to `out_bytes`-byte stored results (see the module documentation) and returns its
/// vector loop.
pub fn stream_loop(kernel: &Kernel, in_bytes: u32, out_bytes: u32) -> Result<BandwidthLoop, LayoutError> {
    let fail = |why: String| LayoutError { kernel: kernel.name.clone(), why };
    let (load_bytes, store_bytes) = (4 * in_bytes, 4 * out_bytes);
    let all = shapes(kernel);
    let (vector, others): (Vec<&Shape>, Vec<&Shape>) =
        all.iter().partition(|s| s.stores.iter().any(|a| a.bytes == store_bytes));
    let [vector] = vector.as_slice() else {
        return Err(fail(format!("{} loops store {store_bytes} bytes per lane, expected exactly one", vector.len())));
    };
    let one_load = matches!(vector.loads.as_slice(), [load] if load.bytes == load_bytes);
    let one_store = matches!(vector.stores.as_slice(), [store] if store.bytes == store_bytes);
    if !(one_load && one_store) {
        return Err(fail(format!(
            "the vector loop {}, expected one {load_bytes}-byte load and one {store_bytes}-byte store per lane \
             per step (4 elements each, so that a warp's accesses are contiguous)",
            vector.accesses()
        )));
    }
    if let Some(other) = others.iter().find(|s| !s.is_scalar(in_bytes, Some(out_bytes))) {
        return Err(fail(format!("a loop other than the vector loop {}", other.accesses())));
    }
    Ok(BandwidthLoop {
        kernel: kernel.name.clone(),
        elements_per_step: 4,
        loads: vector.loads.clone(),
        stores: vector.stores.clone(),
        instructions: vector.found.instructions(),
        fast_path_instructions: vector.fast_path,
    })
}

/// Checks a [`CountNonfinite`](shared::KernelKind::CountNonfinite) kernel over
/// `element_bytes`-byte inputs (see the module documentation) and returns its vector
/// loop.
pub fn count_loop(kernel: &Kernel, element_bytes: u32) -> Result<BandwidthLoop, LayoutError> {
    let fail = |why: String| LayoutError { kernel: kernel.name.clone(), why };
    let all = shapes(kernel);
    let most = all.iter().map(Shape::loaded_bytes).max().unwrap_or(0);
    let (vector, others): (Vec<&Shape>, Vec<&Shape>) = all.iter().partition(|s| s.loaded_bytes() == most);
    let [vector] = vector.as_slice() else {
        return Err(fail(format!("{} loops load {most} bytes per lane per step, expected one", vector.len())));
    };
    if !vector.stores.is_empty() {
        return Err(fail(format!("the vector loop {}, expected no store or atomic", vector.accesses())));
    }
    if !reads_one_piece(&vector.loads, element_bytes) {
        return Err(fail(format!(
            "the vector loop {}, expected one 16-byte load per lane per step (or one load of the part \
             of each element that the function reads)",
            vector.accesses()
        )));
    }
    if let Some(other) = others.iter().find(|s| !s.is_scalar(element_bytes, None)) {
        return Err(fail(format!("a loop other than the vector loop {}", other.accesses())));
    }
    Ok(BandwidthLoop {
        kernel: kernel.name.clone(),
        elements_per_step: 16 / element_bytes,
        loads: vector.loads.clone(),
        stores: Vec::new(),
        instructions: vector.found.instructions(),
        fast_path_instructions: vector.fast_path,
    })
}

/// One 16-byte load, or one load per element of a 16-byte piece: equal widths under one
/// element, one address register, offsets one element apart, within 16 bytes.
fn reads_one_piece(loads: &[Access], element_bytes: u32) -> bool {
    if let [load] = loads {
        return load.bytes == 16;
    }
    let Some(first) = loads.first() else { return false };
    let mut offsets: Vec<i64> = loads.iter().map(|a| a.offset).collect();
    offsets.sort_unstable();
    let step = i64::from(element_bytes);
    loads.len() as u32 == 16 / element_bytes
        && loads.iter().all(|a| a.bytes == first.bytes && a.bytes < element_bytes && a.base == first.base)
        && offsets.windows(2).all(|w| w[1] - w[0] == step)
        && offsets.last().copied().unwrap_or(0) + i64::from(first.bytes) - offsets[0] <= 16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sass::parse_listing;

    /// One kernel `k` from instruction texts, at addresses 0x00, 0x10, ...
    fn kernel(lines: &[&str]) -> Kernel {
        let listing: String = std::iter::once("Function : k\n".to_string())
            .chain(lines.iter().zip(0..).map(|(line, n)| format!("/*{:04x}*/ {line} ;\n", n * 16)))
            .collect();
        parse_listing(&listing).remove(0)
    }

    #[test]
    fn accesses_are_parsed_with_width_register_and_offset() {
        let k = kernel(&[
            "LDG.E.128 R4, desc[UR16][R4.64+-0x8]",
            "@P0 STG.E.128.SYS [R8+0x10], R4",
            "LDG.E.U8 R2, desc[UR8][R2.64]",
            "REDG.E.ADD.64.STRONG.SYS desc[UR16][R2.64], R16",
            "LDG.E R4, desc[UR6][R4.64-0x4]",
            "STG.E.64.SYS [R8.64+UR4], R26",
            "LDG.E.U16.SYS R0, [R8.64+UR4+0x10]",
        ]);
        let found: Vec<(Direction, Access)> = k.instructions.iter().filter_map(global_access).collect();
        let brief: Vec<(Direction, u32, &str, i64)> =
            found.iter().map(|(d, a)| (*d, a.bytes, a.base.as_str(), a.offset)).collect();
        assert_eq!(
            brief,
            [
                (Direction::Load, 16, "R4.64", -8),
                (Direction::Store, 16, "R8", 16),
                (Direction::Load, 1, "R2.64", 0),
                (Direction::Atomic, 8, "R2.64", 0),
                (Direction::Load, 4, "R4.64", -4),
                (Direction::Store, 8, "R8.64+UR4", 0),
                (Direction::Load, 2, "R8.64+UR4", 16),
            ]
        );
    }

    /// The vector loop of `unorm8_times3_int_stream` (sm_90, shortened): one 4-byte load,
    /// one 16-byte store; then the scalar pass.
    const NEW_STREAM: &[&str] = &[
        "IMAD.MOV.U32 R4, RZ, RZ, R21",
        "LDG.E R4, desc[UR8][R4.64]",
        "IADD3 R24, P0, R24, UR6, RZ",
        "ISETP.GE.U32.AND P0, PT, R24, R13, PT",
        "FMUL R4, R6, 0.0013071895809844136238",
        "STG.E.128 desc[UR8][R8.64+-0x8], R4",
        "@!P0 BRA 0x0",
        "LDG.E.U8 R4, desc[UR8][R4.64]",
        "FMUL R3, R3, 0.0013071895809844136238",
        "STG.E desc[UR8][R4.64], R3",
        "@P0 BRA 0x70",
        "EXIT",
    ];

    #[test]
    fn the_coalesced_stream_loop_passes_and_is_measured() {
        let found = stream_loop(&kernel(NEW_STREAM), 1, 4).expect("coalesced");
        assert_eq!((found.load_summary().as_str(), found.store_summary().as_str()), ("LDG.E", "STG.E.128"));
        assert_eq!((found.instructions, found.fast_path_instructions, found.elements_per_step), (7, 7, 4));
        assert_eq!(found.instructions_per_element(), 1.75);
        // The same loop over 16-bit codes must load 8 bytes.
        let error = stream_loop(&kernel(NEW_STREAM), 2, 4).expect_err("a 4-byte load of 16-bit codes");
        assert!(error.why.contains("expected one 8-byte load"), "{error}");
    }

    #[test]
    fn the_layout_before_issue_10_fails_the_stream_check() {
        // 16 codes in, four 16-byte stores out per lane: a warp's store at a 64-byte stride.
        let old = kernel(&[
            "LDG.E.128 R4, desc[UR16][R4.64+-0x8]",
            "STG.E.128 desc[UR16][R22.64+-0x20], R8",
            "STG.E.128 desc[UR16][R22.64+-0x10], R4",
            "STG.E.128 desc[UR16][R22.64], R8",
            "STG.E.128 desc[UR16][R22.64+0x10], R12",
            "@!P0 BRA 0x0",
            "EXIT",
        ]);
        let error = stream_loop(&old, 1, 4).expect_err("the old layout");
        assert_eq!(
            error.why,
            "the vector loop loads [LDG.E.128], stores [STG.E.128, STG.E.128, STG.E.128, STG.E.128], expected \
             one 4-byte load and one 16-byte store per lane per step (4 elements each, so that a warp's \
             accesses are contiguous)"
        );
        // A scalar pass storing narrower than f32, or no vector loop at all, fails too.
        let mut narrow = NEW_STREAM.to_vec();
        narrow[9] = "STG.E.U8 desc[UR8][R4.64], R3";
        assert!(stream_loop(&kernel(&narrow), 1, 4).is_err());
        assert!(stream_loop(&kernel(&NEW_STREAM[7..]), 1, 4).is_err());
    }

    /// The loop of `f32_to_unorm8_stream` (sm_90, shortened): one 16-byte load of four
    /// f32, their four codes packed into one 4-byte store; then the scalar pass, whose
    /// one-byte store is the narrow store the guards watch.
    const NARROWING_STREAM: &[&str] = &[
        "LDG.E.128 R4, desc[UR8][R4.64+-0x8]",
        "FFMA R7, R7, R0, 8388610",
        "PRMT R7, R6, 0x3340, R7",
        "STG.E desc[UR8][R4.64], R7",
        "@!P0 BRA 0x0",
        "LDG.E R3, desc[UR8][R6.64]",
        "FFMA R3, R3, R0, 8388610",
        "STG.E.U8 desc[UR8][R4.64], R3",
        "@P0 BRA 0x50",
        "EXIT",
    ];

    #[test]
    fn a_narrowing_stream_loop_loads_16_bytes_and_stores_four_packed_results() {
        let found = stream_loop(&kernel(NARROWING_STREAM), 4, 1).expect("coalesced");
        assert_eq!((found.load_summary().as_str(), found.store_summary().as_str()), ("LDG.E.128", "STG.E"));
        assert_eq!((found.instructions, found.elements_per_step), (5, 4));
        // Read as 16-bit results, the 4-byte store is no vector store: no loop stores 8.
        let error = stream_loop(&kernel(NARROWING_STREAM), 4, 2).expect_err("no 8-byte store");
        assert!(error.why.starts_with("0 loops store 8 bytes"), "{error}");
        // Four byte stores per step instead of one packed store: no vector loop either.
        let mut unpacked = NARROWING_STREAM.to_vec();
        unpacked[3] = "STG.E.U8 desc[UR8][R4.64+0x3], R7";
        unpacked.insert(3, "STG.E.U8 desc[UR8][R4.64+0x2], R6");
        assert!(stream_loop(&kernel(&unpacked), 4, 1).is_err());
        // A scalar pass that stores a whole word per element fails.
        let mut wide_tail = NARROWING_STREAM.to_vec();
        wide_tail[7] = "STG.E desc[UR8][R4.64], R3";
        let error = stream_loop(&kernel(&wide_tail), 4, 1).expect_err("two 4-byte-store loops");
        assert!(error.why.starts_with("2 loops store 4 bytes"), "{error}");
    }

    #[test]
    fn count_loops_read_one_piece_and_store_nothing() {
        // One 16-byte load, a forward branch over the counting of a piece with a
        // non-finite value; the fast path skips it.
        let new = kernel(&[
            "LDG.E.128 R4, desc[UR16][R6.64+-0xc]",
            "ISETP.NE.U32.AND P0, PT, R27, 0x7f0000, P0",
            "@P0 BRA P1, 0x50",
            "POPC R5, R5",
            "SEL R0, R0, R7, P0",
            "BSYNC B1",
            "@!P0 BRA 0x0",
            "LDG.E.U8 R4, desc[UR14][R4.64]",
            "@P0 BRA 0x70",
            "REDG.E.ADD.64.STRONG.SYS desc[UR14][R4.64], R8",
            "EXIT",
        ]);
        let found = count_loop(&new, 1).expect("one 16-byte load");
        assert_eq!((found.instructions, found.fast_path_instructions, found.elements_per_step), (7, 5, 16));
        assert_eq!(found.store_summary(), "none");
        // binary64, narrowed by LLVM to the high word of each element.
        let f64_loads = kernel(&["LDG.E R24, desc[UR6][R4.64]", "LDG.E R22, desc[UR6][R4.64+-0x8]", "@!P0 BRA 0x0"]);
        let found = count_loop(&f64_loads, 8).expect("the high words of one piece");
        assert_eq!((found.load_summary().as_str(), found.elements_per_step), ("2 × LDG.E", 2));
        // ... but not for 4-byte elements, nor from two registers, nor with a store.
        assert!(count_loop(&f64_loads, 4).is_err());
        let two_bases = kernel(&["LDG.E R24, desc[UR6][R4.64]", "LDG.E R22, desc[UR6][R6.64+-0x8]", "@!P0 BRA 0x0"]);
        assert!(count_loop(&two_bases, 8).is_err());
        let storing = kernel(&["LDG.E.128 R4, desc[UR16][R6.64]", "STG.E desc[UR8][R4.64], R3", "@!P0 BRA 0x0"]);
        let error = count_loop(&storing, 2).expect_err("a store in a count loop");
        assert!(error.why.contains("expected no store"), "{error}");
        // An atomic per step is a store too.
        let atomic = kernel(&[
            "LDG.E.128 R4, desc[UR16][R6.64]",
            "REDG.E.ADD.64.STRONG.SYS desc[UR14][R4.64], R8",
            "@!P0 BRA 0x0",
        ]);
        assert!(count_loop(&atomic, 2).is_err());
    }
}
