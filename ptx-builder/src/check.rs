//! Checks on the text of a built PTX module: what `ptxas` or the driver would otherwise
//! reject late (a call to a function the module does not hold) or what must never be in
//! a kernel (a panic or formatting path), and that the module is for its target.

use crate::Target;
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
    problems
        .extend(code.lines().map(str::trim).filter(|l| l.starts_with(".extern")).map(|l| PtxProblem::Extern(l.into())));
    let defined = defined_functions(&code);
    for target in call_targets(&code) {
        let lower = target.to_lowercase();
        if PANIC_WORDS.iter().any(|word| lower.contains(word)) {
            problems.push(PtxProblem::PanicPath(target));
        } else if !target.starts_with('%') && !defined.contains(&target) {
            problems.push(PtxProblem::UndefinedCall(target));
        }
    }
    problems
}

/// `ptx` without its `//` and `/* */` comments.
fn strip_comments(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len());
    let mut rest = ptx;
    while !rest.is_empty() {
        let line = rest.find("//");
        let block = rest.find("/*");
        match (line, block) {
            (Some(l), b) if b.is_none_or(|b| l < b) => {
                out.push_str(&rest[..l]);
                rest = rest[l..].find('\n').map_or("", |end| &rest[l + end..]);
            }
            (_, Some(b)) => {
                out.push_str(&rest[..b]);
                rest = rest[b + 2..].find("*/").map_or("", |end| &rest[b + 2 + end + 2..]);
                out.push(' ');
            }
            (None, None) => {
                out.push_str(rest);
                rest = "";
            }
            (Some(_), None) => unreachable!("the first arm takes a `//` with no `/*`"),
        }
    }
    out
}

/// The functions `code` defines with a body (`.func [(ret)] NAME(...) {`), not those it
/// only declares (`.func NAME(...);`, `.extern .func`).
fn defined_functions(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in code.match_indices(".func") {
        let header = &code[at + ".func".len()..];
        if !header.starts_with(char::is_whitespace) {
            continue;
        }
        let line_start = code[..at].rfind('\n').map_or(0, |n| n + 1);
        if code[line_start..at].contains(".extern") {
            continue;
        }
        // Skip a return parameter list, then the name runs up to `(`, `{`, `;` or space.
        let rest = header.trim_start();
        let rest =
            if rest.starts_with('(') { rest.find(')').map_or("", |end| rest[end + 1..].trim_start()) } else { rest };
        let name: String = rest.chars().take_while(|c| !matches!(c, '(' | '{' | ';') && !c.is_whitespace()).collect();
        let has_body = rest.find(['{', ';']).is_some_and(|end| rest[end..].starts_with('{'));
        if !name.is_empty() && has_body {
            names.push(name);
        }
    }
    names
}

/// The target of every `call` in `code`: a function name, or a register for an indirect
/// call.
fn call_targets(code: &str) -> Vec<String> {
    // A call's operands hold no braces: splitting at them too puts a call that opens a
    // body in a statement of its own.
    code.split([';', '{', '}'])
        .filter_map(|statement| {
            let mut words = statement.split_whitespace().skip_while(|w| w.ends_with(':') || w.starts_with('@'));
            let opcode = words.next()?;
            if opcode != "call" && !opcode.starts_with("call.") {
                return None;
            }
            // Operands: `[(ret),] target, [(params)] [, prototype]`.
            let operands = words.collect::<Vec<_>>().join(" ");
            let mut depth = 0usize;
            let outside: String = operands
                .chars()
                .filter(|&c| {
                    let keep = depth == 0 && c != '(' && c != ')';
                    match c {
                        '(' => depth += 1,
                        ')' => depth = depth.saturating_sub(1),
                        _ => {}
                    }
                    keep
                })
                .collect();
            outside.split(',').map(str::trim).find(|part| !part.is_empty()).map(str::to_string)
        })
        .collect()
}
