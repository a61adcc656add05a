//! `bitexact scan` on what a red team found it refused or misreported: NumPy dtype
//! spellings other than `np.save`'s, `.npz` members as `np.load` names them, files whose
//! extension lies about their content, file names that are not UTF-8, a bad file among
//! good ones (`--keep-going`), formats it does not read, and a file with no tensors.

use crate::common;

use common::{ZipMethod, bitexact, path_arg};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Output;

/// An `.npy` file's bytes: `descr`, a shape of `n` elements, and `data`.
fn npy(descr: &str, n: usize, data: &[u8]) -> Vec<u8> {
    let header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({n},), }}\n");
    [common::npy_bytes(1, &header, 0), data.to_vec()].concat()
}

/// One binary32 NaN between two zeros, little-endian.
fn f32_nan_at_1() -> Vec<u8> {
    [0f32, f32::NAN, 0f32].iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn json(output: &Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", String::from_utf8_lossy(&output.stdout), stderr(output)))
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn scan_json(path: &Path) -> Output {
    bitexact(&["scan", "--format", "json", "--device", "cpu", path_arg(path)])
}

/// Each spelling holds one NaN: found where it is, with the dtype shown as NumPy's
/// `dtype.str` (what `np.load(f).dtype.str` gives, seen with NumPy 2.4.6).
#[test]
fn numpy_dtype_spellings_are_scanned_as_np_load_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let f64_nan: Vec<u8> = [0f64, f64::NAN].iter().flat_map(|v| v.to_le_bytes()).collect();
    let f64_nan_be: Vec<u8> = [0f64, f64::NAN].iter().flat_map(|v| v.to_be_bytes()).collect();
    let f16_nan = [0u8, 0, 0x00, 0x7E];
    let c64_nan: Vec<u8> = [0f32, 0f32, 0f32, f32::NAN].iter().flat_map(|v| v.to_le_bytes()).collect();
    for (descr, n, data, canonical, first) in [
        ("<d", 2, &f64_nan[..], "<f8", 1),
        (">d", 2, &f64_nan_be[..], ">f8", 1),
        ("d", 2, &f64_nan[..], "<f8", 1),
        ("float64", 2, &f64_nan[..], "<f8", 1),
        ("<e", 2, &f16_nan[..], "<f2", 1),
        ("=f2", 2, &f16_nan[..], "<f2", 1),
        ("half", 2, &f16_nan[..], "<f2", 1),
        ("f", 3, &f32_nan_at_1()[..], "<f4", 1),
        ("float32", 3, &f32_nan_at_1()[..], "<f4", 1),
        ("|f4", 3, &f32_nan_at_1()[..], "<f4", 1),
        ("=f", 3, &f32_nan_at_1()[..], "<f4", 1),
        ("<F", 2, &c64_nan[..], "<c8", 3),
        ("complex64", 2, &c64_nan[..], "<c8", 3),
    ] {
        let path = dir.path().join("a.npy");
        std::fs::write(&path, npy(descr, n, data)).unwrap();
        let output = scan_json(&path);
        assert_eq!(output.status.code(), Some(1), "{descr}: {}", stderr(&output));
        let tensor = &json(&output)["files"][0]["tensors"][0];
        assert_eq!(tensor["dtype"], canonical, "{descr}");
        assert_eq!((&tensor["nan"], &tensor["first_non_finite"]), (&1.into(), &first.into()), "{descr}");
    }
}

/// `np.load` names a member by its name without a final `.npy` (case-sensitive), and
/// reads it as an array if it starts with NumPy's magic, whatever its name.
#[test]
fn npz_members_are_named_and_read_as_np_load_does() {
    let dir = tempfile::tempdir().unwrap();
    let array = npy("<f4", 3, &f32_nan_at_1());
    for method in [ZipMethod::Stored, ZipMethod::Deflated] {
        let path = dir.path().join("m.npz");
        common::write_npz(
            &path,
            &[("X.NPY", array.clone()), ("a.txt", array.clone()), ("b.npy", b"hello".to_vec())],
            method,
        );
        let output = scan_json(&path);
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        let report = json(&output);
        let tensors = report["files"][0]["tensors"].as_array().unwrap();
        let names: Vec<&str> = tensors.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["X.NPY", "a.txt", "b"]);
        assert_eq!((&tensors[0]["nan"], &tensors[1]["nan"]), (&1.into(), &1.into()));
        assert_eq!(tensors[2]["skipped"], "not an array (no NPY magic)");
        assert_eq!(report["total"]["first_non_finite"]["tensor"], "X.NPY");
    }
    let only = dir.path().join("only.npz");
    common::write_npz(&only, &[("X.NPY", array)], ZipMethod::Stored);
    assert_eq!(scan_json(&only).status.code(), Some(1));
}

