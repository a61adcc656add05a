//! Reading PTX text: the functions a module defines, its kernels' names and parameters,
//! its `.extern` declarations, the targets of its calls, its inline-assembly regions, and
//! its code without comments.
//! [`crate::check_ptx`] is built on them, and so are the host's PTX guards.

use std::ops::Range;

/// A function of a PTX module that has a body: a kernel (`.entry`) or a `.func`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxFunction {
    /// Its name as the PTX spells it (mangled, for a Rust function without
    /// `#[unsafe(no_mangle)]`).
    pub name: String,
    /// Whether it is a kernel (`.entry`) rather than a `.func`.
    pub is_entry: bool,
    /// Where its body (between its braces) is in the module's text: the same bytes in
    /// the text with comments ([`strip_comments`] keeps offsets) and without.
    pub body: Range<usize>,
}

/// Every function of `ptx` that has a body (`.entry NAME(...) {`, `.func NAME(...) {`),
/// in order; forward declarations and `.extern .func` declarations are not functions.
pub fn functions(ptx: &str) -> Vec<PtxFunction> {
    let code = strip_comments(ptx);
    let mut keywords: Vec<(usize, bool)> = code.match_indices(".entry").map(|(at, _)| (at, true)).collect();
    keywords.extend(code.match_indices(".func").map(|(at, _)| (at, false)));
    keywords.sort_unstable();
    let mut found: Vec<PtxFunction> = Vec::new();
    for (at, is_entry) in keywords {
        if found.last().is_some_and(|f| at < f.body.end) {
            continue;
        }
        let before = code[..at].rsplit('\n').next().unwrap_or("");
        if before.contains(".extern") || !before.split_whitespace().all(|w| w.starts_with('.')) {
            continue;
        }
        let header_start = at + if is_entry { ".entry".len() } else { ".func".len() };
        let header = &code[header_start..];
        if !header.starts_with(char::is_whitespace) {
            continue;
        }
        let Some(name) = function_name(header) else { continue };
        let Some(end) = header.find(['{', ';']) else { continue };
        if !header[end..].starts_with('{') {
            continue;
        }
        let open = header_start + end;
        let close = closing_brace(&code, open);
        found.push(PtxFunction { name: name.to_string(), is_entry, body: open + 1..close });
    }
    found
}

