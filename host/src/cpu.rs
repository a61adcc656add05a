//! CPU verification (every input of a family's domain, against the reference, on all
//! cores) and CPU timing.

use crate::table::{Element, Variant};
use crate::{domain, reference};
use shared::{Claim, Family, Primitive, Stored};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How many mismatching inputs a report keeps verbatim.
pub const MISMATCHES_KEPT: usize = 16;

/// Inputs handed to a worker thread at a time.
const CHUNK: u64 = 1 << 14;

/// A variant's result on one input where it differs from the reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Mismatch {
    /// Input bits.
    pub input: u64,
    /// The variant's stored result bits.
    pub got: u64,
    /// The reference's stored result bits.
    pub expected: u64,
}

/// Outcome of checking one variant on every input of its family's domain.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Verification {
    /// Variant name.
    pub variant: &'static str,
    /// Inputs checked: the whole domain.
    pub inputs_checked: u64,
    /// Inputs on which the variant's bits differ from the reference's.
    pub mismatches: u64,
    /// The first few of those, in domain order.
    pub first_mismatches: Vec<Mismatch>,
    /// Largest distance in ULPs from the reference (numeric results only: f32 ULPs, or
    /// codes for UNORM results).
    pub max_ulp: Option<u64>,
}

impl Verification {
    /// Whether the result bears out the variant's claim, as [`Claim`] defines it: an
    /// exact variant matches on every input; a 1-ULP variant is within one ULP on every
    /// input and wrong on at least one; a deliberately incorrect variant is wrong on at
    /// least one input. So a 1-ULP or incorrect variant that has become exact breaks
    /// its claim too: its row in the table is then wrong, and `bitexact verify` says so.
    /// (Where an incorrect variant fails is pinned by its own test.)
    pub fn claim_holds(&self, claim: Claim) -> bool {
        let wrong_somewhere = self.mismatches > 0;
        match claim {
            Claim::Exact => !wrong_somewhere,
            Claim::OneUlp => wrong_somewhere && self.max_ulp.is_some_and(|ulp| ulp <= 1),
            Claim::Incorrect => wrong_somewhere,
        }
    }

    /// Every input in the domain on which the variant differs from the reference, in
    /// domain order (one thread: meant for the small domains).
    pub fn all_mismatching_inputs(variant: &Variant) -> Vec<u64> {
        domain::inputs(variant.family)
            .filter(|&x| variant.ops.eval(x) != reference::expected(variant.family, x))
            .collect()
    }
}

/// Where a verification run is, for progress reports.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// The family being checked.
    pub family: Family,
    /// Inputs of its domain checked so far.
    pub done: u64,
    /// Inputs in its domain.
    pub total: u64,
    /// Time since this family's check began.
    pub elapsed: Duration,
}

/// Checks `variant` on every input of its family's domain, comparing stored bits with
/// the reference (on all cores).
pub fn verify(variant: &Variant) -> Verification {
    verify_all(&[variant], &|_| {}).remove(0)
}

/// Checks every variant of `variants`, returning their reports in the same order.
/// Variants of one family share one pass over the domain (the reference is computed
/// once per input), which is split between all cores. `progress` is called about every
/// 100 ms while a family's check runs, and once when it is done (`done == total`).
pub fn verify_all(variants: &[&Variant], progress: &(dyn Fn(Progress) + Sync)) -> Vec<Verification> {
    let mut reports: Vec<Option<Verification>> = vec![None; variants.len()];
    for family in crate::table::families_of(variants.iter().copied()) {
        let positions: Vec<usize> = (0..variants.len()).filter(|&i| variants[i].family == family).collect();
        let members: Vec<&Variant> = positions.iter().map(|&i| variants[i]).collect();
        for (i, report) in positions.into_iter().zip(verify_family(family, &members, progress)) {
            reports[i] = Some(report);
        }
    }
    reports.into_iter().map(|r| r.expect("every variant belongs to a family that was checked")).collect()
}

/// Per-variant tallies of one worker thread.
#[derive(Clone, Default)]
struct Tally {
    mismatches: u64,
    first: Vec<(u64, Mismatch)>,
    max_ulp: Option<u64>,
}

