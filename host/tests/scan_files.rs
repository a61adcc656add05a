//! `scan` on the files model users have: empty tensors, FNUZ FP8 and complex dtypes,
//! dtypes it cannot read (listed, exit 3), `.npz` archives (stored and deflated),
//! safetensors content under any name, directories, and sharded checkpoints through
//! their index.

use crate::common;

use bitexact::files::scan::BLOCK_BYTES;
use common::{DTYPES, Expected, ZipMethod, bitexact, f32_npy, path_arg};
use std::path::{Path, PathBuf};
use std::process::Output;

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts exit 2, nothing on stdout, and one stderr line naming `path` and `problem`.
fn assert_refused(output: &Output, path: &Path, problem: &str) {
    let stderr = stderr(output);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert!(output.stdout.is_empty(), "stdout: {}", stdout(output));
    assert_eq!(stderr.lines().count(), 1, "one line expected: {stderr}");
    assert!(stderr.starts_with(&format!("bitexact: {}", path.display())), "{stderr:?} should name {path:?}");
    assert!(stderr.contains(problem), "{stderr:?} should mention {problem:?}");
}

/// The JSON report of `scan --format json` over `paths`, and the exit code.
fn scan_json(paths: &[&Path]) -> (serde_json::Value, Option<i32>) {
    let mut args = vec!["scan", "--device", "cpu", "--format", "json"];
    args.extend(paths.iter().map(|p| path_arg(p)));
    let output = bitexact(&args);
    let json = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&output)));
    (json, output.status.code())
}

#[test]
fn empty_tensors_are_listed_with_no_non_finite_value() {
    let dir = tempfile::tempdir().unwrap();
    // What np.save(p, np.zeros((0,))) writes: float64, shape (0,).
    let npy = dir.path().join("empty.npy");
    common::write_npy_items(&npy, npyz::DType::Plain("<f8".parse().unwrap()), &[0], std::iter::empty::<f64>());
    let st = dir.path().join("model.safetensors");
    common::write_safetensors(
        &st,
        &[
            ("empty", safetensors::Dtype::F32, vec![0, 4], vec![]),
            ("w", safetensors::Dtype::F16, vec![2], vec![0, 0x3C, 0, 0x3C]),
        ],
    );
    let output = bitexact(&["scan", "--device", "cpu", path_arg(&npy), path_arg(&st)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("all finite"), "{}", stdout(&output));

    let (json, _) = scan_json(&[&npy, &st]);
    for (file, tensor, shape) in [(0, 0, vec![0]), (1, 0, vec![0, 4])] {
        let t = &json["files"][file]["tensors"][tensor];
        assert_eq!(t["shape"], serde_json::json!(shape), "{t}");
        assert_eq!((t["elements"].as_u64(), t["nan"].as_u64(), t["skipped"].as_str()), (Some(0), Some(0), None));
    }
}

#[test]
fn fnuz_fp8_every_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fnuz.safetensors");
    let all: Vec<u64> = (0..256).chain(0..256).collect();
    let tensors: Vec<_> = DTYPES[6..]
        .iter()
        .map(|dtype| (dtype.name, dtype.safetensors, vec![2, 256], common::to_bytes(dtype, &all, false)))
        .collect();
    common::write_safetensors(&path, &tensors);
    let report = common::scan(&path).unwrap();
    for dtype in &DTYPES[6..] {
        let tensor = report.iter().find(|t| t.name == dtype.name).unwrap();
        let expected = common::expected(dtype, &all);
        assert_eq!(expected, Expected { nan: 2, pos_inf: 0, neg_inf: 0, first: Some(0x80) }, "{}", dtype.name);
        common::assert_counts(tensor, expected, "scan");
    }
}

/// Complex values with a NaN imaginary part at element 3 and infinities in element 5,
/// as (real, imag) f64 pairs.
fn complex_values() -> Vec<(f64, f64)> {
    let mut values: Vec<(f64, f64)> = (0..8).map(|i| (i as f64, -(i as f64))).collect();
    values[3].1 = f64::NAN;
    values[5] = (f64::INFINITY, f64::NEG_INFINITY);
    values
}

