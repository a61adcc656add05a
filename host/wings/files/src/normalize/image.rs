//! Decoded UNORM images → f32, binary16 or bfloat16 tensors in [0, 1], correctly rounded
//! straight to the output type (never rounded twice on the way).
//!
//! Each sample width and output type is converted by the one table variant
//! [`conversion`] picks for it, on whichever backend runs; each is proven equal to the
//! correctly rounded `x / 255` or `x / 65535` on every input by verify.
//!
//! The tensor is never held whole: [`Normalized`] converts the samples a chunk at a
//! time, in the output's layout, as the writer asks for them, so that memory holds the
//! decoded image (a quarter of the f32 tensor for 8-bit samples) and a few MiB more.
//! [`Image::open`] does better for a non-interlaced PNG in HWC order, the common case:
//! it decodes the image on a thread of its own a band at a time ([`PngRows`]) while the
//! bands already decoded are converted and written, so that decoding overlaps the rest
//! and memory holds a few bands instead of the image.

use crate::backend::{Backend, BackendError, SampleConversion};
use crate::message::{io_message, one_line};
use crate::normalize::divide;
use crate::normalize::jpeg::{self, JpegTruncated};
use crate::normalize::png_rows::{
    Band, PNG_SIGNATURE, PngHeader, PngOpen, PngOpenError, PngRows, PngRowsError, SampleRun, read_up_to_at,
};
use crate::normalize::pnm::{self, PnmError, PnmHeaderRead, PnmSamples};
use crate::regular_file::{RegularFileError, open_regular_file};
use crate::write::{AsF32, Dtype, DtypeOf, StoredOf, TensorSource, WRITE_CHUNK_ELEMENTS};
use bitexact_support::output::path_text;
use std::borrow::Cow;
use std::fs::File;
use std::io::{BufReader, Read};
use std::marker::PhantomData;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Why an image cannot be decoded into UNORM samples: the file and what went wrong.
/// Displayed as `path: what`, on one line; the cause is in that line, not behind
/// `source()`.
#[derive(Debug, thiserror::Error)]
#[error("{}: {}", path_text(.path), one_line(.kind))]
pub struct ImageDecodeError {
    /// The image file, as given.
    pub path: PathBuf,
    /// What went wrong.
    #[doc(hidden)]
    pub kind: ImageDecodeErrorKind,
}

/// A decoder's error as the message shows it: an I/O error as a short phrase.
fn decode_text(error: &image::ImageError) -> String {
    match error {
        image::ImageError::IoError(error) => io_message(error),
        error => error.to_string(),
    }
}

/// The image formats `normalize` reads, and how each is recognised, as its error for an
/// unrecognised file says. Every format is told by its content (its magic number),
/// whatever the file is called, except TGA, which has no magic number: a TGA file is
/// recognised by its `.tga` extension only (guessing from a header of free-form fields
/// would take other files for TGA). A known extension on other content is a decode
/// error of that format.
pub(crate) const KNOWN_FORMATS: &str = "by content: PNG, JPEG, GIF, BMP, TIFF, WebP, PNM, ICO, QOI, DDS, farbfeld; \
                                 TGA, which has no magic number, by its .tga extension";

/// What went wrong decoding an image: see [`ImageDecodeError`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImageDecodeErrorKind {
    /// The path is missing or not a regular file.
    #[error("{0}")]
    NotRegular(RegularFileError),
    /// Opening it, or reading its start to guess the format, failed.
    #[error("{}", io_message(.0))]
    Io(std::io::Error),
    /// The decoder refused it.
    #[error("cannot decode image: {}", decode_text(.0))]
    Decode(image::ImageError),
    /// Neither its content nor its extension names a format this build reads: see
    /// `KNOWN_FORMATS`.
    #[error("cannot decode image: not a format this build reads ({KNOWN_FORMATS})")]
    UnknownFormat(#[source] image::ImageError),
    /// Its samples are not unsigned 8- or 16-bit integers.
    #[error("{}", not_unorm(*.0))]
    NotUnorm(image::ExtendedColorType),
    /// It has no pixels.
    #[error("image has no pixels ({width}×{height})")]
    NoPixels {
        /// Columns.
        width: u32,
        /// Rows.
        height: u32,
    },
    /// It has more pixels than [`ImageLimits::max_pixels`] (found from its header,
    /// before anything is decoded or written).
    #[error("image is {width}×{height} = {} pixels, over the limit of {max_pixels} (--max-pixels N raises it)", u64::from(*.width) * u64::from(*.height))]
    TooLarge {
        /// Columns.
        width: u32,
        /// Rows.
        height: u32,
        /// The limit.
        max_pixels: u64,
    },
    /// A PNM (greymap, pixmap, PAM) whose samples cannot be read.
    #[error("{0}")]
    Pnm(PnmError),
    /// A JPEG that ends before its end-of-image marker.
    #[error("{0}")]
    JpegTruncated(JpegTruncated),
}

