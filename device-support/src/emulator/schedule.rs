//! The state of the running block, under the launch's one lock: which thread holds the
//! baton, where each thread waits, the open barrier and warp operations, and the rules
//! that turn a wait that can never complete into an [`EmulatorError`].
//!
//! Every transition here is a plain function of the state and the arriving thread, so
//! the schedule (and with it every result) depends only on the kernel and its inputs.

use super::error::{EmulatorError, Site, WarpOp, WarpProblem};
use super::sanitizer::Order;
use shared::launch::{Dim3, WARP_SIZE};
use std::vec;
use std::vec::Vec;

/// The block barrier's four forms (`barrier.sync`, `barrier.red.popc/and/or`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BarrierForm {
    Plain,
    Count,
    And,
    Or,
}

/// Where an emulated thread is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    /// Runs, or may run when the baton comes to it.
    Ready,
    /// Waits at the open block barrier.
    AtBarrier,
    /// Waits in an open warp operation of its warp.
    InWarpOp,
    /// Returned from the kernel body.
    Exited,
}

/// The block barrier while threads gather at it.
struct BarrierWait {
    site: Site,
    form: BarrierForm,
    arrived: Vec<u32>,
    count_true: u32,
}

/// A warp operation while the lanes of its mask gather.
struct WarpWait {
    op: WarpOp,
    site: Site,
    mask: u32,
    arrived: u32,
    values: [u32; WARP_SIZE as usize],
    operands: [u32; WARP_SIZE as usize],
}

/// The emulated launch's state: the running block and its threads.
pub(super) struct State {
    kernel: &'static str,
    grid: Dim3,
    threads: u32,
    /// The running block's linear index (`Dim3::rank_in` the grid).
    block: u64,
    status: Vec<Status>,
    /// How many threads of the block have exited.
    exited: u32,
    /// Each thread's result of its last completed barrier or warp operation.
    results: Vec<u32>,
    /// The one thread that may run.
    pub(super) baton: u32,
    barrier: Option<BarrierWait>,
    /// Per warp, its open operations (their masks are disjoint).
    warps: Vec<Vec<WarpWait>>,
    /// The launch has ended: every block is done, or an error stopped it.
    pub(super) over: bool,
    /// The first error, which ended the launch.
    pub(super) error: Option<EmulatorError>,
    /// The running block's happens-before order, for the sanitizer.
    pub(super) order: Order,
    /// How many times the baton has passed from one thread to another (or, at a new
    /// block, to thread 0).
    pub(super) handovers: u64,
}

impl State {
    /// Block 0 of a launch of `grid` blocks of `threads` threads, thread 0 to run.
    pub(super) fn new(kernel: &'static str, grid: Dim3, threads: u32) -> State {
        State {
            kernel,
            grid,
            threads,
            block: 0,
            status: vec![Status::Ready; threads as usize],
            exited: 0,
            results: vec![0; threads as usize],
            baton: 0,
            barrier: None,
            warps: (0..threads.div_ceil(WARP_SIZE)).map(|_| Vec::new()).collect(),
            over: false,
            error: None,
            order: Order::new(threads),
            handovers: 0,
        }
    }

    /// The running block's index.
    pub(super) fn block_idx(&self) -> Dim3 {
        let (x, y) = (u64::from(self.grid.x), u64::from(self.grid.y));
        let b = self.block;
        Dim3 { x: (b % x) as u32, y: (b / x % y) as u32, z: (b / (x * y)) as u32 }
    }

    /// Thread `rank`'s result of its last completed barrier or warp operation.
    pub(super) fn result(&self, rank: u32) -> u32 {
        self.results[rank as usize]
    }

    /// Ends the launch with `error` unless an earlier one ended it.
    pub(super) fn stop(&mut self, error: EmulatorError) {
        self.error.get_or_insert(error);
        self.over = true;
    }

