//! The normalize job: one library call, [`normalize()`] (an image → a tensor of correctly
//! rounded values in [0, 1]), with plain options that default to what the command line
//! does ([`NormalizeOptions`]) and a report ([`NormalizeReport`]); or staged
//! ([`NormalizeStaged`]) for a caller that commits the output itself. What
//! `bitexact normalize` runs, and all it runs.
//!
//! Owns: decoding and converting images ([`image`]; PNG a band of rows at a time,
//! [`png_rows`]; PNM with its `maxval`, [`pnm`], divided by [`divide`]; whether a JPEG
//! is whole, [`jpeg`]). Uses: [`crate::write`] (the staged output),
//! [`crate::backend`] (where the conversion runs).

#[doc(hidden)]
pub mod divide;
#[doc(hidden)]
pub mod image;
#[doc(hidden)]
pub mod jpeg;
#[doc(hidden)]
pub mod png_rows;
#[doc(hidden)]
pub mod pnm;

/// The values per chunk of a write, which bound a write's memory (docs/files.md).
pub use crate::write::WRITE_CHUNK_ELEMENTS;
/// What [`NormalizeOptions`], [`NormalizeReport`] and [`NormalizeJobError`] name.
pub use crate::write::{Dtype, StageError, TensorWriteError, WritePhases};
pub use image::{ChannelLayout, ImageDecodeError, ImageLimits, NormalizeError};

use crate::backend::{self, Backend, BackendError, CpuBackend, Device};
use crate::containers::Container;
use crate::normalize::image::Image;
use crate::write::{self, DtypeOf, DtypeVisitor, StagedOutput};
use std::path::Path;
use std::time::{Duration, Instant};

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
    /// How large an image is read ([`ImageLimits::default`]).
    pub limits: ImageLimits,
}

