//! The host side of `block-kernels`, the kernels that use every item of
//! `device_support::block`: each kernel run under the CPU emulator
//! ([`emulate`]) and on a GPU through its typed launch ([`on_gpu`]), in any
//! [`LaunchShape`] (1-D, 2-D or 3-D, with dynamic shared memory), with the same inputs
//! and the same initial words, so that the tests can compare what each wrote.
//!
//! * `tests/emulator.rs` checks the emulator's words against the shape's own arithmetic
//!   (no GPU needed);
//! * `tests/gpu.rs` checks the GPU's words against the emulator's, and that shapes the
//!   device cannot run are refused before a launch (skipped without a GPU);
//! * `tests/ptx.rs` checks every declaration against the PTX's `.param` lists.

use bitexact::gpu::{Gpu, GpuError, KernelModule, LaunchShape};
use block_kernels::{
    BlockAtomics, BlockBarriers, BlockIndices, BlockReductions, BlockShared, BlockWarpOps, GlobalCopyRaw,
    GlobalCopySlice, per_thread,
};
use device_support::block::Dim3;
use device_support::emulator::{EmulatorError, KernelArgs, Launch, launch};

/// `block-kernels`' PTX (sm_75; the driver compiles it for the device it loads on).
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/block_kernels.ptx"));

/// One of `block-kernels`' kernels, with its scalar argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tour {
    /// `block_indices`.
    Indices,
    /// `block_barriers`.
    Barriers,
    /// `block_warp_ops` with this `delta`.
    WarpOps { delta: u32 },
    /// `block_shared`.
    Shared,
    /// `block_atomics`.
    Atomics,
    /// `block_reductions` of [`reduction_input`].
    Reductions,
    /// `global_copy_slice` (through `GlobalSlice`) or `global_copy_raw` (raw pointers) of
    /// [`reduction_input`].
    Copy { through_slice: bool },
}

impl Tour {
    /// Every kernel (the warp operations with `delta` 5).
    pub const ALL: [Tour; 8] = [
        Tour::Indices,
        Tour::Barriers,
        Tour::WarpOps { delta: 5 },
        Tour::Shared,
        Tour::Atomics,
        Tour::Reductions,
        Tour::Copy { through_slice: false },
        Tour::Copy { through_slice: true },
    ];

    /// The kernel's name.
    pub fn name(self) -> &'static str {
        use shared::launch::DeclaredKernel;
        match self {
            Tour::Indices => BlockIndices::NAME,
            Tour::Barriers => BlockBarriers::NAME,
            Tour::WarpOps { .. } => BlockWarpOps::NAME,
            Tour::Shared => BlockShared::NAME,
            Tour::Atomics => BlockAtomics::NAME,
            Tour::Reductions => BlockReductions::NAME,
            Tour::Copy { through_slice: false } => GlobalCopyRaw::NAME,
            Tour::Copy { through_slice: true } => GlobalCopySlice::NAME,
        }
    }

    /// The `u32`s it writes to `out` per thread of the launch.
    pub fn per_thread(self) -> usize {
        match self {
            Tour::Indices => per_thread::INDICES,
            Tour::Barriers => per_thread::BARRIERS,
            Tour::WarpOps { .. } => per_thread::WARP_OPS,
            Tour::Shared => per_thread::SHARED,
            Tour::Atomics => per_thread::ATOMICS,
            Tour::Reductions => per_thread::REDUCTIONS,
            Tour::Copy { .. } => per_thread::COPY,
        }
    }

    /// Whether `shape` keeps the kernel's contract: full warps for the warp operations
    /// and the reductions, at most [`block_kernels::SHARED_TILE`] threads and 4 dynamic
    /// shared bytes per thread for the shared-memory kernel.
    pub fn runs_in(self, shape: &LaunchShape) -> bool {
        let threads = shape.block.volume();
        match self {
            Tour::WarpOps { .. } | Tour::Reductions => threads.is_multiple_of(32),
            Tour::Shared => {
                threads <= block_kernels::SHARED_TILE as u64 && u64::from(shape.dynamic_shared_bytes) >= 4 * threads
            }
            Tour::Indices | Tour::Barriers | Tour::Atomics | Tour::Copy { .. } => true,
        }
    }
}

