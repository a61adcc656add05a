//! `bitexact ptx`: the embedded PTX.

use host::ptx::{self, PTX};
use std::process::ExitCode;

/// Options of `bitexact ptx`.
#[derive(clap::Args)]
pub struct Args {
    /// Print only the kernel entry names, one per line.
    #[arg(long)]
    pub list: bool,
}

/// Prints the PTX that `bitexact` embeds (and loads on the GPU), or its entry names.
pub fn run(args: &Args) -> Result<ExitCode, String> {
    if args.list {
        for name in ptx::entry_names(PTX) {
            println!("{name}");
        }
    } else {
        print!("{PTX}");
    }
    Ok(ExitCode::SUCCESS)
}