    /// Thread `rank` arrives at the block barrier at `site`. The last thread to arrive
    /// completes it: every thread is ready again, with the form's reduction of the
    /// predicates as its result.
    pub(super) fn arrive_barrier(
        &mut self,
        rank: u32,
        form: BarrierForm,
        predicate: bool,
        site: Site,
    ) -> Result<(), EmulatorError> {
        let (kernel, block) = (self.kernel, self.block_idx());
        if self.exited > 0 {
            let exited = self.ranks_with(Status::Exited);
            let arrived = self.barrier.as_ref().map_or(&[][..], |b| &b.arrived[..]);
            let missing = (0..self.threads).filter(|r| *r != rank && !arrived.contains(r)).collect();
            return Err(EmulatorError::BarrierExited { kernel, block, site, missing, exited });
        }
        let barrier = self.barrier.get_or_insert(BarrierWait { site, form, arrived: Vec::new(), count_true: 0 });
        if !same_site(barrier.site, site) || barrier.form != form {
            return Err(EmulatorError::BarrierSites {
                kernel,
                block,
                first: barrier.site,
                at_first: barrier.arrived.clone(),
                second: site,
                at_second: vec![rank],
            });
        }
        barrier.arrived.push(rank);
        barrier.count_true += u32::from(predicate);
        self.status[rank as usize] = Status::AtBarrier;
        if barrier.arrived.len() == self.threads as usize {
            let (count, threads) = (barrier.count_true, self.threads);
            let result = match barrier.form {
                BarrierForm::Plain => 0,
                BarrierForm::Count => count,
                BarrierForm::And => u32::from(count == threads),
                BarrierForm::Or => u32::from(count > 0),
            };
            self.barrier = None;
            self.status.fill(Status::Ready);
            self.results.fill(result);
            self.order.barrier();
        }
        Ok(())
    }

    /// Thread `rank` arrives at warp operation `op` at `site` with `mask`, its `value`
    /// and its `operand` (source lane, delta or lane mask; unused by votes). The last lane
    /// of `mask` to arrive completes it: every lane of `mask` is ready again, with its
    /// result.
    pub(super) fn arrive_warp(
        &mut self,
        rank: u32,
        op: WarpOp,
        (mask, value, operand): (u32, u32, u32),
        site: Site,
    ) -> Result<(), EmulatorError> {
        let (warp, lane) = (rank / WARP_SIZE, rank % WARP_SIZE);
        let (kernel, block) = (self.kernel, self.block_idx());
        let error = move |problem| EmulatorError::Warp { kernel, block, warp, op, site, problem };
        if mask & (1 << lane) == 0 {
            return Err(error(WarpProblem::CallerOutsideMask { lane, mask }));
        }
        let waits = &self.warps[warp as usize];
        let index = match waits.iter().position(|w| w.mask & mask != 0) {
            Some(i) => {
                let w = &waits[i];
                // `bar.warp.sync` needs only the same mask on sm_70+ (not the same
                // instruction); the shuffles and votes need the same call.
                let same_call = op == WarpOp::SyncWarp || same_site(w.site, site);
                if w.mask != mask || w.op != op || !same_call {
                    let (other_op, other_site, other_mask) = (w.op, w.site, w.mask);
                    let waiting = lanes_of(w.arrived);
                    return Err(error(WarpProblem::Elsewhere {
                        lane,
                        mask,
                        waiting,
                        other_op,
                        other_site,
                        other_mask,
                    }));
                }
                i
            }
            None if mask & !self.live_lanes(warp) != 0 => {
                let lanes = lanes_of(mask & !self.live_lanes(warp));
                return Err(error(WarpProblem::ExitedLanes { lanes, mask }));
            }
            None => {
                let zeros = [0; WARP_SIZE as usize];
                self.warps[warp as usize].push(WarpWait { op, site, mask, arrived: 0, values: zeros, operands: zeros });
                self.warps[warp as usize].len() - 1
            }
        };
        let wait = &mut self.warps[warp as usize][index];
        wait.arrived |= 1 << lane;
        wait.values[lane as usize] = value;
        wait.operands[lane as usize] = operand;
        self.status[rank as usize] = Status::InWarpOp;
        if wait.arrived == mask {
            let wait = self.warps[warp as usize].swap_remove(index);
            // Only `bar.warp.sync` orders memory among its lanes (PTX: "also guarantee
            // memory ordering among threads participating in barrier"); `shfl.sync` and
            // `vote.sync` wait for the lanes but promise no ordering of their accesses.
            if wait.op == WarpOp::SyncWarp {
                self.order.warp_barrier(warp, mask);
            }
            for l in lanes_of(mask) {
                let result = warp_result(wait.op, wait.mask, l, &wait.values, &wait.operands)
                    .map_err(|source_lane| error(WarpProblem::SourceOutsideMask { lane: l, source_lane, mask }))?;
                let r = (warp * WARP_SIZE + l) as usize;
                self.results[r] = result;
                self.status[r] = Status::Ready;
            }
        }
        Ok(())
    }

