//! CPU verification (every input of a family's domain, against the reference, on the
//! global rayon pool). Timing one primitive on the CPU is the binary's (`timing`, not API).

use crate::table::Variant;
use crate::{domain, reference};
use rayon::prelude::*;
use shared::{Claim, Family};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How many mismatching inputs a report keeps verbatim.
pub(crate) const MISMATCHES_KEPT: usize = 16;

/// Inputs a worker checks at a time.
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
pub struct VerifyProgress {
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
/// the reference (on the global rayon pool).
///
/// ```
/// # mod bitexact { pub use bitexact_verify as verify; }
/// use bitexact::verify::{cpu, table};
/// let variant = table::find("unorm8_times3_int").expect("a variant of the table");
/// let report = cpu::verify(variant);
/// assert_eq!((report.inputs_checked, report.mismatches), (256, 0)); // every UNORM8 code
/// assert!(report.claim_holds(variant.claim));
/// ```
pub fn verify(variant: &Variant) -> Verification {
    verify_all(&[variant], &|_| {}).remove(0)
}

/// Checks every variant of `variants`, returning their reports in the same order.
/// Variants of one family share one pass over the domain (the reference is computed
/// once per input), which is split in chunks over the global rayon pool. `progress` is
/// called about every 100 ms while a family's check runs (from a worker thread), and
/// once when it is done (`done == total`). The reports do not depend on the pool's size.
pub fn verify_all(variants: &[&Variant], progress: &(dyn Fn(VerifyProgress) + Sync)) -> Vec<Verification> {
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

/// Per-variant tallies over part of a domain.
#[derive(Clone, Debug, PartialEq)]
struct Tally {
    mismatches: u64,
    /// The mismatches with the smallest domain indices, at most [`MISMATCHES_KEPT`],
    /// sorted by index.
    first: Vec<(u64, Mismatch)>,
    max_ulp: Option<u64>,
}

impl Tally {
    /// Nothing seen yet; `max_ulp` starts at 0 for the families that have a distance.
    fn new(family: Family) -> Tally {
        Tally { mismatches: 0, first: Vec::new(), max_ulp: reference::ulp_distance(family, 0, 0) }
    }

    /// Counts a mismatch at domain index `index`, in any order of indices.
    fn record(&mut self, family: Family, index: u64, mismatch: Mismatch) {
        self.mismatches += 1;
        self.max_ulp = self.max_ulp.max(reference::ulp_distance(family, mismatch.got, mismatch.expected));
        if self.first.len() < MISMATCHES_KEPT || self.first.last().is_some_and(|&(last, _)| index < last) {
            let at = self.first.partition_point(|&(i, _)| i < index);
            self.first.insert(at, (index, mismatch));
            self.first.truncate(MISMATCHES_KEPT);
        }
    }

    /// The tally of both parts of the domain: the same whichever order they are merged in.
    fn merge(mut self, other: Tally) -> Tally {
        self.mismatches += other.mismatches;
        self.max_ulp = self.max_ulp.max(other.max_ulp);
        self.first.extend(other.first);
        self.first.sort_by_key(|&(index, _)| index);
        self.first.truncate(MISMATCHES_KEPT);
        self
    }
}

/// One rayon fold's state: its tallies and its buffers, reused from chunk to chunk.
struct Worker {
    tallies: Vec<Tally>,
    inputs: Vec<u64>,
    expected: Vec<u64>,
    got: Vec<u64>,
}

impl Worker {
    fn new(family: Family, variants: usize) -> Worker {
        let buffer = || vec![0; CHUNK as usize];
        Worker { tallies: vec![Tally::new(family); variants], inputs: Vec::new(), expected: buffer(), got: buffer() }
    }

    /// Checks every variant on domain indices `first..first + CHUNK` (clipped to the
    /// domain); returns how many inputs that was.
    fn check_chunk(&mut self, family: Family, variants: &[&Variant], first: u64) -> u64 {
        let len = CHUNK.min(domain::count(family) - first);
        self.inputs.clear();
        domain::extend_with_inputs(family, first, len, &mut self.inputs);
        let (inputs, expected, got) = (&self.inputs, &mut self.expected[..len as usize], &mut self.got[..len as usize]);
        reference::expected_many(family, inputs, expected);
        for (variant, tally) in variants.iter().zip(&mut self.tallies) {
            variant.ops.eval_many(inputs, got);
            if got == expected {
                continue;
            }
            for (offset, ((&got, &expected), &input)) in got.iter().zip(&*expected).zip(inputs).enumerate() {
                if got != expected {
                    tally.record(family, first + offset as u64, Mismatch { input, got, expected });
                }
            }
        }
        len
    }
}

/// How often a running family's progress is reported.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// Calls `progress` from whichever worker finishes a chunk once [`PROGRESS_EVERY`] has
/// passed since the last call, so no thread waits on a timer.
struct Ticker<'a> {
    progress: &'a (dyn Fn(VerifyProgress) + Sync),
    family: Family,
    total: u64,
    start: Instant,
    done: AtomicU64,
    next_ms: AtomicU64,
}

impl Ticker<'_> {
    fn advance(&self, inputs: u64) {
        let done = self.done.fetch_add(inputs, Ordering::Relaxed) + inputs;
        let elapsed = self.start.elapsed();
        let now_ms = elapsed.as_millis() as u64;
        let due = self.next_ms.load(Ordering::Relaxed);
        let next = now_ms + PROGRESS_EVERY.as_millis() as u64;
        if done < self.total
            && now_ms >= due
            && self.next_ms.compare_exchange(due, next, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            (self.progress)(VerifyProgress { family: self.family, done, total: self.total, elapsed });
        }
    }
}

