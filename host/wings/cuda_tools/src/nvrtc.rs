//! NVRTC, NVIDIA's CUDA C++ compiler as a library, for the CUDA C++ baseline
//! ([`crate::baseline`]): CUDA C++ source to PTX, on the CPU, no GPU needed.
//!
//! cudarc's bindings load `libnvrtc` at run time by its file name only, through the
//! dynamic loader's search path, and panic when it is not there. [`Nvrtc::find`] first
//! finds the library where `crate::tools::find_nvrtc` looks
//! (`.cuda-tools/`, `$BITEXACT_CUDA_TOOLS`, `$CUDA_HOME`) and loads it by its full
//! path; the loader then answers cudarc's lookup by name (`libnvrtc.so.12`, the
//! library's soname) with that copy. If the library cannot be found or loaded, `find`
//! returns an error and cudarc is never asked, so nothing panics.
//!
//! The module's three `unsafe` calls load the library and ask it for its version; the
//! compilation itself goes through cudarc's safe API.
#![allow(unsafe_code)]

use crate::tools::{self, ToolError, check_arch};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// NVRTC, loaded, with the CUDA headers' folder.
#[derive(Clone, Debug)]
pub struct Nvrtc {
    /// The loaded `libnvrtc.so.12`.
    pub library: PathBuf,
    /// The folder of `cuda_fp16.h`, passed to every compilation as `--include-path`.
    pub include_dir: PathBuf,
    /// NVRTC's version, `(major, minor)`.
    pub version: (i32, i32),
}

/// Why NVRTC could not be had, or a compilation failed. `Display` is one line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NvrtcError {
    /// The library or the headers are not installed.
    #[error(transparent)]
    NotFound(#[from] ToolError),
    /// The library is there but could not be loaded.
    #[error("cannot load {}: {}", .path.display(), one_line(.reason))]
    Load {
        /// The library.
        path: PathBuf,
        /// The loader's message.
        reason: String,
    },
    /// NVRTC rejected the source.
    #[error("NVRTC failed on {name} ({}): {}", .options.join(" "), one_line(first_error(.log)))]
    Compile {
        /// The source's name.
        name: String,
        /// The options it was compiled with.
        options: Vec<String>,
        /// NVRTC's log.
        log: String,
    },
}

/// The first line of NVRTC's `log` that says "error", else its first line.
fn first_error(log: &str) -> &str {
    log.lines().find(|l| l.contains("error")).or(log.lines().next()).unwrap_or("no log")
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The library loaded by [`load`], kept for the life of the process (cudarc keeps its
/// own handle to it), or why it could not be.
static LOADED: OnceLock<Result<libloading::Library, libloading::Error>> = OnceLock::new();

/// Loads `path` once per process; a later call with another path keeps the first.
fn load(path: &Path) -> Result<(), NvrtcError> {
    let loaded = LOADED.get_or_init(|| {
        // SAFETY: loading libnvrtc runs its initialisers, which have no preconditions;
        // the handle is never closed, so no symbol outlives it.
        unsafe { libloading::Library::new(path) }
    });
    let error = |reason: String| NvrtcError::Load { path: path.to_path_buf(), reason };
    loaded.as_ref().map_err(|e| error(e.to_string()))?;
    // SAFETY: only asks the loader whether one of cudarc's names resolves.
    if unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(error(format!("loaded, but the loader does not answer cudarc's lookup by name ({})", tools::NVRTC_LIBRARY)))
    }
}

impl Nvrtc {
    /// Finds the library and the headers, and loads the library.
    ///
    /// Where they are found is the environment's to say (`$BITEXACT_CUDA_TOOLS`,
    /// `$CUDA_HOME`, a `.cuda-tools/` folder in or above the current directory): the
    /// library found is loaded and runs its initialisers, as cudarc's safe calls load the
    /// CUDA driver found on the loader's path. The trust in those files is the
    /// environment's, not this function's caller's; the one place where it decides what
    /// safe code may do on a GPU, loading the C++ baseline's PTX, is `unsafe`
    /// ([`crate::cxx_gpu::FormsPtx::load`]).
    pub fn find() -> Result<Nvrtc, NvrtcError> {
        let library = tools::find_nvrtc()?;
        let include_dir = tools::find_cuda_include()?;
        load(&library)?;
        let (mut major, mut minor) = (0, 0);
        // SAFETY: the library is loaded (above); nvrtcVersion writes the two ints.
        unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
            .result()
            .map_err(|e| NvrtcError::Load { path: library.clone(), reason: format!("nvrtcVersion: {e:?}") })?;
        let version = (major, minor);
        Ok(Nvrtc { library, include_dir, version })
    }

    /// Compiles `source` (named `name` in messages) to PTX for the virtual architecture
    /// of `arch` (`sm_90` → `compute_90`), with `options` after the architecture and the
    /// include path. Fails on a malformed `arch` before running anything.
    pub fn compile(&self, source: &str, name: &str, arch: &str, options: &[&str]) -> Result<String, NvrtcError> {
        check_arch(arch)?;
        let virtual_arch = format!("--gpu-architecture={}", arch.replacen("sm_", "compute_", 1));
        let mut all = vec![virtual_arch];
        all.extend(options.iter().map(|o| o.to_string()));
        let compile_options = cudarc::nvrtc::CompileOptions {
            include_paths: vec![self.include_dir.display().to_string()],
            options: all.clone(),
            name: Some(name.to_string()),
            ..Default::default()
        };
        match cudarc::nvrtc::compile_ptx_with_opts(source, compile_options) {
            Ok(ptx) => Ok(ptx.to_src()),
            Err(cudarc::nvrtc::CompileError::CompileError { log, .. }) => Err(NvrtcError::Compile {
                name: name.to_string(),
                options: all,
                log: log.to_string_lossy().into_owned(),
            }),
            Err(other) => Err(NvrtcError::Compile { name: name.to_string(), options: all, log: format!("{other:?}") }),
        }
    }
}
