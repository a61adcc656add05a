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