fn verify_family(
    family: Family,
    variants: &[&Variant],
    progress: &(dyn Fn(VerifyProgress) + Sync),
) -> Vec<Verification> {
    let total = domain::count(family);
    let ticker = Ticker {
        progress,
        family,
        total,
        start: Instant::now(),
        done: AtomicU64::new(0),
        next_ms: AtomicU64::new(PROGRESS_EVERY.as_millis() as u64),
    };
    let chunks = total.div_ceil(CHUNK);
    let tallies = (0..chunks)
        .into_par_iter()
        .fold(
            || Worker::new(family, variants.len()),
            |mut worker, chunk| {
                ticker.advance(worker.check_chunk(family, variants, chunk * CHUNK));
                worker
            },
        )
        .map(|worker| worker.tallies)
        .reduce(
            || vec![Tally::new(family); variants.len()],
            |a, b| a.into_iter().zip(b).map(|(a, b)| a.merge(b)).collect(),
        );
    progress(VerifyProgress { family, done: total, total, elapsed: ticker.start.elapsed() });
    variants
        .iter()
        .zip(tallies)
        .map(|(variant, tally)| Verification {
            variant: variant.name,
            inputs_checked: total,
            mismatches: tally.mismatches,
            first_mismatches: tally.first.into_iter().map(|(_, m)| m).collect(),
            max_ulp: tally.max_ulp,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report of `mismatches` wrong inputs out of 256, at most `max_ulp` ULPs off.
    fn report(mismatches: u64, max_ulp: Option<u64>) -> Verification {
        Verification { variant: "test", inputs_checked: 256, mismatches, first_mismatches: Vec::new(), max_ulp }
    }

    fn mismatch(input: u64) -> Mismatch {
        Mismatch { input, got: input + 1, expected: input }
    }

    #[test]
    fn a_tally_keeps_the_first_mismatches_whatever_order_they_come_in() {
        let family = Family::UnormToF32 { bits: 8 };
        let mut forward = Tally::new(family);
        let mut backward = Tally::new(family);
        for i in 0..40 {
            forward.record(family, i * 3, mismatch(i * 3));
            backward.record(family, (39 - i) * 3, mismatch((39 - i) * 3));
        }
        assert_eq!(forward, backward);
        assert_eq!(forward.mismatches, 40);
        assert_eq!(
            forward.first.iter().map(|&(i, _)| i).collect::<Vec<_>>(),
            (0..16).map(|i| i * 3).collect::<Vec<_>>()
        );
    }

    #[test]
    fn merging_tallies_is_commutative() {
        let family = Family::UnormToF32 { bits: 8 };
        let (mut even, mut odd) = (Tally::new(family), Tally::new(family));
        for i in 0..30 {
            let tally = if i % 2 == 0 { &mut even } else { &mut odd };
            tally.record(family, i, mismatch(i));
        }
        let merged = even.clone().merge(odd.clone());
        assert_eq!(merged, odd.merge(even));
        assert_eq!(merged.mismatches, 30);
        assert_eq!(merged.first.iter().map(|&(i, _)| i).collect::<Vec<_>>(), (0..16).collect::<Vec<_>>());
        assert_eq!(merged.max_ulp, Some(1));
    }

    #[test]
    fn a_verification_does_not_depend_on_the_pool_size() {
        // 2^16 inputs (four chunks), 2046 of them wrong on purpose.
        let variant = crate::table::find("f16_finite_unordered_lt_inf").expect("in the table");
        let all_wrong = Verification::all_mismatching_inputs(variant);
        for threads in [1, 2, 5] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool");
            let report = pool.install(|| verify(variant));
            assert_eq!(report.mismatches, all_wrong.len() as u64, "{threads} threads");
            let first: Vec<u64> = report.first_mismatches.iter().map(|m| m.input).collect();
            assert_eq!(first, all_wrong[..MISMATCHES_KEPT], "{threads} threads");
        }
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
