//! Any bytes, parsed as every container: `Ok` or a one-line error, never a panic, and
//! whatever is accepted lies inside the input and scans without panicking.
//!
//! `cargo fuzz run -O containers` from the repository root (needs cargo-fuzz). `-O`
//! builds without debug assertions, as `bitexact` ships: npyz multiplies a header's shape
//! unchecked, which panics with overflow checks on (host checks the product itself and
//! builds npyz without them in the dev profile; see
//! `regression_npy_shape_product_overflows_u64`). A crash found here becomes a named test
//! in `host/tests/header_fuzz.rs`.
#![no_main]

use host::npz;
use host::tensor_io::{self, Container};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
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
                            if let Err(message) = npz::inflate(data, deflated, tensor.data.clone(), 4096, count) {
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
