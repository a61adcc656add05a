//! The narrow-store guard, on the text of a PTX module alone.
//!
//! The first real GPU run of this project found `f32_to_unorm8` returning 255 for every
//! input while its CPU twin was exact. LLVM had folded
//! `(fma(..).to_bits() - 0x4B00_0000) as u8` into a byte store of the `fma`'s own
//! register (`st.global.b8 [a], %r8` after `fma.rn.f32 %r8, ..`), and ptxas compiles a
//! narrow store of a register last written by a float instruction as a saturating
//! float → integer conversion (`F2IP.U8.F32.TRUNC.NTZ`), not as a truncation of the
//! bits. [`narrow_float_stores`] finds every such store: no `st` of 8 or 16 bits may take
//! a register written by a floating-point instruction (directly or through `mov`s).
//! [`check_ptx`](crate::check_ptx) runs it on every module [`PtxBuilder`](crate::PtxBuilder)
//! builds, so a kernel crate of one's own gets it at build time.
//!
//! The parsed kernels ([`ptx_kernels`]) are public for guards on the SASS side (the
//! `host` crate checks that a kernel has an `F2I*` instruction only where its PTX asks
//! for one).

use crate::ptx_text::{functions, strip_comments};
use std::collections::{HashMap, HashSet};

/// One PTX instruction: its opcode with modifiers (`fma.rn.f32`) and its operands, split
/// at top-level commas (`[%rd1]`, `{%r1, %r2}` stay whole).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxInstruction {
    /// Opcode and modifiers, without a guard predicate.
    pub opcode: String,
    /// Operands in order.
    pub operands: Vec<String>,
}

impl PtxInstruction {
    /// The instruction as PTX text, for messages.
    pub fn text(&self) -> String {
        format!("{} {}", self.opcode, self.operands.join(", "))
    }

    /// The type suffixes of the opcode (`cvt.rzi.u16.f32` → `["u16", "f32"]`).
    fn types(&self) -> impl Iterator<Item = &str> {
        self.opcode.split('.').skip(1).filter(|part| is_type(part))
    }

    /// The type of what the instruction writes: the first type suffix of a `cvt`
    /// (`cvt.dst.src`), the last one otherwise.
    fn destination_type(&self) -> Option<&str> {
        if self.opcode.starts_with("cvt.") { self.types().next() } else { self.types().last() }
    }

    /// Whether the instruction writes a floating-point value.
    fn writes_float(&self) -> bool {
        self.destination_type().is_some_and(is_float_type)
    }

    /// Whether this is a `cvt` from a floating-point type to an integer type.
    pub fn is_float_to_int_conversion(&self) -> bool {
        let mut types = self.types();
        self.opcode.starts_with("cvt.")
            && types.next().is_some_and(|t| !is_float_type(t) && t != "pred")
            && types.next().is_some_and(is_float_type)
    }

    /// Whether this is a store of 8 or 16 bits per element.
    fn is_narrow_store(&self) -> bool {
        self.opcode.starts_with("st.") && self.types().any(|t| matches!(t, "b8" | "b16" | "u8" | "u16" | "s8" | "s16"))
    }

    /// The registers this instruction writes: its first operand (a register, a vector of
    /// them, or `%p|%q`), except for instructions whose first operand is read.
    fn destinations(&self) -> Vec<&str> {
        let reads_only = ["st.", "red.", "bra", "ret", "call", "bar.", "prefetch", "trap", "exit", "membar", "fence"];
        if reads_only.iter().any(|p| self.opcode.starts_with(p)) {
            return Vec::new();
        }
        self.operands.first().map(|d| registers(d).collect()).unwrap_or_default()
    }
}

/// PTX fundamental type names.
fn is_type(part: &str) -> bool {
    matches!(
        part,
        "pred"
            | "b8"
            | "b16"
            | "b32"
            | "b64"
            | "b128"
            | "u8"
            | "u16"
            | "u32"
            | "u64"
            | "s8"
            | "s16"
            | "s32"
            | "s64"
            | "f16"
            | "f16x2"
            | "bf16"
            | "bf16x2"
            | "tf32"
            | "f32"
            | "f64"
            | "e4m3x2"
            | "e5m2x2"
    )
}

fn is_float_type(t: &str) -> bool {
    matches!(t, "f16" | "f16x2" | "bf16" | "bf16x2" | "tf32" | "f32" | "f64" | "e4m3x2" | "e5m2x2")
}

/// The `%name` registers in an operand (`{%r1, %r2}`, `[%rd1+4]`, `%p1|%p2`).
fn registers(operand: &str) -> impl Iterator<Item = &str> {
    operand
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '%' || c == '_' || c == '$'))
        .filter(|word| word.starts_with('%') && word.len() > 1)
}

/// One kernel (`.entry`) of a PTX module: its name and instructions in textual order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxKernel {
    /// The entry's name.
    pub name: String,
    /// Its instructions; declarations (`.reg`, ...) and labels are not instructions.
    pub instructions: Vec<PtxInstruction>,
}

