//! The emulator's cost per hand-over of the baton, coroutines (what `launch` uses)
//! against one OS thread per emulated thread, in the same run: a 2^20-element `u32` max
//! (a grid-stride loop, `block_max_u32`, one atomic per block) in 256-thread blocks.
//!
//! `cargo bench -p device-support --bench handover` (release; `-- --quick` for one
//! repetition, `-- --coroutines-only` to profile the coroutines alone). Each line: the launch's time, its hand-overs, and the time per
//! hand-over, the best of the repetitions; then the OS threads' over the coroutines'.
//! The repetitions after the first reuse the launching thread's coroutine stacks; a
//! last line times one cold launch, on a new thread whose pool is empty (every stack
//! mapped and its pages faulted in).

use device_support::block::{self, AtomicInteger, Dim3, Scope, thread_rank};
use device_support::emulator::{KernelArgs, Launch, Threads, launch_on};
use std::time::{Duration, Instant};

device_support::static_shared!(fn partials: [u32; 32]);

/// The max-reduction kernel's body.
///
/// # Safety
/// `x` holds `n` values; `out` is an aligned `u32` accessed only atomically meanwhile.
unsafe fn max_kernel(x: *const u32, n: u64, out: *mut u32) {
    let mut max = 0;
    // SAFETY: the loop's indices are below `n`.
    device_support::grid_stride(block::lane_x(), n, |i| max = max.max(unsafe { x.add(i).read() }));
    // SAFETY: every thread calls it; the launch's blocks are whole warps.
    let max = unsafe { block::block_max_u32(max, partials()) };
    if thread_rank() == 0 {
        // SAFETY: forwarded from the caller.
        unsafe { u32::atomic_max(out, max, Scope::Device) };
    }
}

/// The best of `repetitions` launches of `blocks` blocks on `threads`: (time, hand-overs).
fn measure(x: &[u32], blocks: u32, threads: Threads, repetitions: usize) -> (Duration, u64) {
    let expected = x.iter().copied().max().unwrap_or(0);
    let setup = Launch { kernel: "max_kernel", grid: Dim3::x(blocks), block: Dim3::x(256), dynamic_shared_bytes: 0 };
    let mut best = (Duration::MAX, 0);
    for _ in 0..repetitions {
        let mut out = 0u32;
        // SAFETY: `x` and `out` outlive the launch; only its threads use them meanwhile.
        let args = unsafe { KernelArgs::new((x.as_ptr(), x.len() as u64, &raw mut out)) };
        let start = Instant::now();
        let body = || {
            let (x, n, out) = args.get();
            // SAFETY: `x` holds `n` values; `out` is one aligned u32.
            unsafe { max_kernel(x, n, out) }
        };
        let handovers = launch_on(&setup, threads, &body).unwrap_or_else(|e| panic!("{e}"));
        let took = start.elapsed();
        assert_eq!(out, expected, "{threads:?}: the max");
        if took < best.0 {
            best = (took, handovers);
        }
    }
    best
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let repetitions = if quick { 1 } else { 5 };
    let kinds: &[Threads] = match std::env::args().any(|a| a == "--coroutines-only") {
        true => &[Threads::Coroutines],
        false => &[Threads::Coroutines, Threads::Os],
    };
    let x: Vec<u32> = (0..1u32 << 20).map(|i| i.wrapping_mul(0x9E37_79B9) >> 1).collect();
    println!("emulator hand-overs: 2^20-element u32 max, 256-thread blocks, best of {repetitions}");
    for blocks in [16, 64] {
        let mut per = Vec::new();
        for &threads in kinds {
            let (took, handovers) = measure(&x, blocks, threads, repetitions);
            let ns = took.as_nanos() as f64 / handovers as f64;
            println!(
                "  {blocks:>3} blocks, {threads:<10?}: {took:>10.2?}, {handovers:>7} hand-overs, {ns:>9.1} ns each"
            );
            per.push(ns);
        }
        if let [coroutines, os] = per[..] {
            println!("  {blocks:>3} blocks: OS threads / coroutines = {:.1}x per hand-over", os / coroutines);
        }
    }
    let (took, handovers) = std::thread::scope(|s| s.spawn(|| measure(&x, 64, Threads::Coroutines, 1)).join())
        .unwrap_or_else(|_| panic!("the cold launch panicked"));
    let ns = took.as_nanos() as f64 / handovers as f64;
    println!("   64 blocks, Coroutines, cold (a new thread: its stacks mapped): {took:>10.2?}, {ns:>9.1} ns each");
}
