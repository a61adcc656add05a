//! `bitexact sass --cxx`, the CUDA C++ baseline's command: without NVRTC, one line and
//! exit 2; with it, `--emit-ptx DIR` writes the baseline's PTX, one file per flag set and
//! architecture. (The baseline itself, its forms, their SASS and the PTX read back for a
//! device are checked in the cuda_tools wing's unit tests,
//! `host/wings/cuda_tools/src/tests/cuda_baseline.rs`.)
//!
//! Tests that need NVRTC or the tools print `skipped: <reason>` and pass when they are
//! missing, or fail when `REQUIRE_CUDA_TOOLS=1` (as CI sets after running
//! `scripts/install-cuda-tools.sh`, which installs them all).

use crate::common;

use bitexact::cuda_tools::tools::{CudaTools, REQUIRE_CUDA_TOOLS, Tool};
use bitexact::support::skip::{require_or_skip, skip_or_fail};
use ptx_builder::TOOLS_DIR_VAR;

#[test]
fn sass_cxx_without_nvrtc_is_one_line_and_exit_2() {
    let Some(tools) = require_or_skip(REQUIRE_CUDA_TOOLS, CudaTools::find()) else { return };
    // A tools folder with ptxas and cuobjdump but neither NVRTC nor the headers.
    let dir = tempfile::tempdir().expect("temporary folder");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("bin");
    for (tool, path) in [(Tool::Ptxas, &tools.ptxas), (Tool::Cuobjdump, &tools.cuobjdump)] {
        std::os::unix::fs::symlink(path, bin.join(tool.name())).expect("link");
    }
    let output = common::bitexact_command()
        .args(["sass", "--cxx", "--arch", "sm_90", "--only", "unorm8_div_ieee"])
        .env(TOOLS_DIR_VAR, dir.path())
        .output()
        .expect("bitexact runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("libnvrtc.so.12") && stderr.contains("install-cuda-tools.sh"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `bitexact sass --cxx --emit-ptx DIR` writes one PTX file per flag set for each
/// architecture and prints their paths; without `--cxx` the option is refused.
#[test]
fn emitted_ptx_is_written_for_each_architecture() {
    let Some(_) = require_or_skip(REQUIRE_CUDA_TOOLS, CudaTools::find()) else { return };
    let dir = tempfile::tempdir().expect("temporary folder");
    let output = common::bitexact_command()
        .args(["sass", "--cxx", "--arch", "sm_80,sm_90", "--emit-ptx"])
        .arg(dir.path())
        .output()
        .expect("bitexact runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    if stderr.contains("libnvrtc") {
        // NVRTC missing: `sass_cxx_without_nvrtc_is_one_line_and_exit_2`'s case.
        skip_or_fail(REQUIRE_CUDA_TOOLS, stderr.trim());
        return;
    }
    assert!(output.status.success(), "{stderr}");
    let written: Vec<String> = String::from_utf8_lossy(&output.stdout).lines().map(str::to_string).collect();
    assert!(!written.is_empty() && written.len().is_multiple_of(2), "{written:?}");
    for (i, path) in written.iter().enumerate() {
        let arch = if i < written.len() / 2 { "sm_80" } else { "sm_90" };
        assert!(path.ends_with(".ptx") && path.contains(arch), "{path}");
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(text.contains(&format!(".target {arch}")), "{path}");
    }
    let refused = common::bitexact_command().args(["sass", "--emit-ptx"]).arg(dir.path()).output().expect("runs");
    assert_eq!(refused.status.code(), Some(2));
}
