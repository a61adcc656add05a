//! The CPU emulator of [`crate::block`]: it runs **the same kernel function, compiled
//! for the host**, as real blocks of threads, so a kernel with barriers, shared memory,
//! warp operations and atomics is tested without a GPU.
//!
//! ```ignore
//! use device_support::block::Dim3;
//! use device_support::emulator::{Launch, launch};
//! let setup = Launch { kernel: "amax", grid: Dim3::x(16), block: Dim3::x(256), dynamic_shared_bytes: 0 };
//! // SAFETY (inside): the buffers are the kernel's, of the lengths it is told.
//! launch(&setup, || unsafe { amax_body(x.as_ptr(), x.len() as u64, out) })?;
//! ```
//!
//! # What is emulated, and how
//! * **Threads.** Every thread of a block is a stackful coroutine (`corosensei`, a stack
//!   of [`STACK_BYTES`] each, kept by the calling thread for its next launch) on the
//!   thread that called [`launch`]; the same coroutines
//!   serve block after block, so the grid's blocks run one after another, in order of
//!   their linear index. The block functions read the running thread's indices from a
//!   thread-local context, and panic with a clear message when called outside [`launch`].
//! * **A deterministic schedule.** Exactly one emulated thread runs at a time. It runs
//!   until its next sync point (a barrier, a shuffle or vote, an atomic, a fence) or its
//!   exit, then hands the baton to the next ready thread in rank order and suspends; the
//!   launch resumes whoever holds the baton. The same kernel and inputs therefore give the same result
//!   on every run and machine, f32 atomic-add order included (the threads of a block
//!   reach their first atomic in rank order, and so on), and a 2-core machine is never
//!   asked to run 1024 threads at once.
//! * **Barriers.** `sync_threads` and its count/and/or forms complete when every thread
//!   of the block has arrived at the same call site. A thread that exits while others
//!   wait, or before a barrier others reach, is an [`EmulatorError::BarrierExited`];
//!   barriers at two call sites are [`EmulatorError::BarrierSites`]. This is CUDA's rule
//!   (a barrier in conditional code must be reached by the whole block), stricter than
//!   sm_70+ hardware, which lets exited threads out of `bar.sync`.
//! * **Warps** are 32 consecutive thread ranks; a block whose size is not a multiple of
//!   32 has a partial last warp whose missing lanes count as exited. A shuffle or vote
//!   waits for every lane of `mask`, which must all make the same call (site, operation
//!   and mask), as `shfl.sync`/`vote.sync` on sm_70+ require; the warp barrier
//!   (`sync_warp`) needs the same mask only, at any call site, as `bar.warp.sync` on
//!   sm_70+. The calling lane must be in `mask`, no lane of it may have exited, and a
//!   shuffle may not read a lane outside it: each is an [`EmulatorError::Warp`]. Each shuffle mode is PTX's with a width of
//!   32 (see [`WarpOp`]).
//! * **Shared memory.** Per block, the dynamic buffer of the launch's
//!   `dynamic_shared_bytes` (aligned to 16) and the static arrays of
//!   `static_shared!`, found by their unique names; all filled with [`FILL_WORD`] when
//!   a block starts (uninitialised on a GPU; here the same wrong values on every run,
//!   for code that reads it through a raw pointer), and checked by the sanitizer below.
//! * **The sanitizer** (NVIDIA's compute-sanitizer racecheck, memcheck and initcheck,
//!   for shared memory, on the CPU). Every [`SharedSlice::read`](crate::block::SharedSlice::read)
//!   and `write`, and every atomic on shared memory, is recorded per byte with its
//!   thread, its place in the block's happens-before order and its call site
//!   (`#[track_caller]`, so the site is the kernel's line even through the block
//!   reductions). Each of these stops the launch with an error naming the kernel, the
//!   block, the thread(s), the array and element, and the call site(s):
//!   * [`EmulatorError::SharedRace`]: two threads touch one element with nothing ordering
//!     them, at least one writing, not both atomically. What orders them is a block
//!     barrier between, or warp barriers (`sync_warp`) whose masks link the two lanes: a
//!     warp barrier orders only the lanes it names, as on Volta and later. Shuffles and
//!     votes order no memory access (PTX promises memory ordering for `bar.warp.sync`
//!     alone), so a warp-synchronous exchange "ordered" by a vote is reported.
//!     Atomics and fences order nothing else here: a flag spun on is not modelled.
//!   * [`EmulatorError::SharedUninitialised`]: a read, or an atomic (which reads the old
//!     value: a counter nobody zeroed), of an element that no thread of the block has
//!     written with `write` (what an earlier block wrote does not count; nor does a store
//!     through a raw pointer, which the sanitizer does not see).
//!   * [`EmulatorError::SharedOutOfBounds`]: an index past the `SharedSlice`'s length, or a
//!     `SharedSlice` (made by `from_raw_parts`) that reaches past its array, including one
//!     that starts at the array's end: undefined behaviour on a GPU, an error here before
//!     any access. A slice that starts in no shared array (made from other memory) is
//!     only checked against its length.
//!
//!   The schedule is the one above, so a race is found where this schedule runs the two
//!   accesses between the same two barriers, which for a race in straight-line code is
//!   every run. Global memory is bounds-checked where a kernel reads and writes it
//!   through a [`GlobalSlice`](crate::block::GlobalSlice)
//!   ([`EmulatorError::GlobalOutOfBounds`]); raw pointers are not checked, and races in
//!   global memory are not reported.
//! * **Atomics** are the host's `core::sync::atomic` operations on the same addresses;
//!   scope does not matter when one thread runs at a time (it is accepted and ignored).
//!   f32 add is a compare-exchange loop with `atom.add.f32`'s rounding: to nearest even,
//!   subnormal inputs and results flushed to zero of their sign.
//! * **Errors, never hangs.** Any wait that can no longer complete is found when the
//!   baton is handed on (at the latest when no thread is ready:
//!   [`EmulatorError::Deadlock`]), and a panic in the kernel body (an index out of
//!   bounds, say) is [`EmulatorError::Panicked`]; either way the other threads are woken
//!   and unwind, and [`launch`] returns the error. (A thread that spins on an atomic
//!   flag that no thread will set, while the others wait at a barrier, keeps getting the
//!   baton back: a livelock, which the emulator does not detect, as a GPU would hang.)
//!
//! # What is not
//! * Memory-model weak orderings: every access is ordered by the baton, so a kernel with
//!   a missing fence gives this schedule's result, not a GPU's; races on global memory
//!   (raw pointers) are not reported.
//! * Concurrency between blocks: a block that spins on a flag another block sets hangs
//!   (the later block never starts), and so does a thread that loops forever without a
//!   sync point, as on a GPU.
//! * Anything rustc's nvptx backend or ptxas does to the kernel (the PTX checks and the
//!   GPU tests cover that). The body's own arithmetic is the host's: IEEE operations
//!   give the GPU's results but for NaN payloads (the GPU returns a canonical NaN; so may
//!   its f32 atomic add, where the emulator keeps the host's NaN), and library math
//!   (`sin`, `exp`) is the host's.
//! * The kernel body must unwind (a Rust function, not `extern "C"`), since stopped
//!   threads unwind out of it.
//! * A kernel body that overflows its [`STACK_BYTES`] stack stops the process at the
//!   stack's guard page (a segmentation fault, without Rust's stack-overflow message,
//!   which only knows OS threads' stacks). All emulated threads share the launching
//!   thread's thread-local variables.
//!
//! # Speed
//! The cost is in the hand-overs (a user-space stack switch and the schedule's
//! bookkeeping per thread and sync point), not in the elements. The benchmark
//! `cargo bench -p device-support --bench handover` runs a 2^20-element `u32` max (a
//! grid-stride loop, `block_max_u32`, one atomic per block) in 256-thread blocks, about
//! 2,460 hand-overs per block, on coroutines and, in the same run, on one OS thread per
//! emulated thread (the emulator's first form, kept for this comparison). On this
//! project's 2-core build machine (AMD EPYC, nothing else running, 2026-12-06), best of
//! 5: 16 blocks 6.4 ms against 478 ms, 64 blocks 14.5 ms against 2.30 s; 92 ns per
//! hand-over with the elements included (162 ns at 16 blocks, where the 2^20 elements
//! weigh on a quarter of the hand-overs), against 14.6 µs: 75 to 159 times less. A
//! thread keeps its coroutine stacks for its next launch, so only its first launch maps
//! them (64 blocks cold: 20.1 ms, 127 ns per hand-over; the pages a kernel touched stay
//! resident while the thread lives, at most 1,024 stacks). The example's fp8-scale
//! kernels run a 2^24-value tensor under the emulator in about 4 s in a debug build.

