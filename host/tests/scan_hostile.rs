//! `scan` on the inputs of the red team's report (issue 20): names too long to pad,
//! repeated header keys, directory entries that cannot be opened, names that would
//! drive a terminal, dtypes the build does not know, and the smaller findings (thread
//! count, echoed input, JSON of unscanned tensors, aliases, index paths, output names).

use crate::common;

use common::{ZipMethod, bitexact, path_arg};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts exit 2, nothing on stdout, and one stderr line that mentions `problem`.
fn assert_refused(output: &Output, problem: &str) {
    let stderr = stderr(output);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr:?} stdout: {}", stdout(output));
    assert!(output.stdout.is_empty(), "stdout: {}", stdout(output));
    assert_eq!(stderr.lines().count(), 1, "one line expected: {stderr:?}");
    assert!(stderr.contains(problem), "{stderr:?} should mention {problem:?}");
}

/// A `.safetensors` file of `header` followed by exactly `data`.
fn safetensors_with(path: &Path, header: &str, data: &[u8]) {
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend(header.as_bytes());
    bytes.extend(data);
    std::fs::write(path, bytes).unwrap();
}

/// One header entry: `"name":{"dtype":..,"shape":..,"data_offsets":[start,end]}`.
fn entry(name: &str, dtype: &str, shape: &str, start: usize, end: usize) -> String {
    format!(r#"{}:{{"dtype":"{dtype}","shape":{shape},"data_offsets":[{start},{end}]}}"#, serde_json::json!(name))
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn f32_npy(values: &[f32]) -> Vec<u8> {
    common::npy_items_bytes(npyz::DType::Plain("<f4".parse().unwrap()), &[values.len() as u64], values.iter().copied())
}

fn scan(args: &[&str]) -> Output {
    bitexact(&[&["scan", "--device", "cpu"][..], args].concat())
}

#[test]
fn long_names_and_shapes_never_panic_in_any_format() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.safetensors");
    // Python's safetensors writes and reads such names; a shape of 30,000 ones is one
    // element.
    let name = "n".repeat(70_000) + ".weight";
    let shape = format!("[{}]", vec!["1"; 30_000].join(","));
    let header = format!("{{{},{}}}", entry(&name, "F32", "[1]", 0, 4), entry("deep", "F32", &shape, 4, 8));
    safetensors_with(&path, &header, &f32_bytes(&[1.0, 2.0]));
    for format in ["table", "markdown", "json"] {
        let output = scan(&["--format", format, path_arg(&path)]);
        assert_eq!(output.status.code(), Some(0), "{format}: {}", stderr(&output));
        let text = stdout(&output);
        if format == "json" {
            let json: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(json["files"][0]["tensors"][0]["name"].as_str(), Some(name.as_str()), "json keeps the name");
            assert_eq!(json["files"][0]["tensors"][1]["shape"].as_array().map(Vec::len), Some(30_000));
        } else {
            // Shortened, the cut marked, the ends kept; no line as long as the name.
            assert!(text.contains("chars cut]") && text.contains("nnnn.weight"), "{format}: {}", &text[..400]);
            assert!(text.lines().all(|l| l.len() < 2_000), "{format}: a line of {} bytes", text.len());
        }
    }
}

#[test]
fn a_repeated_key_anywhere_in_the_header_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nan_then_one = f32_bytes(&[f32::NAN, 1.0]);
    // The repeat is not the last key: serde kept the last "w" (I32), and the NaN went
    // unscanned.
    let first = d.join("first.safetensors");
    let header = format!(
        "{{{},{},{}}}",
        entry("w", "F32", "[1]", 0, 4),
        entry("w", "I32", "[1]", 0, 4),
        entry("x", "F32", "[1]", 4, 8)
    );
    safetensors_with(&first, &header, &nan_then_one);
    assert_refused(&scan(&[path_arg(&first)]), "tensor name 'w' appears twice in the header");
    // 1,000 copies.
    let many = d.join("many.safetensors");
    let copies: Vec<String> = (0..1000).map(|_| entry("w", "F32", "[1]", 0, 4)).collect();
    safetensors_with(&many, &format!("{{{}}}", copies.join(",")), &nan_then_one[..4]);
    assert_refused(&scan(&[path_arg(&many)]), "tensor name 'w' appears twice in the header");
    // Inside __metadata__, and inside a tensor's entry (not its last key either).
    let metadata = d.join("metadata.safetensors");
    let header =
        format!(r#"{{"__metadata__":{{"format":"pt","format":"np","x":"y"}},{}}}"#, entry("w", "F32", "[1]", 0, 4));
    safetensors_with(&metadata, &header, &nan_then_one[..4]);
    assert_refused(&scan(&[path_arg(&metadata)]), "key 'format' appears twice in the entry of '__metadata__'");
    let inner = d.join("inner.safetensors");
    let header = r#"{"w":{"dtype":"F32","shape":[1],"extra":{"a":1,"a":2,"b":3},"data_offsets":[0,4]}}"#;
    safetensors_with(&inner, header, &nan_then_one[..4]);
    assert_refused(&scan(&[path_arg(&inner)]), "key 'a' appears twice in the entry of 'w'");
}

/// Runs `bitexact` with `args`, killing it if it has not finished in 30 s (a FIFO opened
/// for reading would block it forever).
fn run_bounded(args: &[&str]) -> Output {
    let mut child = common::spawn_bitexact(args);
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("bitexact {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_walk_reports_every_entry_it_cannot_open() {
    let dir = tempfile::tempdir().unwrap();
    let case = |name: &str| {
        let d = dir.path().join(name);
        std::fs::create_dir(&d).unwrap();
        common::write_safetensors(
            &d.join("model-00001-of-00002.safetensors"),
            &[("a", safetensors::Dtype::F32, vec![1], f32_bytes(&[1.0]))],
        );
        d
    };
    // An interrupted download leaves a link to a blob that never came.
    let dead = case("dead");
    let dead_shard = dead.join("model-00002-of-00002.safetensors");
    std::os::unix::fs::symlink(dead.join("blobs/missing"), &dead_shard).unwrap();
    let looping = case("loop");
    let loop_link = looping.join("loop.npy");
    std::os::unix::fs::symlink(&loop_link, &loop_link).unwrap();
    let fifo = case("fifo");
    let fifo_path = fifo.join("fifo.npy");
    let made = std::process::Command::new("mkfifo").arg(&fifo_path).status();
    let cases = [(dead, dead_shard, "broken symbolic link"), (looping, loop_link, "symbolic links")];
    let fifo_case = made.is_ok_and(|s| s.success()).then_some((fifo, fifo_path, "not a regular file"));
    if fifo_case.is_none() {
        common::skip("mkfifo failed: no FIFO case");
    }
    for (walked, bad, problem) in cases.into_iter().chain(fifo_case) {
        let output = run_bounded(&["scan", "--device", "cpu", path_arg(&walked)]);
        assert_refused(&output, problem);
        assert!(stderr(&output).starts_with(&format!("bitexact: {}: ", bad.display())), "{}", stderr(&output));
        // Named directly: the same line.
        let direct = run_bounded(&["scan", "--device", "cpu", path_arg(&bad)]);
        assert_eq!(stderr(&direct), stderr(&output));
    }
}

/// Bytes that move a terminal's cursor, retitle it, clear it, or fake a table row.
const HOSTILE: &str = "t\u{1b}]0;pwned\u{7}\u{1b}[2J\nfake | row\r\u{9b}31m";

#[test]
fn names_and_paths_are_escaped_in_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join(format!("dir{HOSTILE}"));
    std::fs::create_dir(&d).unwrap();
    let good = d.join("good.safetensors");
    let header = format!("{{{},{}}}", entry(HOSTILE, "F32", "[1]", 0, 4), entry("b\\n|c", "I32", "[1]", 4, 8));
    safetensors_with(&good, &header, &f32_bytes(&[f32::NAN, 0.0]));
    let raw = |text: &str| text.chars().any(|c| c.is_control() && c != '\n');
    let table = scan(&[path_arg(&good)]);
    let text = stdout(&table);
    assert_eq!(table.status.code(), Some(1), "{}", stderr(&table));
    assert!(!raw(&text), "control characters reach the terminal: {text:?}");
    // Header, rule, two rows, blank line, verdict: the newline in the name made a row.
    assert_eq!(text.lines().count(), 6, "{text}");
    assert!(text.contains(r"t\u{1b}]0;pwned\u{7}\u{1b}[2J\nfake | row\r\u{9b}31m"), "{text}");
    // A literal backslash is escaped too, so that `\n` above cannot be faked.
    assert!(text.contains(r"b\\n|c"), "{text}");
    let markdown = stdout(&scan(&["--format", "markdown", path_arg(&good)]));
    assert!(!raw(&markdown), "{markdown:?}");
    for row in markdown.lines().filter(|l| l.starts_with('|')) {
        let bars = row.char_indices().filter(|&(i, c)| c == '|' && !row[..i].ends_with('\\')).count();
        assert_eq!(bars, 10, "nine columns: {row}");
    }
    let json_out = scan(&["--format", "json", path_arg(&good)]);
    assert!(!raw(&stdout(&json_out)), "{:?}", stdout(&json_out));
    let json: serde_json::Value = serde_json::from_slice(&json_out.stdout).unwrap();
    assert_eq!(json["files"][0]["tensors"][0]["name"].as_str(), Some(HOSTILE));
    assert_eq!(json["files"][0]["file"].as_str(), good.to_str());

    // An error line: a file name with a newline, a tensor name with escapes.
    let bad = d.join("bad\nname.safetensors");
    safetensors_with(
        &bad,
        &format!("{{{},{}}}", entry(HOSTILE, "F32", "[1]", 0, 4), entry(HOSTILE, "F32", "[1]", 0, 4)),
        &[0; 4],
    );
    let output = scan(&[path_arg(&bad)]);
    assert_refused(&output, "appears twice");
    assert!(!raw(&stderr(&output)), "{:?}", stderr(&output));
    assert!(stderr(&output).contains(r"bad\nname.safetensors"), "{:?}", stderr(&output));
    // A warning: a shard holding a tensor its index does not list.
    let index = d.join("model.safetensors.index.json");
    std::fs::write(&index, r#"{"weight_map": {"b\\n|c": "good.safetensors"}}"#).unwrap();
    let output = scan(&[path_arg(&index)]);
    let warning = stderr(&output);
    assert_eq!(warning.lines().count(), 1, "{warning:?}");
    assert!(warning.starts_with("bitexact: warning: ") && !raw(&warning), "{warning:?}");
}

#[test]
fn a_tensor_of_an_unknown_dtype_does_not_hide_its_siblings() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (nan, code) in [(true, 1), (false, 3)] {
        let path = d.join(format!("st_{nan}.safetensors"));
        let header = format!(
            "{{{},{},{}}}",
            entry("new", "F8_E4M3B11FNUZ", "[2]", 0, 2),
            entry("odd", "SOMETHING_ELSE", "[3]", 2, 5),
            entry("w", "F32", "[1]", 5, 9)
        );
        let value = if nan { f32::NAN } else { 1.0 };
        safetensors_with(&path, &header, &[&[0x80, 0x80, 1, 2, 3][..], &value.to_le_bytes()].concat());
        let output = scan(&[path_arg(&path)]);
        let text = stdout(&output);
        assert_eq!(output.status.code(), Some(code), "{text}{}", stderr(&output));
        assert!(text.contains("F8_E4M3B11FNUZ") && text.contains("not scanned: unknown dtype"), "{text}");
        assert!(text.contains("2 tensors not scanned"), "{text}");

        // An .npz member of a descr NumPy writes for ml_dtypes' float8 (`<f1`).
        let npz = d.join(format!("npz_{nan}.npz"));
        let f1 = common::npy_bytes(1, "{'descr': '<f1', 'fortran_order': False, 'shape': (4,), }", 4);
        common::write_npz(&npz, &[("fp8.npy", f1), ("w.npy", f32_npy(&[0.0, value]))], ZipMethod::Deflated);
        let output = scan(&[path_arg(&npz)]);
        let text = stdout(&output);
        assert_eq!(output.status.code(), Some(code), "{text}{}", stderr(&output));
        assert!(text.contains("not scanned: unknown dtype"), "{text}");
    }
    // A bad offset stays an error, whatever the dtype.
    let bad = d.join("bad.safetensors");
    safetensors_with(&bad, &format!("{{{}}}", entry("new", "F8_E4M3B11FNUZ", "[2]", 1, 3)), &[0; 3]);
    assert_refused(&scan(&[path_arg(&bad)]), "data_offsets");
    // So does a truncated unknown member.
    let short = d.join("short.npz");
    let f1 = common::npy_bytes(1, "{'descr': '<f1', 'fortran_order': False, 'shape': (8,), }", 4);
    common::write_npz(&short, &[("fp8.npy", f1)], ZipMethod::Stored);
    assert_refused(&scan(&[path_arg(&short)]), "holds only 4");
}

#[test]
fn a_huge_thread_count_is_capped_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small.npy");
    std::fs::write(&path, f32_npy(&[1.0])).unwrap();
    let start = Instant::now();
    let output = bitexact(&["--threads", "5000", "scan", "--device", "cpu", path_arg(&path)]);
    let took = start.elapsed();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let warning = stderr(&output);
    assert!(
        warning.starts_with("bitexact: warning: --threads 5000 is more than") && warning.lines().count() == 1,
        "{warning}"
    );
    eprintln!("--threads 5000 on a 1-element file: {took:?}");
}

