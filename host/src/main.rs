//! `bitexact`: exhaustive verification, PTX and SASS reports, GPU runs and benchmarks.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cmd_search;
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
    /// Find, for each UNORMn / SNORMn → f32, the cheapest division-free scheme that is
    /// correctly rounded on every code (proven by exhaustion against the exact
    /// rational reference); `--emit-rust` writes the library's table.
    Search(cmd_search::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => cmd_verify::run(&cli.verify),
        Some(Command::Verify(args)) => cmd_verify::run(&args),
        Some(Command::Search(args)) => cmd_search::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("bitexact: {message}");
            ExitCode::from(2)
        }
    }
}
