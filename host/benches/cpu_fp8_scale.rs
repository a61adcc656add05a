//! `bitexact::cpu::fp8_scale` (per-tensor scaled FP8's two passes) at every CPU level this
//! machine has, on one thread, against memcpy of the bytes each touches, timed in turn
//! with it (`best_of_pair`) so that a drift of a shared machine's speed moves both sides:
//! pass 1 (amax) reads 4 bytes per element, memcpy copies 2 per element (4 bytes
//! touched); pass 2 (quantise) reads 4 and writes 1, memcpy copies 2.5 per element.
//! `ours/memcpy` > 1 means faster than copying those bytes.
//!
//! `cargo bench -p host --bench cpu_fp8_scale` (`-- --log2 N`: 2^N elements, default 26;
//! `--reps N`: best of, default 5).

use bitexact::cpu::{Level, fp8_scale};
use bitexact::support::best_of_pair;
use shared::fp8_scale::{Fp8Format, Rounding, scale_for};
use std::hint::black_box;

fn main() {
    let (mut log2, mut reps) = (26u32, 5usize);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--log2" => log2 = args.next().and_then(|v| v.parse().ok()).expect("--log2 N"),
            "--reps" => reps = args.next().and_then(|v| v.parse().ok()).expect("--reps N"),
            _ => {} // cargo passes --bench
        }
    }
    let n = 1usize << log2;
    // The twin bench's stream: finite values of either sign over a dozen binades.
    let x: Vec<u32> = (0..n as u64)
        .map(|i| {
            let h = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
            ((h as u32) & 0x807F_FFFF) | ((120 + (h as u32 >> 23) % 12) << 23)
        })
        .collect();
    let mut q = vec![0u8; n];
    let src = vec![7u8; 5 * n / 2];
    let mut dst = vec![0u8; 5 * n / 2];
    println!("cpu_fp8_scale: 2^{log2} f32, best of {reps}, one thread, best level here {}", Level::detect());
    for level in Level::each().filter_map(Result::ok) {
        // The copy's destination passed to black_box after it, so the copy is not optimised away.
        let copy = |bytes: usize, dst: &mut [u8]| {
            dst[..bytes].copy_from_slice(black_box(&src[..bytes]));
            black_box(dst);
        };
        let (amax, memcpy) = best_of_pair(
            reps,
            || {
                black_box(fp8_scale::amax_at(level, black_box(&x)));
            },
            || copy(2 * n, &mut dst),
        );
        row(level, "pass 1 (amax)", 4 * n, amax, memcpy);
        let (max, first) = fp8_scale::amax_at(level, &x);
        assert_eq!(first, None);
        for format in Fp8Format::ALL {
            let s = scale_for(f32::from_bits(max), format);
            for rounding in [Rounding::Once, Rounding::TwoStep] {
                let (pass2, memcpy) = best_of_pair(
                    reps,
                    || fp8_scale::quantize_at(level, black_box(&x), s, format, rounding, black_box(&mut q)),
                    || copy(5 * n / 2, &mut dst),
                );
                row(level, &format!("pass 2 ({format:?}, {rounding:?})"), 5 * n, pass2, memcpy);
            }
        }
    }
}

/// One line: the rate of `bytes` touched in `seconds` and its ratio to memcpy's (the same
/// bytes touched in `memcpy_seconds`).
fn row(level: Level, op: &str, bytes: usize, seconds: f64, memcpy_seconds: f64) {
    println!(
        "{level:<8} {op:<26} {:>6.2} GB/s touched, memcpy {:>6.2} GB/s: {:.2}x memcpy",
        bytes as f64 / seconds / 1e9,
        bytes as f64 / memcpy_seconds / 1e9,
        memcpy_seconds / seconds
    );
}
