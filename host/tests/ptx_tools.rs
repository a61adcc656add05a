//! The `ptx` and `sass` commands: the embedded PTX printed whole, by module and as its
//! entry list; the SASS report as JSON; a PTX file of one's own listed, its unasked
//! conversions refused; and one-line errors for missing tools and bad architectures.
//! (What the PTX and its SASS must hold is checked in the cuda_tools wing's unit tests,
//! `host/wings/cuda_tools/src/tests/ptx_tools.rs`.)
//!
//! Tests that need `ptxas`/`cuobjdump` print `skipped: <reason>` and pass when the tools
//! are missing, or fail when `REQUIRE_CUDA_TOOLS=1` (as CI sets after running
//! `scripts/install-cuda-tools.sh`).

use crate::common;

use bitexact::cuda_tools::tools::{CudaTools, INSTALL_COMMAND, REQUIRE_CUDA_TOOLS};
use bitexact::support::skip::require_or_skip;
use bitexact::verify::table::{VARIANTS, Variant};
use ptx_builder::{TOOLS_DIR_VAR, ptx_text};
use shared::KernelKind;
use shared::hardware::{BASELINE, TARGETS};

/// The tools, or `None` after printing why this test is skipped (panics if required).
#[track_caller]
fn tools() -> Option<CudaTools> {
    require_or_skip(REQUIRE_CUDA_TOOLS, CudaTools::find())
}

/// Runs the `bitexact` binary with `args` and, if given, `$BITEXACT_CUDA_TOOLS`.
fn bitexact(args: &[&str], tools_dir: Option<&std::path::Path>) -> std::process::Output {
    let mut command = common::bitexact_command();
    command.args(args);
    if let Some(dir) = tools_dir {
        command.env(TOOLS_DIR_VAR, dir);
    }
    command.output().expect("bitexact runs")
}

#[test]
fn the_ptx_command_prints_the_embedded_ptx_and_its_entries() {
    // The baseline module, the one `--target` names first, and its entries listed.
    let full = bitexact(&["ptx"], None);
    assert!(full.status.success());
    let full = String::from_utf8_lossy(&full.stdout).into_owned();
    let baseline = bitexact(&["ptx", "--target", &BASELINE.to_string()], None);
    assert_eq!(full, String::from_utf8_lossy(&baseline.stdout));
    let list = bitexact(&["ptx", "--list"], None);
    assert!(list.status.success());
    let entries = ptx_text::entry_names(&full);
    assert!(entries.len() > 100, "{} entries", entries.len());
    assert_eq!(String::from_utf8_lossy(&list.stdout).lines().collect::<Vec<_>>(), entries);
}

#[test]
fn the_ptx_command_prints_each_module() {
    // Each module for its own target; together, exactly the kernels the table names, each
    // once (the embedded modules' entries, as the verify wing's `expected_kernels` checks).
    let mut printed = Vec::new();
    for target in TARGETS {
        let full = bitexact(&["ptx", "--target", &target.to_string()], None);
        assert!(full.status.success());
        let ptx = String::from_utf8_lossy(&full.stdout);
        assert!(ptx.lines().any(|l| l.trim() == format!(".target {target}")), "{target}: {ptx:.200}");
        let entries = ptx_text::entry_names(&ptx);
        assert!(!entries.is_empty(), "{target}: no kernel");
        printed.extend(entries.into_iter().map(str::to_string));
    }
    let mut named: Vec<String> = VARIANTS.iter().flat_map(Variant::kernels).map(|k| k.to_string()).collect();
    named.sort();
    printed.sort();
    assert_eq!(printed, named, "the modules printed hold exactly the table's kernels");
    let unknown = bitexact(&["ptx", "--target", "sm_86"], None);
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert_eq!(unknown.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("no PTX module for \"sm_86\"") && stderr.contains("sm_89"), "{stderr}");
}

#[test]
fn the_sass_command_without_tools_exits_2_with_one_line_saying_what_to_run() {
    let empty = tempfile::tempdir().expect("temporary folder");
    let output = bitexact(&["sass"], Some(empty.path()));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("not found") && stderr.contains(INSTALL_COMMAND), "{stderr}");
    assert!(output.stdout.is_empty());
}

#[test]
fn the_sass_command_rejects_a_bad_architecture_in_one_line() {
    let Some(_) = tools() else { return };
    let output = bitexact(&["sass", "--arch", "sm_90,-o"], None);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("bad architecture \"-o\""), "{stderr}");
}

