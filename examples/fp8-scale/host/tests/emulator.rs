//! The example's kernels, compiled for the host, run by `device_support::emulator` as
//! real blocks (barriers, static shared memory, warps of 32, atomics), equal the CPU twin
//! bit for bit: amax and the first non-finite index of pass 1, the codes and the
//! dequantisation scale of pass 2 for both formats and both roundings, on lengths around
//! the warp, the block and the four-element steps, at several block and grid sizes (the
//! grid-stride loops wrap). No GPU needed.

use device_support::block::Dim3;
use device_support::emulator::{EmulatorError, KernelArgs, Launch, launch};
use fp8_scale::sample_tensor;
use fp8_scale_kernels::{
    Fp8Format, NonFinite, Rounding, amax, fp8_amax, fp8_dequantize_e4m3, fp8_quantize_e4m3_once,
    fp8_quantize_e4m3_two_step, fp8_quantize_e5m2_once, fp8_quantize_e5m2_two_step, quantize,
};
use std::time::Instant;

fn shape(kernel: &'static str, grid: u32, block: u32) -> Launch {
    Launch { kernel, grid: Dim3::x(grid), block: Dim3::x(block), dynamic_shared_bytes: 0 }
}

/// Pass 1 under the emulator: (amax bits, first non-finite index or `u64::MAX`).
fn emulated_amax(x: &[u32], grid: u32, block: u32) -> Result<(u32, u64), EmulatorError> {
    let (mut amax, mut first) = (0u32, u64::MAX);
    // SAFETY: only the launch's threads use the pointers, and the buffers outlive it.
    let p = unsafe { KernelArgs::new((x.as_ptr(), x.len() as u64, &raw mut amax, &raw mut first)) };
    launch(&shape("fp8_amax", grid, block), || {
        let (x, n, amax, first) = p.get();
        // SAFETY: `x` holds `n` values, `amax` and `first` one each, set to 0 and
        // u64::MAX; the block size is a multiple of 32 and every thread runs to the end.
        unsafe { fp8_amax(x, n, amax, first) }
    })?;
    Ok((amax, first))
}

/// Pass 2 under the emulator: (codes, dequantisation scale).
fn emulated_quantize(
    x: &[u32],
    amax: u32,
    format: Fp8Format,
    rounding: Rounding,
    grid: u32,
    block: u32,
) -> Result<(Vec<u8>, f32), EmulatorError> {
    let mut codes = vec![0u8; x.len()];
    let mut dequant = 0f32;
    let kernel = match (format, rounding) {
        (Fp8Format::E4M3, Rounding::Once) => fp8_quantize_e4m3_once,
        (Fp8Format::E4M3, Rounding::TwoStep) => fp8_quantize_e4m3_two_step,
        (Fp8Format::E5M2, Rounding::Once) => fp8_quantize_e5m2_once,
        (Fp8Format::E5M2, Rounding::TwoStep) => fp8_quantize_e5m2_two_step,
    };
    // SAFETY: only the launch's threads use the pointers, and the buffers outlive it.
    let p =
        unsafe { KernelArgs::new((x.as_ptr(), codes.as_mut_ptr(), x.len() as u64, &raw const amax, &raw mut dequant)) };
    launch(&shape("fp8_quantize", grid, block), || {
        let (x, q, n, amax, dequant) = p.get();
        // SAFETY: `x` holds `n` values, `q` `n` bytes, `amax` a finite magnitude, `dequant` one f32.
        unsafe { kernel(x, q, n, amax, dequant) }
    })?;
    Ok((codes, dequant))
}

