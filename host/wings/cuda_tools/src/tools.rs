//! The CUDA command-line tools (`ptxas`, `cuobjdump`, `nvdisasm`): finding them without
//! a CUDA install, assembling PTX to a cubin and disassembling it to SASS.
//!
//! `scripts/install-cuda-tools.sh` puts pinned copies from PyPI into `.cuda-tools/` at
//! the workspace root; [`find`] looks there among other places. The CUDA C++ baseline
//! also needs NVRTC (`libnvrtc.so.12`) and the CUDA headers (`cuda_fp16.h` ...), which
//! the same script installs there: `find_nvrtc` and `find_cuda_include` look for them
//! the way [`find`] looks for the tools.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

#[doc(hidden)]
pub use ptx_builder::TOOLS_DIR_VAR;
use ptx_builder::{find_below_in, is_executable};

/// Environment switch that makes tests needing the tools fail instead of skipping; see
/// [`bitexact_support::skip`].
pub const REQUIRE_CUDA_TOOLS: &str = "REQUIRE_CUDA_TOOLS";

/// What to run, from the repository's root, to get the tools (into `.cuda-tools/`); the
/// errors of a tool not found say it.
pub const INSTALL_COMMAND: &str = "scripts/install-cuda-tools.sh";

/// The project-local install folder, relative to the workspace root.
const LOCAL_DIR: &str = ".cuda-tools";

/// How deep below a tools folder [`find`] looks for `bin/<tool>`
/// (`.cuda-tools/nvidia/cuda_nvcc/bin/ptxas` is at depth 3).
const SEARCH_DEPTH: usize = 5;

/// The architectures the pinned `ptxas` (CUDA 12.9) assembles for, oldest first: the
/// default of the SASS report and what the tests assemble for.
pub const ARCHS: [&str; 7] = ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"];

/// One of the CUDA command-line tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    /// PTX assembler.
    Ptxas,
    /// cubin/fatbin dumper (SASS listings).
    Cuobjdump,
    /// cubin disassembler.
    Nvdisasm,
}

impl Tool {
    /// Every tool.
    #[doc(hidden)]
    pub const ALL: [Tool; 3] = [Tool::Ptxas, Tool::Cuobjdump, Tool::Nvdisasm];

    /// The executable's file name.
    pub const fn name(self) -> &'static str {
        match self {
            Tool::Ptxas => "ptxas",
            Tool::Cuobjdump => "cuobjdump",
            Tool::Nvdisasm => "nvdisasm",
        }
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a tool could not be found or did not do its job. `Display` is one line a user can
/// act on; an I/O failure is in it, not behind `source()`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool is in none of the places looked in.
    #[error("{tool} not found {}", not_found_where(.override_dir.as_deref(), "PATH, $CUDA_HOME/bin"))]
    NotFound {
        /// The missing tool.
        tool: Tool,
        /// `$BITEXACT_CUDA_TOOLS`, when it was set (then the only place looked in).
        override_dir: Option<PathBuf>,
    },
    /// NVRTC's library or the CUDA headers (for the C++ baseline) are in none of the
    /// places looked in.
    #[error("{file} (for the CUDA C++ baseline) not found {}", not_found_where(.override_dir.as_deref(), "$CUDA_HOME"))]
    BaselineFileNotFound {
        /// What was looked for: `libnvrtc.so.12` or `include/cuda_fp16.h`.
        file: &'static str,
        /// `$BITEXACT_CUDA_TOOLS`, when it was set (then the only place looked in).
        override_dir: Option<PathBuf>,
    },
    /// An architecture name that is not of the form `sm_NN` (with an optional letter).
    #[error("bad architecture {:?}: expected a name like sm_90 (known: {})", .0, ARCHS.join(", "))]
    BadArch(String),
    /// A file or process operation failed.
    #[error("{action}: {error}")]
    Io {
        /// What was being done.
        action: String,
        /// The underlying error.
        error: io::Error,
    },
    /// The tool ran and reported failure.
    #[error("`{command}` failed ({status}): {}", first_line(.stderr))]
    Failed {
        /// The tool and its arguments, as run.
        command: String,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// Everything it wrote to stderr.
        stderr: String,
    },
}