#[test]
fn the_sass_command_prints_json_for_one_architecture() {
    let Some(_) = tools() else { return };
    let output = bitexact(&["sass", "--arch", "sm_90", "--format", "json"], None);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let rows = rows.as_array().expect("an array of rows");
    assert_eq!(rows.len(), VARIANTS.len());
    for (row, v) in rows.iter().zip(VARIANTS) {
        assert_eq!(row["arch"], "sm_90");
        assert_eq!(row["variant"], v.name);
        assert!(row["work_instructions"].is_i64() && row["work_opcodes"].is_array(), "{row}");
        assert!(row["chain_holds_work"].is_boolean() && row["chain"].is_string(), "{row}");
        for field in ["latency_loop_instructions", "throughput_loop_applications"] {
            assert!(row[field].is_u64() || row[field].is_null(), "{field}: {row}");
        }
        let hardware = &row["hardware"];
        assert_eq!(hardware.is_object(), v.has(KernelKind::Hardware), "{row}");
        if hardware.is_object() {
            assert!(hardware["instruction"].as_str().is_some_and(|i| i.starts_with("cvt.")), "{row}");
            assert!(hardware["work"].is_object() || hardware["work"].is_null(), "{row}");
        }
    }
}

/// `bitexact sass --ptx FILE`, the SASS listing of a module of one's own: on commit
/// 846e06b's folded kernels it marks the conversions nobody asked for and exits 1; on a
/// file that is not there, one line and exit 2.
#[test]
fn sass_of_a_ptx_file_lists_its_kernels_and_fails_on_an_unasked_conversion() {
    let missing = common::bitexact(&["sass", "--ptx", "/nonexistent/kernels.ptx"]);
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("/nonexistent/kernels.ptx"), "{stderr}");
    if tools().is_none() {
        return;
    }
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ptx_846e06b_f32_to_unorm.ptx");
    let run = common::bitexact(&["sass", "--ptx", fixture, "--arch", "sm_90", "--format", "json"]);
    assert_eq!(run.status.code(), Some(1), "{}", String::from_utf8_lossy(&run.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&run.stdout).expect("JSON rows");
    let unrequested = |kernel: &str| {
        let row = rows.iter().find(|r| r["kernel"] == kernel).unwrap_or_else(|| panic!("{kernel} not listed"));
        assert!(row["instructions"].as_u64().unwrap() > 5, "{row}");
        row["unrequested_conversions"].as_array().unwrap().len()
    };
    assert!(unrequested("f32_to_unorm8") > 0 && unrequested("f32_to_unorm16") > 0);
    assert_eq!(unrequested("f32_to_unorm8_mul_add_half"), 0, "it converts on purpose");
}

/// `bitexact sass --ptx FILE` on a module whose `.target` is sm_86 (commit 846e06b's
/// kernels, retargeted): the architectures asked below it are skipped in one line that
/// says why, the others listed; asked only older ones, one line and exit 2. Before this,
/// ptxas's refusal for sm_75 failed the whole command.
#[test]
fn sass_of_a_ptx_file_skips_the_architectures_below_its_target() {
    if tools().is_none() {
        return;
    }
    let fixture = include_str!("fixtures/ptx_846e06b_f32_to_unorm.ptx");
    let for_sm_86 = fixture.replace(".target sm_75", ".target sm_86").replace(".version 7.0", ".version 7.8");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("sm_86.ptx");
    std::fs::write(&path, for_sm_86).expect("write the module");
    let path = path.to_str().expect("a UTF-8 path");
    let run = common::bitexact(&["sass", "--ptx", path, "--arch", "sm_75,sm_80,sm_86,sm_90", "--format", "json"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "the fixture's unasked conversions: {stderr}");
    assert!(stderr.lines().any(|l| l.starts_with("skipped sm_75, sm_80: the module's .target is sm_86")), "{stderr}");
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&run.stdout).expect("JSON rows");
    let mut archs: Vec<&str> = rows.iter().map(|r| r["arch"].as_str().expect("an arch")).collect();
    archs.dedup();
    assert_eq!(archs, ["sm_86", "sm_90"]);
    let older = common::bitexact(&["sass", "--ptx", path, "--arch", "sm_75,sm_80"]);
    let stderr = String::from_utf8_lossy(&older.stderr);
    assert_eq!(older.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("none of --arch sm_75,sm_80: the module's .target is sm_86"), "{stderr}");
}