fn verify_family(family: Family, variants: &[&Variant], progress: &(dyn Fn(Progress) + Sync)) -> Vec<Verification> {
    let total = domain::count(family);
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(total.div_ceil(CHUNK) as usize);
    let start = Instant::now();
    let worker = || {
        let initial_ulp = reference::ulp_distance(family, 0, 0);
        let mut tallies = vec![Tally { max_ulp: initial_ulp, ..Tally::default() }; variants.len()];
        let (mut inputs, mut expected, mut got) = (Vec::new(), vec![0; CHUNK as usize], vec![0; CHUNK as usize]);
        loop {
            let first = next.fetch_add(CHUNK, Ordering::Relaxed);
            if first >= total {
                break;
            }
            let end = (first + CHUNK).min(total);
            inputs.clear();
            domain::extend_with_inputs(family, first, end - first, &mut inputs);
            let len = inputs.len();
            reference::expected_many(family, &inputs, &mut expected[..len]);
            for (variant, tally) in variants.iter().zip(&mut tallies) {
                variant.ops.eval_many(&inputs, &mut got[..len]);
                if got[..len] == expected[..len] {
                    continue;
                }
                for (offset, ((&got, &expected), &input)) in got.iter().zip(&expected).zip(&inputs).enumerate() {
                    if got != expected {
                        tally.mismatches += 1;
                        if tally.first.len() < MISMATCHES_KEPT {
                            tally.first.push((first + offset as u64, Mismatch { input, got, expected }));
                        }
                        tally.max_ulp = tally.max_ulp.max(reference::ulp_distance(family, got, expected));
                    }
                }
            }
            done.fetch_add(len as u64, Ordering::Relaxed);
        }
        tallies
    };
    let per_thread: Vec<Vec<Tally>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads).map(|_| scope.spawn(worker)).collect();
        while !handles.iter().all(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_millis(100));
            let done = done.load(Ordering::Relaxed);
            if done < total {
                progress(Progress { family, done, total, elapsed: start.elapsed() });
            }
        }
        handles.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    });
    progress(Progress { family, done: total, total, elapsed: start.elapsed() });
    variants
        .iter()
        .enumerate()
        .map(|(k, variant)| {
            let mut first: Vec<(u64, Mismatch)> = per_thread.iter().flat_map(|t| t[k].first.iter().copied()).collect();
            first.sort_by_key(|&(index, _)| index);
            first.truncate(MISMATCHES_KEPT);
            Verification {
                variant: variant.name,
                inputs_checked: total,
                mismatches: per_thread.iter().map(|t| t[k].mismatches).sum(),
                first_mismatches: first.into_iter().map(|(_, m)| m).collect(),
                max_ulp: per_thread.iter().map(|t| t[k].max_ulp).max().flatten(),
            }
        })
        .collect()
}

/// Input `i` of a timing buffer: a fixed scramble of `i` over the whole domain, so a
/// branchy variant sees unpredictable data.
fn timing_input<T: Element>(i: usize) -> T {
    T::from_u64((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32)
}

/// Best-of-`reps` CPU nanoseconds per element of `P` over a buffer of `len` inputs
/// (this machine's CPU, one thread; not a GPU figure).
pub fn ns_per_element<P>(len: usize, reps: usize) -> f64
where
    P: Primitive,
    P::In: Element,
    <P::Out as Stored>::Bits: Element,
{
    let input: Vec<P::In> = (0..len).map(timing_input).collect();
    let mut output: Vec<<P::Out as Stored>::Bits> = vec![bytemuck::Zeroable::zeroed(); len];
    let mut best = f64::INFINITY;
    for _ in 0..reps.max(1) + 1 {
        let start = Instant::now();
        for (out, &x) in output.iter_mut().zip(black_box(&input)) {
            *out = P::apply(x).to_stored();
        }
        black_box(&mut output);
        best = best.min(start.elapsed().as_secs_f64());
    }
    best * 1e9 / len.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report of `mismatches` wrong inputs out of 256, at most `max_ulp` ULPs off.
    fn report(mismatches: u64, max_ulp: Option<u64>) -> Verification {
        Verification { variant: "test", inputs_checked: 256, mismatches, first_mismatches: Vec::new(), max_ulp }
    }

    #[test]
    fn an_exact_claim_holds_only_without_mismatches() {
        assert!(report(0, Some(0)).claim_holds(Claim::Exact));
        assert!(report(0, None).claim_holds(Claim::Exact));
        assert!(!report(1, Some(1)).claim_holds(Claim::Exact));
        assert!(!report(3, None).claim_holds(Claim::Exact));
    }

    #[test]
    fn a_one_ulp_claim_needs_a_mismatch_and_at_most_one_ulp() {
        assert!(report(126, Some(1)).claim_holds(Claim::OneUlp));
        assert!(!report(0, Some(0)).claim_holds(Claim::OneUlp), "exact everywhere: the claim should say exact");
        assert!(!report(5, Some(2)).claim_holds(Claim::OneUlp), "two ULPs off");
        assert!(!report(5, None).claim_holds(Claim::OneUlp), "no ULP distance for this family");
    }

    #[test]
    fn an_incorrect_claim_needs_a_mismatch() {
        assert!(report(2046, None).claim_holds(Claim::Incorrect));
        assert!(report(1, Some(7)).claim_holds(Claim::Incorrect));
        assert!(!report(0, None).claim_holds(Claim::Incorrect), "right on every input: no longer wrong on purpose");
        assert!(!report(0, Some(0)).claim_holds(Claim::Incorrect));
    }
}
