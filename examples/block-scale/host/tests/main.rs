//! The example's tests, one binary: the kernels under the CPU emulator against the CPU
//! twins (`emulator`), the declarations against the PTX (`ptx`), and the GPU proof
//! (`gpu`, `skipped: ...` without a GPU).

mod emulator;
mod gpu;
mod ptx;
