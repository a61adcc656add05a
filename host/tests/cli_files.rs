//! The built `bitexact` binary on good and bad files: exit codes 0 / 1 / 2, and one-line
//! error messages that name the file.

use crate::common;

use common::{DTYPES, bitexact, path_arg};
use image::{ImageBuffer, Luma, Rgba};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
    let twice = r#""t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}"#;
    let wrong_magic = d.join("wrong_magic.npy");
    // Not a zip archive's magic either: that would be read as an archive, content first.
    std::fs::write(&wrong_magic, b"\x93NUMPZ not numpy").unwrap();
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
        (safetensors_file(d, "json.safetensors", "{\"t\":", 0), "invalid header"),
        (
            safetensors_file(d, "twice.safetensors", &format!("{{{},{}}}", twice, twice), 4),
            "tensor name 't' appears twice in the header",
        ),
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
    // A text file named .safetensors: its first 8 bytes read as an absurd length.
    let text = d.join("notes.safetensors");
    std::fs::write(&text, "These are notes, not tensors.\n").unwrap();
    let cases = cases.into_iter().chain([
        (truncated, "truncated header"),
        (oversized, "oversized header"),
        (text, "not a safetensors file: byte 8 is 0x65"),
    ]);
    for (path, problem) in cases {
        assert_fails(&bitexact(&["scan", path_arg(&path)]), &path, problem);
    }
}

/// Another program truncating a file while `scan` reads it: exit 2 with one line naming
/// the file (or, where the scan wins the race, exit 0), never death by a signal, which is
/// what reading through a memory map gave (SIGBUS, exit 135, nothing on stderr).
/// `a_file_truncated_during_a_scan_is_an_error_naming_it` in the files wing's unit tests
/// (`host/wings/files/src/tests/scan_normalize.rs`) checks the message
/// deterministically; this checks the binary under a real race.
#[test]
fn a_file_truncated_while_scanned_never_kills_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shrinking.safetensors");
    let elements = 128usize << 20;
    let header = format!(r#"{{"x":{{"dtype":"F16","shape":[{elements}],"data_offsets":[0,{}]}}}}"#, 2 * elements);
    std::fs::write(&path, common::safetensors_bytes(&header, 0)).unwrap();
    let full = std::fs::metadata(&path).unwrap().len() + 2 * elements as u64;
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    for delay_ms in [0, 1, 2, 5, 10, 20] {
        file.set_len(full).unwrap(); // zeros, as a hole: quick to read
        let child = common::bitexact_command()
            .args(["scan", "--device", "cpu", path_arg(&path)])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        file.set_len(4096).unwrap();
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        match output.status.code() {
            Some(0) => assert!(stderr.is_empty(), "{stderr}"),
            Some(2) => {
                assert!(stderr.starts_with(&format!("bitexact: {}: ", path.display())), "{stderr}");
                assert_eq!(stderr.lines().count(), 1, "{stderr}");
            }
            _ => panic!("after {delay_ms} ms: {:?}, stderr {stderr:?}", output.status),
        }
    }
}

