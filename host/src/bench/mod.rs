//! GPU benchmarks: bandwidth of the throughput kernels against a device-to-device copy
//! that moves the same bytes in the same run, and per-variant latency and throughput.
//!
//! Per-variant figures are checked before they are reported ([`check_figures`]): a
//! latency under one cycle per step, more applications per SM per cycle than an SM can
//! issue instructions, or a figure that is not a finite positive number is physically
//! impossible, so the row reads `invalid: <reason>` instead. A variant whose function is
//! proven constant on the CPU ([`is_constant`]) is not timed at all.
//!
//! The CUDA C++ baseline gets rows of its own ([`cxx`]): each C++ form's `Map` kernel
//! beside its Rust variant's, same input, same run.
//!
//! Owns: what `bitexact bench` measures and when a figure is physically possible.
//! Uses: [`crate::support`], [`crate::gpu`] (launches), [`crate::verify`] (the table,
//! domains) and [`crate::cuda_tools`] (the C++ baseline's forms and PTX).

pub mod cxx;

use crate::gpu::{DeviceInfo, Gpu, GpuError};
use crate::verify::table::{VARIANTS, Variant};
use cudarc::driver::LaunchConfig;
use shared::{Claim, Family, Format, KernelKind, KernelName};
use std::collections::HashMap;
use std::fmt;

/// What to run.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// Input bytes of each throughput kernel (at least 1 GiB for the published figures).
    pub bytes: usize,
    /// Timed repetitions; the median is reported.
    pub reps: usize,
    /// Untimed repetitions first.
    pub warmup: usize,
    /// Steps of the dependent chain in the latency kernels.
    pub latency_iterations: u32,
    /// Steps of each of the four chains per thread in the throughput kernels.
    pub throughput_iterations: u32,
    /// Only variants whose name contains this.
    pub only: Option<String>,
}

impl Default for BenchConfig {
    fn default() -> Self {
        BenchConfig {
            bytes: 1 << 30,
            reps: 10,
            warmup: 2,
            latency_iterations: 1 << 14,
            throughput_iterations: 1 << 12,
            only: None,
        }
    }
}

/// One bandwidth measurement.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BandwidthRow {
    /// What ran: a kernel name, or `copy` for the baseline.
    pub kernel: String,
    /// Bytes read plus bytes written per run.
    pub bytes_moved: u64,
    /// Median device time per run.
    pub median_ms: f64,
    /// `bytes_moved / median time`, in 10^9 bytes per second.
    pub gb_per_s: f64,
    /// Same-run device-to-device copy moving the same bytes.
    pub copy_gb_per_s: f64,
    /// `gb_per_s / copy_gb_per_s`, in percent.
    pub percent_of_copy: f64,
    /// What was checked about the kernel's output in this run.
    pub checked: String,
    /// For an exact conversion kernel, the same-run figure of the inexact form users
    /// run today ([`inexact_baseline`]); `None` for other kernels, and for families
    /// without such a form.
    pub inexact_baseline: Option<Baseline>,
}

/// The inexact kernel an exact conversion kernel is compared with, as measured in the
/// same run over the same input.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Baseline {
    /// Its kernel's name.
    pub kernel: String,
    /// Its median device time per run.
    pub median_ms: f64,
    /// Its GB/s (the same bytes moved).
    pub gb_per_s: f64,
    /// The exact kernel's median time over the baseline's: what exactness costs.
    pub exact_over_inexact_time: f64,
}

/// The variant whose [`KernelKind::Stream`] kernel is the inexact baseline of `exact`'s:
/// for an exact UNORM/SNORM → f32 variant with a stream kernel, the variant of the same
/// family and input width that claims [`Claim::OneUlp`] and has one (the common
/// `x * fl(1/(2^n - 1))` shortcut: `unorm8_mul_recip` for UNORM8 codes in bytes), if
/// the table has it.
pub fn inexact_baseline(exact: &Variant) -> Option<&'static Variant> {
    let conversion = matches!(exact.family, Family::UnormToF32 { .. } | Family::SnormToF32 { .. });
    if !conversion || exact.claim != Claim::Exact || !exact.has(KernelKind::Stream) {
        return None;
    }
    VARIANTS.iter().find(|b| {
        b.family == exact.family
            && b.input_bits == exact.input_bits
            && b.claim == Claim::OneUlp
            && b.has(KernelKind::Stream)
    })
}

/// Latency and throughput of one variant's per-element function, as measured.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Figures {
    /// Cycles per step of a dependent chain (one application plus the few instructions
    /// that feed its result back, see `kernels-gpu`'s `chain_step`), from the SM's cycle
    /// counter, fixed overhead removed.
    pub latency_cycles: f64,
    /// Independent applications per second over the whole device, in 10^9.
    pub throughput_gops: f64,
    /// The same per SM per cycle at the device's rated clock.
    pub ops_per_sm_per_cycle: f64,
}

/// Instructions (per lane) that one SM can issue per cycle on sm_75 ... sm_120: four
/// warp schedulers, each issuing at most one warp instruction (32 lanes) per cycle.
/// An application costs at least one instruction, so no variant can exceed this.
pub const MAX_LANE_INSTRUCTIONS_PER_SM_PER_CYCLE: f64 = 4.0 * 32.0;

