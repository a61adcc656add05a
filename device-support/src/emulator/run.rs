//! The emulated threads: one coroutine (or, for the benchmark's comparison, one OS
//! thread) per thread of a block, reused from block to block, each knowing
//! (thread-locally) which thread it is, and the baton that lets exactly one of them run.
//! A thread runs until its next sync point (barrier, warp operation, atomic, fence) or
//! its exit, then hands the baton to the next ready thread in rank order and suspends
//! (an OS thread: sleeps on its own condition variable) until the baton comes back.

use super::error::{AccessKind, EmulatorError, OutOfBounds, SharedAccess, Site, WarpOp};
use super::memory::Memory;
use super::sanitizer::{Access, Conflict};
use super::schedule::State;
use core::alloc::Layout;
use core::cell::Cell;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use shared::launch::{Dim3, WARP_SIZE};
use std::boxed::Box;
use std::string::{String, ToString};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::vec::Vec;

pub(crate) use super::schedule::BarrierForm;

/// What the emulated threads of a launch share.
pub(super) struct Shared {
    kernel: &'static str,
    grid: Dim3,
    block_dim: Dim3,
    inner: Mutex<Inner>,
    /// One per thread, so that handing on the baton wakes one thread, not all (OS
    /// threads only; coroutines are resumed by the scheduler).
    wake: Vec<Condvar>,
    /// Whether the emulated threads are OS threads (else coroutines).
    os_threads: bool,
}

struct Inner {
    state: State,
    memory: Memory,
}

/// How an emulated thread waits for the baton.
#[derive(Clone, Copy)]
pub(super) enum Turn {
    /// It is an OS thread: it sleeps on its condition variable.
    Thread,
    /// It is a coroutine on the launching thread: it suspends to the scheduler
    /// ([`run_coroutines`]), handing it the rank that holds the baton now, which the
    /// scheduler resumes. The pointer is the coroutine's own yielder, valid while the
    /// coroutine runs.
    Coroutine(*const Yielder<(), u32>),
}

/// The emulated thread that runs the kernel body now, on this OS thread.
struct Context {
    shared: Arc<Shared>,
    rank: u32,
    thread: Dim3,
    block: Dim3,
    turn: Turn,
}

std::thread_local! {
    /// The context of the emulated thread running on this OS thread: null, or a
    /// `Context` on the stack of [`run_thread`], which sets it around the kernel body and
    /// resets it to null before the `Context` goes away; a coroutine puts its own back
    /// after every suspension (or unwind out of one), so that while a coroutine runs it
    /// names that coroutine's live one. (Between a suspension and the next resume it may
    /// name the suspended coroutine's; nothing reads it then.)
    static CONTEXT: Cell<*const Context> = const { Cell::new(core::ptr::null()) };
}

std::thread_local! {
    /// The coroutine stacks of this thread's finished launches, reused by its next ones
    /// (at most [`MAX_POOLED_STACKS`]): mapping a stack and faulting in its first pages
    /// cost more than a small launch's hand-overs.
    static STACKS: core::cell::RefCell<Vec<DefaultStack>> = const { core::cell::RefCell::new(Vec::new()) };
}

/// The most stacks a thread keeps for its next launch: a block of 1,024 threads, CUDA's
/// largest (each of [`super::STACK_BYTES`] of address space, of which only the pages a
/// kernel touched are memory).
const MAX_POOLED_STACKS: usize = 1024;

/// The payload a thread unwinds out of the kernel body with when the launch has been
/// stopped (by an error elsewhere): not a panic of the kernel's.
struct Stopped;

