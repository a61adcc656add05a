//! Reports and guards built on NVIDIA's command-line tools, without a GPU: finding and
//! running ptxas / cuobjdump / nvdisasm ([`tools`]), the per-variant SASS cost report
//! and the timing-chain check ([`sass`]), the listing of any module ([`listing`]), the PTX/SASS guards against patterns that
//! compile to wrong code on the GPU ([`guards`]), and the CUDA C++ baseline: the same
//! forms in CUDA C++ ([`baseline`], source in `cuda-baseline/`), compiled by NVRTC
//! ([`nvrtc`]) and set beside the Rust variants in the SASS report; its PTX for the GPU
//! check and the bench, and the comparison of its results with the reference
//! ([`cxx_gpu`]).
//!
//! Owns: everything that reads PTX or SASS text, and the C++ baseline. Uses:
//! [`bitexact_support`], [`bitexact_gpu::ptx`] (the embedded PTX) and
//! [`bitexact_verify::table`] (which kernels exist).
#![deny(unsafe_code)]

#[doc(hidden)]
pub mod baseline;
#[doc(hidden)]
pub mod cxx_gpu;
pub mod guards;
pub mod listing;
#[doc(hidden)]
pub mod nvrtc;
pub mod sass;
pub mod tools;

#[cfg(test)]
mod tests {
    //! Across the folder's modules (here, so that no module of it imports a sibling for
    //! its tests only): the tool error inside each wrapper that carries it.
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
}
