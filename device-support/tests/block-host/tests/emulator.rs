//! `block-kernels` under the CPU emulator, in 1-D, 2-D and 3-D shapes with dynamic shared
//! memory ([`block_host::shapes`]): every word each kernel wrote equals what the shape's
//! own arithmetic says it must be (indices from the row-major ranks, barrier counts,
//! shuffles and votes from PTX's lane rules, the mirror through shared memory, the
//! atomics' totals, the reductions by iterator: [`block_host::expected_out`]). The
//! barrier kernel, whose barrier is reached from two branches, is the error CUDA's rule
//! makes it (two call sites). A kernel whose contract a shape breaks
//! (a full-mask shuffle in a partial warp) is an error naming it. No GPU needed.

use bitexact::gpu::LaunchShape;
use block_host::{ATOMIC_WIDE, ATOMIC_WORDS, DELTAS, Tour, emulate, expected_out, shapes, threads_of};
use device_support::block::Dim3;
use device_support::emulator::EmulatorError;

#[test]
fn every_kernel_writes_what_its_shape_says_in_every_shape() {
    let mut runs = 0;
    for shape in shapes() {
        for kernel in Tour::ALL.into_iter().chain(DELTAS.map(|delta| Tour::WarpOps { delta })) {
            if !kernel.runs_in(&shape) {
                continue;
            }
            let what = format!("{} in {shape:?}", kernel.name());
            if kernel == Tour::Barriers {
                // Its one barrier reached from two branches is correct PTX (`barrier.sync`
                // need not be one instruction for the whole block) but breaks CUDA's rule,
                // which the emulator keeps: it names both call sites (tests/gpu.rs checks
                // the kernel on a GPU against `expected_out`).
                let error = emulate(kernel, &shape).expect_err("barriers at two call sites");
                assert!(matches!(error, EmulatorError::BarrierSites { .. }), "{what}: {error}");
                continue;
            }
            let written = emulate(kernel, &shape).unwrap_or_else(|e| panic!("{what}: {e}"));
            let expected = expected_out(kernel, &shape);
            assert_eq!(written.out.len(), expected.len(), "{what}");
            if let Some(i) = written.out.iter().zip(&expected).position(|(w, e)| w != e) {
                let per = kernel.per_thread();
                panic!(
                    "{what}: thread {} value {}: {} where {} is right",
                    i / per,
                    i % per,
                    written.out[i],
                    expected[i]
                );
            }
            let n = threads_of(&shape);
            let volume = shape.block.volume();
            if kernel == Tour::Atomics {
                let (words, wide) = (written.words, written.wide);
                assert_eq!((words[0], words[1], words[2]), (3 * n as u32, 0, volume as u32 - 1), "{what}");
                assert!(u64::from(words[3]) < volume && u64::from(words[4]) < volume, "{what}: {words:?}");
                assert_eq!(words[5..], [0; 3], "{what}");
                assert_eq!((wide[0], wide[1], wide[2]), (n as u64, 0, volume - 1), "{what}");
                assert!(wide[3] < volume && wide[4] < volume, "{what}: {wide:?}");
                // n additions of 0.5 are exact below 2^25.
                assert_eq!(f32::from_bits(written.sum_bits), n as f32 / 2.0, "{what}");
            } else {
                let untouched = (written.words, written.wide, written.sum_bits);
                assert_eq!(untouched, (ATOMIC_WORDS, ATOMIC_WIDE, 0), "{what}");
            }
            runs += 1;
        }
    }
    println!("{runs} emulated launches checked");
    // 71 launches of the shapes, less the barrier kernel in each of the 6 (refused).
    assert_eq!(runs, 65, "launches checked");
}

#[test]
fn a_full_mask_shuffle_in_a_partial_warp_is_an_error_naming_the_kernel() {
    let shape = LaunchShape { grid: Dim3::x(1), block: Dim3::new(5, 3, 2), dynamic_shared_bytes: 0 };
    for kernel in [Tour::WarpOps { delta: 1 }, Tour::Reductions] {
        assert!(!kernel.runs_in(&shape));
        let error = emulate(kernel, &shape).expect_err("30 threads cannot shuffle over 32 lanes");
        assert!(error.to_string().contains(kernel.name()), "{error}");
    }
}