impl Shared {
    /// The shared state of a launch of `grid` blocks of `block_dim` threads.
    pub(super) fn new(
        kernel: &'static str,
        grid: Dim3,
        block_dim: Dim3,
        dynamic_shared_bytes: usize,
        os_threads: bool,
    ) -> Shared {
        let threads = block_dim.volume() as u32;
        Shared {
            kernel,
            grid,
            block_dim,
            inner: Mutex::new(Inner {
                state: State::new(kernel, grid, threads),
                memory: Memory::new(dynamic_shared_bytes),
            }),
            wake: (0..if os_threads { threads } else { 0 }).map(|_| Condvar::new()).collect(),
            os_threads,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A poisoned lock means an emulated thread panicked outside the kernel body while
        // holding it; the state is still whole (every transition completes or errs first).
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ends the launch with `error` (unless one ended it already) and wakes every thread,
    /// so that each returns or unwinds.
    pub(super) fn stop(&self, error: EmulatorError) {
        let mut inner = self.lock();
        inner.state.stop(error);
        drop(inner);
        self.wake.iter().for_each(Condvar::notify_one);
    }

    /// The launch's outcome, after every thread has returned: its hand-overs of the
    /// baton, or its error.
    pub(super) fn outcome(&self) -> Result<u64, EmulatorError> {
        let mut inner = self.lock();
        inner.state.error.take().map_or(Ok(inner.state.handovers), Err)
    }

    /// Releases the lock, then wakes the thread that holds the baton now (so that it
    /// does not wake to a lock still held).
    fn wake_baton(&self, inner: MutexGuard<'_, Inner>) {
        let baton = inner.state.baton;
        drop(inner);
        if self.os_threads {
            self.wake[baton as usize].notify_one();
        }
    }

    /// Waits until the baton comes to `rank` (a coroutine suspends meanwhile, and takes
    /// its context with it); None if the launch ended first.
    fn wait_turn<'a>(
        &'a self,
        mut inner: MutexGuard<'a, Inner>,
        rank: u32,
        turn: Turn,
    ) -> Option<MutexGuard<'a, Inner>> {
        loop {
            if inner.state.over {
                return None;
            }
            if inner.state.baton == rank {
                return Some(inner);
            }
            inner = match turn {
                Turn::Thread => self.wake[rank as usize].wait(inner).unwrap_or_else(PoisonError::into_inner),
                Turn::Coroutine(yielder) => {
                    let baton = inner.state.baton;
                    drop(inner);
                    // Puts this thread's context back when the suspension returns, and also
                    // if it unwinds instead (a coroutine unwound on drop), so that the
                    // kernel body's drop code never sees another thread's.
                    let _restore = RestoreContext(CONTEXT.get());
                    // SAFETY: the yielder of the coroutine running this code, which lives
                    // as long as the coroutine (`Turn::Coroutine`).
                    unsafe { (*yielder).suspend(baton) };
                    drop(_restore);
                    self.lock()
                }
            };
        }
    }

    /// `rank`'s index in the block (x fastest).
    fn thread_of(&self, rank: u32) -> Dim3 {
        let (x, y) = (self.block_dim.x, self.block_dim.y);
        Dim3 { x: rank % x, y: rank / x % y, z: rank / (x * y) }
    }
}

/// Sets [`CONTEXT`] to the pointer it holds when dropped.
struct RestoreContext(*const Context);

impl Drop for RestoreContext {
    fn drop(&mut self) {
        CONTEXT.set(self.0);
    }
}

/// Emulated thread `rank` of every block in turn: waits for the baton, runs `body`, exits
/// (handing the baton on, or starting the next block), until the grid is done or an
/// error stops the launch. A panic of `body` stops the launch with
/// [`EmulatorError::Panicked`].
pub(super) fn run_thread(shared: &Arc<Shared>, rank: u32, body: &(dyn Fn() + Sync), turn: Turn) {
    let thread = shared.thread_of(rank);
    let mut held = None;
    loop {
        let inner = held.take().unwrap_or_else(|| shared.lock());
        let Some(inner) = shared.wait_turn(inner, rank, turn) else { return };
        let block = inner.state.block_idx();
        drop(inner);
        let context = Context { shared: Arc::clone(shared), rank, thread, block, turn };
        CONTEXT.set(&raw const context);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
        CONTEXT.set(core::ptr::null());
        drop(context);
        if let Err(payload) = outcome {
            if !payload.is::<Stopped>() {
                let message = panic_message(payload);
                shared.stop(EmulatorError::Panicked { kernel: shared.kernel, block, thread, message });
            }
            return;
        }
        let mut inner = shared.lock();
        if inner.state.over {
            return;
        }
        let next = match inner.state.exit(rank) {
            Ok(true) => {
                if !inner.state.next_block() {
                    drop(inner);
                    shared.wake.iter().for_each(Condvar::notify_one);
                    return;
                }
                inner.memory.refill();
                Ok(())
            }
            Ok(false) => inner.state.hand_on(rank),
            Err(error) => Err(error),
        };
        match next {
            // A coroutine keeps the lock into its wait for the next block's turn.
            Ok(()) if !shared.os_threads => held = Some(inner),
            Ok(()) => shared.wake_baton(inner),
            Err(error) => {
                drop(inner);
                shared.stop(error);
                return;
            }
        }
    }
}

