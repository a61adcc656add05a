//! `block-kernels` on the GPU, launched through their typed handles, equal the same
//! kernels under the CPU emulator word for word, in every shape of
//! [`block_host::shapes`] (1-D, 2-D and 3-D grids and blocks, partial warps, dynamic
//! shared memory up to 97 KiB, past the 48 KiB a launch gets without the opt-in), and the
//! warp operations at several deltas, and both equal the shape's own arithmetic
//! ([`block_host::expected_out`]; the barrier kernel, which the emulator refuses under
//! CUDA's rule, against that alone). The exchange and compare-exchange words depend on
//! the order the GPU's threads arrive in, so for those only a valid rank is required.
//! Shapes the device cannot run are refused as `GpuError::LaunchShape` naming the kernel,
//! before anything is launched. Without a GPU it prints `skipped: ...`
//! (`REQUIRE_GPU=1` makes that a failure).

use bitexact::gpu::{GpuError, LaunchShape, ShapeProblem, open_or_skip};
use block_host::{ATOMIC_WIDE, ATOMIC_WORDS, DELTAS, PTX, Tour, Written, emulate, expected_out, on_gpu, shapes};
use device_support::block::Dim3;

/// `written` with the order-dependent words of [`Tour::Atomics`] (exchange,
/// compare-exchange) replaced by 0, and whether they held a rank of the block; for the
/// other kernels, whether the words are untouched.
fn order_free(kernel: Tour, mut written: Written, shape: &LaunchShape) -> (Written, bool) {
    if kernel != Tour::Atomics {
        let untouched = (written.words, written.wide, written.sum_bits) == (ATOMIC_WORDS, ATOMIC_WIDE, 0);
        return (written, untouched);
    }
    let volume = shape.block.volume();
    let valid = [written.words[3], written.words[4]].iter().all(|&w| u64::from(w) < volume)
        && [written.wide[3], written.wide[4]].iter().all(|&w| w < volume);
    (written.words[3], written.words[4], written.wide[3], written.wide[4]) = (0, 0, 0, 0);
    (written, valid)
}

#[test]
fn the_gpu_equals_the_emulator_in_every_shape() -> Result<(), GpuError> {
    let Some(gpu) = open_or_skip() else { return Ok(()) };
    // SAFETY: `PTX` is `block-kernels`' own, built by this crate's build script.
    let module = unsafe { gpu.load_user_module(PTX)? };
    let (mut launches, mut refused) = (0, 0);
    for shape in shapes() {
        for kernel in Tour::ALL.into_iter().chain(DELTAS.map(|delta| Tour::WarpOps { delta })) {
            if !kernel.runs_in(&shape) {
                continue;
            }
            let what = format!("{} in {shape:?}", kernel.name());
            let on_gpu = match on_gpu(&gpu, &module, kernel, &shape) {
                // A GPU with less shared memory than the largest shape asks (sm_75):
                // refused before a launch, as it must be.
                Err(GpuError::LaunchShape { problem: ShapeProblem::Shared { .. }, .. })
                    if shape.dynamic_shared_bytes + 2048 > module.limits().max_shared_bytes_per_block =>
                {
                    println!("{what}: over this device's shared memory, refused before the launch");
                    refused += 1;
                    continue;
                }
                result => result?,
            };
            let (on_gpu, gpu_valid) = order_free(kernel, on_gpu, &shape);
            let expected = expected_out(kernel, &shape);
            assert_eq!(on_gpu.out.len(), expected.len(), "{what}");
            if let Some(i) = on_gpu.out.iter().zip(&expected).position(|(g, e)| g != e) {
                let per = kernel.per_thread();
                panic!(
                    "{what}: thread {} value {}: the GPU wrote {}, {} is right",
                    i / per,
                    i % per,
                    on_gpu.out[i],
                    expected[i]
                );
            }
            if kernel == Tour::Barriers {
                // The emulator refuses its two-branch barrier (CUDA's rule; tests/emulator.rs).
                launches += 1;
                continue;
            }
            let emulated = emulate(kernel, &shape).unwrap_or_else(|e| panic!("{what}: {e}"));
            let (emulated, emulated_valid) = order_free(kernel, emulated, &shape);
            assert!(
                gpu_valid && emulated_valid,
                "{what}: a word the kernel must not touch, or an exchanged word that is no rank of the block"
            );
            assert_eq!(
                (on_gpu.words, on_gpu.wide, on_gpu.sum_bits),
                (emulated.words, emulated.wide, emulated.sum_bits)
            );
            if let Some(i) = on_gpu.out.iter().zip(&emulated.out).position(|(g, e)| g != e) {
                let per = kernel.per_thread();
                panic!(
                    "{what}: thread {} value {}: the GPU wrote {}, the emulator {}",
                    i / per,
                    i % per,
                    on_gpu.out[i],
                    emulated.out[i]
                );
            }
            launches += 1;
        }
    }
    println!(
        "{launches} launches equal on the GPU and the emulator ({refused} shapes over the device's shared memory)"
    );
    // 5 shapes × 13 kernels (the warp operations at 6 deltas) and 6 in the partial-warp
    // shape: 71 launches.
    assert_eq!(launches + refused, 71, "launches run");
    assert!(refused <= 13, "only the largest shape may be refused");
    Ok(())
}

#[test]
fn shapes_the_device_cannot_run_are_refused_before_a_launch() -> Result<(), GpuError> {
    let Some(gpu) = open_or_skip() else { return Ok(()) };
    // SAFETY: `PTX` is `block-kernels`' own.
    let module = unsafe { gpu.load_user_module(PTX)? };
    let limits = *module.limits();
    let too_many = LaunchShape { grid: Dim3::x(1), block: Dim3::new(32, 33, 1), dynamic_shared_bytes: 0 };
    let too_deep =
        LaunchShape { grid: Dim3::x(1), block: Dim3::new(1, 1, limits.max_block.z + 1), dynamic_shared_bytes: 0 };
    let empty = LaunchShape { grid: Dim3::new(1, 0, 1), block: Dim3::x(32), dynamic_shared_bytes: 0 };
    let too_much_shared = LaunchShape::linear(1, 32).with_dynamic_shared(limits.max_shared_bytes_per_block + 1);
    for (shape, expected) in
        [(too_many, "threads"), (too_deep, "block.z"), (empty, "grid.y = 0"), (too_much_shared, "shared")]
    {
        // Indices runs in any shape, so only the device's limits can refuse these.
        let error = on_gpu(&gpu, &module, Tour::Indices, &shape).expect_err("refused");
        let GpuError::LaunchShape { kernel, problem } = &error else { panic!("{shape:?}: {error}") };
        assert_eq!(kernel, "block_indices");
        let _: &ShapeProblem = problem;
        assert!(error.to_string().contains(expected), "{error}: should say {expected:?}");
    }
    Ok(())
}
