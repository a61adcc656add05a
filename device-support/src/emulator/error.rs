//! What can go wrong in an emulated launch: each a one-line message naming the kernel,
//! the block and, where there is one, the call site and the threads concerned.

use core::fmt;
use core::panic::Location;
use shared::launch::Dim3;
use std::string::String;
use std::vec::Vec;

/// A call site of a barrier or a warp operation (`#[track_caller]`).
pub type Site = &'static Location<'static>;

/// A launch the emulator refuses, as the driver would (`cudaErrorInvalidConfiguration`
/// and its kin).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchProblem {
    /// An extent of the grid or the block is 0.
    #[error("the {what} {} has an extent of 0", xyz(*.extent))]
    Empty { what: &'static str, extent: Dim3 },
    /// The block has more threads than a GPU runs in one block.
    #[error("the block {} has {threads} threads, more than {limit}", xyz(*.block))]
    TooManyThreads { block: Dim3, threads: u64, limit: u32 },
    /// One extent of the block or the grid is past the GPU's limit for it.
    #[error("the {what}'s {axis} extent {value} is more than {limit}")]
    Extent { what: &'static str, axis: char, value: u32, limit: u32 },
    /// More dynamic shared memory than a block may have.
    #[error("{bytes} bytes of dynamic shared memory, more than {limit}")]
    DynamicShared { bytes: usize, limit: usize },
}

/// Which warp operation an error is about, and what each computes under the emulator
/// (PTX's `shfl.sync` with a width of 32, `c` = 0 for up and 0x1f otherwise, the operand
/// taken as an unsigned number without wrap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WarpOp {
    /// The value of lane `src_lane mod 32`.
    ShuffleIdx,
    /// The value of lane `lane - delta`; the lane's own where that is below 0.
    ShuffleUp,
    /// The value of lane `lane + delta`; the lane's own where that is past 31.
    ShuffleDown,
    /// The value of lane `lane ^ lane_mask`; the lane's own where that is past 31.
    ShuffleXor,
    /// Whether every lane of the mask passed `true`.
    VoteAll,
    /// Whether some lane of the mask passed `true`.
    VoteAny,
    /// The lanes of the mask that passed `true`, bit `i` for lane `i`.
    VoteBallot,
    /// Nothing: the warp barrier (`bar.warp.sync`), which only orders the lanes of the
    /// mask.
    SyncWarp,
}

impl fmt::Display for WarpOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WarpOp::ShuffleIdx => "shfl_idx",
            WarpOp::ShuffleUp => "shfl_up",
            WarpOp::ShuffleDown => "shfl_down",
            WarpOp::ShuffleXor => "shfl_xor",
            WarpOp::VoteAll => "vote_all",
            WarpOp::VoteAny => "vote_any",
            WarpOp::VoteBallot => "vote_ballot",
            WarpOp::SyncWarp => "sync_warp",
        })
    }
}

/// What is wrong with a warp operation (lanes are numbered in the warp, 0..32).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WarpProblem {
    /// The calling lane is not in its own `mask` (undefined in PTX).
    #[error("the calling lane {lane} is not in its mask {mask:#010x}")]
    CallerOutsideMask { lane: u32, mask: u32 },
    /// Lanes of `mask` have exited, or do not exist (the missing lanes of a partial last
    /// warp), so they can never join.
    #[error("lanes {} of mask {mask:#010x} exited (or do not exist) without joining it", ranks(.lanes))]
    ExitedLanes { lanes: Vec<u32>, mask: u32 },
    /// Lanes of `mask` are in another warp operation (another call site, another
    /// operation or another mask), where `lane` arrived.
    #[error("lane {lane} arrives with mask {mask:#010x} while lanes {} wait in {other_op} at {other_site} with mask {other_mask:#010x}", ranks(.waiting))]
    Elsewhere { lane: u32, mask: u32, waiting: Vec<u32>, other_op: WarpOp, other_site: Site, other_mask: u32 },
    /// A shuffle's source lane is not in `mask` (its value is undefined in PTX).
    #[error("lane {lane} reads lane {source_lane}, which is not in mask {mask:#010x}")]
    SourceOutsideMask { lane: u32, source_lane: u32, mask: u32 },
}

