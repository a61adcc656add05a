//! The `bitexact` command line: one module per subcommand, each with its clap
//! arguments and a `run` that turns the library's results into output and an exit
//! code.
//!
//! Owns: argument parsing, printing, and the mapping of library errors to one-line
//! messages and exit codes. May use every library module; nothing in the library uses
//! it (it is part of the binary only).

pub mod bench;
pub mod bench_files;
pub mod error;
pub mod normalize;
pub mod ptx;
pub mod sass;
pub mod scan;
pub mod search;
pub mod verify;