/// Every header is checked before any data is read, without holding a descriptor per
/// file: far more files than the descriptor limit are scanned.
#[test]
fn scan_takes_more_files_than_the_descriptor_limit() {
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = (0..200).map(|i| dir.path().join(format!("t{i}.npy"))).collect();
    for path in &paths {
        common::write_npy(path, &DTYPES[0], &[2], &[0, 0x3C00], false);
    }
    let output = Command::new("sh")
        .args(["-c", "ulimit -n 32 && exec \"$@\"", "sh"])
        .arg(common::bitexact_exe())
        .args(["scan", "--device", "cpu"])
        .args(&paths)
        .output()
        .expect("run sh");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(stdout.contains("\n200 files, 200 tensors, 400 elements, "), "{stdout}");
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
    if bitexact::gpu::Gpu::open(0).is_ok() {
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
        let want = bitexact::verify::reference::div_to_f32(u64::from(sample), 65535).unwrap();
        assert_eq!(values[c * 6 + pixel].to_bits(), want.to_bits(), "sample {i}");
    }

    let st = dir.path().join("out.safetensors");
    let output = bitexact(&["normalize", path_arg(&png), "-o", path_arg(&st), "--name", "pixels"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let bytes = std::fs::read(&st).unwrap();
    let tensors = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    assert_eq!(tensors.tensor("pixels").unwrap().shape(), [2, 3, 4]);
}

/// The first code whose value differs from the reference's, with both encodings.
fn first_wrong(got: &[u16], want: &[u16]) -> Option<(usize, String, String)> {
    assert_eq!(got.len(), want.len());
    let i = got.iter().zip(want).position(|(g, w)| g != w)?;
    Some((i, format!("{:#06x}", got[i]), format!("{:#06x}", want[i])))
}

/// The 16-bit values of a `.safetensors` output's one tensor, with its dtype and shape.
fn safetensors_u16(path: &Path, name: &str) -> (safetensors::Dtype, Vec<usize>, Vec<u16>) {
    let bytes = std::fs::read(path).unwrap();
    let tensors = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let tensor = tensors.tensor(name).unwrap();
    let values = tensor.data().as_chunks::<2>().0.iter().map(|&b| u16::from_le_bytes(b)).collect();
    (tensor.dtype(), tensor.shape().to_vec(), values)
}

#[test]
fn normalize_dtype_f16_and_bf16_are_correctly_rounded_on_every_code() {
    use bitexact::verify::reference::{BFLOAT16, BINARY16, unorm_to_narrow_bits};
    let dir = tempfile::tempdir().unwrap();
    // Every UNORM8 code in a 16×16 image, every UNORM16 code in a 256×256 one (codes
    // 1..=3 are binary16 subnormals; 65455 and 65519 are where rounding through f32 fails).
    let png8 = dir.path().join("all8.png");
    ImageBuffer::<Luma<u8>, Vec<u8>>::from_raw(16, 16, (0..=255).collect()).unwrap().save(&png8).unwrap();
    let png16 = dir.path().join("all16.png");
    ImageBuffer::<Luma<u16>, Vec<u16>>::from_raw(256, 256, (0..=65535).collect()).unwrap().save(&png16).unwrap();
    for (png, bits) in [(&png8, 8u32), (&png16, 16)] {
        let side = 1usize << (bits / 2);
        let expected = |format| -> Vec<u16> {
            (0..1u64 << bits).map(|code| unorm_to_narrow_bits(format, bits, code) as u16).collect()
        };
        // .npy holds binary16 as `<f2`.
        let npy = dir.path().join(format!("{bits}.npy"));
        let output = bitexact(&["normalize", path_arg(png), "-o", path_arg(&npy), "--dtype", "f16"]);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains(": f16 [") && stdout.contains(&format!("exact x/{}", (1u64 << bits) - 1)), "{stdout}");
        let bytes = std::fs::read(&npy).unwrap();
        let file = npyz::NpyFile::new(&bytes[..]).unwrap();
        assert_eq!((file.shape(), file.dtype().descr()), (&[side as u64, side as u64, 1][..], "'<f2'".to_string()));
        let values: Vec<u16> = file.into_vec::<half::f16>().unwrap().into_iter().map(half::f16::to_bits).collect();
        assert_eq!(first_wrong(&values, &expected(BINARY16)), None, "UNORM{bits} -> f16 .npy: (code, got, want)");
        // .safetensors holds F16 and BF16.
        for (dtype, want_dtype, format) in
            [("f16", safetensors::Dtype::F16, BINARY16), ("bf16", safetensors::Dtype::BF16, BFLOAT16)]
        {
            let st = dir.path().join(format!("{bits}_{dtype}.safetensors"));
            let args = ["normalize", path_arg(png), "-o", path_arg(&st), "--dtype", dtype, "--format", "json"];
            let output = bitexact(&args);
            assert_eq!(output.status.code(), Some(0), "{output:?}");
            let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            assert_eq!(json["dtype"], dtype);
            let (got_dtype, shape, values) = safetensors_u16(&st, "image");
            assert_eq!((got_dtype, shape), (want_dtype, vec![side, side, 1]), "UNORM{bits} -> {dtype}");
            let wrong = first_wrong(&values, &expected(format));
            assert_eq!(wrong, None, "UNORM{bits} -> {dtype} .safetensors: (code, got, want)");
        }
    }
}

#[test]
fn normalize_refuses_bf16_into_npy_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("grey.png");
    grey_png(&png);
    let out = dir.path().join("out.npy");
    let output = bitexact(&["normalize", path_arg(&png), "-o", path_arg(&out), "--dtype", "bf16"]);
    assert_fails(&output, &out, ".npy cannot hold --dtype bf16");
    assert!(String::from_utf8_lossy(&output.stderr).contains(".safetensors"), "suggests .safetensors");
    // Before any work: an input that is no image at all gets the same refusal.
    let garbage = dir.path().join("garbage.png");
    std::fs::write(&garbage, b"not an image").unwrap();
    let output = bitexact(&["normalize", path_arg(&garbage), "-o", path_arg(&out), "--dtype", "bf16"]);
    assert_fails(&output, &out, ".npy cannot hold --dtype bf16");
    let mut names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["garbage.png", "grey.png"], "no output and no temporary file");
    // The default stays f32.
    let output = bitexact(&["normalize", path_arg(&png), "-o", path_arg(&out)]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(npyz::NpyFile::new(&bytes[..]).unwrap().dtype().descr(), "'<f4'");
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
fn a_png_that_breaks_mid_stream_exits_2_naming_it_and_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Noise, so that the file is about as large as its samples: 3 Mi samples, three
    // write chunks, so that the first are converted and written before the break.
    let side = 1024u32;
    let mut rng = common::Rng::new(9);
    let raw: Vec<u8> = (0..side * side * 3).map(|_| rng.next() as u8).collect();
    let whole = d.join("whole.png");
    image::RgbImage::from_raw(side, side, raw).unwrap().save(&whole).unwrap();
    let bytes = std::fs::read(&whole).unwrap();
    let truncated = d.join("truncated.png");
    std::fs::write(&truncated, &bytes[..bytes.len() * 3 / 4]).unwrap();
    // One byte changed near the end of the image data: the samples before it decode,
    // the chunk's CRC does not match.
    let corrupt = d.join("corrupt.png");
    let mut changed = bytes.clone();
    let at = bytes.len() - 1000;
    changed[at] ^= 0x55;
    std::fs::write(&corrupt, &changed).unwrap();
    for (input, dtype, out) in [
        (&truncated, "f32", d.join("t.npy")),
        (&truncated, "bf16", d.join("t.safetensors")),
        (&corrupt, "f32", d.join("c.npy")),
        (&corrupt, "f16", d.join("c.safetensors")),
    ] {
        let output = bitexact(&["normalize", path_arg(input), "-o", path_arg(&out), "--dtype", dtype]);
        assert_fails(&output, input, "cannot decode image");
    }
    let mut names: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["corrupt.png", "truncated.png", "whole.png"], "no output and no temporary file");
    // The whole file streams to the same values as decoded whole (CHW is decoded whole).
    let (hwc, chw) = (d.join("hwc.npy"), d.join("chw.npy"));
    assert_eq!(bitexact(&["normalize", path_arg(&whole), "-o", path_arg(&hwc)]).status.code(), Some(0));
    let args = ["normalize", path_arg(&whole), "-o", path_arg(&chw), "--layout", "chw"];
    assert_eq!(bitexact(&args).status.code(), Some(0));
    let values = |path: &Path| -> Vec<u32> {
        let bytes = std::fs::read(path).unwrap();
        npyz::NpyFile::new(&bytes[..]).unwrap().into_vec::<f32>().unwrap().into_iter().map(f32::to_bits).collect()
    };
    let (hwc, chw) = (values(&hwc), values(&chw));
    let pixels = (side * side) as usize;
    assert!((0..hwc.len()).all(|i| hwc[i] == chw[(i % 3) * pixels + i / 3]), "HWC streamed vs CHW whole");
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
        let output = run_with_stdout_closed(&["scan", "--device", "cpu", "--format", format, path_arg(&path)]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "--format {format}: {stderr}");
        assert!(stderr.is_empty(), "--format {format}: {stderr}");
    }
}

