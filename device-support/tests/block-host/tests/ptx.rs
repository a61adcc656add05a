//! `block-kernels`' declarations against the PTX the compiler made of them: every declared
//! kernel's parameter list equals its entry's `.param` list, and the PTX has no entry the
//! crate does not declare. No GPU needed.

use bitexact::gpu::{GpuError, check_params};
use block_host::PTX;
use block_kernels::{
    BlockAtomics, BlockBarriers, BlockIndices, BlockReductions, BlockShared, BlockWarpOps, GlobalCopyRaw,
    GlobalCopySlice, KERNELS,
};
use shared::launch::DeclaredKernel;

fn check<K: DeclaredKernel>() -> Result<(), GpuError> {
    check_params(K::NAME, K::PARAMS, PTX)
}

#[test]
fn every_declaration_matches_its_ptx_entry() {
    for (name, result) in [
        (BlockIndices::NAME, check::<BlockIndices>()),
        (BlockBarriers::NAME, check::<BlockBarriers>()),
        (BlockWarpOps::NAME, check::<BlockWarpOps>()),
        (BlockShared::NAME, check::<BlockShared>()),
        (BlockAtomics::NAME, check::<BlockAtomics>()),
        (BlockReductions::NAME, check::<BlockReductions>()),
        (GlobalCopyRaw::NAME, check::<GlobalCopyRaw>()),
        (GlobalCopySlice::NAME, check::<GlobalCopySlice>()),
    ] {
        result.unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let mut entries: Vec<&str> =
        PTX.lines().filter_map(|l| l.trim().strip_prefix(".visible .entry ")?.split('(').next()).collect();
    entries.sort_unstable();
    let mut declared = KERNELS.to_vec();
    declared.sort_unstable();
    assert_eq!(entries, declared, "the PTX's entries and the crate's declarations");
}
