//! Broken kernels that the sanitizer must catch, each with the error it gives: the
//! kernel, the block, both threads, the array and element, and both call sites (the
//! lines are taken with `line!()` beside each access, never written by hand). Beside each,
//! the kernel as it should be written runs clean.

use super::{at, run, run_err, setup};
use crate::block::{
    self, Dim3, FULL_MASK, GlobalSlice, SharedSlice, block_max_u32, block_sum_u32, sync_threads, thread_rank,
};
use crate::emulator::*;
use crate::static_shared;
use std::vec::Vec;
use std::{format, vec};

/// The line of a call site.
fn line(site: Site) -> u32 {
    site.line()
}

/// The two sides of a race: (thread, kind, line) of each.
fn race_sides(error: &EmulatorError) -> ((u32, AccessKind, u32), (u32, AccessKind, u32)) {
    let EmulatorError::SharedRace { first, second, .. } = error else { panic!("not a race: {error}") };
    assert_eq!((first.site.file(), second.site.file()), (file!(), file!()), "{error}");
    ((first.thread.x, first.kind, line(first.site)), (second.thread.x, second.kind, line(second.site)))
}

/// The array and element of a race.
fn race_element(error: &EmulatorError) -> (&'static str, usize) {
    let EmulatorError::SharedRace { array, index, kernel, block, .. } = error else { panic!("not a race: {error}") };
    assert_eq!((*kernel, *block), ("test_kernel", at(0)));
    (array, *index)
}

// 1. Two block reductions on one scratch with no barrier between them (found in
// block-host by reading, round 29): the other threads still read the first result from
// `scratch[0]` when warp 0's lane 0 writes its partial of the second there. The first
// reported is lane 1 of warp 0: the second reduction's shuffles wait for it but order
// no memory (warp 1's threads race the same way).

static_shared!(fn reduction_scratch: [u32; 32]);

const FIRST_REDUCTION: u32 = line!() + 4;
const SECOND_REDUCTION: u32 = line!() + 7;
fn two_reductions(barrier_between: bool) -> (u32, u32) {
    // SAFETY: every thread of the (whole-warp) block calls both.
    let sum = unsafe { block_sum_u32(thread_rank(), reduction_scratch()) };
    if barrier_between {
        sync_threads();
    }
    let max = unsafe { block_max_u32(thread_rank(), reduction_scratch()) };
    (sum, max)
}

#[test]
fn two_block_reductions_on_one_scratch_without_a_barrier_race() {
    let error = run_err(&setup(Dim3::x(1), Dim3::x(64)), || {
        two_reductions(false);
    });
    assert_eq!(race_sides(&error), ((1, AccessKind::Read, FIRST_REDUCTION), (0, AccessKind::Write, SECOND_REDUCTION)));
    let (array, index) = race_element(&error);
    assert!(array.contains("reduction_scratch") && index == 0, "{error}");
    let message = format!("{error}");
    let expected = format!(
        "kernel test_kernel, block (0, 0, 0): data race on element 0 of {array}: thread (1, 0, 0) read it at {file}:{FIRST_REDUCTION}:",
        file = file!()
    );
    assert!(message.starts_with(&expected), "{message}\nexpected it to start with\n{expected}");
    assert!(
        message.contains(&format!("then thread (0, 0, 0) wrote it at {}:{SECOND_REDUCTION}:", file!())),
        "{message}"
    );

    run(&setup(Dim3::x(2), Dim3::x(64)), || assert_eq!(two_reductions(true), ((0..64).sum(), 63)));
}

// 2. Shared memory reused for a second phase without a barrier after the first phase's
// reads: a thread overwrites its element while its neighbour may still read it.

static_shared!(fn phases: [u32; 64]);

const PHASE_ONE_READ: u32 = line!() + 9;
const PHASE_TWO_WRITE: u32 = line!() + 12;
fn two_phases(barrier_between: bool) -> u32 {
    let (tile, rank) = (phases(), thread_rank() as usize);
    // SAFETY (all accesses): indices below 64 with 64 threads; what the barriers order is
    // what this test is about.
    unsafe {
        tile.write(rank, rank as u32);
        sync_threads();
        let neighbour = tile.read((rank + 1) % 64);
        if barrier_between {
            sync_threads();
        }
        tile.write(rank, neighbour * 2);
        sync_threads();
        tile.read((rank + 63) % 64)
    }
}

