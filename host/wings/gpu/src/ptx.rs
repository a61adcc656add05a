//! The PTX of every kernel, built by `build.rs` from `kernels-gpu` and embedded here: one
//! module per PTX target of [`shared::hardware::TARGETS`]. Its kernels' names and
//! parameters are read by `ptx_builder::ptx_text`'s [`entry_names`] and [`entry_params`],
//! re-exported here.

pub use ptx_builder::ptx_text::{PtxParam, entries_with_params, entry_names, entry_params};
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
pub(crate) fn module_holding(name: KernelName) -> Option<&'static Module> {
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
}
