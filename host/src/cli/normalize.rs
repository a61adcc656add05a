//! `bitexact normalize`: an image → an f32, binary16 or bfloat16 tensor in [0, 1],
//! correctly rounded straight to that type.

use super::choices::{DeviceArg, DtypeArg, LayoutArg, SummaryFormat};
use super::error::CliError;
use bitexact::files::normalize::image::{ImageLimits, SampleWidth, conversion};
use bitexact::files::write::Dtype;
use bitexact::files::{self, NormalizeOptions, NormalizeReport};
use bitexact::support::output;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Options of `bitexact normalize`.
#[derive(clap::Args)]
pub struct NormalizeArgs {
    /// Image to read: PNG, JPEG, GIF, BMP, TIFF, WebP, PNM, TGA, ICO, QOI, DDS, farbfeld
    /// (format detected from the content).
    pub image: PathBuf,
    /// Output tensor; the extension picks the container: .npy or .safetensors. Its
    /// directory must exist and be writable (checked before any work). A new file gets
    /// mode 0666 minus the umask, like a shell's > redirection; one replaced with --force
    /// keeps its permission bits, like cp onto an existing file.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Element type: every value is x / 255 or x / 65535 (a PNM's x / maxval)
    /// correctly rounded straight to it (never through f32 first). Each one's line says
    /// which containers hold it.
    #[arg(long, value_enum, default_value_t = DtypeArg(Dtype::F32))]
    pub dtype: DtypeArg,
    /// Axis order: hwc gives shape [H, W, C], chw gives [C, H, W].
    #[arg(long, value_enum, default_value_t = LayoutArg::Hwc)]
    pub layout: LayoutArg,
    /// Tensor name in a .safetensors output.
    #[arg(long, default_value = "image")]
    pub name: String,
    /// Replace an existing output file.
    #[arg(long)]
    pub force: bool,
    /// Refuse an image of more pixels (width × height) than this, from its header,
    /// before anything is decoded or written; the same in both layouts and every format.
    /// The default, 2^28 (16384 × 16384), bounds an RGBA f32 output at 4 GiB.
    #[arg(long, default_value_t = bitexact::files::normalize::image::DEFAULT_MAX_PIXELS)]
    pub max_pixels: u64,
    /// Where to convert: auto picks whichever of the CPU and the GPU is faster for the
    /// job, timing both on its first slices when it is big enough (the summary says
    /// which and why); the CPU when there is no usable GPU.
    #[arg(long, value_enum, default_value_t = DeviceArg::Auto)]
    pub device: DeviceArg,
    /// Print where the time went to stderr: one line per phase (decode, convert, write,
    /// sync, rename) with milliseconds and GB/s; the convert line names the CPU level
    /// (instruction set) the CPU loops ran at. A non-interlaced PNG in HWC order is
    /// decoded on a thread of its own while it is converted and written: its decode line
    /// says so, and how long the conversion waited for it.
    #[arg(long)]
    pub verbose: bool,
    /// Summary format: table (one line) or json.
    #[arg(long, value_enum, default_value_t = SummaryFormat::Table)]
    pub format: SummaryFormat,
}

/// Exit 0 once the output is in place; `Err` (exit 2) otherwise. The output path is
/// checked before any work (`files::normalize`), and the summary is printed only once
/// the output is in place: a summary always means a written output. A stdout that
/// cannot be written after that is an error that says the output was written; a reader
/// that closed the pipe early is not an error (as for `scan`).
pub fn run(args: &NormalizeArgs) -> Result<ExitCode, CliError> {
    let options = NormalizeOptions {
        dtype: args.dtype.into(),
        layout: args.layout.into(),
        name: args.name.clone(),
        force: args.force,
        device: args.device.into(),
        limits: ImageLimits { max_pixels: args.max_pixels },
    };
    let done = files::normalize(&args.image, &args.output, &options)?.commit()?;
    let summary = match args.format {
        SummaryFormat::Json => output::json(&done),
        SummaryFormat::Table => summary_line(args, &done),
    };
    output::write_stdout(&summary).map_err(|error| CliError::OutputWritten { output: args.output.clone(), error })?;
    if args.verbose {
        print_phases(&done);
    }
    Ok(ExitCode::SUCCESS)
}

/// The one-line summary of `--format table`.
fn summary_line(args: &NormalizeArgs, summary: &NormalizeReport) -> String {
    format!(
        "{}: {} {:?} ({}) in [0, 1] from the {}-bit, {}-channel {}: exact x/{}, on {}\n",
        output::path_text(&args.output),
        summary.dtype.name(),
        summary.shape,
        summary.layout.name(),
        summary.bits,
        summary.channels,
        output::path_text(&args.image),
        summary.divisor,
        summary.device
    )
}

/// `--verbose`: one line per phase on stderr.
fn print_phases(done: &NormalizeReport) {
    let timing = &done.timing;
    let phases = &timing.write;
    let phase = |name: &str, time: Duration, bytes: u64, what: &str| {
        let ms = time.as_secs_f64() * 1e3;
        let gbps = if time.is_zero() { f64::INFINITY } else { bytes as f64 / time.as_secs_f64() / 1e9 };
        let mb = bytes as f64 / 1e6;
        crate::cli::say!("bitexact: normalize: {name:<7} {ms:>8.1} ms {gbps:>7.2} GB/s ({mb:.1} MB {what})");
    };
    let of_file = format!("of samples from {:.1} MB of file", timing.file_bytes as f64 / 1e6);
    let level = bitexact::cpu::level();
    let values = format!("of {}", done.dtype.name());
    // Where the CPU converts, the instruction set its loops ran with.
    // And the form it computed the values with (bitexact::cpu::unorm).
    let form = match done.bits {
        _ if done.divisor != (1 << done.bits) - 1 => format!(" (x/{} by IEEE division)", done.divisor),
        8 => format!(" ({})", conversion(SampleWidth::Unorm8, done.dtype).cpu_form(level)),
        16 => format!(" ({})", conversion(SampleWidth::Unorm16, done.dtype).cpu_form(level)),
        _ => String::new(),
    };
    let on_cpu = format!("cpu level {level}{form}, best here {}", bitexact::cpu::Level::detect());
    match timing.streamed {
        None => {
            phase("decode", timing.opened, timing.sample_bytes, &of_file);
            phase("convert", phases.produce, phases.value_bytes, &format!("{values}, overlapping the write; {on_cpu}"));
        }
        Some((decoding, waited)) => {
            let ms = waited.as_secs_f64() * 1e3;
            let streamed = format!("{of_file}, on its own thread overlapping convert and write");
            phase("decode", timing.opened + decoding, timing.sample_bytes, &streamed);
            let converting = phases.produce.saturating_sub(waited);
            let overlap =
                format!("{values}, overlapping the write; it waited {ms:.1} ms more for decoded rows; {on_cpu}");
            phase("convert", converting, phases.value_bytes, &overlap);
        }
    }
    phase("write", phases.write, phases.bytes, "to the page cache");
    phase("sync", phases.sync, phases.bytes, "to disk");
    phase("rename", timing.rename, phases.bytes, "into place");
    phase("total", timing.total, phases.value_bytes, &format!("{values}, end to end"));
}
