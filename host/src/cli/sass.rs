//! `bitexact sass`: the SASS cost of each variant, per architecture; with `--cxx`, the
//! CUDA C++ baseline's forms beside their Rust variants.

use super::choices::OutputFormat;
use super::error::CliError;
use bitexact::cuda_tools::baseline::{self, CxxCost, Flags};
use bitexact::cuda_tools::cxx_gpu;
use bitexact::cuda_tools::listing;
use bitexact::cuda_tools::nvrtc::Nvrtc;
use bitexact::cuda_tools::sass::{self, SassCost};
use bitexact::cuda_tools::tools::{ARCHS, CudaTools, check_arch};
use bitexact::gpu::ptx::MODULES;
use bitexact::support::output::{self, Table};
use bitexact::verify::table::Variant;
use std::process::ExitCode;

/// How many work opcodes a table cell shows before eliding the rest (JSON has them all).
const OPCODES_SHOWN: usize = 12;

/// Options of `bitexact sass`.
#[derive(clap::Args)]
pub struct SassArgs {
    /// Architectures to assemble for, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = ARCHS.map(String::from))]
    pub arch: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
    #[arg(long, help = bitexact::verify::table::ONLY_HELP)]
    pub only: Option<String>,
    /// Also compile the CUDA C++ baseline (cuda-baseline/forms.cu) with NVRTC under
    /// default flags, --use_fast_math, --ftz=true, --prec-div=false and --fmad=false, and
    /// print its forms' work beside their Rust variants' (the forms whose variant
    /// --only selects). Needs NVRTC and the CUDA headers (scripts/install-cuda-tools.sh).
    #[arg(long)]
    pub cxx: bool,
    /// Instead of this project's kernels, list every kernel of this PTX file (a module
    /// of one's own, e.g. built by ptx-builder; - reads standard input) on each
    /// architecture: its instructions, its opcodes, and any float -> integer conversion
    /// its PTX did not ask for (a narrow store ptxas turned into one; exit status 1).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["cxx", "only", "emit_ptx"])]
    pub ptx: Option<std::path::PathBuf>,
    /// With --cxx: instead of the report, write the baseline's PTX for each --arch under
    /// each flag set into DIR (forms-<arch>-<flags>.ptx: default, use_fast_math, ftz,
    /// no_prec_div, no_fmad), for a GPU machine without NVRTC (the GPU check bundle).
    /// Needs NVRTC and the headers, not ptxas.
    #[arg(long, value_name = "DIR", requires = "cxx")]
    pub emit_ptx: Option<std::path::PathBuf>,
}

