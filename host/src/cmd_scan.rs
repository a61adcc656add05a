//! `bitexact scan`: count NaN and infinities in .npy / .safetensors files.

use host::backend::{self, Device};
use host::progress::Progress;
use host::report::{self, Format};
use host::scan_report::{self, Report};
use host::tensor_io::TensorFile;
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `bitexact scan`.
#[derive(clap::Args)]
pub struct Args {
    /// Files to scan: .npy or .safetensors (binary16, bfloat16, binary32, binary64,
    /// FP8 E4M3/E5M2 tensors; integer tensors are listed, not scanned).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Where to scan: `auto` uses the GPU when one is usable, else the CPU.
    #[arg(long, value_enum, default_value_t = Device::Auto)]
    pub device: Device,
}

/// Exit 0 when every value is finite, 1 when any is not; `Err` (exit 2) on any bad input,
/// reported before anything is scanned, or on a file that shrinks while it is scanned.
pub fn run(args: &Args) -> Result<ExitCode, String> {
    let backend = backend::select(args.device)?;
    let files: Vec<TensorFile> = args.files.iter().map(|path| TensorFile::open(path)).collect::<Result<_, _>>()?;
    let progress = Progress::new(files.iter().map(scan_report::bytes_to_scan).sum(), "scan");
    let report = Report::scan(&files, backend.as_ref(), &progress)?;
    progress.finish();
    if args.format == Format::Json {
        report::write_stdout_with(|out| report.write_json(out))?;
    } else {
        report::write_stdout(&report.render(args.format == Format::Markdown))?;
    }
    Ok(if report.all_finite { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
