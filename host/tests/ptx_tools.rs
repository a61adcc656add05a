//! The embedded PTX, checked with the real CUDA tools: it assembles for every supported
//! architecture, is self-contained, uses registers only, the SASS report covers every
//! variant, and every timing kernel's chain loop holds its variant's work.
//!
//! Tests that need `ptxas`/`cuobjdump` print `skipped: <reason>` and pass when the tools
//! are missing, or fail when `REQUIRE_CUDA_TOOLS=1` (as CI sets after running
//! `scripts/install-cuda-tools.sh`). The structural checks need no tools and always run.

use host::ptx::{self, PTX, latency_name, skeleton_name, throughput_name};
use host::sass::{self, Cost, chain::ChainVerdict};
use host::skip::require_or_skip;
use host::table::{VARIANTS, Variant};
use host::tools::{ARCHS, CudaTools, REQUIRE_CUDA_TOOLS, TOOLS_DIR_VAR, Tool};
use std::collections::BTreeSet;
use std::process::Command;
use std::sync::OnceLock;

/// The tools, or `None` after printing why this test is skipped (panics if required).
#[track_caller]
fn tools() -> Option<CudaTools> {
    require_or_skip(REQUIRE_CUDA_TOOLS, CudaTools::find())
}

fn all_variants() -> Vec<&'static Variant> {
    VARIANTS.iter().collect()
}

/// The SASS report of every variant on every architecture, made once for the tests
/// that read it (assembling for seven architectures takes a while).
fn all_costs(tools: &CudaTools) -> &'static [Cost] {
    static COSTS: OnceLock<Vec<Cost>> = OnceLock::new();
    COSTS.get_or_init(|| sass::cost_report(tools, PTX, &all_variants(), &ARCHS).unwrap_or_else(|e| panic!("{e}")))
}

#[test]
fn every_variant_has_its_kernels_in_the_ptx() {
    let entries: BTreeSet<&str> = ptx::entry_names(PTX).into_iter().collect();
    for v in VARIANTS {
        for kernel in [v.name.to_string(), skeleton_name(v.name), latency_name(v.name), throughput_name(v.name)] {
            assert!(entries.contains(kernel.as_str()), "kernel {kernel} missing from the PTX entries {entries:?}");
        }
    }
}

#[test]
fn the_ptx_declares_nothing_external_and_calls_only_what_it_defines() {
    assert_eq!(ptx::extern_declarations(PTX), Vec::<&str>::new(), "the PTX needs functions it does not define");
    let defined = ptx::defined_functions(PTX);
    for target in ptx::call_targets(PTX) {
        assert!(defined.contains(&target), "call to {target}, which the PTX does not define (defined: {defined:?})");
        let lower = target.to_lowercase();
        for forbidden in ["panic", "fmt", "unwind", "format"] {
            assert!(!lower.contains(forbidden), "a kernel calls {target}: a panic or formatting path survived");
        }
    }
}

#[test]
fn every_tool_is_found_and_runs() {
    for tool in Tool::ALL {
        let Some(path) = require_or_skip(REQUIRE_CUDA_TOOLS, host::tools::find(tool)) else { return };
        let output = Command::new(&path).arg("--version").output();
        let ran = output.as_ref().is_ok_and(|o| o.status.success());
        assert!(ran, "{tool} at {} does not run: {output:?}", path.display());
    }
}

#[test]
fn the_ptx_assembles_for_every_architecture() {
    let Some(tools) = tools() else { return };
    for arch in ARCHS {
        match tools.assemble(PTX, arch) {
            Ok(assembled) => {
                let functions = host::tools::resource_usage(&assembled.ptxas_log).len();
                println!("{arch}: assembled ({functions} functions)");
            }
            Err(e) => panic!("the PTX does not assemble for {arch}: {e}"),
        }
    }
}