/// The words [`Tour::Atomics`] starts from: `words` (add, min, max, exchange,
/// compare-exchange and three spare), `wide` (the same five in u64), `sum` (f32 bits).
pub const ATOMIC_WORDS: [u32; 8] = [0, u32::MAX, 0, u32::MAX, 0, 0, 0, 0];
/// See [`ATOMIC_WORDS`].
pub const ATOMIC_WIDE: [u64; 5] = [0, u64::MAX, 0, u64::MAX, 0];

/// What a kernel wrote: `out` ([`Tour::per_thread`] values per thread, at the thread's
/// global rank), and for [`Tour::Atomics`] its words (the initial ones otherwise).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    pub out: Vec<u32>,
    pub words: [u32; 8],
    pub wide: [u64; 5],
    pub sum_bits: u32,
}

/// The value thread `global_rank` of [`Tour::Reductions`] reduces: a hash, so that sums
/// wrap and the extremes fall on scattered lanes.
pub fn reduction_input(global_rank: u64) -> u32 {
    (global_rank.wrapping_add(0x1234).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32
}

/// The threads of a launch of `shape`.
pub fn threads_of(shape: &LaunchShape) -> usize {
    (shape.grid.volume() * shape.block.volume()) as usize
}

/// `kernel` run by the CPU emulator in `shape`.
///
/// # Errors
/// The emulator's, e.g. for a shape the emulator's limits refuse, or a kernel that breaks
/// its contract in it (a shuffle over lanes a partial warp does not have).
pub fn emulate(kernel: Tour, shape: &LaunchShape) -> Result<Written, EmulatorError> {
    let threads = threads_of(shape);
    let mut out = vec![0u32; threads * kernel.per_thread()];
    let (mut words, mut wide, mut sum) = (ATOMIC_WORDS, ATOMIC_WIDE, 0f32);
    let input: Vec<u32> = (0..threads as u64).map(reduction_input).collect();
    let setup = Launch {
        kernel: kernel.name(),
        grid: shape.grid,
        block: shape.block,
        dynamic_shared_bytes: shape.dynamic_shared_bytes as usize,
    };
    // SAFETY: only the launch's threads use the pointers, and the buffers outlive it.
    let p = unsafe {
        KernelArgs::new((out.as_mut_ptr(), words.as_mut_ptr(), wide.as_mut_ptr(), &raw mut sum, input.as_ptr()))
    };
    launch(&setup, || {
        let (out, words, wide, sum, input) = p.get();
        // SAFETY (each arm): `out` holds `per_thread` values per thread of the launch,
        // `input` one, `words` 8, `wide` 5, `sum` 1; the caller's shape keeps the kernel's
        // contract (`Tour::runs_in`), or the emulator reports where it does not.
        unsafe {
            match kernel {
                Tour::Indices => block_kernels::block_indices(out),
                Tour::Barriers => block_kernels::block_barriers(out),
                Tour::WarpOps { delta } => block_kernels::block_warp_ops(out, delta),
                Tour::Shared => block_kernels::block_shared(out),
                Tour::Atomics => block_kernels::block_atomics(words, wide, sum, out),
                Tour::Reductions => block_kernels::block_reductions(input, out),
                Tour::Copy { through_slice: false } => block_kernels::global_copy_raw(input, out, threads as u64),
                Tour::Copy { through_slice: true } => block_kernels::global_copy_slice(input, out, threads as u64),
            }
        }
    })?;
    Ok(Written { out, words, wide, sum_bits: sum.to_bits() })
}

/// `kernel` launched on `gpu` in `shape` through its typed handle (checked against
/// `module`'s PTX, loaded on `gpu`, when made), with the same inputs and initial words as [`emulate`].
///
/// # Errors
/// [`GpuError::KernelMissing`] or [`GpuError::Signature`] if `module` is not
/// `block-kernels`' PTX, [`GpuError::LaunchShape`] for a shape the device cannot run
/// (nothing launched), the driver's errors.
///
/// # Panics
/// If `shape` does not keep the kernel's contract ([`Tour::runs_in`]): on a GPU that is
/// undefined behaviour, so it is never launched.
pub fn on_gpu(gpu: &Gpu, module: &KernelModule, kernel: Tour, shape: &LaunchShape) -> Result<Written, GpuError> {
    assert!(kernel.runs_in(shape), "{} does not run in {shape:?}", kernel.name());
    let threads = threads_of(shape);
    // At least one element each: a shape with no threads must reach the shape check
    // (which refuses it), not fail at a zero-byte allocation.
    let mut out = gpu.zeros::<u32>((threads * kernel.per_thread()).max(1))?;
    let mut words = gpu.upload(&ATOMIC_WORDS)?;
    let mut wide = gpu.upload(&ATOMIC_WIDE)?;
    let mut sum = gpu.zeros::<f32>(1)?;
    let input = gpu.upload(&(0..threads.max(1) as u64).map(reduction_input).collect::<Vec<_>>())?;
    let shape = *shape;
    // SAFETY (each arm): `out` holds `per_thread` values per thread of the launch, `input`
    // one, `words` 8, `wide` 5, `sum` 1, all allocated here and read only after the
    // launch; the shape keeps the kernel's contract (asserted above).
    unsafe {
        match kernel {
            Tour::Indices => module.kernel::<BlockIndices>()?.launch(shape, (&mut out,))?,
            Tour::Barriers => module.kernel::<BlockBarriers>()?.launch(shape, (&mut out,))?,
            Tour::WarpOps { delta } => module.kernel::<BlockWarpOps>()?.launch(shape, (&mut out, delta))?,
            Tour::Shared => module.kernel::<BlockShared>()?.launch(shape, (&mut out,))?,
            Tour::Atomics => {
                module.kernel::<BlockAtomics>()?.launch(shape, (&mut words, &mut wide, &mut sum, &mut out))?
            }
            Tour::Reductions => module.kernel::<BlockReductions>()?.launch(shape, (&input, &mut out))?,
            Tour::Copy { through_slice: false } => {
                module.kernel::<GlobalCopyRaw>()?.launch(shape, (&input, &mut out, threads as u64))?
            }
            Tour::Copy { through_slice: true } => {
                module.kernel::<GlobalCopySlice>()?.launch(shape, (&input, &mut out, threads as u64))?
            }
        }
    }
    let words: [u32; 8] = gpu.download(&words)?.try_into().expect("8 words");
    let wide: [u64; 5] = gpu.download(&wide)?.try_into().expect("5 words");
    let sum_bits = gpu.download(&sum)?[0].to_bits();
    Ok(Written { out: gpu.download(&out)?, words, wide, sum_bits })
}

/// The dynamic shared memory of the largest of [`shapes`]: 97 KiB, past the 48 KiB a
/// launch gets without opting in, and with `block_shared`'s 2 KiB static tile within the
/// 99 KiB of sm_86/89/120 (an H100/H200 allows 227 KiB; sm_75 64 KiB refuses it).
pub const BIG_DYNAMIC_SHARED: u32 = 97 * 1024;

/// The warp operations' deltas the tests run: the edges of a warp, and 33, whose low 5
/// bits (all PTX reads) are 1.
pub const DELTAS: [u32; 5] = [0, 1, 5, 31, 33];

/// The shapes the tests run: 1-D, 2-D and 3-D grids and blocks, full and partial warps,
/// dynamic shared memory of 4 bytes per thread, more, and above the 48 KiB a launch gets
/// without opting in.
pub fn shapes() -> Vec<LaunchShape> {
    let shape = |grid: Dim3, block: Dim3, extra: u32| LaunchShape {
        grid,
        block,
        dynamic_shared_bytes: 4 * block.volume() as u32 + extra,
    };
    vec![
        shape(Dim3::x(3), Dim3::x(64), 0),
        shape(Dim3::new(3, 2, 1), Dim3::new(32, 4, 1), 100),
        shape(Dim3::new(2, 2, 3), Dim3::new(8, 4, 2), 0),
        shape(Dim3::new(1, 1, 2), Dim3::new(32, 2, 4), 4),
        shape(Dim3::new(2, 1, 3), Dim3::new(5, 3, 2), 8),
        shape(Dim3::new(2, 1, 1), Dim3::new(16, 16, 1), BIG_DYNAMIC_SHARED - 4 * 256),
    ]
}

/// The point of row-major rank `rank` in `extent` (x fastest).
pub fn point(rank: u64, extent: Dim3) -> Dim3 {
    let (x, y) = (u64::from(extent.x), u64::from(extent.y));
    Dim3::new((rank % x) as u32, (rank / x % y) as u32, (rank / x / y) as u32)
}

/// Each thread of the launch: (block's index, thread's index, rank in the block).
pub fn threads(shape: &LaunchShape) -> impl Iterator<Item = (Dim3, Dim3, u32)> + '_ {
    let volume = shape.block.volume();
    (0..threads_of(shape) as u64).map(move |g| {
        let (b, t) = (g / volume, g % volume);
        (point(b, shape.grid), point(t, shape.block), t as u32)
    })
}

