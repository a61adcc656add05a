//! The wing's own tests: the report's invalid rows, and that each timing kernel holds its
//! variant's work (with the real tools: it was `host`'s `ptx_tools` test, and needs
//! `is_constant`, this wing's).
//!
//! Owns: nothing of the library (compiled only under `#[cfg(test)]`).

use crate::*;

fn figures(latency_cycles: f64, throughput_gops: f64, ops_per_sm_per_cycle: f64) -> Figures {
    Figures { latency_cycles, throughput_gops, ops_per_sm_per_cycle }
}

#[test]
fn the_report_names_its_invalid_rows() {
    let device = DeviceInfo {
        ordinal: 0,
        name: "test".into(),
        compute_capability: (9, 0),
        multiprocessors: 132,
        clock_khz: 1_980_000,
        memory_bytes: 0,
    };
    let report = BenchReport {
        device,
        bytes: 0,
        reps: 1,
        bandwidth: Vec::new(),
        per_element: vec![
            TimingRow::measured("a", figures(-0.0, 1.0, 1.0)),
            TimingRow::measured("b", figures(20.0, 1.0, 1.0)),
            TimingRow::constant("c"),
            TimingRow::measured("d", figures(20.0, 1.0, 2312.0)),
        ],
        cxx: cxx::CxxRows { ptx: "skipped: test".into(), rows: Vec::new(), per_element: Vec::new() },
    };
    assert_eq!(report.invalid_variants(), ["a", "d"]);
}

use bitexact_cuda_tools::sass::chain::ChainVerdict;
use bitexact_cuda_tools::sass::{SassCost, cost_report};
use bitexact_cuda_tools::tools::{ARCHS, CudaTools, REQUIRE_CUDA_TOOLS};
use bitexact_support::skip::require_or_skip;
use bitexact_verify::table::{VARIANTS, Variant};

/// The tools, or `None` after printing why this test is skipped (panics if required).
#[track_caller]
fn tools() -> Option<CudaTools> {
    require_or_skip(REQUIRE_CUDA_TOOLS, CudaTools::find())
}

/// The SASS report of every variant of the table on every architecture.
fn all_costs(tools: &CudaTools) -> Vec<SassCost> {
    let variants: Vec<&'static Variant> = VARIANTS.iter().collect();
    cost_report(tools, bitexact_gpu::ptx::MODULES, &variants, &ARCHS).unwrap_or_else(|e| panic!("{e}"))
}

/// What `bench` times must be the variant's work: on every architecture, each latency and
/// throughput kernel has a chain loop (not a remainder loop) holding the work of the
/// variant's map kernel, except for constant functions, which the SASS shows as having
/// no work and `bench` proves constant on the CPU (and does not time).
#[test]
fn every_timing_kernel_holds_its_variants_work_in_its_chain_loop() {
    let Some(tools) = tools() else { return };
    let mut missing = Vec::new();
    for cost in &all_costs(&tools) {
        let variant = bitexact_verify::table::find(cost.variant).expect("a variant of the table");
        let constant = crate::figures::is_constant(variant);
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
