//! CPU throughput of the `scan` and `normalize` loops against memcpy of the same bytes,
//! on one thread and on all cores (`cargo bench -p host --bench cpu_throughput`).
//!
//! Options: `--mib N` (input buffer size, default 256), `--reps N` (best of, default 5),
//! `--json PATH` (also write the results as JSON; `scripts/bench-cpu.sh` reads it).
//!
//! The memcpy baseline copies as many bytes as the operation touches at its wider end:
//! a scan reads N bytes, so memcpy copies N; a conversion writes 4N (UNORM8 → f32), 2N
//! (UNORM16 → f32, UNORM8 → binary16 / bfloat16) or N (UNORM16 → binary16 / bfloat16)
//! bytes of N bytes of samples, so memcpy copies the larger of what it reads and writes.
//! `ours/memcpy` > 1 means faster than copying those bytes.
//!
//! Every `normalize` conversion runs at every CPU level this machine has
//! ([`host::cpu::Level`]); the rows of the level `bitexact` would pick carry the plain
//! name, the others `@level`.

use host::cpu::Level;
use host::files::backend::count::{self, Endian};
use host::files::backend::{Backend, CpuBackend};
use host::files::normalize::image::{SampleWidth, conversion};
use host::files::source::Source;
use host::files::write::Dtype;
use rayon::prelude::*;
use shared::Format;
use std::hint::black_box;

struct Options {
    mib: usize,
    reps: usize,
    json: Option<String>,
}

fn options() -> Options {
    let mut options = Options { mib: 256, reps: 5, json: None };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--mib" => options.mib = args.next().and_then(|v| v.parse().ok()).expect("--mib N"),
            "--reps" => options.reps = args.next().and_then(|v| v.parse().ok()).expect("--reps N"),
            "--json" => options.json = Some(args.next().expect("--json PATH")),
            _ => {} // cargo passes --bench
        }
    }
    options
}

use host::support::parallel::best_of;

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
            "{:<30} 1 thread {:>6.2} GB/s ({:.2}x memcpy of {} MiB)   {threads} threads {:>6.2} GB/s ({:.2}x memcpy)",
            self.op,
            gbps(self.one_thread_s),
            self.memcpy_one_thread_s / self.one_thread_s,
            self.memcpy_bytes >> 20,
            gbps(self.all_cores_s),
            self.memcpy_all_cores_s / self.all_cores_s,
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
        host::cpu::level(),
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
    let mut wide: Vec<f32> = vec![0.0; bytes];
    let mut copy_src = vec![1u8; 4 * bytes];

    let mut memcpy = |n: usize, wide: &mut Vec<f32>| -> (f64, f64) {
        let dst: &mut [u8] = &mut bytemuck::cast_slice_mut(wide.as_mut_slice())[..n];
        let src = &copy_src[..n];
        let one = best_of(options.reps, || dst.copy_from_slice(black_box(src)));
        let all = best_of(options.reps, || memcpy_parallel(black_box(src), dst));
        copy_src[0] = copy_src[0].wrapping_add(1);
        (one, all)
    };

    let mut results = Vec::new();
    let (scan_memcpy_one, scan_memcpy_all) = memcpy(bytes, &mut wide);
    for format in Format::ALL {
        let one = best_of(options.reps, || {
            let counts = count::count_slice(format, Endian::Little, black_box(input), 0);
            assert_eq!(counts.first_non_finite, None);
        });
        let all = best_of(options.reps, || {
            black_box(count::count_parallel(format, Endian::Little, Source::Bytes(black_box(input)), &|_| {}))
                .expect("in memory");
        });
        results.push(Measurement {
            op: format!("scan {}", format.name()),
            level: host::cpu::level(),
            bytes,
            memcpy_bytes: bytes,
            one_thread_s: one,
            all_cores_s: all,
            memcpy_one_thread_s: scan_memcpy_one,
            memcpy_all_cores_s: scan_memcpy_all,
        });
    }

    // Every normalize conversion at every CPU level this machine has: one thread (the
    // conversion on the calling thread at that level) and all cores (the CPU backend,
    // with the level chosen as `--cpu-level` would).
    let best = Level::detect();
    for width in [SampleWidth::Unorm8, SampleWidth::Unorm16] {
        for dtype in [Dtype::F32, Dtype::F16, Dtype::Bf16] {
            let conversion = conversion(width, dtype);
            let samples = bytes / conversion.in_bytes();
            let (src, out_bytes) = (&input[..samples * conversion.in_bytes()], samples * conversion.out_bytes());
            let memcpy_bytes = out_bytes.max(src.len());
            let (memcpy_one, memcpy_all) = memcpy(memcpy_bytes, &mut wide);
            for level in Level::ALL.into_iter().filter(|level| level.check("").is_ok()) {
                let dst = &mut bytemuck::cast_slice_mut::<f32, u8>(&mut wide)[..out_bytes];
                let one = best_of(options.reps, || {
                    conversion.convert_on_cpu_at(level, black_box(src), dst).expect("whole elements")
                });
                host::cpu::choose(Some(level)).expect("a level this CPU has");
                let all = best_of(options.reps, || CpuBackend.convert(conversion, black_box(src), dst).expect("cpu"));
                host::cpu::choose(Some(best)).expect("the detected level");
                let bits = match width {
                    SampleWidth::Unorm8 => 8,
                    SampleWidth::Unorm16 => 16,
                };
                let name = format!("normalize unorm{bits}→{}", dtype.name());
                results.push(Measurement {
                    op: if level == best { name } else { format!("{name} @{level}") },
                    level,
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