/// The content decides, whatever the extension says (as `scan --help` promises).
#[test]
fn files_are_recognised_by_content_whatever_the_extension() {
    let dir = tempfile::tempdir().unwrap();
    let npy_bytes = npy("<f4", 3, &f32_nan_at_1());
    let safetensors = common::safetensors_bytes(r#"{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}}"#, 0);
    let safetensors = [safetensors, f32_nan_at_1()].concat();
    let npz = dir.path().join("real.npz");
    common::write_npz(&npz, &[("w.npy", npy_bytes.clone())], ZipMethod::Deflated);
    let npz_bytes = std::fs::read(&npz).unwrap();
    for (name, bytes, container) in [
        ("npy.safetensors", &npy_bytes, "npy"),
        ("npy.npz", &npy_bytes, "npy"),
        ("safetensors.npy", &safetensors, "safetensors"),
        ("safetensors.NPZ", &safetensors, "safetensors"),
        ("npz.npy", &npz_bytes, "npz"),
        ("npz.safetensors", &npz_bytes, "npz"),
        ("npy.bin", &npy_bytes, "npy"),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let output = scan_json(&path);
        assert_eq!(output.status.code(), Some(1), "{name}: {}", stderr(&output));
        let report = json(&output);
        assert_eq!(report["files"][0]["container"], container, "{name}");
        assert_eq!(report["total"]["nan"], 1, "{name}");
    }
}

/// A name that is not UTF-8 shows its bytes as `\xNN` in the table, the JSON (with
/// `file_not_utf8`) and error lines; U+FFFD nowhere.
#[test]
fn file_names_that_are_not_utf8_show_their_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let name = |bytes: &[u8]| dir.path().join(OsStr::from_bytes(bytes));
    let good = name(b"bad\xff\xfe.npy");
    std::fs::write(&good, npy("<f4", 3, &f32_nan_at_1())).unwrap();
    let shown = format!("{}/bad\\xff\\xfe.npy", path_arg(dir.path()));
    let run = |args: &[&str], path: &PathBuf| common::bitexact_command().args(args).arg(path).output().unwrap();

    let table = run(&["scan", "--device", "cpu"], &good);
    let stdout = String::from_utf8(table.stdout.clone()).expect("UTF-8 output");
    assert_eq!(table.status.code(), Some(1), "{}", stderr(&table));
    assert!(stdout.contains(&shown) && !stdout.contains('\u{fffd}'), "{stdout}");
    assert_eq!(stdout.matches(&shown).count(), 2, "the row and the verdict: {stdout}");

    let output = run(&["scan", "--format", "json", "--device", "cpu"], &good);
    let report = json(&output);
    assert_eq!(report["files"][0]["file"], shown.as_str());
    assert_eq!(report["files"][0]["file_not_utf8"], true);
    assert_eq!(report["total"]["first_non_finite"]["file"], shown.as_str());

    let bad = name(b"worse\xff.npy");
    std::fs::write(&bad, b"\x93NUMPY\x09\x00").unwrap();
    let output = run(&["scan"], &bad);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.contains(&format!("{}/worse\\xff.npy: ", path_arg(dir.path()))), "{message}");
    assert!(!message.contains('\u{fffd}'), "{message}");
}

