//! CPU throughput of the `scan` and `normalize` loops against memcpy of the same bytes,
//! on one thread and on all cores (`cargo bench -p host --bench cpu_throughput`).
//!
//! Options: `--mib N` (input buffer size, default 256), `--reps N` (best of, default 5),
//! `--json PATH` (also write the results as JSON; `scripts/bench-cpu.sh` reads it),
//! `--only TEXT` (only the rows whose name contains it, such as `unorm16→f16`).
//!
//! The memcpy baseline copies as many bytes as the operation touches at its wider end:
//! a scan reads N bytes, so memcpy copies N; a conversion writes 4N (UNORM8 → f32), 2N
//! (UNORM16 → f32, UNORM8 → binary16 / bfloat16) or N (UNORM16 → binary16 / bfloat16)
//! bytes of N bytes of samples, so memcpy copies the larger of what it reads and writes.
//! `ours/memcpy` > 1 means faster than copying those bytes.
//!
//! Every `normalize` conversion runs at every CPU level this machine has
//! ([`bitexact::cpu::Level`]); the rows of the level `bitexact` would pick carry the plain
//! name, the others `@level`.

use bitexact::cpu::Level;
use bitexact::files::backend::count;
use bitexact::files::backend::{Backend, CpuBackend};
use bitexact::files::normalize::image::{SampleWidth, conversion};
use bitexact::files::source::Source;
use bitexact::files::write::Dtype;
use bitexact::support::element::Endian;
use rayon::prelude::*;
use shared::Format;
use std::hint::black_box;

struct Options {
    mib: usize,
    reps: usize,
    json: Option<String>,
    /// Only the rows whose name contains this.
    only: Option<String>,
}

fn options() -> Options {
    let mut options = Options { mib: 256, reps: 5, json: None, only: None };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--mib" => options.mib = args.next().and_then(|v| v.parse().ok()).expect("--mib N"),
            "--reps" => options.reps = args.next().and_then(|v| v.parse().ok()).expect("--reps N"),
            "--json" => options.json = Some(args.next().expect("--json PATH")),
            "--only" => options.only = Some(args.next().expect("--only TEXT")),
            _ => {} // cargo passes --bench
        }
    }
    options
}

use bitexact::support::best_of_pair;

