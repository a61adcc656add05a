//! The block API under the emulator: every function's semantics against a plain
//! sequential computation, each error case (returned, not hung), determinism, and the
//! benchmark's reduction on both kinds of emulated threads; `broken_kernels`, what the
//! sanitizer catches. A module beside `emulator` rather than in it, since these tests
//! drive the emulator through `block`, which uses it (no import circle).

mod broken_kernels;

use crate::block::{
    self, Atomic, AtomicInteger, Dim3, FULL_MASK, Scope, block_dim, block_idx, grid_dim, lane_id, shfl_down, shfl_idx,
    shfl_up, shfl_xor, sync_threads, sync_threads_and, sync_threads_count, sync_threads_or, thread_idx, thread_rank,
    vote_all, vote_any, vote_ballot,
};
use crate::emulator::*;
use crate::static_shared;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};
use std::string::String;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;
use std::vec::Vec;
use std::{format, vec};

/// How long a launch that must fail may take before it counts as hung: generous, since
/// each returns in milliseconds but a loaded machine may stall a thread for seconds.
/// Only the error cases have it: that they return rather than hang is what they test.
const LIMIT: Duration = Duration::from_secs(60);

/// Index `x` of a 1-D grid or block.
pub(super) fn at(x: u32) -> Dim3 {
    Dim3 { x, y: 0, z: 0 }
}

pub(super) fn setup(grid: Dim3, block: Dim3) -> Launch {
    Launch { kernel: "test_kernel", grid, block, dynamic_shared_bytes: 0 }
}

/// Runs `body` under the emulator and expects it to complete.
pub(super) fn run(setup: &Launch, body: impl Fn() + Sync) {
    launch(setup, body).unwrap_or_else(|e| panic!("{e}"));
}

/// Runs `body` under the emulator and expects an error in one line, returned rather than
/// hung: a launch that has not returned within [`LIMIT`] fails this test, not the whole
/// test binary. The launch runs on a thread of its own, left blocked if it hangs, which
/// is sound because `body` borrows nothing (`'static`).
pub(super) fn run_err(setup: &Launch, body: impl Fn() + Send + Sync + 'static) -> EmulatorError {
    let (setup, (done, ended)) = (*setup, mpsc::channel());
    let launcher = std::thread::spawn(move || {
        // The receiver is gone only if the test has already failed on the limit.
        let _ = done.send(launch(&setup, body));
    });
    let outcome = match ended.recv_timeout(LIMIT) {
        Ok(outcome) => Some(outcome),
        Err(RecvTimeoutError::Timeout) => panic!("{}: no outcome in {LIMIT:?}: the launch hangs", setup.kernel),
        Err(RecvTimeoutError::Disconnected) => None,
    };
    // The launching thread has sent its outcome or panicked: it ends now, and its panic
    // is this test's.
    if let Err(panic) = launcher.join() {
        std::panic::resume_unwind(panic);
    }
    let error = outcome.expect("the launching thread sent an outcome").expect_err("the launch fails");
    assert!(!format!("{error}").contains('\n'), "one line: {error}");
    error
}

/// One value per emulated thread (or any slot), written by the threads, read after the
/// launch. Emulated threads run one at a time, each hand-over through the emulator's lock,
/// so their accesses never race.
struct Slots<T>(Vec<UnsafeCell<T>>);

// SAFETY: see the type's doc: the emulator orders every access.
unsafe impl<T: Send> Sync for Slots<T> {}

impl<T: Copy> Slots<T> {
    fn new(len: usize, value: T) -> Slots<T> {
        Slots((0..len).map(|_| UnsafeCell::new(value)).collect())
    }
    fn set(&self, i: usize, value: T) {
        // SAFETY: see the type's doc.
        unsafe { *self.0[i].get() = value }
    }
    fn ptr(&self, i: usize) -> *mut T {
        self.0[i].get()
    }
    fn values(self) -> Vec<T> {
        self.0.into_iter().map(UnsafeCell::into_inner).collect()
    }
}

/// The calling thread's linear number in the launch: block rank · block size + rank.
fn global_rank() -> usize {
    (block_idx().rank_in(grid_dim()) * block_dim().volume()) as usize + thread_rank() as usize
}

/// A fixed pseudo-random `u32` of `i` (a 32-bit mix: any value, repeatable).
fn mix(i: u64) -> u32 {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    x ^= x >> 29;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    (x ^ (x >> 32)) as u32
}

// ---------------------------------------------------------------------------------------
// Indices

