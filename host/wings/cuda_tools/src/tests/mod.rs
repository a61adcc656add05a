//! The wing's own tests: the embedded PTX and its SASS with the real tools
//! (`ptx_tools`), the CUDA C++ baseline (`cuda_baseline`) and, here, across the folder's
//! modules (so that no module of it imports a sibling for its tests only), the tool error
//! inside each wrapper that carries it.
//!
//! Owns: nothing of the library (compiled only under `#[cfg(test)]`).

mod cuda_baseline;
mod ptx_tools;

use super::baseline::BaselineError;
use super::cxx_gpu::CxxPtxError;
use super::nvrtc::NvrtcError;
use super::sass::SassError;
use super::tools::ToolError;
use bitexact_support::chain::repeated_causes;
use std::io;

fn io() -> ToolError {
    ToolError::Io { action: "running ptxas".into(), error: io::Error::from(io::ErrorKind::NotFound) }
}

#[test]
fn a_tool_error_in_any_wrapper_is_one_line_that_names_each_cause_once() {
    let line = format!("running ptxas: {}", io::Error::from(io::ErrorKind::NotFound));
    assert_eq!(io().to_string(), line);
    let wrapped: Vec<(Box<dyn std::error::Error>, String)> = vec![
        (Box::new(io()), line.clone()),
        (Box::new(SassError::from(io())), line.clone()),
        (Box::new(NvrtcError::from(io())), line.clone()),
        (Box::new(BaselineError::from(io())), line.clone()),
        (Box::new(BaselineError::from(NvrtcError::from(io()))), line.clone()),
        (
            Box::new(CxxPtxError::Nvrtc(NvrtcError::from(io()))),
            format!("{line} (or set BITEXACT_CXX_PTX_DIR to a folder of precompiled PTX)"),
        ),
    ];
    for (error, expected) in wrapped {
        assert_eq!(error.to_string(), expected);
        assert_eq!(repeated_causes(error.as_ref()), Vec::<String>::new(), "{error}");
    }
}

use crate::sass::{SassCost, cost_report};
use crate::tools::{ARCHS, CudaTools, REQUIRE_CUDA_TOOLS};
use bitexact_support::skip::require_or_skip;
use bitexact_verify::table::{VARIANTS, Variant};
use std::sync::OnceLock;

/// The tools, or `None` after printing why this test is skipped (panics if required).
#[track_caller]
fn tools() -> Option<CudaTools> {
    require_or_skip(REQUIRE_CUDA_TOOLS, CudaTools::find())
}

/// The SASS report of every variant of the table on every architecture, made once per
/// test process for the tests that read it: assembling every module for seven
/// architectures takes a while.
fn all_costs(tools: &CudaTools) -> &'static [SassCost] {
    static COSTS: OnceLock<Vec<SassCost>> = OnceLock::new();
    COSTS.get_or_init(|| {
        let variants: Vec<&'static Variant> = VARIANTS.iter().collect();
        cost_report(tools, bitexact_gpu::ptx::MODULES, &variants, &ARCHS).unwrap_or_else(|e| panic!("{e}"))
    })
}
