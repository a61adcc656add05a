//! The kernels' loops, run on the host one lane after another over real buffers, for
//! every variant whose table entry has the kind: the same generic functions the PTX
//! kernels instantiate, with `P::apply` compiled for the host (which `shared`'s
//! exhaustive tests prove exact). They catch, without a GPU: a lane writing an element
//! it does not own or missing one, a layout that is not the coalesced one, a packing
//! order mistake (elements of a quad swapped), the alignment fallback taken when it
//! should not be or not taken when it should, the tail, a write to the input or outside
//! the output, reads outside the input of the count kernels, their head, chunks and
//! tail, and a lane index computed in 32 bits.
//!
//! What they cannot catch: anything `rustc`'s nvptx backend or `ptxas` does to these
//! loops (the issue-9 store miscompilation), the instruction kernels' inline PTX (only
//! on nvptx64), and anything that needs lanes running at the same time (the count
//! kernels' atomics under contention): `host`'s PTX/SASS guards and the GPU tests cover
//! those.

use super::*;
use shared::KernelKind;
use std::format;
use std::string::String;
use std::vec;
use std::vec::Vec;

/// Lane counts of the emulated launches: one lane, fewer lanes than quads, a warp, and
/// a prime count larger than most buffers here (most lanes get nothing).
const LANE_COUNTS: [u64; 4] = [1, 3, 32, 97];

/// Buffer lengths: empty, every length up to three quads, and longer ones whose tails
/// differ.
const LENGTHS: [usize; 19] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 31, 33, 66, 131];

/// Elements of sentinel on each side of an output region, to catch writes outside it.
/// A multiple of 4, so an output placed after it is quad-aligned iff its offset is.
const GUARD: usize = 8;

/// An element type of the kernels' buffers, as the tests fill and compare them.
trait Word: Copy + PartialEq + core::fmt::Debug {
    /// The low bits of `x`.
    fn from_u64(x: u64) -> Self;
    /// Every bit flipped.
    fn flipped(self) -> Self;
}

macro_rules! word {
    ($($t:ty)*) => {$(
        impl Word for $t {
            fn from_u64(x: u64) -> $t {
                x as $t
            }
            fn flipped(self) -> $t {
                !self
            }
        }
    )*};
}
word!(u8 u16 u32 u64);

/// SplitMix64: the test data, reproducible.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Runs `kernel` for each lane of a launch of `lanes` lanes, lane 0 first.
fn launch(lanes: u64, mut kernel: impl FnMut(Lane)) {
    for index in 0..lanes {
        kernel(Lane { index, lanes });
    }
}

/// Zeroed memory aligned as a [`Chunk`] (16 bytes) for at least `len` `T`s: the buffers'
/// start, so an offset of `k` elements gives a known alignment.
struct Aligned<T> {
    chunks: Vec<Chunk>,
    len: usize,
    _t: core::marker::PhantomData<T>,
}

impl<T: Word> Aligned<T> {
    fn new(len: usize) -> Self {
        assert!(size_of::<T>() <= 16 && 16 % size_of::<T>() == 0);
        let chunks = vec![Chunk([0; 4]); (len * size_of::<T>()).div_ceil(16) + 1];
        Self { chunks, len, _t: core::marker::PhantomData }
    }

    fn as_mut_ptr(&mut self) -> *mut T {
        self.chunks.as_mut_ptr().cast()
    }

    fn as_slice(&self) -> &[T] {
        // SAFETY: `chunks` holds at least `len` `T`s' bytes, 16-aligned (so aligned for
        // `T`), and every bit pattern is a valid `T` (an unsigned integer).
        unsafe { core::slice::from_raw_parts(self.chunks.as_ptr().cast(), self.len) }
    }

    fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as in `as_slice`, and `self` is borrowed mutably.
        unsafe { core::slice::from_raw_parts_mut(self.as_mut_ptr(), self.len) }
    }
}

/// The pseudo-random input `k` of a variant: the low `input_bits` of a mixed `seed ^ k`
/// (inputs outside the family's domain are not the function's business).
fn input_of<P: Primitive>(seed: u64, k: u64) -> P::In
where
    P::In: Word,
{
    P::In::from_u64(mix(seed ^ k) & P::FAMILY.domain().input_mask())
}

