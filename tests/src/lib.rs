//! Cross-crate conformance tests live in `tests/`; this library holds their shared
//! helpers: walking large input ranges on the global rayon pool, exact fixed point for
//! f32 values, a fixed stream of pseudo-random values, and the exact references of the
//! block-scaled recipes ([`mod@reference`]), which `host`'s tests use too.

pub mod reference;

use rayon::prelude::*;
use std::ops::Range;

/// At most how many consecutive inputs one rayon task of [`check_all`] walks in a plain
/// loop: handing rayon every input alone cost more than most checks (the `half` crate's
/// 2^32-input comparison spent 85% of its time in rayon's per-item bookkeeping).
const MAX_RUN: u64 = 1 << 12;

/// Runs per pool thread at least, so that a range of few, heavy inputs (blocks of 2^16,
/// or one scale each) still spreads over every core and ends evenly.
const RUNS_PER_THREAD: u64 = 64;

/// Calls `check(x)` for every `x` in `range` on the global rayon pool (all cores unless
/// `RAYON_NUM_THREADS` says otherwise) and returns the failure message for the smallest
/// failing `x`, or `Ok(())`. Once a failure is found, runs of inputs above it are no
/// longer started.
pub fn check_all(range: Range<u64>, check: impl Fn(u64) -> Result<(), String> + Sync) -> Result<(), String> {
    let len = range.end.saturating_sub(range.start);
    let threads = rayon::current_num_threads() as u64;
    let run = (len / threads.saturating_mul(RUNS_PER_THREAD)).clamp(1, MAX_RUN);
    let first_failure = (0..len.div_ceil(run)).into_par_iter().find_map_first(|index| {
        let start = range.start + index * run;
        (start..start + run.min(range.end - start)).find_map(|x| check(x).err())
    });
    match first_failure {
        Some(message) => Err(message),
        None => Ok(()),
    }
}

/// `f` scaled by 2^64 as an exact integer, for `f` in `[2^-40, 2]` or zero (a normal
/// f32 there: significand times a power of two, shifted left by at least 1).
pub fn scaled(f: f32) -> i128 {
    if f == 0.0 {
        return 0;
    }
    let bits = f.to_bits();
    let (exponent, significand) = ((bits >> 23 & 0xFF) as i32, i128::from(bits & 0x7F_FFFF | 1 << 23));
    significand << (exponent - 150 + 64)
}

/// splitmix64: a fixed, portable stream of 64-bit values (the next one from `state`).
pub fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_failure_is_reported_on_any_pool_size() {
        let check = |x: u64| if x % 9973 == 4321 || x == 3_000_000 { Err(format!("x = {x}")) } else { Ok(()) };
        for threads in [1, 2, 7] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool");
            assert_eq!(pool.install(|| check_all(0..1 << 22, check)), Err("x = 4321".into()), "{threads} threads");
            assert_eq!(pool.install(|| check_all(5000..14_295, check)), Err("x = 14294".into()), "{threads} threads");
            assert_eq!(pool.install(|| check_all(4322..14_294, check)), Ok(()), "{threads} threads");
            // Runs that end inside the range and past it, and an empty range.
            assert_eq!(pool.install(|| check_all(2_999_999..3_000_001, check)), Err("x = 3000000".into()));
            assert_eq!(pool.install(|| check_all(4321..4322, check)), Err("x = 4321".into()));
            assert_eq!(pool.install(|| check_all(7..7, |_| Err("never".into()))), Ok(()));
            // A range that ends at the top of u64: its last run must not overflow.
            let top = |x: u64| if x >= u64::MAX - 2 { Err(format!("x = {x}")) } else { Ok(()) };
            assert_eq!(
                pool.install(|| check_all(u64::MAX - 5000..u64::MAX, top)),
                Err(format!("x = {}", u64::MAX - 2))
            );
            assert_eq!(pool.install(|| check_all(u64::MAX - 1..u64::MAX, top)), Err(format!("x = {}", u64::MAX - 1)));
        }
    }
}
