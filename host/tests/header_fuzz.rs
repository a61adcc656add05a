//! Header handling under random and mutated input: parsing either container returns `Ok`
//! or a one-line error and never panics, and whatever it accepts is safe to scan.
//!
//! Crashers found while writing these are kept below as named regression tests.

mod common;

use common::{npy_bytes, safetensors_bytes};
use host::tensor_io::{self, Container};
use proptest::prelude::*;

/// Parses `bytes` as `container`; on success checks the guarantees of
/// `tensor_io::parse` and scans every tensor.
fn parse_and_scan(container: Container, bytes: &[u8]) -> Result<usize, String> {
    let tensors = tensor_io::parse(container, bytes).inspect_err(|message| {
        assert!(!message.is_empty() && !message.contains('\n'), "bad message {message:?}");
    })?;
    for t in &tensors {
        assert!(t.data.start <= t.data.end, "{t:?}");
        assert!(t.deflated.is_some() || t.data.end <= bytes.len(), "{t:?} outside {} bytes", bytes.len());
        let Some((format, endian)) = t.element.scanned_as() else { continue };
        let values = t.elements * t.element.parts();
        assert_eq!(t.data.len() as u64, values * format.bytes() as u64, "{t:?}");
        let mut non_finite = 0;
        let mut count = |_, data: &[u8]| {
            non_finite += format.count(endian, data, 0).non_finite();
            Ok(())
        };
        match &t.deflated {
            None => count(0, &bytes[t.data.clone()]).unwrap(),
            Some(deflated) => {
                if let Err(message) = host::npz::inflate(bytes, deflated, t.data.clone(), 4096, count) {
                    assert!(!message.is_empty() && !message.contains('\n'), "bad message {message:?}");
                }
            }
        }
        assert!(non_finite <= values);
    }
    Ok(tensors.len())
}

fn check_both(bytes: &[u8]) {
    let _ = parse_and_scan(Container::Npy, bytes);
    let _ = parse_and_scan(Container::Npz, bytes);
    let _ = parse_and_scan(Container::Safetensors, bytes);
}

/// A valid `.npz` of two members (a binary16 array and a complex one), stored or deflated.
fn valid_npz(method: common::ZipMethod) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let f16 = &common::DTYPES[0];
    let bits = common::elements(f16, 12, &[3], 1);
    let a = common::npy_items_bytes(
        npyz::DType::Plain("<f2".parse().unwrap()),
        &[3, 4],
        bits.iter().map(|&b| half::f16::from_bits(b as u16)),
    );
    let z = npy_bytes(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16);
    let path = dir.path().join("v.npz");
    common::write_npz(&path, &[("a.npy", a), ("z.npy", z)], method);
    std::fs::read(path).unwrap()
}

/// A valid file of each container, as the crates write them.
fn valid_files() -> (Vec<u8>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let st = dir.path().join("v.safetensors");
    let (f16, e4m3) = (&common::DTYPES[0], &common::DTYPES[4]);
    let bits = common::elements(f16, 12, &[3], 1);
    common::write_safetensors(
        &st,
        &[
            ("a", f16.safetensors, vec![3, 4], common::to_bytes(f16, &bits, false)),
            ("b", e4m3.safetensors, vec![5], vec![0x7F; 5]),
        ],
    );
    let npy = dir.path().join("v.npy");
    common::write_npy(&npy, f16, &[3, 4], &bits, true);
    (std::fs::read(st).unwrap(), std::fs::read(npy).unwrap())
}

fn dimension() -> impl Strategy<Value = u64> {
    prop_oneof![0..6u64, any::<u64>(), Just(u64::MAX), Just(1 << 32), Just(1 << 62)]
}

fn safetensors_dtype() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "F16", "BF16", "F32", "F64", "F8_E4M3", "F8_E5M2", "I64", "BOOL", "F4", "F6_E2M3", "C64", "F8_E8M0", "F7", "",
    ])
}

fn npy_descr() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "<f2", ">f2", "<f4", ">f4", "<f8", "|f8", "<f16", "<i8", "|b1", "|u1", "<c8", "<U3", "|O", "<M8[s]", "<V2",
        "f4", "",
    ])
}

