//! `bitexact normalize`: an image → an f32 tensor in [0, 1], correctly rounded.

use super::error::CliError;
use clap::builder::TypedValueParser as _;
use host::files::backend::{self, Device};
use host::files::normalize::{ChannelLayout, Image};
use host::files::tensor_io::{self, Container};
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
    dtype: &'static str,
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
    let backend = backend::select(args.device)?;
    let image = Image::decode(&args.image)?;
    let shape = image.shape(args.layout);
    let values = image.normalized(args.layout, backend.as_ref());
    let staged = tensor_io::stage_f32(&args.output, &args.name, &shape, &values, args.force)?;
    let summary = Summary {
        output: args.output.display().to_string(),
        container,
        tensor: (container == Container::Safetensors).then(|| args.name.clone()),
        dtype: "f32",
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
            "{}: f32 {:?} ({}) in [0, 1] from the {}-bit, {}-channel {}: exact x/{}, on {}\n",
            summary.output,
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