/// An element-wise kernel as the tests call it: `map::<P>` or `stream::<P>`.
type Elementwise<I, O> = unsafe fn(Lane, *const I, *mut O, u64);

/// How many quad steps a stream kernel takes on `n` elements from these pointers
/// (`stream_vectors`).
type QuadSteps<I, O> = fn(*const I, *const O, u64) -> u64;

/// One launch of an element-wise kernel to check.
struct Case<'a, I, O> {
    kernel: Elementwise<I, O>,
    input: &'a [I],
    expected: &'a [O],
    /// Elements from a 16-byte boundary to the input's first / the output's first.
    input_offset: usize,
    output_offset: usize,
    lanes: u64,
    /// The quad steps the layout takes (0 for `map`, or where a buffer is not
    /// quad-aligned): quad `v` (elements `4v..4v+4`) belongs to lane `v % lanes`, and
    /// element `4 * quads + j` after them to lane `j % lanes`.
    quads: usize,
    /// For a stream kernel, its quad-step count, which must give `quads` on the exact
    /// pointers the kernel gets.
    quad_steps: Option<QuadSteps<I, O>>,
}

impl<I, O> Case<'_, I, O> {
    /// The lane the layout gives element `i`.
    fn owner(&self, i: usize) -> u64 {
        let index = if i < 4 * self.quads { i / 4 } else { i - 4 * self.quads };
        index as u64 % self.lanes
    }
}

/// Runs `case` one lane at a time, each lane twice over outputs prefilled with two
/// sentinels that differ in every bit, and checks: each lane writes only elements it
/// owns (a lane "writes" an element if either run changed it), and writes their
/// expected value in both runs; together the lanes write every element; nothing outside
/// the output, and nothing of the input, is touched. `Err` describes the first
/// violation.
fn check_case<I: Word, O: Word>(case: &Case<'_, I, O>) -> Result<(), String> {
    let n = case.input.len();
    let mut input = Aligned::<I>::new(case.input_offset + n);
    input.as_mut_slice()[case.input_offset..].copy_from_slice(case.input);
    let total = GUARD + case.output_offset + n + GUARD;
    let start = GUARD + case.output_offset;
    let sentinel = |k: usize| O::from_u64(mix(0x5E47 ^ k as u64));
    let mut written = vec![None; n];
    let mut runs = [Aligned::<O>::new(total), Aligned::<O>::new(total)];
    let input_before: Vec<I> = input.as_slice().to_vec();
    if let Some(quad_steps) = case.quad_steps {
        // SAFETY: within their buffers (`start < total`); only looked at, not accessed.
        let pointers = unsafe { (input.as_mut_ptr().add(case.input_offset), runs[0].as_mut_ptr().add(start)) };
        let found = quad_steps(pointers.0, pointers.1, n as u64);
        if found != case.quads as u64 {
            return Err(format!("{found} quad steps, expected {}", case.quads));
        }
    }
    for lane in (0..case.lanes).map(|index| Lane { index, lanes: case.lanes }) {
        for (run, flip) in runs.iter_mut().zip([false, true]) {
            for (k, slot) in run.as_mut_slice().iter_mut().enumerate() {
                *slot = if flip { sentinel(k).flipped() } else { sentinel(k) };
            }
            // SAFETY: the input holds `n` elements from `input_offset`, the output `n`
            // from `start` (plus guards on both sides).
            unsafe {
                (case.kernel)(lane, input.as_mut_ptr().add(case.input_offset), run.as_mut_ptr().add(start), n as u64)
            };
        }
        if input.as_slice() != input_before {
            return Err(format!("lane {} wrote to its input", lane.index));
        }
        let [a, b] = [runs[0].as_slice(), runs[1].as_slice()];
        for k in 0..total {
            if a[k] == sentinel(k) && b[k] == sentinel(k).flipped() {
                continue;
            }
            let Some(i) = k.checked_sub(start).filter(|&i| i < n) else {
                return Err(format!(
                    "lane {} wrote outside the output, at {k} of {total} (output from {start})",
                    lane.index
                ));
            };
            if a[i + start] != case.expected[i] || b[i + start] != case.expected[i] {
                let got = (a[i + start], b[i + start]);
                return Err(format!(
                    "lane {} wrote {got:?} to element {i}, expected {:?}",
                    lane.index, case.expected[i]
                ));
            }
            if case.owner(i) != lane.index {
                return Err(format!(
                    "element {i} was written by lane {}, the layout gives it to lane {}",
                    lane.index,
                    case.owner(i)
                ));
            }
            if let Some(first) = written[i].replace(lane.index) {
                return Err(format!("element {i} was written by lanes {first} and {}", lane.index));
            }
        }
    }
    match written.iter().position(Option::is_none) {
        Some(i) => Err(format!("no lane wrote element {i}")),
        None => Ok(()),
    }
}