#[test]
fn shared_memory_reused_without_a_barrier_races_with_the_last_phases_reads() {
    let error = run_err(&setup(Dim3::x(1), Dim3::x(64)), || {
        two_phases(false);
    });
    assert_eq!(race_sides(&error), ((0, AccessKind::Read, PHASE_ONE_READ), (1, AccessKind::Write, PHASE_TWO_WRITE)));
    assert_eq!(race_element(&error).1, 1, "{error}");
    run(&setup(Dim3::x(1), Dim3::x(64)), || assert_eq!(two_phases(true), thread_rank() * 2));
}

// 3. An off-by-one tile load: a halo of one element, loaded by every thread at `rank + 1`
// into a tile one element too short.

const HALO_WRITE: u32 = line!() + 6;
fn load_with_halo(tile: SharedSlice<u32>) -> u32 {
    let rank = thread_rank() as usize;
    // SAFETY: what the tile's length allows is what this test is about; every thread
    // writes a different element, and reads after the barrier.
    unsafe {
        tile.write(rank + 1, rank as u32);
        if rank == 0 {
            tile.write(0, u32::MAX);
        }
        sync_threads();
        tile.read(rank)
    }
}

#[test]
fn an_off_by_one_tile_load_is_out_of_bounds() {
    static_shared!(fn short_tile: [u32; 64]);
    static_shared!(fn tile: [u32; 65]);
    let error = run_err(&setup(Dim3::x(1), Dim3::x(64)), || {
        load_with_halo(short_tile());
    });
    let EmulatorError::SharedOutOfBounds { thread, what, site, .. } = &error else { panic!("{error}") };
    assert_eq!((thread.x, what, line(site)), (63, &OutOfBounds::Index { index: 64, len: 64 }, HALO_WRITE), "{error}");
    let message = format!("{error}");
    assert!(message.contains("thread (63, 0, 0): index 64 of a SharedSlice of 64 values at"), "{message}");
    run(&setup(Dim3::x(1), Dim3::x(64)), || {
        let rank = thread_rank();
        assert_eq!(load_with_halo(tile()), if rank == 0 { u32::MAX } else { rank - 1 });
    });

    // A SharedSlice longer than its memory: in bounds of the slice, past the array.
    let mut past = setup(Dim3::x(1), Dim3::x(64));
    past.dynamic_shared_bytes = 64 * 4;
    let error = run_err(&past, || {
        let memory = block::dynamic_shared::<u32>();
        // SAFETY: not sound (one value past the buffer): the sanitizer catches it.
        let tile = unsafe { SharedSlice::from_raw_parts(memory.as_mut_ptr(), 65) };
        load_with_halo(tile);
    });
    let EmulatorError::SharedOutOfBounds { what, .. } = &error else { panic!("{error}") };
    let past_array = OutOfBounds::PastArray { array: "dynamic shared memory", offset: 256, bytes: 4, size: 256 };
    assert_eq!(what, &past_array, "{error}");

    // A SharedSlice made over a launch's empty dynamic shared memory: past it at once.
    let error = run_err(&setup(Dim3::x(1), Dim3::x(64)), || {
        let memory = block::dynamic_shared::<u32>();
        // SAFETY: not sound (there is no dynamic shared memory): the sanitizer catches it.
        let tile = unsafe { SharedSlice::from_raw_parts(memory.as_mut_ptr(), 65) };
        load_with_halo(tile);
    });
    let EmulatorError::SharedOutOfBounds { what, thread, .. } = &error else { panic!("{error}") };
    let empty = OutOfBounds::PastArray { array: "dynamic shared memory", offset: 4, bytes: 4, size: 0 };
    assert_eq!((thread.x, what), (0, &empty), "{error}");
}

// 4. A read before any write: the halo element that no thread loads.