/// What `kernel` must write to `out` in `shape`, thread after thread, from the shape's
/// arithmetic alone: the indices from the row-major ranks, the barrier counts, the
/// shuffles and votes by PTX's lane rules (the delta's low 5 bits), the mirror through shared
/// memory, the reductions by iterator.
pub fn expected_out(kernel: Tour, shape: &LaunchShape) -> Vec<u32> {
    let volume = shape.block.volume() as u32;
    let (g, bd) = (shape.grid, shape.block);
    let mut out = Vec::new();
    for (global, (b, t, rank)) in threads(shape).enumerate() {
        let lane = rank % 32;
        match kernel {
            Tour::Indices => out.extend([t.x, t.y, t.z, b.x, b.y, b.z, bd.x, bd.y, bd.z, g.x, g.y, g.z, lane, rank]),
            Tour::Barriers => out.extend([volume / 2, 1, u32::from(volume > 3), rank]),
            Tour::WarpOps { delta } => {
                // A shuffle reads the delta's low 5 bits only; the votes compare the lane
                // with the whole of it.
                let b = delta % 32;
                let up = if lane >= b { lane - b } else { lane };
                let down = if lane + b < 32 { lane + b } else { lane };
                let (all, any) = (u32::from(delta >= 32), u32::from(delta < 32));
                out.extend([b * 3, up * 5, down * 7, (lane ^ b) * 11, all, any, 0x4924_9249]);
            }
            Tour::Shared => {
                let mirror = volume - 1 - rank;
                out.extend([mirror * 3, mirror * 5, shape.dynamic_shared_bytes / 4]);
            }
            Tour::Atomics => out.push(volume),
            Tour::Reductions => {
                let block_start = global as u64 - u64::from(rank);
                let warp_start = global as u64 - u64::from(lane);
                let of = |start: u64, len: u64| (start..start + len).map(reduction_input);
                let (warp, block) = (of(warp_start, 32), of(block_start, u64::from(volume)));
                out.extend([
                    warp.clone().fold(0u32, u32::wrapping_add),
                    warp.clone().min().expect("32 lanes"),
                    warp.max().expect("32 lanes"),
                    block.clone().fold(0u32, u32::wrapping_add),
                    block.clone().min().expect("a thread"),
                    block.max().expect("a thread"),
                ]);
            }
            Tour::Copy { .. } => out.push(reduction_input(global as u64).rotate_left(7)),
        }
    }
    out
}