fn complex_npy(path: &Path, descr: &str) {
    let header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (2, 4), }}");
    let mut bytes = common::npy_bytes(1, &header, 0);
    let big = descr.starts_with('>');
    for (re, im) in complex_values() {
        for part in [re, im] {
            let mut part =
                if descr.ends_with("c8") { (part as f32).to_le_bytes().to_vec() } else { part.to_le_bytes().to_vec() };
            if big {
                part.reverse();
            }
            bytes.extend(part);
        }
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn complex_tensors_are_scanned_part_by_part() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for descr in ["<c8", ">c8", "<c16", ">c16"] {
        let path = dir.path().join(format!("{}.npy", descr.replace('<', "le_").replace('>', "be_")));
        complex_npy(&path, descr);
        paths.push(path);
    }
    let st = dir.path().join("c64.safetensors");
    let data: Vec<u8> =
        complex_values().iter().flat_map(|&(re, im)| [re as f32, im as f32]).flat_map(f32::to_le_bytes).collect();
    common::write_safetensors(&st, &[("z", safetensors::Dtype::C64, vec![8], data)]);
    paths.push(st);

    // Parts in storage order: element 3's imaginary part is part 7.
    let expected = Expected { nan: 1, pos_inf: 1, neg_inf: 1, first: Some(7) };
    for path in &paths {
        let report = common::scan(path).unwrap();
        assert_eq!(report[0].skipped, None, "{}", path.display());
        common::assert_counts(&report[0], expected, "scan");
        let output = bitexact(&["scan", "--device", "cpu", path_arg(path)]);
        assert_eq!(output.status.code(), Some(1));
        assert!(stdout(&output).contains("index 7 (element 3, imag)"), "{}", stdout(&output));
    }
    let (json, _) = scan_json(&[&paths[0]]);
    let tensor = &json["files"][0]["tensors"][0];
    assert_eq!((tensor["complex"].as_bool(), tensor["format"].as_str()), (Some(true), Some("binary32")));
    assert_eq!(tensor["elements"], 8);
}

