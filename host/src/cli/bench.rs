//! `bitexact bench`: GPU bandwidth and per-element timing.

use super::choices::OutputFormat;
use super::error::CliError;
use bitexact::bench::{self, BenchConfig, BenchReport, TimingRow, TimingStatus};
use bitexact::gpu::Gpu;
use bitexact::support::output::{self, Table};
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

/// Options of `bitexact bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    format: OutputFormat,
    /// Input size of each throughput kernel, in MiB (the targets are stated for >= 1024).
    #[arg(long, default_value_t = 1024)]
    mib: usize,
    /// Timed repetitions per figure; the median is reported.
    #[arg(long, default_value_t = 10)]
    reps: usize,
    #[arg(long, help = bitexact::verify::table::ONLY_HELP)]
    only: Option<String>,
    /// Also write the JSON report to this file (whatever --format says); its directory
    /// is checked before the run.
    #[arg(long, value_name = "FILE")]
    json_out: Option<std::path::PathBuf>,
    /// The GPU to run on: its CUDA device ordinal. (--device on scan and normalize
    /// chooses a backend, auto|cpu|gpu; bench always runs on a GPU.)
    #[arg(long, value_name = "ORDINAL", default_value_t = 0)]
    gpu: usize,
}

/// Runs the benchmarks and prints the report. Exits 1, after printing everything, if a
/// timing row is invalid (one line on stderr names them).
pub fn run(args: &BenchArgs) -> Result<ExitCode, CliError> {
    if args.mib == 0 || args.reps == 0 {
        return Err(CliError::Usage("--mib and --reps must be at least 1".into()));
    }
    if let Some(path) = &args.json_out {
        // Before the minutes of benchmarking, not after.
        bitexact::files::output::check_destination(path)?;
    }
    let gpu = Gpu::open(args.gpu).map_err(|error| CliError::NeedsGpu { command: "bench", error })?;
    let config = BenchConfig {
        bytes: args.mib.checked_mul(1 << 20).ok_or_else(|| CliError::Usage("--mib is too large".into()))?,
        reps: args.reps,
        only: args.only.clone(),
        ..BenchConfig::default()
    };
    let show_progress = std::io::stderr().is_terminal() || args.format != OutputFormat::Json;
    let progress = |what: &str| {
        if show_progress {
            let _ = writeln!(std::io::stderr(), "bench: {what}");
        }
    };
    // SAFETY: the C++ baseline's PTX is the bundle's `cxx-ptx/` (`bitexact sass --cxx
    // --emit-ptx` wrote it; `scripts/gpu-check.sh` names it in `BITEXACT_CXX_PTX_DIR`) or
    // NVRTC's compilation with the CUDA tools the user installed: the command line trusts
    // its environment's tools, as it trusts the CUDA driver it loads.
    #[allow(unsafe_code)]
    let report = unsafe { bench::run(&gpu, &config, &progress)? };
    if let Some(path) = &args.json_out {
        // Whole or not at all: an interrupted run leaves the previous report in place.
        bitexact::files::output::write_whole(path, output::json(&report).as_bytes())?;
    }
    if args.format == OutputFormat::Json {
        output::write_stdout(&output::json(&report))?;
    } else {
        output::write_stdout(&text(&report, &config, args.format == OutputFormat::Markdown))?;
    }
    let invalid = report.invalid_variants();
    if invalid.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    crate::cli::say!("bitexact: bench: physically impossible timing (a folded chain?) for {}", invalid.join(", "));
    Ok(ExitCode::from(1))
}

