//! `bitexact cast` against its peers and through compressed-tensors, by running
//! `scripts/cast_peers.py` with the Python named by `BITEXACT_PYTHON` (default `python3`)
//! on the built binary:
//! - the load check: a tiny transformers Llama cast to per-tensor E4M3, loaded with
//!   `AutoModelForCausalLM.from_pretrained` through compressed-tensors; every FP8 weight
//!   and `weight_scale` loaded is ours bit for bit, nothing missing or unexpected, and
//!   after a forward pass every dequantised weight is `fl32(q * weight_scale)` and within
//!   the FP8 bound of the f32 input;
//! - the peer comparison: every one of our values checked there against the exact
//!   rational rounding is right, every stored scale is `fl32(1 / fl32(max / amax))`, and
//!   `--rounding two-step` matches PyTorch's `(x * s).clamp(...).to(float8)` recipe bit
//!   for bit, for E4M3 and E5M2.
//!
//! - `scripts/block_peers.py`: compressed-tensors' own FP8 per-channel and block, MXFP8
//!   and NVFP4 code against `--recipe compressed-tensors`; torchao's `to_mx` against
//!   `--recipe ocp` and `rceil`; ModelOpt's NVFP4 `quantize` against `--recipe modelopt`;
//!   DeepGEMM's `per_block_cast_to_fp8` (a checkout named by `BITEXACT_DEEPGEMM`) against
//!   `--recipe deepgemm`; every scale and code; the load through transformers.
//!
//! Where the Python libraries are absent (or, for DeepGEMM, no checkout is named), the
//! script says `skipped: <reason>` for that part and the test prints it too and passes;
//! `REQUIRE_PEERS=1` makes each such skip a failure, so it asks for torch,
//! compressed-tensors, torchao, ModelOpt, transformers and `BITEXACT_DEEPGEMM`.

use crate::common;

use bitexact::support::skip::skip_or_fail;
use std::path::PathBuf;
use std::process::Output;

/// Runs `scripts/<script>` with `args` after `--bitexact EXE --dir TMP`; `None` (after
/// printing `skipped: ...`) where Python, or the libraries the run needs, are absent.
fn run_script(script: &str, args: &[&str], needs: &str) -> Option<Output> {
    let dir = tempfile::tempdir().unwrap();
    let python = std::env::var_os("BITEXACT_PYTHON").unwrap_or_else(|| "python3".into());
    let output = std::process::Command::new(&python)
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts").join(script))
        .arg("--bitexact")
        .arg(common::bitexact_exe())
        .arg("--dir")
        .arg(dir.path())
        .args(args)
        .output();
    let skipped = match &output {
        Err(error) => Some(format!("{} does not run ({error})", python.to_string_lossy())),
        Ok(out) => {
            let stdout = String::from_utf8_lossy(&out.stdout);
            let line =
                stdout.lines().find(|l| l.starts_with("skipped:") || l.starts_with(&format!("{needs}: skipped:")));
            line.map(|l| l.split_once("skipped: ").map_or(l, |(_, reason)| reason).to_string())
        }
    };
    let Some(reason) = skipped else { return output.ok() };
    skip_or_fail("REQUIRE_PEERS", reason);
    None
}

/// The reason after `prefix` where the script skipped that part of its run.
fn part_skipped<'a>(all: &'a str, prefix: &str) -> Option<&'a str> {
    all.lines().find_map(|l| l.strip_prefix(prefix))
}

