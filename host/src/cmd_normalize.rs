//! `bitexact normalize`: an image → an f32 tensor in [0, 1], correctly rounded.

use host::backend::{self, Device};
use host::normalize::{Image, Layout};
use host::report;
use host::tensor_io;
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `bitexact normalize`.
#[derive(clap::Args)]
pub struct Args {
    /// Image to read: PNG, JPEG, GIF, BMP, TIFF, WebP, PNM, TGA, ICO, QOI, DDS, farbfeld
    /// (format detected from the content).
    pub image: PathBuf,
    /// Output tensor; the extension picks the container: .npy or .safetensors.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Axis order: `hwc` gives shape [H, W, C], `chw` gives [C, H, W].
    #[arg(long, value_enum, default_value_t = Layout::Hwc)]
    pub layout: Layout,
    /// Tensor name in a .safetensors output.
    #[arg(long, default_value = "image")]
    pub name: String,
    /// Replace an existing output file.
    #[arg(long)]
    pub force: bool,
    /// Where to convert: `auto` uses the GPU when one is usable, else the CPU.
    #[arg(long, value_enum, default_value_t = Device::Auto)]
    pub device: Device,
}

/// Exit 0 once the output is in place; `Err` (exit 2) otherwise, with no output written.
pub fn run(args: &Args) -> Result<ExitCode, String> {
    tensor_io::check_output(&args.output, &args.image, args.force)?;
    let backend = backend::select(args.device)?;
    let image = Image::decode(&args.image)?;
    let shape = image.shape(args.layout);
    let values = image.normalized(args.layout, backend.as_ref());
    tensor_io::write_f32_from(&args.output, &args.name, &shape, &values, args.force)?;
    report::write_stdout(&format!(
        "{}: f32 {:?} ({}) in [0, 1] from the {}-bit, {}-channel {}: exact x/{}, on {}\n",
        args.output.display(),
        shape,
        args.layout.name(),
        image.bits(),
        image.channels,
        args.image.display(),
        if image.bits() == 8 { 255 } else { 65535 },
        backend.name()
    ))?;
    Ok(ExitCode::SUCCESS)
}
