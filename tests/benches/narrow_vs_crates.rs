//! `shared`'s f32 ↔ binary16 / bfloat16 / FP8 conversions next to the `half` and
//! `float8` crates on the CPU, in one run: time per element (one thread, best of N
//! passes) and the outputs compared bit for bit
//! (`cargo bench -p conformance --bench narrow_vs_crates`).
//!
//! Options: `--mi N` (elements per buffer in Mi, default 16), `--reps N` (best of,
//! default 5), `--format json` (JSON on stdout instead of the table), `--dump DIR` (write
//! the input buffers and our exact outputs there as raw little-endian `.bin` files, and
//! the JSON as `narrow_vs_crates.json`, for
//! `scripts/bench-cpu.sh` to time NumPy and ml_dtypes on the same inputs and count their
//! differences), `--only TEXT` (only the conversions whose name starts with it, such as
//! `binary16 → f32` or `bfloat16`: the crates' rows and ours, for quicker reruns).
//!
//! Then the slice conversions the product runs (`bitexact::cpu::convert`): every form
//! (scalar, vectorised software, the CPU's instruction) at every CPU level this machine
//! has, ns/element on one thread, each output compared with the scalar form's, which
//! form `CpuConversion::run_at` runs for which level (`picked at`: a wider level may run
//! a narrower level's loop), and each next to the fastest crate of the same run. Run without
//! `--bench` (as `cargo test --benches` does) it is a smoke run: 4096 elements, one pass.
//!
//! Narrowings run on one buffer of f32 bit patterns drawn uniformly over all 2^32 with a
//! fixed seed; the outputs of the timed passes are compared. Widenings are timed on a
//! buffer of random encodings and compared on every encoding (2^16 or 2^8). A difference
//! is explained when the input is NaN and both outputs are NaNs (another NaN encoding),
//! or, for FP8 in `Overflow::Standard` mode, when the input overflows (ours gives what
//! it gives for ±inf, `float8` saturates to what our `SatFinite` gives, as
//! `tests/tests/narrow.rs` proves on every f32). Any other difference is unexplained and
//! makes the run exit 1.

use bitexact::cpu::Level;
use bitexact::cpu::convert::{self, ConversionForm, CpuConversion};
use rayon::prelude::*;
use shared::narrow::Overflow;
use shared::{bfloat16, binary16, fp8};
use std::hint::black_box;
use std::time::Instant;

struct Options {
    elements: usize,
    reps: usize,
    json: bool,
    /// `--dump DIR`: write the inputs and the exact outputs there.
    dump: Option<String>,
    /// `--only TEXT`: only the conversions whose name starts with it.
    only: Option<String>,
}

impl Options {
    /// Whether the conversion named `label` runs (`--only`).
    fn runs(&self, label: &str) -> bool {
        self.only.as_ref().is_none_or(|only| label.starts_with(only.as_str()))
    }
}

fn options() -> Result<Options, String> {
    let mut options = Options { elements: 16 << 20, reps: 5, json: false, dump: None, only: None };
    let mut bench = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut number = |name: &str| {
            args.next()
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|&n| n > 0)
                .ok_or(format!("{name} takes a number > 0"))
        };
        match arg.as_str() {
            "--mi" => options.elements = number("--mi")? << 20,
            "--reps" => options.reps = number("--reps")?,
            "--format" => match args.next().as_deref() {
                Some("json") => options.json = true,
                Some("table") => options.json = false,
                _ => return Err("--format takes table or json".into()),
            },
            "--dump" => options.dump = Some(args.next().ok_or("--dump takes a directory")?),
            "--only" => options.only = Some(args.next().ok_or("--only takes a conversion's name")?),
            "--bench" => bench = true,
            _ => {} // what cargo or libtest pass
        }
    }
    if !bench {
        options.elements = 4096;
        options.reps = 1;
    }
    Ok(options)
}

/// `n` pseudo-random words (xorshift64, fixed seed).
fn random_words(n: usize) -> Vec<u64> {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        })
        .collect()
}

/// Time per element, in ns, of one pass of `f` over `input` into `out`.
fn time<I: Copy, O>(input: &[I], out: &mut [O], f: impl Fn(I) -> O) -> f64 {
    let start = Instant::now();
    for (o, &x) in out.iter_mut().zip(black_box(input)) {
        *o = f(x);
    }
    black_box(&mut *out);
    start.elapsed().as_secs_f64() * 1e9 / input.len() as f64
}

