//! `bitexact cast` end to end: small generated safetensors files (one file, a sharded
//! checkpoint) cast by the built binary, every output element checked against the
//! integer references of `bitexact::verify::reference` (which share nothing with
//! `shared`'s conversions); the refusals (exit 1, nothing written), the errors (exit 2),
//! the dry run, and the index, metadata and config contents; `.npy` and `.npz` inputs
//! written by NumPy (skipped, visibly, where python3 has no NumPy; `REQUIRE_NUMPY=1`
//! makes that a failure).

use crate::common;

use bitexact::verify::reference::{
    BFLOAT16, BINARY16, FP8_E4M3, FP8_E5M2, NarrowFormat, Rounded, f32_magnitude_parts, round_to,
};
use common::{Rng, bitexact, path_arg};
use conformance::reference::nvfp4 as reference_nvfp4;
use conformance::reference::scaled;
use safetensors::{Dtype, SafeTensors};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A tensor to write: name, dtype, shape, little-endian bytes.
type Tensor = (&'static str, Dtype, Vec<usize>, Vec<u8>);

/// Writes `tensors` with the safetensors crate, with `__metadata__` `{"format": "pt"}`.
fn write_file(path: &Path, tensors: &[Tensor]) {
    let views: Vec<(&str, safetensors::tensor::TensorView<'_>)> = tensors
        .iter()
        .map(|(name, dtype, shape, data)| {
            (*name, safetensors::tensor::TensorView::new(*dtype, shape.clone(), data).unwrap())
        })
        .collect();
    let metadata = HashMap::from([("format".to_string(), "pt".to_string())]);
    std::fs::write(path, safetensors::serialize(views, Some(metadata)).unwrap()).unwrap();
}

/// f32 bits with magnitudes from `2^min_exp` to below `2^max_exp` (unbiased), random
/// signs and mantissas, subnormals below 2^-126 included; then `specials`.
fn f32_values(n: usize, min_exp: i32, max_exp: i32, seed: u64, specials: &[f32]) -> Vec<u32> {
    let mut rng = Rng::new(seed);
    let mut values: Vec<u32> = (0..n)
        .map(|_| {
            let r = rng.next();
            let exp = min_exp + (r % (max_exp - min_exp) as u64) as i32;
            let biased = (exp + 127).max(0) as u32;
            let mantissa = (r >> 20) as u32 & 0x007F_FFFF;
            ((r >> 63) as u32) << 31 | biased << 23 | mantissa
        })
        .collect();
    values.extend(specials.iter().map(|v| v.to_bits()));
    values
}

/// f64 bits likewise (a random 52-bit mantissa: most are not exact in f32).
fn f64_values(n: usize, min_exp: i32, max_exp: i32, seed: u64, specials: &[f64]) -> Vec<u64> {
    let mut rng = Rng::new(seed);
    let mut values: Vec<u64> = (0..n)
        .map(|_| {
            let (r, m) = (rng.next(), rng.next());
            let exp = min_exp + (r % (max_exp - min_exp) as u64) as i32;
            let biased = (exp + 1023).max(0) as u64;
            (r >> 63) << 63 | biased << 52 | (m & 0x000F_FFFF_FFFF_FFFF)
        })
        .collect();
    values.extend(specials.iter().map(|v| v.to_bits()));
    values
}

fn f32_bytes(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn f64_bytes(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The top halves of f32 values (bfloat16 encodings, truncated: any value is fine here).
fn bf16_bytes(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| ((v >> 16) as u16).to_le_bytes()).collect()
}

/// binary16 encodings of the f32 values that are exact in binary16 (via `half`).
fn f16_bytes(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| half::f16::from_f32(f32::from_bits(*v)).to_bits().to_le_bytes()).collect()
}

/// The exact f32 value of a source element (its bits widened by `half` or by shifting).
fn source_f32(dtype: Dtype, bytes: &[u8]) -> u32 {
    match dtype {
        Dtype::F32 => u32::from_le_bytes(bytes.try_into().unwrap()),
        Dtype::BF16 => u32::from(u16::from_le_bytes(bytes.try_into().unwrap())) << 16,
        Dtype::F16 => half::f16::from_bits(u16::from_le_bytes(bytes.try_into().unwrap())).to_f32().to_bits(),
        other => panic!("not a 32-bit-or-less source: {other:?}"),
    }
}

/// The magnitude of a finite f64 as `significand · 2^exponent`, from its fields.
fn f64_parts(bits: u64) -> (u64, i32) {
    let biased = ((bits >> 52) & 0x7FF) as i32;
    let fraction = bits & 0x000F_FFFF_FFFF_FFFF;
    if biased == 0 { (fraction, -1074) } else { (fraction | 1 << 52, biased - 1075) }
}

/// The reference rounding of a finite source element to `format`, unscaled, with
/// `saturate` at the largest finite value: the encoding, sign included.
fn reference_plain(format: NarrowFormat, dtype: Dtype, bytes: &[u8], saturate: bool) -> Option<u64> {
    let (negative, (significand, exponent)) = match dtype {
        Dtype::F64 => {
            let bits = u64::from_le_bytes(bytes.try_into().unwrap());
            (bits >> 63 == 1, f64_parts(bits))
        }
        _ => {
            let bits = source_f32(dtype, bytes);
            (bits >> 31 == 1, f32_magnitude_parts(bits))
        }
    };
    let width = 1 + format.exponent_bits + format.mantissa_bits;
    let magnitude = match round_to(format, significand, exponent) {
        Rounded::Finite(encoding) => encoding,
        Rounded::Overflow if saturate => match round_to(format, format.max_finite.0, format.max_finite.1) {
            Rounded::Finite(max) => max,
            Rounded::Overflow => unreachable!(),
        },
        Rounded::Overflow => return None,
    };
    Some(u64::from(negative) << (width - 1) | magnitude)
}

/// Reads a safetensors output with the safetensors crate.
fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `__metadata__` of a safetensors file.
fn metadata(bytes: &[u8]) -> HashMap<String, String> {
    let (_, meta) = SafeTensors::read_metadata(bytes).unwrap();
    meta.metadata().clone().unwrap_or_default()
}

/// Asserts that the output tensor `name` is `input` cast to `format` without a scale,
/// element by element.
fn assert_plain(out: &SafeTensors, input: &Tensor, format: NarrowFormat, out_dtype: Dtype, saturate: bool) {
    let (name, dtype, shape, data) = input;
    let view = out.tensor(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(view.dtype(), out_dtype, "{name}");
    assert_eq!(view.shape(), &shape[..], "{name}");
    let (ib, ob) = (dtype.bitsize() / 8, out_dtype.bitsize() / 8);
    for (i, (x, y)) in data.chunks(ib).zip(view.data().chunks(ob)).enumerate() {
        let expected = reference_plain(format, *dtype, x, saturate).expect("in range");
        let got = y.iter().rev().fold(0u64, |v, &b| v << 8 | u64::from(b));
        assert_eq!(got, expected, "{name}[{i}]: input {x:02x?}: got {got:#x}, expected {expected:#x}");
    }
}

/// Asserts that `name` is `input` scaled to FP8 (`format`) with `once` or two-step
/// rounding, and `name_scale` its dequantisation scale, against `scaled`'s rationals.
fn assert_scaled(out: &SafeTensors, input: &Tensor, format: NarrowFormat, once: bool) {
    let (name, dtype, shape, data) = input;
    let view = out.tensor(name).unwrap();
    assert_eq!(view.shape(), &shape[..]);
    let s = if *dtype == Dtype::F64 {
        let xs: Vec<u64> = data.chunks(8).map(|b| u64::from_le_bytes(b.try_into().unwrap())).collect();
        let amax = xs.iter().map(|x| x & 0x7FFF_FFFF_FFFF_FFFF).max().unwrap();
        let s = scaled::scale_for_f64(format, amax);
        for (i, (&x, &q)) in xs.iter().zip(view.data()).enumerate() {
            let expected = if once {
                scaled::quantize_once_f64(format, x, s)
            } else {
                scaled::quantize_two_step_f64(format, x, s)
            };
            assert_eq!(q, expected, "{name}[{i}]: x {x:#018x}, s {s:#010x}: got {q:#04x}, expected {expected:#04x}");
        }
        s
    } else {
        let xs: Vec<u32> = data.chunks(dtype.bitsize() / 8).map(|b| source_f32(*dtype, b)).collect();
        let amax = xs.iter().map(|x| x & 0x7FFF_FFFF).max().unwrap();
        let s = scaled::scale_for(format, amax);
        for (i, (&x, &q)) in xs.iter().zip(view.data()).enumerate() {
            let expected =
                if once { scaled::quantize_once(format, x, s) } else { scaled::quantize_two_step(format, x, s) };
            assert_eq!(q, expected, "{name}[{i}]: x {x:#010x}, s {s:#010x}: got {q:#04x}, expected {expected:#04x}");
        }
        s
    };
    let scale = out.tensor(&format!("{name}_scale")).unwrap();
    assert_eq!((scale.dtype(), scale.shape()), (Dtype::F32, &[1][..]), "{name}_scale");
    assert_eq!(scale.data(), &scaled::dequant_scale(s).to_le_bytes(), "{name}_scale");
}

/// The tensors of every source dtype, odd lengths, subnormals, ties and values near the
/// range's ends, all finite and (but for f32's and f64's far ends) within binary16's
/// range; one integer tensor.
fn sixteen_bit_inputs() -> Vec<Tensor> {
    // Ties for both 16-bit formats: 1 + 2^-8 (bf16's halfway), 1 + 2^-11 (f16's),
    // 65504 and 65519 (f16's largest and just below its overflow midpoint), the
    // smallest f16 subnormal's half, 2^-25 (a tie to zero), and 3 · 2^-26.
    let ties =
        [1.0 + 2f32.powi(-8), 1.0 + 2f32.powi(-11), 65504.0, 65519.0, 2f32.powi(-25), 3.0 * 2f32.powi(-26), -0.0];
    let f32s = f32_values(1001, -30, 15, 1, &ties);
    let f64s = f64_values(777, -30, 15, 2, &[1.0 + 2f64.powi(-8) + 2f64.powi(-40), 65519.999, 2f64.powi(-25)]);
    let in_range = f32_values(333, -24, 15, 3, &[65504.0]);
    vec![
        ("a.f32", Dtype::F32, vec![4, f32s.len() / 4], f32_bytes(&f32s[..f32s.len() / 4 * 4])),
        ("b.f64", Dtype::F64, vec![f64s.len()], f64_bytes(&f64s)),
        ("c.bf16", Dtype::BF16, vec![in_range.len()], bf16_bytes(&in_range)),
        ("d.f16", Dtype::F16, vec![in_range.len()], f16_bytes(&in_range)),
        ("e.ids", Dtype::I32, vec![3], vec![1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]),
    ]
}

fn run_ok(args: &[&str]) -> String {
    let output = bitexact(args);
    assert_eq!(output.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

/// Nothing named `.bitexact-*` left in `dir`.
fn assert_no_temporaries(dir: &Path) {
    let left: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(".bitexact-"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn bf16_and_f16_are_each_value_rounded_once_from_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("model.safetensors");
    let tensors = sixteen_bit_inputs();
    write_file(&input, &tensors);
    for (to, format, dtype) in [("bf16", BFLOAT16, Dtype::BF16), ("f16", BINARY16, Dtype::F16)] {
        let out = dir.path().join(format!("out-{to}"));
        run_ok(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", to]);
        let bytes = read(&out.join("model.safetensors"));
        let cast = SafeTensors::deserialize(&bytes).unwrap();
        for tensor in &tensors {
            match tensor.1 {
                Dtype::I32 => assert_eq!(cast.tensor(tensor.0).unwrap().data(), &tensor.3[..]),
                d if d == dtype => assert_eq!(cast.tensor(tensor.0).unwrap().data(), &tensor.3[..], "copied"),
                _ => assert_plain(&cast, tensor, format, dtype, false),
            }
        }
        let meta = metadata(&bytes);
        assert_eq!(meta.get("format").map(String::as_str), Some("pt"), "{meta:?}");
        let record: serde_json::Value = serde_json::from_str(&meta["bitexact.cast"]).unwrap();
        assert_eq!(record["to"], dtype_name(dtype));
        assert_eq!(record["tensors"]["b.f64"], "F64", "{record}");
        assert!(record["tensors"].get("e.ids").is_none(), "{record}");
    }
}

fn dtype_name(dtype: Dtype) -> &'static str {
    match dtype {
        Dtype::BF16 => "BF16",
        Dtype::F16 => "F16",
        _ => unreachable!(),
    }
}

#[test]
fn f32_to_f16_in_range_matches_the_reference_and_out_of_range_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("w.safetensors");
    let values = f32_values(501, -30, 16, 9, &[65519.0, -65504.0, 70000.0]);
    let (ok, bad): (Vec<u32>, Vec<u32>) = values.iter().partition(|v| f32::from_bits(**v).abs() < 65520.0);
    let tensor: Tensor = ("w", Dtype::F32, vec![ok.len()], f32_bytes(&ok));
    write_file(&input, std::slice::from_ref(&tensor));
    let out = dir.path().join("out.safetensors");
    run_ok(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", "f16"]);
    let bytes = read(&out);
    assert_plain(&SafeTensors::deserialize(&bytes).unwrap(), &tensor, BINARY16, Dtype::F16, false);

    assert!(!bad.is_empty(), "the generator gives values past 65520");
    let mut with_bad = ok.clone();
    with_bad.insert(3, bad[0]);
    write_file(&input, &[("w", Dtype::F32, vec![with_bad.len()], f32_bytes(&with_bad))]);
    let out = dir.path().join("refused.safetensors");
    let output = bitexact(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", "f16"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("tensor 'w' index 3: out of the range of f16"), "{stderr}");
    assert!(!out.exists());
    assert_no_temporaries(dir.path());
}

/// Weights of each 32-bit-or-less source dtype, with a 1-D norm, the embedding and the
/// head (kept by default).
fn fp8_inputs() -> Vec<Tensor> {
    let w = f32_values(2 * 301, -20, 6, 4, &[]);
    let subnormal_heavy = f32_values(3 * 111 - 1, -140, -100, 5, &[0.0]);
    let halves = f32_values(5 * 40, -8, 8, 6, &[]);
    let norm = f32_values(64, -2, 2, 7, &[]);
    vec![
        ("model.layers.0.mlp.up_proj.weight", Dtype::F32, vec![2, 301], f32_bytes(&w)),
        ("model.layers.0.mlp.down_proj.weight", Dtype::F32, vec![3, 111], f32_bytes(&subnormal_heavy)),
        ("model.layers.0.self_attn.q_proj.weight", Dtype::BF16, vec![5, 40], bf16_bytes(&halves)),
        ("model.layers.0.self_attn.k_proj.weight", Dtype::F16, vec![40, 5], f16_bytes(&halves)),
        ("model.layers.0.input_layernorm.weight", Dtype::F32, vec![64], f32_bytes(&norm)),
        ("model.embed_tokens.weight", Dtype::BF16, vec![8, 8], bf16_bytes(&norm)),
        ("lm_head.weight", Dtype::BF16, vec![8, 8], bf16_bytes(&norm)),
    ]
}

#[test]
fn scaled_fp8_matches_the_rational_reference_once_and_in_two_steps() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("model.safetensors");
    let mut tensors = fp8_inputs();
    // An f64 weight whose amax is 448, so that s = 1 and these stay ties and near-ties
    // in E4M3: 1.0625 + 2^-50 (above the tie between 1 and 1.125, which fl32 rounds onto
    // the tie: once and two-step differ), the tie itself, 2^-10 (the tie between 0 and
    // the smallest subnormal) and just above it, 248 (the tie between 240 and 256) and
    // just above it, a tiny value and -0.
    let specials = [
        448.0,
        1.0625 + 2f64.powi(-50),
        -1.0625,
        2f64.powi(-10),
        2f64.powi(-10) + 2f64.powi(-60),
        248.0,
        -(248.0 + 2f64.powi(-40)),
        1e-300,
        -0.0,
    ];
    let f64s = f64_values(3 * 97 - specials.len(), -30, 6, 8, &specials);
    tensors.insert(4, ("model.layers.0.mlp.gate_proj.weight", Dtype::F64, vec![3, 97], f64_bytes(&f64s)));
    write_file(&input, &tensors);
    for (to, format, rounding) in [
        ("e4m3", FP8_E4M3, "once"),
        ("e4m3", FP8_E4M3, "two-step"),
        ("e5m2", FP8_E5M2, "once"),
        ("e5m2", FP8_E5M2, "two-step"),
    ] {
        let out = dir.path().join(format!("{to}-{rounding}"));
        run_ok(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", to, "--rounding", rounding]);
        let bytes = read(&out.join("model.safetensors"));
        let cast = SafeTensors::deserialize(&bytes).unwrap();
        for tensor in &tensors[..5] {
            assert_scaled(&cast, tensor, format, rounding == "once");
        }
        if format.mantissa_bits == 3 {
            // 1.0625 + 2^-50 at s = 1: 1.125 once, 1 in two steps.
            let q = cast.tensor(tensors[4].0).unwrap().data()[3 * 97 - specials.len() + 1];
            assert_eq!(q, if rounding == "once" { 0x39 } else { 0x38 }, "{rounding}");
        }
        for tensor in &tensors[5..] {
            assert_eq!(cast.tensor(tensor.0).unwrap().data(), &tensor.3[..], "{} is kept", tensor.0);
            assert!(cast.tensor(&format!("{}_scale", tensor.0)).is_err(), "{} has no scale", tensor.0);
        }
    }
}

#[test]
fn unscaled_fp8_saturates_unless_asked_not_to() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("w.safetensors");
    let values = f32_values(300, -12, 8, 8, &[448.0, 464.0, 500.0, -1e6]);
    let f64s = f64_values(300, -12, 8, 10, &[448.0, 464.000001, -1e300]);
    let tensors: Vec<Tensor> = vec![
        ("w", Dtype::F32, vec![values.len(), 1], f32_bytes(&values)),
        ("v", Dtype::F64, vec![1, f64s.len()], f64_bytes(&f64s)),
    ];
    write_file(&input, &tensors);
    let out = dir.path().join("sat.safetensors");
    run_ok(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", "e4m3", "--scale", "none"]);
    let bytes = read(&out);
    let cast = SafeTensors::deserialize(&bytes).unwrap();
    for tensor in &tensors {
        assert_plain(&cast, tensor, FP8_E4M3, Dtype::F8_E4M3, true);
    }
    assert!(cast.tensor("w_scale").is_err());

    let refused = dir.path().join("refused.safetensors");
    let args = ["cast", path_arg(&input), "-o", path_arg(&refused), "--to", "e4m3", "--scale", "none", "--no-saturate"];
    let output = bitexact(&args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    // 464 is the midpoint between 448 (mantissa 110) and 480 (111): a tie to even, 448;
    // 500 and 464.000001 round to 480, past the range.
    let w = format!("tensor 'w' index {}: out of the range of e4m3", values.len() - 2);
    let v = format!("tensor 'v' index {}: out of the range of e4m3", f64s.len() - 2);
    assert!(stderr.contains(&w) || stderr.contains(&v), "{stderr}");
    assert!(!refused.exists());

    run_ok(&[&args[..], &["--nonfinite", "keep"]].concat());
    let bytes = read(&refused);
    let w = SafeTensors::deserialize(&bytes).unwrap().tensor("w").unwrap().data().to_vec();
    assert_eq!(&w[values.len() - 4..], &[0x7E, 0x7E, 0x7F, 0xFF], "448 twice, then NaN past it with the sign");
}

#[test]
fn a_non_finite_value_is_refused_with_its_tensor_and_index_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("model.safetensors");
    let mut values = f32_values(100, -5, 5, 11, &[]);
    values[17] = f32::NAN.to_bits();
    values[40] = f32::INFINITY.to_bits();
    let tensors: Vec<Tensor> = vec![
        ("ok.weight", Dtype::F32, vec![10, 10], f32_bytes(&f32_values(100, -5, 5, 12, &[]))),
        ("bad.weight", Dtype::F32, vec![10, 10], f32_bytes(&values)),
    ];
    write_file(&input, &tensors);
    for to in ["bf16", "f16", "e4m3", "e5m2"] {
        let out = dir.path().join(format!("out-{to}"));
        let output = bitexact(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", to]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{to}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("tensor 'bad.weight' index 17: not finite"), "{to}: {stderr}");
        assert!(!out.exists(), "{to}");
        assert_no_temporaries(dir.path());
    }
    let out = dir.path().join("kept");
    run_ok(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", "e4m3", "--nonfinite", "keep"]);
    let bytes = read(&out.join("model.safetensors"));
    let cast = SafeTensors::deserialize(&bytes).unwrap();
    let q = cast.tensor("bad.weight").unwrap().data();
    assert_eq!((q[17] & 0x7F, q[40]), (0x7F, 0x7E), "NaN stays NaN, +inf saturates to 448");
    // The scale is that of the finite values' amax.
    let amax = values.iter().filter(|v| *v & 0x7F80_0000 != 0x7F80_0000).map(|v| v & 0x7FFF_FFFF).max().unwrap();
    let scale = cast.tensor("bad.weight_scale").unwrap();
    assert_eq!(scale.data(), &scaled::dequant_scale(scaled::scale_for(FP8_E4M3, amax)).to_le_bytes());
}

#[test]
fn an_f64_amax_too_large_for_an_f32_scale_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("model.safetensors");
    let mut values = f64_values(60, -5, 5, 13, &[]);
    values[33] = (-1e43f64).to_bits();
    let tensors: Vec<Tensor> = vec![("huge.weight", Dtype::F64, vec![6, 10], f64_bytes(&values))];
    write_file(&input, &tensors);
    let out = dir.path().join("out");
    let output = bitexact(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", "e4m3"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("tensor 'huge.weight': amax 1e43 is too large for an f32 scale"), "{stderr}");
    assert!(!out.exists());
    assert_no_temporaries(dir.path());
    // Without a scale, it saturates.
    run_ok(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", "e4m3", "--scale", "none"]);
    let bytes = read(&out.join("model.safetensors"));
    assert_plain(&SafeTensors::deserialize(&bytes).unwrap(), &tensors[0], FP8_E4M3, Dtype::F8_E4M3, true);
    // E5M2's scale reaches further: 57344 / 1e43 is still above 2^-128 (a subnormal).
    let out = dir.path().join("e5m2");
    run_ok(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", "e5m2"]);
    let bytes = read(&out.join("model.safetensors"));
    assert_scaled(&SafeTensors::deserialize(&bytes).unwrap(), &tensors[0], FP8_E5M2, true);
}

/// A two-shard checkpoint with an index (with metadata) and a config.json.
fn sharded_checkpoint(dir: &Path) -> Vec<Tensor> {
    let tensors = fp8_inputs();
    write_file(&dir.join("model-00001-of-00002.safetensors"), &tensors[..3]);
    write_file(&dir.join("model-00002-of-00002.safetensors"), &tensors[3..]);
    let weight_map: serde_json::Map<String, serde_json::Value> = tensors
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let shard = if i < 3 { "model-00001-of-00002.safetensors" } else { "model-00002-of-00002.safetensors" };
            (t.0.to_string(), shard.into())
        })
        .collect();
    let index = serde_json::json!({ "metadata": { "total_size": 1, "kept": "yes" }, "weight_map": weight_map });
    std::fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
    let config = serde_json::json!({ "model_type": "llama", "torch_dtype": "float32", "hidden_size": 8 });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    tensors
}

/// The names in the folder `out`, sorted.
fn sorted_names(out: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// A temporary folder holding `model/`, a [`sharded_checkpoint`]: the folder (kept while
/// the returned `TempDir` lives), the checkpoint's path and its tensors.
fn sharded_checkpoint_in_temp() -> (tempfile::TempDir, PathBuf, Vec<Tensor>) {
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("model");
    std::fs::create_dir(&checkpoint).unwrap();
    let tensors = sharded_checkpoint(&checkpoint);
    (dir, checkpoint, tensors)
}

#[test]
fn a_sharded_checkpoint_gives_shards_alike_a_rewritten_index_and_a_quantization_config() {
    let (dir, checkpoint, tensors) = sharded_checkpoint_in_temp();
    let out = dir.path().join("model-fp8");
    let index_arg = checkpoint.join("model.safetensors.index.json");
    for input in [checkpoint.clone(), index_arg] {
        run_ok(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", "e4m3"]);
        assert_eq!(
            sorted_names(&out),
            [
                "config.json",
                "model-00001-of-00002.safetensors",
                "model-00002-of-00002.safetensors",
                "model.safetensors.index.json"
            ]
        );
        let index: serde_json::Value =
            serde_json::from_slice(&read(&out.join("model.safetensors.index.json"))).unwrap();
        let map = index["weight_map"].as_object().unwrap();
        let mut total = 0;
        for shard in ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"] {
            let bytes = read(&out.join(shard));
            let cast = SafeTensors::deserialize(&bytes).unwrap();
            for (name, view) in cast.tensors() {
                assert_eq!(map.get(&name).and_then(|v| v.as_str()), Some(shard), "{name} in the weight_map");
                total += view.data().len();
            }
            assert_eq!(cast.len(), map.values().filter(|v| v.as_str() == Some(shard)).count(), "{shard}");
        }
        assert_eq!(map.len(), tensors.len() + 4, "every tensor and the four scales");
        assert_eq!(index["metadata"]["total_size"], total);
        assert_eq!(index["metadata"]["kept"], "yes");
        let bytes = read(&out.join("model-00002-of-00002.safetensors"));
        assert_scaled(&SafeTensors::deserialize(&bytes).unwrap(), &tensors[3], FP8_E4M3, true);

        let config: serde_json::Value = serde_json::from_slice(&read(&out.join("config.json"))).unwrap();
        assert_eq!(config["hidden_size"], 8);
        let quantization = &config["quantization_config"];
        assert_eq!(quantization["quant_method"], "compressed-tensors");
        assert_eq!(quantization["format"], "float-quantized");
        assert_eq!(quantization["config_groups"]["group_0"]["weights"]["strategy"], "tensor");
        assert_eq!(quantization["ignore"], serde_json::json!(["lm_head", "model.embed_tokens"]));
        std::fs::remove_dir_all(&out).unwrap();
    }
}

#[test]
fn a_dry_run_lists_every_tensor_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("model");
    std::fs::create_dir(&checkpoint).unwrap();
    sharded_checkpoint(&checkpoint);
    let out = dir.path().join("out");
    let stdout = run_ok(&["cast", path_arg(&checkpoint), "-o", path_arg(&out), "--to", "e4m3", "--dry-run"]);
    assert!(!out.exists());
    assert_no_temporaries(dir.path());
    assert!(
        stdout.contains(
            "model.layers.0.mlp.up_proj.weight [2, 301]: F32 -> F8_E4M3, scale model.layers.0.mlp.up_proj.weight_scale"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("lm_head.weight [8, 8]: BF16 copied (embedding or output head (FP8 and NVFP4 default))"),
        "{stdout}"
    );
    assert!(stdout.contains("input_layernorm.weight [64]: F32 copied (fewer than 2 dimensions"), "{stdout}");
    assert!(stdout.contains("would cast 4 of 7 tensors to e4m3"), "{stdout}");

    let stdout = run_ok(&[
        "cast",
        path_arg(&checkpoint),
        "-o",
        path_arg(&out),
        "--to",
        "e4m3",
        "--dry-run",
        "--only",
        "proj|lm_head",
        "--skip",
        "k_proj",
    ]);
    assert!(stdout.contains("lm_head.weight [8, 8]: BF16 -> F8_E4M3"), "{stdout}");
    assert!(stdout.contains("k_proj.weight [40, 5]: F16 copied (matched by --skip)"), "{stdout}");
    assert!(stdout.contains("would cast 4 of 7 tensors"), "{stdout}");
}

/// Tensor and file names with escape codes, a newline and a bidirectional override are
/// shown escaped in every column of the summary, in a dry run and in a cast: nothing a
/// terminal acts on reaches it but the line ends.
#[test]
fn names_with_control_characters_are_escaped_in_the_summary_and_the_dry_run() {
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("model");
    std::fs::create_dir(&checkpoint).unwrap();
    let weights = f32_bytes(&f32_values(64, -8, 2, 7, &[]));
    let tensors: Vec<Tensor> = vec![
        ("evil\u{1b}[2J.weight", Dtype::F32, vec![8, 8], weights.clone()),
        ("line\nbreak\u{202e}.weight", Dtype::F32, vec![8, 8], weights),
    ];
    write_file(&checkpoint.join("shard\u{1b}]0;title\u{7}.safetensors"), &tensors);
    let out = dir.path().join("out");
    for extra in [&["--dry-run"][..], &[]] {
        let mut args = vec!["cast", path_arg(&checkpoint), "-o", path_arg(&out), "--to", "e4m3"];
        args.extend(extra);
        let stdout = run_ok(&args);
        let raw: Vec<char> = stdout.chars().filter(|&c| (c.is_control() && c != '\n') || c == '\u{202e}').collect();
        assert!(raw.is_empty(), "{extra:?}: {raw:?} in\n{stdout}");
        assert!(stdout.contains("shard\\u{1b}]0;title\\u{7}.safetensors evil\\u{1b}[2J.weight [8, 8]"), "{stdout}");
        assert!(stdout.contains("scale evil\\u{1b}[2J.weight_scale"), "{stdout}");
        assert!(stdout.contains("line\\nbreak\\u{202e}.weight [8, 8]"), "{stdout}");
        assert_eq!(stdout.lines().count(), 3, "{extra:?}: one line per tensor and the total:\n{stdout}");
    }
}

/// Asserts exit 2, one stderr line containing `problem`, nothing at `out`.
fn assert_error(args: &[&str], out: &Path, problem: &str) {
    let output = bitexact(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(problem), "{stderr:?} should mention {problem:?}");
    assert!(!out.exists() || problem.contains("already exists"));
}

#[test]
fn bad_requests_are_one_line_and_exit_2_with_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("model.safetensors");
    let tensors = sixteen_bit_inputs();
    write_file(&input, &tensors);
    let out = dir.path().join("out");
    let (i, o) = (path_arg(&input), path_arg(&out));
    assert_error(&["cast", i, "-o", o, "--to", "bf16", "--only", "ids"], &out, "tensor 'e.ids' is I32");
    assert_error(&["cast", i, "-o", o, "--to", "bf16", "--scale", "none"], &out, "apply to FP8 targets");
    assert_error(&["cast", i, "-o", o, "--to", "bf16", "--only", "("], &out, "--only:");
    let second = dir.path().join("b");
    std::fs::create_dir(&second).unwrap();
    std::fs::copy(&input, second.join("other.safetensors")).unwrap();
    std::fs::copy(&input, second.join("model.safetensors")).unwrap();
    assert_error(
        &["cast", i, path_arg(&second.join("model.safetensors")), "-o", o, "--to", "bf16"],
        &out,
        "another input has the file name",
    );
    assert_error(
        &[
            "cast",
            i,
            path_arg(&second.join("other.safetensors")),
            "-o",
            path_arg(&out.with_extension("safetensors")),
            "--to",
            "bf16",
        ],
        &out.with_extension("safetensors"),
        "takes one input file",
    );
    // A typo in --only, or an --only whose tensors --skip removes: nothing would be cast,
    // so nothing is written.
    assert_error(
        &["cast", i, "-o", o, "--to", "bf16", "--only", "no_such"],
        &out,
        "--only 'no_such' leaves nothing to cast",
    );
    assert_error(
        &["cast", i, "-o", o, "--to", "bf16", "--only", "d.f16", "--skip", "f16"],
        &out,
        "leaves nothing to cast",
    );
    // A text file named .safetensors.
    let text = dir.path().join("notes.safetensors");
    std::fs::write(&text, "These are notes, not tensors.\n").unwrap();
    assert_error(&["cast", path_arg(&text), "-o", o, "--to", "bf16"], &out, "not a safetensors file: byte 8 is 0x65");
    // A NumPy output name (cast writes safetensors), not a folder of that name.
    let npy = dir.path().join("w_out.npy");
    assert_error(
        &["cast", i, "-o", path_arg(&npy), "--to", "bf16"],
        &npy,
        "names a NumPy file; cast writes safetensors",
    );
    std::fs::create_dir(&out).unwrap();
    assert_error(&["cast", i, "-o", o, "--to", "bf16"], &out, "already exists");
    assert_no_temporaries(dir.path());
}

/// A `config.json` beside the input that is not JSON is reported under its own path, not
/// the output's (exit 2, nothing written).
#[test]
fn a_bad_config_json_is_named_by_its_own_path() {
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("model");
    std::fs::create_dir(&checkpoint).unwrap();
    write_file(&checkpoint.join("model.safetensors"), &sixteen_bit_inputs());
    let config = checkpoint.join("config.json");
    std::fs::write(&config, "{\"architectures\": [").unwrap();
    let out = dir.path().join("out");
    let problem = format!("{}: cannot read it as a JSON object: ", config.display());
    assert_error(&["cast", path_arg(&checkpoint), "-o", path_arg(&out), "--to", "bf16"], &out, &problem);
    assert_no_temporaries(dir.path());
}

/// Casts that succeed but may surprise say so on stderr, one line each, and in JSON's
/// `warnings`: a tensor so small that its dequantisation scale is subnormal, and an FP8
/// cast whose `config.json` gets no `quantization_config`.
#[test]
fn surprising_casts_warn_on_stderr_and_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let checkpoint = dir.path().join("model");
    std::fs::create_dir(&checkpoint).unwrap();
    // An amax below 448 / f32::MAX (about 1.32e-36): the scale 448/amax is clamped to
    // f32::MAX. One of 3e-36: the scale is finite, its inverse subnormal (below 2^-126).
    let tiny: Vec<u32> = (1..=16).map(|i| (1e-38f32 * i as f32).to_bits()).collect();
    let small: Vec<u32> = (1..=16).map(|i| (3e-36f32 * i as f32 / 16.0).to_bits()).collect();
    let normal = f32_values(16, -4, 2, 3, &[]);
    let tensors: Vec<Tensor> = vec![
        ("tiny.weight", Dtype::F32, vec![4, 4], f32_bytes(&tiny)),
        ("small.weight", Dtype::F32, vec![4, 4], f32_bytes(&small)),
        ("normal.weight", Dtype::F32, vec![4, 4], f32_bytes(&normal)),
    ];
    write_file(&checkpoint.join("model.safetensors"), &tensors);
    std::fs::write(checkpoint.join("config.json"), r#"{"torch_dtype": "float32"}"#).unwrap();
    let run = |to: &str, out: &str| {
        let out = dir.path().join(out);
        let output = bitexact(&["cast", path_arg(&checkpoint), "-o", path_arg(&out), "--to", to, "--format", "json"]);
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        (String::from_utf8(output.stderr).unwrap(), json)
    };
    let (stderr, json) = run("e4m3", "out-e4m3");
    let clamped = "model.safetensors: tensor 'tiny.weight': its amax is so small that the scale max/amax is past f32 and clamped to f32::MAX";
    let subnormal = "model.safetensors: tensor 'small.weight': its dequantisation scale";
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    let line = |start: &str| lines.iter().find(|l| l.starts_with(&format!("bitexact: warning: {start}"))).copied();
    assert!(line(clamped).is_some(), "{stderr}");
    let subnormal_line = line(subnormal).unwrap_or_else(|| panic!("{stderr}"));
    assert!(subnormal_line.ends_with("is subnormal in f32: a loader that flushes subnormals to zero reads it as 0"));
    let warnings = json["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 2, "{json}");
    assert!(warnings.iter().any(|w| w.as_str().unwrap().starts_with(clamped)), "{json}");
    let (stderr, json) = run("e5m2", "out-e5m2");
    assert!(stderr.contains("bitexact: warning: config.json was copied unchanged"), "{stderr}");
    assert!(
        json["warnings"].as_array().is_some_and(|w| w.iter().any(|w| w.as_str().unwrap().contains("e5m2"))),
        "{json}"
    );
    let (stderr, json) = run("bf16", "out-bf16");
    assert!(stderr.is_empty() && json.get("warnings").is_none(), "{stderr} {json}");
    // The config's torch_dtype says the target's PyTorch name.
    for (to, torch) in [("bf16", "bfloat16"), ("f16", "float16")] {
        let out = format!("config-{to}");
        run(to, &out);
        let config: serde_json::Value =
            serde_json::from_slice(&read(&dir.path().join(out).join("config.json"))).unwrap();
        assert_eq!(config["torch_dtype"], torch, "{config}");
    }
}

/// A shard that holds a tensor its index does not list there (here: a copy of one that
/// the index places in the other shard) is cast all the same, with a warning naming the
/// shard, the index and the tensor, in the dry run and the cast, as `scan` warns.
#[test]
fn a_shard_holding_tensors_its_index_does_not_list_is_a_warning() {
    let (dir, checkpoint, tensors) = sharded_checkpoint_in_temp();
    // Shard 2 rewritten with shard 1's first tensor added.
    let mut second: Vec<Tensor> = tensors[3..].to_vec();
    second.push(tensors[0].clone());
    write_file(&checkpoint.join("model-00002-of-00002.safetensors"), &second);
    let out = dir.path().join("out");
    for extra in [&["--dry-run"][..], &[]] {
        let mut args = vec!["cast", path_arg(&checkpoint), "-o", path_arg(&out), "--to", "e4m3"];
        args.extend(extra);
        let output = bitexact(&args);
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        let stderr = String::from_utf8_lossy(&output.stderr);
        let warning = format!(
            "bitexact: warning: {}: 1 tensor that {} does not list in this shard (first: '{}'): cast all the same",
            checkpoint.join("model-00002-of-00002.safetensors").display(),
            checkpoint.join("model.safetensors.index.json").display(),
            tensors[0].0
        );
        assert!(stderr.starts_with(&warning), "{extra:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    // The rewritten index keeps the tensor, and puts its scale, where the index put it.
    let index: serde_json::Value = serde_json::from_slice(&read(&out.join("model.safetensors.index.json"))).unwrap();
    let first_shard = "model-00001-of-00002.safetensors";
    assert_eq!(index["weight_map"][tensors[0].0], first_shard, "{index}");
    assert_eq!(index["weight_map"][format!("{}_scale", tensors[0].0)], first_shard, "{index}");
    // Its total_size counts what it lists, where it lists it: not the copy in shard 2.
    assert_eq!(index["metadata"]["total_size"], listed_bytes(&out, &index), "{index}");
}

/// The data bytes of every tensor an output index's `weight_map` lists, read from the
/// shard it names in the folder `out`.
fn listed_bytes(out: &Path, index: &serde_json::Value) -> usize {
    let mut total = 0;
    for (tensor, shard) in index["weight_map"].as_object().unwrap() {
        let bytes = read(&out.join(shard.as_str().unwrap()));
        total += SafeTensors::deserialize(&bytes).unwrap().tensor(tensor).unwrap().data().len();
    }
    total
}

/// What a folder's layout loses in the output (one folder of files side by side) is a
/// warning each: a link to a shard (written once, under the shard's name, so that the
/// rewritten index names files that exist, whichever name the walk meets first), a hard
/// link to another file, a file beside the index that it does not list, and a file in a
/// subfolder (written at the output's top level).
#[test]
fn links_strays_and_subfolders_of_a_folder_are_warnings() {
    let (dir, checkpoint, tensors) = sharded_checkpoint_in_temp();
    // "a-link" sorts before the shards, so the walk meets it first.
    let shard = checkpoint.join("model-00001-of-00002.safetensors");
    std::os::unix::fs::symlink(&shard, checkpoint.join("a-link.safetensors")).unwrap();
    let stray = checkpoint.join("stray.safetensors");
    write_file(&stray, &tensors[3..4]);
    std::fs::hard_link(&stray, checkpoint.join("stray_link.safetensors")).unwrap();
    std::fs::create_dir(checkpoint.join("sub")).unwrap();
    let nested = checkpoint.join("sub").join("nested.safetensors");
    write_file(&nested, &tensors[4..5]);
    let out = dir.path().join("out");
    let output = bitexact(&["cast", path_arg(&checkpoint), "-o", path_arg(&out), "--to", "e4m3"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let index_path = checkpoint.join("model.safetensors.index.json");
    let want = [
        format!(
            "bitexact: warning: {}: the same file as {} (a link): cast once, under that name",
            checkpoint.join("a-link.safetensors").display(),
            shard.display()
        ),
        format!(
            "bitexact: warning: {}: the same file as {} (a link): cast once, under that name",
            checkpoint.join("stray_link.safetensors").display(),
            stray.display()
        ),
        format!(
            "bitexact: warning: {}: beside {}, which does not list it: cast as a file of its own, outside the rewritten index",
            stray.display(),
            index_path.display()
        ),
        format!(
            "bitexact: warning: {}: in a subfolder of {}: written as nested.safetensors at the output's top level",
            nested.display(),
            checkpoint.display()
        ),
    ];
    for line in &want {
        assert!(stderr.lines().any(|l| l == line), "missing {line:?} in:\n{stderr}");
    }
    assert_eq!(stderr.lines().filter(|l| l.starts_with("bitexact: warning:")).count(), want.len(), "{stderr}");
    assert_eq!(
        sorted_names(&out),
        [
            "config.json",
            "model-00001-of-00002.safetensors",
            "model-00002-of-00002.safetensors",
            "model.safetensors.index.json",
            "nested.safetensors",
            "stray.safetensors"
        ]
    );
    let index: serde_json::Value = serde_json::from_slice(&read(&out.join("model.safetensors.index.json"))).unwrap();
    assert_eq!(index["metadata"]["total_size"], listed_bytes(&out, &index), "{index}");
    // The folder given twice, or spelt another way: one checkpoint, no warning.
    let again = dir.path().join("again");
    let dotted = checkpoint.join(".");
    let output = bitexact(&["cast", path_arg(&checkpoint), path_arg(&dotted), "-o", path_arg(&again), "--to", "bf16"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr.lines().filter(|l| l.starts_with("bitexact: warning:")).count(), want.len(), "{stderr}");
}

/// Two indexes whose shards are one file (a link): cast would write it once, and one
/// rewritten index would name a file that is not there, so it is refused before any
/// work, naming both.
#[test]
fn a_shard_that_is_a_link_to_another_index_s_shard_is_refused() {
    let (dir, checkpoint, tensors) = sharded_checkpoint_in_temp();
    let other = checkpoint.join("other");
    std::fs::create_dir(&other).unwrap();
    let shard = checkpoint.join("model-00001-of-00002.safetensors");
    std::os::unix::fs::symlink(&shard, other.join("linked.safetensors")).unwrap();
    let map = serde_json::json!({ "weight_map": { tensors[0].0: "linked.safetensors" } });
    std::fs::write(other.join("model.safetensors.index.json"), map.to_string()).unwrap();
    let out = dir.path().join("out");
    let output = bitexact(&["cast", path_arg(&checkpoint), "-o", path_arg(&out), "--to", "bf16"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let want = format!(
        "bitexact: {}: the same file as {} (a link), and both are shards of an index",
        other.join("linked.safetensors").display(),
        shard.display()
    );
    assert!(stderr.starts_with(&want) && stderr.lines().count() == 1, "{stderr}");
    assert!(!out.exists());
}

/// A safetensors file from raw parts, any dtype name allowed: `(name, dtype, shape,
/// data)` each, the data in order.
fn raw_safetensors(tensors: &[(&str, &str, Vec<u64>, Vec<u8>)]) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut offset = 0;
    for (name, dtype, shape, data) in tensors {
        let entry = serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + data.len()]});
        header.insert(name.to_string(), entry);
        offset += data.len();
    }
    let header = serde_json::Value::Object(header).to_string();
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend(header.as_bytes());
    for (_, _, _, data) in tensors {
        bytes.extend(data);
    }
    bytes
}

/// The data of tensor `name` in the safetensors `bytes`, found by its header entry.
fn raw_tensor_data<'b>(bytes: &'b [u8], name: &str) -> (String, &'b [u8]) {
    let header_len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + header_len]).unwrap();
    let entry = &header[name];
    let (start, end) = (entry["data_offsets"][0].as_u64().unwrap(), entry["data_offsets"][1].as_u64().unwrap());
    let data = &bytes[8 + header_len..];
    (entry["dtype"].as_str().unwrap().to_string(), &data[start as usize..end as usize])
}

/// A tensor of a dtype this tool does not know (`I4`, 64 bytes where `[8, 8]` four-bit
/// values would take 32) is copied byte for byte, with a warning that its size was not
/// checked, in the dry run, on stderr and in JSON.
#[test]
fn a_tensor_of_an_unknown_dtype_is_copied_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("w.safetensors");
    let weight = f32_values(4, -2, 2, 5, &[]);
    let packed: Vec<u8> = (0..64u8).map(|i| i.wrapping_mul(37)).collect();
    let tensors = [("w.weight", "F32", vec![2, 2], f32_bytes(&weight)), ("q.weight", "I4", vec![8, 8], packed.clone())];
    std::fs::write(&input, raw_safetensors(&tensors)).unwrap();
    let warning = format!(
        "bitexact: warning: {}: 1 tensor of a dtype this tool does not know (first: 'q.weight', dtype 'I4'): copied byte for byte, sizes unchecked",
        input.display()
    );
    let out = dir.path().join("out.safetensors");
    let dry = bitexact(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", "bf16", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "{}", String::from_utf8_lossy(&dry.stderr));
    assert_eq!(String::from_utf8_lossy(&dry.stderr).trim_end(), warning);
    let output = bitexact(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", "bf16", "--format", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(String::from_utf8_lossy(&output.stderr).trim_end(), warning);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let warnings = json["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1, "{json}");
    assert_eq!(format!("bitexact: warning: {}", warnings[0].as_str().unwrap()), warning, "{json}");
    let written = read(&out);
    assert_eq!(raw_tensor_data(&written, "q.weight"), ("I4".to_string(), &packed[..]));
    assert_eq!(raw_tensor_data(&written, "w.weight").0, "BF16");
}

/// `-o out/` names the folder `out`, as people write folders; `-o x.safetensors/` a folder
/// of that name, though a single file could be.
#[test]
fn an_output_ending_in_a_slash_is_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("model.safetensors");
    write_file(&input, &sixteen_bit_inputs());
    for name in ["out/", "single.safetensors//"] {
        let out = format!("{}/{name}", dir.path().display());
        run_ok(&["cast", path_arg(&input), "-o", &out, "--to", "bf16"]);
        let folder = dir.path().join(name.trim_end_matches('/'));
        assert!(folder.is_dir(), "{name}: a folder");
        assert!(folder.join("model.safetensors").is_file(), "{name}: the cast file inside");
    }
    assert_no_temporaries(dir.path());
}

/// Writes NumPy files with python3: each job `[raw, dtype, shape, order, out]` reads the
/// little-endian `<f4`/`<f8`/`<f2`/... bytes of the file `raw`, makes them an array of
/// `dtype` (a NumPy type string: `>f4` swaps the bytes, the values stay) of `shape` in
/// `order` (`C` or `F`), and saves it to `out` (`.npy`); jobs whose `out` is
/// `ARCHIVE.npz:member` are saved together into `ARCHIVE.npz` by `np.savez_compressed`.
/// `false` (after printing `skipped: ...`) where python3 or NumPy is not installed, a
/// panic with the script's stderr where it ran and failed ([`common::numpy_output`]).
fn numpy_write(jobs: &serde_json::Value) -> bool {
    const SCRIPT: &str = r#"
import json, sys, collections
import numpy as np
archives = collections.defaultdict(dict)
for raw, dtype, shape, order, out in json.loads(sys.argv[1]):
    kind = np.dtype(dtype).newbyteorder('<')
    a = np.fromfile(raw, dtype=kind).reshape(shape).astype(dtype)
    a = np.asfortranarray(a) if order == 'F' else np.ascontiguousarray(a)
    if ':' in out:
        archive, member = out.split(':')
        archives[archive][member] = a
    else:
        np.save(out, a)
for archive, members in archives.items():
    np.savez_compressed(archive, **members)
"#;
    let run = std::process::Command::new("python3").args(["-c", SCRIPT, &jobs.to_string()]).output();
    common::numpy_output(run).is_some()
}

/// Writes `bytes` to `dir/name.raw` for [`numpy_write`].
fn raw(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(format!("{name}.raw"));
    std::fs::write(&path, bytes).unwrap();
    path_arg(&path).to_string()
}

#[test]
fn npy_files_of_every_float_dtype_and_byte_order_are_cast_each_value_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tensors = sixteen_bit_inputs();
    let [(_, _, f32_shape, f32s), (_, _, f64_shape, f64s), _, (_, _, f16_shape, f16s), _] = &tensors[..] else {
        unreachable!()
    };
    let npy = |name: &str| path_arg(&d.join(format!("{name}.npy"))).to_string();
    let jobs = serde_json::json!([
        [raw(d, "f32", f32s), "<f4", f32_shape, "C", npy("w32")],
        [raw(d, "f32", f32s), ">f4", f32_shape, "C", npy("w32_be")],
        [raw(d, "f64", f64s), "<f8", f64_shape, "C", npy("w64")],
        [raw(d, "f64", f64s), ">f8", f64_shape, "C", npy("w64_be")],
        [raw(d, "f16", f16s), "<f2", f16_shape, "C", npy("w16")],
        [raw(d, "f16", f16s), ">f2", f16_shape, "C", npy("w16_be")],
        // Fortran order with one dimension longer than 1: the same bytes as C order.
        [raw(d, "f32", f32s), "<f4", [1, f32s.len() / 4], "F", npy("row_f")],
    ]);
    if !numpy_write(&jobs) {
        return;
    }
    let cases: [(&str, &Tensor); 7] = [
        ("w32", &tensors[0]),
        ("w32_be", &tensors[0]),
        ("w64", &tensors[1]),
        ("w64_be", &tensors[1]),
        ("w16", &tensors[3]),
        ("w16_be", &tensors[3]),
        ("row_f", &tensors[0]),
    ];
    for (to, format, out_dtype) in [("bf16", BFLOAT16, Dtype::BF16), ("f16", BINARY16, Dtype::F16)] {
        for (stem, (_, dtype, shape, data)) in cases {
            let out = d.join(format!("{stem}-{to}.safetensors"));
            run_ok(&["cast", &npy(stem), "-o", path_arg(&out), "--to", to]);
            let bytes = read(&out);
            let cast = SafeTensors::deserialize(&bytes).unwrap();
            assert_eq!(cast.names(), [stem], "the array is named after the file");
            let shape = if stem == "row_f" { vec![1, data.len() / 4] } else { shape.clone() };
            let tensor: Tensor = (stem, *dtype, shape, data.clone());
            if *dtype == out_dtype {
                let view = cast.tensor(stem).unwrap();
                assert_eq!((view.dtype(), view.data()), (out_dtype, &data[..]), "{stem}: copied little-endian");
            } else {
                assert_plain(&cast, &tensor, format, out_dtype, false);
            }
        }
    }
    // Scaled FP8 of both byte orders of f64 (1-D, so named with --only).
    for stem in ["w64", "w64_be"] {
        let out = d.join(format!("{stem}-e4m3.safetensors"));
        run_ok(&["cast", &npy(stem), "-o", path_arg(&out), "--to", "e4m3", "--only", "."]);
        let bytes = read(&out);
        let (_, dtype, shape, data) = &tensors[1];
        assert_scaled(
            &SafeTensors::deserialize(&bytes).unwrap(),
            &(stem, *dtype, shape.clone(), data.clone()),
            FP8_E4M3,
            true,
        );
    }
}

#[test]
fn an_npz_archive_gives_its_members_by_name_and_keeps_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tensors = fp8_inputs();
    let archive = path_arg(&d.join("model.npz")).to_string();
    let member = |name: &str| format!("{archive}:{name}");
    let ids: Vec<u8> = (0..7i64).flat_map(|v| (v * 1000 - 3).to_le_bytes()).collect();
    let jobs = serde_json::json!([
        [raw(d, "up", &tensors[0].3), "<f4", tensors[0].2, "C", member("up_proj.weight")],
        [raw(d, "down", &tensors[1].3), ">f4", tensors[1].2, "C", member("down_proj.weight")],
        [raw(d, "k", &tensors[3].3), "<f2", tensors[3].2, "C", member("k_proj.weight")],
        [raw(d, "norm", &tensors[4].3), "<f4", tensors[4].2, "C", member("norm.weight")],
        [raw(d, "ids", &ids), ">i8", [7], "C", member("ids")],
    ]);
    if !numpy_write(&jobs) {
        return;
    }
    let out = d.join("out");
    run_ok(&["cast", &archive, "-o", path_arg(&out), "--to", "e4m3"]);
    let bytes = read(&out.join("model.safetensors"));
    let cast = SafeTensors::deserialize(&bytes).unwrap();
    for (name, index) in [("up_proj.weight", 0), ("down_proj.weight", 1), ("k_proj.weight", 3)] {
        let (_, dtype, shape, data) = &tensors[index];
        let renamed: Tensor = (name, *dtype, shape.clone(), data.clone());
        assert_scaled(&cast, &renamed, FP8_E4M3, true);
    }
    let norm = cast.tensor("norm.weight").unwrap();
    assert_eq!((norm.dtype(), norm.data()), (Dtype::F32, &tensors[4].3[..]), "a vector is kept");
    let kept = cast.tensor("ids").unwrap();
    assert_eq!((kept.dtype(), kept.data()), (Dtype::I64, &ids[..]), "integers copied, little-endian");
}

#[test]
fn numpy_arrays_that_safetensors_cannot_hold_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let f32s = f32_bytes(&f32_values(6, -3, 3, 21, &[]));
    let npy = |name: &str| path_arg(&d.join(format!("{name}.npy"))).to_string();
    let jobs = serde_json::json!([
        [raw(d, "x", &f32s), "<f4", [2, 3], "F", npy("fortran")],
        [raw(d, "x", &f32s), "<c8", [3], "C", npy("complex")],
        [raw(d, "x", &f32s), "<f4", [6], "C", format!("{}:ok", path_arg(&d.join("mixed.npz")))],
        [raw(d, "x", &f32s), "<c8", [3], "C", format!("{}:z", path_arg(&d.join("mixed.npz")))],
    ]);
    if !numpy_write(&jobs) {
        return;
    }
    let out = d.join("out.safetensors");
    let o = path_arg(&out);
    assert_error(&["cast", &npy("fortran"), "-o", o, "--to", "bf16"], &out, "array 'fortran' is in Fortran order");
    assert_error(
        &["cast", &npy("complex"), "-o", o, "--to", "bf16"],
        &out,
        "array 'complex' is <c8, which a safetensors file cannot hold",
    );
    let mixed = path_arg(&d.join("mixed.npz")).to_string();
    assert_error(&["cast", &mixed, "-o", o, "--to", "f16"], &out, "array 'z' is <c8");
    assert_error(&["cast", &mixed, "-o", o, "--to", "f16", "--only", "z"], &out, "tensor 'z' is <c8, not f32");
    assert_no_temporaries(d);
}

/// A hand-made `.npy` whose type string has no byte-order mark (`F16`, `I8`; NumPy always
/// writes one) is refused as a type a safetensors file cannot hold, not taken for the
/// safetensors dtype of that name, whose elements have another size.
#[test]
fn an_npy_type_string_without_a_byte_order_mark_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.safetensors");
    for (descr, item) in [("F16", 16), ("I8", 8), ("f1", 1)] {
        let path = dir.path().join(format!("a{descr}.npy"));
        let header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (2,), }}");
        std::fs::write(&path, common::npy_bytes(1, &header, 2 * item)).unwrap();
        let problem = format!("is {descr}, which a safetensors file cannot hold");
        assert_error(&["cast", path_arg(&path), "-o", path_arg(&out), "--to", "bf16"], &out, &problem);
    }
    assert_no_temporaries(dir.path());
}

/// More elements than `cast` reads at a time (`CHUNK_ELEMENTS`, 2^20): a tensor of
/// several chunks, its last one short.
const MULTI_CHUNK: usize = (5 << 20) / 2 + 3;

#[test]
fn tensors_of_several_chunks_are_read_converted_and_written_in_order() {
    // `cast` converts a chunk while it writes the one before, and reads each chunk's
    // blocks in parallel: every element is checked here, so a chunk written twice, out
    // of order or from the wrong buffer fails.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("model.safetensors");
    let values = f32_values(MULTI_CHUNK, -20, 10, 21, &[]);
    let tensors: Vec<Tensor> = vec![
        // Two dimensions, so that the FP8 cast takes them too.
        ("big.weight", Dtype::F32, vec![1, MULTI_CHUNK], f32_bytes(&values)),
        ("half.weight", Dtype::BF16, vec![MULTI_CHUNK, 1], bf16_bytes(&values)),
    ];
    write_file(&input, &tensors);
    let out = dir.path().join("bf16.safetensors");
    run_ok(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", "bf16"]);
    let bytes = read(&out);
    let cast = SafeTensors::deserialize(&bytes).unwrap();
    assert_plain(&cast, &tensors[0], BFLOAT16, Dtype::BF16, false);
    assert_eq!(cast.tensor("half.weight").unwrap().data(), &tensors[1].3[..], "copied");

    let out = dir.path().join("f16.safetensors");
    run_ok(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", "f16", "--only", "half"]);
    let bytes = read(&out);
    assert_plain(&SafeTensors::deserialize(&bytes).unwrap(), &tensors[1], BINARY16, Dtype::F16, false);

    let out = dir.path().join("e4m3.safetensors");
    run_ok(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", "e4m3", "--no-sync"]);
    let bytes = read(&out);
    let cast = SafeTensors::deserialize(&bytes).unwrap();
    assert_scaled(&cast, &tensors[0], FP8_E4M3, true);
    assert_scaled(&cast, &tensors[1], FP8_E4M3, true);
}

#[test]
fn a_refused_value_in_a_later_chunk_is_named_by_its_index_in_the_tensor() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("model.safetensors");
    let mut values = f32_values(MULTI_CHUNK, -20, 10, 22, &[]);
    let late = MULTI_CHUNK - 7;
    values[late] = f32::NEG_INFINITY.to_bits();
    values[MULTI_CHUNK - 2] = f32::NAN.to_bits();
    write_file(&input, &[("w", Dtype::F32, vec![1, MULTI_CHUNK], f32_bytes(&values))]);
    for to in ["bf16", "e5m2"] {
        let out = dir.path().join(format!("{to}.safetensors"));
        let output = bitexact(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", to]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{to}: {stderr}");
        assert!(stderr.contains(&format!("tensor 'w' index {late}: not finite")), "{to}: {stderr}");
        assert!(!out.exists(), "{to}");
        assert_no_temporaries(dir.path());
    }
}

/// f32 bits for a `rows × cols` weight whose 128 × 128 tiles each have magnitudes of
/// their own (so that every tile's scale differs, and the rows' too): around 2^-3,
/// 2^20, subnormal (a subnormal scale), 2^5, 2^-60, zero (an all-zero tile), 2^100,
/// cycling tile by tile; random signs and mantissas.
fn tiled_values(rows: usize, cols: usize, seed: u64) -> Vec<u32> {
    let mut rng = Rng::new(seed);
    let top = [-3, 20, -135, 5, -60, i32::MIN, 100];
    (0..rows * cols)
        .map(|i| {
            let (r, c) = (i / cols, i % cols);
            let top = top[((r / 128) * 3 + c / 128) % top.len()];
            let bits = rng.next();
            if top == i32::MIN {
                return 0;
            }
            let exponent = top - (bits % 12) as i32;
            let biased = (exponent + 127).clamp(0, 254) as u32;
            ((bits >> 63) as u32) << 31 | biased << 23 | (bits >> 20) as u32 & 0x007F_FFFF
        })
        .collect()
}

/// Asserts that `input` (2-D) is quantised in `out` by the exact block recipe (or
/// DeepGEMM's, compressed-tensors', or the exact one with UE8M0 scales, as `recipe`
/// names it), each block of `tile` (`None`: one per row) checked against `scaled`'s
/// rationals: its amax over its finite values found here, `d =
/// block_dequant_scale(amax)` (`deepgemm_scale`, `compressed_tensors_scale`) stored in
/// `scale_name` (F32, of the blocks' shape; compressed-tensors' in the weights' dtype),
/// each code `quantize_quotient(x, d)` (`deepgemm_quantize`,
/// `compressed_tensors_quantize`). Returns the scales' bits.
fn assert_blocks(
    out: &SafeTensors,
    input: &Tensor,
    format: NarrowFormat,
    tile: Option<(usize, usize)>,
    scale_name: &str,
    recipe: &str,
) -> Vec<u32> {
    let (name, dtype, shape, data) = input;
    // compressed-tensors' recipe computes in, and stores its scales in, the weights' dtype;
    // `--scale-format bf16` stores bfloat16 scales.
    let bf16 = (recipe == "compressed-tensors" && *dtype == Dtype::BF16) || recipe == "bf16";
    let (scale_dtype, scale_bytes) = if bf16 { (Dtype::BF16, 2) } else { (Dtype::F32, 4) };
    let (rows, cols) = (shape[0], shape[1]);
    let (h, w) = tile.unwrap_or((1, cols));
    let xs: Vec<u32> = data.chunks(dtype.bitsize() / 8).map(|b| source_f32(*dtype, b)).collect();
    let view = out.tensor(name).unwrap();
    let fp8 = if format.mantissa_bits == 3 { Dtype::F8_E4M3 } else { Dtype::F8_E5M2 };
    assert_eq!((view.dtype(), view.shape()), (fp8, &shape[..]), "{name}");
    let (block_rows, block_cols) = (rows.div_ceil(h), cols.div_ceil(w));
    let scale = out.tensor(scale_name).unwrap_or_else(|e| panic!("{scale_name}: {e}"));
    assert_eq!((scale.dtype(), scale.shape()), (scale_dtype, &[block_rows, block_cols][..]), "{scale_name}");
    let mut scales = Vec::new();
    for (b, d_bytes) in scale.data().chunks(scale_bytes).enumerate() {
        let (top, left) = (b / block_cols * h, b % block_cols * w);
        let block =
            || (top..rows.min(top + h)).flat_map(move |r| (left..cols.min(left + w)).map(move |c| r * cols + c));
        let amax = block().map(|i| xs[i] & 0x7FFF_FFFF).filter(|&m| m < 0x7F80_0000).max().unwrap_or(0);
        let d = match recipe {
            "deepgemm" => scaled::deepgemm_scale(format, amax),
            "deepgemm-ue8m0" => least_power_of_two_at_least(scaled::deepgemm_scale(format, amax)),
            "ue8m0" => ue8m0_scale(format, amax),
            "bf16" => bf16_scale(format, amax),
            "compressed-tensors" => scaled::compressed_tensors_scale(format, amax, bf16),
            _ => scaled::block_dequant_scale(format, amax),
        };
        let stored = if bf16 {
            assert_eq!(d & 0xFFFF, 0, "{scale_name}[{b}]: a bfloat16 value");
            ((d >> 16) as u16).to_le_bytes().to_vec()
        } else {
            d.to_le_bytes().to_vec()
        };
        assert_eq!(d_bytes, stored, "{scale_name}[{b}]: amax {amax:#010x}");
        for i in block() {
            let (x, q) = (xs[i], view.data()[i]);
            let expected = match recipe {
                "deepgemm" | "deepgemm-ue8m0" => scaled::deepgemm_quantize(format, x, d),
                "compressed-tensors" => scaled::compressed_tensors_quantize(format, x, d, bf16),
                _ => scaled::quantize_quotient(format, x, d),
            };
            assert_eq!(q, expected, "{name}[{i}]: x {x:#010x}, d {d:#010x}: got {q:#04x}, expected {expected:#04x}");
        }
        scales.push(d);
    }
    scales
}

/// The least `k` from `least` up to 127 with `v ≤ 2^k` (127 where none is), by a search
/// over exact f64 powers.
fn least_exponent_at_least(v: f64, least: i32) -> i32 {
    (least..=127).find(|&k| v <= 2f64.powi(k)).unwrap_or(127)
}

/// The least power of two at or above the positive f32 `v` (bits), every f32 power
/// searched: DeepGEMM's `ceil_to_ue8m0`, by its definition.
fn least_power_of_two_at_least(v: u32) -> u32 {
    (2f64.powi(least_exponent_at_least(f64::from(f32::from_bits(v)), -149)) as f32).to_bits()
}

/// The power-of-two scale (`--scale-format ue8m0`) of a block whose largest finite
/// magnitude is `amax` (f32 bits), by its definition: the least `k` in `−127 ..= 127` with
/// `amax ≤ max · 2^k` (exact in f64), as f32 bits; 1 for `amax = 0`.
fn ue8m0_scale(format: NarrowFormat, amax: u32) -> u32 {
    let amax = f64::from(f32::from_bits(amax));
    if amax == 0.0 {
        return 1f32.to_bits();
    }
    let max = if format.mantissa_bits == 3 { 448.0 } else { 57344.0 };
    let k = (-127..=127).find(|&k| amax <= max * 2f64.powi(k)).unwrap_or(127);
    (2f64.powi(k) as f32).to_bits()
}

/// The bfloat16 scale (`--scale-format bf16`) of a block whose largest finite magnitude is
/// `amax` (f32 bits), by its definition: the least positive bfloat16 `d` with `amax ≤ max ·
/// d` (exact in f64), as f32 bits; 1 for `amax = 0`.
fn bf16_scale(format: NarrowFormat, amax: u32) -> u32 {
    let amax = f64::from(f32::from_bits(amax));
    if amax == 0.0 {
        return 1f32.to_bits();
    }
    let max = if format.mantissa_bits == 3 { 448.0 } else { 57344.0 };
    let encoding = (1u32..=0x7F7F).find(|&b| amax <= max * f64::from(f32::from_bits(b << 16))).unwrap_or(0x7F7F);
    encoding << 16
}

/// A checkpoint folder for the block-scaled casts: weights of every source dtype with
/// partial tiles in both directions, a 3-D tensor, a norm, the embedding and the head,
/// and a `config.json`.
fn block_checkpoint(dir: &Path) -> (PathBuf, Vec<Tensor>) {
    let folder = dir.join("model");
    std::fs::create_dir(&folder).unwrap();
    let up = tiled_values(300, 260, 11);
    let down = tiled_values(130, 129, 12);
    let small = f32_values(5 * 7, -8, 8, 13, &[]);
    let tensors = vec![
        ("model.layers.0.mlp.up_proj.weight", Dtype::F32, vec![300, 260], f32_bytes(&up)),
        ("model.layers.0.mlp.down_proj.weight", Dtype::BF16, vec![130, 129], bf16_bytes(&down)),
        ("model.layers.0.self_attn.k_proj.weight", Dtype::F16, vec![5, 7], f16_bytes(&small)),
        ("model.layers.0.experts.weight", Dtype::F32, vec![5, 1, 7], f32_bytes(&small)),
        ("model.layers.0.empty.weight", Dtype::F32, vec![3, 0], Vec::new()),
        ("model.layers.0.input_layernorm.weight", Dtype::F32, vec![7], f32_bytes(&small[..7])),
        ("model.embed_tokens.weight", Dtype::BF16, vec![5, 7], bf16_bytes(&small)),
        ("lm_head.weight", Dtype::BF16, vec![5, 7], bf16_bytes(&small)),
    ];
    write_file(&folder.join("model.safetensors"), &tensors);
    std::fs::write(folder.join("config.json"), r#"{"hidden_size": 7}"#).unwrap();
    (folder, tensors)
}

/// compressed-tensors' FP8 recipe per channel and per block (`--recipe
/// compressed-tensors`): every scale and code of an f32 and a bf16 weight against its
/// steps on integers (`scaled::compressed_tensors_scale`, `compressed_tensors_quantize`),
/// the scales stored in the weights' dtype (BF16 for the bf16 weight), an all-zero tile
/// at bfloat16's and f32's eps, the record and the config; an f16 weight is refused.
#[test]
fn compressed_tensors_fp8_recipe_matches_its_steps_on_integers() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("model");
    std::fs::create_dir(&folder).unwrap();
    // The largest finite values too (f32's and bfloat16's): the recipe's scales hold them.
    let mut up = tiled_values(300, 260, 21);
    up[2 * 260 + 200] = f32::MAX.to_bits();
    let mut down = tiled_values(300, 260, 22);
    down[7] = 0x7F7F_0000;
    let small = f32_values(5 * 7, -8, 8, 23, &[]);
    let tensors = vec![
        ("model.layers.0.mlp.up_proj.weight", Dtype::F32, vec![300, 260], f32_bytes(&up)),
        ("model.layers.0.mlp.down_proj.weight", Dtype::BF16, vec![300, 260], bf16_bytes(&down)),
        ("model.layers.0.input_layernorm.weight", Dtype::F32, vec![7], f32_bytes(&small[..7])),
        ("model.embed_tokens.weight", Dtype::BF16, vec![5, 7], bf16_bytes(&small)),
    ];
    write_file(&folder.join("model.safetensors"), &tensors);
    std::fs::write(folder.join("config.json"), r#"{"hidden_size": 7}"#).unwrap();
    for (scale, tile) in [("block", Some((128, 128))), ("per-channel", None)] {
        let out = dir.path().join(format!("ct-{scale}"));
        let args = [
            "cast",
            path_arg(&folder),
            "-o",
            path_arg(&out),
            "--to",
            "e4m3",
            "--scale",
            scale,
            "--recipe",
            "compressed-tensors",
        ];
        let report: serde_json::Value =
            serde_json::from_str(&run_ok(&[&args[..], &["--format", "json"]].concat())).unwrap();
        assert_eq!(
            (&report["recipe"], &report["rounding"]),
            (&serde_json::json!("compressed-tensors"), &serde_json::json!("as the recipe computes it"))
        );
        let bytes = read(&out.join("model.safetensors"));
        let cast = SafeTensors::deserialize(&bytes).unwrap();
        for tensor in &tensors[..2] {
            let d = assert_blocks(&cast, tensor, FP8_E4M3, tile, &format!("{}_scale", tensor.0), "compressed-tensors");
            if tile.is_some() {
                // The all-zero tile (the tiles' sixth magnitude): the weights' dtype's eps.
                let eps = if tensor.1 == Dtype::BF16 { 2f32.powi(-7) } else { f32::EPSILON };
                assert!(d.contains(&eps.to_bits()), "{}: an all-zero tile's scale is {eps:e}", tensor.0);
            }
        }
        for tensor in &tensors[2..] {
            assert_eq!(cast.tensor(tensor.0).unwrap().data(), &tensor.3[..], "{} is kept", tensor.0);
        }
        let record: serde_json::Value = serde_json::from_str(&metadata(&bytes)["bitexact.cast"]).unwrap();
        assert_eq!(record["scale"]["recipe"], "compressed-tensors");
        assert_eq!(record["rounding"], "as the recipe computes it (scale.q)");
        assert!(record["scale"]["q"].as_str().unwrap().contains("compressed-tensors'"), "{record}");
        assert!(record["scale"]["stored"].as_str().unwrap().contains("BF16 for bf16 weights"), "{record}");
        let config: serde_json::Value = serde_json::from_slice(&read(&out.join("config.json"))).unwrap();
        let quantization = &config["quantization_config"];
        assert_eq!(quantization["quant_method"], "compressed-tensors");
        let weights = &quantization["config_groups"]["group_0"]["weights"];
        assert_eq!(weights["strategy"], if scale == "block" { "block" } else { "channel" });
    }
    // An f16 weight: compressed-tensors computes its scales in f16, which is not modelled.
    let f16_folder = dir.path().join("f16");
    std::fs::create_dir(&f16_folder).unwrap();
    let weight = ("model.layers.0.mlp.up_proj.weight", Dtype::F16, vec![5, 7], f16_bytes(&small));
    write_file(&f16_folder.join("model.safetensors"), &[weight]);
    let out = dir.path().join("f16-out");
    let args = [
        "cast",
        path_arg(&f16_folder),
        "-o",
        path_arg(&out),
        "--to",
        "e4m3",
        "--scale",
        "block",
        "--recipe",
        "compressed-tensors",
    ];
    let output = bitexact(&args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is F16") && stderr.contains("FP8 and NVFP4 scales in f16"), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(!out.exists(), "nothing is written");
}

#[test]
fn block_and_channel_scales_match_the_rational_reference_in_both_layouts() {
    let dir = tempfile::tempdir().unwrap();
    let (input, tensors) = block_checkpoint(dir.path());
    let tile = Some((128, 128));
    for (to, format, scale, layout, blocks, suffix, recipe) in [
        ("e4m3", FP8_E4M3, "block", "compressed-tensors", tile, "_scale", "exact"),
        ("e4m3", FP8_E4M3, "per-channel", "compressed-tensors", None, "_scale", "exact"),
        ("e5m2", FP8_E5M2, "block", "compressed-tensors", tile, "_scale", "exact"),
        ("e5m2", FP8_E5M2, "per-channel", "compressed-tensors", None, "_scale", "exact"),
        ("e4m3", FP8_E4M3, "block", "deepseek", tile, "_scale_inv", "exact"),
        ("e4m3", FP8_E4M3, "block", "deepseek", tile, "_scale_inv", "deepgemm"),
        ("e4m3", FP8_E4M3, "block", "deepseek", tile, "_scale_inv", "ue8m0"),
        ("e4m3", FP8_E4M3, "block", "deepseek", tile, "_scale_inv", "deepgemm-ue8m0"),
        ("e5m2", FP8_E5M2, "per-channel", "compressed-tensors", None, "_scale", "ue8m0"),
        ("e4m3", FP8_E4M3, "block", "compressed-tensors", tile, "_scale", "bf16"),
        ("e5m2", FP8_E5M2, "per-channel", "compressed-tensors", None, "_scale", "bf16"),
    ] {
        let deepgemm = recipe.starts_with("deepgemm");
        // ue8m0: the exact recipe with power-of-two scales; deepgemm-ue8m0: DeepGEMM's.
        let (recipe_arg, format_arg) = match recipe {
            "ue8m0" | "bf16" => ("exact", recipe),
            "deepgemm-ue8m0" => ("deepgemm", "ue8m0"),
            _ => (recipe, "f32"),
        };
        let out = dir.path().join(format!("{to}-{scale}-{layout}-{recipe}"));
        let args = [
            "cast",
            path_arg(&input),
            "-o",
            path_arg(&out),
            "--to",
            to,
            "--scale",
            scale,
            "--layout",
            layout,
            "--recipe",
            recipe_arg,
            "--scale-format",
            format_arg,
        ];
        let output = bitexact(&args[..]);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
        let stderr = String::from_utf8_lossy(&output.stderr);
        let bytes = read(&out.join("model.safetensors"));
        let cast = SafeTensors::deserialize(&bytes).unwrap();
        let mut subnormal = false;
        for tensor in &tensors[..3] {
            let d = assert_blocks(&cast, tensor, format, blocks, &format!("{}{suffix}", tensor.0), recipe);
            subnormal |= d.iter().any(|&d| f32::from_bits(d).is_subnormal());
        }
        // Each row holds larger values too, so only a tile's scale can be subnormal, and
        // DeepGEMM's never (its amax is at least 1e-4).
        let tiny_tile = blocks.is_some() && !deepgemm;
        assert_eq!(subnormal, tiny_tile, "a tile of subnormal magnitudes has a subnormal scale");
        assert_eq!(
            stderr.contains("up_proj.weight': 1 of its 9 dequantisation scales is subnormal"),
            subnormal,
            "{stderr}"
        );
        for tensor in &tensors[3..] {
            assert_eq!(cast.tensor(tensor.0).unwrap().data(), &tensor.3[..], "{} is kept", tensor.0);
        }
        assert_eq!(cast.len(), tensors.len() + 3, "the tensors and three scales");
        let record: serde_json::Value = serde_json::from_str(&metadata(&bytes)["bitexact.cast"]).unwrap();
        assert_eq!(record["scale"]["kind"], scale);
        assert_eq!(record["scale"]["recipe"], recipe_arg);
        assert_eq!(record["scale"]["d"].as_str().unwrap().contains("UE8M0"), recipe.ends_with("ue8m0"), "{record}");
        assert_eq!(record["scale"]["d"].as_str().unwrap().contains("least bfloat16"), recipe == "bf16", "{record}");
        assert_eq!(record["scale"]["stored"].as_str().unwrap().ends_with("(BF16)"), recipe == "bf16", "{record}");
        let config: serde_json::Value = serde_json::from_slice(&read(&out.join("config.json"))).unwrap();
        assert_eq!(config["hidden_size"], 7);
        let quantization = &config["quantization_config"];
        let ignored =
            serde_json::json!(["lm_head", "model.embed_tokens", "model.layers.0.empty", "model.layers.0.experts"]);
        match (to, layout) {
            ("e5m2", _) => assert!(quantization.is_null(), "compressed-tensors' float8 is E4M3"),
            (_, "deepseek") => {
                assert_eq!(quantization["quant_method"], "fp8");
                assert_eq!(quantization["fmt"], "e4m3");
                assert_eq!(quantization["activation_scheme"], "dynamic");
                assert_eq!(quantization["weight_block_size"], serde_json::json!([128, 128]));
                assert_eq!(quantization["modules_to_not_convert"], ignored);
                let scale_fmt =
                    if recipe.ends_with("ue8m0") { serde_json::json!("ue8m0") } else { serde_json::Value::Null };
                assert_eq!(quantization["scale_fmt"], scale_fmt);
            }
            _ => {
                assert_eq!(quantization["quant_method"], "compressed-tensors");
                let weights = &quantization["config_groups"]["group_0"]["weights"];
                assert_eq!(weights["strategy"], if scale == "block" { "block" } else { "channel" });
                let structure = if scale == "block" { serde_json::json!([128, 128]) } else { serde_json::Value::Null };
                assert_eq!(weights["block_structure"], structure);
                assert_eq!(quantization["ignore"], ignored);
            }
        }
        // The summary names each scale tensor with its shape; JSON gives their range.
        let summary = String::from_utf8_lossy(&output.stdout);
        assert!(summary.contains(&format!("up_proj.weight{suffix} [{}, ", if scale == "block" { 3 } else { 300 })));
        assert!(summary.contains("experts.weight [5, 1, 7]: F32 copied (not 2-D"), "{summary}");
        assert!(summary.contains("empty.weight [3, 0]: F32 copied (no elements"), "{summary}");
        // The JSON report: the layout, each scale tensor's shape, and its scales' range.
        let json_out = dir.path().join("json");
        let mut json_args = args.to_vec();
        json_args[3] = path_arg(&json_out);
        json_args.extend(["--format", "json"]);
        let report: serde_json::Value = serde_json::from_str(&run_ok(&json_args)).unwrap();
        assert_eq!(report["layout"], layout);
        assert_eq!(report["recipe"], recipe_arg);
        let scale_format = match recipe {
            "ue8m0" | "bf16" => serde_json::json!(recipe),
            "deepgemm-ue8m0" => serde_json::json!("ue8m0"),
            _ => serde_json::Value::Null,
        };
        assert_eq!(report["scale_format"], scale_format);
        let up = report["tensors"].as_array().unwrap().iter().find(|t| t["name"] == tensors[0].0).unwrap();
        let d = assert_blocks(
            &SafeTensors::deserialize(&read(&json_out.join("model.safetensors"))).unwrap(),
            &tensors[0],
            format,
            blocks,
            &format!("{}{suffix}", tensors[0].0),
            recipe,
        );
        let values: Vec<f32> = d.iter().map(|&d| f32::from_bits(d)).collect();
        assert_eq!(
            up["scale_shape"],
            serde_json::json!([if scale == "block" { 3 } else { 300 }, 1 + 2 * usize::from(scale == "block")])
        );
        assert_eq!(up["dequant_scales"]["count"], values.len());
        // JSON holds each as the shortest decimal that reads back as that f32.
        let f32_of = |v: &serde_json::Value| v.as_f64().map(|v| v as f32);
        assert_eq!(f32_of(&up["dequant_scales"]["min"]), Some(values.iter().copied().fold(f32::INFINITY, f32::min)));
        assert_eq!(f32_of(&up["dequant_scales"]["max"]), Some(values.iter().copied().fold(0.0, f32::max)));
        std::fs::remove_dir_all(&json_out).unwrap();
    }
    // A dry run names the scale tensors and their shapes, and writes nothing.
    let out = dir.path().join("dry");
    let dry = run_ok(&[
        "cast",
        path_arg(&input),
        "-o",
        path_arg(&out),
        "--to",
        "e4m3",
        "--scale",
        "block",
        "--layout",
        "deepseek",
        "--dry-run",
    ]);
    assert!(
        dry.contains(
            "up_proj.weight [300, 260]: F32 -> F8_E4M3, scale model.layers.0.mlp.up_proj.weight_scale_inv [3, 3]"
        ),
        "{dry}"
    );
    assert!(!out.exists());
}

/// A block-scaled tensor of more than one chunk of bands (126 bands of 128 rows of 260
/// columns a chunk): every block against the reference.
#[test]
fn block_scales_span_chunks_of_bands() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("wide.safetensors");
    let values = tiled_values(16_200, 260, 16);
    let tensor: Tensor = ("w.weight", Dtype::BF16, vec![16_200, 260], bf16_bytes(&values));
    write_file(&input, std::slice::from_ref(&tensor));
    let out = dir.path().join("wide-fp8.safetensors");
    run_ok(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", "e4m3", "--scale", "block"]);
    let bytes = read(&out);
    let cast = SafeTensors::deserialize(&bytes).unwrap();
    assert_blocks(&cast, &tensor, FP8_E4M3, Some((128, 128)), "w.weight_scale", "exact");
}

#[test]
fn block_scales_refuse_what_they_cannot_hold_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (input, _) = block_checkpoint(dir.path());
    let out = dir.path().join("out");
    let o = path_arg(&out);
    let i = path_arg(&input);
    for (args, problem) in [
        (vec!["--to", "e4m3", "--scale", "per-channel", "--layout", "deepseek"], "--to e4m3 --scale block"),
        (vec!["--to", "e5m2", "--scale", "block", "--layout", "deepseek"], "--to e4m3 --scale block"),
        (
            vec!["--to", "e4m3", "--scale", "block", "--rounding", "two-step"],
            "--rounding applies to --scale per-tensor",
        ),
        (vec!["--to", "e4m3", "--layout", "deepseek"], "--layout applies to --scale per-channel, block or mx"),
        (vec!["--to", "bf16", "--layout", "deepseek"], "apply to FP8 targets"),
        (vec!["--to", "e4m3", "--scale", "per-channel", "--recipe", "deepgemm"], "--to e4m3 --scale block"),
        (vec!["--to", "e5m2", "--scale", "block", "--recipe", "deepgemm"], "--to e4m3 --scale block"),
        (vec!["--to", "e4m3", "--recipe", "exact"], "--recipe applies to --scale per-channel, block or mx"),
        (vec!["--to", "e5m2", "--scale", "mx"], "--scale mx writes MXFP8 with E4M3 elements: --to e4m3"),
        (vec!["--to", "e4m3", "--scale", "mx", "--layout", "deepseek"], "--to e4m3 --scale block"),
        (
            vec!["--to", "e5m2", "--scale", "block", "--recipe", "compressed-tensors"],
            "--to e4m3 --scale per-channel, block or mx",
        ),
        (
            vec!["--to", "e4m3", "--scale", "block", "--recipe", "compressed-tensors", "--layout", "deepseek"],
            "drop --layout deepseek",
        ),
        (
            vec!["--to", "e4m3", "--scale", "block", "--recipe", "compressed-tensors", "--scale-format", "f32"],
            "drop --scale-format",
        ),
        (
            vec!["--to", "e4m3", "--scale", "block", "--layout", "deepseek", "--scale-format", "bf16"],
            "--scale-format bf16 is the exact recipe's, in compressed-tensors' layout",
        ),
        (
            vec!["--to", "e4m3", "--scale", "block", "--recipe", "deepgemm", "--scale-format", "bf16"],
            "--scale-format bf16 is the exact recipe's, in compressed-tensors' layout",
        ),
        (
            vec!["--to", "e4m3", "--scale", "per-tensor", "--scale-format", "bf16"],
            "--scale-format applies to --scale per-channel",
        ),
        (vec!["--to", "e4m3", "--scale", "mx", "--rounding", "two-step"], "--rounding applies to --scale per-tensor"),
        (
            vec!["--to", "e4m3", "--scale", "mx", "--recipe", "compressed-tensors", "--nonfinite", "keep"],
            "--recipe compressed-tensors takes finite values only",
        ),
        (
            vec!["--to", "e4m3", "--scale", "block", "--recipe", "deepgemm", "--nonfinite", "keep"],
            "--recipe deepgemm takes finite values only",
        ),
        (vec!["--to", "e4m3", "--scale", "block", "--no-saturate"], "--no-saturate applies to --scale none"),
        (vec!["--to", "e4m3", "--scale", "block", "--recipe", "ocp"], "--recipe ocp and rceil are MXFP8's scale rules"),
        (vec!["--to", "e5m2", "--scale", "mx", "--recipe", "rceil"], "--recipe ocp and rceil are MXFP8's scale rules"),
        (
            vec!["--to", "e4m3", "--scale", "mx", "--scale-format", "ue8m0"],
            "--scale-format applies to --scale per-channel",
        ),
        (vec!["--to", "e4m3", "--scale-format", "ue8m0"], "--scale-format applies to --scale per-channel"),
        (vec!["--to", "bf16", "--scale-format", "ue8m0"], "apply to FP8 targets"),
    ] {
        let mut all = vec!["cast", i, "-o", o];
        all.extend(args);
        assert_error(&all, &out, problem);
    }
    // An f64 weight: the recipe takes f32, bf16 and f16.
    let f64_input = dir.path().join("f64.safetensors");
    let values = f64_values(12, -4, 4, 14, &[]);
    write_file(&f64_input, &[("w.weight", Dtype::F64, vec![3, 4], f64_bytes(&values))]);
    assert_error(
        &["cast", path_arg(&f64_input), "-o", o, "--to", "e4m3", "--scale", "block"],
        &out,
        "tensor 'w.weight' is F64: per-channel, block, MX and NVFP4 scales take f32, bf16 or f16",
    );
    assert_no_temporaries(dir.path());
}

/// The MX scale exponent `k` of a block whose largest finite magnitude is `amax` (f32
/// bits), from its definition in exact f64 arithmetic: the least `k` in `-127..=127` with
/// `amax ≤ 448 · 2^k` (the exact recipe: nothing saturates), or with `amax < 448 · 2^k`
/// (compressed-tensors': its power of two rounded up from a significand of 1.75, so that
/// `0.875 · 2^(k + 8) ≤ amax < 1.75 · 2^(k + 8)`); by OCP's (`ocp`), the greatest `k` with
/// `2^(k + 8) ≤ amax` (`floor(log2 amax) − 8`; `−127` for a smaller or zero `amax`).
fn mx_exponent(amax: u32, recipe: &str) -> i32 {
    if recipe == "rceil" {
        // torchao's: the least 2^k at or above fl32(amax · fl32(1/448)), the product by the
        // integer reference, the reciprocal checked by multiplication.
        let r = (1.0f32 / 448.0).to_bits();
        assert!(scaled::is_rounded_quotient(1f32.to_bits(), 448f32.to_bits(), r));
        let descale = f64::from(f32::from_bits(reference_nvfp4::multiply(amax, r)));
        return least_exponent_at_least(descale, -127);
    }
    let amax = f64::from(f32::from_bits(amax));
    if recipe == "ocp" {
        return (-127..=127).rev().find(|&k| 2f64.powi(k + 8) <= amax).unwrap_or(-127);
    }
    (-127..=127)
        .find(|&k| {
            let bound = 448.0 * 2f64.powi(k);
            if recipe == "compressed-tensors" { amax < bound } else { amax <= bound }
        })
        .unwrap_or(127)
}

/// Asserts that `input` (2-D, its columns a multiple of 32) is quantised MX in `out`:
/// `<name>_scale` U8 of shape `[rows, cols / 32]`, each block of 32 values of a row
/// checked against [`mx_exponent`] of its amax (found here), stored as `k + 127`, and
/// each code against the rational reference of `x · 2^-k` rounded once
/// (`scaled::quantize_once`). Returns the codes of the scales.
fn assert_mx(out: &SafeTensors, input: &Tensor, recipe: &str) -> Vec<u8> {
    let (name, dtype, shape, data) = input;
    let (rows, cols) = (shape[0], shape[1]);
    let xs: Vec<u32> = data.chunks(dtype.bitsize() / 8).map(|b| source_f32(*dtype, b)).collect();
    let view = out.tensor(name).unwrap();
    assert_eq!((view.dtype(), view.shape()), (Dtype::F8_E4M3, &shape[..]), "{name}");
    let scale_name = format!("{name}_scale");
    let scale = out.tensor(&scale_name).unwrap_or_else(|e| panic!("{scale_name}: {e}"));
    assert_eq!((scale.dtype(), scale.shape()), (Dtype::U8, &[rows, cols / 32][..]), "{scale_name}");
    for (b, &code) in scale.data().iter().enumerate() {
        let block = b * 32..(b + 1) * 32;
        let amax = xs[block.clone()].iter().map(|x| x & 0x7FFF_FFFF).max().unwrap_or(0);
        let k = mx_exponent(amax, recipe);
        assert_eq!(i32::from(code), k + 127, "{scale_name}[{b}]: amax {amax:#010x}");
        // 2^-k as f32 bits, from its fields (2^127 and 2^-126 are the extremes here).
        let s = if -k >= -126 { ((127 - k) as u32) << 23 } else { 1 << (149 - k) };
        for i in block {
            let (x, q) = (xs[i], view.data()[i]);
            let expected = scaled::quantize_once(FP8_E4M3, x, s);
            assert_eq!(q, expected, "{name}[{i}]: x {x:#010x}, k {k}: got {q:#04x}, expected {expected:#04x}");
        }
    }
    scale.data().to_vec()
}

#[test]
fn mx_scales_match_their_definition_by_either_recipe() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("model");
    std::fs::create_dir(&folder).unwrap();
    // Blocks of every magnitude tiled_values makes (subnormal and all-zero ones among
    // them), and blocks whose amax is 448 · 2^j, where the recipes differ.
    let mut up = tiled_values(300, 256, 21);
    for row in (0..300).step_by(7) {
        // A block of values below 448 · 2^j, which is its first.
        let top = 448f32 * 2f32.powi(row as i32 % 40 - 20);
        for i in 0..32 {
            let v = top * (1.0 - i as f32 / 64.0);
            up[row * 256 + (row % 8) * 32 + i] = v.to_bits() | (row as u32 & 1) << 31;
        }
    }
    let down = tiled_values(64, 96, 22);
    let tensors = vec![
        ("model.layers.0.mlp.up_proj.weight", Dtype::F32, vec![300, 256], f32_bytes(&up)),
        ("model.layers.0.mlp.down_proj.weight", Dtype::BF16, vec![64, 96], bf16_bytes(&down)),
        ("model.layers.0.input_layernorm.weight", Dtype::F32, vec![96], f32_bytes(&down[..96])),
        ("lm_head.weight", Dtype::BF16, vec![64, 96], bf16_bytes(&down)),
    ];
    write_file(&folder.join("model.safetensors"), &tensors);
    std::fs::write(folder.join("config.json"), r#"{"hidden_size": 96}"#).unwrap();
    let mut differ = 0;
    let mut codes = Vec::new();
    for recipe in ["exact", "compressed-tensors", "ocp", "rceil"] {
        let out = dir.path().join(recipe);
        let args =
            ["cast", path_arg(&folder), "-o", path_arg(&out), "--to", "e4m3", "--scale", "mx", "--recipe", recipe];
        let output = bitexact(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("subnormal"), "MX scales are exponents: {stderr}");
        let bytes = read(&out.join("model.safetensors"));
        let cast = SafeTensors::deserialize(&bytes).unwrap();
        let mut recipe_codes = Vec::new();
        for tensor in &tensors[..2] {
            recipe_codes.extend(assert_mx(&cast, tensor, recipe));
        }
        for tensor in &tensors[2..] {
            assert_eq!(cast.tensor(tensor.0).unwrap().data(), &tensor.3[..], "{} is kept", tensor.0);
        }
        assert_eq!(cast.len(), tensors.len() + 2, "the tensors and two scales");
        let record: serde_json::Value = serde_json::from_str(&metadata(&bytes)["bitexact.cast"]).unwrap();
        assert_eq!(record["scale"]["kind"], "mx");
        assert_eq!(record["scale"]["recipe"], recipe);
        assert_eq!(record["scale"]["blocks"], serde_json::json!([1, 32]));
        // compressed-tensors' MXFP8 config, as vLLM picks its scheme from it.
        let config: serde_json::Value = serde_json::from_slice(&read(&out.join("config.json"))).unwrap();
        let quantization = &config["quantization_config"];
        assert_eq!(quantization["quant_method"], "compressed-tensors");
        assert_eq!(quantization["format"], "mxfp8-quantized");
        let group = &quantization["config_groups"]["group_0"];
        assert_eq!(group["format"], "mxfp8-quantized");
        let weights = &group["weights"];
        assert_eq!(
            (&weights["strategy"], &weights["group_size"], &weights["num_bits"], &weights["type"]),
            (&serde_json::json!("group"), &serde_json::json!(32), &serde_json::json!(8), &serde_json::json!("float"))
        );
        assert_eq!(
            (&weights["symmetric"], &weights["scale_dtype"]),
            (&serde_json::json!(true), &serde_json::json!("torch.uint8"))
        );
        assert_eq!(
            (&weights["block_structure"], &weights["zp_dtype"]),
            (&serde_json::Value::Null, &serde_json::Value::Null)
        );
        assert_eq!(weights["observer"], "memoryless_minmax");
        assert_eq!(quantization["ignore"], serde_json::json!(["lm_head"]));
        // The summary names each scale with its shape.
        let summary = String::from_utf8_lossy(&output.stdout);
        assert!(summary.contains("up_proj.weight_scale [300, 8]"), "{summary}");
        if codes.is_empty() {
            codes = recipe_codes;
        } else if recipe == "compressed-tensors" {
            differ = codes.iter().zip(&recipe_codes).filter(|(a, b)| a != b).count();
        } else if recipe == "ocp" {
            // OCP's floor differs from the exact rule on every block whose amax has a
            // significand above 1.75 (and is not clamped).
            assert_ne!(codes, recipe_codes, "ocp");
        } else {
            // torchao's RCEIL is the exact rule on every amax but one (tests/tests/mx.rs).
            assert_eq!(codes, recipe_codes, "rceil");
        }
    }
    // The recipes differ exactly on the blocks whose amax is 448 · 2^j: one per 7th row of
    // up_proj, and those of the bf16 tensor whose amax has that 7-bit mantissa.
    let amaxes = [(&up, 256), (&down, 96)].into_iter().flat_map(|(xs, cols)| {
        let bf16 = cols == 96;
        xs.chunks(32)
            .map(move |b| b.iter().map(|&x| (if bf16 { x >> 16 << 16 } else { x }) & 0x7FFF_FFFF).max().unwrap_or(0))
    });
    let expected = amaxes.filter(|&amax| mx_exponent(amax, "exact") != mx_exponent(amax, "compressed-tensors")).count();
    assert!(expected >= (0..300).step_by(7).count(), "{expected} blocks where the recipes differ");
    assert_eq!(differ, expected, "blocks whose scale differs between the recipes");
}

#[test]
fn mx_scales_refuse_what_they_cannot_hold_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = path_arg(&out);
    let values = f32_values(4 * 40, -4, 4, 23, &[]);
    // 40 columns: not a whole number of blocks of 32.
    let input = dir.path().join("w.safetensors");
    write_file(&input, &[("w.weight", Dtype::F32, vec![4, 40], f32_bytes(&values))]);
    assert_error(
        &["cast", path_arg(&input), "-o", o, "--to", "e4m3", "--scale", "mx"],
        &out,
        "tensor 'w.weight' has 40 columns: MX scales take a multiple of 32",
    );
    // compressed-tensors' recipe on an f16 tensor.
    let f16_input = dir.path().join("f16.safetensors");
    write_file(&f16_input, &[("w.weight", Dtype::F16, vec![5, 32], f16_bytes(&values[..160]))]);
    let recipe = ["--recipe", "compressed-tensors"];
    let mut args = vec!["cast", path_arg(&f16_input), "-o", o, "--to", "e4m3", "--scale", "mx"];
    args.extend(recipe);
    assert_error(
        &args,
        &out,
        "tensor 'w.weight' is F16: compressed-tensors finds an f16 tensor's MX scale on its f16 bits",
    );
    // A NaN: refused by default; kept, its block's scale is E8M0's NaN (0xFF).
    let mut nan = values[..128].to_vec();
    nan[70] = f32::NAN.to_bits();
    let nan_input = dir.path().join("nan.safetensors");
    write_file(&nan_input, &[("w.weight", Dtype::F32, vec![2, 64], f32_bytes(&nan))]);
    let refused = bitexact(&["cast", path_arg(&nan_input), "-o", o, "--to", "e4m3", "--scale", "mx"]);
    assert_eq!(refused.status.code(), Some(1), "{}", String::from_utf8_lossy(&refused.stderr));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("tensor 'w.weight' index 70: not finite"));
    assert!(!out.exists());
    let kept = dir.path().join("kept.safetensors");
    let keep =
        ["cast", path_arg(&nan_input), "-o", path_arg(&kept), "--to", "e4m3", "--scale", "mx", "--nonfinite", "keep"];
    let output = bitexact(&keep);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("tensor 'w.weight': 1 of its 4 blocks hold a NaN or an infinity"), "{stderr}");
    let bytes = read(&kept);
    let cast = SafeTensors::deserialize(&bytes).unwrap();
    let scales = cast.tensor("w.weight_scale").unwrap();
    assert_eq!(scales.data()[2], 0xFF, "the NaN's block");
    assert!(
        cast.tensor("w.weight").unwrap().data()[64..96].iter().all(|&q| q & 0x7F == 0x7F),
        "every value of its block NaN"
    );
    // The JSON report counts the NaN scale and leaves it out of the range.
    let json_out = dir.path().join("kept-json.safetensors");
    let mut json_args = keep.to_vec();
    json_args[3] = path_arg(&json_out);
    json_args.extend(["--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&run_ok(&json_args)).unwrap();
    let scales = &report["tensors"][0]["dequant_scales"];
    assert_eq!((&scales["count"], &scales["nan"]), (&serde_json::json!(4), &serde_json::json!(1)), "{report}");
    assert!(scales["min"].as_f64().is_some_and(f64::is_finite), "{report}");
    // From 1.75 · 2^127 on, compressed-tensors' scale overflows: refused by its recipe at
    // the value's index, taken by the exact one.
    let mut huge = values[..64].to_vec();
    huge[37] = 0xFF60_0000;
    let huge_input = dir.path().join("huge.safetensors");
    write_file(&huge_input, &[("w.weight", Dtype::F32, vec![2, 32], f32_bytes(&huge))]);
    let mut args = vec!["cast", path_arg(&huge_input), "-o", o, "--to", "e4m3", "--scale", "mx"];
    args.extend(recipe);
    let refused = bitexact(&args);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("tensor 'w.weight' index 37: at least 1.75 * 2^127 in magnitude"), "{stderr}");
    assert!(!out.exists());
    // With a NaN after it in its block (whose scale code is then NaN's), refused at the
    // first of the two: the value past the recipe.
    huge[40] = f32::NAN.to_bits();
    let nan_input = dir.path().join("huge-nan.safetensors");
    write_file(&nan_input, &[("w.weight", Dtype::F32, vec![2, 32], f32_bytes(&huge))]);
    let mut with_nan = args.clone();
    with_nan[1] = path_arg(&nan_input);
    let refused = bitexact(&with_nan);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("tensor 'w.weight' index 37: at least 1.75 * 2^127 in magnitude"), "{stderr}");
    assert!(!out.exists());
    run_ok(&args[..8]);
    assert_no_temporaries(dir.path());
}

/// A tensor of more than one chunk of bands (4 · 2^20 elements a chunk), per channel:
/// every value against the reference; a NaN in the second chunk refused by its index in
/// the tensor, and kept (as NaN, left out of its row's amax) with `--nonfinite keep`.
#[test]
fn block_scales_span_chunks_and_refuse_or_keep_a_nan_by_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.safetensors");
    let (rows, cols) = (1_070_001, 4);
    let mut values = f32_values(rows * cols, -14, 15, 15, &[]);
    // In the second chunk (from 4 · 2^20), its tasks of 2^14 elements: the fourth and
    // the sixth, so that the index is counted over tasks, and the lower one is named.
    let nan_at = 4 * (1 << 20) + 3 * (1 << 14) + 3;
    values[nan_at] = f32::NAN.to_bits();
    values[nan_at + 2 * (1 << 14)] = f32::INFINITY.to_bits();
    let tensor: Tensor = ("w.weight", Dtype::F16, vec![rows, cols], f16_bytes(&values));
    write_file(&input, std::slice::from_ref(&tensor));
    let out = dir.path().join("big-fp8.safetensors");
    let refused = bitexact(&["cast", path_arg(&input), "-o", path_arg(&out), "--to", "e4m3", "--scale", "per-channel"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("tensor 'w.weight' index {nan_at}: not finite")), "{stderr}");
    assert!(!out.exists());
    let args = [
        "cast",
        path_arg(&input),
        "-o",
        path_arg(&out),
        "--to",
        "e4m3",
        "--scale",
        "per-channel",
        "--nonfinite",
        "keep",
    ];
    run_ok(&args);
    let bytes = read(&out);
    let cast = SafeTensors::deserialize(&bytes).unwrap();
    assert_blocks(&cast, &tensor, FP8_E4M3, None, "w.weight_scale", "exact");
    let data = cast.tensor("w.weight").unwrap().data();
    assert_eq!(data[nan_at] & 0x7F, 0x7F, "NaN stays NaN");
    assert_eq!(data[nan_at + 2 * (1 << 14)], 0x7E, "infinity saturates");
    assert_no_temporaries(dir.path());
}

/// The recipes and layouts `--to nvfp4` writes, as (`--layout`, `--recipe`).
const NVFP4_CASTS: [(&str, &str); 3] =
    [("modelopt", "exact"), ("modelopt", "modelopt"), ("compressed-tensors", "compressed-tensors")];

/// Asserts that `input` (2-D, its columns a multiple of 16) is quantised NVFP4 in `out` by
/// `recipe`, in `layout`'s names, dtypes and shapes: the tensor scale (stored as F32, `[]`
/// for ModelOpt's `g`, `[1]` for compressed-tensors' `gs`) against the integer reference
/// of its amax (found here), each block's E4M3 scale against the reference of the block's
/// amax, and each code (unpacked: the even index in the low nibble) against the
/// reference's code of its value. `fused`: the tensor scale of the fused layer it is a part
/// of ([`nvfp4_global`] of its parts; `None`: its own). Returns the tensor scale's bits.
fn assert_nvfp4(out: &SafeTensors, input: &Tensor, layout: &str, recipe: &str, fused: Option<u32>) -> u32 {
    use reference_nvfp4 as reference;
    let (name, dtype, shape, data) = input;
    let (rows, cols) = (shape[0], shape[1]);
    let xs: Vec<u32> = data.chunks(dtype.bitsize() / 8).map(|b| source_f32(*dtype, b)).collect();
    let modelopt = layout == "modelopt";
    let (packed_name, global_name, global_shape) = if modelopt {
        (name.to_string(), format!("{name}_scale_2"), vec![])
    } else {
        (format!("{name}_packed"), format!("{name}_global_scale"), vec![1])
    };
    let packed = out.tensor(&packed_name).unwrap_or_else(|e| panic!("{packed_name}: {e}"));
    assert_eq!((packed.dtype(), packed.shape()), (Dtype::U8, &[rows, cols / 2][..]), "{packed_name}");
    let scale_name = format!("{name}_scale");
    let scales = out.tensor(&scale_name).unwrap_or_else(|e| panic!("{scale_name}: {e}"));
    assert_eq!((scales.dtype(), scales.shape()), (Dtype::F8_E4M3, &[rows, cols / 16][..]), "{scale_name}");
    let global = out.tensor(&global_name).unwrap_or_else(|e| panic!("{global_name}: {e}"));
    assert_eq!((global.dtype(), global.shape()), (Dtype::F32, &global_shape[..]), "{global_name}");
    let global = u32::from_le_bytes(global.data().try_into().unwrap());
    let bf16 = *dtype == Dtype::BF16;
    let expected = fused.unwrap_or_else(|| nvfp4_global(&[input], recipe));
    assert_eq!(global, expected, "{global_name}");
    for (b, &scale) in scales.data().iter().enumerate() {
        let block = b * 16..(b + 1) * 16;
        let block_amax = xs[block.clone()].iter().map(|x| x & 0x7FFF_FFFF).max().unwrap_or(0);
        let expected = match recipe {
            "exact" => reference::block_scale(block_amax, global),
            "modelopt" => reference::modelopt_block_scale(block_amax, global),
            _ => reference::compressed_tensors_block_scale(block_amax, global, bf16),
        };
        assert_eq!(scale, expected, "{scale_name}[{b}]: amax {block_amax:#010x}, tensor scale {global:#010x}");
        for i in block {
            let byte = packed.data()[i / 2];
            let q = if i % 2 == 0 { byte & 0xF } else { byte >> 4 };
            let x = xs[i];
            let expected = match recipe {
                "exact" => reference::quantize(x, scale, global),
                "modelopt" => reference::modelopt_quantize(x, scale, global),
                _ => reference::compressed_tensors_quantize(x, scale, global),
            };
            assert_eq!(q, expected, "{name}[{i}]: x {x:#010x}, scale {scale:#04x}: got {q:#x}, expected {expected:#x}");
        }
    }
    global
}

/// The tensor scale `recipe` gives the tensors `parts` of one fused layer (or one tensor
/// alone), by the integer reference: each part's from its own amax, in its own dtype; then
/// the largest `g` (the exact and ModelOpt's recipes), or the least `gs`
/// (compressed-tensors', as llm-compressor shares it).
fn nvfp4_global(parts: &[&Tensor], recipe: &str) -> u32 {
    use reference_nvfp4 as reference;
    let globals = parts.iter().map(|(_, dtype, _, data)| {
        let amax = data.chunks(dtype.bitsize() / 8).map(|b| source_f32(*dtype, b) & 0x7FFF_FFFF).max().unwrap_or(0);
        match recipe {
            "exact" => reference::global_scale(amax),
            "modelopt" => reference::modelopt_global_scale(amax),
            _ => reference::compressed_tensors_global_scale(amax, *dtype == Dtype::BF16),
        }
    });
    // Positive f32 bits order as their values.
    if recipe == "compressed-tensors" { globals.min() } else { globals.max() }.unwrap()
}

#[test]
fn nvfp4_matches_the_reference_in_both_layouts_by_every_recipe() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("model");
    std::fs::create_dir(&folder).unwrap();
    // Blocks of every magnitude, subnormal and all-zero ones among them, under one
    // tensor scale; and a bf16 tensor of weight-like values, in two shards.
    let mut up = tiled_values(136, 272, 31);
    // The amax: the first from 2^102 up whose exact g and ModelOpt's differ, so that the
    // recipes are told apart by their tensor scales as well as by their blocks.
    let mut amax = 0x7280_0000;
    while reference_nvfp4::global_scale(amax) == reference_nvfp4::modelopt_global_scale(amax) {
        amax += 1;
    }
    up[5] = amax;
    let down = f32_values(24 * 48, -12, 0, 32, &[]);
    let first = vec![
        ("model.layers.0.mlp.up_proj.weight", Dtype::F32, vec![136, 272], f32_bytes(&up)),
        ("model.layers.0.input_layernorm.weight", Dtype::F32, vec![48], f32_bytes(&down[..48])),
    ];
    let second = vec![
        ("model.layers.0.mlp.down_proj.weight", Dtype::BF16, vec![24, 48], bf16_bytes(&down)),
        ("lm_head.weight", Dtype::BF16, vec![24, 48], bf16_bytes(&down)),
    ];
    write_file(&folder.join("model-00001-of-00002.safetensors"), &first);
    write_file(&folder.join("model-00002-of-00002.safetensors"), &second);
    let weight_map: serde_json::Map<String, serde_json::Value> = (first.iter().map(|t| (t.0, 1)))
        .chain(second.iter().map(|t| (t.0, 2)))
        .map(|(name, shard)| (name.to_string(), format!("model-0000{shard}-of-00002.safetensors").into()))
        .collect();
    let index = serde_json::json!({ "metadata": { "total_size": 0 }, "weight_map": weight_map });
    std::fs::write(folder.join("model.safetensors.index.json"), index.to_string()).unwrap();
    std::fs::write(folder.join("config.json"), r#"{"hidden_size": 48}"#).unwrap();
    let mut globals = Vec::new();
    for (layout, recipe) in NVFP4_CASTS {
        let out = dir.path().join(format!("{layout}-{recipe}"));
        let args =
            ["cast", path_arg(&folder), "-o", path_arg(&out), "--to", "nvfp4", "--layout", layout, "--recipe", recipe];
        let output = bitexact(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
        let (first_bytes, second_bytes) =
            (read(&out.join("model-00001-of-00002.safetensors")), read(&out.join("model-00002-of-00002.safetensors")));
        let (first_out, second_out) =
            (SafeTensors::deserialize(&first_bytes).unwrap(), SafeTensors::deserialize(&second_bytes).unwrap());
        globals.push(assert_nvfp4(&first_out, &first[0], layout, recipe, None));
        assert_nvfp4(&second_out, &second[0], layout, recipe, None);
        for (file, tensor) in [(&first_out, &first[1]), (&second_out, &second[1])] {
            assert_eq!(file.tensor(tensor.0).unwrap().data(), &tensor.3[..], "{} is kept", tensor.0);
        }
        assert_eq!((first_out.len(), second_out.len()), (4, 4), "each weight becomes three tensors");
        let record: serde_json::Value = serde_json::from_str(&metadata(&first_bytes)["bitexact.cast"]).unwrap();
        assert_eq!((&record["to"], &record["scale"]["kind"]), (&"nvfp4".into(), &"nvfp4".into()));
        assert_eq!(record["scale"]["recipe"], recipe);
        // The index lists every tensor in its shard, under its stored name, and their bytes.
        let index: serde_json::Value =
            serde_json::from_slice(&read(&out.join("model.safetensors.index.json"))).unwrap();
        let mut listed: Vec<&str> = index["weight_map"].as_object().unwrap().keys().map(String::as_str).collect();
        listed.sort_unstable();
        let mut stored: Vec<&str> = first_out.names().into_iter().chain(second_out.names()).collect();
        stored.sort_unstable();
        assert_eq!(listed, stored, "{layout}: the index lists the stored names");
        assert_eq!(index["metadata"]["total_size"], listed_bytes(&out, &index));
        let config: serde_json::Value = serde_json::from_slice(&read(&out.join("config.json"))).unwrap();
        let quantization = &config["quantization_config"];
        if layout == "modelopt" {
            assert_eq!(
                (&quantization["quant_method"], &quantization["quant_algo"]),
                (&"modelopt".into(), &"W4A16_NVFP4".into())
            );
            let hf: serde_json::Value = serde_json::from_slice(&read(&out.join("hf_quant_config.json"))).unwrap();
            let hf = &hf["quantization"];
            assert_eq!((&hf["quant_algo"], &hf["group_size"]), (&"W4A16_NVFP4".into(), &16.into()));
            assert_eq!(
                (&hf["exclude_modules"], &hf["kv_cache_quant_algo"]),
                (&serde_json::json!(["lm_head"]), &serde_json::Value::Null)
            );
        } else {
            assert!(!out.join("hf_quant_config.json").exists());
            assert_eq!(
                (&quantization["quant_method"], &quantization["format"]),
                (&"compressed-tensors".into(), &"nvfp4-pack-quantized".into())
            );
            let weights = &quantization["config_groups"]["group_0"]["weights"];
            assert_eq!(
                (&weights["strategy"], &weights["group_size"], &weights["num_bits"], &weights["type"]),
                (&"tensor_group".into(), &16.into(), &4.into(), &"float".into())
            );
            assert_eq!((&weights["symmetric"], &weights["dynamic"]), (&true.into(), &false.into()));
            assert!(weights.get("scale_dtype").is_none(), "compressed-tensors before 0.13 refuses scale_dtype");
            assert_eq!(quantization["ignore"], serde_json::json!(["lm_head"]));
        }
        // The summary names the scales, and the tensor scale with its value.
        let summary = String::from_utf8_lossy(&output.stdout);
        assert!(summary.contains("up_proj.weight_scale [136, 17]"), "{summary}");
        let global = if layout == "modelopt" { "up_proj.weight_scale_2 = " } else { "up_proj.weight_global_scale = " };
        assert!(summary.contains(global), "{summary}");
    }
    assert_ne!(globals[0], globals[1], "the exact g and ModelOpt's, at amax {amax:#010x}");
}

#[test]
fn nvfp4_refuses_what_it_cannot_hold_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = path_arg(&out);
    let values = f32_values(4 * 40, -4, 4, 33, &[]);
    let input = dir.path().join("w.safetensors");
    write_file(&input, &[("w.weight", Dtype::F32, vec![4, 40], f32_bytes(&values))]);
    let i = path_arg(&input);
    assert_error(
        &["cast", i, "-o", o, "--to", "nvfp4"],
        &out,
        "tensor 'w.weight' has 40 columns: NVFP4 takes a multiple of 16",
    );
    let options_refused = [
        (&["--scale", "block"][..], "--scale, --scale-format, --rounding and --no-saturate apply to FP8 targets"),
        (&["--layout", "compressed-tensors", "--recipe", "exact"], "which the exact recipe's g = amax/2688 is not"),
        (
            &["--layout", "modelopt", "--recipe", "compressed-tensors"],
            "compressed-tensors' recipe writes the compressed-tensors layout",
        ),
        (&["--layout", "deepseek"], "the deepseek layout holds E4M3 in 128x128 blocks"),
        (&["--nonfinite", "keep"], "NVFP4 holds no NaN and no infinity"),
    ];
    for (extra, problem) in options_refused {
        let mut args = vec!["cast", i, "-o", o, "--to", "nvfp4"];
        args.extend(extra);
        assert_error(&args, &out, problem);
    }
    assert_error(&["cast", i, "-o", o, "--to", "e4m3", "--recipe", "modelopt"], &out, "--recipe modelopt write NVFP4");
    // Two names the cast adds that are one: `a`'s tensor scale and `a_global`'s block scale
    // in compressed-tensors' layout.
    let clash = dir.path().join("clash.safetensors");
    let a = ("a", Dtype::F32, vec![2, 16], f32_bytes(&values[..32]));
    write_file(&clash, &[a, ("a_global", Dtype::F32, vec![2, 16], f32_bytes(&values[..32]))]);
    let layout = ["--layout", "compressed-tensors", "--only", "."];
    let mut args = vec!["cast", path_arg(&clash), "-o", o, "--to", "nvfp4"];
    args.extend(layout);
    assert_error(&args, &out, "the scale of tensor 'a_global' would be 'a_global_scale', which already exists");
    // compressed-tensors' recipe on an f16 tensor; an f64 tensor.
    let f16_input = dir.path().join("f16.safetensors");
    write_file(&f16_input, &[("w.weight", Dtype::F16, vec![5, 32], f16_bytes(&values[..160]))]);
    assert_error(
        &["cast", path_arg(&f16_input), "-o", o, "--to", "nvfp4", "--recipe", "compressed-tensors"],
        &out,
        "tensor 'w.weight' is F16: compressed-tensors finds an f16 tensor's MX scale on its f16 bits, and its FP8 and NVFP4 scales",
    );
    let f64_input = dir.path().join("f64.safetensors");
    write_file(&f64_input, &[("w.weight", Dtype::F64, vec![2, 16], f64_bytes(&f64_values(32, -4, 4, 34, &[])))]);
    assert_error(&["cast", path_arg(&f64_input), "-o", o, "--to", "nvfp4"], &out, "tensor 'w.weight' is F64");
    // A NaN: refused at its index, whatever the recipe.
    let mut nan = values[..64].to_vec();
    nan[37] = f32::NAN.to_bits();
    let nan_input = dir.path().join("nan.safetensors");
    write_file(&nan_input, &[("w.weight", Dtype::F32, vec![2, 32], f32_bytes(&nan))]);
    for recipe in ["exact", "modelopt", "compressed-tensors"] {
        let refused = bitexact(&["cast", path_arg(&nan_input), "-o", o, "--to", "nvfp4", "--recipe", recipe]);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(1), "{recipe}: {stderr}");
        assert!(
            stderr.contains("tensor 'w.weight' index 37: not finite; nothing written (NVFP4 holds no NaN"),
            "{recipe}: {stderr}"
        );
        assert!(!out.exists());
    }
    // An all-zero tensor: ModelOpt's scales are 0 there (refused, exit 1); the exact
    // recipe stores g = 1 and every block scale 1.
    let zero_input = dir.path().join("zero.safetensors");
    write_file(&zero_input, &[("w.weight", Dtype::BF16, vec![2, 32], vec![0; 128])]);
    let refused = bitexact(&["cast", path_arg(&zero_input), "-o", o, "--to", "nvfp4", "--recipe", "modelopt"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("tensor 'w.weight': amax 0e0 is so small that ModelOpt's scales are 0"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!out.exists());
    run_ok(&["cast", path_arg(&zero_input), "-o", o, "--to", "nvfp4"]);
    let bytes = read(&out.join("zero.safetensors"));
    let cast = SafeTensors::deserialize(&bytes).unwrap();
    assert_eq!(cast.tensor("w.weight_scale_2").unwrap().data(), &1f32.to_le_bytes()[..]);
    assert_eq!(cast.tensor("w.weight_scale").unwrap().data(), &[0x38; 4][..], "E4M3's 1");
    assert_eq!(cast.tensor("w.weight").unwrap().data(), &[0; 32][..]);
    // A tensor of amax 2^-130: its exact g is subnormal, which is a warning.
    let tiny_input = dir.path().join("tiny.safetensors");
    write_file(&tiny_input, &[("w.weight", Dtype::F32, vec![1, 16], f32_bytes(&[0x0008_0000; 16]))]);
    let tiny = dir.path().join("tiny-out.safetensors");
    let output = bitexact(&["cast", path_arg(&tiny_input), "-o", path_arg(&tiny), "--to", "nvfp4"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("tensor 'w.weight': its NVFP4 tensor scale 2.73e-43 is subnormal in f32"), "{stderr}");
    assert_no_temporaries(dir.path());
}

/// q/k/v, gate/up, DeepSeek's q_a/kv_a and an expert's w1/w3 share one tensor scale, from
/// the largest amax of their parts (as llm-compressor and ModelOpt give them, and vLLM
/// assumes when it fuses them), also across shards; other layers keep their own.
#[test]
fn nvfp4_fused_layers_share_one_tensor_scale() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("model");
    std::fs::create_dir(&folder).unwrap();
    let values = |seed, top: i32| f32_values(8 * 32, top - 8, top, seed, &[]);
    let layer = "model.layers.3";
    let names: Vec<(String, i32)> = [
        ("self_attn.q_proj", 2),
        ("self_attn.k_proj", -3),
        ("self_attn.v_proj", 5),
        ("self_attn.o_proj", -1),
        ("mlp.gate_proj", 1),
        ("mlp.up_proj", -6),
        ("self_attn.q_a_proj", 3),
        ("self_attn.kv_a_proj_with_mqa", -2),
        ("block_sparse_moe.experts.0.w1", 0),
        ("block_sparse_moe.experts.0.w3", 4),
        ("block_sparse_moe.experts.0.w2", -4),
    ]
    .iter()
    .map(|(part, top)| (format!("{layer}.{part}.weight"), *top))
    .collect();
    let tensors: Vec<(String, Vec<u32>)> =
        names.iter().enumerate().map(|(i, (name, top))| (name.clone(), values(40 + i as u64, *top))).collect();
    // k_proj in bf16: compressed-tensors' gs of each part is in its own dtype.
    let leaked: Vec<Tensor> = tensors
        .iter()
        .map(|(name, xs)| match name.contains("k_proj") {
            true => (&*name.clone().leak(), Dtype::BF16, vec![8, 32], bf16_bytes(xs)),
            false => (&*name.clone().leak(), Dtype::F32, vec![8, 32], f32_bytes(xs)),
        })
        .collect();
    // v_proj in a shard of its own.
    write_file(&folder.join("a.safetensors"), &[&leaked[..2], &leaked[3..]].concat());
    write_file(&folder.join("b.safetensors"), &leaked[2..3]);
    for (layout, recipe) in NVFP4_CASTS {
        let group =
            |parts: &[usize]| Some(nvfp4_global(&parts.iter().map(|&i| &leaked[i]).collect::<Vec<_>>(), recipe));
        let (qkv, gate_up, qkv_a, w13) = (group(&[0, 1, 2]), group(&[4, 5]), group(&[6, 7]), group(&[8, 9]));
        let out = dir.path().join(format!("{layout}-{recipe}"));
        run_ok(&[
            "cast",
            path_arg(&folder),
            "-o",
            path_arg(&out),
            "--to",
            "nvfp4",
            "--layout",
            layout,
            "--recipe",
            recipe,
        ]);
        let (a, b) = (read(&out.join("a.safetensors")), read(&out.join("b.safetensors")));
        let (a, b) = (SafeTensors::deserialize(&a).unwrap(), SafeTensors::deserialize(&b).unwrap());
        let fused = [qkv, qkv, qkv, None, gate_up, gate_up, qkv_a, qkv_a, w13, w13, None];
        let globals: Vec<u32> = leaked
            .iter()
            .zip(fused)
            .enumerate()
            .map(|(i, (tensor, fused))| assert_nvfp4(if i == 2 { &b } else { &a }, tensor, layout, recipe, fused))
            .collect();
        assert!(globals[0] == globals[1] && globals[1] == globals[2], "{layout}: q/k/v {globals:x?}");
        assert_eq!(globals[4], globals[5], "{layout}: gate/up");
        assert_ne!(globals[3], globals[0], "{layout}: o_proj keeps its own");
        assert_eq!(globals[6], globals[7], "{layout}: q_a/kv_a");
        assert_eq!(globals[8], globals[9], "{layout}: w1/w3");
        assert_ne!(globals[10], globals[8], "{layout}: w2 keeps its own");
    }
}