/// Assembles the embedded PTX for each architecture and prints, per variant, the
/// instructions its kernel has beyond its load/index/store skeleton, and whether its
/// timing kernels' chain loops hold that work.
pub fn run(args: &SassArgs) -> Result<ExitCode, CliError> {
    let archs: Vec<&str> = args.arch.iter().map(String::as_str).collect();
    if let Some(dir) = &args.emit_ptx {
        return emit_ptx(dir, &archs);
    }
    if let Some(path) = &args.ptx {
        // The file first: a missing or unreadable file is named whether or not ptxas is there.
        let ptx = read_ptx(path)?;
        return run_ptx(args, &CudaTools::find()?, &ptx, &archs);
    }
    let tools = CudaTools::find()?;
    let selected: Vec<&'static Variant> = bitexact::verify::table::selected(args.only.as_deref())?;
    if args.cxx {
        return run_cxx(args, &tools, &selected, &archs);
    }
    let costs = sass::cost_report(&tools, MODULES, &selected, &archs)?;
    let text = if args.format == OutputFormat::Json {
        output::json(&costs)
    } else {
        table(&costs).render(args.format == OutputFormat::Markdown) + LEGEND
    };
    output::write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `--ptx FILE`'s text (`-`: standard input), or a one-line error naming the file.
fn read_ptx(path: &std::path::Path) -> Result<PtxFile, CliError> {
    let read =
        if path.as_os_str() == "-" { std::io::read_to_string(std::io::stdin()) } else { std::fs::read_to_string(path) };
    let text = read.map_err(|e| CliError::Message(format!("--ptx {}: {e}", output::path_text(path))))?;
    Ok(PtxFile { name: output::path_text(path), text })
}

/// A PTX module read from `--ptx FILE`: its name as shown, and its text.
struct PtxFile {
    name: String,
    text: String,
}

/// `--ptx FILE`: every kernel of a PTX module of one's own, per architecture from the
/// module's `.target` on (the others skipped, in a line on standard error).
fn run_ptx(args: &SassArgs, tools: &CudaTools, ptx: &PtxFile, archs: &[&str]) -> Result<ExitCode, CliError> {
    for arch in archs {
        check_arch(arch)?;
    }
    let choice = listing::archs_for_module(&ptx.text, archs);
    if choice.kept.is_empty() {
        let reason = choice.reason();
        return Err(CliError::Message(format!("--ptx {}: none of --arch {}: {reason}", ptx.name, archs.join(","))));
    }
    if !choice.skipped.is_empty() {
        super::say!("{choice}");
    }
    let rows = listing::listing_report(tools, &ptx.text, &choice.kept)?;
    if rows.is_empty() {
        return Err(CliError::Message(format!("--ptx {}: no kernel (.entry) in the module", ptx.name)));
    }
    let text = if args.format == OutputFormat::Json {
        output::json(&rows)
    } else {
        let mut table = Table::new(["arch", "kernel", "instructions", "opcodes", "float->int not asked for"]);
        for row in &rows {
            let opcodes: Vec<String> = row
                .opcodes
                .iter()
                .take(OPCODES_SHOWN)
                .map(|(opcode, n)| if *n == 1 { opcode.clone() } else { format!("{opcode}×{n}") })
                .collect();
            let more = if row.opcodes.len() > OPCODES_SHOWN { " …" } else { "" };
            let unrequested = if row.unrequested_conversions.is_empty() {
                "none".to_string()
            } else {
                format!("! {}", row.unrequested_conversions.join("; "))
            };
            table.row(vec![
                row.arch.clone(),
                row.kernel.clone(),
                row.instructions.to_string(),
                opcodes.join(" ") + more,
                unrequested,
            ]);
        }
        table.render(args.format == OutputFormat::Markdown)
    };
    output::write_stdout(&text)?;
    let failed = rows.iter().any(|r| !r.unrequested_conversions.is_empty());
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// `--cxx --emit-ptx DIR`: the baseline's PTX files, one line per file written.
fn emit_ptx(dir: &std::path::Path, archs: &[&str]) -> Result<ExitCode, CliError> {
    let nvrtc = Nvrtc::find().map_err(|e| CliError::Message(e.to_string()))?;
    let mut written = String::new();
    for arch in archs {
        let ptx = cxx_gpu::compile(&nvrtc, arch).map_err(|e| CliError::Message(e.to_string()))?;
        for path in cxx_gpu::write(&ptx, dir).map_err(|e| CliError::Message(e.to_string()))? {
            written += &format!("{}\n", path.display());
        }
    }
    output::write_stdout(&written)?;
    Ok(ExitCode::SUCCESS)
}

/// `--cxx`: the Rust table, then the C++ column of the forms paired with the selected
/// variants (JSON: `{"rust": [...], "cxx": [...]}`).
fn run_cxx(
    args: &SassArgs,
    tools: &CudaTools,
    selected: &[&'static Variant],
    archs: &[&str],
) -> Result<ExitCode, CliError> {
    let nvrtc = Nvrtc::find().map_err(|e| CliError::Message(e.to_string()))?;
    let forms: Vec<baseline::Form> =
        baseline::FORMS.iter().filter(|f| selected.iter().any(|v| v.name == f.variant)).copied().collect();
    let costs = sass::cost_report(tools, MODULES, selected, archs)?;
    let cxx =
        baseline::cost_report(tools, &nvrtc, &forms, &costs, archs).map_err(|e| CliError::Message(e.to_string()))?;
    let text = if args.format == OutputFormat::Json {
        output::json(&serde_json::json!({ "rust": costs, "cxx": cxx }))
    } else {
        let markdown = args.format == OutputFormat::Markdown;
        let (major, minor) = nvrtc.version;
        table(&costs).render(markdown)
            + LEGEND
            + &format!("\nCUDA C++ baseline (NVRTC {major}.{minor}, cuda-baseline/forms.cu):\n")
            + &cxx_table(&cxx).render(markdown)
            + CXX_LEGEND
    };
    output::write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

const LEGEND: &str = "\nwork: instructions of the variant's kernel minus those of its load/index/store skeleton; \
               work SASS: the variant's opcodes minus the skeleton's, as multisets, in program order.\n\
               latency loop, throughput loop: instructions of the timing kernel's chain loop / applications \
               of the function it holds (steps it unrolls; 4 chains in the throughput kernel) = instructions \
               per application, loop control included; chain: whether both loops hold the work.\n\
               hardware: for a conversion the GPU has an instruction for, that instruction's kernel: its work \
               over the same skeleton and its work SASS; n/a on architectures older than the instruction's \
               PTX module.\n";

const CXX_LEGEND: &str = "\nRust: the paired variant's work (above). C++: the form's work under default flags \
               (its kernel's instructions minus its skeleton's), `≠` where it does other operations than the Rust \
               variant's work (mnemonics without modifiers, moves, memory and control flow, as multisets: equal \
               counts may still differ, and counts 1 apart with the same operations are the skeletons' spelling); \
               C++ work SASS: its opcodes beyond its skeleton's.\n\
               Each flag column: the work when compiled with that flag alone; `=` where the kernel's code is \
               the default's, `*` where the flag changes it, `!` where it changes the code of a form expected \
               exact (the flag may break it: only a GPU run can count the wrong results).\n";

fn cxx_table(costs: &[CxxCost]) -> Table {
    let mut headers = vec!["arch", "C++ form", "expect", "Rust variant", "Rust", "C++", "C++ work SASS"];
    headers.extend(Flags::ALL[1..].iter().map(|f| f.label()));
    let mut table = Table::new(headers);
    for cost in costs {
        let default = cost.default_work();
        let mut row = vec![
            cost.arch.clone(),
            cost.code.to_string(),
            cost.expect.name().to_string(),
            cost.variant.to_string(),
            cost.rust_work.as_ref().map_or("-".to_string(), |w| w.work_instructions.to_string()),
            format!("{}{}", default.work_instructions, if cost.differs_from_rust() { " ≠" } else { "" }),
            opcode_list(&default.work_opcodes, &default.skeleton_only_opcodes),
        ];
        for flagged in &cost.by_flags[1..] {
            row.push(match (flagged.code_changed, cost.expect.is_exact()) {
                (false, _) => "=".to_string(),
                (true, false) => format!("{} *", flagged.work.work_instructions),
                (true, true) => format!("{} *!", flagged.work.work_instructions),
            });
        }
        table.row(row);
    }
    table
}

fn table(costs: &[SassCost]) -> Table {
    let mut table = Table::new([
        "arch",
        "variant",
        "claim",
        "work",
        "work SASS",
        "kernel",
        "skeleton",
        "latency loop",
        "throughput loop",
        "chain",
        "hardware",
    ]);
    for cost in costs {
        let (work, chain) = (&cost.work, &cost.chain);
        table.row([
            cost.arch.clone(),
            cost.variant.to_string(),
            cost.claim.to_string(),
            work.work_instructions.to_string(),
            opcode_list(&work.work_opcodes, &work.skeleton_only_opcodes),
            work.variant_instructions.to_string(),
            work.skeleton_instructions.to_string(),
            per_application(chain.latency_loop_instructions, chain.latency_loop_applications),
            per_application(chain.throughput_loop_instructions, chain.throughput_loop_applications),
            chain.chain.to_string(),
            hardware_cell(cost.hardware.as_ref()),
        ]);
    }
    table
}

/// `cvt.rn.f16.f32: 1 F2FP.F16.F32.PACK_AB`, `cvt.rn.satfinite.e4m3x2.f32: n/a (sm_89)`,
/// or `-` for a variant without a hardware kernel.
fn hardware_cell(hardware: Option<&sass::HardwareCost>) -> String {
    match hardware {
        None => "-".to_string(),
        Some(h) => match &h.work {
            None => format!("{}: n/a ({})", h.instruction, h.target),
            Some(work) => format!(
                "{}: {} {}",
                h.instruction,
                work.work_instructions,
                opcode_list(&work.work_opcodes, &work.skeleton_only_opcodes)
            ),
        },
    }
}

/// `35/8 = 4.4`: a chain loop's instructions, its applications, and their ratio.
fn per_application(instructions: Option<usize>, applications: Option<usize>) -> String {
    match (instructions, applications) {
        (Some(i), Some(a)) if a > 0 => format!("{i}/{a} = {:.1}", i as f64 / a as f64),
        _ => "-".to_string(),
    }
}

/// `A B C … (+N more)`, then `; not: X Y` for skeleton opcodes the kernel lacks.
fn opcode_list(work: &[String], skeleton_only: &[String]) -> String {
    let mut text = work.iter().take(OPCODES_SHOWN).cloned().collect::<Vec<_>>().join(" ");
    if work.len() > OPCODES_SHOWN {
        text += &format!(" … (+{} more)", work.len() - OPCODES_SHOWN);
    }
    if !skeleton_only.is_empty() {
        text += &format!("; not: {}", skeleton_only.join(" "));
    }
    text
}