#[test]
fn indices_in_3d_follow_the_row_major_ranks() {
    let (grid, block) = (Dim3 { x: 2, y: 3, z: 2 }, Dim3 { x: 4, y: 2, z: 5 });
    let setup = setup(grid, block);
    let threads = (grid.volume() * block.volume()) as usize;
    let seen = Slots::new(threads, [u32::MAX; 14]);
    run(&setup, || {
        let (t, b, bd, gd) = (thread_idx(), block_idx(), block_dim(), grid_dim());
        seen.set(
            global_rank(),
            [t.x, t.y, t.z, b.x, b.y, b.z, bd.x, bd.y, bd.z, gd.x, gd.y, gd.z, lane_id(), thread_rank()],
        );
    });
    let seen = seen.values();
    let mut i = 0;
    for (bz, by, bx) in (0..2).flat_map(|z| (0..3).flat_map(move |y| (0..2).map(move |x| (z, y, x)))) {
        for (tz, ty, tx) in (0..5).flat_map(|z| (0..2).flat_map(move |y| (0..4).map(move |x| (z, y, x)))) {
            let rank = tx + 4 * (ty + 2 * tz);
            assert_eq!(seen[i], [tx, ty, tz, bx, by, bz, 4, 2, 5, 2, 3, 2, rank % 32, rank], "thread {i}");
            i += 1;
        }
    }
    assert_eq!(i, threads);
}

// ---------------------------------------------------------------------------------------
// Barriers

/// Block sizes: one thread, a partial warp, two warps, and a partial fourth warp.
const BLOCK_SIZES: [u32; 4] = [1, 33, 64, 100];

#[test]
fn a_barrier_makes_each_threads_shared_writes_visible_to_the_block() {
    for threads in BLOCK_SIZES {
        let mut setup = setup(Dim3::x(3), Dim3::x(threads));
        setup.dynamic_shared_bytes = threads as usize * 4;
        let seen = Slots::new(3 * threads as usize, [0u32; 2]);
        run(&setup, || {
            let (shared, rank, n) = (block::dynamic_shared::<u32>(), thread_rank(), block_dim().x);
            let mut got = [0; 2];
            for (round, got) in got.iter_mut().enumerate() {
                // SAFETY: each thread writes its own element between barriers, then reads
                // its neighbour's, which nobody writes until the next barrier.
                unsafe { shared.write(rank as usize, rank * 7 + block_idx().x * 1000 + round as u32) };
                sync_threads();
                *got = unsafe { shared.read(((rank + 1) % n) as usize) };
                sync_threads();
            }
            seen.set(global_rank(), got);
        });
        for (i, got) in seen.values().into_iter().enumerate() {
            let (block, rank) = (i as u32 / threads, i as u32 % threads);
            let next = (rank + 1) % threads;
            assert_eq!(got, [next * 7 + block * 1000, next * 7 + block * 1000 + 1], "{threads} threads, thread {i}");
        }
    }
}