fn memcpy_parallel(src: &[u8], dst: &mut [u8]) {
    dst.par_chunks_mut(count::BLOCK_BYTES)
        .zip(src.par_chunks(count::BLOCK_BYTES))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

/// One measured operation.
#[derive(serde::Serialize)]
struct Measurement {
    op: String,
    /// The CPU level it ran at.
    level: Level,
    /// How the CPU computed it at that level (`bitexact::cpu::unorm::UnormForm`), for a
    /// conversion.
    form: String,
    /// Input bytes per run.
    bytes: usize,
    /// Bytes the memcpy baseline copies.
    memcpy_bytes: usize,
    one_thread_s: f64,
    all_cores_s: f64,
    memcpy_one_thread_s: f64,
    memcpy_all_cores_s: f64,
}

impl Measurement {
    fn print(&self, threads: usize) {
        let gbps = |s: f64| self.bytes as f64 / s / 1e9;
        println!(
            "{:<30} 1 thread {:>6.2} GB/s ({:.2}x memcpy of {} MiB)   {threads} threads {:>6.2} GB/s ({:.2}x memcpy)  {}",
            self.op,
            gbps(self.one_thread_s),
            self.memcpy_one_thread_s / self.one_thread_s,
            self.memcpy_bytes >> 20,
            gbps(self.all_cores_s),
            self.memcpy_all_cores_s / self.all_cores_s,
            self.form,
        );
    }
}

fn main() {
    let options = options();
    let bytes = options.mib << 20;
    let threads = rayon::current_num_threads();
    println!(
        "cpu_throughput: {} MiB inputs, best of {}, {threads} threads, cpu level {} (best here {}; rows @level: lower ones)",
        options.mib,
        options.reps,
        bitexact::cpu::level(),
        Level::detect()
    );

    // Input: pseudo-random bytes with bit 6 of every byte clear, so that every element of
    // every format is finite (bit 6 of an element's top byte is its top exponent bit), and
    // bit 0 set, so that no byte is 0x80 (the FNUZ formats' NaN).
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let words: Vec<u64> = (0..bytes / 8)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state & 0xBFBF_BFBF_BFBF_BFBF | 0x0101_0101_0101_0101
        })
        .collect();
    let input: &[u8] = bytemuck::cast_slice(&words);
    // Output and memcpy buffers for the widest case (UNORM8 → f32: 4 bytes per input byte).
    let mut wide: Vec<u8> = vec![0; 4 * bytes];
    let copy_src = vec![1u8; 4 * bytes];
    let mut copy_dst = vec![0u8; 4 * bytes];
    // Each operation is timed in turn with memcpy of its bytes (best_of_pair), so that a
    // drift of this shared machine's speed moves both sides of the ratio.
    let (copy_src, copy_dst) = (&copy_src[..], &mut copy_dst[..]);

    let mut results = Vec::new();
    let wanted = |name: &str| options.only.as_ref().is_none_or(|only| name.contains(only.as_str()));
    for format in Format::ALL.into_iter().filter(|format| wanted(&format!("scan {}", format.name()))) {
        let (one, memcpy_one) = best_of_pair(
            options.reps,
            || {
                let counts = count::count_slice(format, Endian::Little, black_box(input), 0);
                assert_eq!(counts.first_non_finite, None);
            },
            || copy_dst[..bytes].copy_from_slice(black_box(&copy_src[..bytes])),
        );
        let (all, memcpy_all) = best_of_pair(
            options.reps,
            || {
                black_box(count::count_parallel(format, Endian::Little, Source::Bytes(black_box(input)), &|_| {}))
                    .expect("in memory");
            },
            || memcpy_parallel(black_box(&copy_src[..bytes]), &mut copy_dst[..bytes]),
        );
        results.push(Measurement {
            op: format!("scan {}", format.name()),
            level: bitexact::cpu::level(),
            form: String::new(),
            bytes,
            memcpy_bytes: bytes,
            one_thread_s: one,
            all_cores_s: all,
            memcpy_one_thread_s: memcpy_one,
            memcpy_all_cores_s: memcpy_all,
        });
    }

    // Every normalize conversion at every CPU level this machine has: one thread (the
    // conversion on the calling thread at that level) and all cores (the CPU backend,
    // with the level chosen as `--cpu-level` would).
    let best = Level::detect();
    for width in [SampleWidth::Unorm8, SampleWidth::Unorm16] {
        for dtype in Dtype::ALL {
            let conversion = conversion(width, dtype);
            let samples = bytes / conversion.in_bytes();
            let (src, out_bytes) = (&input[..samples * conversion.in_bytes()], samples * conversion.out_bytes());
            let memcpy_bytes = out_bytes.max(src.len());
            let (copy_src, copy_dst) = (&copy_src[..memcpy_bytes], &mut copy_dst[..memcpy_bytes]);
            let bits = match width {
                SampleWidth::Unorm8 => 8,
                SampleWidth::Unorm16 => 16,
            };
            let name = format!("normalize unorm{bits}→{}", dtype.name());
            for level in Level::ALL.into_iter().filter(|level| level.check("").is_ok()) {
                if !wanted(&if level == best { name.clone() } else { format!("{name} @{level}") }) {
                    continue;
                }
                let dst = &mut wide[..out_bytes];
                let (one, memcpy_one) = best_of_pair(
                    options.reps,
                    || conversion.convert_on_cpu_at(level, black_box(src), dst).expect("whole elements"),
                    || copy_dst.copy_from_slice(black_box(copy_src)),
                );
                bitexact::cpu::choose(Some(level)).expect("a level this CPU has");
                let (all, memcpy_all) = best_of_pair(
                    options.reps,
                    || CpuBackend.convert(conversion, black_box(src), dst).expect("cpu"),
                    || memcpy_parallel(black_box(copy_src), copy_dst),
                );
                bitexact::cpu::choose(Some(best)).expect("the detected level");
                results.push(Measurement {
                    op: if level == best { name.clone() } else { format!("{name} @{level}") },
                    level,
                    form: conversion.cpu_form(level).to_string(),
                    bytes: src.len(),
                    memcpy_bytes,
                    one_thread_s: one,
                    all_cores_s: all,
                    memcpy_one_thread_s: memcpy_one,
                    memcpy_all_cores_s: memcpy_all,
                });
            }
        }
    }

    for result in &results {
        result.print(threads);
    }
    if let Some(path) = options.json {
        let json =
            serde_json::json!({ "mib": options.mib, "reps": options.reps, "threads": threads, "results": results });
        std::fs::write(&path, json.to_string()).expect("write --json file");
    }
}
