//! The PTX of every kernel, built by `build.rs` from `kernels-gpu` and embedded here: one
//! module per PTX target of [`shared::hardware::TARGETS`].

use shared::hardware::{Conversion, PtxTarget};
use shared::{KernelKind, KernelName};

/// One embedded PTX module.
#[derive(Clone, Copy, Debug)]
pub struct Module {
    /// Its `.target` and `.version`.
    pub target: PtxTarget,
    /// Its text.
    pub ptx: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/ptx_modules.rs"));

impl Module {
    /// Whether `ptxas` can assemble this module for `arch` (`sm_90`, `sm_90a`): whether
    /// that architecture is at least the module's target.
    pub fn assembles_for(&self, arch: &str) -> bool {
        arch_number(arch).is_some_and(|sm| sm >= self.target.sm)
    }
}

/// The number of an architecture name: 90 for `sm_90` and `sm_90a`; `None` if `arch` is
/// not of that form.
pub fn arch_number(arch: &str) -> Option<u32> {
    arch.strip_prefix("sm_")?.trim_end_matches(|c: char| c.is_ascii_lowercase()).parse().ok()
}

/// The baseline module (`.target sm_75`), [`MODULES`]`[0]`: each variant's kernels, one
/// per kind its table entry has, named as [`shared::KernelName`] says, except the
/// `Hardware` and `HardwareStream` kernels whose instruction needs a newer target.
pub const PTX: &str = MODULES[0].ptx;

/// The module whose entry points include kernel `name`, if any (found in the text, for
/// callers that know the name only).
pub fn module_holding(name: KernelName) -> Option<&'static Module> {
    let name = name.to_string();
    MODULES.iter().find(|m| entry_names(m.ptx).contains(&name.as_str()))
}

/// The module that holds kernel `name`: the baseline, except for a
/// [`KernelKind::Hardware`] or [`KernelKind::HardwareStream`] kernel, which is in the
/// module of its instruction's target (`instruction` is the variant's family's,
/// [`Conversion::of`]).
pub fn module_of(name: KernelName, instruction: Option<Conversion>) -> &'static Module {
    let target = match (name.kind, instruction) {
        (KernelKind::Hardware | KernelKind::HardwareStream, Some(instruction)) => instruction.target(),
        _ => MODULES[0].target,
    };
    MODULES.iter().find(|m| m.target == target).unwrap_or(&MODULES[0])
}

/// Names of the kernel entry points (`.entry NAME(`) in `ptx`, in order.
pub fn entry_names(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter_map(|line| {
            line.trim_start().strip_prefix(".visible .entry ").or_else(|| line.trim_start().strip_prefix(".entry "))
        })
        .filter_map(|rest| rest.split('(').next())
        .map(str::trim)
        .collect()
}

/// Names of the functions `ptx` defines with a body (`.func NAME(...) {`), in order;
/// forward declarations and `.extern .func` declarations are not definitions.
pub fn defined_functions(ptx: &str) -> Vec<String> {
    let code = strip_comments(ptx);
    let mut names = Vec::new();
    for (at, _) in code.match_indices(".func") {
        let before = code[..at].rsplit('\n').next().unwrap_or("");
        if before.contains(".extern") || !before.split_whitespace().all(|w| w.starts_with('.')) {
            continue;
        }
        let header = &code[at + ".func".len()..];
        if !header.starts_with(char::is_whitespace) {
            continue;
        }
        let Some(name) = function_name(header) else { continue };
        let has_body = header.find(['{', ';']).is_some_and(|end| header[end..].starts_with('{'));
        if has_body {
            names.push(name.to_string());
        }
    }
    names
}

/// Every `.extern` declaration line in `ptx`, trimmed (a self-contained PTX has none).
pub fn extern_declarations(ptx: &str) -> Vec<&str> {
    ptx.lines().map(str::trim).filter(|l| l.starts_with(".extern")).collect()
}