#[test]
fn barrier_count_and_or_reduce_the_blocks_predicates() {
    let predicates: [fn(u32) -> bool; 5] = [|_| true, |_| false, |r| r == 0, |r| r % 3 == 1, |r| r != 5];
    for threads in BLOCK_SIZES {
        let seen = Slots::new(threads as usize, [(0u32, false, false); 5]);
        run(&setup(Dim3::x(1), Dim3::x(threads)), || {
            let rank = thread_rank();
            let mut got = [(0, false, false); 5];
            for (p, got) in predicates.iter().zip(&mut got) {
                *got = (sync_threads_count(p(rank)), sync_threads_and(p(rank)), sync_threads_or(p(rank)));
            }
            seen.set(rank as usize, got);
        });
        for (rank, got) in seen.values().into_iter().enumerate() {
            for (p, got) in predicates.iter().zip(got) {
                let count = (0..threads).filter(|&r| p(r)).count() as u32;
                assert_eq!(got, (count, count == threads, count > 0), "{threads} threads, thread {rank}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Warp operations

/// The lane whose value lane `lane` gets, by PTX's definition of each mode at width 32.
fn shuffle_source(op: WarpOp, lane: u32, operand: u32) -> u32 {
    // PTX's `bval = b[4:0]`: only the operand's low 5 bits count.
    let b = operand & 0x1F;
    match op {
        WarpOp::ShuffleIdx => b,
        WarpOp::ShuffleUp if b <= lane => lane - b,
        WarpOp::ShuffleDown if lane + b <= 31 => lane + b,
        WarpOp::ShuffleXor => lane ^ b,
        _ => lane,
    }
}

#[test]
fn each_shuffle_mode_reads_the_lane_ptx_names_and_keeps_its_own_at_the_edges() {
    let ops = [WarpOp::ShuffleIdx, WarpOp::ShuffleUp, WarpOp::ShuffleDown, WarpOp::ShuffleXor];
    let operands = [0, 1, 2, 5, 16, 31, 32, 33, 0x8000_0001, u32::MAX];
    const CASES: usize = 4 * 10;
    let seen = Slots::new(64, [0u32; CASES]);
    run(&setup(Dim3::x(1), Dim3::x(64)), || {
        let (rank, lane) = (thread_rank(), lane_id());
        let value = mix(u64::from(rank));
        let mut got = [0; CASES];
        for (i, (op, operand)) in ops.iter().flat_map(|op| operands.iter().map(move |d| (*op, *d))).enumerate() {
            // idx: a different source per lane; the others: one delta for the warp.
            let operand = if op == WarpOp::ShuffleIdx { operand.wrapping_add(lane * 7) } else { operand };
            // SAFETY: all 32 lanes of each (full) warp make each call.
            got[i] = unsafe {
                match op {
                    WarpOp::ShuffleIdx => shfl_idx(FULL_MASK, value, operand),
                    WarpOp::ShuffleUp => shfl_up(FULL_MASK, value, operand),
                    WarpOp::ShuffleDown => shfl_down(FULL_MASK, value, operand),
                    _ => shfl_xor(FULL_MASK, value, operand),
                }
            };
        }
        seen.set(rank as usize, got);
    });
    for (rank, got) in seen.values().into_iter().enumerate() {
        let (warp, lane) = (rank as u32 / 32, rank as u32 % 32);
        for (i, (op, operand)) in ops.iter().flat_map(|op| operands.iter().map(move |d| (*op, *d))).enumerate() {
            let operand = if op == WarpOp::ShuffleIdx { operand.wrapping_add(lane * 7) } else { operand };
            let source = warp * 32 + shuffle_source(op, lane, operand);
            assert_eq!(got[i], mix(u64::from(source)), "{op} by {operand:#x} in lane {lane} of warp {warp}");
        }
    }
}

#[test]
fn a_partial_warp_shuffles_among_its_lanes() {
    // 40 threads: warp 1 has lanes 0..8.
    let seen = Slots::new(40, [0u32; 3]);
    run(&setup(Dim3::x(1), Dim3::x(40)), || {
        let (rank, lane) = (thread_rank(), lane_id());
        let mask = if rank < 32 { FULL_MASK } else { 0xFF };
        // SAFETY: every lane of `mask` makes each call.
        let got = unsafe { [shfl_xor(mask, rank, 1), shfl_up(mask, rank, 1), shfl_idx(mask, rank, 7)] };
        seen.set(rank as usize, got);
        assert_eq!(lane, rank % 32);
    });
    for (rank, got) in seen.values().into_iter().enumerate() {
        let rank = rank as u32;
        let up = if rank.is_multiple_of(32) { rank } else { rank - 1 };
        assert_eq!(got, [rank ^ 1, up, rank - rank % 32 + 7], "thread {rank}");
    }
}

#[test]
fn votes_over_full_and_partial_masks() {
    let predicates: [fn(u32) -> bool; 5] = [|_| true, |_| false, |l| l == 0, |l| l == 31, |l| l % 2 == 1];
    for mask in [FULL_MASK, 0x0F0F_0F0F, 1 << 31] {
        let seen = Slots::new(64, [(false, false, 0u32); 5]);
        run(&setup(Dim3::x(1), Dim3::x(64)), || {
            let lane = lane_id();
            if mask & (1 << lane) == 0 {
                return;
            }
            let mut got = [(false, false, 0); 5];
            for (p, got) in predicates.iter().zip(&mut got) {
                // SAFETY: exactly the lanes of `mask` make each call.
                *got = unsafe { (vote_all(mask, p(lane)), vote_any(mask, p(lane)), vote_ballot(mask, p(lane))) };
            }
            seen.set(thread_rank() as usize, got);
        });
        let lanes: Vec<u32> = (0..32).filter(|l| mask & (1 << l) != 0).collect();
        for (rank, got) in seen.values().into_iter().enumerate() {
            if mask & (1 << (rank % 32)) == 0 {
                continue;
            }
            for (p, got) in predicates.iter().zip(got) {
                let ballot = lanes.iter().filter(|&&l| p(l)).fold(0, |b, l| b | 1 << l);
                let expected = (lanes.iter().all(|&l| p(l)), lanes.iter().any(|&l| p(l)), ballot);
                assert_eq!(got, expected, "mask {mask:#x}, thread {rank}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Shared memory

#[test]
fn dynamic_shared_memory_is_sized_aligned_and_filled_in_every_block() {
    let mut setup = setup(Dim3::x(2), Dim3::x(8));
    setup.dynamic_shared_bytes = 100;
    let seen = Slots::new(16, (0usize, 0usize, 0usize, 0u32));
    run(&setup, || {
        let (words, bytes) = (block::dynamic_shared::<u32>(), block::dynamic_shared::<u8>());
        assert_eq!(words.as_mut_ptr().cast::<u8>(), bytes.as_mut_ptr(), "one buffer");
        let rank = thread_rank() as usize;
        // SAFETY: each thread reads, then writes, only its own words (8 threads, 25 words).
        // The fill is read through the raw pointer: a `read` before any write is the
        // sanitizer's error (`broken_kernels`).
        let first = unsafe { words.as_mut_ptr().add(rank).read() };
        unsafe { words.write(rank, 0) };
        unsafe { words.write(rank + 8, 0) };
        seen.set(global_rank(), (words.len(), bytes.len(), words.as_mut_ptr() as usize % 16, first));
    });
    for got in seen.values() {
        assert_eq!(got, (25, 100, 0, FILL_WORD));
    }
}

crate::static_shared!(fn words: [u32; 8]);
crate::static_shared!(fn wide: [u64; 3]);

#[test]
fn static_shared_arrays_are_one_per_name_the_same_for_every_call_and_filled_per_block() {
    let seen = Slots::new(3 * 8, (0u32, 0u64, 0u32));
    run(&setup(Dim3::x(3), Dim3::x(8)), || {
        let (a, b) = (words(), wide());
        assert_eq!((a.len(), b.len()), (8, 3));
        assert_eq!(a.as_mut_ptr(), words().as_mut_ptr(), "the same array for every call");
        assert_ne!(a.as_mut_ptr().cast::<u8>(), b.as_mut_ptr().cast::<u8>());
        assert_eq!(b.as_mut_ptr() as usize % core::mem::align_of::<u64>(), 0);
        let rank = thread_rank();
        // SAFETY: each thread reads and writes only its own element of `a` before the
        // barrier; thread 0 alone writes `b`, read by all after it.
        let fresh = unsafe { a.as_mut_ptr().add(rank as usize).read() };
        unsafe { a.write(rank as usize, rank + block_idx().x * 100) };
        if rank == 0 {
            unsafe { b.write(2, u64::MAX - u64::from(block_idx().x)) };
        }
        sync_threads();
        let (neighbour, wide) = unsafe { (a.read(((rank + 1) % 8) as usize), b.read(2)) };
        assert_eq!(fresh, FILL_WORD, "filled when the block starts");
        seen.set(global_rank(), (neighbour, wide, fresh));
    });
    for (i, got) in seen.values().into_iter().enumerate() {
        let (block, rank) = (i as u32 / 8, i as u32 % 8);
        assert_eq!(got, ((rank + 1) % 8 + block * 100, u64::MAX - u64::from(block), FILL_WORD));
    }
}

// ---------------------------------------------------------------------------------------
// Atomics

/// `f`'s returns in each thread and its final value on one `T` in global memory and on
/// one in shared memory, both starting at `start`, for a grid of 3 blocks of 40 threads.
fn atomic_outcomes<T: Copy + Default + Send + Sync + PartialEq + core::fmt::Debug + 'static>(
    start: T,
    f: impl Fn(*mut T, usize) -> T + Sync,
) -> (Vec<T>, T, Vec<T>) {
    static_shared!(fn cell: [u64; 1]);
    let olds = Slots::new(120, T::default());
    let shared_olds = Slots::new(120, T::default());
    let global = Slots::new(1, start);
    let shared_finals = Slots::new(3, start);
    run(&setup(Dim3::x(3), Dim3::x(40)), || {
        let (i, shared) = (global_rank(), cell().as_mut_ptr().cast::<T>());
        if thread_rank() == 0 {
            // SAFETY: thread 0 alone writes it, before the barrier (through a
            // `SharedSlice`, so that the sanitizer sees it written before the atomics).
            unsafe { block::SharedSlice::from_raw_parts(shared, 1).write(0, start) };
        }
        sync_threads();
        olds.set(i, f(global.ptr(0), i));
        shared_olds.set(i, f(shared, i % 40));
        sync_threads();
        if thread_rank() == 0 {
            // SAFETY: no thread writes it after the barrier.
            shared_finals.set(block_idx().x as usize, unsafe { shared.read() });
        }
    });
    let shared_finals = shared_finals.values();
    assert!(
        shared_finals.iter().all(|v| *v == shared_finals[0]),
        "each block's shared cell ends the same: {shared_finals:?}"
    );
    let shared_olds = shared_olds.values();
    assert_eq!(shared_olds[..40], shared_olds[40..80], "each block's shared cell goes the same way");
    (olds.values(), global.values()[0], shared_olds[..40].to_vec())
}

/// The values of a sequential run in rank order: each thread's old value and the final.
fn sequential<T: Copy>(start: T, threads: usize, op: impl Fn(T, usize) -> T) -> (Vec<T>, T) {
    let mut value = start;
    let olds = (0..threads)
        .map(|i| {
            let old = value;
            value = op(value, i);
            old
        })
        .collect();
    (olds, value)
}

/// Checks `atomic` (the emulated operation) against `op` (the plain one) on global and
/// shared memory: the threads reach their atomics in rank order, block after block.
fn check_atomic<T>(
    name: &str,
    start: T,
    value_of: impl Fn(usize) -> T + Sync,
    atomic: fn(*mut T, T) -> T,
    op: fn(T, T) -> T,
) where
    T: Copy + Default + Send + Sync + PartialEq + core::fmt::Debug + 'static,
{
    let (olds, last, shared_olds) = atomic_outcomes(start, |address, i| atomic(address, value_of(i)));
    let (expected_olds, expected_last) = sequential(start, 120, |v, i| op(v, value_of(i)));
    assert_eq!((olds, last), (expected_olds, expected_last), "{name} on global memory");
    let (expected_olds, _) = sequential(start, 40, |v, i| op(v, value_of(i)));
    assert_eq!(shared_olds, expected_olds, "{name} on shared memory");
}

#[test]
fn each_integer_atomic_returns_the_old_value_in_rank_order() {
    fn u32_of(i: usize) -> u32 {
        mix(i as u64)
    }
    fn u64_of(i: usize) -> u64 {
        u64::from(mix(i as u64)) << 31 | i as u64
    }
    // SAFETY (each): forwarded to the block API's atomic.
    check_atomic("u32 add", 7, u32_of, |a, v| unsafe { u32::atomic_add(a, v, Scope::Device) }, u32::wrapping_add);
    check_atomic("u32 min", u32::MAX, u32_of, |a, v| unsafe { u32::atomic_min(a, v, Scope::Block) }, u32::min);
    check_atomic("u32 max", 0, u32_of, |a, v| unsafe { u32::atomic_max(a, v, Scope::System) }, u32::max);
    check_atomic("u32 exchange", 1, u32_of, |a, v| unsafe { u32::atomic_exchange(a, v, Scope::Device) }, |_, v| v);
    check_atomic("u64 add", 7, u64_of, |a, v| unsafe { u64::atomic_add(a, v, Scope::Device) }, u64::wrapping_add);
    check_atomic("u64 min", u64::MAX, u64_of, |a, v| unsafe { u64::atomic_min(a, v, Scope::Block) }, u64::min);
    check_atomic("u64 max", 0, u64_of, |a, v| unsafe { u64::atomic_max(a, v, Scope::System) }, u64::max);
    check_atomic("u64 exchange", 1, u64_of, |a, v| unsafe { u64::atomic_exchange(a, v, Scope::Device) }, |_, v| v);
    // Compare-exchange: a thread whose expected value is the current one succeeds.
    let cas32 = |a: *mut u32, v: u32| unsafe { u32::atomic_compare_exchange(a, v % 3, v, Scope::Device) };
    check_atomic("u32 cas", 0, |i| (i % 7) as u32, cas32, |old, v| if old == v % 3 { v } else { old });
    let cas64 = |a: *mut u64, v: u64| unsafe { u64::atomic_compare_exchange(a, v % 3 + (1 << 40), v, Scope::Device) };
    check_atomic(
        "u64 cas",
        1 << 40,
        |i| (i % 7) as u64 + (1 << 40),
        cas64,
        |old, v| if old == v % 3 + (1 << 40) { v } else { old },
    );
}

/// Values whose f32 sum depends on the order of the additions: 1e8, -1e8, 1, over and
/// over (in this order each 1 counts; reversed, each is lost to rounding beside 1e8).
fn order_sensitive(i: usize) -> f32 {
    [1.0e8, -1.0e8, 1.0][i % 3]
}

#[test]
fn f32_atomic_add_is_deterministic_and_in_rank_order() {
    let sum = || {
        let total = Slots::new(1, 0.0f32);
        run(&setup(Dim3::x(4), Dim3::x(96)), || {
            // SAFETY: an aligned f32 that every thread adds to atomically.
            unsafe { f32::atomic_add(total.ptr(0), order_sensitive(global_rank()), Scope::Device) };
        });
        total.values()[0]
    };
    let (first, second) = (sum(), sum());
    let in_rank_order = (0..4 * 96).map(order_sensitive).fold(0.0f32, |s, x| s + x);
    let in_reverse = (0..4 * 96).rev().map(order_sensitive).fold(0.0f32, |s, x| s + x);
    assert_ne!(in_rank_order.to_bits(), in_reverse.to_bits(), "the order matters for these values");
    assert_eq!((first.to_bits(), second.to_bits()), (in_rank_order.to_bits(), in_rank_order.to_bits()));
}

#[test]
fn f32_atomic_add_flushes_subnormal_inputs_and_results_to_zero_of_their_sign() {
    let tiny = f32::MIN_POSITIVE / 4.0;
    let cases = [
        (0.0, tiny, 0.0),
        (-0.0, -tiny, -0.0),
        (tiny, 0.0, 0.0),
        (1.0, tiny, 1.0),
        (1.5 * f32::MIN_POSITIVE, -f32::MIN_POSITIVE, 0.0),
        (-1.5 * f32::MIN_POSITIVE, f32::MIN_POSITIVE, -0.0),
        (2.0 * f32::MIN_POSITIVE, -f32::MIN_POSITIVE, f32::MIN_POSITIVE),
        (1.0, 2.0, 3.0),
        (f32::MAX, f32::MAX, f32::INFINITY),
    ];
    for (start, value, sum) in cases {
        let cell = Slots::new(1, start);
        let old = Slots::new(1, f32::NAN);
        // SAFETY: an aligned f32 that the one thread adds to atomically.
        run(&setup(Dim3::x(1), Dim3::x(1)), || {
            old.set(0, unsafe { f32::atomic_add(cell.ptr(0), value, Scope::Block) })
        });
        assert_eq!(
            (old.values()[0].to_bits(), cell.values()[0].to_bits()),
            (start.to_bits(), sum.to_bits()),
            "{start:e} + {value:e}"
        );
    }
}

#[test]
fn a_fence_is_a_sync_point_where_a_spinning_thread_lets_the_others_run() {
    let flag = Slots::new(1, 0u32);
    let seen = Slots::new(2, 0u32);
    run(&setup(Dim3::x(1), Dim3::x(2)), || {
        if thread_rank() == 0 {
            let mut spins = 0;
            // SAFETY: thread 1 writes the flag only atomically.
            while unsafe { u32::atomic_max(flag.ptr(0), 0, Scope::Block) } == 0 {
                block::fence(Scope::Block);
                spins += 1;
            }
            seen.set(0, spins);
        } else {
            // SAFETY: as above.
            unsafe { u32::atomic_exchange(flag.ptr(0), 1, Scope::Block) };
        }
    });
    assert_eq!(seen.values()[0], 1, "thread 0 spins once: thread 1 runs at its first sync point");
}

// ---------------------------------------------------------------------------------------
// Reductions

#[test]
fn warp_and_block_reductions_equal_a_sequential_computation() {
    static_shared!(fn scratch: [u32; 32]);
    for threads in [32, 96, 256, 1024] {
        let blocks = 2;
        let value = |i: usize| if i.is_multiple_of(5) { mix(i as u64) } else { mix(i as u64) >> (i % 32) };
        let seen = Slots::new(blocks * threads, [0u32; 6]);
        run(&setup(Dim3::x(blocks as u32), Dim3::x(threads as u32)), || {
            let v = value(global_rank());
            // SAFETY: every thread of every (full) warp makes each call; `scratch` holds
            // one value per warp, and a barrier follows each block reduction before the
            // next one writes it (without them the sanitizer reports the race:
            // `broken_kernels`).
            let got = unsafe {
                let warp = [block::warp_sum_u32(v), block::warp_min_u32(v), block::warp_max_u32(v)];
                let sum = block::block_sum_u32(v, scratch());
                sync_threads();
                let min = block::block_min_u32(v, scratch());
                sync_threads();
                let max = block::block_max_u32(v, scratch());
                [warp[0], warp[1], warp[2], sum, min, max]
            };
            seen.set(global_rank(), got);
        });
        for (i, got) in seen.values().into_iter().enumerate() {
            let (warp, block) = (i - i % 32, i - i % threads);
            let fold = |range: core::ops::Range<usize>| {
                let values = range.map(value);
                values.fold((0u32, u32::MAX, 0u32), |(s, lo, hi), v| (s.wrapping_add(v), lo.min(v), hi.max(v)))
            };
            let (ws, wmin, wmax) = fold(warp..warp + 32);
            let (bs, bmin, bmax) = fold(block..block + threads);
            assert_eq!(got, [ws, wmin, wmax, bs, bmin, bmax], "{threads} threads, thread {i}");
        }
    }
}

/// The body of a max-reduction kernel as a user writes it: a grid-stride loop, the block
/// reduction, one atomic per block.
///
/// # Safety
/// `x` holds `n` values; `out` is an aligned `u32` accessed only atomically meanwhile.
unsafe fn max_kernel(x: *const u32, n: u64, out: *mut u32) {
    static_shared!(fn partials: [u32; 32]);
    let mut max = 0;
    // SAFETY: the loop's indices are below `n`.
    crate::grid_stride(block::lane_x(), n, |i| max = max.max(unsafe { x.add(i).read() }));
    // SAFETY: every thread calls it; the launch's blocks are whole warps.
    let max = unsafe { block::block_max_u32(max, partials()) };
    if thread_rank() == 0 {
        // SAFETY: forwarded from the caller.
        unsafe { u32::atomic_max(out, max, Scope::Device) };
    }
}

/// The kernel the hand-over benchmark (`benches/handover.rs`) times, on coroutines and
/// on OS threads: the same result either way, and the same number of hand-overs.
#[test]
fn a_max_reduction_is_right_and_hands_over_alike_on_coroutines_and_os_threads() {
    let x: Vec<u32> = (0..1u64 << 20).map(|i| mix(i) >> 1).collect();
    let expected = x.iter().copied().max();
    for blocks in [16, 64] {
        let mut handovers = Vec::new();
        for threads in [Threads::Coroutines, Threads::Os] {
            let out = Slots::new(1, 0u32);
            let setup =
                Launch { kernel: "max_kernel", grid: Dim3::x(blocks), block: Dim3::x(256), dynamic_shared_bytes: 0 };
            // SAFETY: `x` has its length; `out` is one aligned u32.
            let body = || unsafe { max_kernel(x.as_ptr(), x.len() as u64, out.ptr(0)) };
            handovers.push(launch_on(&setup, threads, &body).unwrap_or_else(|e| panic!("{e}")));
            assert_eq!(Some(out.values()[0]), expected, "{threads:?}");
        }
        assert_eq!(handovers[0], handovers[1], "{blocks} blocks");
        assert!(handovers[0] > u64::from(blocks) * 2000, "{blocks} blocks: {} hand-overs", handovers[0]);
    }
}

// ---------------------------------------------------------------------------------------
// Errors

#[test]
fn a_barrier_that_half_the_threads_exit_before_is_an_error_naming_them() {
    let error = run_err(&setup(Dim3::x(2), Dim3::x(64)), || {
        if thread_rank() >= 32 {
            return;
        }
        sync_threads();
    });
    let EmulatorError::BarrierExited { kernel, block, site, missing, exited } = &error else { panic!("{error}") };
    assert_eq!((*kernel, *block, site.file()), ("test_kernel", at(0), file!()));
    assert_eq!((missing.clone(), exited.clone()), ((32..64).collect(), vec![32]));
    let message = format!("{error}");
    assert!(message.contains("block (0, 0, 0)") && message.contains("threads 32-63 did not arrive"), "{message}");

    // Exits first, then the barrier: the same error, told by the arriving thread.
    let error = run_err(&setup(Dim3::x(1), Dim3::x(64)), || {
        if thread_rank() < 32 {
            return;
        }
        sync_threads();
    });
    let EmulatorError::BarrierExited { missing, exited, .. } = &error else { panic!("{error}") };
    assert_eq!((missing.clone(), exited.clone()), ((0..32).chain(33..64).collect(), (0..32).collect()));
}

#[test]
fn barriers_at_two_call_sites_are_an_error_naming_both() {
    let error = run_err(&setup(Dim3::x(1), Dim3::x(64)), || {
        // Two call sites of one barrier, as a GPU would accept but CUDA forbids.
        #[allow(clippy::if_same_then_else)]
        if thread_rank().is_multiple_of(2) {
            sync_threads();
        } else {
            sync_threads();
        }
    });
    let EmulatorError::BarrierSites { first, at_first, second, at_second, .. } = &error else { panic!("{error}") };
    assert_eq!((at_first.clone(), at_second.clone()), (vec![0], vec![1]));
    assert_eq!(first.line() + 2, second.line());
}

#[test]
fn a_shuffle_naming_an_exited_or_missing_lane_is_an_error() {
    let error = run_err(&setup(Dim3::x(1), Dim3::x(32)), || {
        if lane_id() == 5 {
            return;
        }
        // SAFETY: the emulator reports the exited lane.
        unsafe { shfl_xor(FULL_MASK, 0, 1) };
    });
    let EmulatorError::Warp { warp: 0, op: WarpOp::ShuffleXor, problem, .. } = &error else { panic!("{error}") };
    assert_eq!(*problem, WarpProblem::ExitedLanes { lanes: vec![5], mask: FULL_MASK });

    // A warp reduction on a partial warp: lanes 8..32 of warp 1 do not exist.
    let error = run_err(&setup(Dim3::x(1), Dim3::x(40)), || {
        // SAFETY: the emulator reports the missing lanes.
        unsafe { block::warp_sum_u32(1) };
    });
    let EmulatorError::Warp { warp: 1, problem, .. } = &error else { panic!("{error}") };
    assert_eq!(*problem, WarpProblem::ExitedLanes { lanes: (8..32).collect(), mask: FULL_MASK });
}

#[test]
fn a_warp_operation_outside_its_contract_is_an_error() {
    // The calling lane outside its mask.
    let error = run_err(&setup(Dim3::x(1), Dim3::x(32)), || {
        // SAFETY: the emulator reports the breach.
        unsafe { vote_any(0xFFFF_FFFE, true) };
    });
    let EmulatorError::Warp { problem, .. } = &error else { panic!("{error}") };
    assert_eq!(*problem, WarpProblem::CallerOutsideMask { lane: 0, mask: 0xFFFF_FFFE });

    // A shuffle reading a lane outside the mask.
    let error = run_err(&setup(Dim3::x(1), Dim3::x(32)), || {
        if lane_id() < 2 {
            // SAFETY: the emulator reports the breach.
            unsafe { shfl_idx(0b11, 0, 5) };
        }
    });
    let EmulatorError::Warp { op: WarpOp::ShuffleIdx, problem, .. } = &error else { panic!("{error}") };
    assert_eq!(*problem, WarpProblem::SourceOutsideMask { lane: 0, source_lane: 5, mask: 0b11 });

    // Lanes of one mask at two call sites.
    let error = run_err(&setup(Dim3::x(1), Dim3::x(32)), || {
        #[allow(clippy::if_same_then_else)]
        // SAFETY: the emulator reports the breach.
        unsafe {
            if lane_id() < 16 {
                vote_all(FULL_MASK, true);
            } else {
                vote_all(FULL_MASK, true);
            }
        }
    });
    let EmulatorError::Warp {
        problem: WarpProblem::Elsewhere { lane: 16, waiting, other_op: WarpOp::VoteAll, .. },
        ..
    } = &error
    else {
        panic!("{error}")
    };
    assert_eq!(*waiting, (0..16).collect::<Vec<_>>());
}

/// A barrier at one call site for every thread that reaches it.
fn meet() {
    sync_threads();
}

#[test]
fn a_shuffle_and_a_barrier_waiting_for_each_other_are_a_deadlock() {
    let error = run_err(&setup(Dim3::x(1), Dim3::x(64)), || {
        if thread_rank() != 0 {
            // SAFETY: lane 0 of warp 0 never comes; the emulator reports it.
            unsafe { shfl_xor(FULL_MASK, 0, 1) };
        }
        meet();
    });
    let EmulatorError::Deadlock { waiting, missing, .. } = &error else { panic!("{error}") };
    assert_eq!((waiting.clone(), missing.clone()), (core::iter::once(0).chain(32..64).collect(), (1..32).collect()));
}

#[test]
fn a_panic_in_one_thread_is_an_error_and_releases_the_others() {
    let error = run_err(&setup(Dim3::x(2), Dim3::x(64)), || {
        let table = [0u32; 4];
        if block_idx().x == 1 && thread_rank() == 17 {
            let index = thread_rank() as usize;
            std::hint::black_box(table[std::hint::black_box(index)]);
        }
        sync_threads();
    });
    let EmulatorError::Panicked { block, thread, message, .. } = &error else { panic!("{error}") };
    assert_eq!((*block, *thread), (at(1), at(17)));
    assert!(message.contains("index out of bounds"), "{message}");
}

#[test]
fn static_shared_memory_past_the_limits_is_an_error() {
    static_shared!(fn huge: [u8; limits::STATIC_SHARED_BYTES + 1]);
    static_shared!(fn small: [u32; 4]);
    let error = run_err(&setup(Dim3::x(1), Dim3::x(1)), || {
        huge();
    });
    let EmulatorError::StaticShared { bytes, limit, .. } = &error else { panic!("{error}") };
    assert_eq!((*bytes, *limit), (limits::STATIC_SHARED_BYTES + 1, limits::STATIC_SHARED_BYTES));

    let mut full = setup(Dim3::x(1), Dim3::x(1));
    full.dynamic_shared_bytes = limits::SHARED_BYTES - 8;
    let error = run_err(&full, || {
        small();
    });
    let EmulatorError::StaticShared { bytes: 16, limit: 8, .. } = &error else { panic!("{error}") };
}

#[test]
fn a_launch_past_the_gpus_limits_is_refused_before_any_thread_runs() {
    /// Whether any emulated thread ran (only this test sets it).
    static RAN: AtomicBool = AtomicBool::new(false);
    let cases = [
        (Dim3::x(0), Dim3::x(32), 0, LaunchProblem::Empty { what: "grid", extent: Dim3::x(0) }),
        (
            Dim3::x(1),
            Dim3 { x: 4, y: 0, z: 1 },
            0,
            LaunchProblem::Empty { what: "block", extent: Dim3 { x: 4, y: 0, z: 1 } },
        ),
        (Dim3::x(1), Dim3::x(1025), 0, LaunchProblem::Extent { what: "block", axis: 'x', value: 1025, limit: 1024 }),
        (
            Dim3::x(1),
            Dim3 { x: 1, y: 1, z: 65 },
            0,
            LaunchProblem::Extent { what: "block", axis: 'z', value: 65, limit: 64 },
        ),
        (
            Dim3 { x: 1, y: 65536, z: 1 },
            Dim3::x(1),
            0,
            LaunchProblem::Extent { what: "grid", axis: 'y', value: 65536, limit: 65535 },
        ),
        (
            Dim3::x(1),
            Dim3 { x: 32, y: 32, z: 2 },
            0,
            LaunchProblem::TooManyThreads { block: Dim3 { x: 32, y: 32, z: 2 }, threads: 2048, limit: 1024 },
        ),
        (
            Dim3::x(1),
            Dim3::x(32),
            limits::SHARED_BYTES + 1,
            LaunchProblem::DynamicShared { bytes: 232_449, limit: 232_448 },
        ),
    ];
    for (grid, block, dynamic_shared_bytes, problem) in cases {
        let setup = Launch { kernel: "refused", grid, block, dynamic_shared_bytes };
        let error = run_err(&setup, || RAN.store(true, Ordering::Relaxed));
        assert_eq!(error, EmulatorError::Launch { kernel: "refused", problem });
    }
    assert!(!RAN.load(Ordering::Relaxed));
}

#[test]
fn the_block_functions_outside_a_launch_panic_with_a_clear_message() {
    let outside =
        std::thread::spawn(|| std::panic::catch_unwind(thread_idx).map_err(|p| p.downcast::<String>().map(|m| *m)));
    let message = outside.join().expect("the thread returns").expect_err("it panics").expect("a formatted message");
    assert!(message.contains("thread_idx was called outside device_support::emulator::launch"), "{message}");
}

// ---------------------------------------------------------------------------------------
// KernelArgs

#[test]
fn kernel_args_carry_raw_pointers_to_every_thread() {
    let setup = setup(Dim3::x(3), Dim3 { x: 8, y: 2, z: 1 });
    let mut out = vec![u32::MAX; 48];
    // SAFETY: only the launch's threads use the pointer, and `out` outlives it.
    let args = unsafe { KernelArgs::new((out.as_mut_ptr(), out.len())) };
    run(&setup, || {
        let (out, len) = args.get();
        let at = global_rank();
        assert!(at < len, "rank {at} within the buffer");
        // SAFETY: `at` < `len`, one slot per thread, and the emulator orders the accesses.
        unsafe { *out.add(at) = at as u32 * 3 };
    });
    assert_eq!(out, (0..48).map(|i| i * 3).collect::<Vec<u32>>());
}
