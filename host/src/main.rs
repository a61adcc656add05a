//! `bitexact`: exhaustive verification, PTX and SASS reports, GPU runs and benchmarks.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod cli;

/// Bit-exact numeric-format primitives: one no_std implementation for CPU and GPU,
/// proven equal on every input.
///
/// With no subcommand, runs verify with its defaults; its options go after the word
/// verify (bitexact verify --only unorm8), as every command's go after its name.
#[derive(Parser)]
#[command(name = "bitexact", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Worker threads for the data-parallel work (verify, search, scan, normalize, the
    /// CPU side of the GPU checks). 0 or absent: RAYON_NUM_THREADS if set, else one per
    /// core. At most 4 per core: more is lowered to that, with a warning (thousands of
    /// threads only add start-up and switching time; 5000 took 14 s on a 32-byte file).
    #[arg(long, global = true, value_name = "N")]
    threads: Option<usize>,
    /// The instruction set of the CPU loops (scan, normalize, the conversions): the best
    /// this CPU has when absent (or BITEXACT_CPU_LEVEL's, which may lower it). A level
    /// the CPU lacks is an error. Every level gives the same bits.
    #[arg(long, global = true, value_enum, value_name = "LEVEL")]
    cpu_level: Option<cli::choices::CpuLevelArg>,
}

#[derive(Subcommand)]
enum Command {
    /// Check every variant on every input of its domain against the exact reference,
    /// and time it on the CPU (the default).
    Verify(cli::verify::VerifyArgs),
    /// Benchmark the kernels on a GPU: bandwidth against a same-run device copy, and
    /// per-variant latency and throughput.
    Bench(cli::bench::BenchArgs),
    /// Time scan and normalize end to end with --device cpu, gpu and auto on the same
    /// generated files (and the Pillow + NumPy route on the same image, when Python has
    /// them); the gpu rows are skipped, visibly, without a GPU.
    BenchFiles(cli::bench_files::BenchFilesArgs),
    /// Print the embedded PTX (what the GPU runs), or with --list its kernel names.
    Ptx(cli::ptx::PtxArgs),
    /// Report the SASS instructions each variant adds to its kernel, per architecture.
    ///
    /// Assembles the embedded PTX with ptxas for each architecture, disassembles it with
    /// cuobjdump, and subtracts each kernel's load/index/store skeleton; then finds the
    /// chain loop of each latency and throughput kernel and checks that it holds that
    /// work. Needs ptxas and cuobjdump: scripts/install-cuda-tools.sh installs them.
    Sass(cli::sass::SassArgs),
    /// Find, for each denominator 2^k - 1, the cheapest division-free scheme that is
    /// correctly rounded on every code of both conversions that divide by it, UNORMk and
    /// SNORM(k+1) → f32 (proven by exhaustion against the exact rational reference);
    /// --emit-rust writes the library's table.
    Search(cli::search::SearchArgs),
    /// Count NaN and ±inf per tensor in .npy / .npz / .safetensors files, directories and
    /// sharded checkpoints; exit 0 if all are finite, 1 if any is not, 2 on error, 3 if
    /// none is found but some tensor could not be scanned.
    Scan(cli::scan::ScanArgs),
    /// Convert an 8- or 16-bit image to an f32, f16 or bf16 tensor in [0, 1], each value
    /// correctly rounded (.npy or .safetensors).
    Normalize(cli::normalize::NormalizeArgs),
    /// Cast safetensors checkpoints to bf16, f16 or FP8 (scaled per tensor, per channel,
    /// per 128x128 block or MX, in vLLM's layouts) or NVFP4 (ModelOpt's or compressed-tensors'
    /// layout), each value rounded once from its own source value by the exact recipe; exit 0 when
    /// written, 1 when a value is refused (non-finite), 2 on error; nothing written
    /// unless whole.
    Cast(cli::cast::CastArgs),
}

