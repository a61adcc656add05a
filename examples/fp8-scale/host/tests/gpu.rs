//! The example's GPU proof: both passes on the GPU equal the CPU twin bit for bit (codes,
//! amax, scale, dequantisation scale, and the first non-finite index), for both formats
//! and both roundings, on lengths around the block and the four-element steps, misaligned
//! starts, and tensors with NaN or infinity planted. Without a GPU it prints
//! `skipped: ...` (`REQUIRE_GPU=1` makes that a failure).

use bitexact::gpu::{GpuError, open_or_skip};
use fp8_scale::{PTX, sample_tensor, scale_on_gpu};
use fp8_scale_kernels::{Fp8Format, NonFinite, Rounding, amax, quantize};

#[test]
fn the_gpu_equals_the_cpu_twin() -> Result<(), GpuError> {
    let Some(gpu) = open_or_skip() else { return Ok(()) };
    // SAFETY: `PTX` is `fp8-scale-kernels`' own.
    let module = unsafe { gpu.load_user_module(PTX)? };
    let big = sample_tensor((1 << 22) + 3, 7);
    let mut cases: Vec<(String, &[u32])> = vec![("4 Mi + 3".into(), &big)];
    for n in [0usize, 1, 3, 4, 5, 31, 32, 33, 255, 256, 257, 1000, 65_537] {
        cases.push((format!("{n} elements"), &big[..n]));
    }
    for start in 1..4 {
        cases.push((format!("start {start}"), &big[start..start + 10_000]));
    }
    for (what, x) in &cases {
        for format in Fp8Format::ALL {
            for rounding in [Rounding::Once, Rounding::TwoStep] {
                let gpu_result = scale_on_gpu(&gpu, &module, x, format, rounding)?;
                let a = amax(x).expect("finite");
                let mut codes = vec![0u8; x.len()];
                let (scale, dequant) = quantize(x, a, format, rounding, &mut codes);
                let got = gpu_result.expect("finite");
                assert_eq!(got.amax.to_bits(), a, "{what} {format:?} {rounding:?}: amax");
                assert_eq!((got.scale.to_bits(), got.dequant.to_bits()), (scale.to_bits(), dequant.to_bits()));
                let differing = got.codes.iter().zip(&codes).filter(|(g, c)| g != c).count();
                assert_eq!(differing, 0, "{what} {format:?} {rounding:?}: {differing} codes differ");
            }
        }
    }
    // A NaN or infinity is reported with the first index holding one.
    let mut planted = sample_tensor(100_000, 9);
    planted[77_777] = f32::INFINITY.to_bits();
    planted[123] = 0xFFC0_0001;
    let result = scale_on_gpu(&gpu, &module, &planted, Fp8Format::E4M3, Rounding::Once)?;
    assert_eq!(result, Err(NonFinite { index: 123 }));
    assert_eq!(amax(&planted), Err(NonFinite { index: 123 }));
    Ok(())
}
