//! Builds a `no_std` kernel crate to PTX from a `build.rs`, with rustc's own
//! `nvptx64-nvidia-cuda` target: the counterpart of Rust-CUDA's
//! `cuda_builder::CudaBuilder::new(path).build()`.
//!
//! ```no_run
//! // build.rs of the host crate (`ptx-builder` in its [build-dependencies]);
//! // `../my-kernels` is a `no_std` crate of `extern "ptx-kernel"` functions
//! // (crate-type `rlib`).
//! ptx_builder::PtxBuilder::new("../my-kernels").build_or_exit();
//! // Wrote `$OUT_DIR/my_kernels.ptx`, for sm_75; the host embeds it with
//! // include_str!(concat!(env!("OUT_DIR"), "/my_kernels.ptx"))
//! ```
//!
//! Several modules of the same crate (one per PTX target, each with its own `--cfg`s and
//! environment) are [`Module`]s:
//!
//! ```no_run
//! use ptx_builder::{Module, PtxBuilder, Target};
//! PtxBuilder::new("../my-kernels")
//!     .module(Module::new("kernels.ptx", Target::new(75)))
//!     .module(Module::new("kernels_sm_89.ptx", Target::new(89).with_ptx_version(81)).cfg("newer_only"))
//!     .build_or_exit();
//! ```
//!
//! What [`PtxBuilder::build`] does, per module, all modules at the same time:
//!
//! * runs `cargo rustc --manifest-path <crate>/Cargo.toml --release --target
//!   nvptx64-nvidia-cuda -Zbuild-std=core -- -C codegen-units=1 --emit=asm=<file>`
//!   ([`PtxBuilder::command`]) with its own `--target-dir` (the outer build holds the
//!   lock on the normal one, and cargo puts RUSTFLAGS after `cargo rustc`'s own
//!   arguments, so modules cannot share one), kept under the outer target folder for
//!   every run of the build script (check, test, doc, each profile) to reuse, so that
//!   `core` is compiled once per module; none of the outer build's
//!   flags ([`SCRUBBED_ENV`]), and `-C target-cpu` (and the PTX version) in RUSTFLAGS so
//!   the build-std crates (`core`, `compiler_builtins`) get them too;
//! * passes on the nested build's warnings (`cargo::warning=` lines, so cargo shows
//!   them) and, if it fails, its errors;
//! * checks the PTX it wrote ([`check_ptx`]), naming the function that holds each
//!   problem, demangled ([`symbol`]): the module's `.target`, no `.extern` declaration
//!   but shared memory, no call to a function the module does not define, no call into
//!   core's panic machinery, no kernel with a mangled name, no aligned block barrier and
//!   no barrier or warp collective in inline assembly ([`convergence`]), no 8- or 16-bit
//!   store of a float-written register ([`guards`]);
//! * assembles it with `ptxas` for the module's target when ptxas is found
//!   ([`find_ptxas`]), and reports ptxas's error as a build error.
//!
//! `-Zbuild-std` needs the nightly toolchain's `rust-src` component; its absence is
//! reported with the command that installs it.
//!
//! Besides, for the workspace's tests: [`skip`], the one way a test skips for want of a
//! tool, a GPU or a library (`skipped: <reason>` on stderr, which the test harness does
//! not capture) and reads the `REQUIRE_*` switch that makes that skip a failure.

mod check;
pub mod convergence;
mod diagnostics;
pub mod guards;
pub mod ptx_text;
mod ptxas;
pub mod skip;
pub mod symbol;
pub mod watch;

pub use check::{PtxProblem, check_ptx};
pub use diagnostics::{Diagnostics, hint, split_diagnostics};
pub use ptxas::{TOOLS_DIR_VAR, find_below_in, find_ptxas, is_executable};

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// rustc's target for NVIDIA GPUs.
pub const NVPTX_TARGET: &str = "nvptx64-nvidia-cuda";

