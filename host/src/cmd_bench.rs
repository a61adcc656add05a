//! `bitexact bench`: GPU bandwidth and per-element timing.

use host::bench::{self, BenchConfig};
use host::gpu::Gpu;
use host::report::{self, Format, Table};
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

/// Options of `bitexact bench`.
#[derive(clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Input size of each throughput kernel, in MiB (the targets are stated for >= 1024).
    #[arg(long, default_value_t = 1024)]
    mib: usize,
    /// Timed repetitions per figure; the median is reported.
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// Only variants whose name contains this.
    #[arg(long)]
    only: Option<String>,
    /// Also write the JSON report to this file (whatever --format says).
    #[arg(long, value_name = "FILE")]
    json_out: Option<std::path::PathBuf>,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    device: usize,
}

pub fn run(args: &Args) -> Result<ExitCode, String> {
    if args.mib == 0 || args.reps == 0 {
        return Err("--mib and --reps must be at least 1".into());
    }
    let gpu = Gpu::open(args.device).map_err(|e| format!("bench needs a GPU: {e}"))?;
    let config = BenchConfig {
        bytes: args.mib.checked_mul(1 << 20).ok_or("--mib is too large")?,
        reps: args.reps,
        only: args.only.clone(),
        ..BenchConfig::default()
    };
    let show_progress = std::io::stderr().is_terminal() || args.format != Format::Json;
    let progress = |what: &str| {
        if show_progress {
            let _ = writeln!(std::io::stderr(), "bench: {what}");
        }
    };
    let report = bench::run(&gpu, &config, &progress).map_err(|e| e.to_string())?;
    if let Some(path) = &args.json_out {
        std::fs::write(path, report::json(&report)).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if args.format == Format::Json {
        report::write_stdout(&report::json(&report))?;
        return Ok(ExitCode::SUCCESS);
    }
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
    let markdown = args.format == Format::Markdown;
    let mut table = Table::new(["kernel", "bytes moved", "ms", "GB/s", "copy GB/s", "% of copy", "checked"]);
    for r in &report.bandwidth {
        table.row([
            r.kernel.clone(),
            r.bytes_moved.to_string(),
            format!("{:.3}", r.median_ms),
            format!("{:.0}", r.gb_per_s),
            format!("{:.0}", r.copy_gb_per_s),
            format!("{:.1}", r.percent_of_copy),
            r.checked.clone(),
        ]);
    }
    let _ = write!(out, "{}", table.render(markdown));
    let _ = writeln!(
        out,
        "\n(bytes moved = read + written; copy = device-to-device copy moving the same bytes, same run)\n"
    );
    let mut table = Table::new(["variant", "latency cycles", "throughput Gop/s", "ops/SM/cycle"]);
    for r in &report.per_element {
        table.row([
            r.variant.to_string(),
            format!("{:.1}", r.latency_cycles),
            format!("{:.0}", r.throughput_gops),
            format!("{:.1}", r.ops_per_sm_per_cycle),
        ]);
    }
    let _ = write!(out, "{}", table.render(markdown));
    let _ = writeln!(
        out,
        "\n(latency: dependent chain, one application + one XOR per step; ops/SM/cycle at the rated clock)"
    );
    report::write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}