/// Why two outputs for one input differ.
#[derive(Clone, Copy, PartialEq)]
enum Why {
    /// NaN in, a NaN out on both sides, other bits.
    NanEncoding,
    /// Overflow in OCP's non-saturating mode: `float8` saturates.
    Saturates,
    Unexplained,
}

#[derive(Default)]
struct Counts {
    compared: usize,
    nan_encoding: usize,
    saturates: usize,
    unexplained: usize,
    example: Option<String>,
}

fn count<I: Copy + std::fmt::LowerHex, O: Copy + PartialEq + std::fmt::LowerHex>(
    inputs: impl Iterator<Item = (I, O, O)>,
    why: impl Fn(I, O, O) -> Why,
) -> Counts {
    let mut counts = Counts::default();
    for (x, ours, theirs) in inputs {
        counts.compared += 1;
        if ours == theirs {
            continue;
        }
        match why(x, ours, theirs) {
            Why::NanEncoding => counts.nan_encoding += 1,
            Why::Saturates => counts.saturates += 1,
            Why::Unexplained => {
                counts.unexplained += 1;
                counts.example.get_or_insert_with(|| format!("input {x:#x}: ours {ours:#x}, theirs {theirs:#x}"));
            }
        }
    }
    counts
}

struct Row {
    conversion: &'static str,
    theirs: &'static str,
    ours_ns: f64,
    theirs_ns: f64,
    counts: Counts,
}

/// Times `ours` and `theirs` on `input` (the same number of passes, interleaved so that
/// a slow moment of the machine hits both) and compares the outputs of the timed passes.
fn narrowing<O: Copy + Default + PartialEq + std::fmt::LowerHex>(
    options: &Options,
    (conversion, theirs_name): (&'static str, &'static str),
    input: &[u32],
    ours: impl Fn(u32) -> O,
    theirs: impl Fn(u32) -> O,
    why: impl Fn(u32, O, O) -> Why,
) -> Option<Row> {
    if !options.runs(conversion) {
        return None;
    }
    let (mut a, mut b) = (vec![O::default(); input.len()], vec![O::default(); input.len()]);
    let (mut ours_ns, mut theirs_ns) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..options.reps {
        ours_ns = ours_ns.min(time(input, &mut a, &ours));
        theirs_ns = theirs_ns.min(time(input, &mut b, &theirs));
    }
    let counts = count(input.iter().zip(&a).zip(&b).map(|((&x, &a), &b)| (x, a, b)), why);
    Some(Row { conversion, theirs: theirs_name, ours_ns, theirs_ns, counts })
}

/// Times the widenings on `input` (random encodings) and compares them on every encoding
/// in `every`.
fn widening<I: Copy + std::fmt::LowerHex>(
    options: &Options,
    (conversion, theirs_name): (&'static str, &'static str),
    input: &[I],
    every: impl Iterator<Item = I>,
    ours: impl Fn(I) -> u32,
    theirs: impl Fn(I) -> u32,
    is_nan: impl Fn(I) -> bool,
) -> Option<Row> {
    if !options.runs(conversion) {
        return None;
    }
    let mut out = vec![0u32; input.len()];
    let (mut ours_ns, mut theirs_ns) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..options.reps {
        ours_ns = ours_ns.min(time(input, &mut out, &ours));
        theirs_ns = theirs_ns.min(time(input, &mut out, &theirs));
    }
    let counts = count(every.map(|x| (x, ours(x), theirs(x))), |x, a, b| {
        if is_nan(x) && f32::from_bits(a).is_nan() && f32::from_bits(b).is_nan() {
            Why::NanEncoding
        } else {
            Why::Unexplained
        }
    });
    Some(Row { conversion, theirs: theirs_name, ours_ns, theirs_ns, counts })
}

