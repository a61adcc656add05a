//! The built `bitexact` binary on good and bad files: exit codes 0 / 1 / 2, and one-line
//! error messages that name the file.

mod common;

use common::DTYPES;
use image::{ImageBuffer, Luma, Rgba};
use std::path::{Path, PathBuf};
use std::process::Output;

fn bitexact(args: &[&str]) -> Output {
    common::bitexact_command().args(args).output().expect("run bitexact")
}

fn path_arg(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

/// Asserts exit 2, nothing on stdout, and exactly one stderr line starting with
/// `bitexact: <path>:` and containing `problem`.
fn assert_fails(output: &Output, path: &Path, problem: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert!(output.stdout.is_empty(), "stdout: {}", String::from_utf8_lossy(&output.stdout));
    assert_eq!(stderr.lines().count(), 1, "one line expected: {stderr}");
    let prefix = format!("bitexact: {}: ", path.display());
    assert!(stderr.starts_with(&prefix), "{stderr:?} should start with {prefix:?}");
    assert!(stderr.contains(problem), "{stderr:?} should mention {problem:?}");
}

fn safetensors_file(dir: &Path, name: &str, header: &str, data_len: usize) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, common::safetensors_bytes(header, data_len)).unwrap();
    path
}

fn npy_file(dir: &Path, name: &str, header: &str, data_len: usize) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, common::npy_bytes(1, header, data_len)).unwrap();
    path
}

