//! CPU timing of one primitive: best-of-N nanoseconds per element on one thread of
//! this machine (never a GPU figure).

use bitexact_support::element::Element;
use shared::{Primitive, Stored};
use std::hint::black_box;
use std::time::Instant;

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
