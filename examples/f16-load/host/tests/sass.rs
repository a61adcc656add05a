//! The example's kernel in the SASS report (`bitexact sass --ptx FILE` lists the same):
//! it assembles for every architecture the report covers, and ptxas turned none of its
//! stores into a float → integer conversion. Needs ptxas and cuobjdump
//! (scripts/install-cuda-tools.sh); without them it prints `skipped: ...`
//! (`REQUIRE_CUDA_TOOLS=1`, as CI sets, makes that a failure).

use bitexact::cuda_tools::listing::listing_report;
use bitexact::cuda_tools::tools::{ARCHS, CudaTools, REQUIRE_CUDA_TOOLS};
use bitexact::support::skip::require_or_skip;
use f16_load::PTX;
use f16_load_kernels::F16ToF32Checked;
use shared::{KernelKind, KernelName};

#[test]
fn the_kernel_assembles_on_every_architecture_without_an_unasked_conversion() {
    let Some(tools) = require_or_skip(REQUIRE_CUDA_TOOLS, CudaTools::find()) else { return };
    let rows = listing_report(&tools, PTX, &ARCHS).expect("the example's PTX assembles");
    let name = KernelName::of::<F16ToF32Checked>(KernelKind::StreamCount).to_string();
    for arch in ARCHS {
        let row =
            rows.iter().find(|r| r.arch == arch && r.kernel == name).unwrap_or_else(|| panic!("{name} on {arch}"));
        assert!(row.instructions > 20, "{arch}: {} instructions", row.instructions);
        assert_eq!(row.unrequested_conversions, Vec::<String>::new(), "{arch}");
        // The count's two atomics are there: the kernel does both jobs.
        assert!(
            row.opcodes.iter().any(|(opcode, _)| opcode.starts_with("RED") || opcode.starts_with("ATOM")),
            "{arch}: {:?}",
            row.opcodes
        );
        println!("{arch}: {name}: {} instructions", row.instructions);
    }
}
