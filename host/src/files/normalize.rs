//! Decoded UNORM images → f32 tensors in [0, 1], correctly rounded.
//!
//! Each sample width is converted by the one primitive [`crate::files::backend`] binds
//! to it (`Unorm8Primitive`, `Unorm16Primitive`), on whichever backend runs; both are
//! proven equal to the correctly rounded `x / 255` and `x / 65535` on every input by
//! verify.
//!
//! The f32 tensor is never held whole: [`Normalized`] converts the samples a chunk at a
//! time, in the output's layout, as the writer asks for them, so that memory holds the
//! decoded image (a quarter of the f32 tensor for 8-bit samples) and a few MiB more.

use crate::files::backend::Backend;
use crate::files::tensor::io_message;
use crate::files::tensor_io::{F32Source, check_regular_file, one_line};
use std::borrow::Cow;
use std::ops::Range;
use std::path::Path;

/// Axis order of the output tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
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

/// Samples as decoded, interleaved (HWC) or planar (CHW).
pub enum Samples {
    /// 8-bit UNORM samples.
    Unorm8(Vec<u8>),
    /// 16-bit UNORM samples.
    Unorm16(Vec<u16>),
}

/// A decoded image: its samples and dimensions.
pub struct Image {
    /// Rows.
    pub height: u32,
    /// Columns.
    pub width: u32,
    /// Samples per pixel as decoded: 1 grey, 2 grey + alpha, 3 RGB, 4 RGBA.
    pub channels: u8,
    /// Interleaved samples, `height * width * channels` of them.
    pub samples: Samples,
}

impl Image {
    /// Decodes `path` with the `image` crate (format guessed from the content), keeping
    /// the decoded channel count and bit depth. Errors are one line naming the file.
    pub fn decode(path: &Path) -> Result<Image, String> {
        let fail = |message: String| format!("{}: {}", path.display(), one_line(message));
        check_regular_file(path).map_err(fail)?;
        let decoded = image::ImageReader::open(path)
            .and_then(|reader| reader.with_guessed_format())
            .map_err(|e| fail(io_message(&e)))?
            .decode()
            .map_err(|e| fail(decode_error(e)))?;
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
            other => return Err(fail(not_unorm(other.color().into()))),
        };
        let image = Image { height, width, channels, samples };
        if image.sample_count() == 0 {
            return Err(fail(format!("image has no pixels ({width}×{height})")));
        }
        Ok(image)
    }

    /// `height * width * channels`.
    pub fn sample_count(&self) -> usize {
        self.height as usize * self.width as usize * usize::from(self.channels)
    }

    /// Bits per sample: 8 or 16.
    pub fn bits(&self) -> u32 {
        match self.samples {
            Samples::Unorm8(_) => 8,
            Samples::Unorm16(_) => 16,
        }
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
    /// `i` is the correctly rounded `s / 255` (8-bit) or `s / 65535` (16-bit) of the
    /// sample that lands at flat index `i` of [`Image::shape`].
    pub fn normalized<'a>(&'a self, layout: ChannelLayout, backend: &'a dyn Backend) -> Normalized<'a> {
        Normalized { image: self, layout, backend }
    }

    /// All of [`Image::normalized`] at once, in one vector.
    pub fn to_f32(&self, layout: ChannelLayout, backend: &dyn Backend) -> Result<Vec<f32>, String> {
        let mut out = vec![0.0f32; self.sample_count()];
        self.normalized(layout, backend).fill(0, &mut out)?;
        Ok(out)
    }
}

/// A decoder's error as one phrase: a pixel format it has no decoding for is said the
/// way [`not_unorm`] says a decoded one that is not UNORM.
fn decode_error(error: image::ImageError) -> String {
    use image::error::{ImageError, UnsupportedErrorKind};
    match error {
        ImageError::Unsupported(e) => match e.kind() {
            UnsupportedErrorKind::Color(color) => not_unorm(color),
            _ => format!("cannot decode image: {e}"),
        },
        ImageError::IoError(e) => format!("cannot decode image: {}", io_message(&e)),
        e => format!("cannot decode image: {e}"),
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

/// An image's samples as f32 in [0, 1], in a layout, converted on a backend as they are
/// asked for: see [`Image::normalized`].
pub struct Normalized<'a> {
    image: &'a Image,
    layout: ChannelLayout,
    backend: &'a dyn Backend,
}

impl F32Source for Normalized<'_> {
    fn elements(&self) -> u64 {
        self.image.sample_count() as u64
    }

    fn fill(&self, start: u64, out: &mut [f32]) -> Result<(), String> {
        let range = usize::try_from(start).ok().and_then(|start| Some(start..start.checked_add(out.len())?));
        let range = range.filter(|r| r.end <= self.image.sample_count());
        let range = range.ok_or_else(|| format!("samples {start}.. are out of range"))?;
        let channels = usize::from(self.image.channels);
        match &self.image.samples {
            Samples::Unorm8(s) => self.backend.unorm8_to_f32(&in_layout(s, channels, self.layout, range), out),
            Samples::Unorm16(s) => self.backend.unorm16_to_f32(&in_layout(s, channels, self.layout, range), out),
        }
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