/// Why samples could not be converted: see [`Normalized`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NormalizeError {
    /// Samples asked for beyond the image's.
    #[error("samples {start}.. are out of range")]
    OutOfRange {
        /// The first sample asked for.
        start: u64,
    },
    /// The backend failed.
    #[error(transparent)]
    Backend(BackendError),
    /// A streamed PNG's decoder failed: the image's error, naming it.
    #[error(transparent)]
    Decode(ImageDecodeError),
    /// A streamed PNG's samples were asked for out of order, or its decoder stopped.
    #[error(transparent)]
    #[doc(hidden)]
    Stream(PngRowsError),
}

#[doc(hidden)] // the PNG decoder's thread is the wing's own
impl From<PngRowsError> for NormalizeError {
    fn from(error: PngRowsError) -> NormalizeError {
        NormalizeError::Stream(error)
    }
}

/// Axis order of the output tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelLayout {
    /// `[height, width, channels]`: the decoder's interleaved order.
    Hwc,
    /// `[channels, height, width]`: one plane per channel.
    Chw,
}

impl ChannelLayout {
    /// `HWC` or `CHW`.
    pub const fn name(self) -> &'static str {
        match self {
            ChannelLayout::Hwc => "HWC",
            ChannelLayout::Chw => "CHW",
        }
    }
}

/// Samples as decoded, interleaved (HWC), or being decoded.
pub enum Samples {
    /// 8-bit UNORM samples.
    Unorm8(Vec<u8>),
    /// 16-bit UNORM samples.
    Unorm16(Vec<u16>),
    /// A non-interlaced PNG's samples, 8- or 16-bit, being decoded on a thread of their
    /// own: they can be read once, in order, so only in HWC order.
    PngRows(PngRows),
}

/// The largest image `normalize` reads by default, in pixels: 2^28 (16384 × 16384), so
/// that a small file cannot make it write a huge tensor (an 875 KB PNG of 30000 × 30000
/// grey pixels became 1.8 GB before it was refused). At the limit an RGBA f32 tensor is
/// 4 GiB, and an image decoded whole (CHW, interlaced PNG, other formats) holds at most
/// 2 GiB of 16-bit RGBA samples. Larger than any camera's single frame; raise it with
/// [`ImageLimits::max_pixels`] (`--max-pixels`).
pub const DEFAULT_MAX_PIXELS: u64 = 1 << 28;

/// How large an image [`Image::open`] and [`Image::decode`] accept: the same in every
/// layout and for every format, checked on the header before any sample is decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageLimits {
    /// Width × height at most ([`DEFAULT_MAX_PIXELS`] by default).
    pub max_pixels: u64,
}

impl Default for ImageLimits {
    fn default() -> ImageLimits {
        ImageLimits { max_pixels: DEFAULT_MAX_PIXELS }
    }
}

impl ImageLimits {
    /// [`ImageDecodeErrorKind::TooLarge`] for a `width × height` image over the limit.
    fn check(self, width: u32, height: u32) -> Result<(), ImageDecodeErrorKind> {
        if u64::from(width) * u64::from(height) > self.max_pixels {
            return Err(ImageDecodeErrorKind::TooLarge { width, height, max_pixels: self.max_pixels });
        }
        Ok(())
    }

    /// What the `image` crate may allocate decoding an image within the limit: its
    /// widest pixel (16-bit RGBA, 8 bytes) times the pixels, and 64 MiB for the
    /// decoder's own buffers; never less than its default of 512 MiB.
    fn decoder_alloc(self) -> u64 {
        self.max_pixels.saturating_mul(8).saturating_add(64 << 20).max(512 << 20)
    }
}