/// The target of every `call` instruction in `ptx`, in order: a function name, or a
/// register (`%rd1`) for an indirect call.
pub fn call_targets(ptx: &str) -> Vec<String> {
    strip_comments(ptx)
        .split(';')
        .filter_map(|statement| {
            let mut words = statement
                .split_whitespace()
                .skip_while(|w| w.ends_with(':') || w.starts_with('@') || w.chars().all(|c| c == '{' || c == '}'));
            let opcode = words.next()?;
            if opcode != "call" && !opcode.starts_with("call.") {
                return None;
            }
            // Operands: `[(ret),] target, [(params)] [, prototype]`, possibly over lines.
            let operands: String = words.collect::<Vec<_>>().join(" ");
            let mut depth = 0usize;
            let outside_parentheses: String = operands
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
            outside_parentheses.split(',').map(str::trim).find(|t| !t.is_empty()).map(str::to_string)
        })
        .collect()
}

/// The name after `.func` in `header`, skipping a `(.param ...)` return value.
fn function_name(header: &str) -> Option<&str> {
    let mut rest = header.trim_start();
    if rest.starts_with('(') {
        rest = rest[rest.find(')')? + 1..].trim_start();
    }
    let end = rest.find(|c: char| c == '(' || c == ';' || c.is_whitespace()).unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// `ptx` with `//` line comments and `/* */` block comments blanked out (newlines kept).
pub(crate) fn strip_comments(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len());
    let mut rest = ptx;
    while let Some(start) = rest.find('/') {
        let (code, comment) = rest.split_at(start);
        out.push_str(code);
        let end = if comment.starts_with("//") {
            comment.find('\n').unwrap_or(comment.len())
        } else if comment.starts_with("/*") {
            comment.find("*/").map_or(comment.len(), |e| e + 2)
        } else {
            1
        };
        let (skipped, after) = comment.split_at(end);
        if end == 1 {
            out.push('/');
        } else {
            out.extend(skipped.chars().filter(|&c| c == '\n'));
            out.push(' ');
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shapes LLVM's NVPTX back end emits: a return value, a forward declaration,
    /// an external function, a call split over lines inside a call sequence, an
    /// indirect call, and comments that mention `.func` and `call`.
    const SAMPLE: &str = "
.extern .func panic_fmt(.param .b64 p);
.func (.param .b32 func_retval0) helper(
\t.param .b32 x
)
;
// .func commented_out() { }
.visible .func (.param .b32 func_retval0) helper(
\t.param .b32 x
)
{
\tret; /* call nowhere; */
}
.visible .func noreturn_fn(
\t.param .b64 p
)
.noreturn
{
\ttrap; exit;
}
.visible .entry k(
\t.param .u64 a
)
{
\t{ // callseq 0, 0
\t.param .b32 param0;
\tst.param.b32 [param0], %r1;
\t.param .b32 retval0;
\tcall.uni (retval0),
\thelper,
\t(
\tparam0
\t);
\t} // callseq 0
$L__BB0_1:
\t@%p1 call.uni panic_fmt, (param0);
\tcall (retval0), %rd2, (param0), prototype_0;
\tret;
}
";

    #[test]
    fn modules_follow_the_targets_and_assemble_from_their_own_on() {
        let targets: Vec<_> = MODULES.iter().map(|m| m.target).collect();
        assert_eq!(targets, shared::hardware::TARGETS);
        assert_eq!((arch_number("sm_90a"), arch_number("sm_120"), arch_number("90")), (Some(90), Some(120), None));
        let fp8 = &MODULES[2];
        assert!(!fp8.assembles_for("sm_86") && fp8.assembles_for("sm_89") && fp8.assembles_for("sm_100"));
        assert!(MODULES[0].assembles_for("sm_75"));
    }

    #[test]
    fn functions_defined_with_a_body_only() {
        assert_eq!(defined_functions(SAMPLE), ["helper", "noreturn_fn"]);
        assert_eq!(entry_names(SAMPLE), ["k"]);
    }

    #[test]
    fn extern_declarations_are_listed() {
        assert_eq!(extern_declarations(SAMPLE), [".extern .func panic_fmt(.param .b64 p);"]);
    }

    #[test]
    fn call_targets_span_lines_predicates_and_indirect_calls() {
        assert_eq!(call_targets(SAMPLE), ["helper", "panic_fmt", "%rd2"]);
    }
}
