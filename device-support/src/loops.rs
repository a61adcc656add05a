//! The kernels' loops over buffers: which lane touches which elements, and how the
//! stream kernels pack four results into one store. Compiled for nvptx64 and for the
//! host (both little-endian, with 64-bit atomics, which `split`, `join`, `each` and the
//! count kernels' result rely on): on nvptx64 a [`Lane`] is one GPU thread of the launch
//! (`this_lane()`), and on the host the tests run the same functions one lane after another
//! over real buffers, so an indexing, alignment, tail or packing mistake in these loops
//! fails without a GPU.
//!
//! "Device pointer" below means a pointer the lane may read or write: GPU global
//! memory in a kernel, a host buffer in the tests.

use core::sync::atomic::{AtomicU64, Ordering};
use shared::{Primitive, Stored, kind};

/// One lane of a launch: its global index and the launch's lane count, `index < lanes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lane {
    pub index: u64,
    pub lanes: u64,
}

impl Lane {
    /// The lane of thread `thread` of block `block` in a launch of `grid_dim` blocks of
    /// `block_dim` threads (the GPU's `%tid.x`, `%ctaid.x`, `%ntid.x`, `%nctaid.x`):
    /// index `block * block_dim + thread` of `grid_dim * block_dim` lanes, in 64 bits, so
    /// a launch of more than 2^32 lanes does not wrap.
    #[inline(always)]
    pub fn of_thread(thread: u32, block: u32, block_dim: u32, grid_dim: u32) -> Lane {
        Lane {
            index: u64::from(block) * u64::from(block_dim) + u64::from(thread),
            lanes: u64::from(grid_dim) * u64::from(block_dim),
        }
    }
}

/// Calls `body(i)` for every `i < n` that `lane` owns in a grid-stride loop: `i` from
/// `lane.index` in steps of `lane.lanes`, stopping before `n` or at `u64::MAX`. Over the
/// lanes `0..lanes` of one launch, every `i < n` is visited exactly once.
#[inline(always)]
pub fn grid_stride(lane: Lane, n: u64, mut body: impl FnMut(usize)) {
    let (mut i, stride) = (lane.index, lane.lanes);
    while i < n {
        body(i as usize);
        match i.checked_add(stride) {
            Some(next) => i = next,
            None => break,
        }
    }
}

pub use shared::Bits;

/// `output[i] = P::apply(input[i])` for all `i < n`.
///
/// # Safety
/// `input` and `output` must be valid device pointers to `n` elements each.
#[inline(always)]
pub unsafe fn map<P: Primitive>(lane: Lane, input: *const P::In, output: *mut Bits<P>, n: u64) {
    // SAFETY: forwarded from the caller.
    unsafe { map_with(lane, input, output, n, |x| P::apply(x).to_stored()) }
}

/// `output[i] = f(input[i])` for all `i < n`, one element per lane per grid-stride step.
///
/// # Safety
/// `input` and `output` must be valid device pointers to `n` elements each.
#[inline(always)]
pub unsafe fn map_with<I, O>(lane: Lane, input: *const I, output: *mut O, n: u64, f: impl Fn(I) -> O) {
    // SAFETY: the caller guarantees both buffers hold `n` elements and `i < n`.
    grid_stride(lane, n, |i| unsafe { output.add(i).write(f(input.add(i).read())) });
}

/// Sixteen aligned bytes: one lane's 32-bit access in a [`stream`] kernel, one lane's
/// load in a [`count_nonfinite`] kernel (`ld.global.v4.u32` / `st.global.v4.u32`).
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub struct Chunk([u32; 4]);

/// Whether `p` is aligned for `T` accesses.
#[inline(always)]
fn aligned_for<T, U>(p: *const U) -> bool {
    p.addr().is_multiple_of(core::mem::align_of::<T>())
}

/// A [`kind::StreamElement`] as the stream kernels access it: four consecutive
/// elements in one aligned access of `Quad` (4 bytes of `u8`, 8 of `u16`, 16 of `u32`).
pub trait StreamQuad: kind::StreamElement {
    /// Four elements' worth of bytes, aligned to its size.
    type Quad: Copy;
    /// The four elements of `quad`, lowest address first.
    fn split(quad: Self::Quad) -> [Self; 4];
    /// The quad holding `elements`, lowest address first.
    fn join(elements: [Self; 4]) -> Self::Quad;
}

impl StreamQuad for u8 {
    type Quad = u32;
    #[inline(always)]
    fn split(quad: u32) -> [u8; 4] {
        quad.to_le_bytes()
    }
    #[inline(always)]
    fn join(elements: [u8; 4]) -> u32 {
        u32::from_le_bytes(elements)
    }
}