/// A decoded image: its samples and dimensions.
pub struct Image {
    /// Rows.
    pub height: u32,
    /// Columns.
    pub width: u32,
    /// Samples per pixel as decoded: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA.
    pub channels: u8,
    /// What every sample is divided by: 255 for 8-bit samples and 65535 for 16-bit ones,
    /// except a PNM's, which are divided by its `maxval` (1 to 65535; up to 255 held
    /// in 8 bits).
    pub divisor: u16,
    /// Interleaved samples, `height * width * channels` of them.
    pub samples: Samples,
    /// Bytes of the image file, as it was when opened.
    file_bytes: u64,
}

impl Image {
    /// The image at `path` ready to be converted in `layout`: for a non-interlaced PNG
    /// in HWC order, its header read and its samples being decoded on a thread of their
    /// own a band at a time ([`Samples::PngRows`]; errors in the image data come from
    /// [`Normalized`]'s `fill`, as [`NormalizeError::Decode`]); for anything else,
    /// [`Image::decode`]. Either way the samples are the same, bit for bit, and an image
    /// over `limits` is refused alike. Errors name the file.
    pub fn open(path: &Path, layout: ChannelLayout, limits: ImageLimits) -> Result<Image, ImageDecodeError> {
        Image::read(path, limits, layout == ChannelLayout::Hwc)
    }

    /// Decodes `path` whole, keeping the decoded channel count and bit depth: a PNG with
    /// the `png` crate ([`PngHeader`]: ancillary text and ICC chunks skipped), a
    /// greymap, pixmap or PAM with its `maxval` ([`crate::normalize::pnm`]), a
    /// JPEG after checking that it is whole (`jpeg::check_complete`), anything else
    /// with the `image` crate (format guessed from the content, else from the
    /// extension: see `KNOWN_FORMATS`). Refused over `limits`, before decoding.
    /// Errors name the file.
    pub fn decode(path: &Path, limits: ImageLimits) -> Result<Image, ImageDecodeError> {
        Image::read(path, limits, false)
    }

    /// The image in `file`, open and at its start, ready to be converted in `layout`:
    /// what [`Image::open`] does once it has opened `path`. `path` only names the file
    /// in errors and, for a TGA, gives its extension: the file is read through `file`
    /// alone, never opened again by name (so its path may be gone, or name another file
    /// by now).
    pub fn from_file(
        file: File,
        path: &Path,
        layout: ChannelLayout,
        limits: ImageLimits,
    ) -> Result<Image, ImageDecodeError> {
        Image::from_open(file, path, limits, layout == ChannelLayout::Hwc)
    }

    /// [`Image::open`] (`stream`) or [`Image::decode`]: `path` opened once and the open
    /// file checked to be a regular one ([`open_regular_file`]), then
    /// [`Image::from_open`].
    fn read(path: &Path, limits: ImageLimits, stream: bool) -> Result<Image, ImageDecodeError> {
        let fail = |kind: ImageDecodeErrorKind| ImageDecodeError { path: path.to_path_buf(), kind };
        let file = open_regular_file(path).map_err(|e| fail(ImageDecodeErrorKind::NotRegular(e)))?;
        Image::from_open(file, path, limits, stream)
    }

    /// The image in the open `file`: its first bytes (read at their offset, the file's
    /// position left at its start) say which reader takes the file: PNG, PNM, or the
    /// `image` crate. Each reads it through `file`.
    fn from_open(file: File, path: &Path, limits: ImageLimits, stream: bool) -> Result<Image, ImageDecodeError> {
        let fail = |kind: ImageDecodeErrorKind| ImageDecodeError { path: path.to_path_buf(), kind };
        let file_bytes = file.metadata().map_err(|e| fail(ImageDecodeErrorKind::Io(e)))?.len();
        let mut head = [0u8; PNG_SIGNATURE.len()];
        let got = read_up_to_at(&file, &mut head, 0).map_err(|e| fail(ImageDecodeErrorKind::Io(e)))?;
        let head = &head[..got];
        let image = if head == PNG_SIGNATURE {
            let header = PngHeader::from_file(file).map_err(|e| fail(png_open_error(e)))?;
            Image::from_png(path, header, limits, stream)
        } else if pnm::is_read_here(head) {
            let header = PnmHeaderRead::from_file(file).map_err(|e| fail(ImageDecodeErrorKind::Pnm(e)))?;
            Image::from_pnm(header, limits)
        } else {
            Image::from_image_crate(file, path, limits)
        };
        let mut image = image.map_err(fail)?;
        if image.sample_count() == 0 {
            return Err(fail(ImageDecodeErrorKind::NoPixels { width: image.width, height: image.height }));
        }
        image.file_bytes = file_bytes;
        Ok(image)
    }