/// The environment variables of the outer build that the nested cargo must not see:
/// its flags (for the host target), its jobserver, its wrappers, its target and target
/// directory.
pub const SCRUBBED_ENV: [&str; 9] = [
    "CARGO_ENCODED_RUSTFLAGS",
    "RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_MAKEFLAGS",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTC_WRAPPER",
    "CARGO_BUILD_TARGET",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET_DIR",
];

/// A PTX target: the architecture (`.target sm_XX`) and, optionally, the PTX ISA version
/// (`.version`) the module asks for; without one, LLVM's default for the architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// The architecture `sm_XX` as the number XX (75 for sm_75).
    pub sm: u32,
    /// The PTX ISA version times ten (81 for 8.1), or `None` for LLVM's default.
    pub ptx: Option<u32>,
}

impl Target {
    /// `sm_XX` with LLVM's default PTX version.
    pub const fn new(sm: u32) -> Target {
        Target { sm, ptx: None }
    }

    /// The same architecture with PTX ISA version `ptx` (times ten).
    pub const fn with_ptx_version(self, ptx: u32) -> Target {
        Target { ptx: Some(ptx), ..self }
    }

    /// The RUSTFLAGS that select this target: `-C target-cpu=sm_XX`, and
    /// `-C target-feature=+ptxNN` with a PTX version.
    pub fn rustflags(self) -> String {
        match self.ptx {
            None => format!("-C target-cpu=sm_{}", self.sm),
            Some(ptx) => format!("-C target-cpu=sm_{} -C target-feature=+ptx{ptx}", self.sm),
        }
    }
}

/// `sm_75`.
impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}", self.sm)
    }
}

/// One PTX file built from the kernel crate: its file name under the output folder, its
/// target, and what its build gets besides (`--cfg`s, environment variables).
#[derive(Clone, Debug)]
pub struct Module {
    file: String,
    target: Target,
    cfgs: Vec<String>,
    env: Vec<(String, OsString)>,
}

impl Module {
    /// The module written to `file` (a file name, e.g. `kernels.ptx`) for `target`.
    pub fn new(file: impl Into<String>, target: Target) -> Module {
        Module { file: file.into(), target, cfgs: Vec::new(), env: Vec::new() }
    }

    /// Passes `--cfg <cfg>` to the kernel crate's rustc.
    pub fn cfg(mut self, cfg: impl Into<String>) -> Module {
        self.cfgs.push(cfg.into());
        self
    }

    /// Sets an environment variable for this module's nested build (for `env!` in the
    /// kernel crate).
    pub fn env(mut self, key: impl Into<String>, value: impl AsRef<OsStr>) -> Module {
        self.env.push((key.into(), value.as_ref().to_os_string()));
        self
    }

    /// The file name.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// The target.
    pub fn target(&self) -> Target {
        self.target
    }

    /// The folder name of this module's nested target directory: one per target (its
    /// `RUSTFLAGS`), so that every kernel crate built for it shares one build of `core`.
    fn target_dir_name(&self) -> String {
        match self.target.ptx {
            None => format!("nvptx-sm_{}", self.target.sm),
            Some(ptx) => format!("nvptx-sm_{}-ptx{ptx}", self.target.sm),
        }
    }
}

/// A module that was built and checked.
#[derive(Clone, Debug)]
pub struct BuiltModule {
    /// Where its PTX is.
    pub path: PathBuf,
    /// Its target.
    pub target: Target,
    /// Whether ptxas assembled it (false: ptxas was not found).
    pub assembled: bool,
}