#[test]
fn unwritable_stdout_is_an_error_not_a_panic() {
    let Some(full) = common::unwritable_stdout() else { return };
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

/// `bitexact normalize grey.png -o out` through `sh` with `umask`, so that the child
/// runs under that umask.
fn normalize_under_umask(umask: &str, png: &Path, out: &Path, extra: &[&str]) -> Output {
    Command::new("sh")
        .args(["-c", &format!("umask {umask} && exec \"$@\""), "sh"])
        .arg(common::bitexact_exe())
        .arg("normalize")
        .args([path_arg(png), "-o", path_arg(out)])
        .args(extra)
        .output()
        .expect("run sh")
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A new output gets 0666 minus the umask, like `>` or `cp` to a new file; a replaced
/// one keeps its permission bits exactly (not masked), like `cp` onto an existing file.
/// Outputs used to be 0600 whatever the umask, and `--force` turned 0644 into 0600.
#[test]
fn normalize_output_modes_follow_the_umask_and_the_replaced_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("grey.png");
    grey_png(&png);
    for (umask, want) in [("022", 0o644), ("077", 0o600), ("002", 0o664), ("000", 0o666)] {
        for name in ["new.npy", "new.safetensors"] {
            let out = dir.path().join(name);
            let _ = std::fs::remove_file(&out);
            let output = normalize_under_umask(umask, &png, &out, &[]);
            assert_eq!(output.status.code(), Some(0), "{output:?}");
            assert_eq!(mode(&out), want, "{name} under umask {umask}: {:o}", mode(&out));
        }
    }
    let out = dir.path().join("kept.npy");
    for kept in [0o644, 0o640, 0o604, 0o600, 0o444, 0o755] {
        std::fs::write(&out, b"old").unwrap();
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(kept)).unwrap();
        let output = normalize_under_umask("077", &png, &out, &["--force"]);
        assert_eq!(output.status.code(), Some(0), "{output:?}");
        assert!(std::fs::read(&out).unwrap().starts_with(b"\x93NUMPY"));
        assert_eq!(mode(&out), kept, "replacing a {kept:o} file gave {:o}", mode(&out));
    }
}

