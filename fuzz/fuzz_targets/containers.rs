//! Any bytes, parsed as both containers: `Ok` or a one-line error, never a panic, and
//! whatever is accepted lies inside the input and scans without panicking. The bytes,
//! taken whole as an `.npy` header's text, also check the header parser's work bound:
//! at most `npy_header::STEPS_PER_BYTE` looks per byte, so a slow input is a crash here,
//! not just a timeout.
//!
//! `cargo fuzz run -O containers` from the repository root (needs cargo-fuzz). A crash
//! found here becomes a named test in `host/tests/header_fuzz.rs`.
#![no_main]

use host::npy_header::{self, STEPS_PER_BYTE};
use host::tensor_io::{self, Container, Element};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let parsed = npy_header::parse(data);
    assert!(parsed.steps <= STEPS_PER_BYTE * (data.len() as u64 + 1), "{} steps for {} bytes", parsed.steps, data.len());
    for container in [Container::Npy, Container::Safetensors] {
        match tensor_io::parse(container, data) {
            Err(message) => assert!(!message.is_empty() && !message.contains('\n'), "{message:?}"),
            Ok(tensors) => {
                for tensor in tensors {
                    assert!(tensor.data.start <= tensor.data.end && tensor.data.end <= data.len());
                    assert!(tensor.elements > 0);
                    if let Element::Float(format, endian) = tensor.element {
                        assert_eq!(tensor.data.len() as u64, tensor.elements * format.bytes() as u64);
                        let counts = format.count(endian, &data[tensor.data.clone()], 0);
                        assert!(counts.non_finite() <= tensor.elements);
                    }
                }
            }
        }
    }
});
