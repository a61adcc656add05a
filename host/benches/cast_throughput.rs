//! `cast`'s element loops in memory, on all cores, against a same-run memcpy of the
//! bytes touched (`cargo bench -p host --bench cast_throughput [-- --mib N --reps N]`).
//!
//! Each row converts an f32 (or bf16, or f64) buffer of `--mib` MiB (default 256; values of
//! N(0, 1)-like spread, every exponent class present) block by block, exactly as
//! `bitexact cast` does (`bitexact::files::cast::chunks::convert_block_with` over
//! [`BLOCK_ELEMENTS`]-element blocks on the rayon pool, a scratch buffer per task, the
//! non-finite check on), and sets its best time against that of a parallel memcpy of the
//! input's bytes (the wider end: what it reads), run in turn with it. `memcpy/cast` ≥ 1 means as fast as copying.

use bitexact::files::cast::chunks::{amax_block, convert_block_with};
use bitexact::files::cast::convert::{ElementCast, SourceDtype, Target};
use bitexact::files::cast::output::BLOCK_ELEMENTS;
use bitexact::support::best_of_pair;
use rayon::prelude::*;
use shared::fp8_scale::{Fp8Format, Rounding};
use shared::narrow::Overflow;
use std::hint::black_box;

fn memcpy_parallel(src: &[u8], dst: &mut [u8]) {
    dst.par_chunks_mut(1 << 16).zip(src.par_chunks(1 << 16)).for_each(|(d, s)| d.copy_from_slice(s));
}

/// The f32 bits of element `i`: a scrambled mantissa, exponents from 2^-20 to 2^4.
fn value(i: u64) -> u32 {
    let r = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20;
    let exponent = 107 + (r % 24) as u32;
    (r as u32 >> 31) << 31 | exponent << 23 | (r >> 8) as u32 & 0x007F_FFFF
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut mib, mut reps) = (256usize, 5usize);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--mib" => mib = args.next().and_then(|v| v.parse().ok()).unwrap_or(mib),
            "--reps" => reps = args.next().and_then(|v| v.parse().ok()).unwrap_or(reps),
            _ => {}
        }
    }
    let n = (mib << 20) / 4;
    let f32s: Vec<u8> = (0..n as u64).flat_map(|i| value(i).to_le_bytes()).collect();
    let bf16s: Vec<u8> = (0..n as u64).flat_map(|i| ((value(i) >> 16) as u16).to_le_bytes()).collect();
    let threads = rayon::current_num_threads();
    println!("cast loops, {mib} MiB of f32 ({n} elements), {threads} threads, CPU level {}", bitexact::cpu::level());
    let (max, _) = amax_block(SourceDtype::F32, &f32s);
    let s = shared::fp8_scale::scale_for(f64::from_bits(max) as f32, Fp8Format::E4M3);
    // As many bytes of f64: the values widened, their last bit flipped (not f32 any more).
    let f64s: Vec<u8> =
        (0..n as u64 / 2).flat_map(|i| (f64::from(f32::from_bits(value(i))).to_bits() ^ 1).to_le_bytes()).collect();
    let (max64, _) = amax_block(SourceDtype::F64, &f64s);
    let s64 = shared::fp8_scale::scale_for_f64(f64::from_bits(max64), Fp8Format::E4M3);
    let rows = [
        (
            "f32 -> bf16",
            ElementCast::Plain { source: SourceDtype::F32, target: Target::Bf16, overflow: Overflow::Standard },
        ),
        (
            "f32 -> f16",
            ElementCast::Plain { source: SourceDtype::F32, target: Target::F16, overflow: Overflow::Standard },
        ),
        (
            "f32 -> e4m3 sat",
            ElementCast::Plain { source: SourceDtype::F32, target: Target::E4m3, overflow: Overflow::SatFinite },
        ),
        (
            "bf16 -> f16",
            ElementCast::Plain { source: SourceDtype::Bf16, target: Target::F16, overflow: Overflow::Standard },
        ),
        (
            "f32 -> e4m3 scaled, pass 2",
            ElementCast::Scaled { source: SourceDtype::F32, format: Fp8Format::E4M3, s, rounding: Rounding::Once },
        ),
        (
            "f64 -> e4m3 scaled, pass 2",
            ElementCast::Scaled { source: SourceDtype::F64, format: Fp8Format::E4M3, s: s64, rounding: Rounding::Once },
        ),
    ];
    for (name, conversion) in rows {
        let input = match conversion.source() {
            SourceDtype::Bf16 => &bf16s,
            SourceDtype::F64 => &f64s,
            _ => &f32s,
        };
        let (ib, ob) = (conversion.source().bytes(), conversion.output_bytes());
        let mut out = vec![0u8; input.len() / ib * ob];
        let mut copy = vec![0u8; input.len()];
        let (cast_s, memcpy_s) = best_of_pair(
            reps,
            || {
                let bad = input
                    .par_chunks(BLOCK_ELEMENTS * ib)
                    .zip(out.par_chunks_mut(BLOCK_ELEMENTS * ob))
                    .map_init(Vec::new, |scratch, (i, o)| convert_block_with(&conversion, i, o, true, scratch))
                    .flatten()
                    .count();
                black_box(bad);
            },
            || memcpy_parallel(input, &mut copy),
        );
        black_box((&out, &copy));
        println!(
            "{name:<28} {:>7.2} GB/s in  memcpy of {} MiB {:>7.2} GB/s  memcpy/cast {:.2}x",
            input.len() as f64 / cast_s / 1e9,
            input.len() >> 20,
            input.len() as f64 / memcpy_s / 1e9,
            memcpy_s / cast_s
        );
    }
}