/// The summary is printed only once the output is in place, so a stdout that cannot be
/// written fails the run (exit 2) with a line that says the output was written, never a
/// summary of an output that is not there. (It used to be printed before the rename,
/// and a failed rename followed a printed summary.)
#[test]
fn normalize_with_an_unwritable_stdout_says_the_output_was_written() {
    let Some(full) = common::unwritable_stdout() else { return };
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("grey.png");
    grey_png(&png);
    let new = dir.path().join("new.npy");
    let old = dir.path().join("old.safetensors");
    std::fs::write(&old, b"precious").unwrap();
    for (out, force) in [(&new, false), (&old, true)] {
        for format in ["table", "json"] {
            let mut args = vec!["normalize", path_arg(&png), "-o", path_arg(out), "--format", format, "--force"];
            if !force {
                std::fs::remove_file(out).ok();
                args.pop();
            }
            let output = common::bitexact_command().args(&args).stdout(full.try_clone().unwrap()).output().unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{stderr}");
            assert!(stderr.starts_with("bitexact: cannot write to stdout") && stderr.lines().count() == 1, "{stderr}");
            let written = format!("(the output {} was written)\n", out.display());
            assert!(stderr.ends_with(&written), "{stderr}");
            let bytes = std::fs::read(out).unwrap();
            assert!(bytes.starts_with(b"\x93NUMPY") || bytes.len() > 8 && bytes != b"precious", "{out:?} written");
        }
    }
    let mut names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["grey.png", "new.npy", "old.safetensors"], "no temporary files left behind");
    std::fs::remove_file(&new).unwrap();

    // A reader that closed the pipe early is not an error, as for `scan`: the output is
    // in place and the exit status says so.
    let output = run_with_stdout_closed(&["normalize", path_arg(&png), "-o", path_arg(&new)]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(std::fs::read(&new).unwrap().starts_with(b"\x93NUMPY"));
}

