//! `bitexact normalize`: an image → an f32, binary16 or bfloat16 tensor in [0, 1],
//! correctly rounded straight to that type.

use super::error::CliError;
use clap::builder::TypedValueParser as _;
use host::files::backend::Backend;
use host::files::backend::{self, Device};
use host::files::normalize::{ChannelLayout, Image, NormalizeError, NormalizeTo};
use host::files::tensor_io::{
    self, AsBf16, AsF16, AsF32, Container, Dtype, StagedOutput, TensorWriteError, TensorWriteErrorKind,
};
use host::support::output::{self, OutputFormat};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Options of `bitexact normalize`.
#[derive(clap::Args)]
pub struct NormalizeArgs {
    /// Image to read: PNG, JPEG, GIF, BMP, TIFF, WebP, PNM, TGA, ICO, QOI, DDS, farbfeld
    /// (format detected from the content).
    pub image: PathBuf,
    /// Output tensor; the extension picks the container: .npy or .safetensors. A new
    /// file gets mode 0666 minus the umask, like a shell's `>`; one replaced with
    /// --force keeps its permission bits, like `cp` onto an existing file.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Element type: every value is `x / 255` or `x / 65535` correctly rounded straight
    /// to it (never through f32 first). `.npy` holds f32 and f16; bf16 needs
    /// .safetensors (NumPy has no bfloat16).
    #[arg(long, value_enum, default_value_t = Dtype::F32)]
    pub dtype: Dtype,
    /// Axis order: `hwc` gives shape [H, W, C], `chw` gives [C, H, W].
    #[arg(long, value_enum, default_value_t = ChannelLayout::Hwc)]
    pub layout: ChannelLayout,
    /// Tensor name in a .safetensors output.
    #[arg(long, default_value = "image")]
    pub name: String,
    /// Replace an existing output file.
    #[arg(long)]
    pub force: bool,
    /// Where to convert: `auto` picks whichever of the CPU and the GPU is faster for the
    /// job, timing both on its first slices when it is big enough (the summary says
    /// which and why); the CPU when there is no usable GPU.
    #[arg(long, value_enum, default_value_t = Device::Auto)]
    pub device: Device,
    /// Print where the time went to stderr: one line per phase (decode, convert, write,
    /// sync, rename) with milliseconds and GB/s. A non-interlaced PNG in HWC order is
    /// decoded on a thread of its own while it is converted and written: its decode line
    /// says so, and how long the conversion waited for it.
    #[arg(long)]
    pub verbose: bool,
    /// Summary format: `table` (one line) or `json`.
    #[arg(
        long,
        default_value = "table",
        value_parser = clap::builder::PossibleValuesParser::new(["table", "json"])
            .map(|s| if s == "json" { OutputFormat::Json } else { OutputFormat::Table }),
    )]
    pub format: OutputFormat,
}

/// What `normalize` did, as printed.
#[derive(serde::Serialize)]
struct Summary {
    output: String,
    container: Container,
    /// The tensor's name in a .safetensors output.
    #[serde(skip_serializing_if = "Option::is_none")]
    tensor: Option<String>,
    dtype: Dtype,
    shape: Vec<u64>,
    layout: ChannelLayout,
    input: String,
    bits: u32,
    channels: u8,
    /// Every value is the correctly rounded sample / divisor.
    divisor: u32,
    device: String,
}

