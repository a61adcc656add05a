//! Checks on the text of a built PTX module: what `ptxas` or the driver would otherwise
//! reject late (a call to a function the module does not hold), what must never be in a
//! kernel (a panic path, a narrow store of a float register, a block-level instruction
//! that is wrong under divergence), a kernel the host cannot find by name, and that the
//! module is for its target. Messages name the function that holds the problem,
//! demangled.

use crate::Target;
use crate::convergence::{CONVERGENT_FUNCTIONS, is_aligned_barrier, is_collective};
use crate::guards::{NarrowFloatStore, narrow_float_stores, parse_body};
use crate::ptx_text::{
    PtxFunction, call_targets, extern_declarations, function_name, functions, inline_asm_regions, strip_comments,
};
use crate::symbol::{demangled, is_mangled, is_panic_machinery};
use std::fmt;

/// Something wrong with a built PTX module. Names are kept as the PTX spells them;
/// `Display` demangles them.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PtxProblem {
    /// The module does not say `.target sm_XX` for its target.
    WrongTarget {
        /// The line it should have.
        wanted: String,
    },
    /// A `.extern` declaration of a variable, or of a function nothing calls: the module
    /// needs something from elsewhere. (Shared memory, `.extern .shared`, is the
    /// launch's, and fine; a called function is reported at its call.)
    Extern(String),
    /// A call to a function the module does not define.
    UndefinedCall {
        /// The function holding the call.
        caller: String,
        /// The function called.
        callee: String,
    },
    /// A call into the panic machinery of `core` (`panic`, `panic_bounds_check`,
    /// `slice_index_fail`, `unwrap_failed`, formatting, …): a panic path survived.
    PanicPath {
        /// The function holding the call.
        caller: String,
        /// The function called.
        callee: String,
    },
    /// An 8- or 16-bit store of a register a floating-point instruction wrote, which
    /// ptxas compiles as a saturating float → integer conversion instead of a
    /// truncation of the bits ([`crate::guards`]): store an integer (`to_bits()`, then
    /// `as u8` / `as u16`) and keep it out of LLVM's reach to fold back.
    NarrowFloatStore(NarrowFloatStore),
    /// An aligned block barrier (`bar.sync`, `bar.red.*`, `barrier.*.aligned`), which is
    /// miscompiled when threads diverge ([`crate::convergence`]).
    AlignedBarrier {
        /// The function holding it.
        function: String,
        /// The instruction.
        instruction: String,
    },
    /// A barrier, shuffle, vote, match or warp reduction in inline assembly, which LLVM
    /// may duplicate into divergent branches ([`crate::convergence`]).
    CollectiveInInlineAsm {
        /// The function holding it.
        function: String,
        /// The instruction.
        instruction: String,
    },
    /// A kernel (`.entry`) whose name is a mangled Rust symbol: `#[unsafe(no_mangle)]`
    /// is missing, and the host cannot find it by its Rust name.
    MangledEntry(String),
}

impl fmt::Display for PtxProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PtxProblem::WrongTarget { wanted } => write!(f, "the module does not say `{wanted}`"),
            PtxProblem::Extern(line) => write!(
                f,
                "`{line}`: the PTX needs something it does not define (a static, or a function of another crate \
                 that was not inlined: mark it #[inline])"
            ),
            PtxProblem::UndefinedCall { caller, callee } => write!(
                f,
                "`{}` calls `{}`, which the PTX does not define; hint: a function of another crate is only in the \
                 PTX if it is inlined: mark it #[inline]",
                demangled(caller),
                demangled(callee)
            ),
            PtxProblem::PanicPath { caller, callee } => write!(
                f,
                "`{}` can panic: it calls `{}`, core's panic machinery; hint: a kernel must not panic: use get() \
                 or a bound the compiler can see instead of indexing, no unwrap/expect, and keep host-only code \
                 out of the PTX with #[cfg(not(target_arch = \"nvptx64\"))]",
                demangled(caller),
                demangled(callee)
            ),
            PtxProblem::NarrowFloatStore(store) => {
                write!(f, "{store}: ptxas makes a narrow store of a float register a saturating conversion")
            }
            PtxProblem::AlignedBarrier { function, instruction } => write!(
                f,
                "`{}`: `{instruction}` is the aligned form of the block barrier, miscompiled when threads diverge \
                 (rust-lang/rust#137086; core::arch::nvptx::_syncthreads gives it); use {CONVERGENT_FUNCTIONS}",
                demangled(function)
            ),
            PtxProblem::CollectiveInInlineAsm { function, instruction } => write!(
                f,
                "`{}`: `{instruction}` is in inline asm, which LLVM does not treat as convergent and may duplicate \
                 into divergent branches; use {CONVERGENT_FUNCTIONS}",
                demangled(function)
            ),
            PtxProblem::MangledEntry(name) => write!(
                f,
                "the kernel `{}` has the mangled name `{name}`, which the host cannot find by name: add \
                 #[unsafe(no_mangle)] to it",
                demangled(name)
            ),
        }
    }
}

