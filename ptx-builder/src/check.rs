//! Checks on the text of a built PTX module: what `ptxas` or the driver would otherwise
//! reject late (a call to a function the module does not hold) or what must never be in
//! a kernel (a panic or formatting path, a narrow store of a float register), and that
//! the module is for its target.

use crate::Target;
use crate::guards::{NarrowFloatStore, narrow_float_stores};
use crate::ptx_text::{call_targets, defined_functions, extern_declarations, strip_comments};
use std::fmt;

/// Something wrong with a built PTX module.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PtxProblem {
    /// The module does not say `.target sm_XX` for its target.
    WrongTarget {
        /// The line it should have.
        wanted: String,
    },
    /// A `.extern` declaration: the module needs something from elsewhere (usually a
    /// function of another crate that was not inlined; mark it `#[inline]`).
    Extern(String),
    /// A call to a function the module does not define.
    UndefinedCall(String),
    /// A call to a function whose name says it panics or formats: a panic path survived
    /// in a kernel.
    PanicPath(String),
    /// An 8- or 16-bit store of a register a floating-point instruction wrote, which
    /// ptxas compiles as a saturating float → integer conversion instead of a
    /// truncation of the bits ([`crate::guards`]): store an integer (`to_bits()`, then
    /// `as u8` / `as u16`) and keep it out of LLVM's reach to fold back.
    NarrowFloatStore(NarrowFloatStore),
}

impl fmt::Display for PtxProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PtxProblem::WrongTarget { wanted } => write!(f, "the module does not say `{wanted}`"),
            PtxProblem::Extern(line) => {
                write!(
                    f,
                    "`{line}`: the PTX needs a function it does not define (a non-inlined function of another crate?)"
                )
            }
            PtxProblem::UndefinedCall(name) => write!(f, "a call to {name}, which the PTX does not define"),
            PtxProblem::PanicPath(name) => write!(f, "a call to {name}: a panic or formatting path survived"),
            PtxProblem::NarrowFloatStore(store) => {
                write!(f, "{store}: ptxas makes a narrow store of a float register a saturating conversion")
            }
        }
    }
}

/// Name fragments of the functions of core's panic and formatting machinery.
const PANIC_WORDS: [&str; 4] = ["panic", "fmt", "unwind", "format"];

/// Every problem of `ptx`, a module built for `target`, in order.
pub fn check_ptx(ptx: &str, target: Target) -> Vec<PtxProblem> {
    let code = strip_comments(ptx);
    let mut problems = Vec::new();
    let wanted = format!(".target sm_{}", target.sm);
    if !code.lines().any(|line| line.trim() == wanted) {
        problems.push(PtxProblem::WrongTarget { wanted });
    }
    problems.extend(extern_declarations(&code).into_iter().map(|l| PtxProblem::Extern(l.into())));
    let defined = defined_functions(&code);
    for target in call_targets(&code) {
        let lower = target.to_lowercase();
        if PANIC_WORDS.iter().any(|word| lower.contains(word)) {
            problems.push(PtxProblem::PanicPath(target));
        } else if !target.starts_with('%') && !defined.contains(&target) {
            problems.push(PtxProblem::UndefinedCall(target));
        }
    }
    problems.extend(narrow_float_stores(ptx).into_iter().map(PtxProblem::NarrowFloatStore));
    problems
}
