//! GPU benchmarks: bandwidth of the throughput kernels against a device-to-device copy
//! that moves the same bytes in the same run, and per-variant latency and throughput.

use crate::gpu::{DeviceInfo, Gpu, GpuError};
use crate::table::{VARIANTS, Variant};
use cudarc::driver::LaunchConfig;
use shared::Claim;

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
}

/// Latency and throughput of one variant's per-element function.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TimingRow {
    /// Variant name.
    pub variant: &'static str,
    /// Cycles per step of a dependent chain (one application plus one XOR feeding the
    /// result back), from the SM's cycle counter, fixed overhead removed.
    pub latency_cycles: f64,
    /// Independent applications per second over the whole device, in 10^9.
    pub throughput_gops: f64,
    /// The same per SM per cycle at the device's rated clock.
    pub ops_per_sm_per_cycle: f64,
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
}

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Fills `len` elements with a fixed scramble (never zeros: zeros can run faster).
fn scramble<T: crate::table::Element>(len: usize) -> Vec<T> {
    crate::parallel::map_indices(len, |i| T::from_u64((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 24))
}

/// Median GB/s of a device copy that moves `bytes_moved` bytes (half read, half written).
fn copy_gb_per_s(gpu: &Gpu, config: &BenchConfig, bytes_moved: u64) -> Result<f64, GpuError> {
    let half = (bytes_moved / 2) as usize;
    let src = gpu.upload(&scramble::<u8>(half))?;
    let mut dst = gpu.zeros::<u8>(half)?;
    let ms = median(gpu.time_ms(config.warmup, config.reps, || gpu.copy(&src, &mut dst))?);
    Ok(bytes_moved as f64 / (ms * 1e6))
}

/// The selected variants that have a bandwidth kernel `<variant><suffix>` in the PTX
/// (kernels-gpu decides which do, from the table).
fn with_kernel<'a>(config: &'a BenchConfig, suffix: &'a str) -> impl Iterator<Item = &'static Variant> + 'a {
    VARIANTS.iter().filter(move |v| {
        config.only.as_deref().is_none_or(|s| v.name.contains(s))
            && crate::ptx::has_kernel(&format!("{}{suffix}", v.name))
    })
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
    }
}

/// Binary16 non-finite counting over `bytes` of halves with a few NaN/inf injected.
fn bench_count(gpu: &Gpu, config: &BenchConfig, progress: &dyn Fn(&str)) -> Result<Vec<BandwidthRow>, GpuError> {
    let len = config.bytes / 2;
    let mut halves: Vec<u16> = scramble::<u16>(len).into_iter().map(|h| h & 0x7BFF).collect();
    let injected = [len / 3, len / 2, len - 1];
    for (&i, bits) in injected.iter().zip([0x7C00u16, 0xFE00, 0xFC00]) {
        halves[i] = bits;
    }
    let input = gpu.upload(&halves)?;
    let mut scratch = gpu.zeros::<u64>(2)?;
    let bytes_moved = (len * 2) as u64;
    let copy = copy_gb_per_s(gpu, config, bytes_moved)?;
    let mut rows = Vec::new();
    for v in with_kernel(config, "_count_nonfinite") {
        progress(&format!("{}_count_nonfinite", v.name));
        // Timed runs accumulate into a scratch result nobody reads, so nothing but the
        // kernel sits between the events; the check below is a separate, fresh run.
        let ms = median(gpu.time_ms(config.warmup, config.reps, || gpu.launch_count(v.name, &input, &mut scratch))?);
        let found = gpu.count_nonfinite(v.name, &input)?;
        let checked = if v.claim == Claim::Exact {
            let ok = found.count == injected.len() as u64 && found.first == Some(injected[0] as u64);
            if !ok {
                let detail = format!("found {found:?}, injected at {injected:?}");
                return Err(GpuError::WrongResult { kernel: format!("{}_count_nonfinite", v.name), detail });
            }
            format!("count {} and first index {} as injected", found.count, injected[0])
        } else {
            format!("count {} (claim: {})", found.count, v.claim.name())
        };
        rows.push(row(format!("{}_count_nonfinite", v.name), bytes_moved, ms, copy, checked));
    }
    Ok(rows)
}