    /// Thread `rank` returns from the kernel body; whether that was the block's last
    /// thread. An exit that a waiting barrier or warp operation needed is an error.
    pub(super) fn exit(&mut self, rank: u32) -> Result<bool, EmulatorError> {
        self.status[rank as usize] = Status::Exited;
        self.exited += 1;
        let (kernel, block) = (self.kernel, self.block_idx());
        if let Some(barrier) = &self.barrier {
            let (exited, missing) = (self.ranks_with(Status::Exited), self.not_arrived(barrier));
            return Err(EmulatorError::BarrierExited { kernel, block, site: barrier.site, missing, exited });
        }
        let (warp, lane) = (rank / WARP_SIZE, rank % WARP_SIZE);
        if let Some(w) = self.warps[warp as usize].iter().find(|w| w.mask & (1 << lane) != 0) {
            let problem = WarpProblem::ExitedLanes { lanes: vec![lane], mask: w.mask };
            return Err(EmulatorError::Warp { kernel, block, warp, op: w.op, site: w.site, problem });
        }
        Ok(self.exited == self.threads)
    }

    /// After the block's last exit: starts the next block with thread 0, or, after the
    /// grid's last block, ends the launch. Whether a block was started.
    pub(super) fn next_block(&mut self) -> bool {
        self.block += 1;
        if self.block == self.grid.volume() {
            self.over = true;
            return false;
        }
        self.status.fill(Status::Ready);
        self.exited = 0;
        self.baton = 0;
        self.handovers += 1;
        self.order.reset();
        true
    }

    /// Hands the baton from `rank` to the next ready thread in rank order after it
    /// (`rank` itself last). None ready: every live thread waits and no wait can complete.
    pub(super) fn hand_on(&mut self, rank: u32) -> Result<(), EmulatorError> {
        let next =
            (1..=self.threads).map(|k| (rank + k) % self.threads).find(|&r| self.status[r as usize] == Status::Ready);
        match next {
            Some(r) => {
                self.handovers += u64::from(r != rank);
                self.baton = r;
                Ok(())
            }
            None => Err(self.deadlock()),
        }
    }

    /// The deadlock error, told from the lowest-ranked waiting thread's wait.
    fn deadlock(&self) -> EmulatorError {
        let (kernel, block) = (self.kernel, self.block_idx());
        let at_barrier = self.ranks_with(Status::AtBarrier);
        let in_warp_op = self.ranks_with(Status::InWarpOp);
        let barrier_first = at_barrier.first() < in_warp_op.first() || in_warp_op.is_empty();
        match (&self.barrier, barrier_first) {
            (Some(barrier), true) => {
                let missing = self.not_arrived(barrier);
                EmulatorError::Deadlock { kernel, block, site: barrier.site, waiting: barrier.arrived.clone(), missing }
            }
            _ => {
                let rank = in_warp_op[0];
                let warp = rank / WARP_SIZE;
                let base = warp * WARP_SIZE;
                let wait = self.warps[warp as usize].iter().find(|w| w.arrived & (1 << (rank % WARP_SIZE)) != 0);
                let wait = wait.expect("a thread in a warp operation is in one of its warp's open operations");
                let waiting = lanes_of(wait.arrived).into_iter().map(|l| base + l).collect();
                let missing = lanes_of(wait.mask & !wait.arrived).into_iter().map(|l| base + l).collect();
                EmulatorError::Deadlock { kernel, block, site: wait.site, waiting, missing }
            }
        }
    }