/// The report as aligned text or Markdown tables.
fn text(report: &BenchReport, config: &BenchConfig, markdown: bool) -> String {
    let mut out = String::new();
    let d = &report.device;
    let _ = writeln!(
        out,
        "device {}: {} (sm_{}{}, {} SMs, rated {} MHz, {:.1} GiB); {} MiB inputs, median of {} runs\n",
        d.ordinal,
        d.name,
        d.compute_capability.0,
        d.compute_capability.1,
        d.multiprocessors,
        d.clock_khz / 1000,
        d.memory_bytes as f64 / f64::from(1 << 30),
        config.bytes >> 20,
        config.reps
    );
    let mut table = Table::new([
        "kernel",
        "bytes moved",
        "ms",
        "GB/s",
        "copy GB/s",
        "% of copy",
        "exact / inexact time",
        "checked",
    ]);
    for r in &report.bandwidth {
        let versus = match &r.inexact_baseline {
            Some(b) => format!("{:.2} (vs {}, {:.3} ms)", b.exact_over_inexact_time, b.kernel, b.median_ms),
            None => "-".to_string(),
        };
        table.row([
            r.kernel.clone(),
            r.bytes_moved.to_string(),
            format!("{:.3}", r.median_ms),
            format!("{:.0}", r.gb_per_s),
            format!("{:.0}", r.copy_gb_per_s),
            format!("{:.1}", r.percent_of_copy),
            versus,
            r.checked.clone(),
        ]);
    }
    let _ = write!(out, "{}", table.render(markdown));
    let _ = writeln!(
        out,
        "\n(bytes moved = read + written; copy = device-to-device copy moving the same bytes, same run; \
         exact / inexact time = this exact conversion's median time over that of the inexact form users run \
         today, x * fl(1/(2^n - 1)), same input, same run)\n"
    );
    let mut table = Table::new(["variant", "latency cycles", "throughput Gop/s", "ops/SM/cycle"]);
    for r in &report.per_element {
        match r.figures {
            Some(f) if r.status == TimingStatus::Valid => table.row([
                r.variant.to_string(),
                format!("{:.1}", f.latency_cycles),
                format!("{:.0}", f.throughput_gops),
                format!("{:.1}", f.ops_per_sm_per_cycle),
            ]),
            _ => table.row([r.variant.to_string(), r.status.to_string(), String::new(), String::new()]),
        }
    }
    let _ = write!(out, "{}", table.render(markdown));
    let _ = writeln!(
        out,
        "\n(latency: dependent chain, one application + its feedback (an XOR, for non-bool results a multiply and \
         shift too) per step; ops/SM/cycle at the rated clock; invalid: impossible figures, under 1 cycle or over \
         {} per SM per cycle; n/a: constant function, proven on the CPU, not timed)",
        bench::MAX_LANE_INSTRUCTIONS_PER_SM_PER_CYCLE
    );
    let _ = writeln!(out, "\nCUDA C++ baseline (cuda-baseline/forms.cu), Map kernels: {}", report.cxx.ptx);
    if !report.cxx.rows.is_empty() {
        let mut table =
            Table::new(["C++ form", "C++ kernel", "C++ Gelem/s", "Rust variant", "Rust Gelem/s", "C++ / Rust time"]);
        for r in &report.cxx.rows {
            table.row([
                r.form.to_string(),
                r.cxx_kernel.to_string(),
                format!("{:.1}", r.cxx_g_elements_per_s),
                r.rust_kernel.to_string(),
                format!("{:.1}", r.rust_g_elements_per_s),
                format!("{:.2}", r.cxx_over_rust_time),
            ]);
        }
        let _ = write!(out, "{}", table.render(markdown));
        let _ = writeln!(
            out,
            "\n(each form's Map kernel and its Rust variant's Map kernel, one element per thread per step, \
             over the same input in the same run; median device time, launch and wait included; outputs \
             checked on every input by the GPU check, not here)"
        );
    }
    if !report.cxx.per_element.is_empty() {
        let figures = |r: &TimingRow| match r.figures {
            Some(f) if r.status == TimingStatus::Valid => {
                [format!("{:.1}", f.latency_cycles), format!("{:.0}", f.throughput_gops)]
            }
            _ => [r.status.to_string(), String::new()],
        };
        let mut table = Table::new([
            "C++ kernel",
            "latency cycles",
            "throughput Gop/s",
            "Rust variant",
            "Rust latency cycles",
            "Rust throughput Gop/s",
        ]);
        for (cxx, map) in report.cxx.per_element.iter().zip(&report.cxx.rows) {
            let [latency, gops] = figures(cxx);
            let rust = report.per_element.iter().find(|r| r.variant == map.rust_kernel);
            let [rust_latency, rust_gops] = rust.map_or(["-".to_string(), "-".to_string()], figures);
            table.row([cxx.variant.to_string(), latency, gops, map.rust_kernel.to_string(), rust_latency, rust_gops]);
        }
        let _ = write!(out, "\n{}", table.render(markdown));
        let _ = writeln!(
            out,
            "\n(the C++ forms' timing kernels run the Rust variants' chain step, written in C++; an invalid C++ row is \
             reported, not an error: it is NVIDIA's compiler that folded the chain)"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitexact::bench::{BandwidthRow, Baseline, Figures};
    use bitexact::gpu::DeviceInfo;

    #[test]
    fn invalid_and_constant_rows_print_their_status_and_conversions_their_inexact_ratio() {
        let stream = |variant| shared::KernelName { variant, kind: shared::KernelKind::Stream }.to_string();
        let (exact_kernel, inexact_kernel) = (stream("unorm8_times3_int"), stream("unorm8_mul_recip"));
        let figures = Figures { latency_cycles: 18.1, throughput_gops: 2534.0, ops_per_sm_per_cycle: 9.7 };
        let report = BenchReport {
            device: DeviceInfo {
                ordinal: 0,
                name: "NVIDIA H200".into(),
                compute_capability: (9, 0),
                multiprocessors: 132,
                clock_khz: 1_980_000,
                memory_bytes: 1 << 30,
            },
            bytes: 1 << 20,
            reps: 1,
            bandwidth: vec![
                BandwidthRow {
                    kernel: exact_kernel.clone(),
                    bytes_moved: 5 << 20,
                    median_ms: 0.0025,
                    gb_per_s: 2097.2,
                    copy_gb_per_s: 2500.0,
                    percent_of_copy: 83.9,
                    checked: "all 1048576 outputs == CPU".into(),
                    inexact_baseline: Some(Baseline {
                        kernel: inexact_kernel.clone(),
                        median_ms: 0.002,
                        gb_per_s: 2621.4,
                        exact_over_inexact_time: 1.25,
                    }),
                },
                BandwidthRow {
                    kernel: inexact_kernel.clone(),
                    bytes_moved: 5 << 20,
                    median_ms: 0.002,
                    gb_per_s: 2621.4,
                    copy_gb_per_s: 2500.0,
                    percent_of_copy: 104.9,
                    checked: "all 1048576 outputs == CPU".into(),
                    inexact_baseline: None,
                },
            ],
            per_element: vec![
                TimingRow::measured("f16_is_nan", figures),
                TimingRow::measured("f32_is_finite", Figures { latency_cycles: -0.0, ..figures }),
                TimingRow::constant("e4m3_is_infinite"),
            ],
            cxx: bench::cxx::CxxRows {
                ptx: "sm_90 from NVRTC 12.9, default flags".into(),
                rows: vec![bench::cxx::MapRow {
                    form: "(float)x / 255.0f",
                    cxx_kernel: "cxx_unorm8_div",
                    rust_kernel: "unorm8_div_ieee",
                    elements: 1 << 20,
                    cxx_ms: 0.5,
                    rust_ms: 0.4,
                    cxx_g_elements_per_s: 2.1,
                    rust_g_elements_per_s: 2.6,
                    cxx_over_rust_time: 1.25,
                }],
                per_element: vec![TimingRow::measured(
                    "cxx_unorm8_div",
                    Figures { latency_cycles: 181.5, throughput_gops: 123.0, ops_per_sm_per_cycle: 0.5 },
                )],
            },
        };
        let config = BenchConfig { bytes: 1 << 20, reps: 1, ..BenchConfig::default() };
        for markdown in [false, true] {
            let text = text(&report, &config, markdown);
            let line = |name: &str| text.lines().find(|l| l.contains(name)).unwrap_or_else(|| panic!("{name}: {text}"));
            assert!(line("f16_is_nan").contains("18.1") && line("f16_is_nan").contains("2534"), "{text}");
            let invalid = line("f32_is_finite");
            assert!(invalid.contains("invalid: latency -0.00 cycles per step is under 1 cycle"), "{text}");
            assert!(!invalid.contains("600") && !invalid.contains("2534"), "{text}");
            assert!(line("e4m3_is_infinite").contains("n/a: constant function"), "{text}");
            // An exact conversion shows its time over the inexact baseline's, and which.
            let exact = line(&exact_kernel);
            assert!(exact.contains(&format!("1.25 (vs {inexact_kernel}, 0.002 ms)")), "{text}");
            let baseline = text
                .lines()
                .find(|l| l.trim_start_matches(['|', ' ']).starts_with(&inexact_kernel))
                .unwrap_or_else(|| panic!("no baseline row: {text}"));
            assert!(baseline.contains(" - ") && !baseline.contains("(vs"), "{text}");
            // The C++ rows: each form beside its Rust variant.
            let cxx = line("cxx_unorm8_div");
            assert!(cxx.contains("unorm8_div_ieee") && cxx.contains("2.1") && cxx.contains("1.25"), "{text}");
            assert!(text.contains("Map kernels: sm_90 from NVRTC 12.9"), "{text}");
            let timing =
                text.lines().find(|l| l.contains("cxx_unorm8_div") && l.contains("181.5")).expect("C++ timing row");
            assert!(timing.contains("unorm8_div_ieee") && timing.contains("123"), "{text}");
        }
    }
}
