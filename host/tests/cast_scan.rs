//! `bitexact scan` of a `bitexact cast` output agrees with `scan` of its input, both run
//! as a user runs them (the built binary, `scan --format json`):
//! - a sharded checkpoint of finite F32, BF16 and F16 tensors (odd shapes, subnormals,
//!   ±65504, an integer tensor) scans clean before and after every cast (bf16, f16,
//!   scaled e4m3 and e5m2 in both roundings, unscaled e4m3 and e5m2): the same files and
//!   tensors, the same element counts, no NaN or infinity, the integer tensor still not
//!   scanned, and each added `<name>_scale` a finite F32 of shape `[1]`;
//! - NaN and ±inf kept by `--nonfinite keep` are reported by `scan` of the output at the
//!   same tensor, with the same counts and the same first index, wherever the format
//!   keeps them (bf16 and f16 from F32, BF16, F16 and F64 sources; E5M2 without
//!   saturation); where it has no infinity or saturates (E4M3, scaled E5M2) the NaNs
//!   alone are reported, with the counts and first index of the input's NaNs, and no
//!   infinity.

use crate::common;

use common::{Rng, bitexact, path_arg};
use safetensors::Dtype;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// A tensor to write: name, dtype, shape, little-endian bytes.
type Tensor = (&'static str, Dtype, Vec<usize>, Vec<u8>);

/// What `scan` says of one tensor: element count, NaN, +inf, -inf, first index (`None`
/// for a tensor not scanned: `null` counts), keyed by (file name, tensor name).
type Scan = BTreeMap<(String, String), (u64, Option<(u64, u64, u64)>, Option<u64>)>;

/// `bitexact scan PATH --format json`: its exit status and what it reports.
fn scan(path: &Path) -> (i32, Scan) {
    let out = bitexact(&["scan", path_arg(path), "--format", "json"]);
    let code = out.status.code().expect("exit status");
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("scan {path:?}: not JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    let mut tensors = Scan::new();
    for file in report["files"].as_array().expect("files") {
        let file_name = Path::new(file["file"].as_str().unwrap()).file_name().unwrap().to_string_lossy().into_owned();
        for t in file["tensors"].as_array().expect("tensors") {
            let counts =
                t["nan"].as_u64().map(|nan| (nan, t["pos_inf"].as_u64().unwrap(), t["neg_inf"].as_u64().unwrap()));
            let first = t["first_non_finite"].as_u64();
            let key = (file_name.clone(), t["name"].as_str().unwrap().to_string());
            assert!(tensors.insert(key, (t["elements"].as_u64().unwrap(), counts, first)).is_none());
        }
    }
    (code, tensors)
}

/// f32 bits of random magnitude from 2^-30 to below 2^10 (both signs), then `specials`.
fn f32_values(n: usize, seed: u64, specials: &[u32]) -> Vec<u32> {
    let mut rng = Rng::new(seed);
    let mut values: Vec<u32> = (0..n)
        .map(|_| {
            let r = rng.next();
            let exp = -30 + (r % 40) as i32;
            ((r >> 63) as u32) << 31 | ((exp + 127) as u32) << 23 | ((r >> 20) as u32 & 0x007F_FFFF)
        })
        .collect();
    values.extend_from_slice(specials);
    values
}

fn f32_bytes(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// bfloat16 encodings: the top halves of the f32 values.
fn bf16_bytes(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| ((v >> 16) as u16).to_le_bytes()).collect()
}

/// binary16 encodings of the f32 values (rounded by `half`; every one is finite here,
/// or the non-finite one it was).
fn f16_bytes(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| half::f16::from_f32(f32::from_bits(*v)).to_bits().to_le_bytes()).collect()
}

fn f64_bytes(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| (f32::from_bits(*v) as f64).to_bits().to_le_bytes()).collect()
}