fn npy_dimension() -> impl Strategy<Value = String> {
    prop_oneof![
        (0..6u64).prop_map(|d| d.to_string()),
        any::<u64>().prop_map(|d| d.to_string()),
        any::<i64>().prop_map(|d| d.to_string()),
        Just("18446744073709551616".to_string()),
        Just("2.5".to_string()),
        Just("'x'".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        check_both(&bytes);
    }

    #[test]
    fn random_bytes_behind_a_valid_prefix_never_panic(
        npy_version in 1u8..4,
        length in any::<u32>(),
        tail in prop::collection::vec(any::<u8>(), 0..300),
    ) {
        let mut npy = vec![0x93, b'N', b'U', b'M', b'P', b'Y', npy_version, 0];
        npy.extend(length.to_le_bytes());
        npy.extend(&tail);
        check_both(&npy);
        let mut st = u64::from(length % 400).to_le_bytes().to_vec();
        st.extend(&tail);
        check_both(&st);
    }

    #[test]
    fn mutated_valid_files_never_panic(
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        cut in any::<usize>(),
        insert in prop::collection::vec(any::<u8>(), 0..4),
    ) {
        let (st, npy) = valid_files();
        for mut bytes in [st, npy] {
            for &(at, value) in &edits {
                let len = bytes.len();
                bytes[at % len] = value;
            }
            let at = cut % (bytes.len() + 1);
            let mut inserted = bytes.clone();
            inserted.splice(at..at, insert.iter().copied());
            check_both(&inserted);
            bytes.truncate(at);
            check_both(&bytes);
        }
    }

    #[test]
    fn mutated_npz_archives_never_panic(
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        cut in any::<usize>(),
        deflated in any::<bool>(),
    ) {
        let method = if deflated { common::ZipMethod::Deflated } else { common::ZipMethod::Stored };
        let mut bytes = valid_npz(method);
        prop_assert_eq!(parse_and_scan(Container::Npz, &bytes), Ok(2));
        for &(at, value) in &edits {
            let len = bytes.len();
            bytes[at % len] = value;
        }
        check_both(&bytes);
        bytes.truncate(cut % (bytes.len() + 1));
        check_both(&bytes);
    }

    #[test]
    fn structured_safetensors_headers_never_panic(
        tensors in prop::collection::vec(
            (safetensors_dtype(), prop::collection::vec(dimension(), 0..4), 0..64usize, 0..64usize),
            0..4,
        ),
        metadata in any::<bool>(),
        data_len in 0..200usize,
    ) {
        let entries: Vec<String> = tensors
            .iter()
            .enumerate()
            .map(|(i, (dtype, shape, start, len))| {
                format!(r#""t{i}":{{"dtype":"{dtype}","shape":{shape:?},"data_offsets":[{start},{}]}}"#, start + len)
            })
            .chain(metadata.then(|| r#""__metadata__":{"format":"pt"}"#.to_string()))
            .collect();
        let header = format!("{{{}}}", entries.join(","));
        let _ = parse_and_scan(Container::Safetensors, &safetensors_bytes(&header, data_len));
    }

    #[test]
    fn structured_npy_headers_never_panic(
        version in 1u8..4,
        descr in npy_descr(),
        fortran in any::<bool>(),
        shape in prop::collection::vec(npy_dimension(), 0..4),
        tuple in any::<bool>(),
        data_len in 0..200usize,
    ) {
        let shape = if tuple { format!("({},)", shape.join(", ")) } else { format!("[{}]", shape.join(", ")) };
        let fortran = if fortran { "True" } else { "False" };
        let header = format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}\n");
        let _ = parse_and_scan(Container::Npy, &npy_bytes(version, &header, data_len));
    }
}

#[test]
fn valid_files_parse() {
    let (st, npy) = valid_files();
    assert_eq!(parse_and_scan(Container::Safetensors, &st), Ok(2));
    assert_eq!(parse_and_scan(Container::Npy, &npy), Ok(1));
}

/// Crasher (panic inside npyz in builds with overflow checks, such as `cargo test`):
/// npyz multiplies the shape's dimensions unchecked. Fixed by building npyz without
/// overflow checks (root Cargo.toml) and checking the product in `tensor_io`.
#[test]
fn regression_npy_shape_product_overflows_u64() {
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n";
    let error = parse_and_scan(Container::Npy, &npy_bytes(1, header, 16)).unwrap_err();
    assert!(error.contains("overflows"), "{error}");
    // With a zero dimension the product is 0, whatever the others: an empty array.
    let header = "{'descr': '<f4', 'fortran_order': True, 'shape': (4294967296, 4294967296, 0), }\n";
    assert_eq!(parse_and_scan(Container::Npy, &npy_bytes(1, header, 16)), Ok(1));
}

/// A header length field of 4 GiB must be refused before npyz allocates it.
#[test]
fn regression_npy_header_length_is_bounded_before_allocation() {
    let mut bytes = npy_bytes(2, "", 0);
    bytes[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    let error = parse_and_scan(Container::Npy, &bytes).unwrap_err();
    assert!(error.contains("oversized header"), "{error}");
}

/// Deeply nested brackets in the header text must not overflow the parser's stack.
#[test]
fn regression_npy_deeply_nested_header_is_an_error() {
    let depth = (tensor_io::MAX_NPY_HEADER as usize - 100) / 2;
    let header =
        format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {}{} }}", "[".repeat(depth), "]".repeat(depth));
    assert!(parse_and_scan(Container::Npy, &npy_bytes(2, &header, 4)).is_err());
}

/// Hang found by `cargo fuzz run containers` (a 550-byte timeout artifact): npyz's
/// parser takes about 2^k steps on k unclosed brackets (28 s at k = 20). Headers nested
/// deeper than `MAX_NPY_NESTING` are refused before parsing; within the limit, even a
/// header full of nested groups parses at once.
#[test]
fn regression_npy_unclosed_brackets_do_not_hang() {
    let groups = format!("[{}]", "[[[[[(1,),],],],],],".repeat(700));
    for shape in ["[".repeat(tensor_io::MAX_NPY_NESTING - 1), "[".repeat(50), groups] {
        let header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape} }}\n");
        let start = std::time::Instant::now();
        assert!(parse_and_scan(Container::Npy, &npy_bytes(2, &header, 4)).is_err());
        assert!(start.elapsed().as_secs_f64() < 2.0, "{:?} for {} bytes of header", start.elapsed(), header.len());
    }
}