    /// A PNG, streamed when asked and not interlaced, else decoded whole.
    fn from_png(
        path: &Path,
        header: PngHeader,
        limits: ImageLimits,
        stream: bool,
    ) -> Result<Image, ImageDecodeErrorKind> {
        let (height, width, channels, bits) = (header.height, header.width, header.channels, header.bits);
        limits.check(width, height)?;
        let divisor = if bits == 8 { 255 } else { 65535 };
        if header.samples() == 0 {
            return Err(ImageDecodeErrorKind::NoPixels { width, height });
        }
        let samples = if stream && !header.interlaced {
            match header.stream(path, WRITE_CHUNK_ELEMENTS) {
                Ok(PngOpen::Rows(rows)) => Samples::PngRows(rows),
                Ok(PngOpen::Interlaced | PngOpen::NotPng) => unreachable!("a non-interlaced PNG's header was read"),
                Err(e) => return Err(png_open_error(e)),
            }
        } else {
            match header.decode_whole().map_err(decode_error)? {
                Band::Unorm8(samples) => Samples::Unorm8(samples),
                Band::Unorm16(samples) => Samples::Unorm16(samples),
            }
        };
        Ok(Image { height, width, channels, divisor, samples, file_bytes: 0 })
    }

    /// A greymap, pixmap or PAM, its samples as they are in the file.
    fn from_pnm(header: PnmHeaderRead, limits: ImageLimits) -> Result<Image, ImageDecodeErrorKind> {
        let (height, width, channels, divisor) = (header.height, header.width, header.channels, header.maxval);
        limits.check(width, height)?;
        let samples = match header.samples().map_err(ImageDecodeErrorKind::Pnm)? {
            PnmSamples::Unorm8(samples) => Samples::Unorm8(samples),
            PnmSamples::Unorm16(samples) => Samples::Unorm16(samples),
        };
        Ok(Image { height, width, channels, divisor, samples, file_bytes: 0 })
    }

    /// Any other format, through the `image` crate, from the open `file`: the format
    /// guessed from the content, else from `path`'s extension (as
    /// `image::ImageReader::open` would); a JPEG checked to be whole, then decoded from
    /// the bytes read for that check.
    fn from_image_crate(file: File, path: &Path, limits: ImageLimits) -> Result<Image, ImageDecodeErrorKind> {
        let mut reader = image::ImageReader::new(BufReader::new(file));
        if let Some(format) = path.extension().and_then(image::ImageFormat::from_extension) {
            reader.set_format(format);
        }
        let reader = reader.with_guessed_format().map_err(ImageDecodeErrorKind::Io)?;
        if reader.format() == Some(image::ImageFormat::Jpeg) {
            let mut bytes = Vec::new();
            reader.into_inner().read_to_end(&mut bytes).map_err(ImageDecodeErrorKind::Io)?;
            jpeg::check_complete(&bytes).map_err(ImageDecodeErrorKind::JpegTruncated)?;
            let jpeg = image::ImageReader::with_format(std::io::Cursor::new(bytes), image::ImageFormat::Jpeg);
            return Image::decode_by_image_crate(jpeg, limits);
        }
        Image::decode_by_image_crate(reader, limits)
    }

