//! Data-parallel helpers over an index range, on the global rayon pool (all cores by
//! default; `RAYON_NUM_THREADS` or `bitexact --threads` set its size).

use rayon::prelude::*;

/// The global pool's size for a report: `1 CPU thread`, `2 CPU threads`.
pub fn describe_threads() -> String {
    let n = rayon::current_num_threads();
    format!("{n} CPU thread{}", if n == 1 { "" } else { "s" })
}

/// `(0..len).map(f).collect()`, computed on the rayon pool.
pub fn map_indices<T: Send>(len: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    (0..len).into_par_iter().map(&f).collect()
}

/// How many `i < len` give `Some`, and the `Some` of the smallest such `i`; on the
/// rayon pool. The result does not depend on how the range is split.
pub fn count_where<M: Send>(len: usize, f: impl Fn(usize) -> Option<M> + Sync) -> (u64, Option<M>) {
    let Hits(count, first) = (0..len)
        .into_par_iter()
        .fold(Hits::default, |hits, i| hits.merge(Hits::at(i, f(i))))
        .reduce(Hits::default, Hits::merge);
    (count, first.map(|(_, m)| m))
}

/// A count of hits and the hit with the smallest index: merging is associative and
/// commutative, so any split of the range and any order of merges give the same result.
struct Hits<M>(u64, Option<(usize, M)>);

impl<M> Default for Hits<M> {
    fn default() -> Self {
        Hits(0, None)
    }
}

impl<M> Hits<M> {
    fn at(index: usize, hit: Option<M>) -> Self {
        Hits(u64::from(hit.is_some()), hit.map(|m| (index, m)))
    }

    fn merge(self, other: Self) -> Self {
        let first = match (self.1, other.1) {
            (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
            (a, b) => a.or(b),
        };
        Hits(self.0 + other.0, first)
    }
}

/// The best wall time of `reps` runs of `work` (at least one), in seconds: the CPU
/// benchmarks' measure on a shared, noisy machine.
pub(crate) fn best_of(reps: usize, mut work: impl FnMut()) -> f64 {
    (0..reps.max(1))
        .map(|_| {
            let start = std::time::Instant::now();
            work();
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// The best wall times of `reps` runs each of `work` and of `baseline`, run in turn
/// (`work`, `baseline`, `work`, ...), in seconds: for a ratio against a baseline on a
/// machine whose speed drifts, both sides see the same moments.
pub fn best_of_pair(reps: usize, mut work: impl FnMut(), mut baseline: impl FnMut()) -> (f64, f64) {
    let (mut best_work, mut best_baseline) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..reps.max(1) {
        best_work = best_work.min(best_of(1, &mut work));
        best_baseline = best_baseline.min(best_of(1, &mut baseline));
    }
    (best_work, best_baseline)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_indices_keeps_the_order() {
        assert_eq!(map_indices(100_000, |i| i * 3), (0..100_000).map(|i| i * 3).collect::<Vec<_>>());
        assert!(map_indices(0, |i| i).is_empty());
    }

    #[test]
    fn count_where_counts_and_keeps_the_smallest_index() {
        let (count, first) = count_where(1 << 20, |i| (i % 1000 == 999).then_some(i * 2));
        assert_eq!((count, first), ((1 << 20) / 1000, Some(999 * 2)));
        assert_eq!(count_where(1000, |_| None::<()>), (0, None));
        assert_eq!(count_where(0, Some), (0, None));
    }

    #[test]
    fn count_where_gives_the_same_answer_on_any_pool_size() {
        let hit = |i: usize| (i.wrapping_mul(0x9E37_79B9) % 7919 == 13).then_some(i);
        let expected = count_where(300_000, hit);
        for threads in [1, 2, 3, 8] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool");
            assert_eq!(pool.install(|| count_where(300_000, hit)), expected, "{threads} threads");
        }
        let sequential = (0..300_000).filter_map(hit);
        assert_eq!(expected, (sequential.clone().count() as u64, sequential.min()));
    }

    #[test]
    fn merging_hits_is_commutative_and_associative() {
        let hits = || [Hits(2, Some((5, 'a'))), Hits(0, None), Hits(3, Some((1, 'b'))), Hits(1, Some((9, 'c')))];
        let [a, b, c, d] = hits();
        let left = a.merge(b).merge(c).merge(d);
        let [a, b, c, d] = hits();
        let right = d.merge(c.merge(b.merge(a)));
        assert_eq!((left.0, left.1), (6, Some((1, 'b'))));
        assert_eq!((right.0, right.1), (6, Some((1, 'b'))));
    }
}
