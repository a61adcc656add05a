//! `bitexact cast`: safetensors checkpoints (and `.npy` / `.npz` files) to bfloat16, binary16, FP8 (scaled per
//! tensor, per channel, per block or MX, or not) or NVFP4, every value rounded once from its own source value by
//! the exact recipe (or as the named producer's recipe computes it).

use super::choices::{
    NonFiniteArg, RecipeArg, RoundingArg, ScaleArg, ScaleFormatArg, ScaleLayoutArg, SummaryFormat, TargetArg,
};
use super::error::CliError;
use bitexact::files;
use bitexact::files::cast::convert::{CastTarget, Target};
use bitexact::files::cast::select::Patterns;
use bitexact::files::cast::{CastOptions, CastRecipe, CastReport, ScaleFormat, ScaleLayout, ScaleMode};
use bitexact::support::output;
use shared::fp8_scale::Rounding;
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `bitexact cast`.
#[derive(clap::Args)]
pub struct CastArgs {
    /// The checkpoint: .safetensors files, a sharded checkpoint's
    /// model.safetensors.index.json, or its directory; or .npy / .npz files (a .npy's
    /// array is named after the file, .npz members keep their names).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Output: a new folder (one file per input file, same names, the index rewritten,
    /// config.json carried over), or for one input file a new .safetensors file.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Target format. bf16/f16: every f32, f64, bf16 and f16 tensor. e4m3/e5m2 and
    /// nvfp4: those of 2+ dimensions but the embedding and the output head (a name
    /// component embed_tokens, lm_head, wte, wpe, word_embeddings, embed_in or embed_out);
    /// nvfp4 takes 2-D f32, bf16 and f16 tensors whose rows are a multiple of 16 long.
    #[arg(long, value_enum)]
    pub to: TargetArg,
    /// Cast only the tensors whose name matches this regular expression (anywhere in
    /// the name), in place of the default choice.
    #[arg(long, value_name = "REGEX")]
    pub only: Option<String>,
    /// Do not cast the tensors whose name matches this regular expression.
    #[arg(long, value_name = "REGEX")]
    pub skip: Option<String>,
    /// FP8 only: a scale per tensor (the default), per channel (row), per 128x128 block,
    /// per 32 values of a row (MXFP8), or none.
    #[arg(long, value_enum)]
    pub scale: Option<ScaleArg>,
    /// FP8 with --scale per-channel, block or mx, and nvfp4: whose checkpoint layout
    /// (tensor names and config.json's quantization_config). nvfp4: modelopt with the
    /// exact or modelopt recipe, compressed-tensors with its own (the default follows
    /// --recipe; modelopt without one).
    #[arg(long, value_enum)]
    pub layout: Option<ScaleLayoutArg>,
    /// FP8 with --scale per-channel, block or mx, and nvfp4: the exact recipe (the
    /// default; for nvfp4 with --layout compressed-tensors, compressed-tensors'), or the
    /// named producer's, modelled on its source.
    #[arg(long, value_enum)]
    pub recipe: Option<RecipeArg>,
    /// FP8 with --scale per-channel or block: the scales any f32 (the default), powers of
    /// two (ue8m0, DeepSeek-V3.1's scale_fmt; the exact recipe or DeepGEMM's), or bfloat16 (bf16, kept
    /// by a bf16 model that transformers loads; the exact recipe).
    #[arg(long, value_enum)]
    pub scale_format: Option<ScaleFormatArg>,
    /// FP8 with --scale per-tensor only: how x·s is rounded.
    #[arg(long, value_enum)]
    pub rounding: Option<RoundingArg>,
    /// FP8 with --scale none only: the standard conversion (E4M3 overflow gives NaN,
    /// E5M2 gives infinity) instead of saturating at ±max.
    #[arg(long)]
    pub no_saturate: bool,
    /// NaN and infinite inputs, and finite ones past the target's range.
    #[arg(long, value_enum, default_value_t = NonFiniteArg::Refuse)]
    pub nonfinite: NonFiniteArg,
    /// List what would be done (tensor, from, to, scale or not) and write nothing; no
    /// data is read, so values are not checked.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not sync the .safetensors files to the disk before putting them in place: faster,
    /// and still whole or absent after an interrupted run, but not safe from a power
    /// loss or an OS crash.
    #[arg(long)]
    pub no_sync: bool,
    /// Summary format: table or json.
    #[arg(long, value_enum, default_value_t = SummaryFormat::Table)]
    pub format: SummaryFormat,
}

/// Exit status of a refused input (a non-finite or out-of-range value).
const EXIT_REFUSED: u8 = 1;