const HALO_READ: u32 = line!() + 11;
fn stencil(load_halo: bool) -> u32 {
    static_shared!(fn stencil_tile: [u32; 65]);
    let (tile, rank) = (stencil_tile(), thread_rank() as usize);
    // SAFETY: indices below 65; each element written by one thread before the barrier.
    unsafe {
        tile.write(rank, rank as u32);
        if load_halo && rank == 63 {
            tile.write(64, 64);
        }
        sync_threads();
        tile.read(rank) + tile.read(rank + 1)
    }
}

#[test]
fn a_read_of_shared_memory_no_thread_wrote_is_an_error() {
    let error = run_err(&setup(Dim3::x(2), Dim3::x(64)), || {
        stencil(false);
    });
    let EmulatorError::SharedUninitialised { thread, array, index, site, block, .. } = &error else {
        panic!("{error}")
    };
    assert_eq!((block.x, thread.x, *index, line(site)), (0, 63, 64, HALO_READ), "{error}");
    assert!(array.contains("stencil_tile"), "{error}");
    assert!(format!("{error}").contains("which no thread of the block has written"), "{error}");
    run(&setup(Dim3::x(2), Dim3::x(64)), || assert_eq!(stencil(true), 2 * thread_rank() + 1));
}

#[test]
fn what_one_block_wrote_is_uninitialised_for_the_next() {
    static_shared!(fn carried: [u32; 1]);
    let error = run_err(&setup(Dim3::x(2), Dim3::x(32)), || {
        let cell = carried();
        // SAFETY: thread 0 of block 0 alone writes; the rest read after the barrier.
        unsafe {
            if block::block_idx().x == 0 && thread_rank() == 0 {
                cell.write(0, 7);
            }
            sync_threads();
            cell.read(0);
        }
    });
    let EmulatorError::SharedUninitialised { block, thread, .. } = &error else { panic!("{error}") };
    assert_eq!((block.x, thread.x), (1, 0), "{error}");
}

// 5. A write after a read across a missing barrier: an in-place update that reads the
// neighbour's old value and writes its own new one between the same two barriers.

const OLD_READ: u32 = line!() + 10;
const NEW_WRITE: u32 = line!() + 13;
fn shift_in_place(barrier_between: bool) -> u32 {
    static_shared!(fn line_tile: [u32; 96]);
    let (tile, rank) = (line_tile(), thread_rank() as usize);
    // SAFETY: indices below 96 with 96 threads; what the barriers order is what this
    // test is about.
    unsafe {
        tile.write(rank, rank as u32 * 10);
        sync_threads();
        let old = tile.read((rank + 1) % 96);
        if barrier_between {
            sync_threads();
        }
        tile.write(rank, old);
        sync_threads();
        tile.read(rank)
    }
}

#[test]
fn a_write_after_a_read_without_a_barrier_between_races() {
    let error = run_err(&setup(Dim3::x(1), Dim3::x(96)), || {
        shift_in_place(false);
    });
    assert_eq!(race_sides(&error), ((0, AccessKind::Read, OLD_READ), (1, AccessKind::Write, NEW_WRITE)));
    run(&setup(Dim3::x(1), Dim3::x(96)), || assert_eq!(shift_in_place(true), (thread_rank() + 1) % 96 * 10));
}

// 6. A warp-synchronous exchange through shared memory with nothing ordering the lanes
// (the code Volta broke: before sm_70 a warp's lanes ran in lockstep, so it worked). The
// warp barrier (`sync_warp`, CUDA's `__syncwarp`) between the write and the read, and
// between the read and the next round's write, orders them; a vote there waits for the
// lanes but orders no memory (PTX promises ordering for `bar.warp.sync` alone), so it
// still races.

/// What a lane does between its write and the read of its neighbour's slot.
#[derive(Clone, Copy, PartialEq)]
enum Between {
    Nothing,
    Vote,
    WarpBarrier,
}

const EXCHANGE_READ: u32 = line!() + 22;
const EXCHANGE_WRITE: u32 = line!() + 19;
fn warp_exchange(between: Between) -> u32 {
    static_shared!(fn mailbox: [u32; 32]);
    let (slots, lane) = (mailbox(), block::lane_id() as usize);
    // SAFETY: every lane of the (full) warp makes each call, with the same mask.
    let order = || unsafe {
        match between {
            Between::Nothing => {}
            Between::Vote => _ = block::vote_all(FULL_MASK, true),
            Between::WarpBarrier => block::sync_warp(FULL_MASK),
        }
    };
    // SAFETY: 32 threads, indices below 32; the order of the lanes is what this test is
    // about.
    unsafe {
        slots.write(lane, 0);
        sync_threads();
        let mut got = 0;
        for round in 1..3u32 {
            slots.write(lane, lane as u32 * 100 + round);
            order();
            got = slots.read(lane ^ 1);
            order();
        }
        got
    }
}

