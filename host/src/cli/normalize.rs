//! `bitexact normalize`: an image → an f32, binary16 or bfloat16 tensor in [0, 1],
//! correctly rounded straight to that type.

use super::error::CliError;
use clap::builder::TypedValueParser as _;
use host::files::backend::Backend;
use host::files::backend::{self, Device};
use host::files::normalize::{ChannelLayout, Image, NormalizeTo};
use host::files::tensor_io::{self, AsBf16, AsF16, AsF32, Container, Dtype, StagedOutput, TensorWriteError};
use host::support::output::{self, OutputFormat};
use std::path::PathBuf;
use std::process::ExitCode;

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
    /// Where to convert: `auto` uses the GPU when one is usable, else the CPU.
    #[arg(long, value_enum, default_value_t = Device::Auto)]
    pub device: Device,
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
    let container = tensor_io::check_output(&args.output, &args.image, args.force)?;
    tensor_io::check_dtype(&args.output, container, args.dtype)?;
    let backend = backend::select(args.device)?;
    let image = Image::decode(&args.image)?;
    let shape = image.shape(args.layout);
    let staged = match args.dtype {
        Dtype::F32 => stage::<AsF32>(args, &image, &shape, backend.as_ref()),
        Dtype::F16 => stage::<AsF16>(args, &image, &shape, backend.as_ref()),
        Dtype::Bf16 => stage::<AsBf16>(args, &image, &shape, backend.as_ref()),
    }?;
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
            summary.output,
            summary.dtype.name(),
            summary.shape,
            args.layout.name(),
            summary.bits,
            summary.channels,
            summary.input,
            summary.divisor,
            summary.device
        ),
    })?;
    staged.commit()?;
    Ok(ExitCode::SUCCESS)
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