/// The offset of the `}` that closes the `{` at `open` in `code`, or the end of `code`.
fn closing_brace(code: &str, open: usize) -> usize {
    let mut depth = 0usize;
    for (i, c) in code[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return open + i;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// Names of the functions `ptx` defines with a body (`.func NAME(...) {`), in order;
/// kernels, forward declarations and `.extern .func` declarations are not among them.
pub fn defined_functions(ptx: &str) -> Vec<String> {
    functions(ptx).into_iter().filter(|f| !f.is_entry).map(|f| f.name).collect()
}

/// The parts of `text` that LLVM marks as inline assembly (between `// begin inline asm`
/// and `// end inline asm`), as byte ranges: what an `asm!` block became. An unclosed
/// region runs to the end.
pub fn inline_asm_regions(text: &str) -> Vec<Range<usize>> {
    const BEGIN: &str = "// begin inline asm";
    const END: &str = "// end inline asm";
    let mut regions = Vec::new();
    let mut at = 0;
    while let Some(begin) = text[at..].find(BEGIN) {
        let start = at + begin + BEGIN.len();
        let end = text[start..].find(END).map_or(text.len(), |e| start + e);
        regions.push(start..end);
        at = (end + END.len()).min(text.len());
    }
    regions
}

/// The architecture of the module's `.target` directive (`sm_90` of `.target sm_90`, or
/// of `.target sm_90a, texmode_independent`), if it has one.
pub fn module_target(ptx: &str) -> Option<&str> {
    ptx.lines()
        .map(|line| line.split("//").next().unwrap_or("").trim())
        .find_map(|line| line.strip_prefix(".target"))
        .and_then(|rest| rest.split([',', ' ', '\t']).find(|word| !word.is_empty()))
}

/// Every `.extern` declaration line in `ptx`, trimmed (a self-contained PTX has none).
pub fn extern_declarations(ptx: &str) -> Vec<&str> {
    ptx.lines().map(str::trim).filter(|l| l.starts_with(".extern")).collect()
}

/// The target of every `call` instruction in `ptx`, in order: a function name, or a
/// register (`%rd1`) for an indirect call.
pub fn call_targets(ptx: &str) -> Vec<String> {
    // A call's operands hold no braces: splitting at them too puts a call that opens a
    // body (the first statement after a function's `{`) in a statement of its own.
    strip_comments(ptx)
        .split([';', '{', '}'])
        .filter_map(|statement| {
            let mut words = statement.split_whitespace().skip_while(|w| w.ends_with(':') || w.starts_with('@'));
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
pub(crate) fn function_name(header: &str) -> Option<&str> {
    let mut rest = header.trim_start();
    if rest.starts_with('(') {
        rest = rest[rest.find(')')? + 1..].trim_start();
    }
    let end = rest.find(|c: char| c == '(' || c == ';' || c.is_whitespace()).unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// `ptx` with `//` line comments and `/* */` block comments blanked out: every byte of a
/// comment but its newlines becomes a space, so offsets into the result are offsets into
/// `ptx`.
pub fn strip_comments(ptx: &str) -> String {
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
            for c in skipped.chars() {
                if c == '\n' {
                    out.push('\n');
                } else {
                    out.extend(std::iter::repeat_n(' ', c.len_utf8()));
                }
            }
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Names of the kernel entry points (`.entry NAME(`) in `ptx`, in order.
pub fn entry_names(ptx: &str) -> Vec<&str> {
    ptx.lines().map(str::trim).filter_map(entry_name).collect()
}

/// One parameter of a kernel entry as the PTX declares it: `.param .u64 .ptr .align 1
/// k_param_0` is `{ ty: "u64", pointer: true }`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxParam {
    /// The type without its dot (`u64`, `u32`, `f32`, `b8`…).
    pub ty: String,
    /// Whether LLVM marked it `.ptr` (a pointer parameter).
    pub pointer: bool,
    /// Whether it is an array (`name[N]`: an aggregate passed by value).
    pub aggregate: bool,
}

/// The parameter list of kernel `name` in `ptx` (`.entry name( … )`), or `None` if the PTX
/// has no such entry.
pub fn entry_params(ptx: &str, name: &str) -> Option<Vec<PtxParam>> {
    let mut lines = ptx.lines().map(str::trim);
    let header = lines.by_ref().find(|line| entry_name(line) == Some(name))?;
    Some(header_params(header, lines))
}

/// Every kernel entry of `ptx` with its parameter list, in order, read in one pass: what
/// a loaded module checks declarations against ([`entry_params`] of each, without
/// searching the text once per kernel).
pub fn entries_with_params(ptx: &str) -> Vec<(&str, Vec<PtxParam>)> {
    let mut lines = ptx.lines().map(str::trim);
    let mut entries = Vec::new();
    while let Some(header) = lines.by_ref().find(|line| entry_name(line).is_some()) {
        let name = entry_name(header).unwrap_or_default();
        entries.push((name, header_params(header, lines.by_ref())));
    }
    entries
}

/// The kernel name of an `.entry` header line (`.visible .entry NAME(` or `.entry NAME(`).
fn entry_name(line: &str) -> Option<&str> {
    let rest = line.strip_prefix(".visible ").unwrap_or(line);
    rest.strip_prefix(".entry ").and_then(|r| r.split('(').next()).map(str::trim)
}

/// The parameters of the entry whose header line is `header`, reading on through `lines`
/// (the lines after it) to the closing parenthesis.
fn header_params<'a>(header: &'a str, lines: impl Iterator<Item = &'a str>) -> Vec<PtxParam> {
    let after_paren = header.split_once('(').map_or("", |(_, rest)| rest);
    let mut params = Vec::new();
    let mut parse = |text: &str| {
        for declaration in text.split(',') {
            let words: Vec<&str> = declaration.split_whitespace().collect();
            if words.first() != Some(&".param") {
                continue;
            }
            let ty = words.iter().skip(1).find(|w| {
                !matches!(**w, ".ptr" | ".align" | ".global" | ".shared" | ".const" | ".local") && w.starts_with('.')
            });
            params.push(PtxParam {
                ty: ty.map_or(String::new(), |t| t.trim_start_matches('.').to_string()),
                pointer: words.contains(&".ptr"),
                aggregate: words.iter().any(|w| w.contains('[')),
            });
        }
    };
    if let Some((inside, _)) = after_paren.split_once(')') {
        parse(inside);
        return params;
    }
    parse(after_paren);
    for line in lines {
        match line.split_once(')') {
            Some((inside, _)) => {
                parse(inside);
                break;
            }
            None => parse(line),
        }
    }
    params
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
    fn functions_defined_with_a_body_only() {
        assert_eq!(defined_functions(SAMPLE), ["helper", "noreturn_fn"]);
    }

    #[test]
    fn extern_declarations_are_listed() {
        assert_eq!(extern_declarations(SAMPLE), [".extern .func panic_fmt(.param .b64 p);"]);
    }

    #[test]
    fn the_module_target_is_the_first_word_of_its_directive() {
        assert_eq!(module_target(".version 7.8\n.target sm_90a, texmode_independent\n"), Some("sm_90a"));
        assert_eq!(module_target("// .target sm_50\n\t.target\tsm_75 // the baseline\n"), Some("sm_75"));
        assert_eq!(module_target(SAMPLE), None);
    }

    #[test]
    fn call_targets_span_lines_predicates_and_indirect_calls() {
        assert_eq!(call_targets(SAMPLE), ["helper", "panic_fmt", "%rd2"]);
    }

    #[test]
    fn entry_names_are_the_kernels() {
        let ptx =
            ".visible .entry k(\n\t.param .u64 a\n)\n{\n\tret;\n}\n.entry j(\n)\n{\n}\n.visible .func f()\n{\n}\n";
        assert_eq!(entry_names(ptx), ["k", "j"]);
    }

    #[test]
    fn entry_params_are_read_from_the_header() {
        let ptx = ".visible .entry k(\n\t.param .u64 .ptr .align 1 k_param_0,\n\t.param .f32 k_param_1,\n\t.param .align 4 .b8 k_param_2[8]\n)\n{\n}\n.entry j()\n{\n}\n";
        let p = |ty: &str, pointer, aggregate| PtxParam { ty: ty.into(), pointer, aggregate };
        assert_eq!(
            entry_params(ptx, "k"),
            Some(vec![p("u64", true, false), p("f32", false, false), p("b8", false, true)])
        );
        assert_eq!(entry_params(ptx, "j"), Some(vec![]));
        assert_eq!(entry_params(ptx, "missing"), None);
        let all = entries_with_params(ptx);
        let names: Vec<&str> = all.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, ["k", "j"]);
        for (name, params) in all {
            assert_eq!(Some(params), entry_params(ptx, name), "{name}");
        }
    }
}
