//! Builds `kernels-gpu` to PTX with rustc's own `nvptx64-nvidia-cuda` target, once per
//! PTX target of `shared::hardware::TARGETS`, and writes the modules to `$OUT_DIR` with
//! `$OUT_DIR/ptx_modules.rs`, which `src/ptx.rs` includes:
//!
//! * the baseline (`sm_75`): `kernels.ptx`, every software kernel and the `Hardware`
//!   and `HardwareStream` kernels whose instruction the baseline has;
//! * each newer target: `kernels_sm_XX.ptx`, only the `Hardware` and `HardwareStream`
//!   kernels whose instruction's target (`shared::hardware::Conversion::target`) it is,
//!   built with `--cfg bitexact_hardware_only`.
//!
//! Which hardware kernels go where comes from the variant table (`shared` is a
//! build-dependency): this script writes `hardware_kernels!(...)` for each module into a
//! file that `kernels-gpu` includes through `$BITEXACT_HARDWARE_KERNELS`.
//!
//! The building itself (the nested cargo for `nvptx64-nvidia-cuda`, its warnings and
//! errors passed on, the checks of the PTX, ptxas when installed) is `ptx-builder`'s, the
//! same a user's build.rs calls: this script only says which modules to build.

use ptx_builder::{PtxBuilder, Target};
use shared::hardware::{BASELINE, Conversion, PtxTarget, TARGETS};
use shared::{Family, KernelKind, Primitive};
use std::env;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Callback for `shared::for_each_variant!`: defines `TABLE`, the `(name, family,
/// kinds)` of every variant.
macro_rules! table {
    ($({ $name:ident, $family:expr, $in:ty => $out:ty, $f:path, $claim:ident, [$($kind:ident),*], $desc:literal })*) => {
        const TABLE: &[(&str, Family, &[KernelKind])] = &[$((
            stringify!($name),
            <shared::variants::$name as Primitive>::FAMILY,
            <shared::variants::$name as Primitive>::KINDS,
        )),*];
    };
}
shared::for_each_variant!(table);

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest_dir
        .ancestors()
        .nth(3)
        .expect("host/wings/gpu sits three levels under the workspace root")
        .to_path_buf();
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));
    // The builder watches kernels-gpu and its path dependencies (shared, device-support).
    for watched in ["Cargo.lock", "rust-toolchain.toml"] {
        println!("cargo::rerun-if-changed={}", workspace.join(watched).display());
    }
    println!("cargo::rerun-if-changed=build.rs");

    if let Err(error) = build_modules(&workspace, &out_dir) {
        for line in error.details() {
            eprintln!("{line}");
        }
        println!("cargo::error={error}");
        std::process::exit(1);
    }
}

/// The kinds built into the module of the variant's instruction's target, not the
/// baseline's software build.
const HARDWARE_KINDS: [KernelKind; 2] = [KernelKind::Hardware, KernelKind::HardwareStream];

/// The hardware kernels of the module for `target`, as `hardware_kernels!` takes them:
/// `variant: Kind`.
fn hardware_kernels(target: PtxTarget) -> Vec<String> {
    let mut kernels = Vec::new();
    for &(name, family, kinds) in TABLE {
        for kind in HARDWARE_KINDS.into_iter().filter(|k| kinds.contains(k)) {
            let instruction = Conversion::of(family);
            assert!(instruction.is_some(), "{name} lists {kind:?} but its family {family} has no instruction");
            if instruction.is_some_and(|i| i.target() == target) {
                kernels.push(format!("{name}: {kind:?}"));
            }
        }
    }
    kernels
}

/// The PTX file of the module for `target`.
fn ptx_file(target: PtxTarget) -> String {
    if target == BASELINE { "kernels.ptx".to_string() } else { format!("kernels_{target}.ptx") }
}

fn build_modules(workspace: &Path, out_dir: &Path) -> Result<(), ptx_builder::Error> {
    let mut builder = PtxBuilder::new(workspace.join("kernels-gpu"));
    let mut modules = String::from(
        "/// Every PTX module, in the order of `shared::hardware::TARGETS`: its target and its text.\n\
         pub const MODULES: &[Module] = &[\n",
    );
    for target in TARGETS {
        let list = out_dir.join(format!("hardware_kernels_{target}.rs"));
        let names = hardware_kernels(target);
        let source = format!("hardware_kernels!({});\n", names.join(", "));
        std::fs::write(&list, source)
            .map_err(|error| ptx_builder::Error::Io { action: format!("writing {}", list.display()), error })?;
        // LLVM's default PTX version for the baseline's architecture is the baseline's.
        let (ptx_target, cfg) = if target == BASELINE {
            (Target::new(target.sm), None)
        } else {
            (Target::new(target.sm).with_ptx_version(target.ptx), Some("bitexact_hardware_only"))
        };
        let mut module = ptx_builder::Module::new(ptx_file(target), ptx_target).env("BITEXACT_HARDWARE_KERNELS", &list);
        if let Some(cfg) = cfg {
            module = module.cfg(cfg);
        }
        builder = builder.module(module);
        writeln!(
            modules,
            "    Module {{ target: shared::hardware::PtxTarget {{ sm: {}, ptx: {} }}, ptx: include_str!(concat!(env!(\"OUT_DIR\"), \"/{}\")) }},",
            target.sm,
            target.ptx,
            ptx_file(target)
        )
        .expect("writing to a String");
    }
    builder.out_dir(out_dir).build()?;
    modules.push_str("];\n");
    let modules_file = out_dir.join("ptx_modules.rs");
    std::fs::write(&modules_file, modules)
        .map_err(|error| ptx_builder::Error::Io { action: format!("writing {}", modules_file.display()), error })
}