#[test]
fn the_emulated_kernels_equal_the_cpu_twin() -> Result<(), EmulatorError> {
    let big = sample_tensor(70_000, 3);
    let started = Instant::now();
    let mut launches = 0;
    for n in [0usize, 1, 3, 4, 5, 31, 33, 257, 4099, 70_000] {
        let x = &big[..n];
        let twin_amax = amax(x).expect("finite");
        for (grid, block) in [(1, 32), (3, 64), (2, 256), (1, 1024)] {
            let (got, first) = emulated_amax(x, grid, block)?;
            assert_eq!((got, first), (twin_amax, u64::MAX), "amax, n = {n}, grid {grid} × {block}");
            launches += 1;
            for format in Fp8Format::ALL {
                for rounding in [Rounding::Once, Rounding::TwoStep] {
                    let (codes, dequant) = emulated_quantize(x, got, format, rounding, grid, block)?;
                    let mut twin = vec![0u8; n];
                    let (_, twin_dequant) = quantize(x, twin_amax, format, rounding, &mut twin);
                    assert_eq!(codes, twin, "{format:?} {rounding:?}, n = {n}, grid {grid} × {block}");
                    if n > 0 {
                        assert_eq!(dequant.to_bits(), twin_dequant.to_bits());
                    }
                    launches += 1;
                }
            }
        }
    }
    eprintln!("{launches} emulated launches in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// A real-sized tensor, 2^24 values (a 4096 × 4096 weight), in a grid of 132 blocks of
/// 256 threads (an H100's SMs): pass 1, then pass 2 in each format with one rounding each,
/// against the twin (the sanitizer checking every shared-memory access).
#[test]
fn a_real_sized_tensor_equals_the_cpu_twin() -> Result<(), EmulatorError> {
    let x = sample_tensor(1 << 24, 7);
    let started = Instant::now();
    let twin_amax = amax(&x).expect("finite");
    let (got, first) = emulated_amax(&x, 132, 256)?;
    assert_eq!((got, first), (twin_amax, u64::MAX), "amax of 2^24 values");
    for (format, rounding) in [(Fp8Format::E4M3, Rounding::Once), (Fp8Format::E5M2, Rounding::TwoStep)] {
        let (codes, dequant) = emulated_quantize(&x, got, format, rounding, 132, 256)?;
        let mut twin = vec![0u8; x.len()];
        let (_, twin_dequant) = quantize(&x, twin_amax, format, rounding, &mut twin);
        if let Some(i) = codes.iter().zip(&twin).position(|(c, t)| c != t) {
            panic!("{format:?} {rounding:?}: element {i}: emulated {:#04x}, twin {:#04x}", codes[i], twin[i]);
        }
        assert_eq!(dequant.to_bits(), twin_dequant.to_bits(), "{format:?} {rounding:?}");
    }
    eprintln!("2^24 values, 3 emulated launches of 132 × 256 threads: {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

#[test]
fn a_nan_or_infinity_is_reported_with_its_first_index_not_hidden_in_the_max() -> Result<(), EmulatorError> {
    let mut x = sample_tensor(5000, 11);
    x[4321] = f32::NEG_INFINITY.to_bits();
    x[1234] = 0x7FC0_0000;
    x[2000] = 0xFF80_0001;
    for (grid, block) in [(1, 32), (4, 128)] {
        let (_, first) = emulated_amax(&x, grid, block)?;
        assert_eq!(first, 1234, "grid {grid} × {block}");
    }
    assert_eq!(amax(&x), Err(NonFinite { index: 1234 }));
    Ok(())
}

#[test]
fn a_block_size_that_is_not_a_multiple_of_32_is_an_error_not_a_wrong_max() {
    // Pass 1's contract asks for whole warps; the emulator finds the partial warp's
    // missing lanes at the first shuffle.
    let x = sample_tensor(1000, 5);
    let error = emulated_amax(&x, 1, 48).unwrap_err();
    assert!(error.to_string().contains("fp8_amax"), "{error}");
}

#[test]
fn the_dequantisation_kernel_takes_a_scalar_argument() -> Result<(), EmulatorError> {
    let codes: Vec<u8> = (0..=255).collect();
    let mut values = vec![0u32; codes.len()];
    let dequant = 0.1f32;
    // SAFETY: only the launch's threads use the pointers, and the buffers outlive it.
    let p = unsafe { KernelArgs::new((codes.as_ptr(), values.as_mut_ptr(), codes.len() as u64)) };
    launch(&shape("fp8_dequantize_e4m3", 2, 64), || {
        let (q, y, n) = p.get();
        // SAFETY: `q` holds `n` bytes and `y` `n` values.
        unsafe { fp8_dequantize_e4m3(q, y, n, dequant) }
    })?;
    for (&b, &v) in codes.iter().zip(&values) {
        let want = (f32::from_bits(shared::fp8::e4m3::to_f32_bits(b)) * dequant).to_bits();
        assert_eq!(v, want, "code {b:#04x}");
    }
    Ok(())
}