/// A stored `.npz` with one member `a.npy`, its method changed to 12 (bzip2) in both
/// headers.
fn bzip2_npz(path: &Path) {
    common::write_npz(path, &[("a.npy", f32_npy(&[1], &[1.0]))], ZipMethod::Stored);
    let mut bytes = std::fs::read(path).unwrap();
    for (signature, method_at) in [(b"PK\x03\x04", 8), (b"PK\x01\x02", 10)] {
        let at = bytes.windows(4).position(|w| w == signature).unwrap();
        bytes[at + method_at] = 12;
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn unsupported_tensors_are_listed_as_not_scanned_and_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let st = d.join("mx.safetensors");
    common::write_safetensors(
        &st,
        &[
            ("scales", safetensors::Dtype::F8_E8M0, vec![4], vec![0x7F, 0xFF, 1, 2]),
            ("w", safetensors::Dtype::F32, vec![1], 1.0f32.to_le_bytes().to_vec()),
        ],
    );
    let long_double = d.join("long_double.npy");
    let header = "{'descr': '<f16', 'fortran_order': False, 'shape': (2,), }";
    std::fs::write(&long_double, common::npy_bytes(1, header, 32)).unwrap();
    let structured = d.join("structured.npy");
    let header = "{'descr': [('a', '<f4'), ('b', '<i4')], 'fortran_order': False, 'shape': (3,), }";
    std::fs::write(&structured, common::npy_bytes(1, header, 24)).unwrap();
    let objects = d.join("objects.npy");
    let header = "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }";
    std::fs::write(&objects, common::npy_bytes(1, header, 40)).unwrap();
    let bzip2 = d.join("bzip2.npz");
    bzip2_npz(&bzip2);

    let cases: [(&Path, &str, &str); 5] = [
        (&st, "scales", "E8M0 is not supported"),
        (&long_double, "array", "extended-precision float is not supported"),
        (&structured, "array", "structured dtype"),
        (&objects, "array", "pickled objects are not read"),
        (&bzip2, "a", "compressed with a method other than deflate"),
    ];
    for (path, tensor, why) in cases {
        let output = bitexact(&["scan", "--device", "cpu", path_arg(path)]);
        let text = stdout(&output);
        assert_eq!(output.status.code(), Some(3), "{}: {text}{}", path.display(), stderr(&output));
        assert!(text.contains(&format!("not scanned: {why}")), "{text}");
        assert!(text.contains("no NaN or infinity in what was scanned, but 1 tensor not scanned"), "{text}");
        let (json, _) = scan_json(&[path]);
        let listed = json["files"][0]["tensors"].as_array().unwrap().iter().find(|t| t["name"] == tensor).cloned();
        let listed = listed.unwrap_or_else(|| panic!("{tensor} not listed: {json}"));
        assert_eq!((listed["unsupported"].as_bool(), listed["skipped"].as_str()), (Some(true), Some(why)));
        assert_eq!((json["total"]["not_scanned"].as_u64(), json["all_finite"].as_bool()), (Some(1), Some(false)));
    }

    // Strings have no NaN: listed like integers, and the run is all finite.
    let strings = d.join("strings.npy");
    std::fs::write(&strings, common::npy_bytes(1, "{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }", 24))
        .unwrap();
    let output = bitexact(&["scan", "--device", "cpu", path_arg(&strings)]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert!(stdout(&output).contains("not scanned: not a floating-point dtype"), "{}", stdout(&output));

    // A NaN elsewhere decides: exit 1, and the verdict still says what was not scanned.
    let nan = d.join("nan.npy");
    std::fs::write(&nan, f32_npy(&[2], &[0.0, f32::NAN])).unwrap();
    let paths = [path_arg(&st), path_arg(&structured), path_arg(&nan)];
    let output = bitexact(&[&["scan", "--device", "cpu"][..], &paths].concat());
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("index 1; 2 tensors not scanned (unsupported)"), "{}", stdout(&output));
}

/// An `.npz` member under test: its file name, bytes, tensor name, and expected counts
/// (`None`: listed as an integer tensor).
struct Member {
    file: &'static str,
    bytes: Vec<u8>,
    tensor: &'static str,
    expected: Option<Expected>,
}

/// `.npz` members of every kind: float with NaN/inf at chunk and block boundaries (over
/// two inflate chunks long), 2-D big-endian, integer, empty.
fn npz_members() -> Vec<Member> {
    let f32_ = &DTYPES[2];
    let chunk_elements = bitexact::files::scan::INFLATE_CHUNK_BYTES / 4;
    let n = 2 * chunk_elements + 77;
    let positions =
        [5, BLOCK_BYTES / 4 - 1, chunk_elements - 1, chunk_elements, chunk_elements + 1, 2 * chunk_elements, n - 1];
    let big = common::elements(f32_, n, &positions, 11);
    let big_bytes = common::npy_items_bytes(
        npyz::DType::Plain("<f4".parse().unwrap()),
        &[n as u64],
        big.iter().map(|&b| f32::from_bits(b as u32)),
    );
    let f16 = &DTYPES[0];
    let small = common::elements(f16, 60, &[17, 40], 12);
    let small_bytes = common::npy_items_bytes(
        npyz::DType::Plain(">f2".parse().unwrap()),
        &[6, 10],
        small.iter().map(|&b| half::f16::from_bits(b as u16)),
    );
    let ints = common::npy_items_bytes(npyz::DType::Plain("<i8".parse().unwrap()), &[3], [1i64, 2, 3]);
    let empty = f32_npy(&[0, 3], &[]);
    vec![
        Member { file: "big.npy", bytes: big_bytes, tensor: "big", expected: Some(common::expected(f32_, &big)) },
        Member {
            file: "small.npy",
            bytes: small_bytes,
            tensor: "small",
            expected: Some(common::expected(f16, &small)),
        },
        Member { file: "ints.npy", bytes: ints, tensor: "ints", expected: None },
        Member { file: "empty.npy", bytes: empty, tensor: "empty", expected: Some(Expected::default()) },
    ]
}

#[test]
fn npz_stored_and_deflated_give_exact_counts() {
    let dir = tempfile::tempdir().unwrap();
    let members = npz_members();
    let files: Vec<(&str, Vec<u8>)> = members.iter().map(|m| (m.file, m.bytes.clone())).collect();
    for method in [ZipMethod::Stored, ZipMethod::Deflated] {
        let path = dir.path().join(format!("{method:?}.npz"));
        common::write_npz(&path, &files, method);
        let report = common::scan(&path).unwrap();
        assert_eq!(report.len(), members.len());
        for (tensor, member) in report.iter().zip(&members) {
            assert_eq!(tensor.name, member.tensor);
            match member.expected {
                Some(expected) => common::assert_counts(tensor, expected, "scan"),
                None => assert_eq!(tensor.skipped, Some("integer dtype")),
            }
        }
        assert_eq!(report[1].shape, [6, 10], "scan");
        let output = bitexact(&["scan", "--device", "cpu", path_arg(&path)]);
        assert_eq!(output.status.code(), Some(1), "{method:?}: {}", stderr(&output));
    }
}

#[test]
fn broken_npz_files_are_refused_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Random values, so that the compressed data is long and the header a small part.
    let values = common::elements(&DTYPES[2], 1 << 16, &[], 9);
    let values: Vec<f32> = values.iter().map(|&b| f32::from_bits(b as u32)).collect();
    let members = [("a.npy", f32_npy(&[1 << 16], &values))];
    let good = d.join("good.npz");
    common::write_npz(&good, &members, ZipMethod::Deflated);
    let bytes = std::fs::read(&good).unwrap();

    let truncated = d.join("truncated.npz");
    std::fs::write(&truncated, &bytes[..bytes.len() - 30]).unwrap();
    let no_npy = d.join("no_npy.npz");
    common::write_npz(&no_npy, &[("notes.txt", b"hello".to_vec())], ZipMethod::Stored);
    let garbage = d.join("garbage.npz");
    std::fs::write(&garbage, b"PK\x03\x04 and nothing else").unwrap();
    let bad_member = d.join("bad_member.npz");
    common::write_npz(&bad_member, &[("a.npy", b"\x93NUMPY\x09\x00".to_vec())], ZipMethod::Stored);
    for (path, problem) in [
        (&truncated, "no end of central directory record"),
        (&no_npy, "no .npy member"),
        (&garbage, "no end of central directory record"),
        (&bad_member, "member 'a.npy': unsupported NPY version 9.0"),
    ] {
        assert_refused(&bitexact(&["scan", path_arg(path)]), path, problem);
    }

    // Damage found only while inflating: a flipped bit in the compressed data, or a CRC
    // that does not match. Still one line, exit 2, and no report.
    let data_at = bytes.len() / 3;
    let mut flipped = bytes.clone();
    flipped[data_at] ^= 0x10;
    let corrupt = d.join("corrupt.npz");
    std::fs::write(&corrupt, flipped).unwrap();
    let crc_at = bytes.windows(4).position(|w| w == b"PK\x01\x02").unwrap() + 16;
    let mut wrong_crc = bytes.clone();
    wrong_crc[crc_at] ^= 1;
    let crc = d.join("crc.npz");
    std::fs::write(&crc, wrong_crc).unwrap();
    for path in [&corrupt, &crc] {
        let output = bitexact(&["scan", "--device", "cpu", path_arg(path)]);
        assert_refused(&output, path, "tensor 'a'");
    }
}