/// Whether a stream kernel's buffers allow its quad loop: both start on a quad boundary
/// (4 elements from a 16-byte boundary: every quad size divides 16).
fn quads_aligned(input_offset: usize, output_offset: usize) -> bool {
    input_offset.is_multiple_of(4) && output_offset.is_multiple_of(4)
}

/// Every launch of `kernel`, `P`'s `suffix` kernel, on every length, lane count and
/// pair of buffer offsets: `quads(n, input offset, output offset)` is the number of
/// quad steps its layout takes, `quad_steps` how a stream kernel counts them (see
/// [`Case`]). The first failure, if any.
fn check_launches<P: Primitive>(
    suffix: &str,
    kernel: Elementwise<P::In, Bits<P>>,
    input: impl Fn(usize) -> Vec<P::In>,
    offsets: &[(usize, usize)],
    quads: impl Fn(usize, usize, usize) -> usize,
    quad_steps: Option<QuadSteps<P::In, Bits<P>>>,
) -> Vec<String>
where
    P::In: Word,
    Bits<P>: Word,
{
    for &n in &LENGTHS {
        let input = input(n);
        let expected: Vec<Bits<P>> = input.iter().map(|&x| P::apply(x).to_stored()).collect();
        for lanes in LANE_COUNTS {
            for &(input_offset, output_offset) in offsets {
                let quads = quads(n, input_offset, output_offset);
                let case = Case {
                    kernel,
                    input: &input,
                    expected: &expected,
                    input_offset,
                    output_offset,
                    lanes,
                    quads,
                    quad_steps,
                };
                if let Err(e) = check_case(&case) {
                    let offsets = format!("offsets {input_offset}/{output_offset}");
                    return vec![format!("{}{suffix}, n {n}, {lanes} lanes, {offsets}: {e}", P::NAME)];
                }
            }
        }
    }
    Vec::new()
}

/// `map::<P>`: on every length and lane count, element `i` belongs to lane `i % lanes`.
fn check_map<P: Primitive>() -> Vec<String>
where
    P::In: Word,
    Bits<P>: Word,
{
    let input = |n| (0..n as u64).map(|k| input_of::<P>(0x3A9, k)).collect();
    check_launches::<P>("_map", map::<P>, input, &[(0, 0), (1, 3)], |_, _, _| 0, None)
}

/// `n` inputs of `P` chosen so that the four results of each quad differ (so that
/// swapped elements give different results; random bits alone would not, e.g. f32 →
/// UNORM8 is 0 or 255 on most of them). The candidates for an element run through all
/// 256 values of the input's top byte (every sign and exponent range of a float), with
/// pseudo-random lower bits; the first whose result is new in its quad is taken.
fn distinct_quads<P: Primitive>(seed: u64, n: usize) -> Vec<P::In>
where
    P::In: Word,
    Bits<P>: Word,
{
    let bits = P::FAMILY.domain().input_bits();
    assert!((8..=64).contains(&bits), "{}: a {bits}-bit domain", P::NAME);
    let low_mask = P::FAMILY.domain().input_mask() >> 8;
    let mut input: Vec<P::In> = Vec::with_capacity(n);
    for k in 0..n as u64 {
        let quad_start = (k - k % 4) as usize;
        let earlier: Vec<Bits<P>> = input[quad_start..].iter().map(|&x| P::apply(x).to_stored()).collect();
        let candidate = |j: u64| {
            let top = (j * 167 + mix(seed ^ k)) % 256; // 167 is odd: j ↦ top is a permutation
            P::In::from_u64(top << (bits - 8) | mix(seed ^ k ^ j << 40) & low_mask)
        };
        let chosen = (0..256).map(candidate).find(|&x| !earlier.contains(&P::apply(x).to_stored()));
        input.push(chosen.unwrap_or_else(|| candidate(0)));
    }
    input
}

