//! The kernels' declarations against the PTX the compiler made of them: every declared
//! kernel's parameter list equals its entry's `.param` list, and every entry of the PTX
//! is declared. No GPU needed.

use bitexact::gpu::check_params;
use block_scale::{KERNELS, PTX};
use block_scale_kernels::{
    Fp8TilesE4m3CompressedTensorsBf16, Fp8TilesE4m3CompressedTensorsF32, Fp8TilesE4m3DeepGemm,
    Fp8TilesE4m3DeepGemmUe8m0, Fp8TilesE4m3Exact, Fp8TilesE4m3ExactBf16, Fp8TilesE4m3ExactUe8m0, Fp8TilesE5m2DeepGemm,
    Fp8TilesE5m2Exact, Fp8TilesE5m2ExactUe8m0, MxE4m3CompressedTensors, MxE4m3Fit, MxE4m3Floor, MxE4m3Rceil,
    MxE5m2CompressedTensors, MxE5m2Fit, MxE5m2Floor, MxE5m2Rceil, Nvfp4Amax, Nvfp4CompressedTensorsBf16,
    Nvfp4CompressedTensorsF32, Nvfp4Exact, Nvfp4ModelOpt,
};
use shared::launch::DeclaredKernel;

fn check<K: DeclaredKernel>() -> (&'static str, Result<(), bitexact::gpu::GpuError>) {
    (K::NAME, check_params(K::NAME, K::PARAMS, PTX))
}

#[test]
fn every_declaration_matches_its_ptx_entry() {
    let checked = [
        check::<MxE4m3Fit>(),
        check::<MxE4m3Floor>(),
        check::<MxE4m3Rceil>(),
        check::<MxE4m3CompressedTensors>(),
        check::<MxE5m2Fit>(),
        check::<MxE5m2Floor>(),
        check::<MxE5m2Rceil>(),
        check::<MxE5m2CompressedTensors>(),
        check::<Fp8TilesE4m3Exact>(),
        check::<Fp8TilesE4m3DeepGemm>(),
        check::<Fp8TilesE4m3DeepGemmUe8m0>(),
        check::<Fp8TilesE4m3ExactUe8m0>(),
        check::<Fp8TilesE4m3ExactBf16>(),
        check::<Fp8TilesE4m3CompressedTensorsF32>(),
        check::<Fp8TilesE4m3CompressedTensorsBf16>(),
        check::<Fp8TilesE5m2Exact>(),
        check::<Fp8TilesE5m2DeepGemm>(),
        check::<Fp8TilesE5m2ExactUe8m0>(),
        check::<Nvfp4Amax>(),
        check::<Nvfp4Exact>(),
        check::<Nvfp4ModelOpt>(),
        check::<Nvfp4CompressedTensorsF32>(),
        check::<Nvfp4CompressedTensorsBf16>(),
    ];
    for (name, result) in &checked {
        if let Err(e) = result {
            panic!("{name}: {e}");
        }
    }
    let names: Vec<&str> = checked.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, KERNELS, "KERNELS lists the declarations");
}

#[test]
fn every_ptx_entry_is_a_declared_kernel() {
    // `.visible .entry name(`: the PTX holds no kernel that the host cannot launch typed.
    let entries: Vec<&str> = PTX
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix(".visible .entry "))
        .map(|rest| rest.split('(').next().unwrap_or(rest).trim())
        .collect();
    let mut sorted_entries = entries.clone();
    sorted_entries.sort_unstable();
    let mut declared = KERNELS.to_vec();
    declared.sort_unstable();
    assert_eq!(sorted_entries, declared);
}