impl StreamQuad for u16 {
    type Quad = u64;
    #[inline(always)]
    fn split(quad: u64) -> [u16; 4] {
        [quad as u16, (quad >> 16) as u16, (quad >> 32) as u16, (quad >> 48) as u16]
    }
    #[inline(always)]
    fn join([a, b, c, d]: [u16; 4]) -> u64 {
        u64::from(a) | u64::from(b) << 16 | u64::from(c) << 32 | u64::from(d) << 48
    }
}

impl StreamQuad for u32 {
    type Quad = Chunk;
    #[inline(always)]
    fn split(quad: Chunk) -> [u32; 4] {
        quad.0
    }
    #[inline(always)]
    fn join(elements: [u32; 4]) -> Chunk {
        Chunk(elements)
    }
}

/// [`map`] over a buffer, coalesced ([`shared::KernelKind::Stream`]): [`stream_with`]
/// `P`'s function.
///
/// # Safety
/// `input` and `output` must be valid device pointers to `n` elements each.
#[inline(always)]
pub unsafe fn stream<P>(lane: Lane, input: *const P::In, output: *mut Bits<P>, n: u64)
where
    P: kind::Stream,
    P::In: StreamQuad,
    Bits<P>: StreamQuad,
{
    // SAFETY: forwarded from the caller.
    unsafe { stream_with(lane, input, output, n, |x| P::apply(x).to_stored()) }
}

/// `output[i] = f(input[i])` for all `i < n`, coalesced: grid-stride step `v` of a lane
/// loads inputs `4v..4v+4` in one access of four inputs and stores their results in one
/// access of four results (a 4-, 8- or 16-byte [`StreamQuad::Quad`] each), so
/// consecutive lanes touch consecutive pieces of both buffers. The results are packed
/// into the quad by integer operations, so the vector loop has no narrow store. A
/// scalar pass ([`map_with`]) does the last `n % 4` elements, or all of them if either
/// pointer is not aligned for its quad.
///
/// # Safety
/// `input` and `output` must be valid device pointers to `n` elements each.
#[inline(always)]
pub unsafe fn stream_with<I: StreamQuad, O: StreamQuad>(
    lane: Lane,
    input: *const I,
    output: *mut O,
    n: u64,
    f: impl Fn(I) -> O,
) {
    let vectors = stream_vectors(input, output, n);
    let (quads_in, quads_out) = (input.cast::<I::Quad>(), output.cast::<O::Quad>());
    // SAFETY: step `v < vectors <= n / 4` covers elements 4v..4v+4 of both buffers, all
    // below `n`; both pointers are aligned for these accesses (or `vectors` is 0).
    grid_stride(lane, vectors, |v| unsafe {
        let values = I::split(quads_in.add(v).read()).map(&f);
        quads_out.add(v).write(O::join(values));
    });
    let done = (vectors * kind::STREAM_LANE_ELEMENTS) as usize;
    // SAFETY: `done <= n`, and `map_with` touches elements `done + i` for `i < n - done`.
    unsafe { map_with(lane, input.add(done), output.add(done), n - done as u64, f) };
}

/// The number of four-element steps [`stream_with`] takes on `n` elements: `n / 4` if
/// `input` and `output` are both aligned for their quads, else 0 (every element then
/// goes through the scalar pass).
#[inline(always)]
fn stream_vectors<I: StreamQuad, O: StreamQuad>(input: *const I, output: *const O, n: u64) -> u64 {
    if aligned_for::<I::Quad, _>(input) && aligned_for::<O::Quad, _>(output) {
        n / kind::STREAM_LANE_ELEMENTS
    } else {
        0
    }
}

/// [`stream`] and a count in one pass ([`shared::KernelKind::StreamCount`]):
/// [`stream_count_with`] `P`'s function and `P`'s check.
///
/// # Safety
/// As for [`stream_count_with`].
#[inline(always)]
pub unsafe fn stream_count<P>(lane: Lane, input: *const P::In, output: *mut Bits<P>, n: u64, result: *mut u64)
where
    P: kind::StreamCount,
    P::In: StreamQuad,
    Bits<P>: StreamQuad,
{
    // SAFETY: forwarded from the caller.
    unsafe {
        stream_count_with(lane, input, output, n, result, |x| {
            let y = P::apply(x);
            (y.to_stored(), P::passes(x, y))
        })
    }
}