    /// Decodes through `reader`'s one decoder: its dimensions first (checked against
    /// `limits`), then the pixels, its allocations capped to match (what
    /// `image::ImageReader::decode` reserves, with that cap).
    fn decode_by_image_crate<R: std::io::BufRead + std::io::Seek>(
        mut reader: image::ImageReader<R>,
        limits: ImageLimits,
    ) -> Result<Image, ImageDecodeErrorKind> {
        use image::ImageDecoder;
        let mut decoder_limits = image::Limits::default();
        decoder_limits.max_alloc = Some(limits.decoder_alloc());
        reader.limits(decoder_limits.clone());
        let mut decoder = reader.into_decoder().map_err(decode_error)?;
        let (width, height) = decoder.dimensions();
        limits.check(width, height)?;
        decoder_limits.reserve(decoder.total_bytes()).map_err(decode_error)?;
        decoder.set_limits(decoder_limits).map_err(decode_error)?;
        let decoded = image::DynamicImage::from_decoder(decoder).map_err(decode_error)?;
        let (width, height) = (decoded.width(), decoded.height());
        use image::DynamicImage as D;
        let (channels, samples) = match decoded {
            D::ImageLuma8(b) => (1, Samples::Unorm8(b.into_raw())),
            D::ImageLumaA8(b) => (2, Samples::Unorm8(b.into_raw())),
            D::ImageRgb8(b) => (3, Samples::Unorm8(b.into_raw())),
            D::ImageRgba8(b) => (4, Samples::Unorm8(b.into_raw())),
            D::ImageLuma16(b) => (1, Samples::Unorm16(b.into_raw())),
            D::ImageLumaA16(b) => (2, Samples::Unorm16(b.into_raw())),
            D::ImageRgb16(b) => (3, Samples::Unorm16(b.into_raw())),
            D::ImageRgba16(b) => (4, Samples::Unorm16(b.into_raw())),
            other => return Err(ImageDecodeErrorKind::NotUnorm(other.color().into())),
        };
        let divisor = if matches!(samples, Samples::Unorm8(_)) { 255 } else { 65535 };
        Ok(Image { height, width, channels, divisor, samples, file_bytes: 0 })
    }

    /// For samples being decoded ([`Samples::PngRows`]): the time the decoder has
    /// spent decoding so far, and the time the conversion spent waiting for it.
    pub(crate) fn stream_timing(&self) -> Option<(std::time::Duration, std::time::Duration)> {
        match &self.samples {
            Samples::PngRows(rows) => Some(rows.timing()),
            _ => None,
        }
    }

    /// Bytes of the image file, as it was when opened.
    pub(crate) fn file_bytes(&self) -> u64 {
        self.file_bytes
    }

    /// `height * width * channels`.
    pub(crate) fn sample_count(&self) -> usize {
        self.height as usize * self.width as usize * usize::from(self.channels)
    }

    /// Bits per sample: 8 or 16.
    pub fn bits(&self) -> u32 {
        match &self.samples {
            Samples::Unorm8(_) => 8,
            Samples::Unorm16(_) => 16,
            Samples::PngRows(rows) => rows.bits,
        }
    }

    /// Whether [`Image::divisor`] is 255 for 8-bit samples or 65535 for 16-bit ones, the
    /// divisors the variant table converts for, on every backend ([`conversion`]); any
    /// other (a PNM's `maxval`) is divided on the CPU ([`divide`]).
    pub(crate) fn has_table_divisor(&self) -> bool {
        u32::from(self.divisor) == (1 << self.bits()) - 1
    }

    /// The output shape for `layout`: `[H, W, C]` or `[C, H, W]`.
    pub fn shape(&self, layout: ChannelLayout) -> Vec<u64> {
        let (h, w, c) = (u64::from(self.height), u64::from(self.width), u64::from(self.channels));
        match layout {
            ChannelLayout::Hwc => vec![h, w, c],
            ChannelLayout::Chw => vec![c, h, w],
        }
    }

    /// The samples converted to f32 in `layout` on `backend`, a chunk at a time: value
    /// `i` is the correctly rounded `s / divisor` (`s / 255` for 8-bit samples, `s /
    /// 65535` for 16-bit ones, a PNM's `s / maxval`) of the sample that lands at flat
    /// index `i` of [`Image::shape`]. Without `Image::has_table_divisor`, the
    /// conversion runs on the CPU whatever `backend` is.
    pub fn normalized<'a>(&'a self, layout: ChannelLayout, backend: &'a dyn Backend) -> Normalized<'a, AsF32> {
        self.normalized_to(layout, backend)
    }