/// `stream::<P>`: on every length, lane count and offset of both buffers (0 to 7 elements
/// from a 16-byte boundary), the quad loop runs exactly when both are quad-aligned (on
/// the pointers the kernel gets), with the layout of [`Case`]; each element gets its own
/// result, and the four results of every quad differ, so a packing mistake fails.
fn check_stream<P: kind::Stream>() -> Vec<String>
where
    P::In: StreamQuad + Word,
    Bits<P>: StreamQuad + Word,
{
    for n in LENGTHS {
        let expected: Vec<Bits<P>> = distinct_quads::<P>(0x51A, n).iter().map(|&x| P::apply(x).to_stored()).collect();
        for (v, quad) in expected.as_chunks::<4>().0.iter().enumerate() {
            if (1..4).any(|j| quad[..j].contains(&quad[j])) {
                return vec![format!(
                    "{}_stream: no inputs found for quad {v} with four different results: {quad:?}",
                    P::NAME
                )];
            }
        }
    }
    let offsets: Vec<(usize, usize)> = (0..64).map(|k| (k / 8, k % 8)).collect();
    let quads =
        |n: usize, input_offset, output_offset| if quads_aligned(input_offset, output_offset) { n / 4 } else { 0 };
    let input = |n| distinct_quads::<P>(0x51A, n);
    check_launches::<P>("_stream", stream::<P>, input, &offsets, quads, Some(stream_vectors))
}

/// A count kernel as the tests call it: `count_nonfinite::<P>`.
type CountKernel<I> = unsafe fn(Lane, *const I, u64, *mut u64);

/// A count kernel's `result`: two `u64`s, aligned for `AtomicU64` on every host.
#[repr(C, align(8))]
struct CountResult([u64; 2]);

/// The non-finite and the finite inputs of `P`'s domain: all of them for a domain of up
/// to 16 bits, else those among 2^16 pseudo-random inputs.
fn split_domain<P: kind::CountNonfinite>() -> (Vec<P::In>, Vec<P::In>)
where
    P::In: Word,
{
    let mask = P::FAMILY.domain().input_mask();
    let inputs: Vec<P::In> = if mask <= 0xFFFF {
        (0..=mask).map(P::In::from_u64).collect()
    } else {
        (0..1 << 16).map(|k| input_of::<P>(0xC0, k)).collect()
    };
    inputs.into_iter().partition(|&x| !P::apply(x))
}

