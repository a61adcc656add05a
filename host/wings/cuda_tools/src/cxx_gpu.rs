//! The CUDA C++ baseline on a GPU: its PTX, precompiled here or compiled by NVRTC, and
//! the comparison of a form's results with the family's exact reference.
//!
//! The GPU machine has no NVRTC of ours, so `bitexact sass --cxx --emit-ptx DIR` writes
//! the PTX of [`baseline::SOURCE`] under every flag set of [`Flags::ALL`] into `DIR`, one
//! file per set ([`ptx_file_name`]: `forms-sm_90-use_fast_math.ptx`), and
//! `scripts/build-gpu-bundle.sh` puts them in the bundle. [`for_device`] reads them from
//! the folder `PTX_DIR_VAR` names, or, without it, compiles them with NVRTC when that
//! is installed. [`misshapen_entries`] checks, without a GPU, that a PTX has each form's
//! kernels with the shapes of the signatures its marker vouches for (`Map`, `Skeleton`,
//! `Latency`, `Throughput`: [`baseline::cxx`]).
//!
//! [`tally`] counts where a form's results differ from the reference (a pure function,
//! tested on the CPU), and [`holds`] says whether that bears out the form's
//! [`Expect`]: exact forms match everywhere, [`Expect::ExactButNanBits`] forms differ
//! only where both results are NaNs, 1-ULP forms differ somewhere and by at most one
//! ULP, the negative control differs somewhere.

use crate::baseline::{self, Expect, Flags, Form};
use crate::nvrtc::{Nvrtc, NvrtcError};
use bitexact_gpu::HostElements;
use bitexact_gpu::{Gpu, GpuError, KernelModule};
use bitexact_verify::cpu::Mismatch;
use bitexact_verify::reference::{self, OutputKind};
use rayon::prelude::*;
use shared::launch::{Param, ParamList};
use shared::{Class, Family, Format};
use std::path::{Path, PathBuf};

/// The environment variable naming the folder of precompiled PTX files
/// (`scripts/gpu-check.sh` sets it to the bundle's `cxx-ptx/`).
pub(crate) const PTX_DIR_VAR: &str = "BITEXACT_CXX_PTX_DIR";

/// The name of the PTX file of [`baseline::SOURCE`] for `arch` under `flags`:
/// `forms-<arch>-<flags slug>.ptx`.
pub fn ptx_file_name(arch: &str, flags: Flags) -> String {
    format!("forms-{arch}-{}.ptx", flags.slug())
}

/// The baseline's PTX under every flag set, for one architecture.
#[derive(Clone, Debug)]
pub struct FormsPtx {
    /// The architecture it was compiled for (`sm_90`: PTX for `compute_90`).
    pub arch: String,
    /// Where it came from, for reports: `NVRTC 12.9` or the folder.
    pub origin: String,
    /// The PTX under each of [`Flags::ALL`], in that order. Private: a `FormsPtx` is
    /// made only by [`compile`] (NVRTC, from [`baseline::SOURCE`]) or [`read`] (files
    /// [`write`] wrote, their kernels' shapes checked), because [`FormsPtx::load`] hands
    /// it to the loader that may use the `cxx_` names the markers vouch for.
    by_flags: Vec<(Flags, String)>,
}

impl FormsPtx {
    /// The PTX under each of [`Flags::ALL`], in that order.
    pub fn by_flags(&self) -> &[(Flags, String)] {
        &self.by_flags
    }

    /// The PTX under `flags`.
    pub fn text(&self, flags: Flags) -> &str {
        self.by_flags.iter().find(|(f, _)| *f == flags).map(|(_, text)| text.as_str()).unwrap_or_default()
    }