#[test]
fn normalize_json_summary() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("grey.png");
    grey_png(&png);
    let out = dir.path().join("out.safetensors");
    let output = bitexact(&["normalize", path_arg(&png), "-o", path_arg(&out), "--format", "json", "--layout", "chw"]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["output"], path_arg(&out));
    assert_eq!(json["container"], "safetensors");
    assert_eq!(json["tensor"], "image");
    assert_eq!(json["dtype"], "f32");
    assert_eq!(json["shape"], serde_json::json!([1, 2, 4]));
    assert_eq!(json["layout"], "chw");
    assert_eq!(json["input"], path_arg(&png));
    assert_eq!(
        (json["bits"].as_u64(), json["channels"].as_u64(), json["divisor"].as_u64()),
        (Some(8), Some(1), Some(255))
    );
    assert!(json["device"].is_string());
    let npy = dir.path().join("out.npy");
    let output = bitexact(&["normalize", path_arg(&png), "-o", path_arg(&npy), "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((json["container"].as_str(), json.get("tensor")), (Some("npy"), None));
    assert_eq!(json["shape"], serde_json::json!([2, 4, 1]));
    let output = bitexact(&["normalize", path_arg(&png), "-o", path_arg(&npy), "--format", "markdown", "--force"]);
    assert_eq!(output.status.code(), Some(2), "markdown is for tables, not for the one-line summary");
}

/// One of everything, on one thread: no `1 files`, `1 tensors`, `1 elements`, `(1 threads)`.
#[test]
fn counts_of_one_are_singular() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one.npy");
    common::write_npy(&path, &DTYPES[0], &[1], &[0], false);
    let output = common::bitexact_command()
        .args(["scan", "--device", "cpu", path_arg(&path)])
        .env("RAYON_NUM_THREADS", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.ends_with("\n1 file, 1 tensor, 1 element, on cpu (1 thread): all finite\n"), "{stdout}");
    let png = dir.path().join("grey.png");
    grey_png(&png);
    let out = dir.path().join("out.npy");
    let output = common::bitexact_command()
        .args(["normalize", "--device", "cpu", path_arg(&png), "-o", path_arg(&out)])
        .env("RAYON_NUM_THREADS", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.ends_with(", on cpu (1 thread)\n"), "{stdout}");
    let other = dir.path().join("other.npy");
    std::fs::copy(&path, &other).unwrap();
    let output = common::bitexact_command()
        .args(["scan", "--device", "cpu", path_arg(&path), path_arg(&other)])
        .env("RAYON_NUM_THREADS", "2")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.ends_with("\n2 files, 2 tensors, 2 elements, on cpu (2 threads): all finite\n"), "{stdout}");
}

/// `--device auto` (the default) says what it ran on and why: a small job on the CPU,
/// unmeasured, whether or not there is a GPU.
#[test]
fn auto_says_what_it_picked_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small.npy");
    common::write_npy(&path, &DTYPES[0], &[3], &[0, 0x7C00, 0], false);
    let output =
        common::bitexact_command().args(["scan", path_arg(&path)]).env("RAYON_NUM_THREADS", "1").output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            ", on cpu (1 thread) (auto: a job of 6 bytes, under 64.0 MiB: cpu without measuring): 0 NaN, 1 +inf"
        ),
        "{stdout}"
    );
    let png = dir.path().join("grey.png");
    grey_png(&png);
    let out = dir.path().join("out.npy");
    let output = bitexact(&["normalize", path_arg(&png), "-o", path_arg(&out), "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let device = json["device"].as_str().unwrap();
    assert!(
        device.starts_with("cpu (")
            && device.ends_with(" (auto: a job of 8 bytes, under 64.0 MiB: cpu without measuring)"),
        "{device}"
    );
}

/// `normalize --verbose`: one stderr line per phase, the output and summary as without.
#[test]
fn normalize_verbose_prints_its_phases() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("grey.png");
    grey_png(&png);
    let (quiet, verbose) = (dir.path().join("quiet.npy"), dir.path().join("verbose.npy"));
    let plain = bitexact(&["normalize", "--device", "cpu", path_arg(&png), "-o", path_arg(&quiet)]);
    let output = bitexact(&["normalize", "--device", "cpu", "--verbose", path_arg(&png), "-o", path_arg(&verbose)]);
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let phases: Vec<&str> = stderr
        .lines()
        .map(|l| l.strip_prefix("bitexact: normalize: ").unwrap_or(l).split(' ').next().unwrap())
        .collect();
    assert_eq!(phases, ["decode", "convert", "write", "sync", "rename", "total"], "{stderr}");
    assert!(stderr.lines().all(|l| l.contains(" ms ") && l.contains(" GB/s (")), "{stderr}");
    // A PNG in HWC order is decoded while it is converted; in CHW order, before.
    let streamed = "on its own thread overlapping convert and write";
    assert!(stderr.lines().next().unwrap().contains(streamed), "{stderr}");
    assert!(stderr.contains("waited") && stderr.contains("for decoded rows"), "{stderr}");
    let chw = dir.path().join("chw.npy");
    let args = ["normalize", "--device", "cpu", "--verbose", "--layout", "chw", path_arg(&png), "-o", path_arg(&chw)];
    let whole = bitexact(&args);
    assert_eq!(whole.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&whole.stderr).contains(streamed));
    assert!(plain.stderr.is_empty());
    assert_eq!(std::fs::read(&quiet).unwrap(), std::fs::read(&verbose).unwrap());
    assert_eq!(
        String::from_utf8_lossy(&plain.stdout).replace("quiet.npy", ""),
        String::from_utf8_lossy(&output.stdout).replace("verbose.npy", "")
    );
}

