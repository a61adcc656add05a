//! `.npy` dtype strings read as NumPy reads them: every spelling of a grid (byte orders ×
//! type characters and kinds × sizes, and NumPy's type names) is given to
//! `npy_descr::numpy_type` and to NumPy's own `np.dtype`, which `np.load` calls on a
//! header's `'descr'`; the two must agree on whether it is a type, on `dtype.str` and on
//! `dtype.itemsize`. Skipped (and says so) where `python3` with NumPy is not installed;
//! `REQUIRE_NUMPY=1` makes that a failure.

use test_fixtures as fixtures;

use crate::containers::npy_descr::numpy_type;
use std::io::Write;
use std::process::{Command, Stdio};

/// Reads a JSON list of strings on stdin; writes, for each, `[dtype.str, itemsize]` or
/// `null` where `np.dtype` refuses it or it is not a single type (structured, sub-array).
const NUMPY_SCRIPT: &str = r#"
import json, sys, numpy as np
out = []
for descr in json.load(sys.stdin):
    try:
        dt = np.dtype(descr)
        out.append(None if dt.fields or dt.subdtype else [dt.str, dt.itemsize])
    except Exception:
        out.append(None)
print(json.dumps(out))
"#;

fn spellings() -> Vec<String> {
    let mut all = Vec::new();
    for order in ["", "<", ">", "=", "|", "!"] {
        for c in "efdgFDGbBhHiIlLqQpP?SUVMmacOxz".chars() {
            all.push(format!("{order}{c}"));
        }
        for kind in "fciubSaUVMmOxe".chars() {
            for size in ["0", "1", "2", "3", "4", "8", "10", "12", "16", "32", "04", "+4", " 4", "4 ", "4x"] {
                all.push(format!("{order}{kind}{size}"));
            }
        }
        for unit in ["[ns]", "[D]", "[us]", "[xs]", "[]", "ns"] {
            all.extend(["M8", "m8", "f8", "datetime64", "timedelta64"].map(|t| format!("{order}{t}{unit}")));
        }
        for name in [
            "float16",
            "half",
            "float32",
            "single",
            "float64",
            "double",
            "float",
            "float128",
            "longdouble",
            "complex64",
            "csingle",
            "complex128",
            "cdouble",
            "complex",
            "complex256",
            "clongdouble",
            "bool",
            "bool_",
            "int8",
            "byte",
            "uint8",
            "ubyte",
            "int16",
            "short",
            "uint16",
            "ushort",
            "int32",
            "intc",
            "uint32",
            "uintc",
            "int64",
            "int",
            "long",
            "longlong",
            "intp",
            "uint64",
            "uint",
            "ulong",
            "ulonglong",
            "uintp",
            "str",
            "str_",
            "bytes",
            "bytes_",
            "void",
            "datetime64",
            "timedelta64",
            "object",
            "object_",
            "Float32",
            "float_",
            "cfloat",
            "bfloat16",
            "float96",
            "bool8",
            "int0",
        ] {
            all.push(format!("{order}{name}"));
        }
    }
    all.extend(["", " f4", "f4,f4", "(2,)f4", "<<f4"].map(String::from));
    all
}

/// NumPy's answer for each of `spellings` ([`NUMPY_SCRIPT`]); `None` after skipping the
/// test where python3 or NumPy is not installed; a panic with the script's stderr where
/// it ran and failed ([`fixtures::numpy_output`]).
fn numpy_answers(spellings: &[String]) -> Option<Vec<Option<(String, u64)>>> {
    let run = Command::new("python3")
        .args(["-c", NUMPY_SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            let input = serde_json::to_vec(spellings).expect("a list of strings");
            // A python3 that stops before reading (no NumPy) breaks the pipe: its exit
            // status and stderr say why, and a short read shows in the answers' count.
            let _ = child.stdin.take().expect("piped").write_all(&input);
            child.wait_with_output()
        });
    let output = fixtures::numpy_output(run)?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let answers: Vec<Option<(String, u64)>> =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("NumPy's answers are not JSON ({e}): {stdout}"));
    assert_eq!(answers.len(), spellings.len(), "NumPy answered for {} of the spellings", answers.len());
    Some(answers)
}

#[test]
fn every_spelling_is_read_as_numpy_reads_it() {
    let spellings = spellings();
    let Some(answers) = numpy_answers(&spellings) else { return };
    let mismatches: Vec<String> = spellings
        .iter()
        .zip(&answers)
        .filter_map(|(descr, want)| {
            let got = numpy_type(descr).map(|t| (t.canonical, t.item_size));
            (got != *want).then(|| format!("{descr:?}: NumPy {want:?}, ours {got:?}"))
        })
        .collect();
    let accepted = answers.iter().filter(|a| a.is_some()).count();
    assert!(mismatches.is_empty(), "{} of {} differ:\n{}", mismatches.len(), spellings.len(), mismatches.join("\n"));
    eprintln!("{} spellings, {accepted} of them types to NumPy, all read alike", spellings.len());
}