impl Default for NormalizeOptions {
    fn default() -> NormalizeOptions {
        NormalizeOptions {
            dtype: Dtype::F32,
            layout: ChannelLayout::Hwc,
            name: "image".into(),
            force: false,
            device: Device::Auto,
            limits: ImageLimits::default(),
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
    /// Every value is the correctly rounded sample / divisor: 255 or 65535, or a PNM's
    /// `maxval`.
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
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NormalizeJobError {
    /// The device asked for cannot be had (`Device::Gpu` without a usable GPU).
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// The image cannot be decoded (also when a PNG decoded while it is converted turns
    /// out to be damaged).
    #[error(transparent)]
    Image(#[from] ImageDecodeError),
    /// The output cannot be written there, or writing or renaming it failed, or the
    /// conversion failed while it was written.
    #[error(transparent)]
    Output(StageError<NormalizeError>),
}

impl From<TensorWriteError> for NormalizeJobError {
    fn from(error: TensorWriteError) -> NormalizeJobError {
        NormalizeJobError::Output(error.into())
    }
}

/// A write that failed because a streamed image could not be decoded is the image's
/// error, naming it, as it is when the image is decoded before the write.
impl From<StageError<NormalizeError>> for NormalizeJobError {
    fn from(error: StageError<NormalizeError>) -> NormalizeJobError {
        match error {
            StageError::Values { error: NormalizeError::Decode(decode), .. } => NormalizeJobError::Image(decode),
            other => NormalizeJobError::Output(other),
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

/// [`write::stage`] of an image's values as the dtype [`write::with_dtype`] picks:
/// [`normalize`]'s one step that depends on the dtype's type, written once for them all.
struct Stage<'a> {
    output: &'a Path,
    options: &'a NormalizeOptions,
    shape: &'a [u64],
    image: &'a Image,
    backend: &'a dyn Backend,
}

impl DtypeVisitor for Stage<'_> {
    type Output = Result<StagedOutput, StageError<NormalizeError>>;

    fn visit<D: DtypeOf>(self) -> Self::Output {
        let values = self.image.normalized_to::<D>(self.options.layout, self.backend);
        write::stage(self.output, &self.options.name, self.shape, &values, self.options.force)
    }
}

/// Converts the UNORM8 or UNORM16 image `input` (PNG, JPEG, GIF, BMP, TIFF, WebP, PNM,
/// TGA, ICO, QOI, DDS, farbfeld; detected from the content, TGA from its `.tga`
/// extension: see `image::KNOWN_FORMATS`) to a tensor at `output`
/// (`.npy` or `.safetensors`, by its extension) of `x / 255` or `x / 65535` (a PNM's
/// `x / maxval`), each value correctly rounded straight to `options.dtype`; staged, then
/// put in place by [`NormalizeStaged::commit`]. An image over `options.limits` is
/// refused before anything is written.
///
/// Passes through, in order: `write::check_output` and `write::check_dtype`
/// (before any work), [`backend::select`], [`Image::open`] (decoded, or a PNG being
/// decoded on its own thread), `backend::DeviceChoice::for_job`, [`write::stage`]
/// of `Image::normalized_to` for `options.dtype`'s type ([`write::with_dtype`];
/// converted and written a chunk at a time).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # mod bitexact { pub use bitexact_files as files; }
/// use bitexact::files::backend::Device;
/// use bitexact::files::normalize::Dtype;
/// use bitexact::files::{NormalizeOptions, normalize};
/// let dir = tempfile::tempdir()?;
/// let (photo, tensor) = (dir.path().join("photo.png"), dir.path().join("photo.npy"));
/// // A 2 × 1 RGB image: samples 0, 51, 255 and 1, 2, 3.
/// image::RgbImage::from_raw(2, 1, vec![0, 51, 255, 1, 2, 3]).expect("6 samples").save(&photo)?;
///
/// let options = NormalizeOptions { dtype: Dtype::F16, device: Device::Cpu, ..NormalizeOptions::default() };
/// let staged = normalize(&photo, &tensor, &options)?; // written, not yet in place
/// assert!(!tensor.exists());
/// let done = staged.commit()?;
/// assert_eq!((done.shape.as_slice(), done.divisor), (&[1u64, 2, 3][..], 255));
/// // The values are the last 12 bytes of the .npy: binary16 bits, little-endian.
/// let bytes = std::fs::read(&tensor)?;
/// let values: Vec<u16> = bytes[bytes.len() - 12..].chunks(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
/// assert_eq!(values[..3], [0x0000, 0x3266, 0x3c00]); // 0, 51/255 = 0.2 rounded to binary16, 1
/// # Ok(())
/// # }
/// ```
pub fn normalize(
    input: &Path,
    output: &Path,
    options: &NormalizeOptions,
) -> Result<NormalizeStaged, NormalizeJobError> {
    let began = Instant::now();
    let container = write::check_output(output, input, options.force)?;
    write::check_dtype(output, container, options.dtype)?;
    let device = backend::select(options.device)?;
    let decode_start = Instant::now();
    let image = Image::open(input, options.layout, options.limits)?;
    let opened = decode_start.elapsed();
    let sample_bytes = image.sample_count() as u64 * u64::from(image.bits() / 8);
    // A divisor the variant table has no entry for is divided on the CPU.
    let backend: Box<dyn Backend> =
        if image.has_table_divisor() { device.for_job(sample_bytes) } else { Box::new(CpuBackend) };
    let shape = image.shape(options.layout);
    let layout = options.layout;
    let stage = Stage { output, options, shape: &shape, image: &image, backend: backend.as_ref() };
    let staged = write::with_dtype(options.dtype, stage)?;
    let timing = NormalizeTiming {
        opened,
        streamed: image.stream_timing(),
        sample_bytes,
        file_bytes: image.file_bytes(),
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
        divisor: u32::from(image.divisor),
        device: if image.has_table_divisor() {
            backend.name()
        } else {
            format!("{} (x/{}: IEEE division on the CPU, no GPU form)", backend.name(), image.divisor)
        },
        timing,
    };
    Ok(NormalizeStaged { report, staged, began })
}
