//! The nvptx64 backend of [`super`]: each function is one PTX instruction (or a few),
//! reached as follows on the pinned nightly (rustc 1.101, LLVM 23.1). What each gives was
//! read in the PTX and the SASS (ptxas 12.9, `cuobjdump -sass`, sm_90) of the kernels of
//! `device-support/tests/block-kernels/`, and `device-support/tests/nvptx_block.rs` checks
//! it on every run.
//!
//! * **Indices**: `core::arch::nvptx`'s `_thread_idx_x` … (`llvm.nvvm.read.ptx.sreg.*`,
//!   `mov.u32 %r, %tid.x`), and `%laneid` through `llvm.nvvm.read.ptx.sreg.laneid`.
//! * **Barriers**: the *non-aligned* convergent intrinsics `llvm.nvvm.barrier.cta.sync.all`
//!   and `llvm.nvvm.barrier.cta.red.{popc,and,or}.all`, which LLVM prints as
//!   `barrier.sync 0` and `barrier.red.{popc.u32,and.pred,or.pred}` (no `.aligned`). LLVM 23
//!   has a non-aligned form of each reduction as well, so no aligned form is used anywhere.
//!   Not core's `_syncthreads`: it lowers to `llvm.nvvm.barrier.cta.sync.aligned.all`, PTX
//!   `bar.sync 0`, whose `.aligned` promise (every thread of the warp executes the same
//!   barrier instruction) breaks when threads diverge (rust-lang/rust#137086): for a
//!   barrier in each branch of an `if`, ptxas then predicates the two
//!   (`@P2 BAR.SYNC.DEFER_BLOCKING 0x0; @!P2 BAR.SYNC.DEFER_BLOCKING 0x0`), so a warp
//!   whose threads took both branches executes two barriers where the block counts one
//!   (undefined for `.aligned`). With `barrier.sync` the sm_90 SASS is `BRA.DIV` (a divergent warp takes
//!   a slow path that waits for its threads), `BAR.SYNC.DEFER_BLOCKING 0x0`, then
//!   `WARPSYNC.ALL`; the reductions are `BAR.RED.{POPC,AND,OR}.DEFER_BLOCKING 0x0` and
//!   `B2R.RESULT`.
//! * **Shuffles and votes**: the convergent `llvm.nvvm.shfl.sync.{idx,up,down,bfly}.i32` and
//!   `llvm.nvvm.vote.{all,any,ballot}.sync` (`shfl.sync.<mode>.b32`, `vote.sync.all.pred`,
//!   `vote.sync.any.pred`, `vote.sync.ballot.b32`; SASS `SHFL.<MODE>`, `VOTE.ALL`,
//!   `VOTE.ANY`). The `c` operand is what CUDA's `__shfl_*_sync` passes for width 32:
//!   `0x1f` (segment mask 0, clamp lane 31) for idx, down and bfly, `0` (clamp lane 0) for
//!   up. The hardware reads only the low 5 bits of the lane, delta or lane mask:
//!   `shfl_down(m, v, 33)` is `shfl_down(m, v, 1)`.
//! * **The warp barrier**: the convergent `llvm.nvvm.bar.warp.sync` (`bar.warp.sync
//!   %mask`, CUDA's `__syncwarp`), which has no aligned form. In `block_warp_ops`, where
//!   the full warp is converged after its votes, ptxas 12.9 makes `bar.warp.sync -1` a
//!   `NOP` at sm_90 (no `WARPSYNC`), so the PTX is what the tests check.
//! * **Dynamic shared memory**: `core::intrinsics::gpu::gpu_launch_sized_workgroup_mem`,
//!   which LLVM declares as `.extern .shared .align 16 .b8 anon_…[]` (one per module) and
//!   addresses as `.shared` (`st.shared`, `ld.shared`); its size from
//!   `llvm.nvvm.read.ptx.sreg.dynamic_smem_size` (`mov.u32 %r, %dynamic_smem_size`).
//! * **Static shared memory** ([`__static_shared_impl!`]): rustc has no static in address
//!   space 3, so a `global_asm!` `.shared .align 16 .b8 __device_support_shared_<name>[N]`
//!   and `cvta.shared.u64` of it (a pure `asm!`, so LLVM may merge or drop it).
//! * **Atomics and fences**: `asm!`, because LLVM 23 has no scoped-atomic intrinsics any
//!   more and Rust's atomics come out `.sys`: `atom.relaxed.{cta,gpu,sys}.<op>` on a generic
//!   address, so global and shared memory both work (SASS `ATOM.E.<OP>.STRONG.{SM,GPU,SYS}`),
//!   and `fence.acq_rel.{cta,gpu,sys}`
//!   (`MEMBAR.ALL.{CTA,GPU,SYS}`). Their placement does not matter for convergence, and an
//!   `asm!` without `nomem` is a compiler barrier for the memory around it.
//!   `atom.add.f32` is `ATOM.E.ADD.F32.FTZ.RN`: subnormal inputs and results are flushed
//!   to zero (of the same sign), unlike `+` on f32.

