//! Latency and throughput of each variant's per-element function, from its dependent
//! (latency) and independent (throughput) chains of applications.

use super::figures::{Figures, TimingRow};
use super::{BenchConfig, median, selected};
use bitexact_gpu::{DeviceInfo, Gpu, GpuError};
use cudarc::driver::LaunchConfig;

/// The throughput kernels' launch: 8 blocks per SM of [`bitexact_gpu::BLOCK_THREADS`]
/// threads, and how many threads that is.
pub(crate) fn throughput_launch(info: &DeviceInfo) -> (LaunchConfig, u64) {
    let full = LaunchConfig {
        grid_dim: (info.multiprocessors.max(1) * 8, 1, 1),
        block_dim: (bitexact_gpu::BLOCK_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    (full, u64::from(full.grid_dim.0) * u64::from(full.block_dim.0))
}

/// A launch of timing kernels into a result buffer (`out`).
pub(crate) type TimingLaunch<'a, A> =
    &'a mut dyn FnMut(A, &mut bitexact_gpu::DeviceBuffer<u64>) -> Result<(), GpuError>;

/// Latency and throughput of one function, from its timing kernels: `latency(n, out)`
/// runs its latency kernel for `n` steps (waiting; cycles in `out[0]`), `throughput(out)`
/// queues its throughput kernel with [`throughput_launch`]'s launch and
/// `config.throughput_iterations` steps. `out` holds one element per launched thread.
pub(crate) fn measure(
    gpu: &Gpu,
    config: &BenchConfig,
    out: &mut bitexact_gpu::DeviceBuffer<u64>,
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
pub(super) fn bench_per_element(
    gpu: &Gpu,
    config: &BenchConfig,
    progress: &dyn Fn(&str),
) -> Result<Vec<TimingRow>, GpuError> {
    let (full, threads) = throughput_launch(gpu.info());
    let mut out = gpu.zeros::<u64>(threads as usize)?;
    let mut rows = Vec::new();
    for v in selected(config) {
        progress(v.name);
        if v.is_constant() {
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
