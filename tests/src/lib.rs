//! Cross-crate conformance tests live in `tests/`; this library holds their shared
//! helper for walking large input ranges on all cores.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// Calls `check(x)` for every `x` in `range`, split between all cores in chunks, and
/// returns the failure message for the smallest failing `x` (checking stops early once
/// a failure is found), or `Ok(())`.
pub fn check_all(range: Range<u64>, check: impl Fn(u64) -> Result<(), String> + Sync) -> Result<(), String> {
    const CHUNK: u64 = 1 << 16;
    let next = AtomicU64::new(range.start);
    let first_failure = AtomicU64::new(u64::MAX);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let failures: Vec<(u64, String)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    loop {
                        let start = next.fetch_add(CHUNK, Ordering::Relaxed);
                        if start >= range.end || start > first_failure.load(Ordering::Relaxed) {
                            return None;
                        }
                        for x in start..(start + CHUNK).min(range.end) {
                            if let Err(message) = check(x) {
                                first_failure.fetch_min(x, Ordering::Relaxed);
                                return Some((x, message));
                            }
                        }
                    }
                })
            })
            .collect();
        workers.into_iter().filter_map(|w| w.join().expect("checker thread panicked")).collect()
    });
    match failures.into_iter().min_by_key(|(x, _)| *x) {
        Some((_, message)) => Err(message),
        None => Ok(()),
    }
}