/// An emulated launch that did not complete. Each message is one line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EmulatorError {
    /// The launch's configuration is past a GPU's limits ([`super::limits`]).
    #[error("kernel {kernel}: launch refused: {problem}")]
    Launch { kernel: &'static str, problem: LaunchProblem },
    /// A block barrier that threads of the block exited without reaching: `missing` have
    /// not arrived, `exited` of them have exited.
    #[error("kernel {kernel}, block {}: barrier at {site}: threads {} did not arrive (threads {} exited)", xyz(*.block), ranks(.missing), ranks(.exited))]
    BarrierExited { kernel: &'static str, block: Dim3, site: Site, missing: Vec<u32>, exited: Vec<u32> },
    /// Threads of one block wait at barriers at two different call sites.
    #[error("kernel {kernel}, block {}: threads wait at barriers at two call sites: {first} (threads {}) and {second} (threads {})", xyz(*.block), ranks(.at_first), ranks(.at_second))]
    BarrierSites {
        kernel: &'static str,
        block: Dim3,
        first: Site,
        at_first: Vec<u32>,
        second: Site,
        at_second: Vec<u32>,
    },
    /// A warp operation that cannot complete as written.
    #[error("kernel {kernel}, block {}, warp {warp}: {op} at {site}: {problem}", xyz(*.block))]
    Warp { kernel: &'static str, block: Dim3, warp: u32, op: WarpOp, site: Site, problem: WarpProblem },
    /// Every thread of the block that has not exited waits, and none of the waits can
    /// complete (for example a barrier that a thread waiting in a shuffle never reaches).
    #[error("kernel {kernel}, block {}: deadlock: threads {} wait at {site} for threads {}, which wait elsewhere", xyz(*.block), ranks(.waiting), ranks(.missing))]
    Deadlock { kernel: &'static str, block: Dim3, site: Site, waiting: Vec<u32>, missing: Vec<u32> },
    /// The kernel body panicked in one thread (an index out of bounds, say); the other
    /// threads were stopped.
    #[error("kernel {kernel}, block {}, thread {}: panicked: {message}", xyz(*.block), xyz(*.thread))]
    Panicked { kernel: &'static str, block: Dim3, thread: Dim3, message: String },
    /// A block's static shared arrays take more than a GPU gives a block.
    #[error(
        "kernel {kernel}: static shared array {name} makes {bytes} bytes of static shared memory ({dynamic} dynamic), more than {limit}"
    )]
    StaticShared { kernel: &'static str, name: &'static str, bytes: usize, dynamic: usize, limit: usize },
    /// The operating system did not start a thread for the block.
    #[error("kernel {kernel}: could not start an emulated thread: {message}")]
    Spawn { kernel: &'static str, message: String },
    /// Two threads of the block accessed one element of shared memory with nothing
    /// ordering them (no block barrier between, no warp operation naming both), at least
    /// one of them writing, not both atomically (the sanitizer's racecheck).
    #[error("kernel {kernel}, block {}: data race on element {index} of {array}: {first}, then {second}, with no barrier or warp barrier between them", xyz(*.block))]
    SharedRace {
        kernel: &'static str,
        block: Dim3,
        /// The shared array: `dynamic shared memory` or a `static_shared!` declaration
        /// (its path, then its file, line and column).
        array: &'static str,
        /// The element's index in the array, in values of the second access's type.
        index: usize,
        first: SharedAccess,
        second: SharedAccess,
    },
    /// A read of shared memory that no thread of the block has written (on a GPU it
    /// returns whatever the last block left there; the sanitizer's initcheck).
    #[error("kernel {kernel}, block {}, thread {}: read of element {index} of {array} at {site}, which no thread of the block has written", xyz(*.block), xyz(*.thread))]
    SharedUninitialised {
        kernel: &'static str,
        block: Dim3,
        thread: Dim3,
        array: &'static str,
        index: usize,
        site: Site,
    },
    /// An index past the end of a `SharedSlice`, or a `SharedSlice` that reaches past the
    /// end of its shared array (the sanitizer's memcheck; undefined behaviour on a GPU).
    #[error("kernel {kernel}, block {}, thread {}: {what} at {site}", xyz(*.block), xyz(*.thread))]
    SharedOutOfBounds { kernel: &'static str, block: Dim3, thread: Dim3, what: OutOfBounds, site: Site },
    /// An index past the end of a `GlobalSlice` (undefined behaviour on a GPU).
    #[error("kernel {kernel}, block {}, thread {}: index {index} of a GlobalSlice of {len} values at {site}", xyz(*.block), xyz(*.thread))]
    GlobalOutOfBounds { kernel: &'static str, block: Dim3, thread: Dim3, index: usize, len: usize, site: Site },
}

/// What an access does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessKind {
    /// `SharedSlice::read`.
    Read,
    /// `SharedSlice::write`.
    Write,
    /// An atomic read-modify-write (never a race with another atomic).
    Atomic,
}

impl fmt::Display for AccessKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AccessKind::Read => "read",
            AccessKind::Write => "wrote",
            AccessKind::Atomic => "updated atomically",
        })
    }
}

/// One side of a [`EmulatorError::SharedRace`]: which thread did what, where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedAccess {
    pub thread: Dim3,
    pub kind: AccessKind,
    pub site: Site,
}

impl fmt::Display for SharedAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "thread {} {} it at {}", xyz(self.thread), self.kind, self.site)
    }
}

/// How a shared-memory access missed its memory.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OutOfBounds {
    /// `index` is not below the `SharedSlice`'s `len`.
    #[error("index {index} of a SharedSlice of {len} values")]
    Index { index: usize, len: usize },
    /// The element (`bytes` from byte `offset` of `array`) runs past the array's `size`.
    #[error("a {bytes}-byte value at byte {offset} of {array}, which has {size} bytes")]
    PastArray { array: &'static str, offset: usize, bytes: usize, size: usize },
}

/// `(x, y, z)`.
fn xyz(d: Dim3) -> String {
    std::format!("({}, {}, {})", d.x, d.y, d.z)
}

/// A sorted list of ranks written compactly, runs as ranges: `0-15, 17, 20-31`.
pub(super) fn ranks(list: &[u32]) -> String {
    let mut sorted = list.to_vec();
    sorted.sort_unstable();
    let mut text = String::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        while i + 1 < sorted.len() && sorted[i + 1] == sorted[i] + 1 {
            i += 1;
        }
        if !text.is_empty() {
            text.push_str(", ");
        }
        text.push_str(&match sorted[i] == start {
            true => std::format!("{start}"),
            false => std::format!("{start}-{}", sorted[i]),
        });
        i += 1;
    }
    text
}

#[cfg(test)]
mod tests {
    use super::ranks;

    #[test]
    fn rank_lists_are_written_as_ranges() {
        assert_eq!(ranks(&[20, 0, 1, 2, 17, 21, 22, 5]), "0-2, 5, 17, 20-22");
        assert_eq!(ranks(&[]), "");
        assert_eq!(ranks(&[7]), "7");
    }
}
