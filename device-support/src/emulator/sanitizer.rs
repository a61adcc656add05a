//! The emulator's sanitizer for shared memory: what NVIDIA's compute-sanitizer calls
//! racecheck, memcheck and initcheck, on the CPU.
//!
//! Every access through a [`crate::block::SharedSlice`] and every atomic on shared memory
//! is recorded per byte with its thread, its moment in the block's happens-before order
//! and its call site. Two accesses to one byte by different threads, at least one a plain
//! write (or one atomic and one plain), with nothing ordering them, are a race; a plain
//! read of a byte that no thread of the block has written is an uninitialised read.
//!
//! **What orders two accesses:** a block barrier between them, or a chain of warp
//! barriers (`sync_warp`) between them whose masks link the two threads: a warp barrier
//! orders only the lanes it names, as on Volta and later, where a warp's lanes no longer
//! run in lockstep. Shuffles and votes order no access (PTX promises memory ordering for
//! `bar.warp.sync` alone). Program order orders a thread's own accesses. Atomics and
//! fences do not order other accesses here (a flag set by an atomic and read in a spin
//! loop is not modelled): code that orders shared memory that way is reported.

use super::error::{AccessKind, Site};
use shared::launch::WARP_SIZE;
use std::vec::Vec;

/// Where a thread is in the block's happens-before order: how many barriers the block
/// has completed, and the thread's own count of warp operations it took part in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Moment {
    pub(super) epoch: u32,
    pub(super) clock: u32,
}

/// One recorded access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Access {
    pub(super) rank: u32,
    pub(super) at: Moment,
    pub(super) kind: AccessKind,
    pub(super) site: Site,
}

/// The block's happens-before order: the barrier count and, per thread, a vector clock
/// over the lanes of its warp (a warp barrier joins the clocks of the lanes it names).
pub(super) struct Order {
    epoch: u32,
    clocks: Vec<[u32; WARP_SIZE as usize]>,
}

impl Order {
    /// A block of `threads` threads at its start.
    pub(super) fn new(threads: u32) -> Order {
        Order { epoch: 0, clocks: std::vec![[0; WARP_SIZE as usize]; threads as usize] }
    }

    /// Thread `rank`'s moment now.
    pub(super) fn moment(&self, rank: u32) -> Moment {
        Moment { epoch: self.epoch, clock: self.clocks[rank as usize][(rank % WARP_SIZE) as usize] }
    }

    /// A block barrier completed: everything before it happened before everything after.
    pub(super) fn barrier(&mut self) {
        self.epoch += 1;
    }

    /// The warp barrier of `warp` over `mask` completed: each lane of `mask` ends its
    /// segment (its own clock ticks), and all of them learn every other's clock.
    pub(super) fn warp_barrier(&mut self, warp: u32, mask: u32) {
        let ranks =
            || (0..WARP_SIZE).filter(move |l| mask & (1 << l) != 0).map(move |l| (warp * WARP_SIZE + l) as usize);
        let mut joined = [0; WARP_SIZE as usize];
        for r in ranks() {
            self.clocks[r][r % WARP_SIZE as usize] += 1;
            for (j, c) in joined.iter_mut().zip(&self.clocks[r]) {
                *j = (*j).max(*c);
            }
        }
        for r in ranks() {
            self.clocks[r] = joined;
        }
    }

    /// Whether `earlier` happened before thread `rank`'s next step.
    pub(super) fn ordered(&self, earlier: &Access, rank: u32) -> bool {
        earlier.rank == rank
            || earlier.at.epoch < self.epoch
            || (earlier.rank / WARP_SIZE == rank / WARP_SIZE
                && self.clocks[rank as usize][(earlier.rank % WARP_SIZE) as usize] > earlier.at.clock)
    }

    /// A new block: no barrier, no warp barrier yet.
    pub(super) fn reset(&mut self) {
        self.epoch = 0;
        self.clocks.iter_mut().for_each(|c| *c = [0; WARP_SIZE as usize]);
    }
}

/// What went wrong with one access to one byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Conflict {
    /// It races with this earlier access.
    Race(Access),
    /// A read (plain or atomic) of a byte no thread of the block has written.
    Uninitialised,
}

