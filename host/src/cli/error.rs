//! Why a command failed: the library's typed errors, and the command line's own
//! complaints about its options, each with the one line `main` prints after
//! `bitexact: ` before it exits with status 2.

use bitexact::cuda_tools::sass::SassError;
use bitexact::cuda_tools::tools::ToolError;
use bitexact::files::{NormalizeJobError, ScanJobError};
use bitexact::gpu::GpuError;
use bitexact::search::EmitError;
use bitexact::support::output::{self, OutputError};
use bitexact::verify::table::NoVariantMatches;
use std::path::PathBuf;

/// clap's multi-line error as one line: its `error: ` prefix, the usage and the pointer
/// to `--help` left out, the rest (the problem, the possible values, a tip) joined.
pub(crate) fn one_line(clap_message: &str) -> String {
    let parts: Vec<&str> = clap_message
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("Usage:") && !line.starts_with("For more information"))
        .map(|line| line.strip_prefix("error: ").unwrap_or(line))
        .collect();
    // A tip is a sentence of its own; the rest (a value list) continues the problem.
    let mut text = String::new();
    for part in parts {
        let separator = if text.is_empty() {
            ""
        } else if part.starts_with("tip:") {
            "; "
        } else {
            " "
        };
        text.push_str(separator);
        text.push_str(part);
    }
    format!("{text} (see --help)")
}

/// A failed command. `Display` is one line, and each cause is in it once: a variant
/// either forwards a library error (`transparent`) or prints it in its own line, and
/// then has no `source()`. Every one exits with status 2.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// An option's value, or a combination of options, that the command refuses.
    #[error("{0}")]
    Usage(String),
    /// A command that runs on a GPU found none usable: `<command> needs a GPU: <why>`.
    #[error("{command} needs a GPU: {error}")]
    NeedsGpu {
        /// The subcommand.
        command: &'static str,
        /// Why the GPU could not be opened.
        error: GpuError,
    },
    /// A GPU operation failed.
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// `--only` selected no variant.
    #[error(transparent)]
    NoVariant(#[from] NoVariantMatches),
    /// A CUDA tool was missing or failed.
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// The SASS report could not be made.
    #[error(transparent)]
    Sass(#[from] SassError),
    /// `search --emit-rust` could not write the schemes.
    #[error(transparent)]
    Emit(#[from] EmitError),
    /// Stdout could not be written.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// Stdout could not be written after the output file was put in place.
    #[error("{error} (the output {} was written)", output::path_text(.output))]
    OutputWritten {
        /// The file written.
        output: PathBuf,
        /// Why stdout could not be written.
        error: OutputError,
    },
    /// `scan` could not give a report: the error of the step that failed.
    #[error(transparent)]
    Scan(#[from] ScanJobError),
    /// `normalize` did not write its output: the error of the step that failed.
    #[error(transparent)]
    Normalize(#[from] NormalizeJobError),
    /// `cast` wrote nothing: the error of the step that failed.
    #[error(transparent)]
    Cast(#[from] bitexact::files::CastError),
    /// An output path given to a command cannot be written there (`bench --json-out`).
    #[error(transparent)]
    OutputPath(#[from] bitexact::files::output::OutputPathError),
    /// A file named by an option could not be written: `<path>: <why>`.
    #[error("{}: {error}", output::path_text(.path))]
    WriteFile {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// A message a command built as text.
    #[error("{0}")]
    Message(String),
}

impl From<String> for CliError {
    fn from(message: String) -> CliError {
        CliError::Message(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitexact::files::backend::Device;
    use bitexact::files::read::{TensorFileError, TensorFileErrorKind};
    use bitexact::files::{NormalizeOptions, ScanOptions};
    use bitexact::support::chain::repeated_causes;

    #[test]
    fn claps_errors_become_one_line() {
        let clap = "error: invalid value 'e9' for '--to <TO>'\n  [possible values: bf16, f16, e4m3, e5m2]\n\n\
                    For more information, try '--help'.\n";
        assert_eq!(
            one_line(clap),
            "invalid value 'e9' for '--to <TO>' [possible values: bf16, f16, e4m3, e5m2] (see --help)"
        );
        let missing = "error: the following required arguments were not provided:\n  <FILES>...\n\n\
                       Usage: bitexact scan <FILES>...\n\nFor more information, try '--help'.\n";
        assert_eq!(one_line(missing), "the following required arguments were not provided: <FILES>... (see --help)");
    }

    #[test]
    fn each_error_is_the_one_line_its_layer_says() {
        let gpu = || GpuError::NoDevice { ordinal: 1, count: 1 };
        let cases: Vec<(CliError, String)> = vec![
            (
                CliError::Usage("--mib and --reps must be at least 1".into()),
                "--mib and --reps must be at least 1".into(),
            ),
            (CliError::NeedsGpu { command: "bench", error: gpu() }, format!("bench needs a GPU: {}", gpu())),
            (gpu().into(), gpu().to_string()),
            (EmitError::NotEveryDenominator.into(), EmitError::NotEveryDenominator.to_string()),
            (
                ScanJobError::File(TensorFileError { path: "a.npy".into(), kind: TensorFileErrorKind::Replaced })
                    .into(),
                "a.npy: replaced by another file after its header was read".into(),
            ),
            (
                CliError::WriteFile {
                    path: "out.json".into(),
                    error: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
                },
                format!("out.json: {}", std::io::Error::from(std::io::ErrorKind::PermissionDenied)),
            ),
        ];
        for (error, line) in cases {
            assert_eq!(error.to_string(), line);
            assert!(!line.contains('\n'), "{line}");
        }
        assert_eq!(gpu().to_string(), "no CUDA device 1: the driver reports 1 device(s)");
    }

    #[test]
    fn a_library_error_in_a_cli_error_is_one_line_that_reports_each_cause_once() {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("photo.png");
        std::fs::write(&image, b"not an image").unwrap();
        let cpu = ScanOptions { device: Device::Cpu, ..ScanOptions::default() };
        let io = || std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let errors: Vec<CliError> = vec![
            bitexact::files::scan(&[dir.path().join("missing.npy")], &cpu).unwrap_err().into(),
            bitexact::files::normalize(&image, &dir.path().join("out.npy"), &NormalizeOptions::default())
                .err()
                .expect("not an image")
                .into(),
            bitexact::files::output::check_destination(dir.path()).unwrap_err().into(),
            OutputError::Stdout(io()).into(),
            CliError::OutputWritten { output: "out.npy".into(), error: OutputError::Stdout(io()) },
            CliError::NeedsGpu { command: "bench", error: GpuError::NoDevice { ordinal: 1, count: 1 } },
            CliError::WriteFile { path: "out.json".into(), error: io() },
        ];
        for error in errors {
            let line = error.to_string();
            assert!(!line.contains('\n'), "{line}");
            assert_eq!(repeated_causes(&error), Vec::<String>::new(), "{line}");
        }
    }
}