/// Why figures cannot be right ([`check_figures`]). `Display` is the reason the
/// report prints after `invalid: `.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum ImpossibleFigures {
    /// A figure is NaN or infinite.
    NotFinite {
        /// Which figure: `latency`, `throughput` or `ops/SM/cycle`.
        figure: &'static str,
        /// Its value.
        value: f64,
    },
    /// Under one cycle per step of a dependent chain.
    LatencyUnderOneCycle {
        /// Cycles per step.
        cycles: f64,
    },
    /// The throughput (or the applications per SM per cycle) is zero or negative.
    ThroughputNotPositive {
        /// Applications per second, in 10^9.
        gops: f64,
    },
    /// More applications per SM per cycle than [`MAX_LANE_INSTRUCTIONS_PER_SM_PER_CYCLE`].
    OverIssueRate {
        /// Applications per SM per cycle.
        ops_per_sm_per_cycle: f64,
    },
}

impl fmt::Display for ImpossibleFigures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ImpossibleFigures::NotFinite { figure, value } => write!(f, "{figure} is {value}, not a finite number"),
            ImpossibleFigures::LatencyUnderOneCycle { cycles } => {
                write!(f, "latency {cycles:.2} cycles per step is under 1 cycle")
            }
            ImpossibleFigures::ThroughputNotPositive { gops } => {
                write!(f, "throughput {gops:.1} Gop/s is not positive")
            }
            ImpossibleFigures::OverIssueRate { ops_per_sm_per_cycle } => write!(
                f,
                "{ops_per_sm_per_cycle:.1} applications per SM per cycle exceed the \
                 {MAX_LANE_INSTRUCTIONS_PER_SM_PER_CYCLE} instructions an SM can issue"
            ),
        }
    }
}

/// Why `figures` cannot be right, if they cannot: a figure that is not a finite positive
/// number, a latency under one cycle per step (a dependent instruction takes at least
/// one), or more applications per SM per cycle than
/// [`MAX_LANE_INSTRUCTIONS_PER_SM_PER_CYCLE`]. Such figures come from a chain the
/// compiler folded away, not from a fast function. The first reason found, in that order.
pub fn check_figures(figures: &Figures) -> Result<(), ImpossibleFigures> {
    let Figures { latency_cycles, throughput_gops, ops_per_sm_per_cycle } = *figures;
    for (figure, value) in
        [("latency", latency_cycles), ("throughput", throughput_gops), ("ops/SM/cycle", ops_per_sm_per_cycle)]
    {
        if !value.is_finite() {
            return Err(ImpossibleFigures::NotFinite { figure, value });
        }
    }
    if latency_cycles < 1.0 {
        return Err(ImpossibleFigures::LatencyUnderOneCycle { cycles: latency_cycles });
    }
    if throughput_gops <= 0.0 || ops_per_sm_per_cycle <= 0.0 {
        return Err(ImpossibleFigures::ThroughputNotPositive { gops: throughput_gops });
    }
    if ops_per_sm_per_cycle > MAX_LANE_INSTRUCTIONS_PER_SM_PER_CYCLE {
        return Err(ImpossibleFigures::OverIssueRate { ops_per_sm_per_cycle });
    }
    Ok(())
}

/// What became of a variant's timing.
#[derive(Clone, Debug, PartialEq)]
pub enum TimingStatus {
    /// Measured, and possible.
    Valid,
    /// Measured, and impossible: why ([`check_figures`]).
    Invalid(ImpossibleFigures),
    /// Not measured: the function is constant ([`is_constant`]).
    Constant,
}

impl fmt::Display for TimingStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimingStatus::Valid => f.write_str("ok"),
            TimingStatus::Invalid(why) => write!(f, "invalid: {why}"),
            TimingStatus::Constant => f.write_str("n/a: constant function"),
        }
    }
}

impl serde::Serialize for TimingStatus {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// One variant's per-element timing: the figures only if they are valid.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TimingRow {
    /// Variant name.
    pub variant: &'static str,
    /// `ok`, `invalid: <reason>` or `n/a: constant function`.
    pub status: TimingStatus,
    /// The figures, when `status` is `ok`.
    #[serde(flatten)]
    pub figures: Option<Figures>,
}

impl TimingRow {
    /// The row of measured `figures`: valid, or invalid with the reason and no figures.
    pub fn measured(variant: &'static str, figures: Figures) -> TimingRow {
        match check_figures(&figures) {
            Ok(()) => TimingRow { variant, status: TimingStatus::Valid, figures: Some(figures) },
            Err(why) => TimingRow { variant, status: TimingStatus::Invalid(why), figures: None },
        }
    }

    /// The row of a constant variant, not measured.
    pub fn constant(variant: &'static str) -> TimingRow {
        TimingRow { variant, status: TimingStatus::Constant, figures: None }
    }
}

/// Largest domain that [`is_constant`] walks.
pub const CONSTANT_CHECK_MAX_INPUTS: u64 = 1 << 16;

