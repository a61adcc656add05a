//! `bitexact ptx`: the embedded PTX.

use super::error::CliError;
use host::gpu::ptx::{self, PTX};
use host::support::output::write_stdout;
use std::process::ExitCode;

/// Options of `bitexact ptx`.
#[derive(clap::Args)]
pub struct PtxArgs {
    /// Print only the kernel entry names, one per line.
    #[arg(long)]
    pub list: bool,
}

/// Prints the PTX that `bitexact` embeds (and loads on the GPU), or its entry names.
pub fn run(args: &PtxArgs) -> Result<ExitCode, CliError> {
    if args.list {
        write_stdout(&ptx::entry_names(PTX).iter().map(|name| format!("{name}\n")).collect::<String>())?;
    } else {
        write_stdout(PTX)?;
    }
    Ok(ExitCode::SUCCESS)
}