/// `count_nonfinite::<P>` (or `kernel`, for the tests of this check): on every length,
/// lane count and start within a 16-byte chunk, with no, some and only non-finite
/// values, and with a single one at each position, the lanes together add the count of
/// non-finite inputs to `result[0]` and lower `result[1]` to the first one's index
/// (`P::apply` on each element is the reference: this checks the loop). The memory
/// around the input holds non-finite values, so a read outside it changes the count.
fn check_count<P: kind::CountNonfinite>(kernel: CountKernel<P::In>) -> Vec<String>
where
    P::In: ChunkLoad + Word,
{
    let (nonfinite, finite) = split_domain::<P>();
    if nonfinite.is_empty() || finite.is_empty() {
        return vec![format!("{}: no non-finite or no finite input found", P::NAME)];
    }
    let per_chunk = 16 / size_of::<P::In>();
    let pick = |pool: &[P::In], r: u64| pool[(r >> 32) as usize % pool.len()];
    let run = |input: &[P::In], lanes: u64, offset: usize| -> Result<(), String> {
        let count = input.iter().filter(|&&x| !P::apply(x)).count() as u64;
        let first = input.iter().position(|&x| !P::apply(x)).map_or(u64::MAX, |i| i as u64);
        let mut buffer = Aligned::<P::In>::new(offset + input.len() + per_chunk);
        buffer.as_mut_slice().fill(nonfinite[0]);
        buffer.as_mut_slice()[offset..offset + input.len()].copy_from_slice(input);
        let mut result = CountResult([0, u64::MAX]);
        launch(lanes, |lane| {
            // SAFETY: `input.len()` elements from `offset`, aligned for their type;
            // `result` holds 2 `u64`s aligned for atomics, only accessed by this loop.
            unsafe { kernel(lane, buffer.as_mut_ptr().add(offset), input.len() as u64, result.0.as_mut_ptr()) };
        });
        let show = |i: u64| if i == u64::MAX { "none".into() } else { format!("{i}") };
        match result.0 == [count, first] {
            true => Ok(()),
            false => {
                Err(format!("count {} first {}, expected {count} {}", result.0[0], show(result.0[1]), show(first)))
            }
        }
    };
    for &n in &LENGTHS {
        // Density 0: all finite; d: on average every d-th value non-finite; 1: all.
        for density in [0, 7, 1] {
            let input: Vec<P::In> = (0..n as u64)
                .map(|k| {
                    let r = mix(0xD00D ^ k ^ density << 32 ^ (n as u64) << 48);
                    let from_pool = density != 0 && r.is_multiple_of(density);
                    pick(if from_pool { &nonfinite } else { &finite }, r)
                })
                .collect();
            for lanes in LANE_COUNTS {
                for offset in 0..per_chunk {
                    if let Err(e) = run(&input, lanes, offset) {
                        return vec![format!(
                            "{}_count_nonfinite, n {n}, density {density}, {lanes} lanes, offset {offset}: {e}",
                            P::NAME
                        )];
                    }
                }
            }
        }
        // One non-finite value, at each position in turn.
        for at in 0..n {
            let input: Vec<P::In> =
                (0..n as u64).map(|k| pick(if k == at as u64 { &nonfinite } else { &finite }, mix(k ^ 0xAB))).collect();
            for lanes in [1, 3] {
                for offset in 0..per_chunk {
                    if let Err(e) = run(&input, lanes, offset) {
                        return vec![format!(
                            "{}_count_nonfinite, n {n}, one at {at}, {lanes} lanes, offset {offset}: {e}",
                            P::NAME
                        )];
                    }
                }
            }
        }
    }
    Vec::new()
}

/// Checks kind `$kind` of variant `$name` if the tests cover that kind, counting the
/// variants checked per kind.
macro_rules! check_kind {
    ($failures:ident, $counts:ident, $name:ident, Map) => {
        $failures.extend(check_map::<shared::variants::$name>());
        $counts[0] += 1;
    };
    ($failures:ident, $counts:ident, $name:ident, Stream) => {
        $failures.extend(check_stream::<shared::variants::$name>());
        $counts[1] += 1;
    };
    ($failures:ident, $counts:ident, $name:ident, CountNonfinite) => {
        $failures.extend(check_count::<shared::variants::$name>(count_nonfinite::<shared::variants::$name>));
        $counts[2] += 1;
    };
    // Skeleton and the timing kinds hold no buffer loop of their own beyond `map`'s;
    // the hardware kinds are `map_with` / `stream_with` around inline PTX (nvptx64 only)
    // and share these loops, which the kinds above cover for every element type.
    ($failures:ident, $counts:ident, $name:ident, $other:ident) => {};
}

/// Callback for `shared::for_each_variant!`: one function that checks every variant's
/// `Map`, `Stream` and `CountNonfinite` loops and returns the failures and the number of
/// variants checked per kind.
macro_rules! check_every_loop {
    ($({ $name:ident, $family:expr, $in:ty => $out:ty, $f:path, $claim:ident, [$($kind:ident),*], $desc:literal })*) => {
        fn check_every_loop() -> (Vec<String>, [usize; 3]) {
            let mut failures = Vec::new();
            let mut counts = [0usize; 3];
            $($(
                check_kind!(failures, counts, $name, $kind);
            )*)*
            (failures, counts)
        }
    };
}
shared::for_each_variant!(check_every_loop);

/// Callback for `shared::for_each_variant!`: how many variants list each kind, from
/// each variant's `Primitive::KINDS` (so a kind that `check_kind!` stops recognising,
/// and silently skips, fails the count).
macro_rules! variants_with {
    ($({ $name:ident, $family:expr, $in:ty => $out:ty, $f:path, $claim:ident, [$($kind:ident),*], $desc:literal })*) => {
        fn variants_with(kind: KernelKind) -> usize {
            [$(<shared::variants::$name as Primitive>::KINDS),*].iter().filter(|kinds| kinds.contains(&kind)).count()
        }
    };
}
shared::for_each_variant!(variants_with);