use super::{Dim3, Scope};
use core::arch::asm;
use core::arch::nvptx::{
    _block_dim_x, _block_dim_y, _block_dim_z, _block_idx_x, _block_idx_y, _block_idx_z, _grid_dim_x, _grid_dim_y,
    _grid_dim_z, _thread_idx_x, _thread_idx_y, _thread_idx_z,
};

// LLVM's NVVM intrinsics. Each is convergent in LLVM's own definition (IntrinsicsNVVM.td:
// the barriers, shuffles and votes), which the declaration of an `llvm.*` name inherits.
unsafe extern "C" {
    #[link_name = "llvm.nvvm.read.ptx.sreg.laneid"]
    fn sreg_laneid() -> u32;
    #[link_name = "llvm.nvvm.read.ptx.sreg.dynamic_smem_size"]
    fn sreg_dynamic_smem_size() -> u32;
    #[link_name = "llvm.nvvm.barrier.cta.sync.all"]
    fn barrier_cta_sync_all(id: u32);
    #[link_name = "llvm.nvvm.barrier.cta.red.popc.all"]
    fn barrier_cta_red_popc_all(id: u32, predicate: bool) -> u32;
    #[link_name = "llvm.nvvm.barrier.cta.red.and.all"]
    fn barrier_cta_red_and_all(id: u32, predicate: bool) -> bool;
    #[link_name = "llvm.nvvm.barrier.cta.red.or.all"]
    fn barrier_cta_red_or_all(id: u32, predicate: bool) -> bool;
    #[link_name = "llvm.nvvm.shfl.sync.idx.i32"]
    fn shfl_sync_idx_i32(mask: u32, value: u32, lane: u32, c: u32) -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.up.i32"]
    fn shfl_sync_up_i32(mask: u32, value: u32, delta: u32, c: u32) -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.down.i32"]
    fn shfl_sync_down_i32(mask: u32, value: u32, delta: u32, c: u32) -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.bfly.i32"]
    fn shfl_sync_bfly_i32(mask: u32, value: u32, lane_mask: u32, c: u32) -> u32;
    #[link_name = "llvm.nvvm.vote.all.sync"]
    fn vote_all_sync(mask: u32, predicate: bool) -> bool;
    #[link_name = "llvm.nvvm.vote.any.sync"]
    fn vote_any_sync(mask: u32, predicate: bool) -> bool;
    #[link_name = "llvm.nvvm.vote.ballot.sync"]
    fn vote_ballot_sync(mask: u32, predicate: bool) -> u32;
    #[link_name = "llvm.nvvm.bar.warp.sync"]
    fn bar_warp_sync(mask: u32);
}

/// The barrier every function here uses: CUDA's `__syncthreads` barrier, number 0.
const BARRIER: u32 = 0;

/// The `c` operand of `shfl.sync` for idx, down and bfly at width 32: segment mask 0
/// (bits 12:8), clamp lane 31 (bits 4:0), as CUDA's `__shfl_sync`, `__shfl_down_sync` and
/// `__shfl_xor_sync` pass it.
const SHFL_CLAMP_HIGH: u32 = 0x1f;

/// The `c` operand of `shfl.sync.up` at width 32: segment mask 0, clamp lane 0, as CUDA's
/// `__shfl_up_sync` passes it.
const SHFL_CLAMP_LOW: u32 = 0;