/// binary16 both ways against half's slice conversions (`convert_from_f32_slice`,
/// `convert_to_f32_slice`: eight at a time with F16C where half uses it), with the rules
/// of [`narrowing`] and [`widening`] (a direction `--only` leaves out is not timed, and
/// its row is dropped by the caller).
fn half_slices(options: &Options, f32s: &[u32], u16s: &[u16]) -> [Row; 2] {
    use half::slice::HalfFloatSliceExt;
    let per_element = |start: Instant| start.elapsed().as_secs_f64() * 1e9 / f32s.len() as f64;
    let floats: Vec<f32> = f32s.iter().map(|&x| f32::from_bits(x)).collect();
    let halves: Vec<half::f16> = u16s.iter().map(|&b| half::f16::from_bits(b)).collect();
    let (mut narrow, mut f16s) = (vec![0u16; f32s.len()], vec![half::f16::ZERO; f32s.len()]);
    let (mut wide, mut wide_floats) = (vec![0u32; f32s.len()], vec![0f32; f32s.len()]);
    let mut ns = [f64::INFINITY; 4];
    let (narrowing, widening) = (options.runs("f32 → binary16"), options.runs("binary16 → f32"));
    for _ in 0..options.reps {
        if narrowing {
            ns[0] = ns[0].min(time(f32s, &mut narrow, binary16::from_f32_bits));
            let start = Instant::now();
            f16s.convert_from_f32_slice(black_box(&floats));
            black_box(&mut f16s);
            ns[1] = ns[1].min(per_element(start));
        }
        if widening {
            ns[2] = ns[2].min(time(u16s, &mut wide, binary16::to_f32_bits));
            let start = Instant::now();
            black_box(&halves[..]).convert_to_f32_slice(&mut wide_floats);
            black_box(&mut wide_floats);
            ns[3] = ns[3].min(per_element(start));
        }
    }
    let nan16 = |v: u16| v & 0x7FFF > 0x7C00;
    let narrowed = count(f32s.iter().zip(&narrow).zip(&f16s).map(|((&x, &a), b)| (x, a, b.to_bits())), |x, a, b| {
        if is_nan_f32(x) && nan16(a) && nan16(b) { Why::NanEncoding } else { Why::Unexplained }
    });
    // Widening: every encoding, as in `widening`.
    let every: Vec<half::f16> = (0..=u16::MAX).map(half::f16::from_bits).collect();
    let mut every_wide = vec![0f32; every.len()];
    every.convert_to_f32_slice(&mut every_wide);
    let widened = count(
        (0..=u16::MAX).map(|b| (b, binary16::to_f32_bits(b), every_wide[usize::from(b)].to_bits())),
        |b, a, c| {
            if nan16(b) && is_nan_f32(a) && is_nan_f32(c) { Why::NanEncoding } else { Why::Unexplained }
        },
    );
    [
        Row {
            conversion: "f32 → binary16",
            theirs: "half convert_from_f32_slice",
            ours_ns: ns[0],
            theirs_ns: ns[1],
            counts: narrowed,
        },
        Row {
            conversion: "binary16 → f32",
            theirs: "half convert_to_f32_slice",
            ours_ns: ns[2],
            theirs_ns: ns[3],
            counts: widened,
        },
    ]
}

use bitexact::support::best_of_pair;

/// One conversion of `bitexact::cpu::convert` over slices at one level in one form.
struct SliceRow {
    label: &'static str,
    level: Level,
    form: ConversionForm,
    /// The levels at which `CpuConversion::run_at` runs this form of this level's loop
    /// (its own level, and a wider one whose loop does not pay for the conversion).
    picked_at: Vec<Level>,
    ns: f64,
    /// Outputs that differ from the scalar form's (must be 0 for an exact path).
    differs: usize,
    /// For the exact path at the best level: seconds on all cores, and memcpy's of the
    /// bytes touched (the wider of input and output) on all cores.
    all_cores: Option<(f64, f64)>,
}