#[test]
fn every_map_stream_and_count_loop_gives_each_element_its_result_from_the_lane_that_owns_it() {
    let (failures, counts) = check_every_loop();
    assert!(failures.is_empty(), "{} loops failed:\n{}", failures.len(), failures.join("\n"));
    let table = [KernelKind::Map, KernelKind::Stream, KernelKind::CountNonfinite].map(variants_with);
    assert_eq!(counts, table, "variants checked for Map, Stream, CountNonfinite against the table's");
    assert!(counts.iter().all(|&c| c > 0), "a kind without any variant: {counts:?}");
}

#[test]
fn the_grid_stride_loop_stops_at_the_end_of_the_index_space() {
    let visits = |index, lanes, n| {
        let mut seen = Vec::new();
        grid_stride(Lane { index, lanes }, n, |i| seen.push(i as u64));
        seen
    };
    assert_eq!(visits(1, 3, 8), [1, 4, 7]);
    assert_eq!(visits(5, 6, 5), [] as [u64; 0]);
    // The next index would pass u64::MAX: the loop ends instead of wrapping to 0.
    assert_eq!(visits(u64::MAX - 2, 4, u64::MAX), [u64::MAX - 2]);
    assert_eq!(visits(2, u64::MAX, u64::MAX), [2]);
}

/// A checker that passes everything proves nothing: each kind of mistake the loops
/// could make is made here on purpose, with `stream_with` and `map_with` themselves
/// around a wrong element function or a wrong layout, and `check_case` must see it.
#[test]
fn the_loop_checker_fails_on_each_kind_of_mistake() {
    type P = shared::variants::f32_to_f16;
    let n = 13;
    let input = distinct_quads::<P>(0x77, n);
    let expected: Vec<u16> = input.iter().map(|&x| <P as Primitive>::apply(x).to_stored()).collect();
    let run_with = |kernel: Elementwise<u32, u16>, quad_steps: Option<QuadSteps<u32, u16>>| {
        check_case(&Case {
            kernel,
            input: &input,
            expected: &expected,
            input_offset: 0,
            output_offset: 0,
            lanes: 3,
            quads: n / 4,
            quad_steps,
        })
    };
    let run = |kernel| run_with(kernel, None);
    // The real kernel passes.
    assert_eq!(run(stream::<P>), Ok(()));

    // Swapped elements within a quad (a packing-order mistake).
    unsafe fn swapped(lane: Lane, input: *const u32, output: *mut u16, n: u64) {
        let f = |x| <P as Primitive>::apply(x).to_stored();
        // SAFETY: forwarded from the caller.
        unsafe { stream_with(lane, input, output, n, f) };
        if lane.index == 0 && n >= 4 {
            // SAFETY: elements 0 and 1 exist.
            unsafe { core::ptr::swap(output, output.add(1)) };
        }
    }
    let error = run(swapped).expect_err("swapped pair");
    assert!(error.contains("element 0") || error.contains("element 1"), "{error}");

    // One element per lane where the layout gives lanes whole quads (not coalesced as
    // claimed), though every value is right.
    unsafe fn one_per_lane(lane: Lane, input: *const u32, output: *mut u16, n: u64) {
        // SAFETY: forwarded from the caller.
        unsafe { map_with(lane, input, output, n, |x| <P as Primitive>::apply(x).to_stored()) };
    }
    let error = run(one_per_lane).expect_err("wrong layout");
    assert!(error.contains("the layout gives it to lane"), "{error}");

    // A tail dropped, an element written twice by two lanes, a write past the end.
    unsafe fn no_tail(lane: Lane, input: *const u32, output: *mut u16, n: u64) {
        // SAFETY: forwarded from the caller, over fewer elements.
        unsafe { stream_with(lane, input, output, n & !3, |x| <P as Primitive>::apply(x).to_stored()) };
    }
    let error = run(no_tail).expect_err("no tail");
    assert!(error.contains("no lane wrote element 12"), "{error}");
    unsafe fn twice(lane: Lane, input: *const u32, output: *mut u16, n: u64) {
        // SAFETY: forwarded from the caller.
        unsafe { stream_with(lane, input, output, n, |x| <P as Primitive>::apply(x).to_stored()) };
        if lane.index == 1 {
            // SAFETY: element 0 exists (n is 13 here).
            unsafe { output.write(<P as Primitive>::apply(input.read()).to_stored()) };
        }
    }
    let error = run(twice).expect_err("written twice");
    assert!(error.contains("element 0 was written by lane 1"), "{error}");
    unsafe fn past_the_end(lane: Lane, input: *const u32, output: *mut u16, n: u64) {
        // SAFETY: the checker leaves a guard after the output, so one element past it is
        // still inside its buffer, and `Aligned` allocates a spare 16 bytes after the
        // input, so one element past it is too.
        unsafe { stream_with(lane, input, output, n + 1, |x| <P as Primitive>::apply(x).to_stored()) };
    }
    let error = run(past_the_end).expect_err("past the end");
    assert!(error.contains("wrote outside the output"), "{error}");

    // A lane that writes into its input.
    unsafe fn into_input(lane: Lane, input: *const u32, output: *mut u16, n: u64) {
        // SAFETY: forwarded from the caller.
        unsafe { stream_with(lane, input, output, n, |x| <P as Primitive>::apply(x).to_stored()) };
        // SAFETY: element 0 of the input exists (n is 13 here) and the checker's buffer
        // is writable.
        unsafe { input.cast_mut().write(1) };
    }
    let error = run(into_input).expect_err("input written");
    assert!(error.contains("wrote to its input"), "{error}");

    // A stream kernel that falls back to the scalar pass on aligned buffers.
    assert_eq!(run_with(stream::<P>, Some(|_, _, _| 0)), Err("0 quad steps, expected 3".into()));
}

