//! Data-parallel helpers on all cores (`std::thread::scope`, no dependency).

use std::num::NonZeroUsize;

/// Number of worker threads: the available parallelism.
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, NonZeroUsize::get)
}

/// Contiguous index ranges splitting `0..len` into at most `threads()` parts.
fn ranges(len: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let chunk = len.div_ceil(threads()).max(1);
    (0..len).step_by(chunk).map(move |start| start..(start + chunk).min(len))
}

/// `(0..len).map(f).collect()`, computed on all cores.
pub fn map_indices<T: Send + Default + Clone>(len: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let mut out = vec![T::default(); len];
    std::thread::scope(|scope| {
        let mut rest = out.as_mut_slice();
        for range in ranges(len) {
            let (part, tail) = rest.split_at_mut(range.len());
            rest = tail;
            let f = &f;
            scope.spawn(move || part.iter_mut().zip(range).for_each(|(slot, i)| *slot = f(i)));
        }
    });
    out
}

/// How many `i < len` give `Some`, and the `Some` of the smallest such `i`; on all cores.
pub fn count_where<M: Send>(len: usize, f: impl Fn(usize) -> Option<M> + Sync) -> (u64, Option<M>) {
    std::thread::scope(|scope| {
        let workers: Vec<_> = ranges(len)
            .map(|range| {
                let f = &f;
                scope.spawn(move || {
                    let mut found = range.filter_map(f);
                    let first = found.next();
                    (u64::from(first.is_some()) + found.count() as u64, first)
                })
            })
            .collect();
        // Ranges are in index order, so the first worker with a hit has the first hit.
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .fold((0, None), |(count, first), (c, f)| (count + c, first.or(f)))
    })
}