/// The accesses that a later access to one byte of shared memory must be checked
/// against: whether any thread of the block has written it, the last plain write, and
/// since then the atomics and the plain reads of the current barrier interval (each list
/// of one epoch; a thread's later access replaces its earlier one, lazily). Atomics are
/// all kept, not only the last: two atomics are not ordered, so a later plain access must
/// be checked against each.
#[derive(Clone, Debug, Default)]
pub(super) struct ByteShadow {
    written: bool,
    write: Option<Access>,
    atomics: Vec<Access>,
    reads: Vec<Access>,
}

/// The length from which a [`ByteShadow`] list is compacted to one access per thread
/// whenever it reaches a power of two: a thread that reads one element in a loop between
/// two barriers does not grow it without bound (each access costs O(log n) amortised,
/// `n` the threads that touched the byte in the interval).
const COMPACT_FROM: usize = 64;

impl ByteShadow {
    /// Checks `now` against the byte's earlier accesses (`order` says which are ordered
    /// before it), then records it; the conflict, if any (nothing is recorded then).
    ///
    /// A plain read, and an atomic (which reads the old value), of a byte no thread of
    /// the block has written is [`Conflict::Uninitialised`]; a plain access races with
    /// any unordered access of another thread but a plain read, an atomic with any
    /// unordered plain access.
    pub(super) fn access(&mut self, now: Access, order: &Order) -> Result<(), Conflict> {
        let unordered = |earlier: &&Access| !order.ordered(earlier, now.rank);
        // Accesses before the last barrier are ordered before everything from now on
        // (each list holds one epoch's: its last entry's epoch is every entry's).
        for list in [&mut self.reads, &mut self.atomics] {
            if list.last().is_some_and(|a| a.at.epoch != now.at.epoch) {
                list.clear();
            }
        }
        if now.kind != AccessKind::Write && !self.written {
            return Err(Conflict::Uninitialised);
        }
        let racing = match now.kind {
            AccessKind::Read => self.write.iter().find(unordered).or_else(|| self.atomics.iter().find(unordered)),
            AccessKind::Atomic => self.write.iter().find(unordered).or_else(|| self.reads.iter().find(unordered)),
            AccessKind::Write => self
                .write
                .iter()
                .find(unordered)
                .or_else(|| self.atomics.iter().find(unordered))
                .or_else(|| self.reads.iter().find(unordered)),
        };
        if let Some(earlier) = racing {
            return Err(Conflict::Race(*earlier));
        }
        match now.kind {
            AccessKind::Read => record(&mut self.reads, now),
            AccessKind::Atomic => record(&mut self.atomics, now),
            AccessKind::Write => {
                self.written = true;
                self.write = Some(now);
                self.reads.clear();
                self.atomics.clear();
            }
        }
        Ok(())
    }
}

/// Adds `now` to `list`: in place of the last entry if that is the same thread's (a
/// thread's later access is ordered after its earlier ones, and its clock is at least
/// theirs, so the latest per thread decides every later check), compacting the list when
/// it reaches a power of two from [`COMPACT_FROM`].
fn record(list: &mut Vec<Access>, now: Access) {
    match list.last_mut() {
        Some(last) if last.rank == now.rank => *last = now,
        _ => list.push(now),
    }
    if list.len() >= COMPACT_FROM && list.len().is_power_of_two() {
        compact(list);
    }
}