/// Writes `tensors` as a two-shard checkpoint (the first `split` in shard 1) with its
/// index and a config.json.
fn write_checkpoint(dir: &Path, tensors: &[Tensor], split: usize) {
    let shards = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"];
    common::write_safetensors(&dir.join(shards[0]), &tensors[..split]);
    common::write_safetensors(&dir.join(shards[1]), &tensors[split..]);
    let weight_map: serde_json::Map<String, Value> =
        tensors.iter().enumerate().map(|(i, t)| (t.0.to_string(), shards[usize::from(i >= split)].into())).collect();
    let index = serde_json::json!({ "metadata": { "total_size": 1 }, "weight_map": weight_map });
    std::fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
    std::fs::write(dir.join("config.json"), r#"{"model_type": "llama", "torch_dtype": "float32"}"#).unwrap();
}

/// Casts the checkpoint in `input` to `dir/name` with `args`; the output folder.
fn cast(input: &Path, dir: &Path, name: &str, args: &[&str]) -> std::path::PathBuf {
    let out = dir.join(name);
    let mut all = vec!["cast", path_arg(input), "-o", path_arg(&out)];
    all.extend_from_slice(args);
    let run = bitexact(&all);
    assert!(run.status.success(), "cast {args:?}: {}", String::from_utf8_lossy(&run.stderr));
    out
}

/// The finite edge values every float tensor carries: ±0, the smallest f32 subnormal
/// and a larger one, ±65504 (f16's largest), 1 and its neighbours.
const FINITE_SPECIALS: [u32; 9] = [
    0x0000_0000,
    0x8000_0000,
    0x0000_0001,
    0x0040_0000,
    0x477F_E000,
    0xC77F_E000,
    0x3F80_0000,
    0x3F80_0001,
    0x3F7F_FFFF,
];

#[test]
fn a_finite_checkpoint_scans_clean_before_and_after_every_cast() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let up = f32_values(24 * 40 - 9, 1, &FINITE_SPECIALS);
    let down = f32_values(40 * 23 - 9, 2, &FINITE_SPECIALS);
    let q = f32_values(8 * 37 - 9, 3, &FINITE_SPECIALS);
    let tensors: Vec<Tensor> = vec![
        ("model.embed_tokens.weight", Dtype::F32, vec![16, 8], f32_bytes(&f32_values(128, 4, &[]))),
        ("model.layers.0.mlp.up_proj.weight", Dtype::F32, vec![24, 40], f32_bytes(&up)),
        ("model.layers.0.input_layernorm.weight", Dtype::F32, vec![41], f32_bytes(&f32_values(41, 5, &[]))),
        ("model.layers.0.mlp.down_proj.weight", Dtype::BF16, vec![40, 23], bf16_bytes(&down)),
        ("model.layers.0.self_attn.q_proj.weight", Dtype::F16, vec![8, 37], f16_bytes(&q)),
        ("model.layers.0.position", Dtype::I64, vec![5], vec![7; 40]),
        ("lm_head.weight", Dtype::F32, vec![16, 8], f32_bytes(&f32_values(128, 6, &[]))),
    ];
    write_checkpoint(&input, &tensors, 3);
    let (code, before) = scan(&input);
    assert_eq!(code, 0, "the input scans clean: {before:?}");
    assert_eq!(before.len(), tensors.len());
    let targets: [&[&str]; 7] = [
        &["--to", "bf16"],
        &["--to", "f16"],
        &["--to", "e4m3"],
        &["--to", "e4m3", "--rounding", "two-step"],
        &["--to", "e5m2"],
        &["--to", "e4m3", "--scale", "none"],
        &["--to", "e5m2", "--scale", "none"],
    ];
    for (i, args) in targets.iter().enumerate() {
        let out = cast(&input, dir.path(), &format!("out{i}"), args);
        let (code, after) = scan(&out);
        assert_eq!(code, 0, "{args:?}: the output scans clean: {after:?}");
        let (scales, cast_tensors): (Scan, Scan) =
            after.into_iter().partition(|((_, name), _)| name.ends_with("_scale"));
        assert_eq!(cast_tensors, before, "{args:?}: the same tensors, counts and verdicts");
        let scaled = args[1].starts_with('e') && !args.contains(&"none");
        let expected_scales = if scaled { 3 } else { 0 }; // up_proj, down_proj, q_proj
        assert_eq!(scales.len(), expected_scales, "{args:?}: {scales:?}");
        for (key, tensor) in &scales {
            assert_eq!(*tensor, (1, Some((0, 0, 0)), None), "{args:?} {key:?}");
        }
    }
}

/// A non-finite value placed in a tensor: its flat index and f32 bits.
type Placed = (usize, u32);

const NAN: u32 = 0x7FC0_0000;
const POS_INF: u32 = 0x7F80_0000;
const NEG_INF: u32 = 0xFF80_0000;

/// `n` finite f32s with the `placed` non-finite values put at their indices.
fn with_nonfinite(n: usize, seed: u64, placed: &[Placed]) -> Vec<u32> {
    let mut values = f32_values(n, seed, &[]);
    for &(i, bits) in placed {
        values[i] = bits;
    }
    values
}

/// What `scan` reports for a tensor holding `placed` in `n` elements when only its NaNs
/// are kept (its infinities became finite).
fn nan_only(n: usize, placed: &[Placed]) -> (u64, Option<(u64, u64, u64)>, Option<u64>) {
    let nans: Vec<usize> = placed.iter().filter(|p| p.1 == NAN).map(|p| p.0).collect();
    (n as u64, Some((nans.len() as u64, 0, 0)), nans.iter().min().map(|&i| i as u64))
}