mod error;
mod memory;
mod run;
mod sanitizer;
mod schedule;

use shared::launch::Dim3;
use std::string::ToString;
use std::sync::Arc;

pub use error::{AccessKind, EmulatorError, LaunchProblem, OutOfBounds, SharedAccess, Site, WarpOp, WarpProblem};
pub use memory::FILL_WORD;
pub(crate) use run::{
    BarrierForm, barrier, block_dim, block_idx, dynamic_shared, global_access, grid_dim, lane_id, shared_access,
    thread_idx, warp, yield_baton,
};

/// The stack of each emulated thread: 256 KiB (a kernel body needs little; 1024 of them
/// reserve 256 MiB of address space, committed only as used).
pub const STACK_BYTES: usize = 256 * 1024;

/// The GPU's limits that [`launch`] checks (sm_75 … sm_120 agree on all but the shared
/// memory, where the largest, sm_90's, is used: a launch that passes here may still need
/// less shared memory on an older GPU).
pub mod limits {
    use shared::launch::Dim3;

    /// Threads per block.
    pub const THREADS_PER_BLOCK: u32 = 1024;
    /// The block's extent per axis.
    pub const BLOCK: Dim3 = Dim3 { x: 1024, y: 1024, z: 64 };
    /// The grid's extent per axis.
    pub const GRID: Dim3 = Dim3 { x: i32::MAX as u32, y: 65535, z: 65535 };
    /// Shared memory per block, static and dynamic together: 227 KiB, sm_90's (and
    /// sm_100's) opt-in maximum. sm_75 gives 64 KiB, sm_80 163 KiB, sm_86/89/120 99 KiB.
    pub const SHARED_BYTES: usize = 227 * 1024;
    /// Static shared memory per block (beyond it a GPU needs dynamic shared memory).
    pub const STATIC_SHARED_BYTES: usize = 48 * 1024;
}