#[test]
fn error_lines_echo_a_bounded_excerpt_of_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.safetensors");
    let name = "x".repeat(16_000);
    safetensors_with(&path, &format!("{{{}}}", entry(&name, "F32", "[1]", 0, 8)), &[0; 8]);
    let output = scan(&[path_arg(&path)]);
    assert_refused(&output, "chars cut]");
    assert!(output.stderr.len() < 400, "{} bytes: {}", output.stderr.len(), &stderr(&output)[..400]);
}

#[test]
fn json_gives_no_counts_for_tensors_not_scanned() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.safetensors");
    let header = format!("{{{},{}}}", entry("ids", "I64", "[1]", 0, 8), entry("w", "F32", "[1]", 8, 12));
    safetensors_with(&path, &header, &[0; 12]);
    let output = scan(&["--format", "json", path_arg(&path)]);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let ids = &json["files"][0]["tensors"][0];
    assert_eq!(ids["name"], "ids");
    for key in ["nan", "pos_inf", "neg_inf", "first_non_finite"] {
        assert!(ids[key].is_null(), "{key}: {ids}");
    }
    assert_eq!(json["files"][0]["tensors"][1]["nan"], 0);
}

#[test]
fn a_file_reached_by_two_names_is_scanned_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("a.npy"), f32_npy(&[f32::NAN])).unwrap();
    std::os::unix::fs::symlink(d.join("a.npy"), d.join("b.npy")).unwrap();
    let output = scan(&["--format", "json", path_arg(d)]);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((json["total"]["files"].as_u64(), json["total"]["nan"].as_u64()), (Some(1), Some(1)), "{json}");
    // Named twice, or once directly and once through a walk: the same.
    let twice = scan(&["--format", "json", path_arg(&d.join("b.npy")), path_arg(d)]);
    let json: serde_json::Value = serde_json::from_slice(&twice.stdout).unwrap();
    assert_eq!(json["total"]["files"].as_u64(), Some(1), "{json}");
    assert_eq!(json["files"][0]["file"].as_str(), d.join("b.npy").to_str(), "the first name is kept");
    // A shard first named through an alias: listed under the index's name for it.
    let sharded = d.join("sharded");
    std::fs::create_dir(&sharded).unwrap();
    common::write_safetensors(
        &sharded.join("s.safetensors"),
        &[("w", safetensors::Dtype::F32, vec![1], f32_bytes(&[1.0]))],
    );
    std::os::unix::fs::symlink(sharded.join("s.safetensors"), d.join("alias.safetensors")).unwrap();
    let index = sharded.join("model.safetensors.index.json");
    std::fs::write(&index, r#"{"weight_map": {"w": "s.safetensors"}}"#).unwrap();
    let output = scan(&["--format", "json", path_arg(&d.join("alias.safetensors")), path_arg(&index)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["total"]["files"].as_u64(), Some(1), "{json}");
    assert_eq!(json["files"][0]["file"].as_str(), sharded.join("s.safetensors").to_str(), "{json}");
}

#[test]
fn an_index_may_name_its_shards_with_a_leading_dot() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    common::write_safetensors(&d.join("s.safetensors"), &[("a", safetensors::Dtype::F32, vec![1], f32_bytes(&[1.0]))]);
    let index = d.join("model.safetensors.index.json");
    std::fs::write(&index, r#"{"weight_map": {"a": "./s.safetensors"}}"#).unwrap();
    for path in [&index, &d.to_path_buf()] {
        let output = scan(&["--format", "json", path_arg(path)]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(json["files"][0]["file"].as_str(), d.join("s.safetensors").to_str());
        assert_eq!(json["total"]["files"].as_u64(), Some(1));
    }
}

#[test]
fn extensions_are_matched_whatever_their_case() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let png = d.join("grey.png");
    image::GrayImage::from_raw(2, 1, vec![0, 255]).unwrap().save(&png).unwrap();
    for out in ["X.NPY", "Y.SafeTensors"] {
        let out: PathBuf = d.join(out);
        let output = bitexact(&["normalize", "--device", "cpu", path_arg(&png), "-o", path_arg(&out)]);
        assert_eq!(output.status.code(), Some(0), "{out:?}: {}", stderr(&output));
        let scanned = scan(&[path_arg(&out)]);
        assert_eq!(scanned.status.code(), Some(0), "{}", stderr(&scanned));
    }
    // A walk picks them up too.
    let walked = scan(&["--format", "json", path_arg(d)]);
    let json: serde_json::Value = serde_json::from_slice(&walked.stdout).unwrap();
    assert_eq!(json["total"]["files"].as_u64(), Some(2), "{json}");
}
