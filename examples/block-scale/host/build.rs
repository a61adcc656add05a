//! Builds the kernel crate to PTX (`$OUT_DIR/kernels.ptx`, sm_75), checks it and, where
//! ptxas is installed, assembles it: a failure is a build error with the nested build's
//! messages. The builder watches the kernel crate and its path dependencies.
fn main() {
    ptx_builder::PtxBuilder::new("../kernels").build_or_exit();
}