#[test]
fn scan_exit_codes_0_and_1() {
    let dir = tempfile::tempdir().unwrap();
    let f16 = &DTYPES[0];
    let finite = dir.path().join("finite.safetensors");
    let bits = common::elements(f16, 1000, &[], 1);
    common::write_safetensors(&finite, &[("w", f16.safetensors, vec![10, 100], common::to_bytes(f16, &bits, false))]);
    let output = bitexact(&["scan", path_arg(&finite)]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("all finite"));

    let bad = dir.path().join("bad.npy");
    let f32_ = &DTYPES[2];
    let bits = common::elements(f32_, 1000, &[417, 600], 2);
    common::write_npy(&bad, f32_, &[1000], &bits, false);
    let first = common::expected(f32_, &bits).first.expect("an injected infinity");
    for args in [vec!["scan"], vec!["scan", "--device", "cpu"]] {
        let output = bitexact(&[&args[..], &[path_arg(&finite), path_arg(&bad)]].concat());
        assert_eq!(output.status.code(), Some(1), "{output:?}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains(&format!("tensor 'array' index {first}")), "{stdout}");
    }
}

#[test]
fn scan_json_report() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.safetensors");
    let bf16 = &DTYPES[1];
    let bits = common::elements(bf16, 64, &[9, 10, 11], 3);
    let expected = common::expected(bf16, &bits);
    common::write_safetensors(&path, &[("b", bf16.safetensors, vec![8, 8], common::to_bytes(bf16, &bits, false))]);
    let output = bitexact(&["scan", "--format", "json", path_arg(&path)]);
    assert_eq!(output.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let tensor = &json["files"][0]["tensors"][0];
    assert_eq!(tensor["name"], "b");
    assert_eq!(tensor["format"], "bfloat16");
    assert_eq!(tensor["nan"], expected.nan);
    assert_eq!(tensor["pos_inf"], expected.pos_inf);
    assert_eq!(tensor["neg_inf"], expected.neg_inf);
    assert_eq!(tensor["first_non_finite"], expected.first.expect("an injected infinity"));
    assert_eq!(json["total"]["first_non_finite"]["tensor"], "b");
    assert_eq!(json["all_finite"], false);
}

#[test]
fn scan_bad_inputs_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tensor = |dtype: &str, shape: &str, end: usize| {
        format!(r#"{{"t":{{"dtype":"{dtype}","shape":{shape},"data_offsets":[0,{end}]}}}}"#)
    };
    let wrong_magic = d.join("wrong_magic.npy");
    std::fs::write(&wrong_magic, b"PK\x03\x04 not numpy").unwrap();
    let empty = d.join("empty.safetensors");
    std::fs::write(&empty, b"").unwrap();
    let short_length = d.join("short_length.safetensors");
    std::fs::write(&short_length, [1, 0, 0]).unwrap();
    let oversized_npy = d.join("oversized.npy");
    let mut bytes = common::npy_bytes(2, "", 0);
    bytes[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(&oversized_npy, bytes).unwrap();
    let no_tensors = d.join("no_tensors");
    std::fs::create_dir(&no_tensors).unwrap();
    let unknown_type = d.join("weights.bin");
    std::fs::write(&unknown_type, b"1234").unwrap();
    let cases: Vec<(PathBuf, &str)> = vec![
        (d.join("missing.safetensors"), "no such file"),
        (no_tensors, "no .npy, .npz or .safetensors file"),
        (wrong_magic, "wrong magic"),
        (empty, "empty file"),
        (short_length, "truncated"),
        (safetensors_file(d, "claims_more.safetensors", &tensor("F32", "[4]", 16), 8), "claims 16 data bytes"),
        (safetensors_file(d, "trailing.safetensors", &tensor("F32", "[1]", 4), 9), "belong to no tensor"),
        (safetensors_file(d, "unknown_dtype.safetensors", &tensor("F7", "[1]", 1), 1), "unknown dtype `F7`"),
        (safetensors_file(d, "json.safetensors", "{\"t\":", 0), "invalid header"),
        (oversized_npy, "oversized header"),
        (
            npy_file(d, "npy_short.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", 19),
            "holds only 19",
        ),
        (npy_file(d, "npy_dict.npy", "{'descr': '<f4', 'shape': (1,), }", 4), "fortran_order"),
        (unknown_type, "unknown file type"),
    ];
    // A header length beyond the file: write it by hand (8-byte length, then too few bytes).
    let truncated = d.join("truncated.safetensors");
    let mut bytes = 1000u64.to_le_bytes().to_vec();
    bytes.extend(b"{}");
    std::fs::write(&truncated, bytes).unwrap();
    let oversized = d.join("oversized.safetensors");
    std::fs::write(&oversized, (1u64 << 40).to_le_bytes()).unwrap();
    let cases = cases.into_iter().chain([(truncated, "truncated header"), (oversized, "oversized header")]);
    for (path, problem) in cases {
        assert_fails(&bitexact(&["scan", path_arg(&path)]), &path, problem);
    }
}

#[test]
fn scan_stops_before_scanning_when_any_file_is_bad() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.npy");
    common::write_npy(&good, &DTYPES[0], &[2], &[0, 0x7C00], false);
    let missing = dir.path().join("missing.npy");
    assert_fails(&bitexact(&["scan", path_arg(&good), path_arg(&missing)]), &missing, "no such file");
}

#[test]
fn device_gpu_without_gpu_is_a_one_line_error() {
    if host::gpu::Gpu::open(0).is_ok() {
        common::skip("a GPU is present, so --device gpu cannot fail for want of one");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.npy");
    common::write_npy(&good, &DTYPES[0], &[1], &[0], false);
    for command in ["scan", "normalize"] {
        let out = dir.path().join("out.npy");
        let args = if command == "scan" {
            vec![command, "--device", "gpu", path_arg(&good)]
        } else {
            vec![command, "--device", "gpu", path_arg(&good), "-o", path_arg(&out)]
        };
        let output = bitexact(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2));
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("bitexact: --device gpu: no CUDA"), "{stderr}");
        assert!(!out.exists());
    }
    let output = bitexact(&["scan", "--device", "auto", path_arg(&good)]);
    assert_eq!(output.status.code(), Some(0), "auto falls back to the CPU");
}

fn grey_png(path: &Path) {
    ImageBuffer::<Luma<u8>, _>::from_raw(4, 2, vec![0, 1, 2, 3, 127, 128, 254, 255]).unwrap().save(path).unwrap();
}