/// `%tid` (`mov.u32 %r, %tid.{x,y,z}`).
#[inline(always)]
pub(super) fn thread_idx() -> Dim3 {
    // SAFETY: reading the special registers has no preconditions.
    unsafe { Dim3 { x: _thread_idx_x(), y: _thread_idx_y(), z: _thread_idx_z() } }
}

/// `%ctaid` (`mov.u32 %r, %ctaid.{x,y,z}`).
#[inline(always)]
pub(super) fn block_idx() -> Dim3 {
    // SAFETY: reading the special registers has no preconditions.
    unsafe { Dim3 { x: _block_idx_x(), y: _block_idx_y(), z: _block_idx_z() } }
}

/// `%ntid` (`mov.u32 %r, %ntid.{x,y,z}`).
#[inline(always)]
pub(super) fn block_dim() -> Dim3 {
    // SAFETY: reading the special registers has no preconditions.
    unsafe { Dim3 { x: _block_dim_x(), y: _block_dim_y(), z: _block_dim_z() } }
}

/// `%nctaid` (`mov.u32 %r, %nctaid.{x,y,z}`).
#[inline(always)]
pub(super) fn grid_dim() -> Dim3 {
    // SAFETY: reading the special registers has no preconditions.
    unsafe { Dim3 { x: _grid_dim_x(), y: _grid_dim_y(), z: _grid_dim_z() } }
}

/// `%laneid` (`mov.u32 %r, %laneid`).
#[inline(always)]
pub(super) fn lane_id() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { sreg_laneid() }
}

/// `barrier.sync 0` (not `.aligned`).
#[inline(always)]
#[track_caller]
pub(super) fn sync_threads() {
    // SAFETY: a barrier has no memory-safety precondition; one that some thread never
    // reaches is a hang (see `super::sync_threads`).
    unsafe { barrier_cta_sync_all(BARRIER) }
}

/// `barrier.red.popc.u32 %r, 0, %p` (not `.aligned`).
#[inline(always)]
#[track_caller]
pub(super) fn sync_threads_count(predicate: bool) -> u32 {
    // SAFETY: as `sync_threads`.
    unsafe { barrier_cta_red_popc_all(BARRIER, predicate) }
}

/// `barrier.red.and.pred %p, 0, %q` (not `.aligned`).
#[inline(always)]
#[track_caller]
pub(super) fn sync_threads_and(predicate: bool) -> bool {
    // SAFETY: as `sync_threads`.
    unsafe { barrier_cta_red_and_all(BARRIER, predicate) }
}

/// `barrier.red.or.pred %p, 0, %q` (not `.aligned`).
#[inline(always)]
#[track_caller]
pub(super) fn sync_threads_or(predicate: bool) -> bool {
    // SAFETY: as `sync_threads`.
    unsafe { barrier_cta_red_or_all(BARRIER, predicate) }
}

/// 16 bytes aligned to 16: the element type the dynamic shared memory is asked for in,
/// so that LLVM declares it `.align 16`.
#[repr(C, align(16))]
struct Align16([u8; 16]);

/// The `.extern .shared .align 16` array LLVM declares for
/// `gpu_launch_sized_workgroup_mem`, made generic (`cvta.shared.u64`), and
/// `%dynamic_smem_size` (`mov.u32 %r, %dynamic_smem_size`).
#[inline(always)]
pub(super) fn dynamic_shared_bytes() -> (*mut u8, usize) {
    let ptr = core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<Align16>();
    // SAFETY: reading a special register has no preconditions.
    let bytes = unsafe { sreg_dynamic_smem_size() };
    (ptr.cast::<u8>(), bytes as usize)
}

/// `shfl.sync.idx.b32 %r, %v, %lane, 0x1f, %mask`.
#[inline(always)]
#[track_caller]
pub(super) unsafe fn shfl_idx(mask: u32, value: u32, src_lane: u32) -> u32 {
    // SAFETY: the caller guarantees every lane of `mask` executes this call.
    unsafe { shfl_sync_idx_i32(mask, value, src_lane, SHFL_CLAMP_HIGH) }
}

