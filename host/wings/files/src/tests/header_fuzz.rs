//! Header handling under random and mutated input: parsing either container returns `Ok`
//! or a one-line error and never panics, whatever it accepts is safe to scan, and the
//! `.npy` header parser's work stays within `npy_header::STEPS_PER_BYTE` per byte.
//!
//! Crashers found while writing these are kept below as named regression tests.

use test_fixtures as fixtures;

use crate::containers::npy_header::{self, MAX_NPY_HEADER, MAX_NPY_NESTING, STEPS_PER_BYTE};
use crate::containers::{self, Container, TensorElement};
use fixtures::{npy_bytes, safetensors_bytes};
use proptest::prelude::*;

/// Parses `text` as an `.npy` header, asserts that the work stayed within the bound,
/// and returns the result (an error as its message) and the steps.
fn parse_npy_text(text: &[u8]) -> (Result<npy_header::Header, String>, u64) {
    let parsed = npy_header::parse(text);
    let bound = STEPS_PER_BYTE * (text.len() as u64 + 1);
    assert!(parsed.steps <= bound, "{} steps for {} bytes (bound {bound})", parsed.steps, text.len());
    let header = parsed.header.map_err(|e| e.to_string());
    if let Err(message) = &header {
        assert!(!message.is_empty() && !message.contains('\n'), "bad message {message:?}");
    }
    (header, parsed.steps)
}

/// Parses `bytes` as `container` with `containers::parse_checked` (shared with the fuzz
/// target), which checks the guarantees of `containers::parse` and scans every tensor;
/// returns the number of tensors, or the error's message. For `.npy`, checks the header
/// parser's work bound too.
fn parse_and_scan(container: Container, bytes: &[u8]) -> Result<usize, String> {
    if let (Container::Npy, Ok(text)) = (container, npy_header::header_text(bytes)) {
        let _ = parse_npy_text(&bytes[text]);
    }
    containers::parse_checked(container, bytes).map(|tensors| tensors.len()).map_err(|e| e.to_string())
}

fn check_both(bytes: &[u8]) {
    let _ = parse_and_scan(Container::Npy, bytes);
    let _ = parse_and_scan(Container::Npz, bytes);
    let _ = parse_and_scan(Container::Safetensors, bytes);
}

/// A valid `.npz` of two members (a binary16 array and a complex one), stored or deflated.
fn valid_npz(method: fixtures::ZipMethod) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let f16 = &fixtures::DTYPES[0];
    let bits = fixtures::elements(f16, 12, &[3], 1);
    let a = fixtures::npy_items_bytes(
        npyz::DType::Plain("<f2".parse().unwrap()),
        &[3, 4],
        bits.iter().map(|&b| half::f16::from_bits(b as u16)),
    );
    let z = npy_bytes(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16);
    let path = dir.path().join("v.npz");
    fixtures::write_npz(&path, &[("a.npy", a), ("z.npy", z)], method);
    std::fs::read(path).unwrap()
}

/// A valid file of each container, as the crates write them.
fn valid_files() -> (Vec<u8>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let st = dir.path().join("v.safetensors");
    let (f16, e4m3) = (&fixtures::DTYPES[0], &fixtures::DTYPES[4]);
    let bits = fixtures::elements(f16, 12, &[3], 1);
    fixtures::write_safetensors(
        &st,
        &[
            ("a", f16.safetensors, vec![3, 4], fixtures::to_bytes(f16, &bits, false)),
            ("b", e4m3.safetensors, vec![5], vec![0x7F; 5]),
        ],
    );
    let npy = dir.path().join("v.npy");
    fixtures::write_npy(&npy, f16, &[3, 4], &bits, true);
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
        // The same tail behind a header's opening `{`, so that the JSON parser sees it
        // (a file whose byte 8 is anything else stops at "not a safetensors file").
        st.truncate(8);
        st.push(b'{');
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
        let method = if deflated { fixtures::ZipMethod::Deflated } else { fixtures::ZipMethod::Stored };
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
    fn npy_header_work_is_linear_on_random_text(text in prop::collection::vec(any::<u8>(), 0..4000)) {
        let _ = parse_npy_text(&text);
    }

    /// Texts made of the grammar's own tokens, which get much further into the parser
    /// than random bytes.
    #[test]
    fn npy_header_work_is_linear_on_token_soup(
        tokens in prop::collection::vec(
            prop::sample::select(vec![
                "{", "}", "[", "]", "(", ")", ",", ":", " ", "'", "\"", "\\", "1", "-2.5e-3", "0", "9L",
                "True", "False", "None", "'descr'", "'<f4'", "'fortran_order'", "'shape'", "'x'", "\n",
            ]),
            0..2000,
        ),
    ) {
        let _ = parse_npy_text(tokens.concat().as_bytes());
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

/// Crasher (panic inside npyz, which parsed headers then, in builds with overflow
/// checks): npyz multiplies the shape's dimensions unchecked. `containers` checks the
/// product.
#[test]
fn regression_npy_shape_product_overflows_u64() {
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n";
    let error = parse_and_scan(Container::Npy, &npy_bytes(1, header, 16)).unwrap_err();
    assert!(error.contains("overflows"), "{error}");
    // With a zero dimension the product is 0, whatever the others: an empty array.
    let header = "{'descr': '<f4', 'fortran_order': True, 'shape': (4294967296, 4294967296, 0), }\n";
    assert_eq!(parse_and_scan(Container::Npy, &npy_bytes(1, header, 16)), Ok(1));
}

/// A header length field of 4 GiB must be refused before anything is allocated or read.
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
    let depth = (MAX_NPY_HEADER as usize - 100) / 2;
    let header =
        format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {}{} }}", "[".repeat(depth), "]".repeat(depth));
    assert!(parse_and_scan(Container::Npy, &npy_bytes(2, &header, 4)).is_err());
}