/// Whether `variant`'s function is proven constant: its domain has at most
/// [`CONSTANT_CHECK_MAX_INPUTS`] inputs, all of them, and the CPU gives one result for
/// every one. A constant function has nothing to time (its chain folds away, and rightly
/// so: E4M3's `is_infinite` is `false`). A constant variant with a larger domain would
/// not be found here; it would be timed and its figures flagged invalid.
pub fn is_constant(variant: &Variant) -> bool {
    let family = variant.family;
    if crate::verify::domain::count(family) > CONSTANT_CHECK_MAX_INPUTS {
        return false;
    }
    let mut results = crate::verify::domain::inputs(family).map(|x| variant.ops.eval(x));
    let first = results.next();
    results.all(|r| Some(r) == first)
}

/// Everything `bitexact bench` measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchReport {
    /// The device.
    pub device: DeviceInfo,
    /// Input bytes per throughput kernel.
    pub bytes: usize,
    /// Timed repetitions per figure (median reported).
    pub reps: usize,
    /// Bandwidth rows.
    pub bandwidth: Vec<BandwidthRow>,
    /// Per-variant timing rows.
    pub per_element: Vec<TimingRow>,
    /// The CUDA C++ baseline's `Map` kernels beside their Rust variants'.
    pub cxx: cxx::CxxRows,
}

impl BenchReport {
    /// The variants whose timing is invalid, in table order.
    pub fn invalid_variants(&self) -> Vec<&'static str> {
        self.per_element.iter().filter(|r| matches!(r.status, TimingStatus::Invalid(_))).map(|r| r.variant).collect()
    }
}