/// Shapes whose byte size overflows `usize` in the safetensors crate's own check.
#[test]
fn regression_safetensors_shape_overflow_is_an_error() {
    let header = r#"{"t":{"dtype":"F64","shape":[2305843009213693952,8],"data_offsets":[0,0]}}"#;
    assert!(parse_and_scan(Container::Safetensors, &safetensors_bytes(header, 0)).is_err());
}

/// Crasher of the one-line rule (found by `structured_npy_headers_never_panic`): npyz's
/// Python-literal parser reports syntax errors on five lines, echoing the header.
#[test]
fn regression_npy_syntax_error_is_one_line() {
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (,), }\n";
    let error = parse_and_scan(Container::Npy, &npy_bytes(1, header, 4)).unwrap_err();
    assert_eq!(error, "invalid header: could not parse Python expression: syntax error:  --> 1:52 expected value");
}

/// Crasher of the one-line rule (found by `mutated_valid_files_never_panic`, seed kept in
/// `header_fuzz.proptest-regressions`): any byte inserted into a valid header.
#[test]
fn regression_bytes_inserted_anywhere_in_a_header_give_one_line_errors() {
    let (st, npy) = valid_files();
    for (container, bytes) in [(Container::Safetensors, st), (Container::Npy, npy)] {
        for at in 0..bytes.len().min(200) {
            for byte in [0u8, b'\n', b'[', b'"', 0xFF] {
                let mut mutated = bytes.clone();
                mutated.insert(at, byte);
                let _ = parse_and_scan(container, &mutated);
            }
        }
    }
}