/// Keeps the latest access of each thread, in the order of the threads' ranks.
fn compact(list: &mut Vec<Access>) {
    list.reverse();
    // Stable: each thread's latest access comes first among its own, and is kept.
    list.sort_by_key(|a| a.rank);
    list.dedup_by_key(|a| a.rank);
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::panic::Location;

    fn access(order: &Order, rank: u32, kind: AccessKind) -> Access {
        Access { rank, at: order.moment(rank), kind, site: Location::caller() }
    }

    #[test]
    fn a_write_then_a_read_by_another_thread_races_until_a_barrier_or_a_warp_barrier_links_them() {
        use AccessKind::*;
        let mut order = Order::new(64);
        let mut byte = ByteShadow::default();
        assert_eq!(byte.access(access(&order, 3, Read), &order), Err(Conflict::Uninitialised));
        let write = access(&order, 3, Write);
        byte.access(write, &order).unwrap();
        // The same thread reads its own write; another lane of its warp may not, nor may
        // a thread of another warp.
        byte.access(access(&order, 3, Read), &order).unwrap();
        assert_eq!(byte.access(access(&order, 4, Read), &order), Err(Conflict::Race(write)));
        // A warp barrier of lanes 3 and 4 orders them, not lane 5, nor warp 1.
        order.warp_barrier(0, 0b11000);
        let read_by_4 = access(&order, 4, Read);
        byte.access(read_by_4, &order).unwrap();
        assert_eq!(byte.access(access(&order, 5, Read), &order), Err(Conflict::Race(write)));
        assert_eq!(byte.access(access(&order, 35, Read), &order), Err(Conflict::Race(write)));
        // Lanes 4 and 5 meet at a warp barrier next: 5 learns what 4 knew (the chain orders 3 before 5).
        order.warp_barrier(0, 0b110000);
        byte.access(access(&order, 5, Read), &order).unwrap();
        // Thread 3 writes again, unordered with lane 4's read after their warp barrier (a
        // write after a read), and with lane 5's.
        assert_eq!(byte.access(access(&order, 3, Write), &order), Err(Conflict::Race(read_by_4)));
        // After a barrier every thread may read, and then one may write alone.
        order.barrier();
        byte.access(access(&order, 35, Read), &order).unwrap();
        order.barrier();
        byte.access(access(&order, 35, Write), &order).unwrap();
    }

    #[test]
    fn atomics_race_with_plain_accesses_not_with_each_other_and_need_a_written_byte() {
        use AccessKind::*;
        let mut order = Order::new(64);
        let mut byte = ByteShadow::default();
        // An atomic reads the old value: on a byte nobody wrote, that is uninitialised.
        assert_eq!(byte.access(access(&order, 1, Atomic), &order), Err(Conflict::Uninitialised));
        byte.access(access(&order, 0, Write), &order).unwrap();
        order.barrier();
        let first = access(&order, 1, Atomic);
        byte.access(first, &order).unwrap();
        byte.access(access(&order, 40, Atomic), &order).unwrap();
        byte.access(access(&order, 2, Atomic), &order).unwrap();
        // Every atomic is kept: thread 2's plain read and write race with thread 1's,
        // not only with the last (its own, which is ordered before them).
        assert_eq!(byte.access(access(&order, 2, Read), &order), Err(Conflict::Race(first)));
        assert_eq!(byte.access(access(&order, 2, Write), &order), Err(Conflict::Race(first)));
        // After a barrier the atomics are ordered before everything.
        order.barrier();
        byte.access(access(&order, 2, Read), &order).unwrap();
    }

    #[test]
    fn many_reads_by_few_threads_are_kept_once_per_thread_the_latest_of_each() {
        let mut order = Order::new(64);
        let mut byte = ByteShadow::default();
        byte.access(access(&order, 0, AccessKind::Write), &order).unwrap();
        order.barrier();
        for i in 0..1000 {
            byte.access(access(&order, 1 + i % 3, AccessKind::Read), &order).unwrap();
        }
        assert!(byte.reads.len() < COMPACT_FROM, "{}", byte.reads.len());
        let ranks: std::collections::BTreeSet<u32> = byte.reads.iter().map(|r| r.rank).collect();
        assert_eq!(ranks, [1, 2, 3].into());
        // Threads 0-3 shuffle: the reads so far are ordered before thread 0's write; then
        // thread 1 reads again, in many reads that compact the list. The later read must
        // be the one kept: the write races with it (keeping the earlier would miss it).
        order.warp_barrier(0, 0b1111);
        let later = access(&order, 1, AccessKind::Read);
        byte.access(later, &order).unwrap();
        for i in 0..200 {
            byte.access(access(&order, 2 + i % 2, AccessKind::Read), &order).unwrap();
            byte.access(later, &order).unwrap();
        }
        assert_eq!(byte.access(access(&order, 0, AccessKind::Write), &order), Err(Conflict::Race(later)));
    }

    #[test]
    fn a_new_block_starts_unordered_again() {
        let mut order = Order::new(32);
        order.barrier();
        order.warp_barrier(0, u32::MAX);
        order.reset();
        assert_eq!(order.moment(5), Moment { epoch: 0, clock: 0 });
    }
}