#[test]
fn no_function_has_a_stack_frame_or_spills() {
    let Some(tools) = tools() else { return };
    let entries = ptx::entry_names(PTX);
    for arch in ARCHS {
        let assembled = tools.assemble(PTX, arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
        let usage = host::tools::resource_usage(&assembled.ptxas_log);
        for entry in &entries {
            assert!(usage.iter().any(|f| f.function == *entry), "{arch}: ptxas -v says nothing about {entry}");
        }
        for function in usage {
            assert!(function.registers_only(), "{arch}: {function:?} uses local memory");
        }
    }
}

#[test]
fn the_sass_report_covers_every_variant_on_every_architecture() {
    let Some(tools) = tools() else { return };
    let costs = all_costs(&tools);
    assert_eq!(costs.len(), VARIANTS.len() * ARCHS.len());
    for arch in ARCHS {
        for v in VARIANTS {
            let cost = costs.iter().find(|c| c.arch == arch && c.variant == v.name);
            let Some(cost) = cost else { panic!("no SASS cost for {} on {arch}", v.name) };
            let w = &cost.work;
            assert!(w.skeleton_instructions > 0, "{arch} {}: empty skeleton", v.name);
            assert_eq!(w.work_instructions, w.variant_instructions as i64 - w.skeleton_instructions as i64);
            assert_eq!(w.work_instructions, w.work_opcodes.len() as i64 - w.skeleton_only_opcodes.len() as i64);
            if w.work_instructions < 0 {
                // Only a variant whose result does not depend on its input (E4M3 has no
                // infinities) may be cheaper than the skeleton: its kernel skips the load.
                let skips_load = w.skeleton_only_opcodes.iter().any(|op| op.starts_with("LDG"));
                assert!(skips_load, "{arch} {}: kernel shorter than its skeleton but loads: {w:?}", v.name);
            } else {
                assert!(!w.work_opcodes.is_empty(), "{arch} {}: no work opcodes: {w:?}", v.name);
            }
        }
    }
}

/// What `bench` times must be the variant's work: on every architecture, each latency and
/// throughput kernel has a chain loop (not a remainder loop) holding the work of the
/// variant's map kernel, except for constant functions, which the SASS shows as having
/// no work and `bench` proves constant on the CPU (and does not time).
#[test]
fn every_timing_kernel_holds_its_variants_work_in_its_chain_loop() {
    let Some(tools) = tools() else { return };
    let mut missing = Vec::new();
    for cost in all_costs(&tools) {
        let variant = host::table::find(cost.variant).expect("a variant of the table");
        let constant = host::bench::is_constant(variant);
        let chain = &cost.chain;
        match &chain.chain {
            ChainVerdict::HoldsWork => {
                assert!(!constant, "{} {}: constant on the CPU, yet the SASS has work", cost.arch, cost.variant);
                assert!(chain.chain_holds_work);
                let applications = [chain.latency_loop_applications, chain.throughput_loop_applications];
                assert!(
                    applications.iter().all(|a| a.is_some_and(|a| a >= 1)),
                    "{} {}: {chain:?}",
                    cost.arch,
                    cost.variant
                );
            }
            ChainVerdict::Constant => {
                assert!(constant, "{} {}: no work in the SASS, but not constant on the CPU", cost.arch, cost.variant)
            }
            ChainVerdict::Missing(why) => missing.push(format!("{} {}: {why}", cost.arch, cost.variant)),
        }
    }
    assert!(missing.is_empty(), "timing kernels that do not time the work:\n{}", missing.join("\n"));
}

/// Runs the `bitexact` binary with `args` and, if given, `$BITEXACT_CUDA_TOOLS`.
fn bitexact(args: &[&str], tools_dir: Option<&std::path::Path>) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bitexact"));
    command.args(args);
    if let Some(dir) = tools_dir {
        command.env(TOOLS_DIR_VAR, dir);
    }
    command.output().expect("bitexact runs")
}

#[test]
fn the_ptx_command_prints_the_embedded_ptx_and_its_entries() {
    let full = bitexact(&["ptx"], None);
    assert!(full.status.success());
    assert_eq!(String::from_utf8_lossy(&full.stdout), PTX);
    let list = bitexact(&["ptx", "--list"], None);
    assert!(list.status.success());
    assert_eq!(String::from_utf8_lossy(&list.stdout).lines().collect::<Vec<_>>(), ptx::entry_names(PTX));
}

#[test]
fn the_sass_command_without_tools_exits_2_with_one_line_saying_what_to_run() {
    let empty = tempfile::tempdir().expect("temporary folder");
    let output = bitexact(&["sass"], Some(empty.path()));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("not found") && stderr.contains(host::tools::INSTALL_COMMAND), "{stderr}");
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
    }
}