/// `check_count` must fail on count kernels that are wrong on purpose: one that skips
/// the last element, one that starts one element late, one whose lane 1 does nothing.
#[test]
fn the_count_checker_fails_on_each_kind_of_mistake() {
    type P = shared::variants::f16_finite_exp_mask;
    assert_eq!(check_count::<P>(count_nonfinite::<P>), Vec::<String>::new());
    unsafe fn short(lane: Lane, input: *const u16, n: u64, result: *mut u64) {
        // SAFETY: forwarded from the caller, over fewer elements.
        unsafe { count_nonfinite::<P>(lane, input, n.saturating_sub(1), result) };
    }
    unsafe fn late(lane: Lane, input: *const u16, n: u64, result: *mut u64) {
        if n > 0 {
            // SAFETY: forwarded from the caller, from element 1 on.
            unsafe { count_nonfinite::<P>(lane, input.add(1), n - 1, result) };
        }
    }
    unsafe fn lane_1_idle(lane: Lane, input: *const u16, n: u64, result: *mut u64) {
        if lane.index != 1 {
            // SAFETY: forwarded from the caller.
            unsafe { count_nonfinite::<P>(lane, input, n, result) };
        }
    }
    for (what, kernel) in [("short", short as CountKernel<u16>), ("late", late), ("lane 1 idle", lane_1_idle)] {
        let failures = check_count::<P>(kernel);
        assert!(!failures.is_empty(), "{what}: check_count passed a wrong kernel");
    }
}

#[test]
fn a_lane_index_is_computed_in_64_bits() {
    assert_eq!(Lane::of_thread(5, 2, 256, 10), Lane { index: 517, lanes: 2560 });
    let max = u32::MAX;
    let lanes = u128::from(max) * u128::from(max);
    let last = Lane::of_thread(max - 1, max - 1, max, max);
    assert_eq!((u128::from(last.index), u128::from(last.lanes)), (lanes - 1, lanes));
}

/// The count kernels' split and the stream kernels' quad count, on lengths up to
/// `u64::MAX` and every start within a 16-byte chunk (overflow checks are on in tests),
/// against the same split in `u128`.
#[test]
fn the_loops_split_any_length_without_overflow() {
    fn check<T: kind::CountElement>() {
        let size = size_of::<T>() as u128;
        for n in [0, 1, 17, (1 << 40) + 3, u64::MAX - 16, u64::MAX - 1, u64::MAX] {
            for addr in (0x1000..0x1010).step_by(size_of::<T>()) {
                let split = count_split(core::ptr::without_provenance::<T>(addr), n);
                let head = ((16 - addr as u128 % 16) % 16 / size).min(u128::from(n));
                let chunks = (u128::from(n) - head) / (16 / size);
                let expected = [head, chunks, head + chunks * (16 / size)];
                let got = [split.head, split.chunks, split.tail_start].map(u128::from);
                assert_eq!(got, expected, "{} bytes, n {n}, address {addr:#x}", size);
            }
        }
    }
    check::<u8>();
    check::<u16>();
    check::<u32>();
    check::<u64>();
    for n in [0, 3, 4, u64::MAX - 3, u64::MAX] {
        let (input, output) =
            (core::ptr::without_provenance::<u32>(0x1000), core::ptr::without_provenance::<u8>(0x2004));
        assert_eq!(stream_vectors(input, output, n), n / 4);
        assert_eq!(stream_vectors(input, core::ptr::without_provenance::<u8>(0x2005), n), 0);
    }
}

