//! `bitexact`: exhaustive verification, PTX and SASS reports, GPU runs and benchmarks.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cmd_normalize;
mod cmd_scan;
mod cmd_verify;

/// Bit-exact numeric-format primitives: one no_std implementation for CPU and GPU,
/// proven equal on every input.
///
/// With no subcommand, runs `verify`.
#[derive(Parser)]
#[command(name = "bitexact", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Options for `verify` when no subcommand is given.
    #[command(flatten)]
    verify: cmd_verify::Args,
}

#[derive(Subcommand)]
enum Command {
    /// Check every variant on every input of its domain against the exact reference,
    /// and time it on the CPU (the default).
    Verify(cmd_verify::Args),
    /// Count NaN and ±inf per tensor in .npy / .safetensors files; exit 0 if all are
    /// finite, 1 if any is not, 2 on error.
    Scan(cmd_scan::Args),
    /// Convert an 8- or 16-bit image to an f32 tensor in [0, 1], correctly rounded
    /// (.npy or .safetensors).
    Normalize(cmd_normalize::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => cmd_verify::run(&cli.verify),
        Some(Command::Verify(args)) => cmd_verify::run(&args),
        Some(Command::Scan(args)) => cmd_scan::run(&args),
        Some(Command::Normalize(args)) => cmd_normalize::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("bitexact: {message}");
            ExitCode::from(2)
        }
    }
}