    /// Loads the PTX under `flags` on `gpu`, so that the markers of
    /// [`baseline::cxx`] launch its kernels (`KernelModule::map::<cxx::form>`, ...).
    ///
    /// # Safety
    ///
    /// The PTX is [`baseline::SOURCE`] compiled by NVRTC against genuine CUDA headers
    /// ([`compile`] with the tools [`Nvrtc::find`] found), or files [`write()`] wrote
    /// from such a compilation ([`read`], [`for_device`] with `PTX_DIR_VAR` set). The
    /// markers' launches are safe, and their `unsafe impl`s vouch for those kernels only:
    /// the checks made so far see names and parameter widths, not what a kernel touches,
    /// so other PTX with the same entry points (files put in the folder, a header that
    /// redefines what a form calls) lets safe code read or write device memory out of
    /// bounds.
    ///
    /// So loading is `unsafe`:
    ///
    /// ```compile_fail,E0133
    /// # mod bitexact { pub use bitexact_cuda_tools as cuda_tools; pub use bitexact_gpu as gpu; }
    /// # fn f(ptx: &bitexact::cuda_tools::cxx_gpu::FormsPtx, gpu: &bitexact::gpu::Gpu) {
    /// let module = ptx.load(gpu, bitexact::cuda_tools::baseline::Flags::Default);
    /// # }
    /// ```
    #[allow(unsafe_code)] // the contract above; no raw memory is touched here
    pub unsafe fn load(&self, gpu: &Gpu, flags: Flags) -> Result<KernelModule, GpuError> {
        // SAFETY: this PTX is the C++ baseline's, whose markers' `unsafe impl`s this
        // function's own contract (above) passes on to its caller.
        unsafe { gpu.load_reserved_module(self.text(flags)) }
    }
}

/// Why the baseline's PTX could not be had. `Display` is one line, the inner error's
/// text in it (so no variant has a `source()`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CxxPtxError {
    /// NVRTC is missing or failed (no folder was named).
    #[error("{0} (or set {PTX_DIR_VAR} to a folder of precompiled PTX)")]
    Nvrtc(NvrtcError),
    /// Reading or writing a file failed.
    #[error("{}: {error}", .path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// A file of the folder lacks a form's kernel or has it with another signature
    /// ([`misshapen_entries`]): not what `bitexact sass --cxx --emit-ptx` wrote.
    #[error("{}: not the C++ baseline's PTX ({first})", .path.display())]
    Misshapen {
        /// The file.
        path: PathBuf,
        /// The first kernel found wrong, and how.
        first: String,
    },
    /// The folder has no PTX an `sm_<sm>` device runs.
    #[error("{} has no C++ baseline PTX for sm_{sm} or older (found: {})", .dir.display(), listed(.found))]
    NoPtxFor {
        /// The folder.
        dir: PathBuf,
        /// The device's `sm_XX` number.
        sm: i32,
        /// The architectures the folder has PTX for.
        found: Vec<String>,
    },
}

/// `found`, comma-separated, or `none`.
fn listed(found: &[String]) -> String {
    if found.is_empty() { "none".to_string() } else { found.join(", ") }
}

/// [`baseline::SOURCE`] compiled by NVRTC for `arch` under every flag set.
pub fn compile(nvrtc: &Nvrtc, arch: &str) -> Result<FormsPtx, CxxPtxError> {
    let by_flags = Flags::ALL
        .into_iter()
        .map(|flags| Ok((flags, nvrtc.compile(baseline::SOURCE, baseline::SOURCE_NAME, arch, flags.options())?)))
        .collect::<Result<_, NvrtcError>>()
        .map_err(CxxPtxError::Nvrtc)?;
    let (major, minor) = nvrtc.version;
    Ok(FormsPtx { arch: arch.to_string(), origin: format!("NVRTC {major}.{minor}"), by_flags })
}

/// Writes `ptx` into `dir` (created if need be), one file per flag set
/// ([`ptx_file_name`]); returns the files written.
pub fn write(ptx: &FormsPtx, dir: &Path) -> Result<Vec<PathBuf>, CxxPtxError> {
    std::fs::create_dir_all(dir).map_err(|error| CxxPtxError::Io { path: dir.to_path_buf(), error })?;
    ptx.by_flags
        .iter()
        .map(|(flags, text)| {
            let path = dir.join(ptx_file_name(&ptx.arch, *flags));
            std::fs::write(&path, text).map_err(|error| CxxPtxError::Io { path: path.clone(), error })?;
            Ok(path)
        })
        .collect()
}