/// Where a tool or file was looked for, with what to do: in `$BITEXACT_CUDA_TOOLS` alone
/// when it is set, else in [`LOCAL_DIR`], then `also`.
fn not_found_where(override_dir: Option<&Path>, also: &str) -> String {
    match override_dir {
        Some(dir) => format!(
            "in ${TOOLS_DIR_VAR} ({}): point it at the folder {INSTALL_COMMAND} fills, or unset it",
            dir.display()
        ),
        None => format!("(looked in {LOCAL_DIR}/, {also}): run {INSTALL_COMMAND}"),
    }
}

/// The first non-blank line of a tool's stderr, its spaces collapsed.
fn first_line(stderr: &str) -> String {
    let line = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("no message");
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The path of an executable `tool`, looked for in this order:
/// 1. `$BITEXACT_CUDA_TOOLS` if set, and then nowhere else ([`TOOLS_DIR_VAR`]);
/// 2. `.cuda-tools/` in this workspace's root (known at compile time), then in the current
///    directory and each of its ancestors;
/// 3. each folder of `PATH`;
/// 4. `$CUDA_HOME/bin`.
///
/// Inside a tools folder the tool may sit directly, in `bin/`, or in any `bin/` folder up
/// to a few levels down (where the PyPI wheels put it). The error names what to run.
pub fn find(tool: Tool) -> Result<PathBuf, ToolError> {
    if let Some(dir) = override_dir() {
        return find_below(&dir, tool.name(), SEARCH_DEPTH)
            .ok_or(ToolError::NotFound { tool, override_dir: Some(dir) });
    }
    let path_dirs = std::env::var_os("PATH").map(|p| std::env::split_paths(&p).collect::<Vec<_>>()).unwrap_or_default();
    let cuda_home = std::env::var_os("CUDA_HOME").map(|h| PathBuf::from(h).join("bin"));
    local_dirs()
        .filter_map(|dir| find_below(&dir, tool.name(), SEARCH_DEPTH))
        .chain(path_dirs.iter().chain(&cuda_home).map(|dir| dir.join(tool.name())).filter(|p| is_executable(p)))
        .next()
        .ok_or(ToolError::NotFound { tool, override_dir: None })
}

/// `$BITEXACT_CUDA_TOOLS`, when set and not empty.
fn override_dir() -> Option<PathBuf> {
    std::env::var_os(TOOLS_DIR_VAR).filter(|d| !d.is_empty()).map(PathBuf::from)
}

/// `.cuda-tools/` in this workspace's root (known at compile time), then in the current
/// directory and each of its ancestors.
fn local_dirs() -> impl Iterator<Item = PathBuf> {
    // host/wings/cuda_tools → the workspace root
    let workspace_root = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(3).map(Path::to_path_buf);
    let current_dir = std::env::current_dir().ok();
    let ancestors: Vec<PathBuf> = current_dir.iter().flat_map(|d| d.ancestors()).map(Path::to_path_buf).collect();
    workspace_root.into_iter().chain(ancestors).map(|d| d.join(LOCAL_DIR))
}

/// The NVRTC library (`libnvrtc.so.12`, NVRTC 12.x) for the CUDA C++ baseline, looked
/// for as [`find`] looks for a tool, but in `lib/` folders (where the
/// `nvidia-cuda-nvrtc-cu12` wheel puts it) and, after `.cuda-tools/`, in
/// `$CUDA_HOME/lib64`. Not loaded here: see [`crate::nvrtc`].
pub(crate) fn find_nvrtc() -> Result<PathBuf, ToolError> {
    find_baseline_file(NVRTC_LIBRARY, "lib", &["lib64", "lib"])
}

/// The folder holding the CUDA headers the C++ baseline includes (`cuda_fp16.h`,
/// `cuda_bf16.h`, `cuda_fp8.h`; NVRTC needs `-I` to it), looked for as
/// [`find_nvrtc`] looks for the library, in `include/` folders (the
/// `nvidia-cuda-runtime-cu12` wheel's) and then `$CUDA_HOME/include`.
pub(crate) fn find_cuda_include() -> Result<PathBuf, ToolError> {
    let header = find_baseline_file("cuda_fp16.h", "include", &["include"])?;
    Ok(header.parent().map(Path::to_path_buf).unwrap_or_default())
}

/// The file name of the NVRTC library the baseline loads.
pub(crate) const NVRTC_LIBRARY: &str = "libnvrtc.so.12";

/// `name` in a `folder` folder below `$BITEXACT_CUDA_TOOLS` (and only there, when set),
/// else below `.cuda-tools/`, else in one of `cuda_home_dirs` of `$CUDA_HOME`.
fn find_baseline_file(name: &'static str, folder: &str, cuda_home_dirs: &[&str]) -> Result<PathBuf, ToolError> {
    let file = if folder == "include" { "include/cuda_fp16.h" } else { name };
    let is_file = |p: &Path| p.is_file();
    if let Some(dir) = override_dir() {
        return find_below_in(&dir, folder, name, SEARCH_DEPTH, is_file)
            .ok_or(ToolError::BaselineFileNotFound { file, override_dir: Some(dir) });
    }
    let cuda_home = std::env::var_os("CUDA_HOME").map(PathBuf::from);
    local_dirs()
        .filter_map(|dir| find_below_in(&dir, folder, name, SEARCH_DEPTH, is_file))
        .chain(
            cuda_home
                .iter()
                .flat_map(|home| cuda_home_dirs.iter().map(|d| home.join(d).join(name)))
                .filter(|p| p.is_file()),
        )
        .next()
        .ok_or(ToolError::BaselineFileNotFound { file, override_dir: None })
}

/// `dir/name`, else the first `bin/name` (in sorted order, breadth first) at most `depth`
/// folders below `dir`, if it is an executable file.
fn find_below(dir: &Path, name: &str, depth: usize) -> Option<PathBuf> {
    find_below_in(dir, "bin", name, depth, is_executable)
}

/// The tools the PTX checks and the SASS report need, both found.
#[derive(Clone, Debug)]
pub struct CudaTools {
    /// `ptxas`.
    pub ptxas: PathBuf,
    /// `cuobjdump`.
    pub cuobjdump: PathBuf,
}

/// PTX assembled for one architecture: the cubin lives in a temporary folder that is
/// removed when this is dropped.
pub struct Assembled {
    /// The architecture, e.g. `sm_90`.
    pub arch: String,
    /// What `ptxas -v` printed: per-function resource usage, see [`resource_usage`].
    pub ptxas_log: String,
    cubin: PathBuf,
    _dir: tempfile::TempDir,
}

impl CudaTools {
    /// Finds `ptxas` and `cuobjdump` with [`find`]; the error names the first one missing.
    pub fn find() -> Result<CudaTools, ToolError> {
        Ok(CudaTools { ptxas: find(Tool::Ptxas)?, cuobjdump: find(Tool::Cuobjdump)? })
    }

    /// Assembles `ptx` with `ptxas -v -arch=<arch>` in a fresh temporary folder.
    /// Fails on a malformed `arch` (before running anything) or if ptxas fails.
    pub fn assemble(&self, ptx: &str, arch: &str) -> Result<Assembled, ToolError> {
        check_arch(arch)?;
        let dir = tempfile::Builder::new()
            .prefix("bitexact-ptxas-")
            .tempdir()
            .map_err(|error| ToolError::Io { action: "creating a temporary folder".into(), error })?;
        let ptx_file = dir.path().join("kernels.ptx");
        let cubin = dir.path().join(format!("kernels.{arch}.cubin"));
        std::fs::write(&ptx_file, ptx)
            .map_err(|error| ToolError::Io { action: format!("writing {}", ptx_file.display()), error })?;
        let mut command = Command::new(&self.ptxas);
        command.arg("-v").arg(format!("-arch={arch}")).arg(&ptx_file).arg("-o").arg(&cubin);
        let output = run(command)?;
        // ptxas prints its `-v` report on stderr; keep both streams.
        let ptxas_log = output.stdout + &output.stderr;
        Ok(Assembled { arch: arch.to_string(), ptxas_log, cubin, _dir: dir })
    }

    /// The SASS listing of an assembled cubin (`cuobjdump -sass`), see
    /// [`crate::sass::parse_listing`].
    pub fn disassemble(&self, assembled: &Assembled) -> Result<String, ToolError> {
        let mut command = Command::new(&self.cuobjdump);
        command.arg("-sass").arg(&assembled.cubin);
        // cuobjdump 13.x warns on stderr about a 12.x cubin's ELF layout; harmless.
        Ok(run(command)?.stdout)
    }
}

/// Accepts `sm_` followed by digits and an optional lowercase letter suffix (`sm_90a`);
/// whether ptxas knows the architecture is for ptxas to say.
pub fn check_arch(arch: &str) -> Result<(), ToolError> {
    let number = arch.strip_prefix("sm_").unwrap_or("");
    let digits = number.trim_end_matches(|c: char| c.is_ascii_lowercase());
    let well_formed =
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && number.len() - digits.len() <= 1;
    if well_formed { Ok(()) } else { Err(ToolError::BadArch(arch.to_string())) }
}

/// A tool's captured output.
struct Captured {
    stdout: String,
    stderr: String,
}

/// Runs `command` to completion; an error if it cannot start or exits unsuccessfully.
fn run(mut command: Command) -> Result<Captured, ToolError> {
    // Tools by name and files by file name: the full paths are long and temporary.
    let shown = std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|a| Path::new(a).file_name().unwrap_or(a).to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let output = command.output().map_err(|error| ToolError::Io { action: format!("running {shown}"), error })?;
    let captured = Captured {
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    if output.status.success() {
        Ok(captured)
    } else {
        Err(ToolError::Failed { command: shown, status: output.status, stderr: captured.stderr })
    }
}

/// Local-memory use of one function, from `ptxas -v`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionResources {
    /// The function (a kernel or a `.func`).
    pub function: String,
    /// Bytes of stack frame (local memory).
    pub stack_frame_bytes: u64,
    /// Bytes of register spill stores.
    pub spill_store_bytes: u64,
    /// Bytes of register spill loads.
    pub spill_load_bytes: u64,
}

impl FunctionResources {
    /// No stack frame and no spills: the function uses registers only.
    #[doc(hidden)]
    pub fn registers_only(&self) -> bool {
        self.stack_frame_bytes == 0 && self.spill_store_bytes == 0 && self.spill_load_bytes == 0
    }
}

/// Every function in a `ptxas -v` log, in log order: the line after
/// `Function properties for NAME` reads
/// `N bytes stack frame, N bytes spill stores, N bytes spill loads`.
/// A function whose properties line does not read so is returned with `u64::MAX` in the
/// fields that could not be read, so a check for zero fails on it.
pub fn resource_usage(ptxas_log: &str) -> Vec<FunctionResources> {
    let mut lines = ptxas_log.lines();
    let mut functions = Vec::new();
    while let Some(line) = lines.next() {
        let Some((_, name)) = line.split_once("Function properties for ") else { continue };
        let properties = lines.next().unwrap_or("");
        let bytes_of = |what: &str| {
            properties
                .split(',')
                .find_map(|part| part.trim().strip_suffix(what)?.strip_suffix(" bytes ")?.parse().ok())
                .unwrap_or(u64::MAX)
        };
        functions.push(FunctionResources {
            function: name.trim().to_string(),
            stack_frame_bytes: bytes_of("stack frame"),
            spill_store_bytes: bytes_of("spill stores"),
            spill_load_bytes: bytes_of("spill loads"),
        });
    }
    functions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tool_says_where_it_was_looked_for_and_what_to_do() {
        let none = ToolError::NotFound { tool: Tool::Ptxas, override_dir: None };
        assert_eq!(
            none.to_string(),
            format!("ptxas not found (looked in {LOCAL_DIR}/, PATH, $CUDA_HOME/bin): run {INSTALL_COMMAND}")
        );
        let set = ToolError::BaselineFileNotFound { file: "libnvrtc.so.12", override_dir: Some("/x".into()) };
        assert_eq!(
            set.to_string(),
            format!(
                "libnvrtc.so.12 (for the CUDA C++ baseline) not found in ${TOOLS_DIR_VAR} (/x): point it at the folder {INSTALL_COMMAND} fills, or unset it"
            )
        );
    }

    #[test]
    fn resource_usage_reads_every_function() {
        let log = "ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'a' for 'sm_90'
ptxas info    : Function properties for a
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 18 registers, used 0 barriers
ptxas info    : Function properties for b
    16 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads
ptxas info    : Function properties for c
    garbled
";
        let found = resource_usage(log);
        let fields: Vec<(&str, u64, u64, u64)> = found
            .iter()
            .map(|f| (f.function.as_str(), f.stack_frame_bytes, f.spill_store_bytes, f.spill_load_bytes))
            .collect();
        assert_eq!(fields, [("a", 0, 0, 0), ("b", 16, 4, 8), ("c", u64::MAX, u64::MAX, u64::MAX)]);
        assert!(found[0].registers_only());
        assert!(!found[1].registers_only() && !found[2].registers_only());
    }

    #[test]
    fn arch_names_are_checked_before_anything_runs() {
        for good in ARCHS.into_iter().chain(["sm_90a", "sm_100f"]) {
            assert!(check_arch(good).is_ok(), "{good}");
        }
        for bad in ["", "sm_", "sm90", "90", "sm_9x0", "sm_90ab", "-o", "sm_90 -v", "compute_90"] {
            assert!(matches!(check_arch(bad), Err(ToolError::BadArch(_))), "{bad}");
        }
    }

    #[test]
    fn find_below_looks_in_bin_folders_only() {
        let dir = tempfile::tempdir().expect("temporary folder");
        let nested = dir.path().join("nvidia/cuda_nvcc/bin");
        let stray = dir.path().join("nvidia/lib");
        std::fs::create_dir_all(&nested).expect("create bin");
        std::fs::create_dir_all(&stray).expect("create lib");
        for folder in [&nested, &stray] {
            make_executable(&folder.join("ptxas"));
        }
        assert_eq!(find_below(dir.path(), "ptxas", SEARCH_DEPTH), Some(nested.join("ptxas")));
        assert_eq!(find_below(dir.path(), "ptxas", 2), None, "bin/ is 3 levels down");
        assert_eq!(find_below(dir.path(), "nvdisasm", SEARCH_DEPTH), None);
        make_executable(&dir.path().join("ptxas"));
        assert_eq!(find_below(dir.path(), "ptxas", SEARCH_DEPTH), Some(dir.path().join("ptxas")));
    }

    #[test]
    fn nvrtc_and_the_headers_are_found_in_lib_and_include_folders_only() {
        let dir = tempfile::tempdir().expect("temporary folder");
        let lib = dir.path().join("nvidia/cuda_nvrtc/lib");
        let include = dir.path().join("nvidia/cuda_runtime/include");
        let stray = dir.path().join("nvidia/cuda_nvrtc/bin");
        for folder in [&lib, &include, &stray] {
            std::fs::create_dir_all(folder).expect("create");
        }
        std::fs::write(stray.join(NVRTC_LIBRARY), "").expect("write");
        let is_file = |p: &Path| p.is_file();
        assert_eq!(find_below_in(dir.path(), "lib", NVRTC_LIBRARY, SEARCH_DEPTH, is_file), None, "not in bin/");
        std::fs::write(lib.join(NVRTC_LIBRARY), "").expect("write");
        std::fs::write(include.join("cuda_fp16.h"), "").expect("write");
        assert_eq!(
            find_below_in(dir.path(), "lib", NVRTC_LIBRARY, SEARCH_DEPTH, is_file),
            Some(lib.join(NVRTC_LIBRARY))
        );
        assert_eq!(
            find_below_in(dir.path(), "include", "cuda_fp16.h", SEARCH_DEPTH, is_file),
            Some(include.join("cuda_fp16.h"))
        );
        let message = ToolError::BaselineFileNotFound { file: NVRTC_LIBRARY, override_dir: None }.to_string();
        assert!(message.starts_with("libnvrtc.so.12 (for the CUDA C++ baseline) not found"), "{message}");
        assert!(message.ends_with(INSTALL_COMMAND) && !message.contains('\n'), "{message}");
    }

    fn make_executable(path: &Path) {
        std::fs::write(path, "#!/bin/sh\n").expect("write");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
    }

    #[test]
    fn not_found_says_what_to_run() {
        let message = ToolError::NotFound { tool: Tool::Ptxas, override_dir: None }.to_string();
        assert!(message.starts_with("ptxas not found") && message.ends_with(INSTALL_COMMAND), "{message}");
        assert!(!message.contains('\n'));
    }
}