#[test]
fn normalize_writes_npy_and_safetensors() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("rgba16.png");
    let raw: Vec<u16> = (0..2 * 3 * 4).map(|i| i * 2000).collect();
    ImageBuffer::<Rgba<u16>, _>::from_raw(3, 2, raw.clone()).unwrap().save(&png).unwrap();
    let npy = dir.path().join("out.npy");
    let output = bitexact(&["normalize", path_arg(&png), "-o", path_arg(&npy), "--layout", "chw"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("[4, 2, 3]"));
    let bytes = std::fs::read(&npy).unwrap();
    let file = npyz::NpyFile::new(&bytes[..]).unwrap();
    assert_eq!(file.shape(), [4, 2, 3]);
    let values: Vec<f32> = file.into_vec().unwrap();
    for (i, &sample) in raw.iter().enumerate() {
        let (pixel, c) = (i / 4, i % 4);
        let want = host::reference::div_to_f32(u64::from(sample), 65535).unwrap();
        assert_eq!(values[c * 6 + pixel].to_bits(), want.to_bits(), "sample {i}");
    }

    let st = dir.path().join("out.safetensors");
    let output = bitexact(&["normalize", path_arg(&png), "-o", path_arg(&st), "--name", "pixels"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let bytes = std::fs::read(&st).unwrap();
    let tensors = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    assert_eq!(tensors.tensor("pixels").unwrap().shape(), [2, 3, 4]);
}

#[test]
fn normalize_refuses_to_clobber_or_touch_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("grey.png");
    grey_png(&png);
    let original = std::fs::read(&png).unwrap();
    let out = dir.path().join("out.npy");
    std::fs::write(&out, b"precious").unwrap();

    assert_fails(&bitexact(&["normalize", path_arg(&png), "-o", path_arg(&out)]), &out, "already exists");
    assert_eq!(std::fs::read(&out).unwrap(), b"precious");
    let output = bitexact(&["normalize", path_arg(&png), "-o", path_arg(&out), "--force"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(std::fs::read(&out).unwrap().starts_with(b"\x93NUMPY"));

    // The input as output, even spelled differently and with --force.
    let same = dir.path().join(".").join("grey.png");
    assert_fails(&bitexact(&["normalize", path_arg(&png), "-o", path_arg(&same), "--force"]), &same, "is the input");
    let npy_input = dir.path().join("input.npy");
    std::fs::copy(&png, &npy_input).unwrap();
    assert_fails(
        &bitexact(&["normalize", path_arg(&npy_input), "-o", path_arg(&npy_input), "--force"]),
        &npy_input,
        "is the input",
    );
    assert_eq!(std::fs::read(&png).unwrap(), original);
    assert_eq!(std::fs::read(&npy_input).unwrap(), original);

    let mut names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["grey.png", "input.npy", "out.npy"], "no temporary files left behind");
}

#[test]
fn normalize_bad_inputs_exit_2_with_one_line_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let png = d.join("grey.png");
    grey_png(&png);
    let garbage = d.join("garbage.png");
    std::fs::write(&garbage, b"\x89PNG\r\n\x1a\n but then nothing useful").unwrap();
    let text = d.join("notes.png");
    std::fs::write(&text, b"just some text").unwrap();
    let out = d.join("out.npy");
    for (input, problem) in [
        (d.join("missing.png"), "no such file"),
        (d.to_path_buf(), "is a directory"),
        (garbage.clone(), "cannot decode image"),
        (text.clone(), "cannot decode image"),
    ] {
        assert_fails(&bitexact(&["normalize", path_arg(&input), "-o", path_arg(&out)]), &input, problem);
    }
    let bad_extension = d.join("out.txt");
    assert_fails(
        &bitexact(&["normalize", path_arg(&png), "-o", path_arg(&bad_extension)]),
        &bad_extension,
        "unknown output extension",
    );
    let no_dir = d.join("no/such/dir/out.npy");
    assert_fails(&bitexact(&["normalize", path_arg(&png), "-o", path_arg(&no_dir)]), &no_dir, "temporary file");

    let mut names: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["garbage.png", "grey.png", "notes.png"], "no output and no temporary files");
}

#[test]
fn a_reader_that_closes_the_pipe_early_is_not_an_error() {
    // A report far larger than a pipe's buffer, so that the writer meets the closed end.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.safetensors");
    let count = 5000;
    let entries: Vec<String> = (0..count)
        .map(|i| format!(r#""t{i}":{{"dtype":"F16","shape":[1],"data_offsets":[{},{}]}}"#, 2 * i, 2 * i + 2))
        .collect();
    let mut bytes = common::safetensors_bytes(&format!("{{{}}}", entries.join(",")), 0);
    bytes.resize(bytes.len() + 2 * count, 0);
    std::fs::write(&path, bytes).unwrap();
    for format in ["table", "json"] {
        let mut child = common::bitexact_command()
            .args(["scan", "--device", "cpu", "--format", format, path_arg(&path)])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "--format {format}: {stderr}");
        assert!(stderr.is_empty(), "--format {format}: {stderr}");
    }
}

#[test]
fn unwritable_stdout_is_an_error_not_a_panic() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        common::skip("no /dev/full to make stdout unwritable");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.npy");
    common::write_npy(&good, &DTYPES[0], &[1], &[0], false);
    for format in ["table", "json"] {
        let output = common::bitexact_command()
            .args(["scan", "--format", format, path_arg(&good)])
            .stdout(full.try_clone().unwrap())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.starts_with("bitexact: cannot write to stdout") && stderr.lines().count() == 1, "{stderr}");
    }
}
