//! `--cpu-level` and `BITEXACT_CPU_LEVEL` on the command line: a level the CPU has runs
//! and gives the same output as every other; a level it lacks, or a name that is not a
//! level, is a one-line error and exit 2; `normalize --verbose` says which level ran, and
//! with which CPU form.

use crate::common;

use bitexact::cpu::{LEVEL_VARIABLE, Level};
use bitexact::files::normalize::image::{SampleWidth, conversion};
use bitexact::files::write::Dtype;
use common::bitexact_command;

/// A 16-bit greyscale PNG holding every UNORM16 code once (256×256).
fn every_code_png(path: &std::path::Path) {
    let codes: Vec<u16> = (0..=u16::MAX).collect();
    image::ImageBuffer::<image::Luma<u16>, _>::from_raw(256, 256, codes).expect("256×256").save(path).expect("save");
}

#[test]
fn every_level_this_cpu_has_normalizes_to_the_same_bytes_and_says_so() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let png = dir.path().join("codes.png");
    every_code_png(&png);
    let mut outputs = Vec::new();
    for level in Level::ALL.into_iter().filter(|level| level.check("test").is_ok()) {
        for dtype in ["f32", "f16"] {
            let out = dir.path().join(format!("{level}-{dtype}.npy"));
            let run = bitexact_command()
                .args(["--cpu-level", level.name(), "normalize", "--device", "cpu", "--verbose", "--dtype", dtype])
                .arg(&png)
                .arg("-o")
                .arg(&out)
                .output()
                .expect("run bitexact");
            let stderr = String::from_utf8_lossy(&run.stderr);
            assert!(run.status.success(), "{level}: {stderr}");
            let convert =
                stderr.lines().find(|l| l.starts_with("bitexact: normalize: convert ")).expect("a convert line");
            // The level, and the form the CPU computed the values with at that level.
            let dtype_of = if dtype == "f32" { Dtype::F32 } else { Dtype::F16 };
            let form = conversion(SampleWidth::Unorm16, dtype_of).cpu_form(level);
            assert!(convert.contains(&format!("; cpu level {level} ({form}), best here ")), "{stderr}");
            outputs.push((format!("{level} {dtype}"), std::fs::read(&out).expect("the output")));
        }
    }
    let by_dtype = |dtype: &str| outputs.iter().filter(move |(name, _)| name.ends_with(dtype)).collect::<Vec<_>>();
    for dtype in ["f32", "f16"] {
        let runs = by_dtype(dtype);
        for (name, bytes) in &runs[1..] {
            assert!(bytes == &runs[0].1, "{name} differs from {}", runs[0].0);
        }
    }
}

#[test]
fn a_level_the_cpu_lacks_or_an_unknown_name_is_one_line_and_exit_2() {
    let mut cases = vec![
        (vec!["--cpu-level", "portable", "scan", "--device", "cpu", "nothing-here.npy"], None, "nothing-here.npy"),
        (vec!["scan", "nothing-here.npy"], Some("sse9"), "BITEXACT_CPU_LEVEL: \"sse9\" is not a CPU level"),
    ];
    if let Some(missing) = Level::ALL.into_iter().find(|level| level.check("test").is_err()) {
        let flag = vec!["--cpu-level", missing.name(), "scan", "nothing-here.npy"];
        cases.push((flag, None, "--cpu-level: this CPU cannot run level"));
        cases.push((
            vec!["scan", "nothing-here.npy"],
            Some(missing.name()),
            "BITEXACT_CPU_LEVEL: this CPU cannot run level",
        ));
    }
    for (args, env, message) in cases {
        let mut command = bitexact_command();
        command.args(&args).env_remove(LEVEL_VARIABLE);
        if let Some(value) = env {
            command.env(LEVEL_VARIABLE, value);
        }
        let run = command.output().expect("run bitexact");
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("bitexact: ") && stderr.contains(message), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
}