fn text(output: &Output) -> String {
    format!("{}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[test]
fn compressed_tensors_loads_our_fp8_output_bit_for_bit_and_dequantises_within_the_bound() {
    let Some(output) = run_script("cast_peers.py", &["--load-check"], "compressed_tensors") else { return };
    let all = text(&output);
    assert!(output.status.success(), "the load check failed:\n{all}");
    assert!(all.contains("every one bit for bit ours: yes"), "{all}");
    assert!(all.lines().any(|l| l == "compressed-tensors load: ok"), "{all}");
}

#[test]
fn our_values_are_exact_and_two_step_matches_the_torch_recipe_bit_for_bit() {
    let Some(output) = run_script("cast_peers.py", &[], "torch") else { return };
    let all = text(&output);
    assert!(output.status.success(), "some of our values or scales are not the documented ones:\n{all}");
    for target in ["e4m3", "e5m2"] {
        let line = format!("{target} per-tensor, two-step: matches the torch recipe bit for bit (0 values differ)");
        assert!(all.lines().any(|l| l == line), "missing '{line}':\n{all}");
    }
    // Every target was cast and compared: none failed, and none is without its checks.
    assert_eq!(all.matches("== ").count(), 8, "{all}");
    assert_eq!(all.matches(": 0 wrong").count(), 8, "{all}");
}

/// `scripts/block_peers.py`: compressed-tensors' own `calculate_qparams` and `quantize` on
/// CPU torch (its arithmetic is the same there as on CUDA from 0.19 on) against
/// `--recipe compressed-tensors`, FP8 per block and per channel, MXFP8 and NVFP4, on bf16
/// and f32 weight-like tensors (normal and heavy-tailed, with partial tiles for FP8):
/// every scale and code equal; and the exact recipe's FP8 differences from it, each
/// classified (none "other"). Where torchao imports, its own `to_mx` (FLOOR, RCEIL) against
/// `--scale mx --recipe ocp`/`rceil` on the same tensors, every scale and code equal, and
/// on planted f32 blocks equal to its code from 2026-08-12 on, or different from an older
/// release exactly where that release's arithmetic differs. Where ModelOpt imports, its own
/// NVFP4 `quantize` at our `--recipe modelopt` factor against ours, every block scale and
/// packed byte equal, and its CPU factor the exact recipe's. With `BITEXACT_DEEPGEMM` naming a
/// DeepGEMM checkout, its `per_block_cast_to_fp8` against `--recipe deepgemm` (UE8M0 and f32
/// scales) on every block where its CPU arithmetic is its CUDA one, every scale and code
/// equal. Where transformers imports too, a tiny bf16 Llama cast to
/// each block-scaled layout (FP8 blocks by both recipes and with `--scale-format bf16`,
/// per channel, MXFP8, NVFP4) loads through its compressed-tensors quantizer with every
/// tensor ours and every weight decompressed to our dequantisation, bit for bit.
#[test]
fn compressed_tensors_own_block_scaled_code_equals_our_recipe_bit_for_bit() {
    // A checkout of deepseek-ai/DeepGEMM, where one is given, for its per_block_cast_to_fp8.
    let deepgemm = std::env::var("BITEXACT_DEEPGEMM").ok();
    let mut args = vec!["--markdown"];
    args.extend(deepgemm.iter().flat_map(|dir| ["--deepgemm", dir.as_str()]));
    let Some(output) = run_script("block_peers.py", &args, "torch") else { return };
    let all = text(&output);
    assert!(output.status.success(), "a scale or code differs from compressed-tensors' own:\n{all}");
    let rows = all.lines().filter(|l| l.contains("ours (compressed-tensors) 0 scales, 0 codes differ")).count();
    assert_eq!(rows, 20, "2 dtypes × (2 FP8 strategies × 4 tensors + MXFP8 × 2 tensors), each equal:\n{all}");
    let nvfp4 = "ours (compressed-tensors) 0 tensor scales, 0 block scales, 0 codes differ";
    assert_eq!(all.lines().filter(|l| l.contains(nvfp4)).count(), 4, "2 dtypes × 2 NVFP4 tensors:\n{all}");
    // torchao's own to_mx where it imports: FLOOR and RCEIL, 2 dtypes × 2 tensors each.
    if let Some(reason) = part_skipped(&all, "torchao: skipped: ") {
        skip_or_fail("REQUIRE_PEERS", format!("torchao's to_mx: {reason}"));
    } else {
        let equal = all.lines().filter(|l| l.contains("against torchao's to_mx: 0 scales, 0 codes differ")).count();
        assert_eq!(equal, 8, "FLOOR and RCEIL × 2 dtypes × 2 tensors, each equal:\n{all}");
        let planted = all.lines().filter(|l| l.contains(" of 32 codes differ")).count();
        assert_eq!(planted, 14, "7 planted blocks × FLOOR and RCEIL:\n{all}");
    }
    // ModelOpt's own NVFP4 quantize where it imports, at our factor: 2 dtypes × 2 tensors.
    if let Some(reason) = part_skipped(&all, "modelopt: skipped: ") {
        skip_or_fail("REQUIRE_PEERS", format!("ModelOpt's quantize: {reason}"));
    } else {
        let equal = ": 0 block scales, 0 packed bytes differ; its CPU factor is the exact recipe's";
        assert_eq!(all.lines().filter(|l| l.contains(equal)).count(), 4, "2 dtypes × 2 tensors, each equal:\n{all}");
    }
    // DeepGEMM's own per_block_cast_to_fp8 where a checkout is given: UE8M0 and f32 scales,
    // 2 dtypes × 4 tensors, then the planted tensor, which its rule before 7f2a703 (log2)
    // would give one power of two lower in one block.
    if let Some(reason) = part_skipped(&all, "deepgemm: skipped: ") {
        skip_or_fail("REQUIRE_PEERS", format!("DeepGEMM's per_block_cast_to_fp8 (BITEXACT_DEEPGEMM): {reason}"));
    } else {
        let lines: Vec<&str> = all.lines().collect();
        let compared = |l: &str| -> Option<(usize, usize)> {
            let (_, rest) = l.split_once("DeepGEMM's per_block_cast_to_fp8 on ")?;
            let (of, _) = rest.split_once(" blocks")?;
            let (n, m) = of.split_once(" of ")?;
            Some((n.parse().ok()?, m.parse().ok()?))
        };
        let equal: Vec<(usize, &str)> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| compared(l).is_some() && l.ends_with(": 0 scales, 0 codes differ"))
            .map(|(i, l)| (i, *l))
            .collect();
        assert_eq!(equal.len(), 18, "2 formats × (2 dtypes × 4 tensors + planted):\n{all}");
        for (_, line) in &equal {
            let (n, m) = compared(line).expect("filtered on it");
            // UE8M0: every block is compared (the CPU and CUDA sf round up alike here);
            // f32: some are.
            assert!(if line.contains(" ue8m0 ") { n == m } else { n > 0 }, "{line}");
        }
        let planted = equal.iter().find(|(_, l)| l.contains(" ue8m0 ") && l.contains(" planted ")).expect("planted");
        assert_eq!(lines[planted.0 + 1].trim(), "(1 of its blocks a power of two lower by 2^ceil(log2(sf)) in f32)");
    }
    // Loaded through transformers where it imports: each layout's tensors ours bit for bit,
    // every weight decompressed to our dequantisation.
    if let Some(reason) = part_skipped(&all, "load check: skipped: ") {
        skip_or_fail("REQUIRE_PEERS", format!("the load check: {reason}"));
    } else {
        let loaded = all.lines().filter(|l| l.starts_with("load check: ") && l.ends_with("bit for bit: yes")).count();
        let layouts = "block by both recipes and with bf16 scales, per-channel, MXFP8, NVFP4";
        assert_eq!(loaded, 6, "{layouts}:\n{all}");
        // bf16 scales are loaded as they are: the only rounded ones are the F32 ones.
        assert!(!all.contains("load check: block-bf16-scales: transformers loads our F32 scales"), "{all}");
    }
}
