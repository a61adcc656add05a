//! GPU benchmarks: bandwidth of the throughput kernels against a device-to-device copy
//! that moves the same bytes in the same run, and per-variant latency and throughput.
//!
//! This wing is the engine of the `bitexact bench` command, and its items are not
//! library API (`#[doc(hidden)]`): run the command, whose `--json-out` report is the
//! interface (docs/toolchain-and-gpu.md). What a program that links `bitexact` needs to time
//! its own kernels is in [`bitexact_gpu`] (typed launches, `Gpu::time_ms`).
//!
//! Per-variant figures are checked before they are reported (`check_figures`): a
//! latency under one cycle per step, more applications per SM per cycle than an SM can
//! issue instructions, or a figure that is not a finite positive number is physically
//! impossible, so the row reads `invalid: <reason>` instead. A variant whose function is
//! proven constant on the CPU (`Variant::is_constant`) is not timed at all.
//!
//! The CUDA C++ baseline gets rows of its own (`cxx`): each C++ form's `Map` kernel
//! beside its Rust variant's, same input, same run.
//!
//! One module per job: `figures` (the per-variant figures and when they are possible),
//! `bandwidth` (count and stream kernels against a same-run copy), `chains` (the
//! latency and throughput chains) and `cxx`; the binary's items are re-exported here.
//!
//! Owns: what `bitexact bench` measures and when a figure is physically possible.
//! Uses: [`bitexact_support`], [`bitexact_gpu`] (launches), [`bitexact_verify`] (the table,
//! domains) and [`bitexact_cuda_tools`] (the C++ baseline's forms and PTX).
#![deny(unsafe_code)]

#[doc(hidden)]
pub mod bandwidth;
#[doc(hidden)]
pub mod chains;
#[doc(hidden)]
pub mod cxx;
#[doc(hidden)]
pub mod figures;

#[doc(hidden)]
pub use bandwidth::{BandwidthRow, Baseline, inexact_baseline, non_finite_encodings};
#[doc(hidden)]
pub use figures::{
    Figures, ImpossibleFigures, MAX_LANE_INSTRUCTIONS_PER_SM_PER_CYCLE, TimingRow, TimingStatus, check_figures,
};

use bitexact_gpu::{DeviceInfo, Gpu, GpuError};
use bitexact_verify::table::{VARIANTS, Variant};
use std::collections::HashMap;

/// What to run.
#[derive(Clone, Debug)]
#[doc(hidden)]
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

/// Everything `bitexact bench` measured.
#[derive(Clone, Debug, serde::Serialize)]
#[doc(hidden)]
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
    #[doc(hidden)]
    pub fn invalid_variants(&self) -> Vec<&'static str> {
        self.per_element.iter().filter(|r| matches!(r.status, TimingStatus::Invalid(_))).map(|r| r.variant).collect()
    }
}

/// The median of `times` (the upper one of an even count); NaN for none.
pub(crate) fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Whether `config` selects `v`.
pub(crate) fn is_selected(config: &BenchConfig, v: &Variant) -> bool {
    config.only.as_deref().is_none_or(|s| v.matches(s))
}

/// The selected variants, in table order.
fn selected(config: &BenchConfig) -> impl Iterator<Item = &'static Variant> + '_ {
    VARIANTS.iter().filter(move |v| is_selected(config, v))
}

/// Runs every benchmark; `progress` is told what starts next.
///
/// # Safety
///
/// The C++ baseline's rows load its PTX (the folder `BITEXACT_CXX_PTX_DIR` names, or
/// NVRTC's compilation with the CUDA tools found), and launch its kernels through markers
/// whose `unsafe impl`s vouch for that code only. So that PTX must be the baseline's
/// source (`cuda-baseline/`) compiled by NVRTC against genuine CUDA headers, or files
/// written from such a compilation: other PTX with the same entry points (files put in
/// the folder, a header that redefines what a form calls) lets safe code read or write
/// device memory out of bounds.
#[allow(unsafe_code)] // forwards `FormsPtx::load`'s contract
#[doc(hidden)]
pub unsafe fn run(gpu: &Gpu, config: &BenchConfig, progress: &dyn Fn(&str)) -> Result<BenchReport, GpuError> {
    let mut copies = HashMap::new();
    let mut bandwidth = bandwidth::bench_count(gpu, config, &mut copies, progress)?;
    bandwidth.extend(bandwidth::bench_stream(gpu, config, &mut copies, progress)?);
    let per_element = chains::bench_per_element(gpu, config, progress)?;
    // SAFETY: forwarded from the caller.
    let cxx = unsafe { cxx::bench_map(gpu, config, progress)? };
    Ok(BenchReport { device: gpu.info().clone(), bytes: config.bytes, reps: config.reps, bandwidth, per_element, cxx })
}

#[cfg(test)]
mod tests;