/// Exit 0 once the output is in place; `Err` (exit 2) otherwise, with the output path
/// as it was. The summary is written before the output is renamed into place, so that
/// a stdout that cannot be written fails the run with nothing changed; a reader that
/// closed the pipe early is not an error (as for `scan`). A summary followed by an error
/// means the final rename failed.
pub fn run(args: &NormalizeArgs) -> Result<ExitCode, CliError> {
    let began = Instant::now();
    let container = tensor_io::check_output(&args.output, &args.image, args.force)?;
    tensor_io::check_dtype(&args.output, container, args.dtype)?;
    let device = backend::select(args.device)?;
    let decode_start = Instant::now();
    let image = Image::open(&args.image, args.layout)?;
    // The whole decode; for a streamed PNG, its header only.
    let opened = decode_start.elapsed();
    let sample_bytes = image.sample_count() as u64 * u64::from(image.bits() / 8);
    let backend = device.for_job(sample_bytes);
    let shape = image.shape(args.layout);
    let staged = match args.dtype {
        Dtype::F32 => stage::<AsF32>(args, &image, &shape, backend.as_ref()),
        Dtype::F16 => stage::<AsF16>(args, &image, &shape, backend.as_ref()),
        Dtype::Bf16 => stage::<AsBf16>(args, &image, &shape, backend.as_ref()),
    }
    .map_err(decode_error_first)?;
    let phases = staged.phases();
    let summary = Summary {
        output: args.output.display().to_string(),
        container,
        tensor: (container == Container::Safetensors).then(|| args.name.clone()),
        dtype: args.dtype,
        shape,
        layout: args.layout,
        input: args.image.display().to_string(),
        bits: image.bits(),
        channels: image.channels,
        divisor: if image.bits() == 8 { 255 } else { 65535 },
        device: backend.name(),
    };
    output::write_stdout(&match args.format {
        OutputFormat::Json => output::json(&summary),
        OutputFormat::Table | OutputFormat::Markdown => format!(
            "{}: {} {:?} ({}) in [0, 1] from the {}-bit, {}-channel {}: exact x/{}, on {}\n",
            output::path_text(&args.output),
            summary.dtype.name(),
            summary.shape,
            args.layout.name(),
            summary.bits,
            summary.channels,
            output::path_text(&args.image),
            summary.divisor,
            summary.device
        ),
    })?;
    let rename_start = Instant::now();
    staged.commit()?;
    if args.verbose {
        let file_bytes = std::fs::metadata(&args.image).map_or(0, |m| m.len());
        let phase = |name: &str, time: Duration, bytes: u64, what: &str| {
            let ms = time.as_secs_f64() * 1e3;
            let gbps = if time.is_zero() { f64::INFINITY } else { bytes as f64 / time.as_secs_f64() / 1e9 };
            let mb = bytes as f64 / 1e6;
            crate::cli::say!("bitexact: normalize: {name:<7} {ms:>8.1} ms {gbps:>7.2} GB/s ({mb:.1} MB {what})");
        };
        let of_file = format!("of samples from {:.1} MB of file", file_bytes as f64 / 1e6);
        let values = format!("of {}", args.dtype.name());
        match image.stream_timing() {
            None => {
                phase("decode", opened, sample_bytes, &of_file);
                phase("convert", phases.produce, phases.value_bytes, &format!("{values}, overlapping the write"));
            }
            Some((decoding, waited)) => {
                let ms = waited.as_secs_f64() * 1e3;
                let streamed = format!("{of_file}, on its own thread overlapping convert and write");
                phase("decode", opened + decoding, sample_bytes, &streamed);
                let converting = phases.produce.saturating_sub(waited);
                let overlap = format!("{values}, overlapping the write; it waited {ms:.1} ms more for decoded rows");
                phase("convert", converting, phases.value_bytes, &overlap);
            }
        }
        phase("write", phases.write, phases.bytes, "to the page cache");
        phase("sync", phases.sync, phases.bytes, "to disk");
        phase("rename", rename_start.elapsed(), phases.bytes, "into place");
        phase("total", began.elapsed(), phases.value_bytes, &format!("{values}, end to end"));
    }
    Ok(ExitCode::SUCCESS)
}

/// A write that failed because the streamed image could not be decoded is the image's
/// error, naming it, as it is when the image is decoded before the write.
fn decode_error_first(error: TensorWriteError) -> CliError {
    match error.kind {
        TensorWriteErrorKind::Values(values) => match values.downcast::<NormalizeError>() {
            Ok(normalize) => match *normalize {
                NormalizeError::Decode(decode) => CliError::Image(decode),
                other => CliError::TensorWrite(TensorWriteError {
                    path: error.path,
                    kind: TensorWriteErrorKind::Values(Box::new(other)),
                }),
            },
            Err(values) => {
                CliError::TensorWrite(TensorWriteError { path: error.path, kind: TensorWriteErrorKind::Values(values) })
            }
        },
        kind => CliError::TensorWrite(TensorWriteError { path: error.path, kind }),
    }
}

/// The image's values as `D`, written to a temporary file for `args.output`.
fn stage<D: NormalizeTo>(
    args: &NormalizeArgs,
    image: &Image,
    shape: &[u64],
    backend: &dyn Backend,
) -> Result<StagedOutput, TensorWriteError> {
    tensor_io::stage(&args.output, &args.name, shape, &image.normalized_to::<D>(args.layout, backend), args.force)
}