/// Splits `ptx` into its kernels (`.entry NAME(...) { ... }`), in order. Functions
/// (`.func`) are not kernels and are skipped.
pub fn ptx_kernels(ptx: &str) -> Vec<PtxKernel> {
    let code = strip_comments(ptx);
    functions(&code)
        .into_iter()
        .filter(|f| f.is_entry)
        .map(|f| PtxKernel { instructions: parse_body(&code[f.body]), name: f.name })
        .collect()
}

/// The instructions of a function body, or of any run of PTX statements.
pub(crate) fn parse_body(body: &str) -> Vec<PtxInstruction> {
    body.split(';').filter_map(parse_statement).collect()
}

/// One `;`-terminated statement → an instruction, or `None` for a declaration or nothing.
fn parse_statement(statement: &str) -> Option<PtxInstruction> {
    let mut text = statement.trim();
    loop {
        // Call-sequence braces, labels (`$L__BB0_1:`) and a guard predicate come first.
        let trimmed = text.trim_start_matches(['{', '}']).trim_start();
        let word = trimmed.split_whitespace().next()?;
        if word.ends_with(':') || word.starts_with('@') {
            text = trimmed[word.len()..].trim_start();
        } else {
            text = trimmed;
            break;
        }
    }
    let (opcode, operands) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    if opcode.starts_with('.') {
        return None;
    }
    Some(PtxInstruction { opcode: opcode.to_string(), operands: split_operands(operands) })
}

/// Splits at commas outside brackets, braces and parentheses.
fn split_operands(operands: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in operands.char_indices() {
        match c {
            '[' | '{' | '(' => depth += 1,
            ']' | '}' | ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(operands[start..i].trim().to_string());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = operands[start..].trim();
    if !last.is_empty() {
        parts.push(last.to_string());
    }
    parts
}

/// A narrow store of a float-written register: what ptxas turns into a conversion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NarrowFloatStore {
    /// The kernel.
    pub kernel: String,
    /// The store instruction.
    pub store: String,
    /// The stored register.
    pub register: String,
    /// The floating-point instruction that writes it (or the first such, through `mov`s).
    pub writer: String,
}

impl std::fmt::Display for NarrowFloatStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: `{}` stores {}, written by `{}`", self.kernel, self.store, self.register, self.writer)
    }
}

/// Every store of 8 or 16 bits, in every kernel of `ptx`, whose register is written by a
/// floating-point instruction anywhere in the kernel, directly or through `mov`s.
///
/// "Anywhere" rather than "last, on some path": LLVM writes each virtual register once
/// (loop-carried values go through `mov`), so this is exact for its PTX and errs on the
/// side of reporting for hand-written PTX.
pub fn narrow_float_stores(ptx: &str) -> Vec<NarrowFloatStore> {
    let mut found = Vec::new();
    for kernel in ptx_kernels(ptx) {
        let mut writers: HashMap<&str, Vec<&PtxInstruction>> = HashMap::new();
        for instruction in &kernel.instructions {
            for register in instruction.destinations() {
                writers.entry(register).or_default().push(instruction);
            }
        }
        for store in kernel.instructions.iter().filter(|i| i.is_narrow_store()) {
            let Some(value) = store.operands.last() else { continue };
            for register in registers(value) {
                if let Some(writer) = float_writer(&writers, register, &mut HashSet::new()) {
                    found.push(NarrowFloatStore {
                        kernel: kernel.name.clone(),
                        store: store.text(),
                        register: register.to_string(),
                        writer: writer.text(),
                    });
                }
            }
        }
    }
    found
}