/// Without `--keep-going` one bad file stops the run before any report; with it, the
/// others are scanned, the bad one is listed, and the run exits 2 at its end.
#[test]
fn keep_going_reports_the_unreadable_files_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.npy"), npy("<f4", 3, &f32_nan_at_1())).unwrap();
    std::fs::write(dir.path().join("b.npy"), b"\x93NUMPY\x09\x00").unwrap();
    std::os::unix::fs::symlink(dir.path().join("nowhere"), dir.path().join("c.npy")).unwrap();
    let walked = path_arg(dir.path());
    let stopped = bitexact(&["scan", "--format", "json", walked]);
    assert_eq!(stopped.status.code(), Some(2));
    assert!(stopped.stdout.is_empty());

    let output = bitexact(&["scan", "--format", "json", "--keep-going", "--device", "cpu", walked]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let report = json(&output);
    assert_eq!(report["total"]["nan"], 1);
    assert_eq!(report["all_finite"], false);
    let unreadable = report["unreadable"].as_array().unwrap();
    assert_eq!(unreadable.len(), 2, "{report}");
    assert!(unreadable[0]["file"].as_str().unwrap().ends_with("b.npy"));
    assert!(unreadable[0]["error"].as_str().unwrap().contains("unsupported NPY version 9.0"));
    assert!(unreadable[1]["error"].as_str().unwrap().contains("broken symbolic link"));

    let table = bitexact(&["scan", "--keep-going", "--device", "cpu", walked]);
    assert_eq!(table.status.code(), Some(2));
    let stdout = String::from_utf8_lossy(&table.stdout);
    assert!(stdout.contains(&format!("unreadable: {walked}/b.npy: unsupported NPY version 9.0")), "{stdout}");
    assert!(stdout.contains("2 files unreadable"), "{stdout}");

    let finite = dir.path().join("finite");
    std::fs::create_dir(&finite).unwrap();
    std::fs::write(finite.join("z.npy"), npy("<f4", 1, &[0; 4])).unwrap();
    std::fs::write(finite.join("y.npy"), b"junk").unwrap();
    let output = bitexact(&["scan", "--keep-going", "--device", "cpu", path_arg(&finite)]);
    assert_eq!(output.status.code(), Some(2), "an unreadable file is not 'all finite'");
}

/// Formats `scan` does not read are named, by content where they have a magic.
#[test]
fn other_model_formats_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let torch_zip = dir.path().join("pytorch_model.bin");
    common::write_npz(
        &torch_zip,
        &[("archive/data.pkl", b"\x80\x02}q\x00.".to_vec()), ("archive/data/0", vec![0; 8])],
        ZipMethod::Stored,
    );
    let legacy = dir.path().join("model.pt");
    std::fs::write(&legacy, b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.").unwrap();
    let gguf = dir.path().join("model.gguf");
    std::fs::write(&gguf, b"GGUF\x03\x00\x00\x00rest").unwrap();
    let hdf5 = dir.path().join("weights.h5");
    std::fs::write(&hdf5, b"\x89HDF\r\n\x1a\nrest").unwrap();
    let onnx = dir.path().join("model.onnx");
    std::fs::write(&onnx, b"\x08\x07\x12\x07pytorch").unwrap();
    for (path, problem) in [
        (&torch_zip, "a PyTorch pickle checkpoint: not supported; convert it to safetensors"),
        (&legacy, "a PyTorch pickle checkpoint: not supported; convert it to safetensors"),
        (&gguf, "a GGUF file: not supported"),
        (&hdf5, "an HDF5 file: not supported"),
        (&onnx, "an ONNX model: not supported"),
    ] {
        let output = bitexact(&["scan", path_arg(path)]);
        assert_eq!(output.status.code(), Some(2));
        let message = stderr(&output);
        assert!(message.starts_with(&format!("bitexact: {}: ", path.display())), "{message}");
        assert!(message.contains(problem) && message.lines().count() == 1, "{message:?} should say {problem:?}");
    }
}

/// A safetensors file with no tensors is nothing scanned (exit 3), not "all finite".
#[test]
fn a_file_with_no_tensors_is_not_all_finite() {
    let dir = tempfile::tempdir().unwrap();
    for header in ["{}", r#"{"__metadata__":{"format":"pt"}}"#] {
        let path = dir.path().join("empty.safetensors");
        std::fs::write(&path, common::safetensors_bytes(header, 0)).unwrap();
        let output = scan_json(&path);
        assert_eq!(output.status.code(), Some(3), "{header}: {}", stderr(&output));
        assert_eq!(json(&output)["all_finite"], false);
        let table = bitexact(&["scan", path_arg(&path)]);
        assert!(String::from_utf8_lossy(&table.stdout).contains("no tensors: nothing scanned"));
    }
}
