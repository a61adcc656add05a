//! One library call per job: [`scan`] (count NaN and infinities in tensor files) and
//! [`normalize`] (an image → a tensor of correctly rounded values in [0, 1]), each with
//! plain options that default to what the command line does, and a report.
//!
//! What the `bitexact` subcommands run, and all they run: they parse flags, call one of
//! these, print the report and pick the exit status.

use crate::files::backend::{self, BackendError, Device};
use crate::files::normalize::{ChannelLayout, Image, ImageDecodeError, NormalizeError};
use crate::files::scan_inputs::{self, ScanInputError, UnlistedTensors};
use crate::files::scan_report::{self, Report, ScanError};
use crate::files::tensor_io::{
    self, AsBf16, AsF16, AsF32, Container, Dtype, StagedOutput, TensorFile, TensorFileError, TensorWriteError,
    TensorWriteErrorKind, WritePhases,
};
use crate::support::progress::Progress;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How [`scan`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanOptions {
    /// Where to count ([`Device::Auto`] by default).
    pub device: Device,
    /// Draw a progress bar on stderr, if it is a terminal and the scan lasts over a
    /// second ([`Progress`]); off by default.
    pub progress_bar: bool,
}

impl Default for ScanOptions {
    fn default() -> ScanOptions {
        ScanOptions { device: Device::Auto, progress_bar: false }
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
#[derive(Debug)]
#[non_exhaustive]
pub enum ScanJobError {
    /// The device asked for cannot be had (`Device::Gpu` without a usable GPU).
    Backend(BackendError),
    /// A directory or an index cannot be turned into files to scan.
    Input(ScanInputError),
    /// A file cannot be opened or its header read.
    File(TensorFileError),
    /// A tensor could not be scanned.
    Scan(ScanError),
}

impl std::fmt::Display for ScanJobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScanJobError::Backend(error) => error.fmt(f),
            ScanJobError::Input(error) => error.fmt(f),
            ScanJobError::File(error) => error.fmt(f),
            ScanJobError::Scan(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for ScanJobError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ScanJobError::Backend(error) => Some(error),
            ScanJobError::Input(error) => Some(error),
            ScanJobError::File(error) => Some(error),
            ScanJobError::Scan(error) => Some(error),
        }
    }
}

impl From<BackendError> for ScanJobError {
    fn from(error: BackendError) -> ScanJobError {
        ScanJobError::Backend(error)
    }
}

impl From<ScanInputError> for ScanJobError {
    fn from(error: ScanInputError) -> ScanJobError {
        ScanJobError::Input(error)
    }
}

impl From<TensorFileError> for ScanJobError {
    fn from(error: TensorFileError) -> ScanJobError {
        ScanJobError::File(error)
    }
}

impl From<ScanError> for ScanJobError {
    fn from(error: ScanError) -> ScanJobError {
        ScanJobError::Scan(error)
    }
}

/// Counts NaN, +inf and -inf in every floating-point tensor of `paths`: `.npy`, `.npz`
/// and `.safetensors` files (recognised by content), directories (walked), and sharded
/// checkpoints' `*.safetensors.index.json` (for all their shards, whose tensor names are
/// checked against the index).
///
/// Passes through, in order: [`backend::select`] (`Device::Gpu` opens the GPU now),
/// [`scan_inputs::expand`] (paths → files and indexes), [`TensorFile::open`] (each
/// header, so that any bad input fails before anything is scanned),
/// [`scan_inputs::check_index`] (warnings), [`backend::DeviceChoice::for_job`] (the
/// backend, sized to the bytes to scan), [`Report::scan`] (every tensor, on that
/// backend).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
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
/// let scanned = host::files::scan(&[path], &host::files::ScanOptions::default())?;
/// let total = &scanned.report.total;
/// assert_eq!((total.nan, total.pos_inf, total.neg_inf), (1, 1, 0));
/// assert_eq!(total.first_non_finite.as_ref().map(|at| at.index), Some(1));
/// # Ok(())
/// # }
/// ```
pub fn scan(paths: &[PathBuf], options: &ScanOptions) -> Result<ScanReport, ScanJobError> {
    let device = backend::select(options.device)?;
    let inputs = scan_inputs::expand(paths)?;
    let files: Vec<TensorFile> = inputs.files.iter().map(|path| TensorFile::open(path)).collect::<Result<_, _>>()?;
    let mut warnings = Vec::new();
    for index in &inputs.indexes {
        warnings.extend(scan_inputs::check_index(index, &files)?);
    }
    let bytes = files.iter().map(scan_report::bytes_to_scan).sum();
    let backend = device.for_job(bytes);
    let progress = if options.progress_bar { Progress::new(bytes, "scan") } else { Progress::hidden(bytes) };
    let report = Report::scan(&files, backend.as_ref(), &progress)?.into_owned();
    progress.finish();
    Ok(ScanReport { report, warnings })
}

/// How [`normalize`] converts and writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NormalizeOptions {
    /// The element type ([`Dtype::F32`] by default).
    pub dtype: Dtype,
    /// The axis order ([`ChannelLayout::Hwc`] by default).
    pub layout: ChannelLayout,
    /// The tensor's name in a `.safetensors` output (`image` by default).
    pub name: String,
    /// Replace an existing output file (off by default).
    pub force: bool,
    /// Where to convert ([`Device::Auto`] by default).
    pub device: Device,
}

