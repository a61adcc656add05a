//! The scan job: one library call, [`scan()`] (count NaN and infinities in tensor
//! files), with plain options that default to what the command line does
//! ([`ScanOptions`]) and a report ([`ScanReport`]). What `bitexact scan` runs, and all it
//! runs: the subcommand parses flags, calls this, prints the report and picks the exit
//! status.
//!
//! Owns: the scan's steps, in order: its inputs expanded into files ([`inputs`]), each
//! file's header read, the indexes checked, the backend picked, every tensor counted and
//! reported ([`report`]). Uses: [`crate::containers`], [`crate::read`],
//! [`crate::backend`].
//!
//! Also offered: the scan's count of one slice in memory on the calling thread
//! ([`count_slice`]; [`scan()`] runs it on blocks of [`BLOCK_BYTES`] on all cores), and
//! the sizes that bound a scan's heap: a block per thread, the largest `.safetensors`
//! header read ([`MAX_SAFETENSORS_HEADER`]), and the chunk a deflated `.npz` member is
//! inflated in ([`INFLATE_CHUNK_BYTES`]); `host/tests/heap_bound.rs` holds the scan to
//! them.

#[doc(hidden)]
pub mod inputs;
pub mod report;

/// The errors and warnings of scanning's inputs, which [`ScanJobError`] and
/// [`ScanReport`] name.
pub use crate::containers::index::{ScanInputError, UnlistedTensors};
pub use crate::read::TensorFileError;

// The count of a slice and the sizes that bound the heap: see the module's doc.
pub use crate::backend::count::{BLOCK_BYTES, count_slice};
pub use crate::containers::npz::INFLATE_CHUNK_BYTES;
pub use crate::containers::safetensors::MAX_SAFETENSORS_HEADER;

use crate::backend::{self, BackendError, Device};
use crate::read::TensorFile;
use crate::scan::report::{Report, ScanError, Unreadable};
use bitexact_support::progress::Progress;
use std::path::PathBuf;

/// How [`scan`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanOptions {
    /// Where to count ([`Device::Auto`] by default).
    pub device: Device,
    /// Draw a progress bar on stderr, if it is a terminal and the scan lasts over a
    /// second ([`Progress`]); off by default.
    pub progress_bar: bool,
    /// Report a file that cannot be opened or whose header is refused (or an index
    /// whose check fails) as unreadable in the report, and scan the others, instead of
    /// failing the whole job; off by default.
    pub keep_going: bool,
}

impl Default for ScanOptions {
    fn default() -> ScanOptions {
        ScanOptions { device: Device::Auto, progress_bar: false, keep_going: false }
    }
}

/// What [`scan`] found: the report (per file, per tensor, in total; it owns its data),
/// and the warnings met on the way.
#[derive(Clone, Debug)]
pub struct ScanReport {
    /// The counts, per tensor and in total, and where the scan ran.
    pub report: Report<'static>,
    /// Tensors that a shard of a sharded checkpoint holds but its index does not list
    /// there: scanned all the same.
    pub warnings: Vec<UnlistedTensors>,
}

/// Why [`scan`] could not give a report: the first error met, naming its path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScanJobError {
    /// The device asked for cannot be had (`Device::Gpu` without a usable GPU).
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A directory or an index cannot be turned into files to scan.
    #[error(transparent)]
    Input(#[from] ScanInputError),
    /// A file cannot be opened or its header read.
    #[error(transparent)]
    File(#[from] TensorFileError),
    /// A tensor could not be scanned.
    #[error(transparent)]
    Scan(#[from] ScanError),
}

/// Counts NaN, +inf and -inf in every floating-point tensor of `paths`: `.npy`, `.npz`
/// and `.safetensors` files (recognised by content), directories (walked), and sharded
/// checkpoints' `*.safetensors.index.json` (for all their shards, whose tensor names are
/// checked against the index). With [`ScanOptions::keep_going`], a file that cannot be
/// opened or read is listed in [`Report::unreadable`] and the others are scanned.
///
/// Passes through, in order: [`backend::select`] (`Device::Gpu` opens the GPU now),
/// [`inputs::expand`] (paths → files and indexes), [`TensorFile::open`] (each
/// header, so that any bad input fails before anything is scanned),
/// `inputs::check_index` (warnings), `backend::DeviceChoice::for_job` (the
/// backend, sized to the bytes to scan), [`Report::scan`] (every tensor, on that
/// backend).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # mod bitexact { pub use bitexact_files as files; }
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("x.npy");
/// let values = [1.0f32, f32::NAN, f32::INFINITY];
/// let mut npy = b"\x93NUMPY\x01\x00".to_vec();
/// let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
/// let header = format!("{header:<117}\n");
/// npy.extend((header.len() as u16).to_le_bytes());
/// npy.extend(header.as_bytes());
/// npy.extend(values.iter().flat_map(|v| v.to_le_bytes()));
/// std::fs::write(&path, npy)?;
///
/// let scanned = bitexact::files::scan(&[path], &bitexact::files::ScanOptions::default())?;
/// let total = &scanned.report.total;
/// assert_eq!((total.nan, total.pos_inf, total.neg_inf), (1, 1, 0));
/// assert_eq!(total.first_non_finite.as_ref().map(|at| at.index), Some(1));
/// # Ok(())
/// # }
/// ```
pub fn scan(paths: &[PathBuf], options: &ScanOptions) -> Result<ScanReport, ScanJobError> {
    let device = backend::select(options.device)?;
    let inputs = inputs::expand(paths)?;
    let mut unreadable = Vec::new();
    let mut files = Vec::new();
    for path in &inputs.files {
        match TensorFile::open(path) {
            Ok(file) => files.push(file),
            Err(error) if options.keep_going => unreadable.push(Unreadable::new(&error.path, &error.kind)),
            Err(error) => return Err(error.into()),
        }
    }
    let mut warnings = Vec::new();
    for index in &inputs.indexes {
        match inputs::check_index(index, &files) {
            Ok(unlisted) => warnings.extend(unlisted),
            Err(error) if options.keep_going => unreadable.push(Unreadable::new(&error.path, &error.kind)),
            Err(error) => return Err(error.into()),
        }
    }
    let bytes = files.iter().map(report::bytes_to_scan).sum();
    let backend = device.for_job(bytes);
    let progress = if options.progress_bar { Progress::new(bytes, "scan") } else { Progress::hidden(bytes) };
    let report = Report::scan(&files, backend.as_ref(), &progress)?.with_unreadable(unreadable).into_owned();
    progress.finish();
    Ok(ScanReport { report, warnings })
}