/// Runs every emulated thread of the launch as a coroutine on the calling thread (each
/// on a stack of its own, [`super::STACK_BYTES`], the same coroutine serving block after
/// block): the one that holds the baton runs until its next sync point, where it
/// suspends, and so on until the grid is done or an error ends the launch; then every
/// unfinished coroutine is resumed once more, sees the launch over, and unwinds.
pub(super) fn run_coroutines(shared: &Arc<Shared>, threads: u32, body: &(dyn Fn() + Sync)) {
    let mut coroutines = Vec::with_capacity(threads as usize);
    for rank in 0..threads {
        let stack = match STACKS.with_borrow_mut(Vec::pop).map_or_else(|| DefaultStack::new(super::STACK_BYTES), Ok) {
            Ok(stack) => stack,
            Err(error) => {
                shared.stop(EmulatorError::Spawn { kernel: shared.kernel, message: error.to_string() });
                break;
            }
        };
        let mine = Arc::clone(shared);
        let run = move |yielder: &Yielder<(), u32>, ()| run_thread(&mine, rank, body, Turn::Coroutine(yielder));
        // SAFETY: `run` borrows `body`, which outlives `coroutines`: each coroutine is
        // driven to completion below, or dropped (and so unwound) when `coroutines` is,
        // before this function returns.
        coroutines.push(unsafe { Coroutine::with_stack_unchecked(stack, run) });
    }
    // A panic out of a coroutine (outside the kernel body, which `run_thread` catches)
    // stops the launch; every coroutine is then drained as after an error, and the panic
    // goes on, so that none is ever unwound by dropping it.
    let resume = |coroutine: &mut Coroutine<(), u32, ()>| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| coroutine.resume(())))
    };
    // The baton's holder, as the coroutine that suspended last handed it on (read under
    // the lock where none did: at the start, and after a coroutine returned).
    let read_baton = || {
        let inner = shared.lock();
        (!inner.state.over).then_some(inner.state.baton as usize)
    };
    let mut panic = None;
    let mut next = read_baton();
    while let Some(baton) = next {
        match coroutines.get_mut(baton) {
            Some(coroutine) if !coroutine.done() => match resume(coroutine) {
                Ok(CoroutineResult::Yield(baton)) => next = Some(baton as usize),
                Ok(CoroutineResult::Return(())) => next = read_baton(),
                Err(payload) => {
                    // Read before `stop`, which takes the lock again (it is not reentrant).
                    let block = shared.lock().state.block_idx();
                    shared.stop(EmulatorError::Panicked {
                        kernel: shared.kernel,
                        block,
                        thread: shared.thread_of(baton as u32),
                        message: "the emulator itself panicked".to_string(),
                    });
                    panic = Some(payload);
                    next = None;
                }
            },
            // None: the stacks ran out (the launch is stopped); a finished coroutine never
            // holds the baton of a launch that goes on.
            _ => break,
        }
    }
    for coroutine in &mut coroutines {
        while !coroutine.done() {
            if let Err(payload) = resume(coroutine) {
                panic.get_or_insert(payload);
            }
        }
    }
    // Every coroutine is done: their stacks go back to this thread's pool for its next
    // launch (mapped once, their pages already touched).
    STACKS.with_borrow_mut(|stacks| {
        let room = MAX_POOLED_STACKS.saturating_sub(stacks.len());
        stacks.extend(coroutines.into_iter().take(room).map(Coroutine::into_stack));
    });
    if let Some(payload) = panic {
        std::panic::resume_unwind(payload);
    }
}

