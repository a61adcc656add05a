//! `bitexact scan`: count NaN and infinities in .npy / .npz / .safetensors files.

use super::choices::{DeviceArg, OutputFormat};
use super::error::CliError;
use bitexact::files::{self, ScanOptions};
use bitexact::support::output;
use std::path::PathBuf;
use std::process::ExitCode;

/// Exit status when nothing non-finite was found but some tensor could not be scanned.
const EXIT_NOT_ALL_SCANNED: u8 = 3;
/// Exit status, after the report, when `--keep-going` met a file it could not read: that
/// of any bad input.
const EXIT_UNREADABLE: u8 = 2;

/// Options of `bitexact scan`.
#[derive(clap::Args)]
pub struct ScanArgs {
    /// Files to scan: .npy, .npz or .safetensors (recognised by content whatever the
    /// extension); directories, walked for such files; a sharded checkpoint's
    /// model.safetensors.index.json, for all its shards, with the index's tensor names
    /// checked. Binary16, bfloat16, binary32, binary64, FP8 E4M3/E5M2 and their FNUZ
    /// variants, and complex tensors are scanned; integer tensors are listed, not scanned.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
    /// Where to scan: auto picks whichever of the CPU and the GPU is faster for the
    /// job, timing both on its first slices when it is big enough (the summary line
    /// says which and why); the CPU when there is no usable GPU.
    #[arg(long, value_enum, default_value_t = DeviceArg::Auto)]
    pub device: DeviceArg,
    /// Scan what can be read: a file that cannot be opened or whose header is refused
    /// is reported as unreadable (in the table and the JSON) instead of stopping the
    /// run, which then exits 2 at its end.
    #[arg(long)]
    pub keep_going: bool,
}

/// Exit 0 when every value is finite, 1 when any is not, 3 when none is found but some
/// tensor could not be scanned (its dtype or storage is not supported) or there was no
/// tensor at all; `Err` (exit 2) on any bad input, reported before anything is scanned,
/// or on a file that shrinks while it is scanned; 2 after the report with `--keep-going`
/// when a file could not be read.
pub fn run(args: &ScanArgs) -> Result<ExitCode, CliError> {
    let options = ScanOptions { device: args.device.into(), progress_bar: true, keep_going: args.keep_going };
    let scanned = files::scan(&args.files, &options)?;
    for warning in &scanned.warnings {
        crate::cli::say!("bitexact: warning: {warning}");
    }
    let report = &scanned.report;
    if args.format == OutputFormat::Json {
        output::write_stdout_with(|out| report.write_json(out))?;
    } else {
        output::write_stdout(&report.render(args.format == OutputFormat::Markdown))?;
    }
    Ok(if !report.unreadable.is_empty() {
        ExitCode::from(EXIT_UNREADABLE)
    } else if report.total.first_non_finite.is_some() {
        ExitCode::FAILURE
    } else if report.total.not_scanned > 0 || report.total.tensors == 0 {
        ExitCode::from(EXIT_NOT_ALL_SCANNED)
    } else {
        ExitCode::SUCCESS
    })
}
