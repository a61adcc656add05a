//! `--cpu-level` and `BITEXACT_CPU_LEVEL` on the command line: a level the CPU has runs
//! and gives the same output as every other; a level it lacks, or a name that is not a
//! level, is a one-line error and exit 2; `normalize --verbose` says which level ran, and
//! with which CPU form.

use crate::common;

use bitexact::cpu::{LEVEL_VARIABLE, Level};
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
            // The level, and in parentheses the form the CPU computed the values with at that
            // level (the binary asks the library's conversion table which; each form is
            // proven exact at each level by `host/wings/files/src/tests/cpu_levels.rs`).
            let (_, after) = convert.split_once(&format!("; cpu level {level} (")).expect("the level");
            let (form, rest) = after.split_once(')').expect("the form, in parentheses");
            assert!(!form.is_empty() && rest.starts_with(", best here "), "{stderr}");
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

/// `cast --scale mx` quantises each 32-value block by the CPU level's loop: at every level
/// this CPU has, the same bytes, and the codes and scales `shared::mx::quantize_blocks`
/// gives value by value (tiny blocks, whose scale is `2^-127`, among them), by the exact
/// rule and by RCEIL.
#[test]
fn every_level_this_cpu_has_casts_mx_to_the_same_codes_as_shared() {
    use shared::mx::{self, ElementFormat, ScaleRule};
    let dir = tempfile::tempdir().expect("a temporary directory");
    // 64 rows of 96 values; row r's magnitudes around 2^(r - 140): subnormal f32 rows
    // first, then normal ones up to 2^-77; a splitmix mantissa and sign each.
    let (rows, cols) = (64usize, 96usize);
    let mut state = 0x5EED_u64;
    let values: Vec<u32> = (0..rows * cols)
        .map(|i| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let magnitude = (1.0 + (z >> 41) as f64 / (1u64 << 23) as f64) * 2f64.powi((i / cols) as i32 - 140);
            ((magnitude as f32).to_bits()) | ((z >> 63) as u32) << 31
        })
        .collect();
    let input = dir.path().join("w.safetensors");
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let view = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![rows, cols], &bytes).expect("a view");
    std::fs::write(&input, safetensors::serialize([("model.layers.0.mlp.w.weight", view)], None).expect("serialise"))
        .expect("write the input");
    for (recipe, rule) in [("exact", ScaleRule::Fit), ("rceil", ScaleRule::Rceil)] {
        let (mut codes, mut scales) = (vec![0u8; values.len()], vec![0u8; values.len() / mx::BLOCK_SIZE]);
        mx::quantize_blocks(&values, ElementFormat::E4M3, rule, &mut codes, &mut scales).expect("whole blocks");
        for level in Level::ALL.into_iter().filter(|level| level.check("test").is_ok()) {
            let out = dir.path().join(format!("{level}-{recipe}.safetensors"));
            let run = bitexact_command()
                .args(["--cpu-level", level.name(), "cast"])
                .arg(&input)
                .arg("-o")
                .arg(&out)
                .args(["--to", "e4m3", "--scale", "mx", "--recipe", recipe])
                .output()
                .expect("run bitexact");
            assert!(run.status.success(), "{level} {recipe}: {}", String::from_utf8_lossy(&run.stderr));
            let written = std::fs::read(&out).expect("the output");
            let file = safetensors::SafeTensors::deserialize(&written).expect("a safetensors file");
            let tensor = |name: &str| file.tensor(name).expect("cast's tensor").data().to_vec();
            assert_eq!(tensor("model.layers.0.mlp.w.weight_scale"), scales, "{level} {recipe}: the scales");
            let got = tensor("model.layers.0.mlp.w.weight");
            if let Some(i) = (0..codes.len()).find(|&i| got[i] != codes[i]) {
                panic!("{level} {recipe}: x[{i}] = {:#010x}: {:#04x}, shared {:#04x}", values[i], got[i], codes[i]);
            }
        }
    }
    // The tiny rows: the least scale code, and codes other than zero (x · 2^127).
    let (mut codes, mut scales) = (vec![0u8; values.len()], vec![0u8; values.len() / mx::BLOCK_SIZE]);
    mx::quantize_blocks(&values, ElementFormat::E4M3, ScaleRule::Fit, &mut codes, &mut scales).expect("whole blocks");
    let tiny_nonzero = |b: usize| scales[b] == 0 && codes[b * 32..b * 32 + 32].iter().any(|&c| c & 0x7F != 0);
    assert!((0..scales.len()).any(tiny_nonzero), "a block at the least scale with codes other than zero");
}