/// Reads from `dir` the PTX of the newest architecture an `sm_<sm>` device runs (the
/// highest `sm_XX` with `XX <= sm` that has a default-flags file), under every flag set,
/// each file's kernels' names and parameter widths checked ([`misshapen_entries`]). That
/// check cannot see what a kernel touches: loading what was read is
/// [`FormsPtx::load`], whose contract says where the files must come from.
pub fn read(dir: &Path, sm: i32) -> Result<FormsPtx, CxxPtxError> {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CxxPtxError + '_ {
        move |error| CxxPtxError::Io { path: path.to_path_buf(), error }
    }
    let suffix = format!("-{}.ptx", Flags::Default.slug());
    let mut found: Vec<(i32, String)> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            let arch = name.strip_prefix("forms-")?.strip_suffix(&suffix)?.to_string();
            Some((bitexact_gpu::ptx::arch_number(&arch)? as i32, arch))
        })
        .collect();
    found.sort();
    let Some((_, arch)) = found.iter().rev().find(|(number, _)| *number <= sm) else {
        let found = found.into_iter().map(|(_, arch)| arch).collect();
        return Err(CxxPtxError::NoPtxFor { dir: dir.to_path_buf(), sm, found });
    };
    let by_flags = Flags::ALL
        .into_iter()
        .map(|flags| {
            let path = dir.join(ptx_file_name(arch, flags));
            let text = std::fs::read_to_string(&path).map_err(io(&path))?;
            if let Some(first) = misshapen_entries(&text, baseline::FORMS).into_iter().next() {
                return Err(CxxPtxError::Misshapen { path, first });
            }
            Ok((flags, text))
        })
        .collect::<Result<_, CxxPtxError>>()?;
    Ok(FormsPtx { arch: arch.clone(), origin: dir.display().to_string(), by_flags })
}

/// The baseline's PTX for an `sm_<sm>` device: [`read`] from the folder `PTX_DIR_VAR`
/// names if it is set, else [`compile`]d by NVRTC for `sm_<sm>`.
pub fn for_device(sm: i32) -> Result<FormsPtx, CxxPtxError> {
    match std::env::var_os(PTX_DIR_VAR) {
        Some(dir) => read(Path::new(&dir), sm),
        None => compile(&Nvrtc::find().map_err(CxxPtxError::Nvrtc)?, &format!("sm_{sm}")),
    }
}

/// The parameter types of entry `name` in `ptx` (`[".u64", ".u64", ".u64"]`), `None` if
/// it has no such entry.
pub fn entry_params(ptx: &str, name: &str) -> Option<Vec<String>> {
    let mut lines = ptx.lines().map(str::trim);
    lines.find(|line| {
        let rest = line.strip_prefix(".visible .entry ").or_else(|| line.strip_prefix(".entry "));
        rest.and_then(|r| r.split('(').next()).is_some_and(|n| n.trim() == name)
    })?;
    Some(
        lines
            .take_while(|line| !line.starts_with(')'))
            .filter_map(|line| line.strip_prefix(".param")?.split_whitespace().next().map(str::to_string))
            .collect(),
    )
}

/// Each kernel of `forms` that `ptx` lacks, or has with other parameters than its
/// kind's signature, as `name: what is wrong`: the kernel and its skeleton with the
/// `Map` signature's three 64-bit parameters (two pointers and the length), the
/// `_latency` and `_throughput` kernels with the timing signature's 64-bit seed, 32-bit
/// iteration count and 64-bit pointer.
pub fn misshapen_entries(ptx: &str, forms: &[Form]) -> Vec<String> {
    // The kinds' declarations (`shared::kind`), as NVVM writes them (no `.ptr` marks).
    let map = nvvm_params(<shared::kind::Elementwise<u8, u8> as ParamList>::PARAMS);
    let timing = nvvm_params(<shared::kind::Timing as ParamList>::PARAMS);
    forms
        .iter()
        .flat_map(|form| {
            let kernel = form.kernel();
            [
                (form.skeleton(), map.clone()),
                (format!("{kernel}_latency"), timing.clone()),
                (format!("{kernel}_throughput"), timing.clone()),
                (kernel, map.clone()),
            ]
        })
        .filter_map(|(name, shape)| match entry_params(ptx, &name) {
            None => Some(format!("{name}: no such entry")),
            Some(params) if params != shape => Some(format!("{name}: parameters {params:?}, not {shape:?}")),
            Some(_) => None,
        })
        .collect()
}