    /// [`Image::normalized`] with the values correctly rounded to `D` instead (any
    /// [`Dtype`]: f32, binary16, bfloat16), each straight from its sample.
    pub(crate) fn normalized_to<'a, D: DtypeOf>(
        &'a self,
        layout: ChannelLayout,
        backend: &'a dyn Backend,
    ) -> Normalized<'a, D> {
        Normalized { image: self, layout, backend, dtype: PhantomData }
    }

    /// All of [`Image::normalized`] at once, in one vector.
    pub fn to_f32(&self, layout: ChannelLayout, backend: &dyn Backend) -> Result<Vec<f32>, NormalizeError> {
        let mut out = vec![0.0f32; self.sample_count()];
        self.normalized(layout, backend).fill(0, &mut out)?;
        Ok(out)
    }
}

/// A decoder's error: a pixel format it has no decoding for is refused the way a
/// decoded one that is not UNORM is ([`ImageDecodeErrorKind::NotUnorm`]).
fn decode_error(error: image::ImageError) -> ImageDecodeErrorKind {
    use image::error::{ImageError, UnsupportedErrorKind};
    match &error {
        ImageError::Unsupported(e) => match e.kind() {
            UnsupportedErrorKind::Color(color) => ImageDecodeErrorKind::NotUnorm(color),
            UnsupportedErrorKind::Format(_) => ImageDecodeErrorKind::UnknownFormat(error),
            _ => ImageDecodeErrorKind::Decode(error),
        },
        _ => ImageDecodeErrorKind::Decode(error),
    }
}

/// A PNG reader's refusal: the file unreadable, or its header refused.
fn png_open_error(error: PngOpenError) -> ImageDecodeErrorKind {
    match error {
        PngOpenError::Open(e) => ImageDecodeErrorKind::Io(e),
        PngOpenError::Decode(e) => decode_error(e),
    }
}

/// Why an image of `color` is refused, and what it is.
fn not_unorm(color: image::ExtendedColorType) -> String {
    use image::ExtendedColorType as C;
    let what = match color {
        C::Rgb32F => "32-bit float RGB pixels".to_string(),
        C::Rgba32F => "32-bit float RGBA pixels".to_string(),
        C::Unknown(bits) => {
            format!("{bits}-bit pixels of a kind its decoder does not support (float or 32-bit integer samples?)")
        }
        other => format!("{other:?} pixels"),
    };
    format!("only UNORM8 and UNORM16 images are accepted (unsigned 8- or 16-bit samples); this one has {what}")
}

/// The width of UNORM samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleWidth {
    /// 8 bits: `x / 255`.
    Unorm8,
    /// 16 bits: `x / 65535`.
    Unorm16,
}

impl SampleWidth {
    /// Both widths.
    pub const ALL: [SampleWidth; 2] = [SampleWidth::Unorm8, SampleWidth::Unorm16];
}

/// The conversions `normalize` runs, one entry per sample width and dtype: its table
/// variant (what every backend's results are, the GPU's `Stream` kernel) and the CPU's
/// forms of it per level ([`bitexact_cpu::unorm`]), each `x / 255` or `x / 65535`
/// correctly rounded to the dtype. Adding a dtype is its entry in
/// [`crate::write`]'s table and one entry per sample width here (the array's
/// length says how many there must be); its proof is `host/wings/files/src/tests/cpu_levels.rs`, which
/// walks this table on every code at every level (and verify proves each variant on
/// every code), and `host/wings/files/src/tests/normalize_dtypes.rs` fails if a dtype lacks an entry
/// for some width.
///
/// - 8 bits → f32: `unorm8_times3_int`, the ×3 form.
/// - 16 bits → f32: `unorm16_to_f32`, the division-free scheme for 65535 from
///   `shared::schemes` (its bits are those of IEEE division): on sm_90 its work is 3
///   instructions (`I2F.U16 FMUL FFMA`), where `unorm16_div_ieee`'s is 111 (a division
///   with its slow path).
/// - → binary16: `unorm8_to_f16_odd`, `unorm16_to_f16_odd`, by rounding to odd at f32
///   precision (the form through f32 is one ULP off on two 16-bit codes).
/// - → bfloat16: `unorm8_to_bf16_via_f32`, `unorm16_to_bf16_via_f32`, through the exact
///   f32 quotient (two roundings that are never wrong for 255 and 65535; the cheapest
///   exact form on the CPU).
pub fn conversions() -> [(SampleWidth, Dtype, SampleConversion); SampleWidth::ALL.len() * Dtype::ALL.len()] {
    use SampleWidth::{Unorm8, Unorm16};
    use bitexact_cpu::unorm;
    use shared::variants::*;
    [
        (Unorm8, Dtype::F32, SampleConversion::of::<unorm8_times3_int>()),
        (Unorm16, Dtype::F32, SampleConversion::with_cpu_forms::<unorm16_to_f32>(unorm::UNORM16_TO_F32)),
        (Unorm8, Dtype::F16, SampleConversion::with_cpu_forms::<unorm8_to_f16_odd>(unorm::UNORM8_TO_F16)),
        (Unorm16, Dtype::F16, SampleConversion::with_cpu_forms::<unorm16_to_f16_odd>(unorm::UNORM16_TO_F16)),
        (Unorm8, Dtype::Bf16, SampleConversion::with_cpu_forms::<unorm8_to_bf16_via_f32>(unorm::UNORM8_TO_BF16)),
        (Unorm16, Dtype::Bf16, SampleConversion::with_cpu_forms::<unorm16_to_bf16_via_f32>(unorm::UNORM16_TO_BF16)),
    ]
}