    /// The lanes of `warp` that exist (a partial last warp has fewer than 32) and have
    /// not exited.
    fn live_lanes(&self, warp: u32) -> u32 {
        (0..WARP_SIZE)
            .filter(|&l| self.status.get((warp * WARP_SIZE + l) as usize).is_some_and(|&s| s != Status::Exited))
            .fold(0, |m, l| m | 1 << l)
    }

    /// The threads that have not arrived at `barrier`.
    fn not_arrived(&self, barrier: &BarrierWait) -> Vec<u32> {
        (0..self.threads).filter(|r| !barrier.arrived.contains(r)).collect()
    }

    fn ranks_with(&self, status: Status) -> Vec<u32> {
        (0..self.threads).filter(|&r| self.status[r as usize] == status).collect()
    }
}

/// Whether two call sites are one: the same `Location` (the usual case, compared by
/// address) or equal ones (a site's `Location` may be emitted more than once).
fn same_site(a: Site, b: Site) -> bool {
    core::ptr::eq(a, b) || a == b
}

/// The lanes whose bits `mask` has, in order.
fn lanes_of(mask: u32) -> Vec<u32> {
    (0..WARP_SIZE).filter(|l| mask & (1 << l) != 0).collect()
}

/// Lane `lane`'s result of warp operation `op` over `mask`, from every lane's value and
/// operand, by PTX's rules for a width of 32 (`shfl.sync` with `c` = 0 for up, 0x1f
/// otherwise): idx reads lane `operand mod 32`; up lane `lane - operand`, down lane
/// `lane + operand`, xor lane `lane ^ operand`, each keeping its own value where that
/// lane is below 0 or past 31 (the operand taken as an unsigned number, no wrap). Err:
/// the source lane, which is not in `mask` (PTX leaves that value undefined).
fn warp_result(op: WarpOp, mask: u32, lane: u32, values: &[u32; 32], operands: &[u32; 32]) -> Result<u32, u32> {
    let operand = operands[lane as usize];
    let in_mask = |l: u32| mask & (1 << l) != 0;
    let source = match op {
        // PTX reads only the low 5 bits of the lane or delta operand (`bval = b[4:0]`).
        WarpOp::ShuffleIdx => Some(operand % WARP_SIZE),
        WarpOp::ShuffleUp => lane.checked_sub(operand % WARP_SIZE),
        WarpOp::ShuffleDown => Some(lane + operand % WARP_SIZE).filter(|&l| l < WARP_SIZE),
        WarpOp::ShuffleXor => Some(lane ^ (operand % WARP_SIZE)),
        WarpOp::VoteAll => return Ok(u32::from(lanes_of(mask).iter().all(|&l| values[l as usize] != 0))),
        WarpOp::VoteAny => return Ok(u32::from(lanes_of(mask).iter().any(|&l| values[l as usize] != 0))),
        WarpOp::VoteBallot => {
            return Ok(lanes_of(mask).iter().filter(|&&l| values[l as usize] != 0).fold(0, |b, l| b | 1 << l));
        }
        WarpOp::SyncWarp => return Ok(0),
    };
    let source = source.unwrap_or(lane);
    match in_mask(source) {
        true => Ok(values[source as usize]),
        false => Err(source),
    }
}