/// `shfl.sync.up.b32 %r, %v, %delta, 0, %mask`.
#[inline(always)]
#[track_caller]
pub(super) unsafe fn shfl_up(mask: u32, value: u32, delta: u32) -> u32 {
    // SAFETY: the caller guarantees every lane of `mask` executes this call.
    unsafe { shfl_sync_up_i32(mask, value, delta, SHFL_CLAMP_LOW) }
}

/// `shfl.sync.down.b32 %r, %v, %delta, 0x1f, %mask`.
#[inline(always)]
#[track_caller]
pub(super) unsafe fn shfl_down(mask: u32, value: u32, delta: u32) -> u32 {
    // SAFETY: the caller guarantees every lane of `mask` executes this call.
    unsafe { shfl_sync_down_i32(mask, value, delta, SHFL_CLAMP_HIGH) }
}

/// `shfl.sync.bfly.b32 %r, %v, %lane_mask, 0x1f, %mask`.
#[inline(always)]
#[track_caller]
pub(super) unsafe fn shfl_xor(mask: u32, value: u32, lane_mask: u32) -> u32 {
    // SAFETY: the caller guarantees every lane of `mask` executes this call.
    unsafe { shfl_sync_bfly_i32(mask, value, lane_mask, SHFL_CLAMP_HIGH) }
}

/// `vote.sync.all.pred %p, %q, %mask`.
#[inline(always)]
#[track_caller]
pub(super) unsafe fn vote_all(mask: u32, predicate: bool) -> bool {
    // SAFETY: the caller guarantees every lane of `mask` executes this call.
    unsafe { vote_all_sync(mask, predicate) }
}

/// `vote.sync.any.pred %p, %q, %mask`.
#[inline(always)]
#[track_caller]
pub(super) unsafe fn vote_any(mask: u32, predicate: bool) -> bool {
    // SAFETY: the caller guarantees every lane of `mask` executes this call.
    unsafe { vote_any_sync(mask, predicate) }
}

/// `vote.sync.ballot.b32 %r, %q, %mask`.
#[inline(always)]
#[track_caller]
pub(super) unsafe fn vote_ballot(mask: u32, predicate: bool) -> u32 {
    // SAFETY: the caller guarantees every lane of `mask` executes this call.
    unsafe { vote_ballot_sync(mask, predicate) }
}

/// `bar.warp.sync %mask`.
#[inline(always)]
#[track_caller]
pub(super) unsafe fn sync_warp(mask: u32) {
    // SAFETY: the caller guarantees every lane of `mask` executes this call.
    unsafe { bar_warp_sync(mask) }
}

/// Defines `$name(address, value, scope) -> old` as `atom.relaxed.<scope>.$op` on a
/// generic address, for a `$reg` register class of `$t`.
macro_rules! atomic_rmw {
    ($($name:ident: $t:ty, $reg:ident, $op:literal;)*) => {$(
        #[doc = concat!("`atom.relaxed.{cta,gpu,sys}.", $op, " %old, [%address], %value`.")]
        #[inline(always)]
        pub(super) unsafe fn $name(address: *mut $t, value: $t, scope: Scope) -> $t {
            let old: $t;
            // SAFETY: the caller guarantees `address` is valid, aligned and accessed only
            // atomically; the instruction reads and writes only there, and touches no stack.
            unsafe {
                match scope {
                    Scope::Block => asm!(
                        concat!("atom.relaxed.cta.", $op, " {old}, [{address}], {value};"),
                        old = out($reg) old, address = in(reg64) address, value = in($reg) value,
                        options(nostack),
                    ),
                    Scope::Device => asm!(
                        concat!("atom.relaxed.gpu.", $op, " {old}, [{address}], {value};"),
                        old = out($reg) old, address = in(reg64) address, value = in($reg) value,
                        options(nostack),
                    ),
                    Scope::System => asm!(
                        concat!("atom.relaxed.sys.", $op, " {old}, [{address}], {value};"),
                        old = out($reg) old, address = in(reg64) address, value = in($reg) value,
                        options(nostack),
                    ),
                }
            }
            old
        }
    )*};
}