/// A panic payload's message (`panic!` gives a `&str` or a `String`).
fn panic_message(payload: Box<dyn core::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => {
            payload.downcast_ref::<&str>().map_or_else(|| "a panic without a message".to_string(), |m| m.to_string())
        }
    }
}

/// `f` of the calling thread's context.
///
/// # Panics
/// Outside [`super::launch`]'s kernel body, naming `what` was called.
fn with_context<'a, R>(what: &str, f: impl FnOnce(&'a Context) -> R) -> R {
    match current_context() {
        Some(context) => f(context),
        None => panic!(
            "device_support::block::{what} was called outside device_support::emulator::launch: on the host there is no block to ask"
        ),
    }
}

/// The running emulated thread's context; None outside a kernel body.
fn current_context<'a>() -> Option<&'a Context> {
    // SAFETY: null or the running thread's live `Context` (see `CONTEXT`), which outlives
    // every use of the reference: each ends before the kernel body's next sync point or
    // return, and the `Context` lives until the body has returned.
    unsafe { CONTEXT.get().as_ref() }
}

/// Stops the launch with `error` and unwinds the calling thread out of the kernel body.
fn stop_and_unwind(shared: &Shared, error: EmulatorError) -> ! {
    shared.stop(error);
    std::panic::resume_unwind(Box::new(Stopped))
}

/// A sync point of the calling thread: `arrive` records it in the state, the baton goes
/// to the next ready thread, and the caller sleeps until it comes back; then its result
/// (of a barrier or warp operation) is returned.
fn sync_point(what: &str, arrive: impl FnOnce(&mut State, u32) -> Result<(), EmulatorError>) -> u32 {
    let (shared, rank, turn) = with_context(what, |c| (&*c.shared, c.rank, c.turn));
    let mut inner = shared.lock();
    let arrived = arrive(&mut inner.state, rank).and_then(|()| inner.state.hand_on(rank));
    if let Err(error) = arrived {
        drop(inner);
        stop_and_unwind(shared, error);
    }
    // An OS thread lets go of the lock to wake the next; a coroutine suspends holding the
    // state as it left it (`wait_turn` hands the scheduler the baton).
    if shared.os_threads {
        shared.wake_baton(inner);
        inner = shared.lock();
    }
    match shared.wait_turn(inner, rank, turn) {
        Some(inner) => inner.state.result(rank),
        None => std::panic::resume_unwind(Box::new(Stopped)),
    }
}

pub(crate) fn thread_idx() -> Dim3 {
    with_context("thread_idx", |c| c.thread)
}

pub(crate) fn block_idx() -> Dim3 {
    with_context("block_idx", |c| c.block)
}

pub(crate) fn block_dim() -> Dim3 {
    with_context("block_dim", |c| c.shared.block_dim)
}

pub(crate) fn grid_dim() -> Dim3 {
    with_context("grid_dim", |c| c.shared.grid)
}

pub(crate) fn lane_id() -> u32 {
    with_context("lane_id", |c| c.rank % WARP_SIZE)
}

/// The block barrier in `form`; the form's reduction of the block's predicates.
pub(crate) fn barrier(form: BarrierForm, predicate: bool, site: Site) -> u32 {
    sync_point("sync_threads", |state, rank| state.arrive_barrier(rank, form, predicate, site))
}

/// Warp operation `op` with `(mask, value, operand)`; the calling lane's result.
pub(crate) fn warp(op: WarpOp, args: (u32, u32, u32), site: Site) -> u32 {
    sync_point("a warp operation", |state, rank| state.arrive_warp(rank, op, args, site))
}

