//! The reference on a run of consecutive f32 inputs, computed only where it can change.
//!
//! Every f32 → code rounding that the proofs walk (to binary16, bfloat16, FP8, FP4 E2M1 or
//! UNORM, of `x` or of `x · s` for a fixed `s > 0`, rounded once or in steps, saturating or
//! overflowing to a code above every finite one) is *monotone* on the finite f32s of
//! one sign, taken in the order of their bit patterns (which is the order of their
//! magnitudes): each rounding step is, and so is their composition. A monotone function
//! that takes one value at both ends of a range takes it on the whole range. So
//! [`fill_f32_monotone`] calls the reference at the ends of a run, fills the run when the
//! two agree, and otherwise splits it in halves: a run of `n` inputs with `t` changes of
//! result costs about `2 + t · log2(n)` calls instead of `n`, and every input still gets
//! the reference's exact result.
//!
//! What this rests on, stated so that a reader can check it: the function passed in is
//! monotone on each finite one-signed segment, which is a property of the exact rounding
//! it computes (a theorem), not of the code under test. Each value that bisection looks
//! at inside a range is also checked to lie between the range's end values, which catches
//! some functions that are not monotone, but not all: a run whose ends agree is filled
//! without a look inside, so the promise is the caller's. NaNs and infinities (whose
//! results follow no order) are computed one by one.

/// The segments of the f32 bit patterns, each as its first pattern and whether it holds
/// finite values, on which the walked roundings are monotone, or which are computed
/// input by input: `+0..+inf` (finite, positive), `+inf..-0` (+inf and the positive
/// NaNs), `-0..-inf` (finite, negative), `-inf..` (−inf and the negative NaNs). The last
/// entry, 2^32, only ends the one before.
const SEGMENTS: [(u64, bool); 5] =
    [(0, true), (0x7F80_0000, false), (0x8000_0000, true), (0xFF80_0000, false), (1 << 32, false)];

/// `out[i] = f(first + i)` for the f32 bit patterns `first..first + out.len()`, with
/// `f` called only at the ends of the runs where its result changes. `f` must be monotone
/// on the finite f32s of each sign (either direction), taken in the order of their bit
/// patterns: every f32 → code rounding is (to binary16, bfloat16, FP8, FP4 or UNORM, of
/// `x` or of `x · s` for a fixed `s > 0`, rounded once or in steps). A monotone function
/// that takes one value at both ends of a run takes it on the whole run, so a run whose
/// ends agree is filled and any other is split in halves: `n` inputs with `t` changes of
/// result cost about `2 + t · log2(n)` calls of `f` instead of `n`, and every input still
/// gets `f`'s exact result. That `f` is monotone is the caller's promise (a property of
/// the rounding it computes); it is checked only at the values bisection looks at. `f` is
/// called on every NaN and infinity of the range, one by one.
///
/// Panics if the range passes 2^32, or if `f` is found not to be monotone: a value that
/// bisection looks at inside a range and that does not lie between the values at its
/// ends.
///
/// ```
/// # mod bitexact { pub use bitexact_verify as verify; }
/// use bitexact::verify::reference::fill_f32_monotone;
/// // The top 18 bits of the pattern are monotone in it: 2^16 inputs, 4 distinct results.
/// let first = 1.0f32.to_bits();
/// let mut out = vec![0u32; 1 << 16];
/// fill_f32_monotone(u64::from(first), &mut out, |x| x >> 14);
/// assert!(out.iter().enumerate().all(|(i, &r)| r == (first + i as u32) >> 14));
/// ```
pub fn fill_f32_monotone<T: Copy + Ord>(first: u64, out: &mut [T], f: impl Fn(u32) -> T) {
    let end = first + out.len() as u64;
    assert!(end <= 1 << 32, "f32 bit patterns {first:#x}..{end:#x} pass 2^32");
    for segment in SEGMENTS.windows(2) {
        let ((segment_start, finite), (segment_end, _)) = (segment[0], segment[1]);
        let (start, stop) = (first.max(segment_start), end.min(segment_end));
        if start >= stop {
            continue;
        }
        let part = &mut out[(start - first) as usize..(stop - first) as usize];
        if finite {
            let (low, high) = (start as u32, (stop - 1) as u32);
            let at_low = f(low);
            let at_high = if high == low { at_low } else { f(high) };
            fill_between(u64::from(low), part, at_low, at_high, &|x| f(x as u32));
        } else {
            for (o, x) in part.iter_mut().zip(start as u32..=(stop - 1) as u32) {
                *o = f(x);
            }
        }
    }
}