/// `count_failing` with a closure that is no primitive of the table: over every start
/// offset within a chunk and several lane counts, the count and first index of the
/// elements failing `x % 7 != 3` are those a plain scan finds.
#[test]
fn count_failing_counts_what_its_closure_rejects() {
    let pass = |x: u16| x % 7 != 3;
    for offset in 0..8 {
        for n in [0usize, 1, 5, 8, 9, 40, 131] {
            let mut buffer = Aligned::<u16>::new(offset + n);
            for (i, x) in buffer.as_mut_slice().iter_mut().enumerate() {
                *x = mix(i as u64) as u16;
            }
            let input = &buffer.as_slice()[offset..];
            let failing: Vec<usize> = (0..n).filter(|&i| !pass(input[i])).collect();
            let expected = [failing.len() as u64, failing.first().map_or(u64::MAX, |&i| i as u64)];
            for lanes in LANE_COUNTS {
                let mut result = [0u64, u64::MAX];
                // SAFETY: `input` holds `n` aligned elements and `result` 2.
                launch(lanes, |lane| unsafe {
                    count_failing(lane, input.as_ptr(), n as u64, result.as_mut_ptr(), pass)
                });
                assert_eq!(result, expected, "offset {offset}, n {n}, {lanes} lanes");
            }
        }
    }
}

/// `stream_count_with` with a closure that is no primitive of the table, on every
/// length, lane count and start of both buffers (0 to 7 elements from a 16-byte
/// boundary, so quad-aligned and not): every element gets its own result, nothing
/// around the output is written, and the count and first index of the failing
/// elements are those a plain scan finds.
#[test]
fn stream_count_with_stores_every_result_and_counts_what_fails() {
    const GUARD: u32 = 0xDEAD_BEEF;
    let f = |x: u16| (u32::from(x).wrapping_mul(0x9E37_79B9) | 1, x % 7 != 3);
    for n in LENGTHS {
        for (input_offset, output_offset) in (0..64).map(|k| (k / 8, k % 8)) {
            let mut source = Aligned::<u16>::new(input_offset + n);
            for (i, x) in source.as_mut_slice().iter_mut().enumerate() {
                *x = mix(i as u64 ^ 0x5C) as u16;
            }
            let input = &source.as_slice()[input_offset..];
            let failing: Vec<usize> = (0..n).filter(|&i| !f(input[i]).1).collect();
            let expected_result = [failing.len() as u64, failing.first().map_or(u64::MAX, |&i| i as u64)];
            for lanes in LANE_COUNTS {
                let mut output = Aligned::<u32>::new(output_offset + n + 4);
                output.as_mut_slice().fill(GUARD);
                let mut result = [0u64, u64::MAX];
                let out = output.as_mut_slice()[output_offset..].as_mut_ptr();
                // SAFETY: `input` and `out` hold `n` elements each, aligned for their
                // types, and `result` 2.
                launch(lanes, |lane| unsafe {
                    stream_count_with(lane, input.as_ptr(), out, n as u64, result.as_mut_ptr(), f)
                });
                let context = format!("n {n}, offsets {input_offset}/{output_offset}, {lanes} lanes");
                let written = output.as_slice();
                assert!(written[..output_offset].iter().all(|&w| w == GUARD), "written before the output: {context}");
                assert!(written[output_offset + n..].iter().all(|&w| w == GUARD), "written past the output: {context}");
                for (i, &x) in input[..n].iter().enumerate() {
                    assert_eq!(written[output_offset + i], f(x).0, "element {i}: {context}");
                }
                assert_eq!(result, expected_result, "{context}");
            }
        }
    }
}