/// A file its user cannot read: both commands say `permission denied`, the same way.
/// normalize used to print `cannot read: Permission denied (os error 13)`. Run as
/// `nobody` when the tests run as root (for whom every file is readable).
#[test]
fn unreadable_inputs_give_the_same_message_in_both_commands() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let png = dir.path().join("secret.png");
    grey_png(&png);
    let npy = dir.path().join("secret.npy");
    common::write_npy(&npy, &DTYPES[0], &[1], &[0], false);
    for path in [&png, &npy] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o000)).unwrap();
    }
    let as_root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    let out = dir.path().join("out.npy");
    for (args, path) in
        [(vec!["normalize", path_arg(&png), "-o", path_arg(&out)], &png), (vec!["scan", path_arg(&npy)], &npy)]
    {
        let mut command = common::bitexact_command();
        command.args(&args);
        if as_root {
            command.uid(65534).gid(65534);
        }
        let Ok(output) = command.output() else {
            common::skip("running as root and cannot switch to nobody");
            return;
        };
        assert_fails(&output, path, "permission denied");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.trim_end(), format!("bitexact: {}: permission denied", path.display()));
    }
}

/// Float images are refused with what is accepted and what was found, whether the
/// decoder gives them (RGB f32 TIFF) or has no decoding for them (greyscale f32 TIFF,
/// which used to be refused as `color type Unknown(32)`).
#[test]
fn float_images_are_refused_saying_what_is_accepted() {
    use image::{ImageBuffer, Rgb};
    let dir = tempfile::tempdir().unwrap();
    let rgb = dir.path().join("rgb32f.tiff");
    ImageBuffer::<Rgb<f32>, _>::from_raw(2, 1, vec![0.0, 0.5, 1.0, 0.25, 0.75, 1.0]).unwrap().save(&rgb).unwrap();
    let grey = dir.path().join("grey32f.tiff");
    let mut encoder = tiff::encoder::TiffEncoder::new(std::fs::File::create(&grey).unwrap()).unwrap();
    encoder.write_image::<tiff::encoder::colortype::Gray32Float>(2, 1, &[0.0, 0.5]).unwrap();
    let out = dir.path().join("out.npy");
    for (path, found) in [(&rgb, "32-bit float RGB pixels"), (&grey, "32-bit pixels of a kind its decoder")] {
        let output = bitexact(&["normalize", path_arg(path), "-o", path_arg(&out)]);
        assert_fails(&output, path, "only UNORM8 and UNORM16 images are accepted");
        assert_fails(&output, path, found);
    }
    assert!(!out.exists());
}

/// Runs `bitexact args` with a stdout pipe whose reader is closed before anything is read.
fn run_with_stdout_closed(args: &[&str]) -> std::process::Output {
    let mut child = common::spawn_bitexact(args);
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn a_palette_png_whose_plte_is_not_whole_entries_is_refused_in_one_line_in_both_layouts() {
    // The png crate panics expanding such a palette; bitexact must refuse it first.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (width, height) = (4u32, 2u32);
    let mut ihdr = Vec::new();
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 3, 0, 0, 0]); // 8-bit palette, not interlaced
    let rows: Vec<u8> =
        (0..height).flat_map(|y| std::iter::once(0).chain((0..width).map(move |x| (x + y) as u8))).collect();
    let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut zlib, &rows).unwrap();
    let idat = zlib.finish().unwrap();
    let whole: Vec<u8> = (0..30).collect(); // 10 entries
    let (good, bad) = (d.join("good.png"), d.join("plte31.png"));
    common::png_from_chunks(&good, &[(b"IHDR", &ihdr), (b"PLTE", &whole), (b"IDAT", &idat), (b"IEND", &[])]);
    let mut odd = whole.clone();
    odd.push(7); // 31 bytes
    common::png_from_chunks(&bad, &[(b"IHDR", &ihdr), (b"PLTE", &odd), (b"IDAT", &idat), (b"IEND", &[])]);
    for layout in ["hwc", "chw"] {
        let out = d.join(format!("{layout}.npy"));
        let output = bitexact(&["normalize", path_arg(&bad), "-o", path_arg(&out), "--layout", layout]);
        assert_fails(&output, &bad, "cannot decode image: ");
        assert!(String::from_utf8_lossy(&output.stderr).contains("PLTE chunk of 31 bytes"), "{output:?}");
        // The same image with a whole palette converts: the check refuses only the bad one.
        let output = bitexact(&["normalize", path_arg(&good), "-o", path_arg(&out), "--layout", layout]);
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        std::fs::remove_file(&out).unwrap();
    }
    let mut names: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["good.png", "plte31.png"], "no output and no temporary files");
}

