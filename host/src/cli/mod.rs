//! The `bitexact` command line: one module per subcommand, each with its clap
//! arguments and a `run` that turns the library's results into output and an exit
//! code.
//!
//! Owns: argument parsing, printing, and the mapping of library errors to one-line
//! messages and exit codes. May use every library module; nothing in the library uses
//! it (it is part of the binary only).

/// `eprintln!` that cannot panic: the line goes to stderr, and is dropped if stderr
/// cannot be written (`2>/dev/full`, a closed pipe), so that the exit status stays the
/// command's own.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}
pub(crate) use say;

pub mod bench;
pub mod bench_files;
pub mod cast;
pub mod choices;
pub mod error;
pub mod normalize;
pub mod ptx;
pub mod sass;
pub mod scan;
pub mod search;
pub mod signals;
pub mod verify;