/// `verify`'s options at their defaults, as its own parser gives them.
fn default_verify_args() -> cli::verify::VerifyArgs {
    #[derive(Parser)]
    struct Defaults {
        #[command(flatten)]
        args: cli::verify::VerifyArgs,
    }
    Defaults::parse_from(["bitexact verify"]).args
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return command_line_error(&error),
    };
    if let Err(error) = rayon::ThreadPoolBuilder::new().num_threads(worker_threads(cli.threads)).build_global() {
        crate::cli::say!("bitexact: cannot start the worker threads: {error}");
        return ExitCode::from(2);
    }
    if let Err(error) = bitexact::cpu::choose(cli.cpu_level.map(Into::into)) {
        crate::cli::say!("bitexact: {error}");
        return ExitCode::from(2);
    }
    // Ctrl-C, SIGTERM and the like: no destructor runs, so remove the temporary files of
    // outputs being written first; the outputs stay as they were, as on any failed run.
    if let Err(error) = cli::signals::remove_temporaries_on_termination() {
        cli::say!("bitexact: warning: cannot handle signals ({error}); an interrupted run may leave a .bitexact-*.tmp");
    }
    match cli.command {
        None => finish(cli::verify::run(&default_verify_args(), cli::verify::Invocation::Default)),
        Some(Command::Verify(args)) => finish(cli::verify::run(&args, cli::verify::Invocation::Named)),
        Some(Command::Bench(args)) => finish(cli::bench::run(&args)),
        Some(Command::BenchFiles(args)) => finish(cli::bench_files::run(&args)),
        Some(Command::Ptx(args)) => finish(cli::ptx::run(&args)),
        Some(Command::Sass(args)) => finish(cli::sass::run(&args)),
        Some(Command::Search(args)) => finish(cli::search::run(&args)),
        Some(Command::Scan(args)) => finish(cli::scan::run(&args)),
        Some(Command::Normalize(args)) => finish(cli::normalize::run(&args)),
        Some(Command::Cast(args)) => finish(cli::cast::run(&args)),
    }
}

/// clap's verdict on the command line: help and the version as clap prints them (stdout,
/// exit 0); an error as every other error, one line on stderr and exit 2.
fn command_line_error(error: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(error.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
        || matches!(error.kind(), ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand)
    {
        let _ = error.print();
        return ExitCode::from(if error.use_stderr() { 2 } else { 0 });
    }
    cli::say!("bitexact: {}", cli::error::one_line(&error.render().to_string()));
    ExitCode::from(2)
}

/// Most worker threads per core that `--threads` (or RAYON_NUM_THREADS) may ask for.
const MAX_THREADS_PER_CORE: usize = 4;

/// The pool size to build: `--threads`, else RAYON_NUM_THREADS, lowered to
/// [`MAX_THREADS_PER_CORE`] per core with a warning; 0 (rayon's default, one per core)
/// when neither asks for a number.
fn worker_threads(option: Option<usize>) -> usize {
    let from_env = || std::env::var("RAYON_NUM_THREADS").ok()?.parse().ok().map(|n| (n, "RAYON_NUM_THREADS="));
    let Some((asked, named)) = option.filter(|&n| n > 0).map(|n| (n, "--threads ")).or_else(from_env) else {
        return 0;
    };
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let most = cores * MAX_THREADS_PER_CORE;
    if asked > most {
        cli::say!(
            "bitexact: warning: {named}{asked} is more than {MAX_THREADS_PER_CORE} per core ({}): using {most}",
            bitexact::support::output::count_of(cores as u64, "core")
        );
        return most;
    }
    asked
}

/// A command's exit status; on an error, `bitexact: <its one line>` on stderr and
/// status 2 (whatever the command's error type: [`cli::error::CliError`], or text).
fn finish<E: std::fmt::Display>(result: Result<ExitCode, E>) -> ExitCode {
    result.unwrap_or_else(|error| {
        crate::cli::say!("bitexact: {error}");
        ExitCode::from(2)
    })
}