/// The `.param` types NVVM (NVRTC, nvcc) declares for `params`: a pointer is a plain
/// `.u64`, an integer `.u8` … `.u64` of its width, a float `.f32` or `.f64`.
fn nvvm_params(params: &[Param]) -> Vec<String> {
    params
        .iter()
        .map(|param| match param {
            Param::Float { bytes } => format!(".f{}", bytes * 8),
            other => format!(".u{}", other.bytes() * 8),
        })
        .collect()
}

/// Where a form's results differ from the reference, over some inputs of its domain.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Tally {
    /// Elements compared.
    pub elements: u64,
    /// Elements whose bits differ from the reference's.
    pub mismatches: u64,
    /// Of those, the ones where both the result and the reference are NaNs (of the
    /// family's result format): a NaN in other bits.
    pub nan_bits_only: u64,
    /// The largest distance in ULPs of the other mismatches, for numeric results (`None`
    /// for booleans, or when there are none).
    pub max_ulp: Option<u64>,
    /// The first mismatch, in the order compared.
    pub first: Option<Mismatch>,
}

impl Tally {
    /// Both tallies as one, `self`'s inputs before `other`'s.
    pub fn merge(self, other: Tally) -> Tally {
        Tally {
            elements: self.elements + other.elements,
            mismatches: self.mismatches + other.mismatches,
            nan_bits_only: self.nan_bits_only + other.nan_bits_only,
            max_ulp: self.max_ulp.max(other.max_ulp),
            first: self.first.or(other.first),
        }
    }
}

/// Whether `bits`, a stored result of `family`, is a NaN of its format.
fn is_nan_result(family: Family, bits: u64) -> bool {
    let format = match reference::output_kind(family) {
        OutputKind::F32 => Format::Binary32,
        OutputKind::Float16(format) | OutputKind::Narrow(format) => format,
        OutputKind::Bool | OutputKind::ClassCode | OutputKind::LaneMask | OutputKind::UnormCode => return false,
    };
    reference::class(format, bits) == Class::Nan
}

/// Compares `got` (a kernel's results) with `expected` (the reference's) for `inputs` of
/// `family`'s domain, element by element, on the rayon pool. Panics if the lengths
/// differ (a caller bug).
pub fn tally(family: Family, inputs: &[u64], got: &HostElements, expected: &[u64]) -> Tally {
    assert!(inputs.len() == got.len() && got.len() == expected.len(), "tally: lengths differ");
    const CHUNK: usize = 1 << 16;
    (0..inputs.len().div_ceil(CHUNK))
        .into_par_iter()
        .map(|chunk| {
            let mut t = Tally::default();
            for i in chunk * CHUNK..((chunk + 1) * CHUNK).min(inputs.len()) {
                let (bits, want) = (got.get(i).expect("in range"), expected[i]);
                t.elements += 1;
                if bits == want {
                    continue;
                }
                t.mismatches += 1;
                t.first = t.first.or(Some(Mismatch { input: inputs[i], got: bits, expected: want }));
                if is_nan_result(family, bits) && is_nan_result(family, want) {
                    t.nan_bits_only += 1;
                } else {
                    t.max_ulp = t.max_ulp.max(reference::ulp_distance(family, bits, want));
                }
            }
            t
        })
        .reduce(Tally::default, Tally::merge)
}

/// Whether `tally`, over a whole domain, bears out `expect` (see the module doc).
pub fn holds(expect: Expect, tally: &Tally) -> bool {
    let wrong_somewhere = tally.mismatches > 0;
    match expect {
        Expect::Exact => !wrong_somewhere,
        Expect::ExactButNanBits => tally.mismatches == tally.nan_bits_only,
        Expect::OneUlp => wrong_somewhere && tally.nan_bits_only == 0 && tally.max_ulp.is_some_and(|u| u <= 1),
        Expect::Incorrect => wrong_somewhere,
    }
}
