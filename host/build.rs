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
//! The nested cargo gets its own target directory per module (the outer build holds the
//! lock on the normal one, and cargo puts RUSTFLAGS after `cargo rustc`'s own arguments,
//! so modules cannot share one) and none of the outer build's flags; `-C target-cpu`
//! (and the PTX version of a newer module) go through RUSTFLAGS so the build-std crates
//! (`core`, `compiler_builtins`) get them too.

use shared::hardware::{BASELINE, Conversion, PtxTarget, TARGETS};
use shared::{Family, KernelKind, Primitive};
use std::env;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const NVPTX_TARGET: &str = "nvptx64-nvidia-cuda";

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
    let workspace = manifest_dir.parent().expect("host/ sits in the workspace root").to_path_buf();
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));
    for watched in ["shared", "kernels-gpu", "Cargo.lock", "rust-toolchain.toml"] {
        println!("cargo::rerun-if-changed={}", workspace.join(watched).display());
    }
    println!("cargo::rerun-if-changed=build.rs");

    if let Err(message) = build_modules(&workspace, &out_dir) {
        println!("cargo::error={message}");
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

fn build_modules(workspace: &Path, out_dir: &Path) -> Result<(), String> {
    check_rust_src()?;
    let mut modules = String::from(
        "/// Every PTX module, in the order of `shared::hardware::TARGETS`: its target and its text.\n\
         pub const MODULES: &[Module] = &[\n",
    );
    // The modules have separate target directories: their builds run at the same time.
    let mut builds = Vec::new();
    for target in TARGETS {
        let list = out_dir.join(format!("hardware_kernels_{target}.rs"));
        let names = hardware_kernels(target);
        let source = format!("hardware_kernels!({});\n", names.join(", "));
        std::fs::write(&list, source).map_err(|e| format!("cannot write {}: {e}", list.display()))?;
        let ptx = out_dir.join(ptx_file(target));
        let child = ptx_command(workspace, out_dir, target, &list, &ptx)
            .spawn()
            .map_err(|e| format!("could not run cargo for the {NVPTX_TARGET} kernels: {e}"))?;
        builds.push((target, ptx, child));
        writeln!(
            modules,
            "    Module {{ target: shared::hardware::PtxTarget {{ sm: {}, ptx: {} }}, ptx: include_str!(concat!(env!(\"OUT_DIR\"), \"/{}\")) }},",
            target.sm,
            target.ptx,
            ptx_file(target)
        )
        .expect("writing to a String");
    }
    let mut failures = Vec::new();
    for (target, ptx, child) in builds {
        if let Err(message) = finish_ptx(target, &ptx, child) {
            failures.push(message);
        }
    }
    if let Some(first) = failures.into_iter().next() {
        return Err(first);
    }
    modules.push_str("];\n");
    let modules_file = out_dir.join("ptx_modules.rs");
    std::fs::write(&modules_file, modules).map_err(|e| format!("cannot write {}: {e}", modules_file.display()))
}

/// The nested cargo command that builds the module for `target` into `ptx`, its hardware
/// kernels listed in `list`.
fn ptx_command(workspace: &Path, out_dir: &Path, target: PtxTarget, list: &Path, ptx: &Path) -> Command {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    let (target_dir, rustflags) = if target == BASELINE {
        ("nvptx-target".to_string(), format!("-C target-cpu=sm_{}", target.sm))
    } else {
        (
            format!("nvptx-target-{target}"),
            format!("-C target-cpu=sm_{} -C target-feature=+ptx{}", target.sm, target.ptx),
        )
    };
    command
        .current_dir(workspace)
        .args(["rustc", "-p", "kernels-gpu", "--release", "--target", NVPTX_TARGET, "-Zbuild-std=core"])
        .arg("--target-dir")
        .arg(out_dir.join(target_dir))
        .args(["--", "-C", "codegen-units=1"]);
    if target != BASELINE {
        command.args(["--cfg", "bitexact_hardware_only"]);
    }
    command.arg(format!("--emit=asm={}", ptx.display()));
    for inherited in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_MAKEFLAGS",
        "RUSTC_WORKSPACE_WRAPPER",
        "RUSTC_WRAPPER",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
    ] {
        command.env_remove(inherited);
    }
    command.env("RUSTFLAGS", rustflags);
    command.env("BITEXACT_HARDWARE_KERNELS", list);
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

/// Waits for the build of `target`'s module and checks that it wrote `ptx` for that
/// target.
fn finish_ptx(target: PtxTarget, ptx: &Path, child: Child) -> Result<(), String> {
    let output = child.wait_with_output().map_err(|e| format!("waiting for cargo ({target}): {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        // Cargo prints the whole nested log on failure; keep its errors visible.
        eprintln!("{stderr}");
        let first_error = stderr.lines().find(|l| l.starts_with("error")).unwrap_or("see the log above");
        return Err(format!("building kernels-gpu for {NVPTX_TARGET} ({target}) failed: {first_error}"));
    }
    if !ptx.is_file() {
        return Err(format!("building kernels-gpu succeeded but wrote no PTX at {}", ptx.display()));
    }
    let text = std::fs::read_to_string(ptx).map_err(|e| format!("cannot read {}: {e}", ptx.display()))?;
    let wanted = format!(".target sm_{}", target.sm);
    if !text.lines().any(|line| line.trim() == wanted) {
        return Err(format!("{} does not say `{wanted}`", ptx.display()));
    }
    Ok(())
}

/// `-Zbuild-std` needs the standard library's source; say how to get it if missing.
fn check_rust_src() -> Result<(), String> {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("could not run {rustc}: {e}"))?;
    let sysroot = String::from_utf8_lossy(&sysroot.stdout).trim().to_string();
    let core_src = Path::new(&sysroot).join("lib/rustlib/src/rust/library/core");
    if core_src.is_dir() {
        Ok(())
    } else {
        Err(format!(
            "the GPU kernels need the rust-src component (for -Zbuild-std=core on {NVPTX_TARGET}); install it with: rustup component add rust-src --toolchain nightly-2026-10-01"
        ))
    }
}