/// `(output[i], pass_i) = f(input[i])` for all `i < n`, with [`stream_with`]'s loads and
/// stores (four elements per lane per step, a scalar pass for the tail or misaligned
/// buffers); adds the number of `i` with `pass_i == false` to `result[0]` and lowers
/// `result[1]` to the smallest such `i` (the host sets them to 0 and `u64::MAX` first),
/// with one pair of atomics per lane that found one, at its end.
///
/// # Safety
/// `input` and `output` must be valid device pointers to `n` elements each, and `result`
/// to 2 `u64`s.
#[inline(always)]
pub unsafe fn stream_count_with<I: StreamQuad, O: StreamQuad>(
    lane: Lane,
    input: *const I,
    output: *mut O,
    n: u64,
    result: *mut u64,
    f: impl Fn(I) -> (O, bool),
) {
    let vectors = stream_vectors(input, output, n);
    let (quads_in, quads_out) = (input.cast::<I::Quad>(), output.cast::<O::Quad>());
    let (mut count, mut first) = (0u64, u64::MAX);
    // SAFETY: as in `stream_with`: step `v < vectors <= n / 4` covers elements 4v..4v+4
    // of both buffers, all below `n`, and both pointers are aligned for these accesses.
    grid_stride(lane, vectors, |v| unsafe {
        let [a, b, c, d] = I::split(quads_in.add(v).read()).map(&f);
        quads_out.add(v).write(O::join([a.0, b.0, c.0, d.0]));
        // bit k: element k of the four fails
        let failing = u32::from(!a.1) | u32::from(!b.1) << 1 | u32::from(!c.1) << 2 | u32::from(!d.1) << 3;
        if failing != 0 {
            count += u64::from(failing.count_ones());
            first = first.min(v as u64 * kind::STREAM_LANE_ELEMENTS + u64::from(failing.trailing_zeros()));
        }
    });
    let done = vectors * kind::STREAM_LANE_ELEMENTS;
    // SAFETY: `done <= n`: element `done + i` for `i < n - done` is in both buffers.
    grid_stride(lane, n - done, |i| unsafe {
        let index = done as usize + i;
        let (y, pass) = f(input.add(index).read());
        output.add(index).write(y);
        if !pass {
            count += 1;
            first = first.min(index as u64);
        }
    });
    if count != 0 {
        // SAFETY: the caller guarantees `result` holds 2 `u64`s in device memory; they
        // are only accessed atomically while kernels run.
        unsafe {
            AtomicU64::from_ptr(result).fetch_add(count, Ordering::Relaxed);
            AtomicU64::from_ptr(result.add(1)).fetch_min(first, Ordering::Relaxed);
        }
    }
}

/// A [`kind::CountElement`] as the count kernels read it: the elements of a 16-byte
/// [`Chunk`], lowest address first.
pub trait ChunkLoad: kind::CountElement {
    /// Calls `f(k, element k)` for each element of `chunk`.
    fn each(chunk: Chunk, f: impl FnMut(u32, Self));
}

// Index loops over constant ranges, not iterator adapters over arrays: LLVM unrolls
// these fully, where a `zip` of an array's `into_iter` was left as a loop over a copy of
// the chunk in local memory.
impl ChunkLoad for u8 {
    #[inline(always)]
    fn each(chunk: Chunk, mut f: impl FnMut(u32, u8)) {
        for k in 0..16 {
            f(k, (chunk.0[k as usize / 4] >> (8 * (k % 4))) as u8);
        }
    }
}

impl ChunkLoad for u16 {
    #[inline(always)]
    fn each(chunk: Chunk, mut f: impl FnMut(u32, u16)) {
        for k in 0..8 {
            f(k, (chunk.0[k as usize / 2] >> (16 * (k % 2))) as u16);
        }
    }
}

impl ChunkLoad for u32 {
    #[inline(always)]
    fn each(chunk: Chunk, mut f: impl FnMut(u32, u32)) {
        for k in 0..4 {
            f(k, chunk.0[k as usize]);
        }
    }
}

impl ChunkLoad for u64 {
    #[inline(always)]
    fn each(chunk: Chunk, mut f: impl FnMut(u32, u64)) {
        for k in 0..2 {
            let (low, high) = (chunk.0[2 * k as usize], chunk.0[2 * k as usize + 1]);
            f(k, u64::from(high) << 32 | u64::from(low));
        }
    }
}

/// How [`count_nonfinite`] splits `n` elements: `head` elements before the first
/// 16-byte boundary (at most `n`), then `chunks` whole 16-byte [`Chunk`]s, then the
/// elements from `tail_start` to `n` (fewer than a chunk's worth).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CountSplit {
    head: u64,
    chunks: u64,
    tail_start: u64,
}