#[test]
fn nan_and_inf_kept_by_the_cast_are_reported_by_scan_at_the_same_tensor_and_index() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let a: &[Placed] = &[(100, NAN), (200, POS_INF), (300, NEG_INF), (560, NAN)];
    let b: &[Placed] = &[(7, NEG_INF), (399, NAN)];
    let c: &[Placed] = &[(98, POS_INF)];
    let e: &[Placed] = &[(5, NAN), (6, NEG_INF)];
    let tensors: Vec<Tensor> = vec![
        ("a.weight", Dtype::F32, vec![33, 17], f32_bytes(&with_nonfinite(33 * 17, 11, a))),
        ("d.weight", Dtype::F32, vec![8, 8], f32_bytes(&f32_values(64, 12, &[]))),
        ("b.weight", Dtype::BF16, vec![20, 20], bf16_bytes(&with_nonfinite(400, 13, b))),
        ("c.weight", Dtype::F16, vec![9, 11], f16_bytes(&with_nonfinite(99, 14, c))),
        ("e.weight", Dtype::F64, vec![3, 5], f64_bytes(&with_nonfinite(15, 15, e))),
    ];
    write_checkpoint(&input, &tensors, 2);
    let (code, before) = scan(&input);
    assert_eq!(code, 1, "the input has non-finite values: {before:?}");
    let shard = |i: usize| format!("model-0000{i}-of-00002.safetensors");
    // The input's own report, as the construction says (the test's premise).
    assert_eq!(before[&(shard(1), "a.weight".into())], (561, Some((2, 1, 1)), Some(100)));
    assert_eq!(before[&(shard(2), "b.weight".into())], (400, Some((1, 0, 1)), Some(7)));
    assert_eq!(before[&(shard(2), "c.weight".into())], (99, Some((0, 1, 0)), Some(98)));
    assert_eq!(before[&(shard(2), "e.weight".into())], (15, Some((1, 0, 1)), Some(5)));

    // Formats that keep NaN and ±inf: the same report, tensor for tensor.
    let keeping: [&[&str]; 3] = [
        &["--to", "bf16", "--nonfinite", "keep"],
        &["--to", "f16", "--nonfinite", "keep"],
        &["--to", "e5m2", "--scale", "none", "--no-saturate", "--nonfinite", "keep"],
    ];
    for (i, args) in keeping.iter().enumerate() {
        let out = cast(&input, dir.path(), &format!("keep{i}"), args);
        let (code, after) = scan(&out);
        assert_eq!(code, 1, "{args:?}");
        assert_eq!(after, before, "{args:?}: scan of the output agrees with scan of the input");
    }

    // Formats without infinity, or saturating: the NaNs alone, where they were, F64
    // included (scaled through its own f64 forms); and one scaled cast that skips the F64
    // tensor (copied, so its report is unchanged).
    let nan_keeping: [&[&str]; 5] = [
        &["--to", "e4m3", "--nonfinite", "keep"],
        &["--to", "e4m3", "--rounding", "two-step", "--nonfinite", "keep"],
        &["--to", "e5m2", "--nonfinite", "keep"],
        &["--to", "e4m3", "--nonfinite", "keep", "--skip", "^e\\.weight$"],
        &["--to", "e4m3", "--scale", "none", "--nonfinite", "keep"],
    ];
    for (i, args) in nan_keeping.iter().enumerate() {
        let out = cast(&input, dir.path(), &format!("nan{i}"), args);
        let (code, after) = scan(&out);
        assert_eq!(code, 1, "{args:?}");
        let get = |file: usize, name: &str| after[&(shard(file), name.to_string())];
        assert_eq!(get(1, "a.weight"), nan_only(561, a), "{args:?}");
        assert_eq!(get(2, "b.weight"), nan_only(400, b), "{args:?}");
        assert_eq!(get(2, "c.weight"), nan_only(99, c), "{args:?}");
        assert_eq!(get(1, "d.weight"), before[&(shard(1), "d.weight".into())], "{args:?}");
        let e_expected =
            if args.contains(&"--skip") { before[&(shard(2), "e.weight".into())] } else { nan_only(15, e) };
        assert_eq!(get(2, "e.weight"), e_expected, "{args:?}");
        let scales = after.iter().filter(|((_, name), _)| name.ends_with("_scale")).count();
        let expected_scales = match (args.contains(&"none"), args.contains(&"--skip")) {
            (true, _) => 0,
            (false, true) => 4,
            (false, false) => 5,
        };
        assert_eq!(scales, expected_scales, "{args:?}: {after:?}");
        for ((_, name), tensor) in after.iter().filter(|((_, name), _)| name.ends_with("_scale")) {
            assert_eq!(*tensor, (1, Some((0, 0, 0)), None), "{args:?}: {name}: a finite scale");
        }
    }
}
