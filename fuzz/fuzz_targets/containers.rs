//! Any bytes, parsed as every container: `Ok` or a one-line error, never a panic, and
//! whatever is accepted lies inside the input and scans without panicking. The bytes,
//! taken whole as an `.npy` header's text, also check the header parser's work bound:
//! at most `npy_header::STEPS_PER_BYTE` looks per byte, so a slow input is a crash here,
//! not just a timeout.
//!
//! `cargo fuzz run -O containers` from the repository root (needs cargo-fuzz). A crash
//! found here becomes a named test in `host/tests/header_fuzz.rs`.
#![no_main]

use host::files::npy_header::{self, STEPS_PER_BYTE};
use host::files::npz;
use host::files::scan::Source;
use host::files::tensor_io::{self, Container};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let parsed = npy_header::parse(data);
    assert!(parsed.steps <= STEPS_PER_BYTE * (data.len() as u64 + 1), "{} steps for {} bytes", parsed.steps, data.len());
    for container in [Container::Npy, Container::Npz, Container::Safetensors] {
        match tensor_io::parse(container, data) {
            Err(message) => assert!(!message.is_empty() && !message.contains('\n'), "{message:?}"),
            Ok(tensors) => {
                for tensor in tensors {
                    assert!(tensor.data.start <= tensor.data.end);
                    assert!(tensor.deflated.is_some() || tensor.data.end <= data.len());
                    let Some((format, endian)) = tensor.element.scanned_as() else { continue };
                    let values = tensor.elements * tensor.element.parts();
                    assert_eq!(tensor.data.len() as u64, values * format.bytes() as u64);
                    let mut non_finite = 0;
                    let mut count = |_, bytes: &[u8]| {
                        non_finite += format.count(endian, bytes, 0).non_finite();
                        Ok(())
                    };
                    match &tensor.deflated {
                        None => count(0, &data[tensor.data.clone()]).unwrap(),
                        Some(deflated) => {
                            if let Err(message) = npz::inflate(Source::Bytes(data), deflated, tensor.data.clone(), 4096, count) {
                                assert!(!message.is_empty() && !message.contains('\n'), "{message:?}");
                            }
                        }
                    }
                    assert!(non_finite <= values);
                }
            }
        }
    }
});
