//! Writes the example's embedded PTX to standard output, for tools that read a file:
//! `cargo run -q -p f16-load --bin f16-load-ptx | bitexact sass --ptx - --arch sm_90`.
use std::io::Write;

fn main() -> std::process::ExitCode {
    match std::io::stdout().lock().write_all(f16_load::PTX.as_bytes()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("f16-load-ptx: writing the PTX: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