/// The [`CountSplit`] of `n` elements from `input`, which must be aligned for `T` (so
/// that the 16-byte boundary falls on an element).
#[inline(always)]
fn count_split<T: kind::CountElement>(input: *const T, n: u64) -> CountSplit {
    let per_chunk = kind::count_lane_elements::<T>();
    let head = ((input.addr().wrapping_neg() % align_of::<Chunk>()) / size_of::<T>()) as u64;
    let head = head.min(n);
    let chunks = (n - head) / per_chunk;
    CountSplit { head, chunks, tail_start: head + chunks * per_chunk }
}

/// Counts the non-finite values of a buffer and finds the first one's index
/// ([`shared::KernelKind::CountNonfinite`]): [`count_failing`] with `P`'s finiteness
/// test.
///
/// # Safety
/// As for [`count_failing`].
#[inline(always)]
pub unsafe fn count_nonfinite<P>(lane: Lane, input: *const P::In, n: u64, result: *mut u64)
where
    P: kind::CountNonfinite,
    P::In: ChunkLoad,
{
    // SAFETY: forwarded from the caller.
    unsafe { count_failing(lane, input, n, result, P::apply) }
}

/// Counts the elements of a buffer that fail `pass` and finds the first one's index:
/// adds the count to `result[0]` and lowers `result[1]` to the index (the host sets them
/// to 0 and `u64::MAX` first).
///
/// The elements from the first 16-byte boundary on are read one aligned 16-byte
/// [`Chunk`] per lane per grid-stride step, consecutive lanes on consecutive chunks;
/// a chunk is tested with one branch-free OR of `!pass` over its elements, and
/// only a chunk holding a failing value is counted and searched. The fewer than
/// `16 / size` elements before that boundary and after the last whole chunk are done
/// one per lane in a second grid-stride pass.
///
/// # Safety
/// `input` must be a valid device pointer to `n` elements, aligned for its type, and
/// `result` to 2 `u64`s.
#[inline(always)]
pub unsafe fn count_failing<T: ChunkLoad>(
    lane: Lane,
    input: *const T,
    n: u64,
    result: *mut u64,
    pass: impl Fn(T) -> bool,
) {
    let per_chunk = kind::count_lane_elements::<T>();
    let CountSplit { head, chunks, tail_start } = count_split(input, n);
    let (mut count, mut first) = (0u64, u64::MAX);
    // SAFETY: `head` elements from `input` end on a 16-byte boundary (or `head == n`
    // and there are no chunks); chunk `c < chunks` covers elements
    // `head + per_chunk * c ..+ per_chunk`, all below `n`.
    let chunk_base = unsafe { input.add(head as usize) }.cast::<Chunk>();
    // What the GPU would fault on (a misaligned 16-byte load), checked where the host
    // tests run this loop; nothing of it is in the kernels.
    #[cfg(not(target_arch = "nvptx64"))]
    assert!(chunks == 0 || aligned_for::<Chunk, _>(chunk_base), "chunk loads misaligned");
    grid_stride(lane, chunks, |c| {
        // SAFETY: see above.
        let chunk = unsafe { chunk_base.add(c).read() };
        let mut any = false;
        T::each(chunk, |_, x| any |= !pass(x));
        if any {
            let mut failing = 0u32; // bit k: element k of the chunk fails
            T::each(chunk, |k, x| failing |= u32::from(!pass(x)) << k);
            count += u64::from(failing.count_ones());
            first = first.min(head + per_chunk * c as u64 + u64::from(failing.trailing_zeros()));
        }
    });
    // The head and the tail, one element per lane: `i < head` is element `i`, the rest
    // element `tail_start + (i - head)`.
    let scalar = head + (n - tail_start);
    grid_stride(lane, scalar, |i| {
        let index = if (i as u64) < head { i as u64 } else { tail_start + (i as u64 - head) };
        // SAFETY: `index < head <= n` or `tail_start <= index < n`.
        if !pass(unsafe { input.add(index as usize).read() }) {
            count += 1;
            first = first.min(index);
        }
    });
    if count != 0 {
        // SAFETY: the caller guarantees `result` holds 2 `u64`s in device memory; they
        // are only accessed atomically while kernels run.
        unsafe {
            AtomicU64::from_ptr(result).fetch_add(count, Ordering::Relaxed);
            AtomicU64::from_ptr(result.add(1)).fetch_min(first, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests;