atomic_rmw! {
    atomic_add_u32: u32, reg32, "add.u32";
    atomic_min_u32: u32, reg32, "min.u32";
    atomic_max_u32: u32, reg32, "max.u32";
    atomic_exchange_u32: u32, reg32, "exch.b32";
    atomic_add_u64: u64, reg64, "add.u64";
    atomic_min_u64: u64, reg64, "min.u64";
    atomic_max_u64: u64, reg64, "max.u64";
    atomic_exchange_u64: u64, reg64, "exch.b64";
    atomic_add_f32: f32, reg32, "add.f32";
}

/// Defines `$name(address, expected, new, scope) -> old` as
/// `atom.relaxed.<scope>.cas.$bits` on a generic address.
macro_rules! atomic_cas {
    ($($name:ident: $t:ty, $reg:ident, $bits:literal;)*) => {$(
        #[doc = concat!("`atom.relaxed.{cta,gpu,sys}.cas.", $bits, " %old, [%address], %expected, %new`.")]
        #[inline(always)]
        pub(super) unsafe fn $name(address: *mut $t, expected: $t, new: $t, scope: Scope) -> $t {
            let old: $t;
            // SAFETY: as `atomic_add_u32`.
            unsafe {
                match scope {
                    Scope::Block => asm!(
                        concat!("atom.relaxed.cta.cas.", $bits, " {old}, [{address}], {expected}, {new};"),
                        old = out($reg) old, address = in(reg64) address,
                        expected = in($reg) expected, new = in($reg) new, options(nostack),
                    ),
                    Scope::Device => asm!(
                        concat!("atom.relaxed.gpu.cas.", $bits, " {old}, [{address}], {expected}, {new};"),
                        old = out($reg) old, address = in(reg64) address,
                        expected = in($reg) expected, new = in($reg) new, options(nostack),
                    ),
                    Scope::System => asm!(
                        concat!("atom.relaxed.sys.cas.", $bits, " {old}, [{address}], {expected}, {new};"),
                        old = out($reg) old, address = in(reg64) address,
                        expected = in($reg) expected, new = in($reg) new, options(nostack),
                    ),
                }
            }
            old
        }
    )*};
}

atomic_cas! {
    atomic_cas_u32: u32, reg32, "b32";
    atomic_cas_u64: u64, reg64, "b64";
}

/// `fence.acq_rel.{cta,gpu,sys}`.
#[inline(always)]
pub(super) fn fence(scope: Scope) {
    // SAFETY: a fence only orders memory accesses; it reads and writes no memory itself
    // and touches no stack.
    unsafe {
        match scope {
            Scope::Block => asm!("fence.acq_rel.cta;", options(nostack)),
            Scope::Device => asm!("fence.acq_rel.gpu;", options(nostack)),
            Scope::System => asm!("fence.acq_rel.sys;", options(nostack)),
        }
    }
}

/// The nvptx64 `static_shared!`: a `.shared` array of `$n` values of `$t`, aligned for
/// `$t` (at least 16), declared by `global_asm!` as `__device_support_shared_$name`, and
/// its generic address from `cvta.shared.u64`. The expansion's `asm!` is allowed the
/// `asm_experimental_arch` feature here, so the kernel crate need not enable it.
#[doc(hidden)]
#[macro_export]
#[allow_internal_unstable(asm_experimental_arch)]
macro_rules! __static_shared_impl {
    ($vis:vis fn $name:ident : [$t:ty; $n:expr]) => {
        ::core::arch::global_asm!(
            concat!(".shared .align {align} .b8 __device_support_shared_", stringify!($name), "[{bytes}];"),
            align = const { if ::core::mem::align_of::<$t>() > 16 { ::core::mem::align_of::<$t>() } else { 16 } },
            bytes = const { if $n == 0 { 1 } else { $n * ::core::mem::size_of::<$t>() } },
        );

        #[inline(always)]
        $vis fn $name() -> $crate::block::SharedSlice<$t> {
            let ptr: *mut $t;
            // SAFETY: `cvta.shared.u64` of the array declared above reads no memory; the
            // array is the block's for as long as it runs, `$n` values of `$t`, aligned.
            unsafe {
                ::core::arch::asm!(
                    concat!("cvta.shared.u64 {ptr}, __device_support_shared_", stringify!($name), ";"),
                    ptr = out(reg64) ptr,
                    options(pure, nomem, nostack),
                );
                $crate::block::SharedSlice::from_raw_parts(ptr, $n)
            }
        }
    };
}