#[test]
fn a_warp_synchronous_exchange_without_a_warp_barrier_between_races() {
    // With nothing between, lane 0 reads its neighbour's slot before lane 1 writes it
    // again; with a vote, lane 0 waits at it until lane 1 has written, then reads.
    let (read, write) = ((0, AccessKind::Read, EXCHANGE_READ), (1, AccessKind::Write, EXCHANGE_WRITE));
    for (between, sides) in [(Between::Nothing, (read, write)), (Between::Vote, (write, read))] {
        let error = run_err(&setup(Dim3::x(1), Dim3::x(32)), move || {
            warp_exchange(between);
        });
        assert_eq!(race_sides(&error), sides);
    }
    run(&setup(Dim3::x(1), Dim3::x(32)), || {
        assert_eq!(warp_exchange(Between::WarpBarrier), (block::lane_id() ^ 1) * 100 + 2);
    });
}

/// A warp barrier orders only the lanes its mask names: lanes 0 and 1 swap values around
/// `sync_warp(0b11)` cleanly, while lane 2 reads lane 3's slot around its own
/// `sync_warp(0b100)`, which does not name lane 3: lane 3's write and lane 2's read race.
const PAIR_READ: u32 = line!() + 14;
const PAIR_WRITE: u32 = line!() + 8;
fn pair_exchange(lanes: u32) -> u32 {
    static_shared!(fn slots4: [u32; 4]);
    let (slots, lane) = (slots4(), block::lane_id());
    let mask = if lane < 2 { 0b11 } else { 1 << lane };
    // SAFETY: four threads, indices below 4; each lane names itself in its mask.
    unsafe {
        if lane < lanes {
            slots.write(lane as usize, lane * 10);
        }
        block::sync_warp(mask);
        if lane < lanes {
            let partner = if lane < 2 { lane ^ 1 } else { 3 };
            return slots.read(partner as usize);
        }
    }
    0
}

#[test]
fn a_warp_barrier_orders_only_the_lanes_of_its_mask() {
    run(&setup(Dim3::x(1), Dim3::x(4)), || {
        let lane = block::lane_id();
        assert_eq!(pair_exchange(2), if lane < 2 { (lane ^ 1) * 10 } else { 0 });
    });
    let error = run_err(&setup(Dim3::x(1), Dim3::x(4)), || {
        pair_exchange(4);
    });
    let (array, index) = race_element(&error);
    assert!(array.contains("slots4") && index == 3, "{error}");
    // The lanes of one mask may meet at two call sites (sm_70+ needs only the same mask).
    run(&setup(Dim3::x(1), Dim3::x(32)), || {
        #[allow(clippy::if_same_then_else)]
        // SAFETY: every lane calls a `sync_warp` with the full mask.
        unsafe {
            if block::lane_id() < 16 {
                block::sync_warp(FULL_MASK);
            } else {
                block::sync_warp(FULL_MASK);
            }
        }
    });
    assert_eq!(race_sides(&error), ((3, AccessKind::Write, PAIR_WRITE), (2, AccessKind::Read, PAIR_READ)));
}

// Atomics: updates of one shared counter by every thread are not races, but a plain
// read or write of it before the barrier is (with each of the atomics, not only the
// last), and so is an atomic on a counter that nobody zeroed.

/// What a thread does besides its atomic add between the two barriers.
#[derive(Clone, Copy)]
enum Beside {
    Nothing,
    /// Thread 5 reads the counter.
    EarlyRead,
    /// Thread 63 (whose atomic is the last) writes it.
    LastWrites,
    /// Nobody zeroes it first.
    NotZeroed,
}

