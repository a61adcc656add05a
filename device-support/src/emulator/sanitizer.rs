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
//! operations (shuffles, votes) between them whose masks link the two threads: a warp
//! operation orders only the lanes it names, as on Volta and later, where a warp's lanes
//! no longer run in lockstep. Program order orders a thread's own accesses. Atomics and
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
/// over the lanes of its warp (a warp operation joins the clocks of the lanes it names).
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

    /// The warp operation of `warp` over `mask` completed: each lane of `mask` ends its
    /// segment (its own clock ticks), and all of them learn every other's clock.
    pub(super) fn warp_op(&mut self, warp: u32, mask: u32) {
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

    /// A new block: no barrier, no warp operation yet.
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
    /// A read of a byte no thread of the block has written.
    Uninitialised,
}

/// The accesses that a later access to one byte of shared memory must be checked
/// against: the last write (or atomic), and the reads since it in the current barrier
/// interval (all of one epoch; a thread's later read replaces its earlier one, lazily).
#[derive(Clone, Debug, Default)]
pub(super) struct ByteShadow {
    write: Option<Access>,
    reads: Vec<Access>,
}

/// The length from which [`ByteShadow::reads`] is compacted to one read per thread when
/// it reaches a power of two (so a thread that reads one element in a loop between two
/// barriers does not grow it without bound, and each read costs O(1) amortised).
const COMPACT_FROM: usize = 64;

impl ByteShadow {
    /// Checks `now` against the byte's earlier accesses (`order` says which are ordered
    /// before it), then records it; the conflict, if any (nothing is recorded then).
    pub(super) fn access(&mut self, now: Access, order: &Order) -> Result<(), Conflict> {
        let ordered = |earlier: &Access| order.ordered(earlier, now.rank);
        // Reads before the last barrier are ordered before everything from now on (the
        // list holds one epoch's: the last one's epoch is every one's).
        if self.reads.last().is_some_and(|r| r.at.epoch != now.at.epoch) {
            self.reads.clear();
        }
        let racing_write =
            self.write.filter(|w| !ordered(w) && !(w.kind == AccessKind::Atomic && now.kind == AccessKind::Atomic));
        if let Some(w) = racing_write {
            return Err(Conflict::Race(w));
        }
        match now.kind {
            AccessKind::Read => {
                if self.write.is_none() {
                    return Err(Conflict::Uninitialised);
                }
                // A thread's later read is ordered after its earlier ones, and its clock
                // is at least theirs, so the latest per thread decides every later
                // check; the earlier ones are dropped now (the last one) or at the next
                // compaction.
                match self.reads.last_mut() {
                    Some(last) if last.rank == now.rank => *last = now,
                    _ => self.reads.push(now),
                }
                if self.reads.len() >= COMPACT_FROM && self.reads.len().is_power_of_two() {
                    compact(&mut self.reads);
                }
            }
            AccessKind::Write | AccessKind::Atomic => {
                if let Some(r) = self.reads.iter().find(|r| !ordered(r)) {
                    return Err(Conflict::Race(*r));
                }
                self.write = Some(now);
                self.reads.clear();
            }
        }
        Ok(())
    }
}

/// Keeps the latest read of each thread, in the order of the threads' ranks.
fn compact(reads: &mut Vec<Access>) {
    reads.reverse();
    // Stable: each thread's latest read comes first among its own, and is the one kept.
    reads.sort_by_key(|r| r.rank);
    reads.dedup_by_key(|r| r.rank);
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::panic::Location;

    fn access(order: &Order, rank: u32, kind: AccessKind) -> Access {
        Access { rank, at: order.moment(rank), kind, site: Location::caller() }
    }

    #[test]
    fn a_write_then_a_read_by_another_thread_races_until_a_barrier_or_a_warp_op_links_them() {
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
        // A shuffle of lanes 3 and 4 orders them, not lane 5, nor warp 1.
        order.warp_op(0, 0b11000);
        let read_by_4 = access(&order, 4, Read);
        byte.access(read_by_4, &order).unwrap();
        assert_eq!(byte.access(access(&order, 5, Read), &order), Err(Conflict::Race(write)));
        assert_eq!(byte.access(access(&order, 35, Read), &order), Err(Conflict::Race(write)));
        // Lane 4 and 5 shuffle next: 5 learns what 4 knew (the chain orders 3 before 5).
        order.warp_op(0, 0b110000);
        byte.access(access(&order, 5, Read), &order).unwrap();
        // Thread 3 writes again, unordered with lane 4's read after their shuffle (a
        // write after a read), and with lane 5's.
        assert_eq!(byte.access(access(&order, 3, Write), &order), Err(Conflict::Race(read_by_4)));
        // After a barrier every thread may read, and then one may write alone.
        order.barrier();
        byte.access(access(&order, 35, Read), &order).unwrap();
        order.barrier();
        byte.access(access(&order, 35, Write), &order).unwrap();
    }

    #[test]
    fn atomics_race_with_plain_accesses_not_with_each_other() {
        use AccessKind::*;
        let order = Order::new(64);
        let mut byte = ByteShadow::default();
        byte.access(access(&order, 1, Atomic), &order).unwrap();
        byte.access(access(&order, 40, Atomic), &order).unwrap();
        let last = access(&order, 2, Atomic);
        byte.access(last, &order).unwrap();
        assert_eq!(byte.access(access(&order, 7, Read), &order), Err(Conflict::Race(last)));
        assert_eq!(byte.access(access(&order, 7, Write), &order), Err(Conflict::Race(last)));
    }

    #[test]
    fn many_reads_by_few_threads_are_kept_once_per_thread() {
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
        // Thread 0's write after them races with the first of them still listed.
        assert!(matches!(byte.access(access(&order, 0, AccessKind::Write), &order), Err(Conflict::Race(_))));
    }

    #[test]
    fn a_new_block_starts_unordered_again() {
        let mut order = Order::new(32);
        order.barrier();
        order.warp_op(0, u32::MAX);
        order.reset();
        assert_eq!(order.moment(5), Moment { epoch: 0, clock: 0 });
    }
}
