//! `bitexact ptx`: the embedded PTX.

use super::error::CliError;
use bitexact::gpu::ptx::{self, MODULES};
use bitexact::support::output::write_stdout;
use std::process::ExitCode;

/// Options of `bitexact ptx`.
#[derive(clap::Args)]
pub struct PtxArgs {
    /// Print only the kernel entry names, one per line.
    #[arg(long)]
    pub list: bool,
    /// The module of this PTX target (sm_80, sm_89: the hardware conversion kernels
    /// that need a newer target than the baseline); default: the baseline module, sm_75.
    #[arg(long, value_name = "ARCH")]
    pub target: Option<String>,
}

/// Prints a PTX module that `bitexact` embeds (and loads on the GPU), or its entry names.
pub fn run(args: &PtxArgs) -> Result<ExitCode, CliError> {
    let module = match &args.target {
        None => &MODULES[0],
        Some(target) => MODULES.iter().find(|m| m.target.to_string() == *target).ok_or_else(|| {
            let known: Vec<String> = MODULES.iter().map(|m| m.target.to_string()).collect();
            CliError::Usage(format!("no PTX module for {target:?} (modules: {})", known.join(", ")))
        })?,
    };
    if args.list {
        write_stdout(&ptx::entry_names(module.ptx).iter().map(|name| format!("{name}\n")).collect::<String>())?;
    } else {
        write_stdout(module.ptx)?;
    }
    Ok(ExitCode::SUCCESS)
}