/// Times every form of `conversion` at every level this machine has over `input`
/// (ns/element, one thread, best of `reps`), and compares each form's outputs with the
/// scalar form's. With `dump`, writes the exact outputs (the scalar form's) to
/// `dump/<name>.bin` for `scripts/bench-cpu.sh`'s NumPy and ml_dtypes comparison.
fn slice_rows<I: bytemuck::Pod + Sync, O: bytemuck::Pod + PartialEq + Send>(
    options: &Options,
    label: &'static str,
    conversion: &CpuConversion<I, O>,
    input: &[I],
) -> Vec<SliceRow> {
    if !options.runs(label) {
        return Vec::new();
    }
    let mut exact = vec![O::zeroed(); input.len()];
    conversion.run_form(Level::Portable, ConversionForm::Scalar, input, &mut exact);
    if let Some(dir) = &options.dump {
        std::fs::write(format!("{dir}/{}.bin", conversion.name), bytemuck::cast_slice(&exact)).expect("write --dump");
    }
    let mut out = vec![O::zeroed(); input.len()];
    let mut rows = Vec::new();
    for level in Level::ALL.into_iter().filter(|level| level.check("").is_ok()) {
        for form in ConversionForm::ALL {
            let mut ns = f64::INFINITY;
            for _ in 0..options.reps {
                let start = Instant::now();
                if !conversion.run_form(level, form, black_box(input), &mut out) {
                    break;
                }
                black_box(&mut out);
                ns = ns.min(start.elapsed().as_secs_f64() * 1e9 / input.len() as f64);
            }
            if ns.is_finite() {
                let differs = out.iter().zip(&exact).filter(|(a, b)| a != b).count();
                let picked_at: Vec<Level> = Level::ALL
                    .into_iter()
                    .filter(|&at| conversion.loop_level(at) == level && conversion.exact_form(level) == form)
                    .filter(|at| at.check("").is_ok())
                    .collect();
                let all_cores = picked_at.contains(&Level::detect()).then(|| {
                    let block = 1 << 16;
                    let bytes = input.len() * size_of::<I>().max(size_of::<O>());
                    let (src, mut dst) = (vec![1u8; bytes], vec![0u8; bytes]);
                    // In turn, so that both see the same moments of a drifting machine.
                    let (all, memcpy) = best_of_pair(
                        options.reps,
                        || {
                            out.par_chunks_mut(block)
                                .zip(input.par_chunks(block))
                                .for_each(|(d, s)| conversion.run_at(Level::detect(), black_box(s), d));
                        },
                        || {
                            dst.par_chunks_mut(block * 4)
                                .zip(src.par_chunks(block * 4))
                                .for_each(|(d, s)| d.copy_from_slice(black_box(s)));
                        },
                    );
                    (all, memcpy)
                });
                rows.push(SliceRow { label, level, form, picked_at, ns, differs, all_cores });
            }
        }
    }
    rows
}

/// One conversion timed in turn with `half`'s slice conversion: ours at every level this
/// CPU has (`CpuConversion::run_at`, what the commands run) and half's, each pass of the
/// same repetition one after the other, so that a drift of this shared machine moves both.
struct InTurn {
    label: &'static str,
    /// (level, ns per element), every level this CPU has.
    ours: Vec<(Level, f64)>,
    /// The level whose loop each level of `ours` runs (`CpuConversion::loop_level`).
    loops: Vec<Level>,
    half_ns: f64,
}

impl InTurn {
    /// The time at the level the commands pick here ([`Level::detect`]).
    fn picked_ns(&self) -> f64 {
        self.ours.iter().find(|(level, _)| *level == Level::detect()).map_or(f64::NAN, |&(_, ns)| ns)
    }

    /// Whether the picked level is slower than a lower level this CPU has, by more than
    /// `tolerance` (a ratio: 1.03 allows 3%). A lower level that runs the same loop
    /// (`loop_level`) is the same code: a difference to it is the machine's noise.
    fn picked_is_slower_than_a_lower_level(&self, tolerance: f64) -> bool {
        let picked = self.picked_ns();
        let picked_loop = self.ours.iter().zip(&self.loops).find(|((level, _), _)| *level == Level::detect());
        let picked_loop = picked_loop.map(|(_, &l)| l);
        self.ours
            .iter()
            .zip(&self.loops)
            .any(|(&(level, ns), &l)| level < Level::detect() && Some(l) != picked_loop && picked > ns * tolerance)
    }
}

