//! The wing's own tests: which device runs which module, and (`ptx_signatures`) every
//! embedded kernel against its kind's declaration.
//!
//! Owns: nothing of the library (compiled only under `#[cfg(test)]`).

mod ptx_signatures;

use crate::*;

fn device(major: i32, minor: i32) -> DeviceInfo {
    DeviceInfo {
        ordinal: 0,
        name: "test".into(),
        compute_capability: (major, minor),
        multiprocessors: 1,
        clock_khz: 1,
        memory_bytes: 1,
    }
}

#[test]
fn a_module_runs_from_its_target_on_and_says_why_not_before() {
    let fp8 = PtxTarget { sm: 89, ptx: 81 };
    let why = |d: &DeviceInfo| runs_target(d, fp8).map_err(|e| e.to_string());
    assert_eq!(why(&device(8, 0)), Err("needs sm_89; device 0 is sm_80".to_string()));
    assert_eq!(why(&device(8, 6)), Err("needs sm_89; device 0 is sm_86".to_string()));
    for (major, minor) in [(8, 9), (9, 0), (10, 0), (12, 0)] {
        assert_eq!(runs_target(&device(major, minor), fp8), Ok(()), "sm_{major}{minor}");
    }
    assert_eq!(device(12, 0).sm(), 120);
    let kernel = "f32_to_e4m3_satfinite_hw".to_string();
    let reason = runs_target(&device(8, 0), fp8).expect_err("sm_80 is older than sm_89");
    let error = GpuError::NeedsTarget { kernel, reason };
    assert_eq!(error.to_string(), "kernel f32_to_e4m3_satfinite_hw: needs sm_89; device 0 is sm_80");
    assert!(!error.is_unavailable());
}
