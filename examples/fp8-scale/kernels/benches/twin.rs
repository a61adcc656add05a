//! The CPU twin's speed against memcpy measured in the same run: pass 1 (amax, reads 4
//! bytes per element) and pass 2 (quantise, reads 4 and writes 1), each as bytes touched
//! per second over memcpy's (reads n, writes n). One thread each, 2^26 elements (256 MiB
//! of f32), the best of 5 runs.
//!
//! `cargo bench -p fp8-scale-kernels --bench twin` (`-- --log2 N` for 2^N elements).

use fp8_scale_kernels::{Fp8Format, Rounding, amax, quantize};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn best_of(runs: usize, mut f: impl FnMut()) -> Duration {
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let log2 = args.iter().position(|a| a == "--log2").and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok());
    let n: usize = 1 << log2.unwrap_or(26u32);
    // normal-ish values from a fixed integer stream: a mantissa and a small exponent
    let x: Vec<u32> = (0..n as u64)
        .map(|i| {
            let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
            ((h as u32) & 0x807F_FFFF) | ((120 + (h as u32 >> 23) % 12) << 23)
        })
        .collect();
    let src: Vec<u8> = vec![7; 4 * n];
    let mut dst: Vec<u8> = vec![0; 4 * n];
    let memcpy = best_of(5, || {
        dst.copy_from_slice(black_box(&src));
        black_box(&mut dst);
    });
    let memcpy_rate = (8 * n) as f64 / memcpy.as_secs_f64();
    println!("memcpy {} MiB: {:.2} GB/s touched (read + written)", (4 * n) >> 20, memcpy_rate / 1e9);
    let a = amax(&x).expect("finite");
    let pass1 = best_of(5, || {
        black_box(amax(black_box(&x)).ok());
    });
    let rate1 = (4 * n) as f64 / pass1.as_secs_f64();
    println!(
        "pass 1 (amax): {:.2} ns/element, {:.2} GB/s touched, {:.2}x memcpy",
        pass1.as_secs_f64() * 1e9 / n as f64,
        rate1 / 1e9,
        rate1 / memcpy_rate
    );
    let mut q = vec![0u8; n];
    for format in Fp8Format::ALL {
        for rounding in [Rounding::Once, Rounding::TwoStep] {
            let pass2 = best_of(5, || {
                black_box(quantize(black_box(&x), a, format, rounding, &mut q));
                black_box(&mut q);
            });
            let rate2 = (5 * n) as f64 / pass2.as_secs_f64();
            println!(
                "pass 2 ({format:?}, {rounding:?}): {:.2} ns/element, {:.2} GB/s touched, {:.2}x memcpy",
                pass2.as_secs_f64() * 1e9 / n as f64,
                rate2 / 1e9,
                rate2 / memcpy_rate
            );
        }
    }
}