/// Exit 0 once the output is in place (or the dry run listed), 1 when a value is
/// refused (nothing written), `Err` (exit 2) on any other error (nothing written).
pub fn run(args: &CastArgs) -> Result<ExitCode, CliError> {
    let options = options(args)?;
    let report = match files::cast(&args.inputs, &args.output, &options) {
        Ok(report) => report,
        Err(error) if error.is_refusal() => {
            crate::cli::say!("bitexact: {error}");
            return Ok(ExitCode::from(EXIT_REFUSED));
        }
        Err(error) => return Err(error.into()),
    };
    for warning in &report.warnings {
        crate::cli::say!("bitexact: warning: {warning}");
    }
    let text = match args.format {
        SummaryFormat::Json => output::json(&report),
        SummaryFormat::Table => summary(&report),
    };
    let written = |error| CliError::OutputWritten { output: args.output.clone(), error };
    if report.dry_run {
        output::write_stdout(&text)?;
    } else {
        output::write_stdout(&text).map_err(written)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The library's options from the arguments; options that do not apply to the target
/// are refused.
fn options(args: &CastArgs) -> Result<CastOptions, CliError> {
    let regex = |option: &str, pattern: &Option<String>| {
        pattern
            .as_deref()
            .map(regex::Regex::new)
            .transpose()
            .map_err(|e| CliError::Usage(format!("{option}: {}", e.to_string().replace('\n', " "))))
    };
    let defaults = CastOptions {
        nonfinite: args.nonfinite.into(),
        patterns: Patterns { only: regex("--only", &args.only)?, skip: regex("--skip", &args.skip)? },
        dry_run: args.dry_run,
        progress_bar: true,
        sync: !args.no_sync,
        ..CastOptions::default()
    };
    let to = match CastTarget::from(args.to) {
        CastTarget::Nvfp4 => return nvfp4_options(args, defaults),
        CastTarget::Element(target) => target,
    };
    if args.layout == Some(ScaleLayoutArg::Modelopt) || args.recipe == Some(RecipeArg::Modelopt) {
        return Err(CliError::Usage("--layout modelopt and --recipe modelopt write NVFP4: --to nvfp4".into()));
    }
    let fp8 = to.fp8().is_some();
    let fp8_only = args.scale.is_some() || args.rounding.is_some() || args.no_saturate || args.scale_format.is_some();
    if !fp8 && (fp8_only || args.layout.is_some() || args.recipe.is_some()) {
        return Err(CliError::Usage(format!(
            "--scale, --layout, --recipe, --scale-format, --rounding and --no-saturate apply to FP8 targets, not --to {}",
            to.name()
        )));
    }
    let scale = args.scale.map_or(ScaleMode::PerTensor, ScaleMode::from);
    if args.recipe == Some(RecipeArg::Deepgemm) && (scale != ScaleMode::Block || to != Target::E4m3) {
        return Err(CliError::Usage("--recipe deepgemm makes E4M3 in 128x128 blocks: --to e4m3 --scale block".into()));
    }
    if args.recipe == Some(RecipeArg::CompressedTensors) && (scale.blocks().is_none() || to != Target::E4m3) {
        return Err(CliError::Usage(
            "--recipe compressed-tensors is modelled for its FP8 (E4M3 per channel, block or mx) and NVFP4 scales: --to e4m3 --scale per-channel, block or mx, or --to nvfp4"
                .into(),
        ));
    }
    if args.recipe == Some(RecipeArg::CompressedTensors) && args.layout == Some(ScaleLayoutArg::Deepseek) {
        return Err(CliError::Usage(
            "--recipe compressed-tensors writes compressed-tensors' layout (its scales in the weights' dtype): drop --layout deepseek"
                .into(),
        ));
    }
    if matches!(args.recipe, Some(RecipeArg::Ocp | RecipeArg::Rceil)) && (scale != ScaleMode::Mx || to != Target::E4m3)
    {
        return Err(CliError::Usage("--recipe ocp and rceil are MXFP8's scale rules: --to e4m3 --scale mx".into()));
    }
    if args.scale_format.is_some() && !matches!(scale, ScaleMode::PerChannel | ScaleMode::Block) {
        return Err(CliError::Usage(
            "--scale-format applies to --scale per-channel or block (MX scales are E8M0 already)".into(),
        ));
    }
    if args.scale_format.is_some() && args.recipe == Some(RecipeArg::CompressedTensors) {
        return Err(CliError::Usage(
            "--recipe compressed-tensors stores its scales in the weights' dtype (BF16 for bf16 weights): drop --scale-format"
                .into(),
        ));
    }
    if args.scale_format == Some(ScaleFormatArg::Bf16)
        && (args.recipe.is_some_and(|r| r != RecipeArg::Exact) || args.layout == Some(ScaleLayoutArg::Deepseek))
    {
        return Err(CliError::Usage(
            "--scale-format bf16 is the exact recipe's, in compressed-tensors' layout: drop --recipe and --layout deepseek"
                .into(),
        ));
    }
    if scale == ScaleMode::Mx && to != Target::E4m3 {
        return Err(CliError::Usage("--scale mx writes MXFP8 with E4M3 elements: --to e4m3".into()));
    }
    if scale.blocks().is_none() && args.recipe.is_some() {
        return Err(CliError::Usage("--recipe applies to --scale per-channel, block or mx".into()));
    }
    if scale.blocks().is_none() && args.layout.is_some() {
        return Err(CliError::Usage("--layout applies to --scale per-channel, block or mx".into()));
    }
    if scale.blocks().is_some() && args.rounding.is_some() {
        return Err(CliError::Usage(
            "--rounding applies to --scale per-tensor: per-channel, block and mx scales round the exact x/d once"
                .into(),
        ));
    }
    if args.layout == Some(ScaleLayoutArg::Deepseek) && (scale != ScaleMode::Block || to != Target::E4m3) {
        return Err(CliError::Usage("--layout deepseek holds E4M3 in 128x128 blocks: --to e4m3 --scale block".into()));
    }
    if scale != ScaleMode::None && args.no_saturate {
        return Err(CliError::Usage("--no-saturate applies to --scale none (a scaled cast always saturates)".into()));
    }
    if scale == ScaleMode::None && args.rounding.is_some() {
        return Err(CliError::Usage("--rounding applies to a scaled cast, not --scale none".into()));
    }
    Ok(CastOptions {
        to: to.into(),
        scale,
        layout: args.layout.map_or(ScaleLayout::CompressedTensors, ScaleLayout::from),
        recipe: args.recipe.map_or(CastRecipe::Exact, CastRecipe::from),
        scale_format: args.scale_format.map_or(ScaleFormat::F32, ScaleFormat::from),
        rounding: args.rounding.map_or(Rounding::Once, Rounding::from),
        saturate: !args.no_saturate,
        ..defaults
    })
}

/// The options of `--to nvfp4`: `--scale`, `--rounding` and `--no-saturate` refused (NVFP4
/// has its own scales and always saturates); the layout and the recipe each follow the
/// other where one is given (compressed-tensors' layout takes its recipe; the exact and
/// ModelOpt's recipes write ModelOpt's layout), ModelOpt's layout by the exact recipe
/// where neither is.
fn nvfp4_options(args: &CastArgs, defaults: CastOptions) -> Result<CastOptions, CliError> {
    if args.scale.is_some() || args.rounding.is_some() || args.no_saturate || args.scale_format.is_some() {
        return Err(CliError::Usage(
            "--scale, --scale-format, --rounding and --no-saturate apply to FP8 targets: nvfp4 has its own scales (E4M3 per 16 values of a row, F32 per tensor) and saturates"
                .into(),
        ));
    }
    let layout = match (args.layout, args.recipe) {
        (Some(layout), _) => ScaleLayout::from(layout),
        (None, Some(RecipeArg::CompressedTensors)) => ScaleLayout::CompressedTensors,
        (None, _) => ScaleLayout::ModelOpt,
    };
    let recipe = match (args.recipe, layout) {
        (Some(recipe), _) => CastRecipe::from(recipe),
        (None, ScaleLayout::CompressedTensors) => CastRecipe::CompressedTensors,
        (None, _) => CastRecipe::Exact,
    };
    Ok(CastOptions { to: CastTarget::Nvfp4, layout, recipe, ..defaults })
}

/// One line per tensor (file, name, from → to, scale or why copied), then a total.
fn summary(report: &CastReport) -> String {
    let mut text = String::new();
    let mut cast = 0;
    for tensor in &report.tensors {
        let what = match tensor.decision.reason() {
            None => {
                cast += 1;
                let shape = tensor.scale_shape.as_ref().map_or(String::new(), |shape| format!(" {shape:?}"));
                let scale = match (&tensor.scale_tensor, tensor.dequant_scale, tensor.dequant_scales) {
                    (Some(name), Some(value), _) => format!(", scale {} = {value:e}", output::excerpt(name)),
                    (Some(name), _, Some(d)) => {
                        format!(", scales {}{shape} in [{:e}, {:e}]", output::excerpt(name), d.min, d.max)
                    }
                    (Some(name), ..) => format!(", scale {}{shape}", output::excerpt(name)),
                    _ => String::new(),
                };
                // NVFP4: where its codes are stored when renamed, and its tensor scale.
                let packed =
                    tensor.packed_tensor.as_ref().map_or(String::new(), |p| format!(" as {}", output::excerpt(p)));
                let global = match (&tensor.global_scale_tensor, tensor.global_scale) {
                    (Some(name), Some(value)) => format!(", tensor scale {} = {value:e}", output::excerpt(name)),
                    (Some(name), None) => format!(", tensor scale {}", output::excerpt(name)),
                    _ => String::new(),
                };
                format!("{} -> {}{packed}{scale}{global}", output::excerpt(&tensor.from), tensor.to)
            }
            Some(reason) => format!("{} copied ({reason})", output::excerpt(&tensor.from)),
        };
        // Names from files are escaped (a name may hold escape codes or newlines).
        let (file, name) = (output::escape(&tensor.file), output::excerpt(&tensor.name));
        text.push_str(&format!("{file} {name} {:?}: {what}\n", tensor.shape));
    }
    let verb = if report.dry_run { "would cast" } else { "cast" };
    text.push_str(&format!(
        "{}: {verb} {cast} of {} tensors to {}{}\n",
        output::path_text(report.output.as_ref()),
        report.tensors.len(),
        report.to.name(),
        if report.dry_run { " (dry run: nothing read or written)" } else { "" }
    ));
    text
}