impl Default for NormalizeOptions {
    fn default() -> NormalizeOptions {
        NormalizeOptions {
            dtype: Dtype::F32,
            layout: ChannelLayout::Hwc,
            name: "image".into(),
            force: false,
            device: Device::Auto,
        }
    }
}

/// What [`normalize`] wrote, and where its time went.
#[derive(Clone, Debug, serde::Serialize)]
pub struct NormalizeReport {
    /// The output path, as given.
    pub output: String,
    /// Its container.
    pub container: Container,
    /// The tensor's name in a `.safetensors` output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tensor: Option<String>,
    /// The element type.
    pub dtype: Dtype,
    /// The tensor's shape.
    pub shape: Vec<u64>,
    /// Its axis order.
    pub layout: ChannelLayout,
    /// The image, as given.
    pub input: String,
    /// Bits per sample: 8 or 16.
    pub bits: u32,
    /// Samples per pixel.
    pub channels: u8,
    /// Every value is the correctly rounded sample / divisor.
    pub divisor: u32,
    /// Where the conversion ran (for `auto`, which and why).
    pub device: String,
    /// Where the time went.
    #[serde(skip)]
    pub timing: NormalizeTiming,
}

/// Where [`normalize`]'s time went, phase by phase.
#[derive(Clone, Copy, Debug, Default)]
pub struct NormalizeTiming {
    /// Opening the image: its whole decode, or for a PNG decoded while it is converted,
    /// its header only.
    pub opened: Duration,
    /// For a PNG decoded on a thread of its own while it is converted: the time it spent
    /// decoding, and the time the conversion waited for it.
    pub streamed: Option<(Duration, Duration)>,
    /// Bytes of samples.
    pub sample_bytes: u64,
    /// Bytes of the image file.
    pub file_bytes: u64,
    /// Converting and writing the temporary file.
    pub write: WritePhases,
    /// Renaming it into place ([`NormalizeStaged::commit`]); zero before.
    pub rename: Duration,
    /// From the call to the end of the last phase done.
    pub total: Duration,
}

/// Why [`normalize`] did not write its output: the first error met, naming its path.
#[derive(Debug)]
#[non_exhaustive]
pub enum NormalizeJobError {
    /// The device asked for cannot be had (`Device::Gpu` without a usable GPU).
    Backend(BackendError),
    /// The image cannot be decoded (also when a PNG decoded while it is converted turns
    /// out to be damaged).
    Image(ImageDecodeError),
    /// The output cannot be written there, or writing or renaming it failed.
    Output(TensorWriteError),
}

impl std::fmt::Display for NormalizeJobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NormalizeJobError::Backend(error) => error.fmt(f),
            NormalizeJobError::Image(error) => error.fmt(f),
            NormalizeJobError::Output(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for NormalizeJobError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NormalizeJobError::Backend(error) => Some(error),
            NormalizeJobError::Image(error) => Some(error),
            NormalizeJobError::Output(error) => Some(error),
        }
    }
}

impl From<BackendError> for NormalizeJobError {
    fn from(error: BackendError) -> NormalizeJobError {
        NormalizeJobError::Backend(error)
    }
}

impl From<ImageDecodeError> for NormalizeJobError {
    fn from(error: ImageDecodeError) -> NormalizeJobError {
        NormalizeJobError::Image(error)
    }
}

