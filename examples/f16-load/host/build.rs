//! Builds the kernel crate to PTX (`$OUT_DIR/kernels.ptx`, named after its folder, sm_75), checks it
//! and, where ptxas is installed, assembles it: a failure is a build error with the
//! nested build's messages.
fn main() {
    // The kernel crate's own directory is watched by the builder; its path dependencies
    // are this workspace's.
    for watched in ["../../../shared", "../../../device-support"] {
        println!("cargo::rerun-if-changed={watched}");
    }
    ptx_builder::PtxBuilder::new("../kernels").build_or_exit();
}