/// One emulated launch: `grid` blocks of `block` threads with `dynamic_shared_bytes` of
/// dynamic shared memory each, named `kernel` in errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    pub kernel: &'static str,
    pub grid: Dim3,
    pub block: Dim3,
    pub dynamic_shared_bytes: usize,
}

/// A kernel body's arguments (raw pointers, lengths), made shareable with the emulated
/// threads of one [`launch`], whose closure must be `Sync`, which raw pointers are not.
///
/// ```ignore
/// // SAFETY: only this launch's threads use the pointers; the buffers outlive it.
/// let args = unsafe { KernelArgs::new((x.as_ptr(), x.len() as u64, out)) };
/// launch(&setup, || {
///     let (x, n, out) = args.get();
///     unsafe { amax_body(x, n, out) }
/// })?;
/// ```
#[derive(Clone, Copy, Debug)]
pub struct KernelArgs<T: Copy>(T);

// SAFETY: `KernelArgs::new`'s caller promises that only the threads of one emulated
// launch at a time use the value, not from drop code, and that it is sound to use from
// another thread when every use is ordered; those threads run one at a time and hand over
// through a lock at each sync point, so their accesses through it are ordered as the
// kernel's own contract (atomics, barriers) orders them. (Only the unwinding after an
// error runs several at once, hence the drop-code clause.)
unsafe impl<T: Copy> Sync for KernelArgs<T> {}

impl<T: Copy> KernelArgs<T> {
    /// Wraps `args` for the body of one [`launch`].
    ///
    /// # Safety
    /// * While a [`launch`] runs with the value (or a copy of it), only that launch's
    ///   emulated threads use it: no other launch at the same time, and no other thread
    ///   (the caller may use it before and after).
    /// * Whatever it points to outlives that use.
    /// * It is sound to use from another thread when every use is ordered by
    ///   happens-before: raw pointers, integers, references to `Cell`-like types; not a
    ///   type that must stay on the thread that made it.
    /// * The kernel body does not use it from drop code (a guard's `Drop`): when a launch
    ///   stops on an error, its threads unwind at the same time.
    pub unsafe fn new(args: T) -> Self {
        Self(args)
    }