/// The conversion `normalize` runs for samples of `width` into `dtype`, on every
/// backend: its entry in [`conversions`].
pub fn conversion(width: SampleWidth, dtype: Dtype) -> SampleConversion {
    let entry = conversions().into_iter().find(|&(w, d, _)| (w, d) == (width, dtype));
    let Some((_, _, conversion)) = entry else { unreachable!("conversions has an entry for every width and dtype") };
    conversion
}

/// `out[i]` = `samples[i] / divisor` correctly rounded to `D` ([`divide::to`]), on all
/// cores.
fn divide_into<D: DtypeOf, S: Copy + Into<u16> + Sync>(samples: &[S], divisor: u16, out: &mut [D::Stored]) {
    use rayon::prelude::*;
    const BLOCK: usize = 1 << 16;
    out.par_chunks_mut(BLOCK).zip(samples.par_chunks(BLOCK)).for_each(|(out, samples)| {
        for (o, &s) in out.iter_mut().zip(samples) {
            *o = divide::to::<D>(s.into(), divisor);
        }
    });
}

/// An image's samples as values of `D` in [0, 1], in a layout, converted on a backend as
/// they are asked for: see `Image::normalized_to`.
pub struct Normalized<'a, D> {
    image: &'a Image,
    layout: ChannelLayout,
    backend: &'a dyn Backend,
    /// `fn() -> D`: the values' type, which holds no value (so `Sync` whatever `D` is).
    dtype: PhantomData<fn() -> D>,
}

impl<D: DtypeOf> TensorSource for Normalized<'_, D> {
    type Dtype = D;
    type Error = NormalizeError;

    fn elements(&self) -> u64 {
        self.image.sample_count() as u64
    }

    fn fill(&self, start: u64, out: &mut [StoredOf<Self>]) -> Result<(), NormalizeError> {
        let range = usize::try_from(start).ok().and_then(|start| Some(start..start.checked_add(out.len())?));
        let range = range.filter(|r| r.end <= self.image.sample_count());
        let range = range.ok_or(NormalizeError::OutOfRange { start })?;
        let channels = usize::from(self.image.channels);
        let convert = |width, samples: &[u8], out: &mut [StoredOf<Self>]| {
            self.backend.convert(conversion(width, D::DTYPE), samples, bytemuck::cast_slice_mut(out))
        };
        let divisor = self.image.divisor;
        match &self.image.samples {
            Samples::Unorm8(s) if !self.image.has_table_divisor() => {
                divide_into::<D, _>(&in_layout(s, channels, self.layout, range), divisor, out);
                Ok(())
            }
            Samples::Unorm16(s) if !self.image.has_table_divisor() => {
                divide_into::<D, _>(&in_layout(s, channels, self.layout, range), divisor, out);
                Ok(())
            }
            Samples::Unorm8(s) => convert(SampleWidth::Unorm8, &in_layout(s, channels, self.layout, range), out),
            Samples::Unorm16(s) => {
                convert(SampleWidth::Unorm16, bytemuck::cast_slice(&in_layout(s, channels, self.layout, range)), out)
            }
            Samples::PngRows(rows) if self.layout == ChannelLayout::Hwc => {
                let read = rows.read(start, out.len(), |at, run| {
                    let dst = &mut out[at..at + run_len(&run)];
                    match run {
                        SampleRun::Unorm8(s) => convert(SampleWidth::Unorm8, s, dst),
                        SampleRun::Unorm16(s) => convert(SampleWidth::Unorm16, bytemuck::cast_slice(s), dst),
                    }
                    .map_err(NormalizeError::Backend)
                });
                // The image's error names the image, as one found decoding it whole does.
                return read.map_err(|error| match error {
                    NormalizeError::Stream(PngRowsError::Decode(error)) => {
                        let kind = match error {
                            image::ImageError::IoError(e) => {
                                ImageDecodeErrorKind::Decode(image::ImageError::IoError(e))
                            }
                            e => decode_error(e),
                        };
                        NormalizeError::Decode(ImageDecodeError { path: rows.path().to_path_buf(), kind })
                    }
                    other => other,
                });
            }
            Samples::PngRows(_) => return Err(NormalizeError::Stream(PngRowsError::Unordered { start })),
        }
        .map_err(NormalizeError::Backend)
    }
}