/// `out[i] = f(first + i)` for the integers `first..first + out.len()`, with `f` called
/// only at the ends of the runs where its result changes, as [`fill_f32_monotone`] does
/// on f32 bit patterns: `f` must be monotone (either direction) on the whole range. For a
/// reference that is a rounding of a quotient with a growing numerator, say.
///
/// Panics if `f` is found not to be monotone (a value that bisection looks at inside a
/// range and that does not lie between the values at its ends).
///
/// ```
/// # mod bitexact { pub use bitexact_verify as verify; }
/// use bitexact::verify::reference::fill_monotone;
/// // v / 1000 rounded down to tenths, for v in 0..=1000: 11 distinct results.
/// let mut out = vec![0u64; 1001];
/// fill_monotone(0, &mut out, |v| v / 100);
/// assert!(out.iter().enumerate().all(|(v, &r)| r == v as u64 / 100));
/// ```
pub fn fill_monotone<T: Copy + Ord>(first: u64, out: &mut [T], f: impl Fn(u64) -> T) {
    let Some(last) = out.len().checked_sub(1) else { return };
    let at_low = f(first);
    let at_high = if last == 0 { at_low } else { f(first + last as u64) };
    fill_between(first, out, at_low, at_high, &f);
}

/// Fills `out`, the results of the closed range `low..=low + out.len() - 1` (at least one
/// input), given the results at its ends, `at_low` and `at_high`: with that value if they
/// agree, else by halves that share their middle input.
fn fill_between<T: Copy + Ord>(low: u64, out: &mut [T], at_low: T, at_high: T, f: &impl Fn(u64) -> T) {
    let last = out.len() - 1;
    if at_low == at_high {
        out.fill(at_low);
        return;
    }
    if last <= 1 {
        (out[0], out[last]) = (at_low, at_high);
        return;
    }
    let middle = last / 2;
    let at_middle = f(low + middle as u64);
    assert!(
        at_low.min(at_high) <= at_middle && at_middle <= at_low.max(at_high),
        "the function is not monotone on the inputs {low:#x}..={:#x}: its value at {:#x} is not between its values at the ends",
        low + last as u64,
        low + middle as u64
    );
    fill_between(low, &mut out[..=middle], at_low, at_middle, f);
    fill_between(low + middle as u64, &mut out[middle..], at_middle, at_high, f);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::{NarrowConversion, f32_to_unorm_exact};
    use shared::narrow::Overflow;
    use shared::{Family, Format};
    use std::cell::Cell;

    /// The reference's result for `x`, computed on that input alone (not through
    /// `expected`, which fills by runs too).
    fn on_its_own(family: Family, x: u32) -> u64 {
        match family {
            Family::F32ToNarrow { format, overflow } => NarrowConversion::new(format, overflow).convert(x),
            Family::F32ToUnorm { bits } => f32_to_unorm_exact(bits, x).0,
            _ => unreachable!("{family} is not a rounding of f32"),
        }
    }

    /// The families whose reference `expected_many` fills by runs.
    fn rounding_families() -> Vec<Family> {
        let narrow =
            [Format::Binary16, Format::Bfloat16, Format::Fp8E4m3, Format::Fp8E5m2].into_iter().flat_map(|format| {
                [Overflow::Standard, Overflow::SatFinite].map(|overflow| Family::F32ToNarrow { format, overflow })
            });
        narrow.chain([8, 16].map(|bits| Family::F32ToUnorm { bits })).collect()
    }

    /// Runs that start just below every binade's first f32 (both signs, so +0/−0,
    /// ±inf and the NaNs too), and the ends of the range.
    fn runs() -> Vec<(u64, usize)> {
        let mut runs: Vec<(u64, usize)> = (0..256u64)
            .flat_map(|e| [e << 23, 1 << 31 | e << 23])
            .map(|start| (start.saturating_sub(300), 1000))
            .collect();
        runs.extend([(0, 5000), ((1 << 32) - 5000, 5000), (0x7F7F_F000, 0x2000), (0x3F80_0000, 1), (0x3F80_0000, 2)]);
        runs
    }

    #[test]
    fn runs_filled_by_bisection_equal_the_reference_on_each_input() {
        let families = rounding_families();
        assert_eq!(families.len(), 10, "{families:?}");
        for family in families {
            for (first, len) in runs() {
                let inputs: Vec<u64> = (first..first + len as u64).collect();
                let mut by_runs = vec![0; len];
                crate::reference::expected_many(family, &inputs, &mut by_runs);
                for (&x, &got) in inputs.iter().zip(&by_runs) {
                    assert_eq!(got, on_its_own(family, x as u32), "{family} at {x:#x}, in the run {first:#x} + {len}");
                }
            }
        }
    }

    #[test]
    fn a_run_calls_the_function_only_where_its_result_changes() {
        // Truncation to bfloat16's bits: 2^16 inputs, results changing every 2^14.
        let calls = Cell::new(0);
        let mut out = vec![0u32; 1 << 16];
        fill_f32_monotone(0x3F80_0000, &mut out, |x| {
            calls.set(calls.get() + 1);
            x >> 14
        });
        assert!(out.iter().zip(0x3F80_0000u32..).all(|(&r, x)| r == x >> 14));
        assert!(calls.get() < 100, "{} calls", calls.get());
    }

    #[test]
    fn nans_and_infinities_are_computed_one_by_one() {
        // Constant on the finite f32s, and on ±inf and the NaNs a value that follows no
        // order: a run filled from its ends would get those wrong. Runs across each edge of
        // the non-finite segments, and the whole of the last ones.
        let f = |x: u32| if x & 0x7FFF_FFFF >= 0x7F80_0000 { x % 3 + 1 } else { 0 };
        for (first, len) in [
            (0x7F7F_FF00u64, 0x200usize),
            (0x7FFF_FF00, 0x200),
            (0xFF7F_FF00, 0x200),
            (0xFFFF_FF00, 0x100),
            (0x7F80_0000, 0x80_0000),
        ] {
            let mut out = vec![0u32; len];
            fill_f32_monotone(first, &mut out, f);
            for (x, &got) in (first..).zip(&out) {
                assert_eq!(got, f(x as u32), "{x:#x}");
            }
        }
    }

    #[test]
    fn a_single_input_is_computed_once() {
        let calls = Cell::new(0);
        let mut out = [0u32; 1];
        fill_f32_monotone(0x3F80_0000, &mut out, |x| {
            calls.set(calls.get() + 1);
            x
        });
        assert_eq!((out[0], calls.get()), (0x3F80_0000, 1));
    }

    #[test]
    #[should_panic(expected = "not monotone")]
    fn a_function_found_not_monotone_fails() {
        // 0 at the first input, 10 at the last, and 50 at the middle one, which bisection
        // looks at first. (A function equal at both ends of a run is taken to be constant
        // there: that is what monotone means, and the caller's to promise.)
        let mut out = vec![0u32; 1000];
        fill_f32_monotone(0, &mut out, |x| match x {
            499 => 50,
            999 => 10,
            _ => 0,
        });
    }
}