/// Every problem of `ptx`, a module built for `target`, in order: the target, the
/// external declarations, then function by function its name, calls and block-level
/// instructions, then the narrow float stores.
pub fn check_ptx(ptx: &str, target: Target) -> Vec<PtxProblem> {
    let code = strip_comments(ptx);
    let mut problems = Vec::new();
    let wanted = format!(".target sm_{}", target.sm);
    if !code.lines().any(|line| line.trim() == wanted) {
        problems.push(PtxProblem::WrongTarget { wanted });
    }
    let functions = functions(ptx);
    let called: Vec<String> = call_targets(&code);
    problems.extend(
        extern_declarations(&code)
            .into_iter()
            .filter(|line| !is_shared_memory(line) && !declares_one_of(line, &called))
            .map(|line| PtxProblem::Extern(line.into())),
    );
    for function in &functions {
        problems.extend(function_problems(ptx, &code, function, &functions));
    }
    problems.extend(narrow_float_stores(ptx).into_iter().map(PtxProblem::NarrowFloatStore));
    problems
}

/// The problems of one function of the module: a mangled kernel name, its bad calls, its
/// aligned barriers outside inline assembly and its collectives inside it.
fn function_problems(ptx: &str, code: &str, function: &PtxFunction, all: &[PtxFunction]) -> Vec<PtxProblem> {
    let mut problems = Vec::new();
    if function.is_entry && is_mangled(&function.name) {
        problems.push(PtxProblem::MangledEntry(function.name.clone()));
    }
    let body = &code[function.body.clone()];
    for callee in call_targets(body) {
        let caller = function.name.clone();
        if is_panic_machinery(&callee) {
            problems.push(PtxProblem::PanicPath { caller, callee });
        } else if !callee.starts_with('%') && !all.iter().any(|f| !f.is_entry && f.name == callee) {
            problems.push(PtxProblem::UndefinedCall { caller, callee });
        }
    }
    let body_in_ptx = function.body.start;
    let mut outside_asm = 0;
    for region in inline_asm_regions(&ptx[function.body.clone()]) {
        problems.extend(aligned_barriers(&function.name, &body[outside_asm..region.start]));
        for instruction in parse_body(&code[body_in_ptx + region.start..body_in_ptx + region.end]) {
            if is_collective(&instruction.opcode) {
                let function = function.name.clone();
                problems.push(PtxProblem::CollectiveInInlineAsm { function, instruction: instruction.text() });
            }
        }
        outside_asm = region.end;
    }
    problems.extend(aligned_barriers(&function.name, &body[outside_asm..]));
    problems
}

/// The aligned barriers among `statements` (code outside inline assembly) of `function`.
fn aligned_barriers(function: &str, statements: &str) -> Vec<PtxProblem> {
    parse_body(statements)
        .into_iter()
        .filter(|instruction| is_aligned_barrier(&instruction.opcode))
        .map(|instruction| PtxProblem::AlignedBarrier {
            function: function.to_string(),
            instruction: instruction.text(),
        })
        .collect()
}

/// Whether a `.extern` declaration is of shared memory (`.extern .shared .align 16 .b8
/// smem[];`: the dynamic shared memory sized at launch).
fn is_shared_memory(declaration: &str) -> bool {
    declaration.split_whitespace().any(|word| word == ".shared")
}

/// Whether a `.extern .func` declaration declares one of `names`.
fn declares_one_of(declaration: &str, names: &[String]) -> bool {
    let name = declaration.split_once(".func").and_then(|(_, header)| function_name(header));
    name.is_some_and(|name| names.iter().any(|called| called == name))
}
