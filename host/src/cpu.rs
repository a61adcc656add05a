//! CPU verification (exhaustive, against the reference) and CPU timing.

use crate::reference;
use crate::table::{Element, Variant};
use shared::{Claim, Primitive, Stored};
use std::hint::black_box;
use std::time::Instant;

/// How many mismatching inputs a report keeps verbatim.
pub const MISMATCHES_KEPT: usize = 16;

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
    /// The first few of those, in input order.
    pub first_mismatches: Vec<Mismatch>,
    /// Largest distance in ULPs from the reference (float results only).
    pub max_ulp: Option<u64>,
}

impl Verification {
    /// Whether the result bears out the variant's claim: exact variants match on every
    /// input, 1-ULP variants stay within one ULP. Deliberately incorrect variants make
    /// no claim the report can check; their tests pin where they fail.
    pub fn claim_holds(&self, claim: Claim) -> bool {
        match claim {
            Claim::Exact => self.mismatches == 0,
            Claim::OneUlp => self.max_ulp.is_some_and(|ulp| ulp <= 1),
            Claim::Incorrect => true,
        }
    }

    /// Every input in the domain on which the variant differs from the reference.
    pub fn all_mismatching_inputs(variant: &Variant) -> Vec<u64> {
        (0..variant.family.domain_size())
            .filter(|&x| variant.ops.eval(x) != reference::expected(variant.family, x))
            .collect()
    }
}

/// Checks `variant` on every input of its family's domain, comparing stored bits with
/// the reference.
pub fn verify(variant: &Variant) -> Verification {
    let family = variant.family;
    let mut report = Verification {
        variant: variant.name,
        inputs_checked: family.domain_size(),
        mismatches: 0,
        first_mismatches: Vec::new(),
        max_ulp: reference::ulp_distance(family, 0, 0),
    };
    for input in 0..family.domain_size() {
        let got = variant.ops.eval(input);
        let expected = reference::expected(family, input);
        if let Some(ulp) = reference::ulp_distance(family, got, expected) {
            report.max_ulp = report.max_ulp.max(Some(ulp));
        }
        if got != expected {
            report.mismatches += 1;
            if report.first_mismatches.len() < MISMATCHES_KEPT {
                report.first_mismatches.push(Mismatch { input, got, expected });
            }
        }
    }
    report
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