#[test]
fn a_png_cut_inside_its_header_reads_the_same_in_both_layouts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let png = d.join("grey.png");
    grey_png(&png);
    let bytes = std::fs::read(&png).unwrap();
    let cut = d.join("cut.png");
    std::fs::write(&cut, &bytes[..20]).unwrap();
    let mut lines = Vec::new();
    for layout in ["hwc", "chw"] {
        let out = d.join("out.npy");
        let output = bitexact(&["normalize", path_arg(&cut), "-o", path_arg(&out), "--layout", layout]);
        assert_fails(&output, &cut, "cannot decode image: ");
        lines.push(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    assert_eq!(lines[0], lines[1], "the streamed and the whole-image path say the same");
}

#[test]
fn a_dangling_symlink_as_output_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let png = d.join("grey.png");
    grey_png(&png);
    let link = d.join("link.npy");
    std::os::unix::fs::symlink(d.join("nowhere.npy"), &link).unwrap();
    let output = bitexact(&["normalize", path_arg(&png), "-o", path_arg(&link)]);
    // assert_fails checks that stdout is empty: no summary of a conversion that ran.
    assert_fails(&output, &link, "already exists");
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink(), "the link is left as it was");
}

#[test]
fn an_unwritable_stderr_does_not_turn_an_error_into_a_panic() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        common::skip("no /dev/full on this system");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.png");
    let out = dir.path().join("out.npy");
    let output = common::bitexact_command()
        .args(["normalize", path_arg(&missing), "-o", path_arg(&out)])
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "the error's status, not a panic's 101");
}

/// Each terminating signal a user meets (Ctrl-C, Ctrl-\, kill, a closed terminal, ...)
/// during a write removes the temporary file, says which signal in one line and exits
/// 128 + its number, the output as it was. SIGQUIT used to kill the process with a
/// `.bitexact-*.tmp` left behind.
#[test]
fn a_terminating_signal_while_writing_removes_the_temporary_file_and_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Noise, so that decoding and writing take a while: 12 Mi samples, 48 MiB of f32.
    let side = 2048u32;
    let mut rng = common::Rng::new(5);
    let raw: Vec<u8> = (0..side * side * 3).map(|_| rng.next() as u8).collect();
    let png = d.join("noise.png");
    image::RgbImage::from_raw(side, side, raw).unwrap().save(&png).unwrap();
    let out = d.join("out.npy");
    let temporaries = || {
        std::fs::read_dir(d)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".tmp"))
            .count()
    };
    let signals = [
        ("INT", 2, "interrupted"),
        ("QUIT", 3, "interrupted by SIGQUIT"),
        ("TERM", 15, "interrupted by SIGTERM"),
        ("HUP", 1, "interrupted by SIGHUP"),
        ("USR1", 10, "interrupted by SIGUSR1"),
        ("VTALRM", 26, "interrupted by SIGVTALRM"),
        ("PROF", 27, "interrupted by SIGPROF"),
    ];
    'signals: for (name, number, message) in signals {
        // The run may finish before the signal lands on a fast machine: try a few times.
        for _ in 0..5 {
            let mut child = common::bitexact_command()
                .args(["normalize", path_arg(&png), "-o", path_arg(&out), "--force"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let started = std::time::Instant::now();
            while temporaries() == 0 && child.try_wait().unwrap().is_none() && started.elapsed().as_secs() < 60 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let killed = Command::new("kill").args([&format!("-{name}"), &child.id().to_string()]).status().unwrap();
            let output = child.wait_with_output().unwrap();
            assert_eq!(temporaries(), 0, "SIG{name}: no temporary file left, whatever the outcome");
            if output.status.code() == Some(0) {
                std::fs::remove_file(&out).unwrap();
                continue; // finished before the signal
            }
            assert!(killed.success());
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(128 + number), "SIG{name}: {:?} {stderr}", output.status);
            assert_eq!(stderr, format!("bitexact: {message}\n"));
            assert!(!out.exists(), "no output from an interrupted run");
            continue 'signals;
        }
        panic!("five runs finished before SIG{name} reached them: the test saw no interrupted run");
    }
}