#[test]
fn safetensors_is_recognised_by_content_whatever_the_name() {
    let dir = tempfile::tempdir().unwrap();
    let named = dir.path().join("model.safetensors");
    let bits = common::elements(&DTYPES[2], 100, &[42], 5);
    common::write_safetensors(
        &named,
        &[("w", safetensors::Dtype::F32, vec![100], common::to_bytes(&DTYPES[2], &bits, false))],
    );
    let expected = common::expected(&DTYPES[2], &bits);
    for name in ["pytorch_model.bin", "weights", "model.st"] {
        let path = dir.path().join(name);
        std::fs::copy(&named, &path).unwrap();
        common::assert_counts(&common::scan(&path).unwrap()[0], expected, "scan");
        assert_eq!(bitexact(&["scan", "--device", "cpu", path_arg(&path)]).status.code(), Some(1));
    }
    let not_safetensors = dir.path().join("random.bin");
    std::fs::write(&not_safetensors, [16, 0, 0, 0, 0, 0, 0, 0, b'[', b']']).unwrap();
    assert_refused(&bitexact(&["scan", path_arg(&not_safetensors)]), &not_safetensors, "unknown file type");
}

#[test]
fn directories_are_walked_recursively_in_name_order() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("data");
    std::fs::create_dir_all(root.join("b/deeper")).unwrap();
    std::fs::create_dir_all(root.join("empty")).unwrap();
    std::fs::write(root.join("z.npy"), f32_npy(&[1], &[f32::INFINITY])).unwrap();
    std::fs::write(root.join("a.npy"), f32_npy(&[1], &[1.0])).unwrap();
    std::fs::write(root.join("b/notes.txt"), b"not a tensor").unwrap();
    std::fs::write(root.join("b/photo.png"), b"not a tensor either").unwrap();
    common::write_safetensors(
        &root.join("b/deeper/m.safetensors"),
        &[("w", safetensors::Dtype::I32, vec![1], vec![0; 4])],
    );
    common::write_npz(&root.join("b/c.npz"), &[("x.npy", f32_npy(&[1], &[2.0]))], ZipMethod::Stored);
    #[cfg(unix)]
    {
        // A link to a file is followed (Hugging Face's cache links its files), and the
        // file is scanned once, under its first name; a link to a directory is not
        // followed, so that a walk cannot loop.
        std::os::unix::fs::symlink(root.join("a.npy"), root.join("b/linked.npy")).unwrap();
        std::os::unix::fs::symlink(root.join("z.npy"), root.join("b/to_z.npy")).unwrap();
        std::os::unix::fs::symlink(&root, root.join("b/loop")).unwrap();
    }
    let (json, code) = scan_json(&[&root]);
    assert_eq!(code, Some(1));
    let files: Vec<String> =
        json["files"].as_array().unwrap().iter().map(|f| f["file"].as_str().unwrap().to_string()).collect();
    let mut expected = vec!["a.npy", "b/c.npz", "b/deeper/m.safetensors", "b/to_z.npy"];
    if cfg!(not(unix)) {
        expected.retain(|f| *f != "b/to_z.npy");
        expected.push("z.npy");
    }
    let expected: Vec<String> = expected.iter().map(|f| root.join(f).display().to_string()).collect();
    assert_eq!(files, expected);
    let z = if cfg!(unix) { "b/to_z.npy" } else { "z.npy" };
    assert_eq!(json["total"]["first_non_finite"]["file"], root.join(z).display().to_string());

    let empty = root.join("empty");
    assert_refused(&bitexact(&["scan", path_arg(&empty)]), &empty, "no .npy, .npz or .safetensors file");
}