/// A write that failed because a streamed image could not be decoded is the image's
/// error, naming it, as it is when the image is decoded before the write.
impl From<TensorWriteError> for NormalizeJobError {
    fn from(error: TensorWriteError) -> NormalizeJobError {
        match error.kind {
            TensorWriteErrorKind::Values(values) => match values.downcast::<NormalizeError>() {
                Ok(normalize) => match *normalize {
                    NormalizeError::Decode(decode) => NormalizeJobError::Image(decode),
                    other => NormalizeJobError::Output(TensorWriteError {
                        path: error.path,
                        kind: TensorWriteErrorKind::Values(Box::new(other)),
                    }),
                },
                Err(values) => NormalizeJobError::Output(TensorWriteError {
                    path: error.path,
                    kind: TensorWriteErrorKind::Values(values),
                }),
            },
            kind => NormalizeJobError::Output(TensorWriteError { path: error.path, kind }),
        }
    }
}

/// [`normalize`]'s output, written to a temporary file next to `output`: nothing is
/// in place until [`NormalizeStaged::commit`] renames it (so that a caller can report
/// first, and fail with nothing changed); dropped, it is removed.
pub struct NormalizeStaged {
    /// What was written.
    pub report: NormalizeReport,
    staged: StagedOutput,
    began: Instant,
}

impl NormalizeStaged {
    /// Renames the output into place (without `force`, never over an existing file) and
    /// gives the report with the rename's time.
    pub fn commit(self) -> Result<NormalizeReport, NormalizeJobError> {
        let NormalizeStaged { mut report, staged, began } = self;
        let rename_start = Instant::now();
        staged.commit()?;
        report.timing.rename = rename_start.elapsed();
        report.timing.total = began.elapsed();
        Ok(report)
    }
}

/// Converts the UNORM8 or UNORM16 image `input` (PNG, JPEG, GIF, BMP, TIFF, WebP, PNM,
/// TGA, ICO, QOI, DDS, farbfeld; detected from the content) to a tensor at `output`
/// (`.npy` or `.safetensors`, by its extension) of `x / 255` or `x / 65535`, each value
/// correctly rounded straight to `options.dtype`; staged, then put in place by
/// [`NormalizeStaged::commit`].
///
/// Passes through, in order: [`tensor_io::check_output`] and [`tensor_io::check_dtype`]
/// (before any work), [`backend::select`], [`Image::open`] (decoded, or a PNG being
/// decoded on its own thread), [`backend::DeviceChoice::for_job`], [`tensor_io::stage`]
/// of [`Image::normalized_to`] (converted and written a chunk at a time).
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use host::files::{NormalizeOptions, normalize};
/// let options = NormalizeOptions { dtype: host::files::tensor_io::Dtype::F16, ..NormalizeOptions::default() };
/// let done = normalize("photo.png".as_ref(), "photo.npy".as_ref(), &options)?.commit()?;
/// println!("{:?} on {}", done.shape, done.device);
/// # Ok(())
/// # }
/// ```
pub fn normalize(
    input: &Path,
    output: &Path,
    options: &NormalizeOptions,
) -> Result<NormalizeStaged, NormalizeJobError> {
    let began = Instant::now();
    let container = tensor_io::check_output(output, input, options.force)?;
    tensor_io::check_dtype(output, container, options.dtype)?;
    let device = backend::select(options.device)?;
    let decode_start = Instant::now();
    let image = Image::open(input, options.layout)?;
    let opened = decode_start.elapsed();
    let sample_bytes = image.sample_count() as u64 * u64::from(image.bits() / 8);
    let backend = device.for_job(sample_bytes);
    let shape = image.shape(options.layout);
    let (name, layout, force) = (&options.name, options.layout, options.force);
    let staged = match options.dtype {
        Dtype::F32 => {
            tensor_io::stage(output, name, &shape, &image.normalized_to::<AsF32>(layout, backend.as_ref()), force)
        }
        Dtype::F16 => {
            tensor_io::stage(output, name, &shape, &image.normalized_to::<AsF16>(layout, backend.as_ref()), force)
        }
        Dtype::Bf16 => {
            tensor_io::stage(output, name, &shape, &image.normalized_to::<AsBf16>(layout, backend.as_ref()), force)
        }
    }?;
    let timing = NormalizeTiming {
        opened,
        streamed: image.stream_timing(),
        sample_bytes,
        file_bytes: std::fs::metadata(input).map_or(0, |m| m.len()),
        write: staged.phases(),
        rename: Duration::ZERO,
        total: began.elapsed(),
    };
    let report = NormalizeReport {
        output: output.display().to_string(),
        container,
        tensor: (container == Container::Safetensors).then(|| options.name.clone()),
        dtype: options.dtype,
        shape,
        layout,
        input: input.display().to_string(),
        bits: image.bits(),
        channels: image.channels,
        divisor: if image.bits() == 8 { 255 } else { 65535 },
        device: backend.name(),
        timing,
    };
    Ok(NormalizeStaged { report, staged, began })
}
