//! Builds `kernels-gpu` to PTX with rustc's own `nvptx64-nvidia-cuda` target and writes
//! it to `$OUT_DIR/kernels.ptx`, which `src/ptx.rs` embeds.
//!
//! The nested cargo gets its own target directory (the outer build holds the lock on
//! the normal one) and none of the outer build's flags; `-C target-cpu` goes through
//! RUSTFLAGS so the build-std crates (`core`, `compiler_builtins`) get it too.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Baseline architecture: Turing. The driver JIT-compiles this PTX for newer GPUs.
const TARGET_CPU: &str = "sm_75";
const NVPTX_TARGET: &str = "nvptx64-nvidia-cuda";

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let workspace = manifest_dir.parent().expect("host/ sits in the workspace root").to_path_buf();
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));
    for watched in ["shared", "kernels-gpu", "Cargo.lock", "rust-toolchain.toml"] {
        println!("cargo::rerun-if-changed={}", workspace.join(watched).display());
    }
    println!("cargo::rerun-if-changed=build.rs");

    let ptx = out_dir.join("kernels.ptx");
    if let Err(message) = build_ptx(&workspace, &out_dir, &ptx) {
        println!("cargo::error={message}");
        std::process::exit(1);
    }
}

fn build_ptx(workspace: &Path, out_dir: &Path, ptx: &Path) -> Result<(), String> {
    check_rust_src()?;
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(workspace)
        .args(["rustc", "-p", "kernels-gpu", "--release", "--target", NVPTX_TARGET, "-Zbuild-std=core"])
        .arg("--target-dir")
        .arg(out_dir.join("nvptx-target"))
        .args(["--", "-C", "codegen-units=1"])
        .arg(format!("--emit=asm={}", ptx.display()));
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
    command.env("RUSTFLAGS", format!("-C target-cpu={TARGET_CPU}"));
    let output = command.output().map_err(|e| format!("could not run cargo for the {NVPTX_TARGET} kernels: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        // Cargo prints the whole nested log on failure; keep its errors visible.
        eprintln!("{stderr}");
        let first_error = stderr.lines().find(|l| l.starts_with("error")).unwrap_or("see the log above");
        return Err(format!("building kernels-gpu for {NVPTX_TARGET} failed: {first_error}"));
    }
    if !ptx.is_file() {
        return Err(format!("building kernels-gpu succeeded but wrote no PTX at {}", ptx.display()));
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