/// UNORM8 → f32 over `bytes` input bytes (4 × as many written).
fn bench_unorm8(gpu: &Gpu, config: &BenchConfig, progress: &dyn Fn(&str)) -> Result<Vec<BandwidthRow>, GpuError> {
    let len = config.bytes;
    let bytes = scramble::<u8>(len);
    let input = gpu.upload(&bytes)?;
    let mut output = gpu.zeros::<u32>(len)?;
    let bytes_moved = (len * 5) as u64;
    let copy = copy_gb_per_s(gpu, config, bytes_moved)?;
    let mut rows = Vec::new();
    for v in with_kernel(config, "_wide") {
        progress(&format!("{}_wide", v.name));
        let ms = median(gpu.time_ms(config.warmup, config.reps, || gpu.launch_wide(v.name, &input, &mut output))?);
        let got = gpu.download(&output)?;
        // Every element against the same function on the CPU, on all cores.
        let (wrong, first) =
            crate::parallel::count_where(len, |i| (u64::from(got[i]) != v.ops.eval(u64::from(bytes[i]))).then_some(i));
        if let Some(i) = first {
            let detail = format!("{wrong} outputs differ from the CPU, first at {i}");
            return Err(GpuError::WrongResult { kernel: format!("{}_wide", v.name), detail });
        }
        rows.push(row(format!("{}_wide", v.name), bytes_moved, ms, copy, format!("all {len} outputs == CPU")));
    }
    Ok(rows)
}

/// Latency and throughput of every selected variant.
fn bench_per_element(gpu: &Gpu, config: &BenchConfig, progress: &dyn Fn(&str)) -> Result<Vec<TimingRow>, GpuError> {
    let info = gpu.info().clone();
    let single = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    let full = LaunchConfig {
        grid_dim: (info.multiprocessors.max(1) * 8, 1, 1),
        block_dim: (crate::gpu::BLOCK_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let threads = u64::from(full.grid_dim.0) * u64::from(full.block_dim.0);
    let mut out = gpu.zeros::<u64>(threads as usize)?;
    let mut rows = Vec::new();
    for v in VARIANTS.iter().filter(|v| config.only.as_deref().is_none_or(|s| v.name.contains(s))) {
        progress(v.name);
        let latency_kernel = format!("{}_latency", v.name);
        let mut cycles = |iterations: u32| -> Result<f64, GpuError> {
            gpu.launch_timing(&latency_kernel, single, 0x1234_5678, iterations, &mut out)?;
            gpu.synchronize(&latency_kernel)?;
            Ok(gpu.download(&out)?.first().copied().unwrap_or(0) as f64)
        };
        let n = config.latency_iterations;
        // The difference of two chain lengths cancels the fixed cost of reading the clock.
        let latency_cycles = (cycles(2 * n)? - cycles(n)?) / f64::from(n);
        let throughput_kernel = format!("{}_throughput", v.name);
        let iterations = config.throughput_iterations;
        let ms = median(gpu.time_ms(config.warmup, config.reps, || {
            gpu.launch_timing(&throughput_kernel, full, 0x9E37, iterations, &mut out)
        })?);
        let ops = threads as f64 * 4.0 * f64::from(iterations);
        let seconds = ms / 1e3;
        rows.push(TimingRow {
            variant: v.name,
            latency_cycles,
            throughput_gops: ops / seconds / 1e9,
            ops_per_sm_per_cycle: ops
                / (seconds * f64::from(info.clock_khz) * 1e3 * f64::from(info.multiprocessors.max(1))),
        });
    }
    Ok(rows)
}

/// Runs every benchmark; `progress` is told what starts next.
pub fn run(gpu: &Gpu, config: &BenchConfig, progress: &dyn Fn(&str)) -> Result<BenchReport, GpuError> {
    let mut bandwidth = bench_count(gpu, config, progress)?;
    bandwidth.extend(bench_unorm8(gpu, config, progress)?);
    let per_element = bench_per_element(gpu, config, progress)?;
    Ok(BenchReport { device: gpu.info().clone(), bytes: config.bytes, reps: config.reps, bandwidth, per_element })
}