/// A write past `ulimit -f` is a write error (exit 2, one line, nothing left behind), not
/// a death by SIGXFSZ with the temporary file in place, as it used to be.
#[test]
fn a_write_past_the_file_size_limit_is_an_error_that_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let png = d.join("grey.png");
    // 256 KiB of f32, over a limit of 16 blocks (8 or 16 KiB, whichever the shell counts).
    image::GrayImage::from_fn(256, 256, |x, y| Luma([(x ^ y) as u8])).save(&png).unwrap();
    let out = d.join("out.npy");
    let output = Command::new("sh")
        .args(["-c", "ulimit -f 16 && exec \"$@\"", "sh"])
        .arg(common::bitexact_exe())
        .args(["normalize", path_arg(&png), "-o", path_arg(&out)])
        .output()
        .expect("run sh");
    assert_fails(&output, &out, "write failed: ");
    assert!(String::from_utf8_lossy(&output.stderr).to_lowercase().contains("file too large"), "{output:?}");
    let names: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["grey.png"], "no output and no temporary file");
}

/// Output paths that cannot be written are refused before the input is even read (the
/// error names the output although the input does not exist), and never after a
/// summary: `-o x.npy/` used to print the summary, then fail the rename.
#[test]
fn unwritable_output_paths_are_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let png = d.join("grey.png");
    grey_png(&png);
    let missing = d.join("missing.png");
    std::fs::write(d.join("file.txt"), b"a file").unwrap();
    std::fs::create_dir(d.join("adir.npy")).unwrap();
    let cases: Vec<(PathBuf, &str)> = vec![
        (d.join("x.npy/"), "is not a file path"),
        (d.join("x.npy/."), "is not a file path"),
        (d.join("adir.npy"), "is a directory"),
        (d.join("adir.npy/"), "is not a file path"),
        (d.join("file.txt/x.npy"), "cannot create a temporary file in"),
        (d.join("nowhere/x.npy"), "cannot create a temporary file in"),
        // Not writable even for root.
        (PathBuf::from("/proc/x.npy"), "cannot create a temporary file in /proc"),
    ];
    for (out, problem) in &cases {
        for format in ["table", "json"] {
            let output = bitexact(&["normalize", path_arg(&missing), "-o", path_arg(out), "--format", format]);
            assert_fails(&output, out, problem);
            let output = bitexact(&["normalize", path_arg(&png), "-o", path_arg(out), "--format", format]);
            assert_fails(&output, out, problem);
        }
    }
    // A directory its owner cannot write in (root can: then it is skipped, visibly).
    let read_only = d.join("read-only");
    std::fs::create_dir(&read_only).unwrap();
    std::fs::set_permissions(&read_only, std::os::unix::fs::PermissionsExt::from_mode(0o555)).unwrap();
    if std::fs::write(read_only.join("probe"), b"").is_ok() {
        std::fs::remove_file(read_only.join("probe")).unwrap();
        common::skip("a read-only directory is writable here (root?)");
    } else {
        let out = read_only.join("x.npy");
        assert_fails(&bitexact(&["normalize", path_arg(&png), "-o", path_arg(&out)]), &out, "permission denied");
    }
    let mut names: Vec<_> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["adir.npy", "file.txt", "grey.png", "read-only"], "nothing written, no temporary file");
    assert_eq!(std::fs::read_dir(d.join("adir.npy")).unwrap().count(), 0);
}

/// `bench --json-out` checks its file's directory before the benchmark (and before
/// looking for a GPU), not after minutes of work.
#[test]
fn bench_checks_its_json_output_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    for (out, problem) in [
        (dir.path().join("nowhere/report.json"), "cannot create a temporary file in"),
        (dir.path().join("report.json/"), "is not a file path"),
    ] {
        assert_fails(&bitexact(&["bench", "--json-out", path_arg(&out)]), &out, problem);
    }
}

/// `bench-files` interrupted removes its folder of generated files (hundreds of MiB);
/// it used to be left in the temporary folder.
#[test]
fn an_interrupted_bench_files_removes_its_generated_files() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["bench-files", "--mib", "128", "--side", "64", "--reps", "1", "--python", "/nonexistent"];
    let mut child = common::bitexact_command()
        .args(args)
        .args(["--dir", path_arg(dir.path())])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted while it writes its first file, before it runs anything.
    let halves = || std::fs::read_dir(dir.path()).unwrap().any(|e| e.unwrap().path().join("halves.npy").exists());
    let started = std::time::Instant::now();
    while !halves() && child.try_wait().unwrap().is_none() && started.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the generated files are removed");
}
