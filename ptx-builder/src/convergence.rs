//! The block-level instructions a kernel must not hold as they are: the aligned forms of
//! the block barrier, and a barrier or warp-collective instruction written in inline
//! assembly.
//!
//! * **Aligned barriers.** `bar.sync` (the same as `barrier.sync.aligned`), `bar.red.*`,
//!   `bar.arrive` and every `barrier.*.aligned` promise that every thread of the warp
//!   executes the *same* barrier instruction. LLVM may merge or move code so that
//!   diverged threads reach different copies, and the GPU then hangs or skips the
//!   barrier: rustc's `core::arch::nvptx::_syncthreads` gives this form and upstream
//!   deprecated it for that reason (rust-lang/rust#137086). The non-aligned
//!   `barrier.sync`, `barrier.red.*` and `barrier.arrive` are correct under divergence.
//! * **Collectives in inline assembly.** An `asm!` block is not convergent to LLVM, which
//!   may duplicate it into divergent branches; a barrier, shuffle, vote, match or warp
//!   reduction must come from the convergent `llvm.nvvm.*` intrinsics instead. Atomics,
//!   fences and special-register reads in inline assembly are fine: where they run does
//!   not change what other threads see.
//!
//! `device_support::block` has both: its barriers, shuffles and votes are on the
//! convergent intrinsics.

/// The first part of the opcodes that synchronise or exchange values between the threads
/// of a warp or block: what must be convergent.
const COLLECTIVE_FAMILIES: [&str; 6] = ["bar", "barrier", "shfl", "vote", "match", "redux"];

/// Where to look instead, in every message.
pub const CONVERGENT_FUNCTIONS: &str = "device_support::block's convergent functions (sync_threads, \
     sync_threads_count/_and/_or, shfl_*, vote_*, the warp and block reductions)";

/// Whether `opcode` is an aligned form of a block barrier: `bar.sync`, `bar.red.*`,
/// `bar.arrive` (the `bar` spellings are aligned), or any `barrier.*` with `.aligned`.
/// `bar.warp.sync` is a warp barrier, which has no aligned form.
pub fn is_aligned_barrier(opcode: &str) -> bool {
    let mut parts = opcode.split('.');
    match parts.next() {
        Some("bar") => parts.next() != Some("warp"),
        Some("barrier") => parts.any(|p| p == "aligned"),
        _ => false,
    }
}

/// Whether `opcode` is a barrier, shuffle, vote, match or warp reduction: an
/// instruction that must not be written in inline assembly.
pub fn is_collective(opcode: &str) -> bool {
    opcode.split('.').next().is_some_and(|family| COLLECTIVE_FAMILIES.contains(&family))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_spellings_and_the_aligned_barrier_spellings_are_aligned() {
        for aligned in [
            "bar.sync",
            "bar.red.popc.u32",
            "bar.red.and.pred",
            "bar.arrive",
            "barrier.sync.aligned",
            "barrier.red.or.aligned.pred",
            "barrier.cta.sync.aligned",
        ] {
            assert!(is_aligned_barrier(aligned), "{aligned}");
            assert!(is_collective(aligned), "{aligned}");
        }
        for divergence_safe in ["barrier.sync", "barrier.red.popc.u32", "barrier.arrive", "bar.warp.sync"] {
            assert!(!is_aligned_barrier(divergence_safe), "{divergence_safe}");
            assert!(is_collective(divergence_safe), "{divergence_safe}");
        }
    }

    #[test]
    fn collectives_are_told_from_atomics_fences_and_reductions_to_memory() {
        for collective in ["shfl.sync.bfly.b32", "vote.sync.ballot.b32", "match.any.sync.b32", "redux.sync.add.u32"] {
            assert!(is_collective(collective) && !is_aligned_barrier(collective), "{collective}");
        }
        for fine in [
            "atom.global.add.u32",
            "atom.shared.cta.cas.b32",
            "red.global.add.u32",
            "fence.acq_rel.gpu",
            "membar.cta",
            "mov.u32",
            "barriers.sync",
        ] {
            assert!(!is_collective(fine) && !is_aligned_barrier(fine), "{fine}");
        }
    }
}