/// Why a build failed. `Display` is one line; [`Error::details`] has the compiler's or
/// ptxas's own messages. An I/O failure is in the line, not behind `source()`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A variable cargo sets for build scripts is missing (not run from a build script,
    /// and no explicit value given).
    #[error("${0} is not set: run the builder from a build script")]
    NotInBuildScript(&'static str),
    /// The toolchain has no `rust-src`, which `-Zbuild-std=core` needs.
    #[error(
        "building for {NVPTX_TARGET} needs the rust-src component (for -Zbuild-std=core), missing from {}; install it with: rustup component add rust-src",
        .sysroot.display()
    )]
    NoRustSrc {
        /// The toolchain's sysroot.
        sysroot: PathBuf,
    },
    /// Running a program (cargo, rustc, ptxas) or reading or writing a file failed.
    #[error("{action}: {error}")]
    Io {
        /// What was being done.
        action: String,
        /// The cause.
        error: std::io::Error,
    },
    /// The nested cargo failed.
    #[error(
        "building {module} for {NVPTX_TARGET} ({target}) failed: {}{}",
        first_compile_error(.errors),
        diagnostics::hint(&.errors.join("\n"))
    )]
    Compile {
        /// The module's file name.
        module: String,
        /// Its target.
        target: Target,
        /// The errors the compiler printed.
        errors: Vec<String>,
    },
    /// The PTX written breaks a check of [`check_ptx`].
    #[error("{}: {} problem(s), the first: {}", .path.display(), .problems.len(), first_problem(.problems))]
    Check {
        /// The PTX file.
        path: PathBuf,
        /// What is wrong.
        problems: Vec<PtxProblem>,
    },
    /// The kernel crate's path dependencies could not be read.
    #[error(transparent)]
    Watch(#[from] watch::WatchError),
    /// ptxas rejected the PTX.
    #[error("ptxas -arch={target} rejects {}: {}", .path.display(), first_ptxas_error(.log))]
    Ptxas {
        /// The PTX file.
        path: PathBuf,
        /// Its target.
        target: Target,
        /// What ptxas printed.
        log: String,
    },
}

impl Error {
    /// The messages behind the one-line `Display`: the compiler's errors, the PTX
    /// problems, or ptxas's log.
    pub fn details(&self) -> Vec<String> {
        match self {
            Error::Compile { errors, .. } => errors.clone(),
            Error::Check { problems, .. } => problems.iter().map(ToString::to_string).collect(),
            Error::Ptxas { log, .. } => log.lines().map(str::to_string).collect(),
            _ => Vec::new(),
        }
    }
}

/// The first line of the compiler's first error.
fn first_compile_error(errors: &[String]) -> &str {
    errors.first().and_then(|e| e.lines().next()).unwrap_or("see the log above")
}

/// The first PTX problem, as text.
fn first_problem(problems: &[PtxProblem]) -> String {
    problems.first().map(ToString::to_string).unwrap_or_default()
}

/// The first line of ptxas's `log` that says "error", else its first line.
fn first_ptxas_error(log: &str) -> &str {
    log.lines().find(|l| l.contains("error")).or(log.lines().next()).unwrap_or("")
}

/// The warning of a build that found no ptxas: where it looks.
pub const PTXAS_NOT_FOUND: &str = "ptxas not found (in $BITEXACT_CUDA_TOOLS, or a .cuda-tools/ folder in or above \
     the kernel crate, as scripts/install-cuda-tools.sh lays it out): the PTX is checked but not assembled";

/// Whether and with which ptxas the built PTX is assembled.
#[derive(Clone, Debug)]
enum Ptxas {
    /// The one [`find_ptxas`] finds, if any.
    Find,
    /// This one.
    At(PathBuf),
    /// None.
    Skip,
}

/// Builds a kernel crate to PTX; see the crate docs.
#[derive(Clone, Debug)]
pub struct PtxBuilder {
    crate_dir: PathBuf,
    modules: Vec<Module>,
    out_dir: Option<PathBuf>,
    ptxas: Ptxas,
}

impl PtxBuilder {
    /// The builder for the kernel crate in folder `crate_dir` (relative paths are taken
    /// from the current folder, which in a build script is the package's own).
    pub fn new(crate_dir: impl AsRef<Path>) -> PtxBuilder {
        PtxBuilder {
            crate_dir: crate_dir.as_ref().to_path_buf(),
            modules: Vec::new(),
            out_dir: None,
            ptxas: Ptxas::Find,
        }
    }