/// Hang found by `cargo fuzz run containers` (a 550-byte timeout artifact): npyz's
/// parser took about 2^k steps on k unclosed brackets (28 s at k = 20). Now refused
/// within the work bound, nested groups within the nesting limit included.
#[test]
fn regression_npy_unclosed_brackets_do_not_hang() {
    let groups = format!("[{}]", "[[[[[(1,),],],],],],".repeat(700));
    for value in ["[".repeat(MAX_NPY_NESTING - 1), "[".repeat(50), groups] {
        for key in ["shape", "x"] {
            let header = format!("{{'descr': '<f4', 'fortran_order': False, '{key}': {value} }}\n");
            assert!(parse_and_scan(Container::Npy, &npy_bytes(2, &header, 4)).is_err());
        }
    }
}

/// Shapes whose byte size overflows `usize` in the safetensors crate's own check.
#[test]
fn regression_safetensors_shape_overflow_is_an_error() {
    let header = r#"{"t":{"dtype":"F64","shape":[2305843009213693952,8],"data_offsets":[0,0]}}"#;
    assert!(parse_and_scan(Container::Safetensors, &safetensors_bytes(header, 0)).is_err());
}

/// Two entries of one name: serde's maps keep the last without a word, so one tensor
/// would go unscanned (or, with offsets that no longer chain, the file would be refused
/// for the wrong reason). Refused, naming the tensor, whatever the entries hold.
#[test]
fn safetensors_duplicate_tensor_names_are_refused() {
    let entry = |name: &str, start: usize| {
        format!(r#""{name}":{{"dtype":"F32","shape":[1],"data_offsets":[{start},{}]}}"#, start + 4)
    };
    for (header, data_len, name) in [
        // The last "w" would chain after "a", leaving 4 bytes of nothing but the first "w".
        (format!("{{{},{},{}}}", entry("a", 0), entry("w", 4), entry("w", 4)), 8, "w"),
        // The second "w" would replace the first, whose offsets start the data.
        (format!("{{{},{}}}", entry("w", 0), entry("w", 4)), 8, "w"),
        // Spelled differently, the same name to JSON.
        (format!("{{{},{}}}", entry("w", 0), entry("\\u0077", 4)), 8, "w"),
        (r#"{"__metadata__":{},"__metadata__":{}}"#.to_string(), 0, "__metadata__"),
    ] {
        let error = parse_and_scan(Container::Safetensors, &safetensors_bytes(&header, data_len)).unwrap_err();
        assert_eq!(error, format!("tensor name '{name}' appears twice in the header"), "{header}");
    }
    // Names that differ are fine; a key repeated inside one tensor's entry is refused
    // too, naming the entry.
    let distinct = format!("{{{},{}}}", entry("w", 0), entry("W", 4));
    assert_eq!(parse_and_scan(Container::Safetensors, &safetensors_bytes(&distinct, 8)), Ok(2));
    let inner = r#"{"w":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}}"#;
    let error = parse_and_scan(Container::Safetensors, &safetensors_bytes(inner, 4)).unwrap_err();
    assert_eq!(error, "key 'dtype' appears twice in the entry of 'w'");
}

/// Crasher of the one-line rule (found by `structured_npy_headers_never_panic`): npyz's
/// Python-literal parser reported syntax errors on five lines, echoing the header. The
/// parser of `npy_header` names the byte.
#[test]
fn regression_npy_syntax_error_is_one_line() {
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (,), }\n";
    let error = parse_and_scan(Container::Npy, &npy_bytes(1, header, 4)).unwrap_err();
    let at = header.find("(,").unwrap() + 1;
    assert_eq!(error, format!("invalid header: expected a non-negative integer dimension at byte {at}"));
}

/// Crasher of the one-line rule (found by `mutated_valid_files_never_panic`, seed kept in
/// `host/wings/files/proptest-regressions/tests/header_fuzz.txt`, where proptest looks
/// for this file's seeds): any byte inserted into a valid header.
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

/// An `.npz` member's header, stored or deflated, goes through the same linear parser as
/// an `.npy` file's (and a header too long to be accepted is not inflated further): the
/// adversarial headers give the same result inside an archive, and a structured dtype is
/// listed as not scanned.
#[test]
fn npz_member_headers_are_parsed_like_npy_files() {
    let dir = tempfile::tempdir().unwrap();
    let in_npz = |npy: &[u8], method: fixtures::ZipMethod| {
        let path = dir.path().join("member.npz");
        fixtures::write_npz(&path, &[("x.npy", npy.to_vec())], method);
        std::fs::read(path).unwrap()
    };
    for (name, _, text) in adversarial_npy_headers(1 << 12) {
        // Shape (4,) of <f4 where a header is accepted: 16 bytes of data.
        let npy = npy_bytes(2, &text, 16);
        let alone = parse_and_scan(Container::Npy, &npy).map_err(|e| format!("member 'x.npy': {e}"));
        for method in [fixtures::ZipMethod::Stored, fixtures::ZipMethod::Deflated] {
            assert_eq!(parse_and_scan(Container::Npz, &in_npz(&npy, method)), alone, "{name}, {method:?}");
        }
    }
    let structured = "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (3,), }";
    let npy = npy_bytes(1, structured, 24);
    for method in [fixtures::ZipMethod::Stored, fixtures::ZipMethod::Deflated] {
        let tensors = containers::parse(Container::Npz, &in_npz(&npy, method)).unwrap();
        assert_eq!(tensors[0].element, TensorElement::Unsupported("structured dtype"), "{method:?}");
        assert_eq!(tensors[0].dtype, "[('a', '<f4'), ('b', '<i4')]");
    }
}

/// `.npy` header texts built to be expensive, at about `size` bytes: the two cases of
/// issue 12 scaled, every bracket kind nested to the limit, long tokens, unterminated
/// ones. Each says whether it must be accepted, so that a parser that gave up early
/// cannot pass for a linear one.
fn adversarial_npy_headers(size: usize) -> Vec<(&'static str, bool, String)> {
    let known = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), ";
    let fill = |unit: &str| unit.repeat(size / unit.len());
    let nested = |open: &str, body: &str, close: &str| format!("{}{body}{}", open.repeat(7), close.repeat(7));
    vec![
        ("issue 12: {x8, 1, x8180, }x8", false, format!("{}{}1{}", "{".repeat(8), fill("1,"), "}".repeat(8))),
        ("issue 12: extra key, sets 7 deep", true, format!("{known}'x': {}}}", nested("{", &fill("1, "), "}"))),
        ("extra key, lists 7 deep", true, format!("{known}'x': {}}}", nested("[", &fill("1, "), "]"))),
        ("extra key, tuples 7 deep", true, format!("{known}'x': {}}}", nested("(", &fill("1, "), ")"))),
        ("extra key, mixed, dict inside", true, format!("{known}'x': [({{[({{{{{}}}}})]}})]}}", fill("1: 2, "))),
        ("siblings at the nesting limit", true, format!("{known}'x': [{}]}}", fill("[[[[[[1]]]]]], "))),
        ("many extra keys", true, format!("{known}{}}}", fill("'k': None, "))),
        ("long string", true, format!("{known}'x': '{}'}}", fill("a"))),
        ("escapes", true, format!("{known}'x': '{}'}}", fill("\\'"))),
        ("long number", true, format!("{known}'x': -1{}.5e+3}}", fill("0"))),
        ("long shape", true, format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({})}}", fill("1, "))),
        ("whitespace", true, format!("{known}{}}}", fill(" \n"))),
        ("all parsed, then a key missing", false, format!("{{'x': {}}}", nested("{", &fill("1, "), "}"))),
        ("unclosed brackets", false, format!("{known}'x': {}", fill("["))),
        ("unterminated string", false, format!("{known}'x': '{}", fill("a"))),
        ("long word", false, format!("{known}'x': {}}}", fill("T"))),
        ("huge dimension", false, format!("{{'shape': ({},)}}", fill("9"))),
        ("set at the top level", false, format!("{{{}}}", fill("1,"))),
    ]
}

/// The parser's work is linear in the header's length whatever it contains: counted, not
/// timed, on adversarial headers from 1 KiB to 1 MiB (64 times the largest accepted).
#[test]
fn npy_header_work_is_linear_on_adversarial_headers() {
    for size in [1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20] {
        for (name, accepted, text) in adversarial_npy_headers(size) {
            let (header, steps) = parse_npy_text(text.as_bytes());
            assert_eq!(header.is_ok(), accepted, "{name} at {size} bytes: {header:?}");
            if size == 1 << 14 {
                eprintln!("{name}: {} bytes, {steps} steps", text.len());
            }
        }
    }
}
