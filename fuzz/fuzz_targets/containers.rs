//! Any bytes, parsed as both containers: `Ok` or a one-line error, never a panic, and
//! whatever is accepted lies inside the input and scans without panicking.
//!
//! `cargo fuzz run -O containers` from the repository root (needs cargo-fuzz). `-O`
//! builds without debug assertions, as `bitexact` ships: npyz multiplies a header's shape
//! unchecked, which panics with overflow checks on (host checks the product itself and
//! builds npyz without them in the dev profile; see
//! `regression_npy_shape_product_overflows_u64`). A crash found here becomes a named test
//! in `host/tests/header_fuzz.rs`.
#![no_main]

use host::tensor_io::{self, Container, Element};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
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