/// A sharded checkpoint as `transformers` saves it: two shards and the index, with a
/// NaN in the second shard's `c`. `extra` adds tensors to shard 1 and entries to the
/// weight map.
fn sharded(dir: &Path, shard_extra: &[&str], map_extra: &[(&str, &str)]) -> PathBuf {
    let shard = |n: usize| format!("model-0000{n}-of-00002.safetensors");
    let one = 1.0f32.to_le_bytes().to_vec();
    let mut first: Vec<(&str, safetensors::Dtype, Vec<usize>, Vec<u8>)> = vec![
        ("a", safetensors::Dtype::F32, vec![1], one.clone()),
        ("b", safetensors::Dtype::F32, vec![1], one.clone()),
    ];
    first.extend(shard_extra.iter().map(|&name| (name, safetensors::Dtype::F32, vec![1], one.clone())));
    common::write_safetensors(&dir.join(shard(1)), &first);
    let c = [1.0, f32::NAN, 2.0].iter().flat_map(|x: &f32| x.to_le_bytes()).collect();
    common::write_safetensors(&dir.join(shard(2)), &[("c", safetensors::Dtype::F32, vec![3], c)]);
    let mut map = serde_json::Map::new();
    for (tensor, n) in [("a", 1), ("b", 1), ("c", 2)] {
        map.insert(tensor.into(), shard(n).into());
    }
    for &(tensor, file) in map_extra {
        map.insert(tensor.into(), file.into());
    }
    let index = dir.join("model.safetensors.index.json");
    let text = serde_json::json!({ "metadata": { "total_size": 20 }, "weight_map": map });
    std::fs::write(&index, serde_json::to_string_pretty(&text).unwrap()).unwrap();
    index
}