/// [`InTurn`] for `conversion` over `input` against `theirs`, half's slice conversion
/// of the same values (`their_input`, in half's types) into `their_out`, best of `reps`
/// each.
fn in_turn<I: bytemuck::Pod, O: bytemuck::Pod, HI, HO>(
    options: &Options,
    (label, conversion): (&'static str, &CpuConversion<I, O>),
    input: &[I],
    (their_input, their_out): (&[HI], &mut [HO]),
    theirs: impl Fn(&[HI], &mut [HO]),
) -> Option<InTurn> {
    if !options.runs(label) {
        return None;
    }
    let levels: Vec<Level> = Level::ALL.into_iter().filter(|level| level.check("").is_ok()).collect();
    // Both outputs written once before timing, so that no pass pays for first-touch faults.
    let mut ours_out = vec![O::zeroed(); input.len()];
    conversion.run(input, &mut ours_out);
    theirs(their_input, their_out);
    let mut ours = vec![f64::INFINITY; levels.len()];
    let mut half_ns = f64::INFINITY;
    let per_element = |start: Instant| start.elapsed().as_secs_f64() * 1e9 / input.len() as f64;
    for _ in 0..options.reps {
        for (ns, &level) in ours.iter_mut().zip(&levels) {
            let start = Instant::now();
            conversion.run_at(level, black_box(input), &mut ours_out);
            black_box(&mut ours_out);
            *ns = ns.min(per_element(start));
        }
        let start = Instant::now();
        theirs(black_box(their_input), their_out);
        black_box(&mut *their_out);
        half_ns = half_ns.min(per_element(start));
    }
    let loops = levels.iter().map(|&level| conversion.loop_level(level)).collect();
    Some(InTurn { label, ours: levels.into_iter().zip(ours).collect(), loops, half_ns })
}

fn is_nan_f32(x: u32) -> bool {
    x & 0x7FFF_FFFF > 0x7F80_0000
}

fn main() {
    let options = match options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("narrow_vs_crates: {message}");
            std::process::exit(2);
        }
    };
    let n = options.elements;
    let words = random_words(n);
    let f32s: Vec<u32> = words.iter().map(|&w| (w >> 32) as u32).collect();
    let u16s: Vec<u16> = words.iter().map(|&w| w as u16).collect();
    let u8s: Vec<u8> = words.iter().map(|&w| (w >> 16) as u8).collect();
    drop(words);

    let f16 = |x: u32| half::f16::from_f32(f32::from_bits(x)).to_bits();
    let bf16 = |x: u32| half::bf16::from_f32(f32::from_bits(x)).to_bits();
    let nan_encoding16 = |max_non_nan: u16| {
        move |x: u32, a: u16, b: u16| {
            let nan = |v: u16| v & 0x7FFF > max_non_nan;
            if is_nan_f32(x) && nan(a) && nan(b) { Why::NanEncoding } else { Why::Unexplained }
        }
    };
    // FP8: NaN out on both sides for a NaN in, or (Standard mode) an overflow that float8
    // saturates: ours is what ±inf gives, theirs what our SatFinite mode gives.
    let fp8_why = |ours: fn(u32, Overflow) -> u8, is_nan: fn(u8) -> bool, overflow: Overflow| {
        move |x: u32, a: u8, b: u8| {
            if is_nan_f32(x) {
                if is_nan(a) && is_nan(b) { Why::NanEncoding } else { Why::Unexplained }
            } else if overflow == Overflow::Standard
                && a == ours((x & 0x8000_0000) | 0x7F80_0000, Overflow::Standard)
                && b == ours(x, Overflow::SatFinite)
            {
                Why::Saturates
            } else {
                Why::Unexplained
            }
        }
    };
    let e4m3 = |x: u32| float8::F8E4M3::from_f32(f32::from_bits(x)).to_bits();
    let e5m2 = |x: u32| float8::F8E5M2::from_f32(f32::from_bits(x)).to_bits();

    let mut rows: Vec<Row> = [
        narrowing(
            &options,
            ("f32 → binary16", "half f16::from_f32"),
            &f32s,
            binary16::from_f32_bits,
            f16,
            nan_encoding16(0x7C00),
        ),
        narrowing(
            &options,
            ("f32 → binary16 branch-free", "half f16::from_f32"),
            &f32s,
            binary16::from_f32_bits_branch_free,
            f16,
            nan_encoding16(0x7C00),
        ),
        narrowing(
            &options,
            ("f32 → bfloat16", "half bf16::from_f32"),
            &f32s,
            bfloat16::from_f32_bits,
            bf16,
            nan_encoding16(0x7F80),
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    for (name, overflow) in [("f32 → E4M3 satfinite", Overflow::SatFinite), ("f32 → E4M3 standard", Overflow::Standard)]
    {
        let why = fp8_why(fp8::e4m3::from_f32_bits, fp8::e4m3::is_nan, overflow);
        let ours = |x| fp8::e4m3::from_f32_bits(x, overflow);
        rows.extend(narrowing(&options, (name, "float8 F8E4M3::from_f32"), &f32s, ours, e4m3, why));
    }
    {
        let why = fp8_why(fp8::e4m3::from_f32_bits, fp8::e4m3::is_nan, Overflow::SatFinite);
        let (name, theirs) = ("f32 → E4M3 satfinite branch-free", "float8 F8E4M3::from_f32");
        rows.extend(narrowing(
            &options,
            (name, theirs),
            &f32s,
            fp8::e4m3::from_f32_bits_satfinite_branch_free,
            e4m3,
            why,
        ));
    }
    for (name, overflow) in [("f32 → E5M2 satfinite", Overflow::SatFinite), ("f32 → E5M2 standard", Overflow::Standard)]
    {
        let why = fp8_why(fp8::e5m2::from_f32_bits, fp8::e5m2::is_nan, overflow);
        let ours = |x| fp8::e5m2::from_f32_bits(x, overflow);
        rows.extend(narrowing(&options, (name, "float8 F8E5M2::from_f32"), &f32s, ours, e5m2, why));
    }
    {
        let why = fp8_why(fp8::e5m2::from_f32_bits, fp8::e5m2::is_nan, Overflow::SatFinite);
        let (name, theirs) = ("f32 → E5M2 satfinite branch-free", "float8 F8E5M2::from_f32");
        rows.extend(narrowing(
            &options,
            (name, theirs),
            &f32s,
            fp8::e5m2::from_f32_bits_satfinite_branch_free,
            e5m2,
            why,
        ));
    }
    rows.extend(widening(
        &options,
        ("binary16 → f32", "half f16::to_f32"),
        &u16s,
        0..=u16::MAX,
        binary16::to_f32_bits,
        |b| half::f16::from_bits(b).to_f32().to_bits(),
        |b| b & 0x7FFF > 0x7C00,
    ));
    rows.extend(widening(
        &options,
        ("binary16 → f32 scaled", "half f16::to_f32"),
        &u16s,
        0..=u16::MAX,
        binary16::to_f32_bits_scaled,
        |b| half::f16::from_bits(b).to_f32().to_bits(),
        |b| b & 0x7FFF > 0x7C00,
    ));
    rows.extend(widening(
        &options,
        ("bfloat16 → f32", "half bf16::to_f32"),
        &u16s,
        0..=u16::MAX,
        bfloat16::to_f32_bits,
        |b| half::bf16::from_bits(b).to_f32().to_bits(),
        |b| b & 0x7FFF > 0x7F80,
    ));
    rows.extend(widening(
        &options,
        ("E4M3 → f32", "float8 F8E4M3::to_f32"),
        &u8s,
        0..=u8::MAX,
        fp8::e4m3::to_f32_bits,
        |b| float8::F8E4M3::from_bits(b).to_f32().to_bits(),
        fp8::e4m3::is_nan,
    ));
    rows.extend(widening(
        &options,
        ("E4M3 → f32 scaled", "float8 F8E4M3::to_f32"),
        &u8s,
        0..=u8::MAX,
        fp8::e4m3::to_f32_bits_scaled,
        |b| float8::F8E4M3::from_bits(b).to_f32().to_bits(),
        fp8::e4m3::is_nan,
    ));
    rows.extend(widening(
        &options,
        ("E5M2 → f32", "float8 F8E5M2::to_f32"),
        &u8s,
        0..=u8::MAX,
        fp8::e5m2::to_f32_bits,
        |b| float8::F8E5M2::from_bits(b).to_f32().to_bits(),
        fp8::e5m2::is_nan,
    ));
    rows.extend(half_slices(&options, &f32s, &u16s).into_iter().filter(|r| options.runs(r.conversion)));

    if let Some(dir) = &options.dump {
        std::fs::create_dir_all(dir).expect("--dump directory");
        for (name, bytes) in [
            ("f32_inputs", bytemuck::cast_slice::<u32, u8>(&f32s)),
            ("u16_inputs", bytemuck::cast_slice(&u16s)),
            ("u8_inputs", &u8s[..]),
        ] {
            std::fs::write(format!("{dir}/{name}.bin"), bytes).expect("write --dump");
        }
    }
    let mut slices = Vec::new();
    slices.extend(slice_rows(&options, "f32 → binary16", &convert::F32_TO_F16, &f32s));
    slices.extend(slice_rows(&options, "f32 → bfloat16", &convert::F32_TO_BF16, &f32s));
    slices.extend(slice_rows(&options, "f32 → E4M3 standard", &convert::F32_TO_E4M3, &f32s));
    slices.extend(slice_rows(&options, "f32 → E4M3 satfinite", &convert::F32_TO_E4M3_SATFINITE, &f32s));
    slices.extend(slice_rows(&options, "f32 → E5M2 standard", &convert::F32_TO_E5M2, &f32s));
    slices.extend(slice_rows(&options, "f32 → E5M2 satfinite", &convert::F32_TO_E5M2_SATFINITE, &f32s));
    slices.extend(slice_rows(&options, "binary16 → f32", &convert::F16_TO_F32, &u16s));
    slices.extend(slice_rows(&options, "bfloat16 → f32", &convert::BF16_TO_F32, &u16s));
    slices.extend(slice_rows(&options, "E4M3 → f32", &convert::E4M3_TO_F32, &u8s));
    slices.extend(slice_rows(&options, "E5M2 → f32", &convert::E5M2_TO_F32, &u8s));
    use half::slice::HalfFloatSliceExt;
    let turns: Vec<InTurn> = {
        let floats: Vec<f32> = f32s.iter().map(|&x| f32::from_bits(x)).collect();
        let f16s: Vec<half::f16> = u16s.iter().map(|&b| half::f16::from_bits(b)).collect();
        let bf16s: Vec<half::bf16> = u16s.iter().map(|&b| half::bf16::from_bits(b)).collect();
        let mut wide = vec![0f32; n];
        let mut narrow16 = vec![half::f16::ZERO; n];
        let mut narrow_bf16 = vec![half::bf16::ZERO; n];
        [
            in_turn(&options, ("binary16 → f32", &convert::F16_TO_F32), &u16s, (&f16s, &mut wide), |s, d| {
                s.convert_to_f32_slice(d)
            }),
            in_turn(&options, ("bfloat16 → f32", &convert::BF16_TO_F32), &u16s, (&bf16s, &mut wide), |s, d| {
                s.convert_to_f32_slice(d)
            }),
            in_turn(&options, ("f32 → binary16", &convert::F32_TO_F16), &f32s, (&floats, &mut narrow16), |s, d| {
                d.convert_from_f32_slice(s)
            }),
            in_turn(
                &options,
                ("f32 → bfloat16", &convert::F32_TO_BF16),
                &f32s,
                (&floats, &mut narrow_bf16),
                |s, d| d.convert_from_f32_slice(s),
            ),
        ]
        .into_iter()
        .flatten()
        .collect()
    };
    let fastest_crate = |label: &str| {
        rows.iter()
            .filter(|r| r.conversion.starts_with(label))
            .map(|r| (r.theirs_ns, r.theirs))
            .fold((f64::INFINITY, ""), |a, b| if b.0 < a.0 { b } else { a })
    };

    // half's own F16C path: compiled in with `-C target-feature=+f16c`, else detected at
    // run time on each call (half's `std` feature, on by default).
    let f16c = if cfg!(target_feature = "f16c") {
        "F16C, compiled in"
    } else if std::arch::is_x86_feature_detected!("f16c") {
        "F16C, detected at run time on each call"
    } else {
        "software (no F16C on this CPU)"
    };

    {
        let rows: Vec<_> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "conversion": r.conversion, "theirs": r.theirs,
                    "ours_ns_per_element": r.ours_ns, "theirs_ns_per_element": r.theirs_ns,
                    "ours_over_theirs": r.ours_ns / r.theirs_ns,
                    "compared": r.counts.compared, "nan_encoding_differs": r.counts.nan_encoding,
                    "float8_saturates": r.counts.saturates, "unexplained": r.counts.unexplained,
                })
            })
            .collect();
        let slices: Vec<_> = slices
            .iter()
            .map(|r| {
                let (crate_ns, crate_name) = fastest_crate(r.label);
                serde_json::json!({
                    "conversion": r.label, "level": r.level, "form": r.form, "picked_at": r.picked_at,
                    "ns_per_element": r.ns, "differs_from_scalar": r.differs,
                    "all_cores_s": r.all_cores.map(|a| a.0), "memcpy_all_cores_s": r.all_cores.map(|a| a.1),
                    "fastest_crate": crate_name, "fastest_crate_ns_per_element": crate_ns,
                })
            })
            .collect();
        let turns: Vec<_> = turns
            .iter()
            .map(|t| {
                let ours: serde_json::Map<String, serde_json::Value> =
                    t.ours.iter().map(|(level, ns)| (level.name().to_string(), (*ns).into())).collect();
                serde_json::json!({
                    "conversion": t.label, "ours_ns_per_element_by_level": ours, "picked": Level::detect(),
                    "half_slice_ns_per_element": t.half_ns, "picked_over_half": t.picked_ns() / t.half_ns,
                    "picked_slower_than_a_lower_level": t.picked_is_slower_than_a_lower_level(1.03),
                })
            })
            .collect();
        let json = serde_json::json!({
            "elements": n, "reps": options.reps, "threads": 1, "half_f16_path": f16c, "rows": rows,
            "cpu_level": bitexact::cpu::level(), "slices": slices, "in_turn_with_half": turns,
        });
        if let Some(dir) = &options.dump {
            std::fs::write(format!("{dir}/narrow_vs_crates.json"), json.to_string()).expect("write --dump");
        }
        if options.json {
            println!("{json}");
        }
    }
    if !options.json {
        let smoke = if n < 1 << 20 { " (smoke run: the times mean nothing)" } else { "" };
        println!("narrow_vs_crates: {n} elements per buffer, best of {}, one thread{smoke}", options.reps);
        println!("half f16 conversions: {f16c}; half bf16 and float8: software");
        println!(
            "{:<33} {:>8} {:<28} {:>9} {:>11} {:>9} {:>11}  differences explained",
            "conversion", "ours ns", "theirs", "theirs ns", "ours/theirs", "compared", "unexplained"
        );
        for r in &rows {
            let c = &r.counts;
            let mut why = Vec::new();
            if c.nan_encoding > 0 {
                why.push(format!("{} NaN in: both NaN, other bits", c.nan_encoding));
            }
            if c.saturates > 0 {
                why.push(format!("{} overflowing: float8 saturates", c.saturates));
            }
            println!(
                "{:<33} {:>8.3} {:<28} {:>9.3} {:>11.2} {:>9} {:>11}  {}",
                r.conversion,
                r.ours_ns,
                r.theirs,
                r.theirs_ns,
                r.ours_ns / r.theirs_ns,
                c.compared,
                c.unexplained,
                if why.is_empty() { "none".into() } else { why.join("; ") },
            );
        }
        println!(
            "ns: per element. ours/theirs: time ratio (below 1: ours faster). Narrowings compared on the timed \
             buffer, widenings on every encoding."
        );
        println!();
        println!("bitexact::cpu::convert over slices, one thread; best level here: {}", Level::detect());
        println!(
            "{:<22} {:<9} {:<12} {:<14} {:>8} {:>8}  {:<30} {:>9} {:>11} {:>16}",
            "conversion",
            "level",
            "form",
            "picked at",
            "ns",
            "differs",
            "fastest crate",
            "crate ns",
            "ours/crate",
            "all cores/memcpy"
        );
        for r in &slices {
            let (crate_ns, crate_name) = fastest_crate(r.label);
            let picked: Vec<&str> = r.picked_at.iter().map(|level| level.name()).collect();
            let form = format!("{}{}", r.form.name(), if picked.is_empty() { "" } else { "*" });
            let vs_memcpy = r.all_cores.map_or(String::new(), |(all, memcpy)| format!("{:.2}x", memcpy / all));
            println!(
                "{:<22} {:<9} {:<12} {:<14} {:>8.3} {:>8}  {:<30} {:>9.3} {:>11.2} {:>16}",
                r.label,
                r.level.name(),
                form,
                picked.join(","),
                r.ns,
                r.differs,
                crate_name,
                crate_ns,
                r.ns / crate_ns,
                vs_memcpy
            );
        }
        println!(
            "*: a form bitexact::cpu::convert runs for exact results; picked at: the levels at which it runs that \
             level's loop in that form (a wider level runs a narrower loop where it is not slower). differs: outputs unlike the scalar \
             form's (an instruction not used for exact results may differ: see host/wings/cpu/src/tests/cpu_levels.rs). all \
             cores/memcpy: what the best level runs, on all cores, against memcpy of the wider side's bytes."
        );
        println!();
        println!(
            "In turn with half's slice conversions (each repetition times ours at every level, then half's), one thread:"
        );
        let levels: Vec<Level> = Level::ALL.into_iter().filter(|level| level.check("").is_ok()).collect();
        let heads: Vec<String> = levels.iter().map(|level| format!("ours {}", level.name())).collect();
        println!(
            "{:<16} {} {:>10} {:>14} {:>12}  picked ({}) slower than a lower level",
            "conversion",
            heads.iter().map(|h| format!("{h:>13}")).collect::<String>(),
            "half ns",
            "picked/half",
            "best/half",
            Level::detect().name()
        );
        for t in &turns {
            let best = t.ours.iter().map(|&(_, ns)| ns).fold(f64::INFINITY, f64::min);
            println!(
                "{:<16} {} {:>10.3} {:>14.2} {:>12.2}  {}",
                t.label,
                t.ours.iter().map(|(_, ns)| format!("{ns:>13.3}")).collect::<String>(),
                t.half_ns,
                t.picked_ns() / t.half_ns,
                best / t.half_ns,
                if t.picked_is_slower_than_a_lower_level(1.03) { "YES (by more than 3%)" } else { "no" }
            );
        }
    }
    let unexplained: Vec<_> = rows
        .iter()
        .filter_map(|r| r.counts.example.as_ref().map(|e| format!("{} vs {}: {e}", r.conversion, r.theirs)))
        .collect();
    if !unexplained.is_empty() {
        eprintln!("narrow_vs_crates: unexplained differences: {}", unexplained.join("; "));
        std::process::exit(1);
    }
}