/// The first floating-point instruction that writes `register`, following `mov`s.
fn float_writer<'a>(
    writers: &HashMap<&str, Vec<&'a PtxInstruction>>,
    register: &str,
    seen: &mut HashSet<String>,
) -> Option<&'a PtxInstruction> {
    if !seen.insert(register.to_string()) {
        return None;
    }
    for &writer in writers.get(register).map(Vec::as_slice).unwrap_or_default() {
        if writer.writes_float() {
            return Some(writer);
        }
        if writer.opcode.starts_with("mov.") {
            let source = writer.operands.get(1).map(String::as_str).unwrap_or("");
            for source in registers(source) {
                if let Some(found) = float_writer(writers, source, seen) {
                    return Some(found);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded PTX's `f32_to_unorm8` at commit 846e06b (loop control trimmed), and
    /// the same kernel with the subtraction kept, and a real conversion.
    const FOLDED: &str = "
.visible .entry f32_to_unorm8(
\t.param .u64 .ptr .align 1 p0, .param .u64 .ptr .align 1 p1, .param .u64 p2
)
{
\t.reg .b32 \t%r<9>;
$L__BB143_1:
\tld.global.b32 \t%r5, [%rd13];
\tmax.f32 \t%r6, %r5, 0f00000000;
\tmin.f32 \t%r7, %r6, 0f3F800000;
\tfma.rn.f32 \t%r8, %r7, 0f437F0000, 0f4B000000; // the fold
\tst.global.b8 \t[%rd12], %r8;
\t@%p2 bra \t$L__BB143_1;
\tret;
}
.visible .entry through_a_move()
{
\tadd.rn.f32 %r1, %r2, %r3;
\tmov.b32 %r4, %r1;
\tst.global.v2.b16 [%rd1], {%rs1, %r4};
}
.visible .entry fixed()
{
\tfma.rn.f32 \t%r8, %r7, 0f437F0000, 0f4B000002;
\tcvt.u16.u32 \t%rs1, %r8;
\tadd.s16 \t%rs2, %rs1, -2;
\tst.global.b8 \t[%rd12], %rs2;
\tst.global.b32 \t[%rd13], %r8;
}
.visible .entry converts()
{
\tcvt.rzi.u16.f32 \t%rs1, %r11;
\tst.global.b8 \t[%rd12], %rs1;
}
";

    /// A hardware conversion kernel as `kernels-gpu` writes it (the `cvt`'s 16-bit result
    /// handed to the narrow store through an integer `cvt.u32.u16` inside the inline
    /// assembly), and one that stores the `cvt`'s register directly: a narrow store of a
    /// float-written register, the pattern ptxas turned into a conversion in issue 9.
    const HARDWARE: &str = "
.visible .entry f32_to_e4m3_satfinite_hw()
{
	ld.global.b32 	%r6, [%rd13];
	// begin inline asm
	{ .reg .b16 %bx_h; cvt.rn.satfinite.e4m3x2.f32 %bx_h, %r6, %r6; cvt.u32.u16 %r5, %bx_h; }
	// end inline asm
	st.global.b8 	[%rd12], %r5;
}
.visible .entry stored_directly()
{
	ld.global.b32 	%r6, [%rd13];
	cvt.rn.satfinite.e4m3x2.f32 %rs1, %r6, %r6;
	st.global.b8 	[%rd12], %rs1;
}
";

    #[test]
    fn a_hardware_conversion_is_seen_inside_inline_assembly() {
        let kernels = ptx_kernels(HARDWARE);
        let opcodes: Vec<&str> = kernels[0].instructions.iter().map(|i| i.opcode.as_str()).collect();
        assert_eq!(opcodes, ["ld.global.b32", "cvt.rn.satfinite.e4m3x2.f32", "cvt.u32.u16", "st.global.b8"]);
        assert!(kernels[0].instructions[1].writes_float());
        let found = narrow_float_stores(HARDWARE);
        assert_eq!(found.iter().map(|f| f.kernel.as_str()).collect::<Vec<_>>(), ["stored_directly"]);
        assert_eq!(found[0].writer, "cvt.rn.satfinite.e4m3x2.f32 %rs1, %r6, %r6");
        assert!(kernels.iter().all(|k| !k.instructions.iter().any(PtxInstruction::is_float_to_int_conversion)));
    }

    #[test]
    fn kernels_and_instructions_are_parsed() {
        let kernels = ptx_kernels(FOLDED);
        let names: Vec<&str> = kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["f32_to_unorm8", "through_a_move", "fixed", "converts"]);
        let first = &kernels[0].instructions;
        assert_eq!(first.len(), 7, "{first:?}");
        assert_eq!(
            first[0],
            PtxInstruction { opcode: "ld.global.b32".into(), operands: vec!["%r5".into(), "[%rd13]".into()] }
        );
        assert_eq!(first[5].opcode, "bra");
        assert_eq!(kernels[1].instructions[2].operands, ["[%rd1]", "{%rs1, %r4}"]);
    }

    #[test]
    fn a_narrow_store_of_a_float_register_is_found_directly_and_through_moves() {
        let found = narrow_float_stores(FOLDED);
        let kernels: Vec<(&str, &str)> = found.iter().map(|f| (f.kernel.as_str(), f.register.as_str())).collect();
        assert_eq!(kernels, [("f32_to_unorm8", "%r8"), ("through_a_move", "%r4")]);
        assert_eq!(found[0].writer, "fma.rn.f32 %r8, %r7, 0f437F0000, 0f4B000000");
        assert_eq!(found[1].writer, "add.rn.f32 %r1, %r2, %r3");
    }

    #[test]
    fn conversions_are_told_from_other_instructions() {
        let kernels = ptx_kernels(FOLDED);
        let converting: Vec<&str> = kernels
            .iter()
            .filter(|k| k.instructions.iter().any(PtxInstruction::is_float_to_int_conversion))
            .map(|k| k.name.as_str())
            .collect();
        assert_eq!(converting, ["converts"]);
        let instruction = |opcode: &str| PtxInstruction { opcode: opcode.into(), operands: vec![] };
        assert!(instruction("fma.rn.f32").writes_float());
        assert!(instruction("cvt.rn.f16.f32").writes_float());
        assert!(!instruction("cvt.rzi.u16.f32").writes_float());
        assert!(!instruction("cvt.u16.u32").writes_float());
        assert!(!instruction("mov.b32").writes_float());
        assert!(!instruction("cvt.f32.u32").is_float_to_int_conversion());
    }
}