#[test]
fn a_sharded_checkpoint_is_scanned_through_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let index = sharded(dir.path(), &[], &[]);
    let shards: Vec<String> =
        (1..=2).map(|n| dir.path().join(format!("model-0000{n}-of-00002.safetensors")).display().to_string()).collect();
    // Through the index, and through the directory (which holds the index): each shard
    // once, in name order.
    for path in [&index, &dir.path().to_path_buf()] {
        let output = bitexact(&["scan", "--device", "cpu", "--format", "json", path_arg(path)]);
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        assert!(output.stderr.is_empty(), "{}", stderr(&output));
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let files: Vec<&str> = json["files"].as_array().unwrap().iter().map(|f| f["file"].as_str().unwrap()).collect();
        assert_eq!(files, shards);
        assert_eq!((json["total"]["tensors"].as_u64(), json["total"]["nan"].as_u64()), (Some(3), Some(1)));
        assert_eq!(json["total"]["first_non_finite"]["tensor"], "c");
    }
}

#[test]
fn an_index_that_does_not_match_its_shards() {
    let dir = tempfile::tempdir().unwrap();
    let case = |name: &str, shard_extra: &[&str], map_extra: &[(&str, &str)]| {
        let d = dir.path().join(name);
        std::fs::create_dir(&d).unwrap();
        sharded(&d, shard_extra, map_extra)
    };
    // A tensor the index lists is not in its shard: an error, before anything is scanned.
    let missing = case("missing", &[], &[("d", "model-00002-of-00002.safetensors")]);
    assert_refused(&bitexact(&["scan", path_arg(&missing)]), &missing, "missing from their shards: 1 (first: 'd'");
    // A shard holds a tensor the index does not list: a warning; it is scanned.
    let extra = case("extra", &["e"], &[]);
    let output = bitexact(&["scan", "--device", "cpu", path_arg(&extra)]);
    assert_eq!(output.status.code(), Some(1));
    let warning = stderr(&output);
    assert_eq!(warning.lines().count(), 1, "{warning}");
    assert!(warning.starts_with("bitexact: warning: ") && warning.contains("(first: 'e')"), "{warning}");
    assert!(stdout(&output).contains("  e  "), "{}", stdout(&output));
    // A shard the index names does not exist; a shard outside the index's directory.
    let absent = case("absent", &[], &[("f", "model-00003-of-00002.safetensors")]);
    let absent_shard = absent.with_file_name("model-00003-of-00002.safetensors");
    assert_refused(&bitexact(&["scan", path_arg(&absent)]), &absent_shard, "no such file");
    let outside = case("outside", &[], &[("g", "../x.safetensors")]);
    assert_refused(&bitexact(&["scan", path_arg(&outside)]), &outside, "not a file name in the index's directory");
    // Not an index at all; a tensor listed twice (JSON keeps only one of two keys).
    let not_index = dir.path().join("config.json");
    std::fs::write(&not_index, br#"{"hidden_size": 64}"#).unwrap();
    assert_refused(&bitexact(&["scan", path_arg(&not_index)]), &not_index, "missing field `weight_map`");
    let twice = dir.path().join("twice.json");
    std::fs::write(&twice, br#"{"weight_map": {"a": "s.safetensors", "a": "t.safetensors"}}"#).unwrap();
    assert_refused(&bitexact(&["scan", path_arg(&twice)]), &twice, "'a' is listed twice");
}
