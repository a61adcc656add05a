//! `bitexact bench-files`: `scan` and `normalize` timed end to end, as a user runs them
//! (this very binary, started once per run), with `--device cpu`, `gpu` and `auto` on
//! the same generated files, in the page cache: a binary16 `.npy` and a photo-like RGB
//! PNG. Prints the best time of each, its ratio to the CPU's, what `auto` picked, where
//! `normalize`'s time went (its `--verbose` phases), and the Pillow + NumPy route (and
//! Pillow + PyTorch when PyTorch has CUDA) on the same image: its time, its ratio to
//! ours, and how many of its values differ from ours.
//!
//! Without a GPU the `gpu` rows say `skipped: <why>` and the rest is still timed; with
//! `REQUIRE_GPU=1` that skip is a failure (exit 1). Without Python, NumPy and Pillow the
//! Python route is skipped the same visible way.

use super::error::CliError;
use bitexact::files::output::temporaries::PendingTemporary;
use bitexact::files::write;
use bitexact::support::output::Table;
use bitexact::support::skip::required;
use rayon::prelude::*;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// Options of `bitexact bench-files`.
#[derive(clap::Args)]
pub struct BenchFilesArgs {
    /// Size of the binary16 .npy that scan reads, in MiB.
    #[arg(long, default_value_t = 1024)]
    mib: u64,
    /// Side of the square RGB PNG (zlib level 1) that normalize converts, in pixels.
    #[arg(long, default_value_t = 4096)]
    side: u32,
    /// Runs of each command; the fastest counts.
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Folder to write the files in (in a temporary folder, removed at the end);
    /// default: the system's temporary folder.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Python with NumPy and Pillow (and PyTorch, optional) for the Python route.
    #[arg(long, default_value = "python3")]
    python: String,
}

/// One command's best run.
struct Timed {
    seconds: f64,
    /// The `device` its JSON summary names (for `auto`: the pick and why).
    device: String,
    /// Its stderr (`normalize --verbose`'s phases).
    stderr: String,
}

/// The fastest of `reps` runs of this binary with `args` (each must exit 0 or 1), or why
/// it could not run: the first line of its stderr.
fn time_runs(args: &[&str], reps: usize) -> Result<Timed, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let mut best: Option<Timed> = None;
    for _ in 0..reps.max(1) {
        let start = Instant::now();
        let output =
            Command::new(&exe).args(args).output().map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
        let seconds = start.elapsed().as_secs_f64();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        if !matches!(output.status.code(), Some(0 | 1)) {
            let line = stderr.lines().find(|l| l.starts_with("bitexact:")).unwrap_or("no message");
            return Err(line.trim_start_matches("bitexact: ").to_string());
        }
        let summary: serde_json::Value =
            serde_json::from_slice(&output.stdout).map_err(|e| format!("unreadable JSON summary: {e}"))?;
        let device = summary["device"].as_str().unwrap_or("?").to_string();
        if best.as_ref().is_none_or(|b| seconds < b.seconds) {
            best = Some(Timed { seconds, device, stderr });
        }
    }
    best.ok_or_else(|| "no run".into())
}

/// A fixed scramble of `i`.
fn scrambled(i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29)
}

/// A `.npy` of `mib` MiB of finite binary16 values (exponent field below all-ones).
fn write_halves(path: &Path, mib: u64) -> std::io::Result<()> {
    let elements = mib << 19;
    let mut data = vec![0u8; (elements * 2) as usize];
    data.par_chunks_mut(2).enumerate().for_each(|(i, e)| {
        e.copy_from_slice(&((scrambled(i as u64) as u16) & 0xBFBF).to_le_bytes());
    });
    let mut file = std::fs::File::create(path)?;
    file.write_all(&write::npy_header("<f2", &[elements]))?;
    file.write_all(&data)
}

/// A `side`×`side` RGB PNG, zlib level 1 with adaptive filters (as Pillow's
/// `compress_level=1` writes): smooth gradients plus noise, like a photograph.
fn write_photo(path: &Path, side: u32) -> Result<(), image::ImageError> {
    use image::ImageEncoder;
    use image::codecs::png::{CompressionType, FilterType, PngEncoder};
    let s = u64::from(side).max(1);
    let mut pixels = vec![0u8; (s * s * 3) as usize];
    pixels.par_chunks_mut(3).enumerate().for_each(|(i, rgb)| {
        let (y, x) = (i as u64 / s, i as u64 % s);
        let noise = scrambled(i as u64);
        let base = [x * 255 / s, y * 255 / s, (x + y) * 255 / (2 * s)];
        for (c, (out, base)) in rgb.iter_mut().zip(base).enumerate() {
            let n = ((noise >> (8 * c)) & 0xFF) as i64 * 41 / 256 - 20;
            *out = (base as i64 + n).clamp(0, 255) as u8;
        }
    });
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    PngEncoder::new_with_quality(file, CompressionType::Level(1), FilterType::Adaptive).write_image(
        &pixels,
        side,
        side,
        image::ExtendedColorType::Rgb8,
    )
}