    /// Adds a module. Without any, one module is built: `<crate folder name, - as _>.ptx`
    /// for `sm_75`.
    pub fn module(mut self, module: Module) -> PtxBuilder {
        self.modules.push(module);
        self
    }

    /// Writes the PTX (and the nested target directories) under `dir` instead of
    /// `$OUT_DIR`.
    pub fn out_dir(mut self, dir: impl AsRef<Path>) -> PtxBuilder {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Assembles with this ptxas (instead of the one [`find_ptxas`] finds).
    pub fn ptxas(mut self, ptxas: impl AsRef<Path>) -> PtxBuilder {
        self.ptxas = Ptxas::At(ptxas.as_ref().to_path_buf());
        self
    }

    /// Does not run ptxas.
    pub fn without_ptxas(mut self) -> PtxBuilder {
        self.ptxas = Ptxas::Skip;
        self
    }

    /// The modules to build: those added, or the default one.
    pub fn modules(&self) -> Vec<Module> {
        if !self.modules.is_empty() {
            return self.modules.clone();
        }
        let name = self.crate_dir.file_name().map(|n| n.to_string_lossy().replace('-', "_"));
        vec![Module::new(format!("{}.ptx", name.as_deref().unwrap_or("kernels")), Target::new(75))]
    }

    /// Where the modules' nested target directories go: `<target>/nvptx-builds` under
    /// the outer build's target folder (the ancestor of `out_dir` that holds cargo's
    /// `CACHEDIR.TAG`), shared by every kernel crate and every build of it (check, test,
    /// doc and each profile, each of which runs the build script with its own
    /// `$OUT_DIR`), with a folder per target beneath it ([`Module`]'s `target_dir_name`).
    /// So `core` is compiled once per target, not once per crate, module and run (about
    /// 10 s each on two cores); a run with another `$OUT_DIR` recompiles only the kernel
    /// crate, whose `--emit` path differs. Two runs at once wait on the nested cargo's
    /// lock. `out_dir` itself when it is not inside a cargo target folder.
    fn nested_target_root(&self, out_dir: &Path) -> PathBuf {
        match out_dir.ancestors().skip(1).find(|dir| dir.join("CACHEDIR.TAG").is_file()) {
            Some(target) => target.join("nvptx-builds"),
            None => out_dir.to_path_buf(),
        }
    }

    /// The nested cargo command that builds `module` into `out_dir`, with `cargo` the
    /// cargo to run. Pure: it runs nothing.
    pub fn command(&self, cargo: &OsStr, module: &Module, out_dir: &Path) -> Command {
        let mut command = Command::new(cargo);
        command
            .current_dir(&self.crate_dir)
            .arg("rustc")
            .arg("--manifest-path")
            .arg(self.crate_dir.join("Cargo.toml"))
            .args(["--release", "--target", NVPTX_TARGET, "-Zbuild-std=core"])
            .arg("--target-dir")
            .arg(self.nested_target_root(out_dir).join(module.target_dir_name()))
            .args(["--", "-C", "codegen-units=1"]);
        for cfg in &module.cfgs {
            command.args(["--cfg", cfg]);
        }
        let mut emit = OsString::from("--emit=asm=");
        emit.push(out_dir.join(&module.file));
        command.arg(emit);
        for inherited in SCRUBBED_ENV {
            command.env_remove(inherited);
        }
        command.env("RUSTFLAGS", module.target.rustflags());
        // Diagnostics are parsed and passed on as text.
        command.env("CARGO_TERM_COLOR", "never");
        for (key, value) in &module.env {
            command.env(key, value);
        }
        command
    }

    /// Builds every module, checks and assembles it, and prints the nested builds'
    /// warnings as `cargo::warning=` lines and a `cargo::rerun-if-changed` for the
    /// kernel crate and for each of its path dependencies, transitively
    /// ([`watch::path_dependencies`]). Builds all modules before reporting the first
    /// failure.
    pub fn build(&self) -> Result<Vec<BuiltModule>, Error> {
        let out_dir = match &self.out_dir {
            Some(dir) => dir.clone(),
            None => std::env::var_os("OUT_DIR").map(PathBuf::from).ok_or(Error::NotInBuildScript("OUT_DIR"))?,
        };
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
        println!("cargo::rerun-if-changed={}", self.crate_dir.display());
        for dependency in watch::path_dependencies(&cargo, &self.crate_dir)? {
            println!("cargo::rerun-if-changed={}", dependency.display());
        }
        println!("cargo::rerun-if-env-changed={TOOLS_DIR_VAR}");
        check_rust_src(&rustc)?;
        let ptxas = match &self.ptxas {
            Ptxas::Find => {
                let found = find_ptxas(&self.crate_dir);
                if found.is_none() {
                    println!("cargo::warning={PTXAS_NOT_FOUND}");
                }
                found
            }
            Ptxas::At(path) => Some(path.clone()),
            Ptxas::Skip => None,
        };
        let modules = self.modules();
        let outputs: Vec<std::io::Result<Output>> = std::thread::scope(|scope| {
            let running: Vec<_> = modules
                .iter()
                .map(|module| {
                    let mut command = self.command(&cargo, module, &out_dir);
                    scope.spawn(move || command.output())
                })
                .collect();
            running.into_iter().map(|t| t.join().expect("the thread only runs a command")).collect()
        });
        let mut built = Vec::new();
        let mut failures = Vec::new();
        for (module, output) in modules.iter().zip(outputs) {
            match finish(module, output, &out_dir, ptxas.as_deref()) {
                Ok(module) => built.push(module),
                Err(error) => failures.push(error),
            }
        }
        match failures.into_iter().next() {
            Some(first) => Err(first),
            None => Ok(built),
        }
    }

    /// [`PtxBuilder::build`], and on failure prints the error (`cargo::error=`, its
    /// details on stderr, which cargo shows) and exits with status 1.
    pub fn build_or_exit(&self) -> Vec<BuiltModule> {
        self.build().unwrap_or_else(|error| {
            for line in error.details() {
                eprintln!("{line}");
            }
            println!("cargo::error={error}");
            std::process::exit(1)
        })
    }
}

/// Reports a finished nested build: its warnings, then its failure or the checks of
/// the PTX it wrote.
fn finish(
    module: &Module,
    output: std::io::Result<Output>,
    out_dir: &Path,
    ptxas: Option<&Path>,
) -> Result<BuiltModule, Error> {
    let output = output
        .map_err(|error| Error::Io { action: format!("running cargo for {} ({NVPTX_TARGET})", module.file), error })?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let diagnostics = split_diagnostics(&stderr);
    for warning in &diagnostics.warnings {
        for line in warning.lines() {
            println!("cargo::warning={} ({}): {line}", module.file, module.target);
        }
    }
    if !output.status.success() {
        let mut errors = diagnostics.errors;
        if errors.is_empty() {
            errors.push(stderr.trim().to_string());
        }
        return Err(Error::Compile { module: module.file.clone(), target: module.target, errors });
    }
    let path = out_dir.join(&module.file);
    let text = std::fs::read_to_string(&path)
        .map_err(|error| Error::Io { action: format!("reading the PTX {}", path.display()), error })?;
    let problems = check_ptx(&text, module.target);
    if !problems.is_empty() {
        return Err(Error::Check { path, problems });
    }
    let assembled = match ptxas {
        Some(ptxas) => {
            ptxas::assemble(ptxas, &path, module.target)?;
            true
        }
        None => false,
    };
    Ok(BuiltModule { path, target: module.target, assembled })
}

/// `-Zbuild-std` needs the standard library's source: fails with how to get it if
/// `rustc`'s sysroot lacks it.
fn check_rust_src(rustc: &OsStr) -> Result<(), Error> {
    let output = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|error| Error::Io { action: format!("running {} --print sysroot", rustc.to_string_lossy()), error })?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    if sysroot.join("lib/rustlib/src/rust/library/core").is_dir() { Ok(()) } else { Err(Error::NoRustSrc { sysroot }) }
}

#[cfg(test)]
mod tests;