pub(crate) fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Input bits of element `i` of the bandwidth benchmarks: a fixed scramble (never all
/// zeros: zeros can run faster), truncated to the element width by the upload.
pub(crate) fn scramble(i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 24
}

/// Median GB/s of a device copy that moves `bytes_moved` bytes (half read, half
/// written), measured once per size per run.
fn copy_gb_per_s(
    gpu: &Gpu,
    config: &BenchConfig,
    bytes_moved: u64,
    measured: &mut HashMap<u64, f64>,
) -> Result<f64, GpuError> {
    if let Some(&gb_per_s) = measured.get(&bytes_moved) {
        return Ok(gb_per_s);
    }
    let half = (bytes_moved / 2) as usize;
    let src = gpu.upload(&crate::support::parallel::map_indices(half, |i| scramble(i as u64) as u8))?;
    let mut dst = gpu.zeros::<u8>(half)?;
    let ms = median(gpu.time_ms(config.warmup, config.reps, || gpu.copy(&src, &mut dst))?);
    let gb_per_s = bytes_moved as f64 / (ms * 1e6);
    measured.insert(bytes_moved, gb_per_s);
    Ok(gb_per_s)
}

/// Whether `config` selects `v`.
pub(crate) fn is_selected(config: &BenchConfig, v: &Variant) -> bool {
    config.only.as_deref().is_none_or(|s| v.matches(s))
}

/// The selected variants, in table order.
fn selected(config: &BenchConfig) -> impl Iterator<Item = &'static Variant> + '_ {
    VARIANTS.iter().filter(move |v| is_selected(config, v))
}

fn row(kernel: String, bytes_moved: u64, ms: f64, copy: f64, checked: String) -> BandwidthRow {
    let gb_per_s = bytes_moved as f64 / (ms * 1e6);
    BandwidthRow {
        kernel,
        bytes_moved,
        median_ms: ms,
        gb_per_s,
        copy_gb_per_s: copy,
        percent_of_copy: 100.0 * gb_per_s / copy,
        checked,
        inexact_baseline: None,
    }
}

/// Encodings of `format` that are not finite, by the independent reference
/// (`host::reference`): from the candidates ±(exponent all ones, mantissa zero),
/// ±(all ones), the quiet NaN and the sign bit alone, those it classifies as NaN or
/// infinite (FNUZ formats: only the sign bit alone).
pub fn non_finite_encodings(format: Format) -> Vec<u64> {
    let layout = crate::verify::reference::layout(format);
    let (e, m) = (layout.exponent_bits, layout.mantissa_bits);
    let sign = 1u64 << (e + m);
    let top = ((1u64 << e) - 1) << m;
    let mantissa = (1u64 << m) - 1;
    let candidates = [top, sign | top, top | mantissa, sign | top | mantissa, top | 1 << (m - 1), sign];
    let mut found: Vec<u64> = Vec::new();
    for c in candidates {
        if !crate::verify::reference::class(format, c).is_finite() && !found.contains(&c) {
            found.push(c);
        }
    }
    found
}

/// The input of a count benchmark over `len` elements of `format`: element `i` is the
/// scramble, or zero where that is not finite (by the reference), except at
/// `injected`, which get the non-finite encodings of `format` in turn.
fn count_input(format: Format, injected: [u64; 3]) -> impl Fn(u64) -> u64 + Sync {
    let specials = non_finite_encodings(format);
    let mask = u64::MAX >> (64 - format.bits());
    move |i| match injected.iter().position(|&j| j == i) {
        Some(k) => specials[k % specials.len()],
        None => {
            let bits = scramble(i) & mask;
            if crate::verify::reference::class(format, bits).is_finite() { bits } else { 0 }
        }
    }
}

/// Non-finite counting over `bytes` of each format's elements, with three non-finite
/// values injected: every selected variant with a count kernel, each checked in the
/// same run (exact ones must find the three and the first).
fn bench_count(
    gpu: &Gpu,
    config: &BenchConfig,
    copies: &mut HashMap<u64, f64>,
    progress: &dyn Fn(&str),
) -> Result<Vec<BandwidthRow>, GpuError> {
    let mut rows = Vec::new();
    // The input of the last format, reused by the next variant of the same format.
    let mut input: Option<(Format, crate::gpu::DeviceElements)> = None;
    let mut scratch = gpu.zeros::<u64>(2)?;
    for v in selected(config) {
        let Some(kernel) = v.ops.count_nonfinite() else { continue };
        let Family::IsFinite(format) = v.family else { continue };
        let len = config.bytes / (format.bits() / 8) as usize;
        let injected = [len / 3, len / 2, len.saturating_sub(1)].map(|i| i as u64);
        let elements = match input.take() {
            Some((f, elements)) if f == format => elements,
            _ => kernel.upload(gpu, len, &count_input(format, injected))?,
        };
        let name = KernelName { variant: v.name, kind: KernelKind::CountNonfinite }.to_string();
        progress(&name);
        let bytes_moved = (len * (format.bits() / 8) as usize) as u64;
        let copy = copy_gb_per_s(gpu, config, bytes_moved, copies)?;
        // Timed runs accumulate into a scratch result nobody reads, so nothing but the
        // kernel sits between the events; the check below is a separate, fresh run.
        let ms = median(gpu.time_ms(config.warmup, config.reps, || kernel.launch(gpu, &elements, &mut scratch))?);
        let found = kernel.count(gpu, &elements, 0)?;
        let checked = if v.claim == Claim::Exact {
            if found.count != injected.len() as u64 || found.first != Some(injected[0]) {
                let detail = format!("found {found:?}, injected at {injected:?}");
                return Err(GpuError::WrongResult { kernel: name, detail });
            }
            format!("count {} and first index {} as injected", found.count, injected[0])
        } else {
            format!("count {} (claim: {})", found.count, v.claim.name())
        };
        rows.push(row(name, bytes_moved, ms, copy, checked));
        input = Some((format, elements));
    }
    Ok(rows)
}

/// Conversions over `bytes` input bytes of each pair of input and output widths (UNORM
/// codes → f32, f32 → UNORM codes, ...): every selected variant with a stream kernel
/// (its `Stream` kernel, and its `HardwareStream` kernel where it has one and the
/// device runs its module), and the inexact baseline of each exact one
/// ([`inexact_baseline`]), every output checked against the same function on the CPU in
/// the same run ([`check_stream_output`]); then each exact row gets its baseline's
/// figures.
fn bench_stream(
    gpu: &Gpu,
    config: &BenchConfig,
    copies: &mut HashMap<u64, f64>,
    progress: &dyn Fn(&str),
) -> Result<Vec<BandwidthRow>, GpuError> {
    let wanted = |v: &Variant| {
        is_selected(config, v)
            || VARIANTS.iter().any(|e| is_selected(config, e) && inexact_baseline(e).is_some_and(|b| b.name == v.name))
    };
    let chosen: Vec<&'static Variant> = VARIANTS.iter().filter(|v| v.has(KernelKind::Stream) && wanted(v)).collect();
    let mut widths: Vec<(u32, u32)> = chosen.iter().map(|v| (v.input_bits, v.output_bits)).collect();
    widths.sort_unstable();
    widths.dedup();
    let mut measured: Vec<(&'static Variant, BandwidthRow)> = Vec::new();
    for (in_bits, out_bits) in widths {
        let group: Vec<&'static Variant> =
            chosen.iter().copied().filter(|v| (v.input_bits, v.output_bits) == (in_bits, out_bits)).collect();
        let Some(first) = group.first().and_then(|v| v.ops.stream()) else { continue };
        let (in_size, out_size) = ((in_bits / 8) as usize, (out_bits / 8) as usize);
        let len = config.bytes / in_size;
        let input = first.upload(gpu, len, &scramble)?;
        let bytes_moved = (len * (in_size + out_size)) as u64;
        let copy = copy_gb_per_s(gpu, config, bytes_moved, copies)?;
        for v in group {
            let kernels = [(KernelKind::Stream, v.ops.stream()), (KernelKind::HardwareStream, v.ops.hardware_stream())];
            for (kind, kernel) in kernels {
                let Some(kernel) = kernel else { continue };
                let name = KernelName { variant: v.name, kind };
                if kind == KernelKind::HardwareStream
                    && let Err(reason) =
                        gpu.runs(crate::gpu::ptx::module_of(name, shared::hardware::Conversion::of(v.family)).target)
                {
                    progress(&format!("{name} skipped: {reason}"));
                    continue;
                }
                progress(&name.to_string());
                // A fresh (zeroed) output for each kernel: the last kernel's results (the
                // same variant's `Stream` kernel's, before its `HardwareStream` one) would
                // otherwise pass for any element this kernel fails to write.
                let mut output = kernel.output(gpu, len)?;
                let ms = median(gpu.time_ms(config.warmup, config.reps, || kernel.launch(gpu, &input, &mut output))?);
                let got = output.download(gpu)?;
                let checked = check_stream_output(v, kind, in_bits, &got)?;
                measured.push((v, row(name.to_string(), bytes_moved, ms, copy, checked)));
            }
        }
    }
    let baselines: Vec<Option<Baseline>> = measured
        .iter()
        .map(|(v, exact)| {
            let base = inexact_baseline(v)?;
            let (_, b) = measured.iter().find(|(m, _)| m.name == base.name)?;
            Some(Baseline {
                kernel: b.kernel.clone(),
                median_ms: b.median_ms,
                gb_per_s: b.gb_per_s,
                exact_over_inexact_time: exact.median_ms / b.median_ms,
            })
        })
        .collect();
    Ok(measured
        .into_iter()
        .zip(baselines)
        .filter(|((v, _), _)| is_selected(config, v))
        .map(|((_, row), baseline)| BandwidthRow { inexact_baseline: baseline, ..row })
        .collect())
}

/// Checks every output `got` of `v`'s stream kernel of kind `kind` (over the bench input
/// [`scramble`] of `in_bits`-bit elements) against `v` on the CPU, on all cores, and says
/// what was checked. A [`KernelKind::HardwareStream`] kernel's result on a NaN input
/// must be a NaN of the result format (the instruction's own, which the three-way check
/// reports), every other result the CPU's bits. [`GpuError::WrongResult`] says how many
/// differ, and where first.
fn check_stream_output(
    v: &Variant,
    kind: KernelKind,
    in_bits: u32,
    got: &crate::gpu::HostElements,
) -> Result<String, GpuError> {
    use crate::verify::reference::{InputClass, conversion_input_class, conversion_output_is_nan};
    let mask = u64::MAX >> (64 - in_bits);
    let own_nan = |x: u64| kind == KernelKind::HardwareStream && conversion_input_class(v.family, x) == InputClass::Nan;
    let len = got.len();
    let (wrong, first_wrong) = crate::support::parallel::count_where(len, |i| {
        let (x, bits) = (scramble(i as u64) & mask, got.get(i));
        let right = if own_nan(x) {
            bits.is_some_and(|b| conversion_output_is_nan(v.family, b))
        } else {
            bits == Some(v.ops.eval(x))
        };
        (!right).then_some(i)
    });
    if let Some(i) = first_wrong {
        let detail = format!("{wrong} outputs differ from the CPU, first at {i}");
        return Err(GpuError::WrongResult { kernel: KernelName { variant: v.name, kind }.to_string(), detail });
    }
    if kind != KernelKind::HardwareStream {
        return Ok(format!("all {len} outputs == CPU"));
    }
    let (nans, _) = crate::support::parallel::count_where(len, |i| own_nan(scramble(i as u64) & mask).then_some(i));
    Ok(format!("all {len} outputs == CPU, but a NaN of the format for the {nans} NaN inputs"))
}

/// The throughput kernels' launch: 8 blocks per SM of [`crate::gpu::BLOCK_THREADS`]
/// threads, and how many threads that is.
pub(crate) fn throughput_launch(info: &DeviceInfo) -> (LaunchConfig, u64) {
    let full = LaunchConfig {
        grid_dim: (info.multiprocessors.max(1) * 8, 1, 1),
        block_dim: (crate::gpu::BLOCK_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    (full, u64::from(full.grid_dim.0) * u64::from(full.block_dim.0))
}

/// A launch of timing kernels into a result buffer (`out`).
pub(crate) type TimingLaunch<'a, A> = &'a mut dyn FnMut(A, &mut crate::gpu::DeviceBuffer<u64>) -> Result<(), GpuError>;

/// Latency and throughput of one function, from its timing kernels: `latency(n, out)`
/// runs its latency kernel for `n` steps (waiting; cycles in `out[0]`), `throughput(out)`
/// queues its throughput kernel with [`throughput_launch`]'s launch and
/// `config.throughput_iterations` steps. `out` holds one element per launched thread.
pub(crate) fn measure(
    gpu: &Gpu,
    config: &BenchConfig,
    out: &mut crate::gpu::DeviceBuffer<u64>,
    latency: TimingLaunch<'_, u32>,
    throughput: TimingLaunch<'_, ()>,
) -> Result<Figures, GpuError> {
    let info = gpu.info().clone();
    let (_, threads) = throughput_launch(&info);
    let mut cycles = |iterations: u32| -> Result<f64, GpuError> {
        latency(iterations, out)?;
        Ok(gpu.download(out)?.first().copied().unwrap_or(0) as f64)
    };
    let n = config.latency_iterations;
    // The difference of two chain lengths cancels the fixed cost of reading the clock.
    let latency_cycles = (cycles(2 * n)? - cycles(n)?) / f64::from(n);
    let ms = median(gpu.time_ms(config.warmup, config.reps, || throughput((), out))?);
    let ops = threads as f64 * 4.0 * f64::from(config.throughput_iterations);
    let seconds = ms / 1e3;
    Ok(Figures {
        latency_cycles,
        throughput_gops: ops / seconds / 1e9,
        ops_per_sm_per_cycle: ops
            / (seconds * f64::from(info.clock_khz) * 1e3 * f64::from(info.multiprocessors.max(1))),
    })
}

/// Latency and throughput of every selected variant that is not constant.
fn bench_per_element(gpu: &Gpu, config: &BenchConfig, progress: &dyn Fn(&str)) -> Result<Vec<TimingRow>, GpuError> {
    let (full, threads) = throughput_launch(gpu.info());
    let mut out = gpu.zeros::<u64>(threads as usize)?;
    let mut rows = Vec::new();
    for v in selected(config) {
        progress(v.name);
        if is_constant(v) {
            rows.push(TimingRow::constant(v.name));
            continue;
        }
        let iterations = config.throughput_iterations;
        let figures = measure(
            gpu,
            config,
            &mut out,
            &mut |n, out| v.ops.gpu_latency(gpu, 0x1234_5678, n, out),
            &mut |(), out| v.ops.gpu_launch_throughput(gpu, full, 0x9E37, iterations, out),
        )?;
        rows.push(TimingRow::measured(v.name, figures));
    }
    Ok(rows)
}

/// Runs every benchmark; `progress` is told what starts next.
pub fn run(gpu: &Gpu, config: &BenchConfig, progress: &dyn Fn(&str)) -> Result<BenchReport, GpuError> {
    let mut copies = HashMap::new();
    let mut bandwidth = bench_count(gpu, config, &mut copies, progress)?;
    bandwidth.extend(bench_stream(gpu, config, &mut copies, progress)?);
    let per_element = bench_per_element(gpu, config, progress)?;
    let cxx = cxx::bench_map(gpu, config, progress)?;
    Ok(BenchReport { device: gpu.info().clone(), bytes: config.bytes, reps: config.reps, bandwidth, per_element, cxx })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream kernel's output is checked bit for bit against the CPU, except that a
    /// `HardwareStream` kernel may give any NaN of the format for a NaN input (and must
    /// give a NaN there).
    #[test]
    fn stream_outputs_are_checked_against_the_cpu_with_the_instructions_nan_allowed() {
        use crate::gpu::HostElements;
        use crate::verify::reference::{InputClass, conversion_input_class};
        let v = VARIANTS.iter().find(|v| v.name == "f32_to_f16").expect("in the table");
        let len = 1 << 16;
        let inputs: Vec<u64> = (0..len as u64).map(|i| scramble(i) & 0xFFFF_FFFF).collect();
        let nan = |x: u64| conversion_input_class(v.family, x) == InputClass::Nan;
        let cpu: Vec<u16> = inputs.iter().map(|&x| v.ops.eval(x) as u16).collect();
        // The instruction's canonical NaN for every NaN input, the CPU's bits elsewhere.
        let canonical: Vec<u16> = inputs.iter().zip(&cpu).map(|(&x, &c)| if nan(x) { 0x7FFF } else { c }).collect();
        let nans = inputs.iter().filter(|&&x| nan(x)).count();
        assert!(nans > 0 && canonical != cpu, "the sample has NaN inputs whose payload the CPU keeps");
        let check = |kind, got: &[u16]| check_stream_output(v, kind, 32, &HostElements::U16(got.to_vec()));
        for kind in [KernelKind::Stream, KernelKind::HardwareStream] {
            assert!(check(kind, &cpu).is_ok(), "{kind:?}");
        }
        let said = check(KernelKind::HardwareStream, &canonical).expect("a NaN of the format for each NaN input");
        assert!(said.ends_with(&format!("for the {nans} NaN inputs")), "{said}");
        assert!(check(KernelKind::Stream, &canonical).is_err(), "the software kernel keeps the payload");
        // A wrong finite result, and a NaN input given infinity, fail either kind.
        let i = inputs.iter().position(|&x| !nan(x)).expect("a non-NaN input");
        let mut wrong = cpu.clone();
        wrong[i] ^= 1;
        let j = inputs.iter().position(|&x| nan(x)).expect("a NaN input");
        let mut not_nan = cpu.clone();
        not_nan[j] = 0x7C00;
        for (kind, got, first) in [
            (KernelKind::Stream, &wrong, i),
            (KernelKind::HardwareStream, &wrong, i),
            (KernelKind::HardwareStream, &not_nan, j),
        ] {
            let error = check(kind, got).expect_err("a wrong output").to_string();
            assert!(error.contains(&format!("1 outputs differ from the CPU, first at {first}")), "{kind:?}: {error}");
        }
    }

    fn figures(latency_cycles: f64, throughput_gops: f64, ops_per_sm_per_cycle: f64) -> Figures {
        Figures { latency_cycles, throughput_gops, ops_per_sm_per_cycle }
    }

    /// `scripts/torch_baseline.py` times PyTorch on the bench's own input bits: the
    /// overflow-free form it computes them with on the GPU gives the same bits as
    /// `scramble` for the first 4096 elements and the last 4096 of a 1 GiB f32 input.
    /// Needs `python3` (standard library only); `REQUIRE_PYTHON=1`, which CI sets, makes
    /// its absence a failure.
    #[test]
    fn the_torch_baseline_converts_the_same_input_bits() {
        use std::process::Command;
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/torch_baseline.py");
        for from in [0u64, (1 << 28) - 4096] {
            let run = Command::new("python3")
                .arg(script)
                .args(["--scramble-sample", "4096", "--scramble-from", &from.to_string()])
                .output();
            let Some(output) = crate::support::skip::require_or_skip("REQUIRE_PYTHON", run) else { return };
            assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
            let printed: Vec<u64> = String::from_utf8_lossy(&output.stdout)
                .lines()
                .map(|line| u64::from_str_radix(line.trim_start_matches("0x"), 16).expect("hex"))
                .collect();
            let ours: Vec<u64> = (from..from + 4096).map(|i| scramble(i) & 0xFFFF_FFFF).collect();
            assert_eq!(printed, ours, "from {from}");
        }
    }

    #[test]
    fn possible_figures_pass() {
        // f16_finite_ordered_lt_inf and f16_is_nan on an H200 (commit 846e06b).
        assert_eq!(check_figures(&figures(20.1, 3404.0, 13.1)), Ok(()));
        assert_eq!(check_figures(&figures(18.1, 2534.0, 9.7)), Ok(()));
        // The bounds themselves are possible.
        assert_eq!(check_figures(&figures(1.0, 1.0, MAX_LANE_INSTRUCTIONS_PER_SM_PER_CYCLE)), Ok(()));
    }

    /// The reason `check_figures` gives, as the report prints it.
    fn why(latency_cycles: f64, throughput_gops: f64, ops_per_sm_per_cycle: f64) -> Option<String> {
        check_figures(&figures(latency_cycles, throughput_gops, ops_per_sm_per_cycle)).err().map(|e| e.to_string())
    }

    #[test]
    fn impossible_figures_say_why() {
        // The folded chains of commit 846e06b on an H200: -0.0 cycles, and 2,312
        // applications per SM per cycle (about 600,000 Gop/s).
        assert_eq!(
            check_figures(&figures(-0.0, 3000.0, 10.0)),
            Err(ImpossibleFigures::LatencyUnderOneCycle { cycles: -0.0 })
        );
        assert_eq!(why(-0.0, 3000.0, 10.0).as_deref(), Some("latency -0.00 cycles per step is under 1 cycle"));
        assert_eq!(why(0.0, 3000.0, 10.0).as_deref(), Some("latency 0.00 cycles per step is under 1 cycle"));
        assert_eq!(why(0.99, 3000.0, 10.0).as_deref(), Some("latency 0.99 cycles per step is under 1 cycle"));
        assert_eq!(
            check_figures(&figures(20.0, 600_000.0, 2312.4)),
            Err(ImpossibleFigures::OverIssueRate { ops_per_sm_per_cycle: 2312.4 })
        );
        assert_eq!(
            why(20.0, 600_000.0, 2312.4).as_deref(),
            Some("2312.4 applications per SM per cycle exceed the 128 instructions an SM can issue")
        );
        assert!(check_figures(&figures(20.0, 3000.0, 128.01)).is_err());
        assert_eq!(
            check_figures(&figures(20.0, f64::INFINITY, 10.0)),
            Err(ImpossibleFigures::NotFinite { figure: "throughput", value: f64::INFINITY })
        );
        assert_eq!(why(20.0, f64::INFINITY, 10.0).as_deref(), Some("throughput is inf, not a finite number"));
        assert_eq!(why(f64::NAN, 3000.0, 10.0).as_deref(), Some("latency is NaN, not a finite number"));
        assert!(matches!(
            check_figures(&figures(20.0, 3000.0, f64::NEG_INFINITY)),
            Err(ImpossibleFigures::NotFinite { figure: "ops/SM/cycle", .. })
        ));
        assert_eq!(why(20.0, -5.0, -0.1).as_deref(), Some("throughput -5.0 Gop/s is not positive"));
        assert_eq!(
            check_figures(&figures(20.0, 0.0, 0.0)),
            Err(ImpossibleFigures::ThroughputNotPositive { gops: 0.0 })
        );
    }

    #[test]
    fn rows_carry_figures_only_when_valid() {
        let valid = TimingRow::measured("f16_is_nan", figures(18.1, 2534.0, 9.7));
        assert_eq!((valid.status.to_string(), valid.figures), ("ok".to_string(), Some(figures(18.1, 2534.0, 9.7))));
        let invalid = TimingRow::measured("f32_is_finite", figures(-0.0, 600_000.0, 2312.0));
        assert_eq!(invalid.status.to_string(), "invalid: latency -0.00 cycles per step is under 1 cycle");
        assert_eq!(invalid.figures, None);
        assert_eq!(TimingRow::constant("e4m3_is_infinite").status.to_string(), "n/a: constant function");

        let json = |row: &TimingRow| serde_json::to_value(row).expect("JSON");
        assert_eq!(
            json(&valid),
            serde_json::json!({"variant": "f16_is_nan", "status": "ok", "latency_cycles": 18.1,
                               "throughput_gops": 2534.0, "ops_per_sm_per_cycle": 9.7})
        );
        assert_eq!(
            json(&invalid),
            serde_json::json!({"variant": "f32_is_finite",
                               "status": "invalid: latency -0.00 cycles per step is under 1 cycle"})
        );
        assert_eq!(
            json(&TimingRow::constant("e4m3_is_infinite")),
            serde_json::json!({"variant": "e4m3_is_infinite", "status": "n/a: constant function"})
        );
    }

    #[test]
    fn only_is_infinite_of_formats_without_infinities_is_proven_constant() {
        use shared::{Family::IsInfinite, Format};
        let constant: Vec<&str> = VARIANTS.iter().filter(|v| is_constant(v)).map(|v| v.name).collect();
        // OCP E4M3 and both FNUZ formats have no infinity encoding; every other function
        // of the table depends on its input.
        let no_infinities = [Format::Fp8E4m3, Format::Fp8E4m3Fnuz, Format::Fp8E5m2Fnuz];
        let expected: Vec<&str> = VARIANTS
            .iter()
            .filter(|v| matches!(v.family, IsInfinite(f) if no_infinities.contains(&f)))
            .map(|v| v.name)
            .collect();
        assert_eq!(expected.len(), 3);
        assert_eq!(constant, expected);
    }

    #[test]
    fn exact_conversions_are_compared_with_the_one_ulp_shortcut_of_their_family_and_width() {
        let baseline =
            |name: &str| inexact_baseline(crate::verify::table::find(name).expect("in the table")).map(|b| b.name);
        for v in VARIANTS.iter().filter(|v| v.has(KernelKind::Stream)) {
            let Some(b) = inexact_baseline(v) else { continue };
            assert_eq!((b.family, b.input_bits, b.claim), (v.family, v.input_bits, Claim::OneUlp), "{}", v.name);
            assert_eq!(v.claim, Claim::Exact, "{}", v.name);
        }
        assert_eq!(baseline("unorm8_times3_int"), Some("unorm8_mul_recip"));
        assert_eq!(baseline("unorm16_div_ieee"), Some("unorm16_mul_recip"));
        // No baseline for the baseline itself, nor where the table has no shortcut of the
        // same input width (UNORM8 codes in 16-bit words, SNORM), nor outside the
        // UNORM/SNORM → f32 families: f32 ↔ binary16 / bfloat16 / FP8 have no inexact
        // form in the table, UNORM → binary16 / bfloat16 no streamed one.
        for name in [
            "unorm8_mul_recip",
            "unorm8_to_f32",
            "snorm8_to_f32",
            "f16_finite_exp_mask",
            "unorm8_to_f16_odd",
            "unorm16_to_bf16_via_f32",
            "f32_to_f16",
            "f32_to_bf16",
            "f32_to_e4m3",
            "f32_to_e5m2_satfinite",
            "f16_to_f32_scaled",
            "bf16_to_f32",
            "e4m3_to_f32_scaled",
        ] {
            assert_eq!(baseline(name), None, "{name}");
        }
    }

    #[test]
    fn injected_encodings_are_non_finite_and_the_rest_of_a_count_input_is_finite() {
        use crate::verify::reference::{FpClass, class};
        for format in Format::ALL {
            let specials = non_finite_encodings(format);
            assert!(!specials.is_empty(), "{}", format.name());
            assert!(specials.iter().all(|&b| !class(format, b).is_finite()), "{}: {specials:x?}", format.name());
            // Formats with infinities get both among the first three injected.
            let infinities = specials.iter().take(3).filter(|&&b| class(format, b) == FpClass::Infinite).count();
            let has_infinities =
                (0..1u64 << format.bits().min(16)).any(|b| class(format, b) == FpClass::Infinite) || format.bits() > 16;
            assert_eq!(infinities, if has_infinities { 2 } else { 0 }, "{}: {specials:x?}", format.name());
            let injected = [5, 77, 1000];
            let input = count_input(format, injected);
            for i in 0..4096 {
                assert_eq!(class(format, input(i)).is_finite(), !injected.contains(&i), "{} at {i}", format.name());
            }
        }
    }

    #[test]
    fn the_report_names_its_invalid_rows() {
        let device = DeviceInfo {
            ordinal: 0,
            name: "test".into(),
            compute_capability: (9, 0),
            multiprocessors: 132,
            clock_khz: 1_980_000,
            memory_bytes: 0,
        };
        let report = BenchReport {
            device,
            bytes: 0,
            reps: 1,
            bandwidth: Vec::new(),
            per_element: vec![
                TimingRow::measured("a", figures(-0.0, 1.0, 1.0)),
                TimingRow::measured("b", figures(20.0, 1.0, 1.0)),
                TimingRow::constant("c"),
                TimingRow::measured("d", figures(20.0, 1.0, 2312.0)),
            ],
            cxx: cxx::CxxRows { ptx: "skipped: test".into(), rows: Vec::new(), per_element: Vec::new() },
        };
        assert_eq!(report.invalid_variants(), ["a", "d"]);
    }
}