    /// The arguments (a method, so that a closure captures the whole `KernelArgs`, not
    /// its fields, which would not be `Sync`).
    pub fn get(&self) -> T {
        self.0
    }
}

/// Runs `body`, the kernel body, once per thread of every block of `setup`, under the
/// schedule described in the [module docs](self), and returns when every thread has
/// exited or the first error has stopped the launch.
///
/// # Errors
/// [`EmulatorError::Launch`] before anything runs if `setup` passes [`limits`]; the
/// others as they happen (see [`EmulatorError`]).
pub fn launch(setup: &Launch, body: impl Fn() + Sync) -> Result<(), EmulatorError> {
    launch_on(setup, Threads::Coroutines, &body).map(|_handovers| ())
}

/// What the emulated threads are (for the hand-over benchmark, which compares the two;
/// [`launch`] uses coroutines).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threads {
    /// Stackful coroutines on the launching thread (`corosensei`): a hand-over is a
    /// user-space stack switch.
    Coroutines,
    /// One OS thread each, waking the next through a condition variable: a hand-over is
    /// a thread switch.
    Os,
}

/// [`launch`] on emulated threads of the kind `threads`: the same schedule either way, so
/// for a kernel that keeps the rules the same result and hand-overs, and the same error
/// where one thread breaks them (they may differ where the OS cannot start every thread,
/// since OS threads start running before the last is made, and in what drop code sees
/// when a stopped launch unwinds); how many times the baton passed between threads.
#[doc(hidden)]
pub fn launch_on(setup: &Launch, threads: Threads, body: &(dyn Fn() + Sync)) -> Result<u64, EmulatorError> {
    check_launch(setup).map_err(|problem| EmulatorError::Launch { kernel: setup.kernel, problem })?;
    let os_threads = threads == Threads::Os;
    let (kernel, grid, block, dynamic) = (setup.kernel, setup.grid, setup.block, setup.dynamic_shared_bytes);
    let shared = Arc::new(run::Shared::new(kernel, grid, block, dynamic, os_threads));
    let count = setup.block.volume() as u32;
    match threads {
        Threads::Coroutines => run::run_coroutines(&shared, count, body),
        Threads::Os => std::thread::scope(|scope| {
            for rank in 0..count {
                let mine = Arc::clone(&shared);
                let thread = std::thread::Builder::new()
                    .name(std::format!("{}:{rank}", setup.kernel))
                    .stack_size(STACK_BYTES)
                    .spawn_scoped(scope, move || run::run_thread(&mine, rank, body, run::Turn::Thread));
                if let Err(error) = thread {
                    shared.stop(EmulatorError::Spawn { kernel: setup.kernel, message: error.to_string() });
                    break;
                }
            }
        }),
    }
    shared.outcome()
}

/// Whether `setup` keeps [`limits`].
fn check_launch(setup: &Launch) -> Result<(), LaunchProblem> {
    for (what, extent, limit) in [("grid", setup.grid, limits::GRID), ("block", setup.block, limits::BLOCK)] {
        if extent.volume() == 0 {
            return Err(LaunchProblem::Empty { what, extent });
        }
        for (axis, value, limit) in [('x', extent.x, limit.x), ('y', extent.y, limit.y), ('z', extent.z, limit.z)] {
            if value > limit {
                return Err(LaunchProblem::Extent { what, axis, value, limit });
            }
        }
    }
    let threads = setup.block.volume();
    if threads > u64::from(limits::THREADS_PER_BLOCK) {
        return Err(LaunchProblem::TooManyThreads { block: setup.block, threads, limit: limits::THREADS_PER_BLOCK });
    }
    if setup.dynamic_shared_bytes > limits::SHARED_BYTES {
        return Err(LaunchProblem::DynamicShared { bytes: setup.dynamic_shared_bytes, limit: limits::SHARED_BYTES });
    }
    Ok(())
}

/// The calling block's static shared array `name` of `layout` (the target of
/// `static_shared!` on the host; not for direct use).
#[doc(hidden)]
pub fn __static_shared(name: &'static str, layout: core::alloc::Layout) -> *mut u8 {
    run::static_shared(name, layout)
}
