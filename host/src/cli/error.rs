//! Why a command failed: the library's typed errors, and the command line's own
//! complaints about its options, each with the one line `main` prints after
//! `bitexact: ` before it exits with status 2.

use bitexact::cuda_tools::sass::SassError;
use bitexact::cuda_tools::tools::ToolError;
use bitexact::files::backend::BackendError;
use bitexact::files::containers::index::ScanInputError;
use bitexact::files::normalize::image::ImageDecodeError;
use bitexact::files::read::TensorFileError;
use bitexact::files::scan::report::ScanError;
use bitexact::files::write::TensorWriteError;
use bitexact::files::{NormalizeJobError, ScanJobError};
use bitexact::gpu::GpuError;
use bitexact::search::EmitError;
use bitexact::support::output::{self, OutputError};
use bitexact::verify::table::NoVariantMatches;
use std::fmt;
use std::path::PathBuf;

/// A failed command. `Display` is one line; every one exits with status 2.
#[derive(Debug)]
#[non_exhaustive]
pub enum CliError {
    /// An option's value, or a combination of options, that the command refuses.
    Usage(String),
    /// A command that runs on a GPU found none usable: `<command> needs a GPU: <why>`.
    NeedsGpu {
        /// The subcommand.
        command: &'static str,
        /// Why the GPU could not be opened.
        source: GpuError,
    },
    /// A GPU operation failed.
    Gpu(GpuError),
    /// `--only` selected no variant.
    NoVariant(NoVariantMatches),
    /// A CUDA tool was missing or failed.
    Tool(ToolError),
    /// The SASS report could not be made.
    Sass(SassError),
    /// `search --emit-rust` could not write the schemes.
    Emit(EmitError),
    /// Stdout could not be written.
    Output(OutputError),
    /// Stdout could not be written after the output file was put in place.
    OutputWritten {
        /// The file written.
        output: PathBuf,
        /// Why stdout could not be written.
        source: OutputError,
    },
    /// `scan`'s arguments (directories, indexes) could not be turned into files.
    ScanInput(ScanInputError),
    /// A tensor file could not be opened, or its header is refused.
    TensorFile(TensorFileError),
    /// A scan stopped.
    Scan(ScanError),
    /// `normalize`'s image could not be decoded.
    Image(ImageDecodeError),
    /// `normalize`'s output could not be written.
    TensorWrite(TensorWriteError),
    /// The backend could not be had (`--device gpu` without a GPU).
    Backend(BackendError),
    /// A file named by an option could not be written: `<path>: <why>`.
    WriteFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A message a command built as text.
    Message(String),
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(message) | CliError::Message(message) => f.write_str(message),
            CliError::NeedsGpu { command, source } => write!(f, "{command} needs a GPU: {source}"),
            CliError::Gpu(e) => e.fmt(f),
            CliError::NoVariant(e) => e.fmt(f),
            CliError::Tool(e) => e.fmt(f),
            CliError::Sass(e) => e.fmt(f),
            CliError::Emit(e) => e.fmt(f),
            CliError::Output(e) => e.fmt(f),
            CliError::OutputWritten { output, source } => {
                write!(f, "{source} (the output {} was written)", output::path_text(output))
            }
            CliError::ScanInput(e) => e.fmt(f),
            CliError::TensorFile(e) => e.fmt(f),
            CliError::Scan(e) => e.fmt(f),
            CliError::Image(e) => e.fmt(f),
            CliError::TensorWrite(e) => e.fmt(f),
            CliError::Backend(e) => e.fmt(f),
            CliError::WriteFile { path, source } => write!(f, "{}: {source}", output::path_text(path)),
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CliError::NeedsGpu { source, .. } | CliError::Gpu(source) => Some(source),
            CliError::NoVariant(e) => Some(e),
            CliError::Tool(e) => Some(e),
            CliError::Sass(e) => Some(e),
            CliError::Emit(e) => Some(e),
            CliError::Output(e) | CliError::OutputWritten { source: e, .. } => Some(e),
            CliError::ScanInput(e) => Some(e),
            CliError::TensorFile(e) => Some(e),
            CliError::Scan(e) => Some(e),
            CliError::Image(e) => Some(e),
            CliError::TensorWrite(e) => Some(e),
            CliError::Backend(e) => Some(e),
            CliError::WriteFile { source, .. } => Some(source),
            CliError::Usage(_) | CliError::Message(_) => None,
        }
    }
}

/// `From` for each library error a command passes on unchanged.
macro_rules! from {
    ($($error:ty => $variant:ident),* $(,)?) => {
        $(impl From<$error> for CliError {
            fn from(e: $error) -> CliError {
                CliError::$variant(e)
            }
        })*
    };
}

from! {
    GpuError => Gpu,
    NoVariantMatches => NoVariant,
    ToolError => Tool,
    SassError => Sass,
    EmitError => Emit,
    OutputError => Output,
    ScanInputError => ScanInput,
    TensorFileError => TensorFile,
    ScanError => Scan,
    ImageDecodeError => Image,
    TensorWriteError => TensorWrite,
    BackendError => Backend,
    String => Message,
}

/// A `scan` error is the error of the step that failed.
impl From<ScanJobError> for CliError {
    fn from(e: ScanJobError) -> CliError {
        match e {
            ScanJobError::Backend(e) => e.into(),
            ScanJobError::Input(e) => e.into(),
            ScanJobError::File(e) => e.into(),
            ScanJobError::Scan(e) => e.into(),
            other => CliError::Message(other.to_string()),
        }
    }
}

/// A `normalize` error is the error of the step that failed.
impl From<NormalizeJobError> for CliError {
    fn from(e: NormalizeJobError) -> CliError {
        match e {
            NormalizeJobError::Backend(e) => e.into(),
            NormalizeJobError::Image(e) => e.into(),
            NormalizeJobError::Output(e) => e.into(),
            other => CliError::Message(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_is_the_one_line_its_layer_says() {
        let gpu = || GpuError::NoDevice { ordinal: 1, count: 1 };
        let cases: Vec<(CliError, String)> = vec![
            (
                CliError::Usage("--mib and --reps must be at least 1".into()),
                "--mib and --reps must be at least 1".into(),
            ),
            (CliError::NeedsGpu { command: "bench", source: gpu() }, format!("bench needs a GPU: {}", gpu())),
            (gpu().into(), gpu().to_string()),
            (EmitError::NotEveryDenominator.into(), EmitError::NotEveryDenominator.to_string()),
            (
                TensorFileError { path: "a.npy".into(), kind: bitexact::files::read::TensorFileErrorKind::Replaced }
                    .into(),
                "a.npy: replaced by another file after its header was read".into(),
            ),
            (
                CliError::WriteFile {
                    path: "out.json".into(),
                    source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
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
}