fn count_with(beside: Beside) -> u32 {
    static_shared!(fn counter: [u32; 1]);
    let (cell, rank) = (counter(), thread_rank());
    // SAFETY: one aligned u32 of shared memory; what the barriers order is what this
    // test is about.
    unsafe {
        if rank == 0 && !matches!(beside, Beside::NotZeroed) {
            cell.write(0, 0);
        }
        sync_threads();
        <u32 as block::Atomic>::atomic_add(cell.as_mut_ptr(), 1, block::Scope::Block);
        match beside {
            Beside::EarlyRead if rank == 5 => {
                cell.read(0);
            }
            Beside::LastWrites if rank == 63 => cell.write(0, 0),
            _ => {}
        }
        sync_threads();
        cell.read(0)
    }
}

#[test]
fn atomics_on_shared_memory_race_only_with_plain_accesses() {
    run(&setup(Dim3::x(2), Dim3::x(64)), || assert_eq!(count_with(Beside::Nothing), 64));
    // Each checked against every atomic since the last write: thread 0's comes first.
    for (beside, second) in [(Beside::EarlyRead, (5, AccessKind::Read)), (Beside::LastWrites, (63, AccessKind::Write))]
    {
        let error = run_err(&setup(Dim3::x(1), Dim3::x(64)), move || {
            count_with(beside);
        });
        let ((first, first_kind, _), (thread, kind, _)) = race_sides(&error);
        assert_eq!((first, first_kind, (thread, kind)), (0, AccessKind::Atomic, second), "{error}");
    }
    let error = run_err(&setup(Dim3::x(1), Dim3::x(64)), || {
        count_with(Beside::NotZeroed);
    });
    let EmulatorError::SharedUninitialised { thread, index, .. } = &error else { panic!("{error}") };
    assert_eq!((thread.x, *index), (0, 0), "{error}");
}

// 7. An off-by-one read of global memory through a `GlobalSlice`: each thread adds its
// right neighbour, and the last has none.

const NEIGHBOUR_READ: u32 = line!() + 6;
fn add_right_neighbour(x: GlobalSlice<u32>, out: GlobalSlice<u32>, guarded: bool) {
    let i = thread_rank() as usize;
    // SAFETY: what the slices' lengths allow is what this test is about; each thread
    // writes its own element of `out` and only reads `x`.
    unsafe {
        let right = if guarded && i + 1 == x.len() { 0 } else { x.read(i + 1) };
        out.write(i, x.read(i) + right);
    }
}

#[test]
fn an_off_by_one_global_read_through_a_global_slice_is_an_error() {
    // Leaked, so that the launch in `run_err` (on a thread of its own, left behind if it
    // hangs) borrows nothing that the test frees.
    // (Their addresses as integers, which a closure may send to that thread.)
    let x = Vec::<u32>::leak((0..64).collect()).as_mut_ptr() as usize;
    let out = Vec::leak(vec![0u32; 64]).as_mut_ptr() as usize;
    // SAFETY: `x` and `out` hold 64 values each, live for ever, and only the launches
    // below (one at a time) use them until the end, where `out` is read.
    let slices = move || unsafe {
        (GlobalSlice::from_raw_parts(x as *mut u32, 64), GlobalSlice::from_raw_parts(out as *mut u32, 64))
    };
    let error = run_err(&setup(Dim3::x(1), Dim3::x(64)), move || {
        let (x, out) = slices();
        add_right_neighbour(x, out, false);
    });
    let EmulatorError::GlobalOutOfBounds { thread, index, len, site, .. } = &error else { panic!("{error}") };
    assert_eq!((thread.x, *index, *len, line(site)), (63, 64, 64, NEIGHBOUR_READ), "{error}");
    assert!(format!("{error}").contains("thread (63, 0, 0): index 64 of a GlobalSlice of 64 values at"), "{error}");

    run(&setup(Dim3::x(1), Dim3::x(64)), || {
        let (x, out) = slices();
        add_right_neighbour(x, out, true);
    });
    // SAFETY: the launches are over; `out` holds 64 values.
    let written: Vec<u32> = (0..64).map(|i| unsafe { slices().1.read(i) }).collect();
    let expected: Vec<u32> = (0..64).map(|i| if i == 63 { 63 } else { 2 * i + 1 }).collect();
    assert_eq!(written, expected);
}
