//! Any bytes, parsed as every container: `Ok` or a one-line error, never a panic, and
//! whatever is accepted lies inside the input and scans without panicking (the checks
//! of `containers::parse_checked`, shared with `host/wings/files/src/tests/header_fuzz.rs`). The bytes,
//! taken whole as an `.npy` header's text, also check the header parser's work bound:
//! at most `npy_header::STEPS_PER_BYTE` looks per byte, so a slow input is a crash here,
//! not just a timeout.
//!
//! `cargo fuzz run -O containers` from the repository root (needs cargo-fuzz). A crash
//! found here becomes a named test in `host/wings/files/src/tests/header_fuzz.rs`.
#![no_main]

use bitexact::files::containers::npy_header::{self, STEPS_PER_BYTE};
use bitexact::files::containers::{self, Container};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let parsed = npy_header::parse(data);
    assert!(
        parsed.steps <= STEPS_PER_BYTE * (data.len() as u64 + 1),
        "{} steps for {} bytes",
        parsed.steps,
        data.len()
    );
    for container in [Container::Npy, Container::Npz, Container::Safetensors] {
        let _ = containers::parse_checked(container, data);
    }
});