/// A sync point that waits for nobody (an atomic, a fence): the baton goes round once.
pub(crate) fn yield_baton(what: &str) {
    sync_point(what, |_, _| Ok(()));
}

/// The sanitizer's check of one access, of `kind` at `site`, to value `index` of a
/// `SharedSlice` of `len` values of `size` bytes at `base` (an atomic: one value):
/// returns if it is in bounds, initialised and ordered against every earlier access to
/// its bytes, and records it; otherwise stops the launch with the error and unwinds.
/// Memory that is not the block's shared memory (a `SharedSlice` made from other memory
/// by `from_raw_parts`, an atomic on global memory) is only bounds-checked. Outside
/// [`super::launch`], an index out of bounds panics.
pub(crate) fn shared_access(base: *const u8, index: usize, len: usize, size: usize, kind: AccessKind, site: Site) {
    let context = current_context().map(|c| (&*c.shared, c.rank, c.thread, c.block));
    let Some((shared, rank, thread, block)) = context else {
        assert!(index < len, "SharedSlice index {index} out of bounds (len {len}) at {site}");
        return;
    };
    let kernel = shared.kernel;
    let out_of_bounds = |what| EmulatorError::SharedOutOfBounds { kernel, block, thread, what, site };
    let mut inner = shared.lock();
    let checked = if index >= len {
        Err(out_of_bounds(OutOfBounds::Index { index, len }))
    } else {
        let Inner { state, memory } = &mut *inner;
        match memory.holding(base as usize) {
            None => Ok(()),
            Some((array, start, shadow)) => {
                let offset = base as usize - start + index * size;
                if offset + size > shadow.len() {
                    Err(out_of_bounds(OutOfBounds::PastArray { array, offset, bytes: size, size: shadow.len() }))
                } else {
                    let now = Access { rank, at: state.order.moment(rank), kind, site };
                    let conflict =
                        shadow[offset..offset + size].iter_mut().find_map(|b| b.access(now, &state.order).err());
                    let index = offset / size;
                    conflict.map_or(Ok(()), |conflict| {
                        Err(match conflict {
                            Conflict::Uninitialised => {
                                EmulatorError::SharedUninitialised { kernel, block, thread, array, index, site }
                            }
                            Conflict::Race(earlier) => {
                                let first = SharedAccess {
                                    thread: shared.thread_of(earlier.rank),
                                    kind: earlier.kind,
                                    site: earlier.site,
                                };
                                let second = SharedAccess { thread, kind, site };
                                EmulatorError::SharedRace { kernel, block, array, index, first, second }
                            }
                        })
                    })
                }
            }
        }
    };
    if let Err(error) = checked {
        drop(inner);
        stop_and_unwind(shared, error);
    }
}

/// The bounds check of value `index` of a `GlobalSlice` of `len` values at `site`: an
/// index past the end stops the launch with the error and unwinds (outside
/// [`super::launch`], it panics).
pub(crate) fn global_access(index: usize, len: usize, site: Site) {
    if index < len {
        return;
    }
    let Some(context) = current_context() else {
        panic!("GlobalSlice index {index} out of bounds (len {len}) at {site}");
    };
    let (kernel, block, thread) = (context.shared.kernel, context.block, context.thread);
    stop_and_unwind(&context.shared, EmulatorError::GlobalOutOfBounds { kernel, block, thread, index, len, site });
}

/// The block's dynamic shared memory.
pub(crate) fn dynamic_shared() -> (*mut u8, usize) {
    let shared = with_context("dynamic_shared", |c| Arc::clone(&c.shared));
    shared.lock().memory.dynamic()
}

/// The block's static shared array `name` of `layout`.
pub(super) fn static_shared(name: &'static str, layout: Layout) -> *mut u8 {
    let shared = with_context("static_shared!", |c| Arc::clone(&c.shared));
    let array = shared.lock().memory.static_array(shared.kernel, name, layout);
    array.unwrap_or_else(|error| stop_and_unwind(&shared, error))
}