/// The Python route, run by `python`: decode `png` with Pillow, convert (PyTorch on CUDA
/// when it has one, as `torch.from_numpy(a).cuda().float().div(255).cpu().numpy()`; and
/// always NumPy, `a.astype(np.float32) / np.float32(255)`), `np.save`; the best of
/// `reps` runs of each, and how many values differ from ours (`ours`). One JSON line.
const PYTHON_ROUTE: &str = r#"
import json, sys, time
import numpy as np
import PIL
from PIL import Image
png, ours, out, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
routes = {"pillow+numpy": lambda a: a.astype(np.float32) / np.float32(255)}
try:
    import torch
    if torch.cuda.is_available():
        routes["pillow+torch(cuda)"] = lambda a: torch.from_numpy(a).cuda().float().div(255).cpu().numpy()
except Exception:
    pass
ours = np.load(ours).view(np.uint32)
result = {"numpy": np.__version__, "pillow": PIL.__version__, "routes": []}
for name, convert in routes.items():
    best = None
    for _ in range(reps):
        t0 = time.perf_counter(); a = np.asarray(Image.open(png))
        t1 = time.perf_counter(); f = convert(a)
        t2 = time.perf_counter(); np.save(out, f)
        t3 = time.perf_counter()
        if best is None or t3 - t0 < best[3]:
            best = (t1 - t0, t2 - t1, t3 - t2, t3 - t0)
    mismatches = int(np.count_nonzero(f.reshape(-1).view(np.uint32) != ours.reshape(-1)))
    result["routes"].append({"name": name, "decode": best[0], "convert": best[1], "save": best[2],
                             "total": best[3], "mismatches": mismatches, "values": int(f.size)})
print(json.dumps(result))
"#;