/// Samples in a run.
fn run_len(run: &SampleRun<'_>) -> usize {
    match run {
        SampleRun::Unorm8(s) => s.len(),
        SampleRun::Unorm16(s) => s.len(),
    }
}

/// Flat indices `range` of the output order for `layout`, taken from interleaved
/// `samples` with `channels` per pixel: a slice for HWC, a copy for CHW, gathered one
/// plane's run at a time (the reordering is done on the narrow samples, so that the
/// conversion itself always runs over contiguous memory). `range` lies within `samples`.
fn in_layout<T: Copy>(samples: &[T], channels: usize, layout: ChannelLayout, range: Range<usize>) -> Cow<'_, [T]> {
    match layout {
        ChannelLayout::Hwc => samples[range].into(),
        ChannelLayout::Chw => {
            let pixels = samples.len() / channels;
            let mut gathered = Vec::with_capacity(range.len());
            let mut at = range.start;
            while at < range.end {
                let (channel, pixel) = (at / pixels, at % pixels);
                let run = (pixels - pixel).min(range.end - at);
                gathered.extend(samples[pixel * channels + channel..].iter().step_by(channels).take(run).copied());
                at += run;
            }
            gathered.into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decode_error_shows_its_path_escaped_on_one_line() {
        let path = PathBuf::from("dir\nx\u{1b}[31m.png");
        let error =
            ImageDecodeError { path: path.clone(), kind: ImageDecodeErrorKind::NoPixels { width: 0, height: 3 } };
        let shown = error.to_string();
        assert!(!shown.contains('\n') && !shown.contains('\u{1b}'), "{shown:?}");
        assert_eq!(shown, format!("{}: image has no pixels (0×3)", path_text(&path)));
    }
}

#[cfg(test)]
mod format_tests {
    use super::*;

    #[test]
    fn an_unrecognised_image_names_the_formats_read_and_how_tga_is_told() {
        let dir = tempfile::tempdir().expect("temporary directory");
        // TGA has no magic number: without its extension, a TGA file is this too.
        let path = dir.path().join("picture.bin");
        std::fs::write(&path, [0x00u8, 0x00, 0x02, 0x00, 0x17, 0x42, 0x99, 0x01]).expect("write");
        let Err(error) = Image::decode(&path, ImageLimits::default()) else { panic!("garbage decoded") };
        let shown = error.to_string();
        assert!(shown.contains("cannot decode image: "), "{shown}");
        for format in ["PNG", "JPEG", "TIFF", "TGA", ".tga"] {
            assert!(shown.contains(format), "{format} missing: {shown}");
        }
        // A TGA file is read by its extension.
        let tga = dir.path().join("picture.tga");
        image::RgbImage::from_pixel(2, 1, image::Rgb([1, 2, 3])).save(&tga).expect("write a TGA");
        assert!(Image::decode(&tga, ImageLimits::default()).is_ok());
    }
}
