//! The CUDA C++ baseline's rows of the bench: each C++ form's `Map` kernel
//! (`cuda-baseline/forms.cu`, default NVRTC flags) and its Rust variant's `Map` kernel,
//! timed over the same large input in the same run, and the form's latency and
//! throughput from its timing kernels (the Rust variants' chain step in C++), measured
//! and checked as the Rust variants' are (`chains::measure`,
//! [`crate::check_figures`]).
//!
//! The C++ PTX comes from [`cxx_gpu::for_device`] (the bundle's precompiled files, or
//! NVRTC); without it the rows are left out and the report says why. The outputs are
//! not checked here: `host/tests/gpu_cxx.rs` checks every form on every input.

use super::bandwidth::scramble;
use super::chains::{measure, throughput_launch};
use super::figures::TimingRow;
use super::{BenchConfig, is_selected, median};
use bitexact_cuda_tools::baseline::{FORMS, Flags};
use bitexact_cuda_tools::cxx_gpu;
use bitexact_gpu::{DeviceElements, Gpu, GpuError};
use std::collections::HashMap;

/// One C++ form and its Rust variant, their `Map` kernels timed over the same input.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MapRow {
    /// The form, as CUDA C++ writes it.
    pub form: &'static str,
    /// Its kernel, `cxx_<name>`.
    pub cxx_kernel: &'static str,
    /// The Rust variant's (`Map`) kernel.
    pub rust_kernel: &'static str,
    /// Elements per run (the bench's input bytes over the input width).
    pub elements: u64,
    /// The C++ kernel's median device time per run, launch and wait included.
    pub cxx_ms: f64,
    /// The Rust kernel's, likewise.
    pub rust_ms: f64,
    /// `elements / cxx_ms`, in 10^9 elements per second.
    pub cxx_g_elements_per_s: f64,
    /// `elements / rust_ms`, likewise.
    pub rust_g_elements_per_s: f64,
    /// `cxx_ms / rust_ms`: above 1 where the Rust kernel is faster.
    pub cxx_over_rust_time: f64,
}

/// The C++ rows, or why there are none.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CxxRows {
    /// Where the C++ PTX came from (`NVRTC 12.9`, a folder) and for which architecture,
    /// or `skipped: <reason>`.
    pub ptx: String,
    /// One row per selected form (whose Rust variant the bench's `only` selects).
    pub rows: Vec<MapRow>,
    /// The same forms' latency and throughput, one row per form named by its kernel
    /// (`cxx_<name>`); the Rust variants' are in the report's own per-element rows.
    pub per_element: Vec<TimingRow>,
}

/// Times every selected form's kernel and its Rust variant's over `config.bytes` of
/// input (`scramble`d bits of the input width; one input per width, shared). A
/// missing C++ PTX is no error: the rows are left out and `ptx` says why.
///
/// # Safety
/// As for [`super::run`].
#[allow(unsafe_code)] // forwards `FormsPtx::load`'s contract
pub(crate) unsafe fn bench_map(gpu: &Gpu, config: &BenchConfig, progress: &dyn Fn(&str)) -> Result<CxxRows, GpuError> {
    let ptx = match cxx_gpu::for_device(gpu.info().sm()) {
        Ok(ptx) => ptx,
        Err(why) => {
            return Ok(CxxRows { ptx: format!("skipped: {why}"), rows: Vec::new(), per_element: Vec::new() });
        }
    };
    // SAFETY: the PTX is what `for_device` found, which `run`'s caller vouches for.
    #[allow(unsafe_code)]
    let module = unsafe { ptx.load(gpu, Flags::Default)? };
    let mut inputs: HashMap<u32, DeviceElements> = HashMap::new();
    let mut rows = Vec::new();
    for form in FORMS {
        let Some(variant) = bitexact_verify::table::find(form.variant) else { continue };
        if !is_selected(config, variant) {
            continue;
        }
        let kernels = form.kernels;
        let len = config.bytes / (variant.input_bits / 8) as usize;
        let input = match inputs.remove(&variant.input_bits) {
            Some(input) => input,
            None => kernels.upload(gpu, len, &scramble)?,
        };
        let mut output = kernels.output(gpu, len)?;
        progress(kernels.name());
        let cxx_ms = median(gpu.time_ms(config.warmup, config.reps, || kernels.run_cxx(&module, &input, &mut output))?);
        progress(variant.name);
        let rust_ms = median(gpu.time_ms(config.warmup, config.reps, || kernels.run_rust(gpu, &input, &mut output))?);
        let per_s = |ms: f64| len as f64 / (ms * 1e6);
        rows.push(MapRow {
            form: form.code,
            cxx_kernel: kernels.name(),
            rust_kernel: variant.name,
            elements: len as u64,
            cxx_ms,
            rust_ms,
            cxx_g_elements_per_s: per_s(cxx_ms),
            rust_g_elements_per_s: per_s(rust_ms),
            cxx_over_rust_time: cxx_ms / rust_ms,
        });
        inputs.insert(variant.input_bits, input);
    }
    drop(inputs);
    let (full, threads) = throughput_launch(gpu.info());
    let mut out = gpu.zeros::<u64>(threads as usize)?;
    let mut per_element = Vec::new();
    for row in &rows {
        let form = FORMS.iter().find(|f| f.kernels.name() == row.cxx_kernel).expect("a row's form");
        let kernels = form.kernels;
        progress(&format!("{} latency and throughput", kernels.name()));
        let iterations = config.throughput_iterations;
        let figures = measure(
            gpu,
            config,
            &mut out,
            &mut |n, out| kernels.cxx_latency(&module, 0x1234_5678, n, out),
            &mut |(), out| kernels.cxx_launch_throughput(&module, full, 0x9E37, iterations, out),
        )?;
        per_element.push(TimingRow::measured(kernels.name(), figures));
    }
    Ok(CxxRows { ptx: format!("{} from {}, default flags", ptx.arch, ptx.origin), rows, per_element })
}
