//! `bitexact sass`: the SASS cost of each variant, per architecture.

use super::choices::OutputFormat;
use super::error::CliError;
use host::cuda_tools::sass::{self, SassCost};
use host::cuda_tools::tools::{ARCHS, CudaTools};
use host::gpu::ptx::MODULES;
use host::support::output::{self, Table};
use host::verify::table::Variant;
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
    #[arg(long, help = host::verify::table::ONLY_HELP)]
    pub only: Option<String>,
}

/// Assembles the embedded PTX for each architecture and prints, per variant, the
/// instructions its kernel has beyond its load/index/store skeleton, and whether its
/// timing kernels' chain loops hold that work.
pub fn run(args: &SassArgs) -> Result<ExitCode, CliError> {
    let selected: Vec<&'static Variant> = host::verify::table::selected(args.only.as_deref())?;
    let tools = CudaTools::find()?;
    let archs: Vec<&str> = args.arch.iter().map(String::as_str).collect();
    let costs = sass::cost_report(&tools, MODULES, &selected, &archs)?;
    let text = if args.format == OutputFormat::Json {
        output::json(&costs)
    } else {
        table(&costs).render(args.format == OutputFormat::Markdown)
            + "\nwork: instructions of the variant's kernel minus those of its load/index/store skeleton; \
               work SASS: the variant's opcodes minus the skeleton's, as multisets, in program order.\n\
               latency loop, throughput loop: instructions of the timing kernel's chain loop / applications \
               of the function it holds (steps it unrolls; 4 chains in the throughput kernel) = instructions \
               per application, loop control included; chain: whether both loops hold the work.\n\
               hardware: for a conversion the GPU has an instruction for, that instruction's kernel: its work \
               over the same skeleton and its work SASS; n/a on architectures older than the instruction's \
               PTX module.\n"
    };
    output::write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
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