/// Runs the benchmark and prints it. Exit 1 when `REQUIRE_GPU=1` and the GPU rows were
/// skipped, or when a GPU or auto output differs from the CPU's.
pub fn run(args: &BenchFilesArgs) -> Result<ExitCode, CliError> {
    if args.mib == 0 || args.side == 0 || args.reps == 0 {
        return Err(CliError::Usage("--mib, --side and --reps must be at least 1".into()));
    }
    let parent = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    // Its files are large (--mib): an interrupted run removes them too.
    let (_listed, dir) = PendingTemporary::create(
        || tempfile::Builder::new().prefix("bitexact-bench-files-").tempdir_in(&parent),
        |t| t.path(),
    )
    .map_err(|error| CliError::WriteFile { path: parent.clone(), error })?;
    let (npy, png) = (dir.path().join("halves.npy"), dir.path().join("photo.png"));
    write_halves(&npy, args.mib).map_err(|error| CliError::WriteFile { path: npy.clone(), error })?;
    write_photo(&png, args.side).map_err(|e| CliError::Message(format!("{}: {e}", png.display())))?;
    let path = |p: &Path| p.display().to_string();
    let png_mb = std::fs::metadata(&png).map_or(0, |m| m.len()) as f64 / 1e6;
    println!(
        "bench-files: scan of a {} MiB binary16 .npy, normalize of a {side}×{side} RGB PNG ({png_mb:.1} MB, zlib level 1) to .npy; \
         both files in the page cache; best of {} runs of this binary each, wall time",
        args.mib,
        args.reps,
        side = args.side
    );

    let scan_bytes = (args.mib << 20) as f64;
    let samples = u64::from(args.side).pow(2) * 3;
    let mut table = Table::new(["command", "device", "seconds", "GB/s", "vs cpu", "ran on"]);
    let mut gpu_skipped = None;
    let mut differs = Vec::new();
    let mut phases = Vec::new();
    let mut ours = None;
    for (command, bytes) in [("scan", scan_bytes), ("normalize", samples as f64)] {
        let mut cpu_seconds = None;
        for device in ["cpu", "gpu", "auto"] {
            let out = dir.path().join(format!("out-{device}.npy"));
            let (npy, png, out) = (path(&npy), path(&png), path(&out));
            let argv: Vec<&str> = match command {
                "scan" => vec!["scan", "--device", device, "--format", "json", &npy],
                _ => {
                    vec!["normalize", "--device", device, "--format", "json", "--verbose", "--force", &png, "-o", &out]
                }
            };
            match time_runs(&argv, args.reps) {
                Ok(timed) => {
                    let cpu = *cpu_seconds.get_or_insert(timed.seconds);
                    if (command, device) == ("normalize", "auto") {
                        ours = Some(timed.seconds);
                    }
                    table.row([
                        command.to_string(),
                        device.to_string(),
                        format!("{:.3}", timed.seconds),
                        format!("{:.2}", bytes / timed.seconds / 1e9),
                        format!("{:.2}x", cpu / timed.seconds),
                        timed.device.clone(),
                    ]);
                    if command == "normalize" {
                        let lines = timed.stderr.lines().filter(|l| l.starts_with("bitexact: normalize:"));
                        phases
                            .push(format!("  {device}:\n{}", lines.map(|l| format!("    {l}\n")).collect::<String>()));
                        if device != "cpu"
                            && std::fs::read(&out).ok() != std::fs::read(dir.path().join("out-cpu.npy")).ok()
                        {
                            differs.push(format!("normalize --device {device}"));
                        }
                    }
                }
                Err(why) => {
                    table.row(
                        [command, device, "-", "-", "-"]
                            .map(String::from)
                            .into_iter()
                            .chain([format!("skipped: {why}")]),
                    );
                    if device == "gpu" {
                        gpu_skipped.get_or_insert(why);
                    }
                }
            }
        }
    }
    println!("\n{}", table.render(false));
    println!(
        "GB/s: bytes of input (the .npy's data; the image's samples) per second. vs cpu: > 1 is faster than --device cpu."
    );
    println!("\nnormalize --verbose phases of the best run (convert overlaps write):\n{}", phases.concat());

    let python = python_route(args, &png, &dir.path().join("out-cpu.npy"), &dir.path().join("python.npy"));
    match python {
        Ok(report) => {
            println!(
                "python route on the same image (numpy {}, Pillow {}; np.save does not fsync, ours does):",
                report.numpy, report.pillow
            );
            for route in report.routes {
                println!(
                    "  {:<20} decode {:>7.1} ms, convert {:>7.1} ms, save {:>7.1} ms, total {:.3} s; ours (auto) {}: {}; \
                     values that differ from ours: {} of {}",
                    route.name,
                    route.decode * 1e3,
                    route.convert * 1e3,
                    route.save * 1e3,
                    route.total,
                    ours.map_or("-".into(), |s| format!("{s:.3} s")),
                    ours.map_or("-".into(), |s| format!("{:.2}x its speed", route.total / s)),
                    route.mismatches,
                    route.values,
                );
            }
        }
        Err(why) => println!("python route: skipped: {why}"),
    }
    if let Some(why) = &gpu_skipped {
        println!("skipped: gpu rows: {why}");
    }
    let mut failed = false;
    if !differs.is_empty() {
        crate::cli::say!("bitexact: bench-files: output differs from --device cpu's: {}", differs.join(", "));
        failed = true;
    }
    if gpu_skipped.is_some() && required("REQUIRE_GPU") {
        crate::cli::say!("bitexact: bench-files: REQUIRE_GPU is set and the gpu rows were skipped");
        failed = true;
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// One Python route's best run.
#[derive(serde::Deserialize)]
struct Route {
    name: String,
    decode: f64,
    convert: f64,
    save: f64,
    total: f64,
    mismatches: u64,
    values: u64,
}

/// What [`PYTHON_ROUTE`] prints.
#[derive(serde::Deserialize)]
struct PythonReport {
    numpy: String,
    pillow: String,
    routes: Vec<Route>,
}

/// The Python route ([`PYTHON_ROUTE`]), or why it could not run.
fn python_route(args: &BenchFilesArgs, png: &Path, ours: &Path, out: &Path) -> Result<PythonReport, String> {
    if !ours.exists() {
        return Err("no output of ours to compare with".into());
    }
    let output = Command::new(&args.python)
        .args(["-c", PYTHON_ROUTE])
        .arg(png)
        .arg(ours)
        .arg(out)
        .arg(args.reps.to_string())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", args.python))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!("{}: {}", args.python, stderr.lines().last().unwrap_or("failed")));
    }
    serde_json::from_slice(&output.stdout).map_err(|e| format!("unreadable output of {}: {e}", args.python))
}
