//! The cast job: one library call, [`cast()`] (safetensors checkpoints, `.npy` and
//! `.npz` files → bfloat16,
//! binary16, FP8 or NVFP4, every value correctly rounded from its own source value, by the
//! exact recipe where a scale is chosen), with
//! plain options that default to what the command line does ([`CastOptions`]) and a
//! report ([`CastReport`]). What `bitexact cast` runs, and all it runs.
//!
//! One call passes through, in order: [`crate::scan::inputs::expand`] (files,
//! directories, indexes), [`TensorFile::open`] of each file, the index checked against
//! its shards (`check_index`), `plan` (each tensor's [`Decision`], every refusal
//! that needs no data: before anything is written), then [`output::write_all`] (every
//! output file into a temporary folder beside the output, each tensor streamed a chunk
//! at a time, in two passes where a scale is needed) and `output::Staged::commit`
//! (the folder, or the single file, renamed into place).
//!
//! Owns: the per-element conversions ([`convert`]) and their runs over slices on all
//! cores ([`chunks`]), which tensors are cast ([`select`]), what NumPy inputs become
//! ([`numpy`]), the output files ([`output`]). Uses: [`crate::read`],
//! [`crate::containers`], [`crate::scan::inputs`] and
//! [`crate::output`] (the temporaries' naming and their signal-time cleanup).

#[doc(hidden)]
pub mod chunks;
pub mod convert;
#[doc(hidden)]
pub mod numpy;
#[doc(hidden)]
pub mod output;
#[doc(hidden)]
pub mod select;

/// What [`CastOptions`], [`CastTensor`] and [`CastError`] name.
pub use output::CastOutputErrorKind;
pub use select::{Decision, Patterns};

use crate::containers::Container;
use crate::containers::index::{Index, ScanInputError};
use crate::read::{TensorFile, TensorFileError};
use crate::scan::inputs::{Inputs, check_index};
use crate::source::SourceReadError;
use bitexact_support::output::{excerpt, path_text};
use bitexact_support::progress::Progress;
use convert::{CastTarget, SourceDtype, Target};
use select::decide;
use shared::fp8_block::{self, Blocks};
use shared::fp8_scale::Rounding;
use shared::mx::{self, ScaleRule};
use shared::nvfp4::{self, Nvfp4Recipe, WeightDtype};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// How FP8 values are scaled: per tensor, per row, per 128 × 128 tile, per 32 values of a
/// row (MX), or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScaleMode {
    /// `s = fl32(max / amax)`, `q = sat_rne(x · s)`, `fl32(1 / s)` stored as
    /// `<name>_scale` (F32, shape `[1]`).
    PerTensor,
    /// One scale per row of a 2-D tensor (per output channel of a Linear weight:
    /// compressed-tensors' `channel` strategy), by the exact recipe of
    /// [`shared::fp8_block`]: `d = fl32(amax_row / max)`, `q = sat_rne(x / d)` (the exact
    /// quotient rounded once), `d` stored as `<name>_scale` (F32, shape `[rows, 1]`).
    PerChannel,
    /// One scale per 128 × 128 tile of a 2-D tensor (the edge tiles partial): the same
    /// recipe per tile, `d` stored as `<name>_scale` (compressed-tensors' `block`
    /// strategy) or `<name>_scale_inv` ([`ScaleLayout::DeepSeek`]), F32, shape
    /// `[⌈rows / 128⌉, ⌈cols / 128⌉]`.
    Block,
    /// MXFP8 (OCP Microscaling): one power of two `2^k` per 32 consecutive values of a row
    /// of a 2-D tensor, its columns a multiple of 32, by [`shared::mx`]: `k` chosen from
    /// the block's amax by the recipe's rule ([`CastRecipe::scale_rule`]), `q = sat_rne(x /
    /// 2^k)` (exact, rounded once), E4M3 elements, the E8M0 code `k + 127` stored as
    /// `<name>_scale` (U8, shape `[rows, cols / 32]`), as compressed-tensors'
    /// `mxfp8-quantized` format holds it.
    Mx,
    /// No scale: each value converted as it is.
    None,
}

impl ScaleMode {
    /// How a 2-D tensor is cut into blocks that share a scale: `None` per tensor and
    /// unscaled.
    pub const fn blocks(self) -> Option<Blocks> {
        match self {
            ScaleMode::PerChannel => Some(Blocks::PerRow),
            ScaleMode::Block => Some(Blocks::TILE_128),
            ScaleMode::Mx => Some(Blocks::Tiles { rows: 1, cols: mx::BLOCK_SIZE }),
            ScaleMode::PerTensor | ScaleMode::None => None,
        }
    }
}

/// Whose checkpoint layout block-scaled FP8 is written in: the tensor names of the
/// scales and the `config.json`'s `quantization_config`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScaleLayout {
    /// compressed-tensors (`quant_method: "compressed-tensors"`, `<name>_scale`), as
    /// llm-compressor writes it and vLLM and transformers load it.
    #[default]
    CompressedTensors,
    /// DeepSeek-V3's (`quant_method: "fp8"`, `weight_block_size: [128, 128]`,
    /// `<name>_scale_inv`), as vLLM's and transformers' `fp8` loaders read it: E4M3 in
    /// 128 × 128 blocks only ([`ScaleMode::Block`]).
    #[serde(rename = "deepseek")]
    DeepSeek,
    /// NVIDIA ModelOpt's NVFP4 (`quant_method: "modelopt"`, `quant_algo: "NVFP4"`; the
    /// packed codes under the weight's own name, `<name>_scale` and `<name>_scale_2`), as
    /// vLLM's `modelopt_fp4` loader reads it: [`CastTarget::Nvfp4`] only.
    #[serde(rename = "modelopt")]
    ModelOpt,
}

/// Whose arithmetic a per-channel, block or MX cast follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CastRecipe {
    /// The exact recipe: a stated rule for the stored scale, then each code the nearest
    /// to `x / d`, from the exact quotient, rounded once and saturated
    /// ([`fp8_block::Recipe::Exact`]; for MX, [`ScaleRule::Fit`]: the least power of two
    /// at which no value of the block saturates).
    #[default]
    Exact,
    /// DeepGEMM's `per_block_cast_to_fp8`, modelled on its source
    /// ([`fp8_block::Recipe::DeepGemm`]): E4M3 in 128 × 128 blocks, finite values only.
    #[serde(rename = "deepgemm")]
    DeepGemm,
    /// compressed-tensors' FP8 per channel and per block
    /// ([`fp8_block::Recipe::CompressedTensors`]: `s = W(fl32(amax / 448))` in the
    /// weights' dtype `W`, which stores it, and `q = e4m3(clamp(W(fl32(x / s)), ±448))`),
    /// E4M3 in compressed-tensors' layout, finite values only, bf16 and f32 tensors only.
    /// Its MXFP8 (`generate_mx_scales`, as llm-compressor's
    /// `model_free_ptq` runs it): its power of two rounded up from a significand of 1.75
    /// ([`ScaleRule::CompressedTensors`]), the elements as the exact recipe's (its
    /// `x / scale` is exact: a bf16 or f32 value over a power of two), finite values only,
    /// bf16 and f32 tensors only (an f16 tensor's scale is found on its f16 bits, which
    /// differ below f16's normal range). For NVFP4, its
    /// `nvfp4-pack-quantized` arithmetic ([`Nvfp4Recipe::CompressedTensors`]), in the
    /// compressed-tensors layout only, bf16 and f32 tensors only.
    CompressedTensors,
    /// NVIDIA ModelOpt's NVFP4 export, modelled on its source
    /// ([`Nvfp4Recipe::ModelOpt`]): NVFP4 in the ModelOpt layout only.
    #[serde(rename = "modelopt")]
    ModelOpt,
    /// OCP MX v1.0's scale rule for MXFP8 ([`ScaleRule::Floor`]: `k = floor(log2 amax) −
    /// 8`, so values from `448 · 2^k` up to the block's amax saturate), which torchao's
    /// `ScaleCalculationMode.FLOOR` computes (its default in `to_mx`); the elements as the
    /// exact recipe's. MX only.
    Ocp,
    /// torchao's `ScaleCalculationMode.RCEIL` for MXFP8 ([`ScaleRule::Rceil`]: `2^k` the
    /// least power of two at or above `fl32(amax · fl32(1/448))`, which is the exact rule's
    /// on every f32 amax but one, `448 · 2^-127` one ulp up); the elements as the exact
    /// recipe's. MX only.
    Rceil,
}

/// How per-channel and block FP8 scales are stored: any f32 (the exact recipe's `d =
/// fl32(amax / max)`), powers of two (`scale_fmt: "ue8m0"`, as DeepSeek-V3.1 and
/// DeepGEMM on Blackwell take them: [`fp8_block::Recipe::ExactUe8m0`], and DeepGEMM's own,
/// [`fp8_block::Recipe::DeepGemmUe8m0`]), or bfloat16
/// values ([`fp8_block::Recipe::ExactBf16`], which a bfloat16 model loaded by transformers
/// keeps).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ScaleFormat {
    /// Any f32.
    #[default]
    F32,
    /// `d = 2^k`, the least power of two with `amax ≤ max · 2^k` (`k` in `−127 ..= 127`),
    /// still stored as F32.
    Ue8m0,
    /// `d` the least bfloat16 with `amax ≤ max · d`, stored as BF16.
    Bf16,
}

impl CastRecipe {
    /// The recipe's NVFP4 arithmetic (`None` for one that has none).
    pub(crate) const fn nvfp4(self) -> Option<Nvfp4Recipe> {
        match self {
            CastRecipe::Exact => Some(Nvfp4Recipe::Exact),
            CastRecipe::CompressedTensors => Some(Nvfp4Recipe::CompressedTensors),
            CastRecipe::ModelOpt => Some(Nvfp4Recipe::ModelOpt),
            CastRecipe::DeepGemm | CastRecipe::Ocp | CastRecipe::Rceil => None,
        }
    }

    /// The recipe's MX scale rule (`None` for one that has none).
    pub const fn scale_rule(self) -> Option<ScaleRule> {
        match self {
            CastRecipe::Exact => Some(ScaleRule::Fit),
            CastRecipe::CompressedTensors => Some(ScaleRule::CompressedTensors),
            CastRecipe::Ocp => Some(ScaleRule::Floor),
            CastRecipe::Rceil => Some(ScaleRule::Rceil),
            CastRecipe::DeepGemm | CastRecipe::ModelOpt => None,
        }
    }
}

/// What is done with NaN and infinite source values (and finite ones that would become
/// infinite or NaN).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NonFiniteValues {
    /// The job fails, naming the tensor and the index of the first one, and writes
    /// nothing.
    Refuse,
    /// Converted as the format allows (NaN to NaN; ±inf to ±inf, or where the format
    /// has none or saturation applies, to ±max).
    Keep,
}

/// How [`cast`] converts.
#[derive(Clone, Debug)]
pub struct CastOptions {
    /// The target format (bf16 by default).
    pub to: CastTarget,
    /// For FP8: per-tensor, per-channel or block scales, or none
    /// ([`ScaleMode::PerTensor`] by default). Ignored for bf16/f16 and NVFP4.
    pub scale: ScaleMode,
    /// For FP8 scaled per channel, per block or MX, and NVFP4: the checkpoint layout
    /// ([`ScaleLayout::CompressedTensors`] by default; NVFP4 by the exact recipe or
    /// ModelOpt's is written in [`ScaleLayout::ModelOpt`] only, which a caller sets: the
    /// CLI's `--to nvfp4` does).
    pub layout: ScaleLayout,
    /// For FP8 scaled per channel, per block or MX, and NVFP4: the exact recipe
    /// ([`CastRecipe::Exact`], the default), DeepGEMM's (128 × 128 blocks),
    /// compressed-tensors' (E4M3 per channel, per block and MX; NVFP4), OCP's and RCEIL's
    /// (MX) or ModelOpt's (NVFP4).
    pub recipe: CastRecipe,
    /// For FP8 scaled per channel or per block: the scales any f32 ([`ScaleFormat::F32`],
    /// the default), powers of two ([`ScaleFormat::Ue8m0`]) or bfloat16 values
    /// ([`ScaleFormat::Bf16`]), the last two by the exact recipe.
    pub scale_format: ScaleFormat,
    /// For FP8 scaled per tensor: the exact product rounded once ([`Rounding::Once`], the
    /// default) or `fl32(x · s)` first ([`Rounding::TwoStep`]). Per-channel and block
    /// scales always round the exact quotient once; [`Rounding::TwoStep`] is refused there.
    pub rounding: Rounding,
    /// For unscaled FP8: saturate at `±max` (the default) or the standard conversion
    /// (E4M3 overflow gives NaN, E5M2 gives ±inf).
    pub saturate: bool,
    /// NaN and infinities ([`NonFiniteValues::Refuse`] by default).
    pub nonfinite: NonFiniteValues,
    /// `--only` / `--skip`.
    pub patterns: Patterns,
    /// Plan only: report what would be done, read no data, write nothing.
    pub dry_run: bool,
    /// Draw a progress bar on stderr (bytes of tensor data read), if stderr is a
    /// terminal and the job lasts over a second. Off by default; the CLI turns it on.
    pub progress_bar: bool,
    /// Sync every output file to the disk before the output is put in place (on by
    /// default). Off (`--no-sync`), the output is still put in place whole or not at
    /// all by an interrupted run (Ctrl-C, a kill, a refused value), but after a power
    /// loss or an OS crash it may be there empty or in part, as any file written
    /// without a sync; what it saves is the wait for the disk (measured in
    /// docs/files.md).
    pub sync: bool,
}

impl Default for CastOptions {
    fn default() -> CastOptions {
        CastOptions {
            to: CastTarget::Element(Target::Bf16),
            scale: ScaleMode::PerTensor,
            layout: ScaleLayout::CompressedTensors,
            recipe: CastRecipe::Exact,
            scale_format: ScaleFormat::F32,
            rounding: Rounding::Once,
            saturate: true,
            nonfinite: NonFiniteValues::Refuse,
            patterns: Patterns::default(),
            dry_run: false,
            progress_bar: false,
            sync: true,
        }
    }
}

impl CastOptions {
    /// Whether a cast tensor gets a scale (per tensor, per channel or per block, MX, NVFP4).
    pub(crate) fn scaled(&self) -> bool {
        self.to == CastTarget::Nvfp4 || (self.to.fp8().is_some() && self.scale != ScaleMode::None)
    }

    /// For FP8 scaled per channel, per block or MX, and NVFP4, how a tensor is cut into
    /// blocks.
    pub fn blocks(&self) -> Option<Blocks> {
        match self.to {
            CastTarget::Nvfp4 => Some(Blocks::Tiles { rows: 1, cols: nvfp4::BLOCK_SIZE }),
            _ => self.to.fp8().and(self.scale.blocks()),
        }
    }

    /// Whether the target is NVFP4.
    pub(crate) fn nvfp4(&self) -> bool {
        self.to == CastTarget::Nvfp4
    }

    /// The block-scaled FP8 arithmetic of FP8 scaled per channel or per block: the
    /// recipe's, with power-of-two scales for [`ScaleFormat::Ue8m0`] and bfloat16 ones for
    /// [`ScaleFormat::Bf16`], compressed-tensors' in the weights' dtype `weights` (`None`
    /// where the recipe has none, or none with that format).
    pub(crate) const fn block_recipe(&self, weights: WeightDtype) -> Option<fp8_block::Recipe> {
        match (self.recipe, self.scale_format) {
            (CastRecipe::Exact, ScaleFormat::F32) => Some(fp8_block::Recipe::Exact),
            (CastRecipe::Exact, ScaleFormat::Ue8m0) => Some(fp8_block::Recipe::ExactUe8m0),
            (CastRecipe::Exact, ScaleFormat::Bf16) => Some(fp8_block::Recipe::ExactBf16),
            (CastRecipe::DeepGemm, ScaleFormat::F32) => Some(fp8_block::Recipe::DeepGemm),
            (CastRecipe::DeepGemm, ScaleFormat::Ue8m0) => Some(fp8_block::Recipe::DeepGemmUe8m0),
            (CastRecipe::CompressedTensors, ScaleFormat::F32) => Some(fp8_block::Recipe::CompressedTensors(weights)),
            _ => None,
        }
    }

    /// Whether the per-channel or block scales of a tensor of `source` are stored in
    /// bfloat16: `--scale-format bf16`'s are, and compressed-tensors' recipe stores them in
    /// the weights' dtype.
    pub(crate) fn bf16_scales(&self, source: SourceDtype) -> bool {
        matches!(self.scale, ScaleMode::PerChannel | ScaleMode::Block)
            && (self.scale_format == ScaleFormat::Bf16
                || (self.recipe == CastRecipe::CompressedTensors && source == SourceDtype::Bf16))
    }

    /// The options that contradict one another, if any: [`ScaleLayout::DeepSeek`] or
    /// [`CastRecipe::DeepGemm`] but for E4M3 in 128 × 128 blocks, [`ScaleMode::Mx`] but for
    /// E4M3, [`CastRecipe::CompressedTensors`] but for E4M3 per channel, per block or MX (or
    /// NVFP4) or in DeepSeek's layout, a producer's recipe with non-finite
    /// values kept (PyTorch would carry them into the block's scale, which the recipes do
    /// not model), and [`Rounding::TwoStep`] with per-channel, block or MX scales.
    fn contradiction(&self) -> Option<&'static str> {
        if let Some(contradiction) = self.nvfp4_contradiction() {
            return Some(contradiction);
        }
        let e4m3 = CastTarget::Element(Target::E4m3);
        if self.layout == ScaleLayout::DeepSeek && (self.to != e4m3 || self.scale != ScaleMode::Block) {
            return Some("the deepseek layout holds E4M3 in 128x128 blocks: it takes --to e4m3 --scale block");
        }
        if self.recipe == CastRecipe::DeepGemm && (self.to != e4m3 || self.scale != ScaleMode::Block) {
            return Some("DeepGEMM's recipe makes E4M3 in 128x128 blocks: it takes --to e4m3 --scale block");
        }
        if self.scale == ScaleMode::Mx && self.to != e4m3 && !self.nvfp4() {
            return Some(
                "--scale mx writes MXFP8 as compressed-tensors stores it, with E4M3 elements: it takes --to e4m3",
            );
        }
        if self.recipe == CastRecipe::CompressedTensors && !self.nvfp4() && (self.to != e4m3 || self.blocks().is_none())
        {
            return Some(
                "compressed-tensors' recipe is modelled for its FP8 (E4M3 per channel, block or mx) and NVFP4 scales: it takes --to e4m3 --scale per-channel, block or mx, or --to nvfp4",
            );
        }
        if self.recipe == CastRecipe::CompressedTensors && self.layout == ScaleLayout::DeepSeek {
            return Some(
                "compressed-tensors' recipe writes compressed-tensors' layout (its scales in the weights' dtype): drop --layout deepseek",
            );
        }
        if self.recipe == CastRecipe::DeepGemm && self.nonfinite == NonFiniteValues::Keep {
            return Some(
                "--recipe deepgemm takes finite values only (PyTorch carries a NaN or an infinity into the block's scale): drop --nonfinite keep",
            );
        }
        if self.recipe == CastRecipe::CompressedTensors && self.nonfinite == NonFiniteValues::Keep {
            return Some(
                "--recipe compressed-tensors takes finite values only (PyTorch carries a NaN or an infinity into the block's scale): drop --nonfinite keep",
            );
        }
        if matches!(self.recipe, CastRecipe::Ocp | CastRecipe::Rceil)
            && (self.to != e4m3 || self.scale != ScaleMode::Mx)
        {
            return Some("the OCP and RCEIL rules are MXFP8's: --recipe ocp or rceil takes --to e4m3 --scale mx");
        }
        if self.scale_format == ScaleFormat::Ue8m0
            && (self.to.fp8().is_none() || !matches!(self.scale, ScaleMode::PerChannel | ScaleMode::Block))
        {
            return Some(
                "--scale-format ue8m0 stores FP8 per-channel or block scales as powers of two: it takes --scale per-channel or block (MX scales are E8M0 already)",
            );
        }
        if self.scale_format == ScaleFormat::Bf16
            && (self.to.fp8().is_none()
                || !matches!(self.scale, ScaleMode::PerChannel | ScaleMode::Block)
                || self.recipe != CastRecipe::Exact
                || self.layout == ScaleLayout::DeepSeek)
        {
            return Some(
                "--scale-format bf16 stores the exact recipe's FP8 per-channel or block scales in bfloat16, in compressed-tensors' layout: it takes --scale per-channel or block, no --recipe, no --layout deepseek",
            );
        }
        if self.scale_format == ScaleFormat::Ue8m0 && !matches!(self.recipe, CastRecipe::Exact | CastRecipe::DeepGemm) {
            return Some(
                "--scale-format ue8m0 is modelled for the exact recipe and DeepGEMM's: drop --recipe, or take --recipe deepgemm",
            );
        }
        if self.blocks().is_some() && self.rounding == Rounding::TwoStep {
            return Some(
                "per-channel and block scales round the exact quotient x/d once; --rounding two-step is for --scale per-tensor",
            );
        }
        None
    }

    /// The options that contradict NVFP4 or its layout: the ModelOpt layout or recipe but
    /// for NVFP4, and for NVFP4 the DeepSeek layout, DeepGEMM's recipe, a recipe other than
    /// the layout's producer's or the exact one, the exact recipe in compressed-tensors'
    /// layout, and `--nonfinite keep` (E2M1 has no NaN nor infinity).
    fn nvfp4_contradiction(&self) -> Option<&'static str> {
        if !self.nvfp4() {
            return match (self.layout, self.recipe) {
                (ScaleLayout::ModelOpt, _) => Some("the modelopt layout holds NVFP4: it takes --to nvfp4"),
                (_, CastRecipe::ModelOpt) => Some("ModelOpt's recipe is modelled for NVFP4: it takes --to nvfp4"),
                _ => None,
            };
        }
        match (self.layout, self.recipe) {
            (ScaleLayout::DeepSeek, _) => Some(
                "the deepseek layout holds E4M3 in 128x128 blocks; NVFP4 takes --layout modelopt or compressed-tensors",
            ),
            (_, CastRecipe::DeepGemm | CastRecipe::Ocp | CastRecipe::Rceil) => Some(
                "DeepGEMM's, OCP's and RCEIL's recipes make FP8; NVFP4 takes --recipe exact, modelopt or compressed-tensors",
            ),
            (ScaleLayout::CompressedTensors, CastRecipe::Exact) => Some(
                "compressed-tensors stores NVFP4's tensor scale as the multiplier gs (readers dequantise by s/gs), which the exact recipe's g = amax/2688 is not: take --layout modelopt, or --recipe compressed-tensors",
            ),
            (ScaleLayout::CompressedTensors, CastRecipe::ModelOpt) => {
                Some("ModelOpt's recipe writes the modelopt layout: take --layout modelopt")
            }
            (ScaleLayout::ModelOpt, CastRecipe::CompressedTensors) => Some(
                "compressed-tensors' recipe writes the compressed-tensors layout: take --layout compressed-tensors",
            ),
            _ if self.nonfinite == NonFiniteValues::Keep => {
                Some("NVFP4 holds no NaN and no infinity (E2M1 has neither): drop --nonfinite keep")
            }
            _ => None,
        }
    }
}

/// One tensor of the report.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CastTensor {
    /// The output file that holds it (its file name).
    pub file: String,
    /// Its name.
    pub name: String,
    /// Its shape.
    pub shape: Vec<u64>,
    /// Its dtype in the input.
    pub from: String,
    /// Its dtype in the output.
    pub to: String,
    /// Cast, or copied and why.
    pub decision: Decision,
    /// For a scaled FP8 tensor: the name of its dequantisation scale tensor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_tensor: Option<String>,
    /// And the scale's value `fl32(1 / s)` (after the cast; not in a dry run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dequant_scale: Option<f32>,
    /// For per-channel, block and MX scales, and NVFP4: their shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_shape: Option<Vec<u64>>,
    /// And their values, summarised (after the cast; not in a dry run). NVFP4: the E4M3
    /// block scales `s`, without the tensor's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dequant_scales: Option<BlockScales>,
    /// For NVFP4 in compressed-tensors' layout: the name its packed codes are stored
    /// under (`<name>_packed`; in ModelOpt's, its own name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packed_tensor: Option<String>,
    /// For NVFP4: the name of its tensor scale (`<name>_scale_2`, ModelOpt's `g`;
    /// `<name>_global_scale`, compressed-tensors' `gs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_scale_tensor: Option<String>,
    /// And its value (after the cast; not in a dry run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_scale: Option<f32>,
}

/// The per-channel, block or MX dequantisation scales of one tensor, summarised.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct BlockScales {
    /// How many there are.
    pub count: u64,
    /// The least of those that are not NaN (1 where there are none).
    pub min: f32,
    /// The greatest of those that are not NaN (1 where there are none).
    pub max: f32,
    /// How many are subnormal in f32 (a block whose amax is below `max · 2^-126`).
    pub subnormal: u64,
    /// How many are NaN: MX blocks holding a NaN or an infinity, under
    /// `--nonfinite keep` (E8M0's NaN scale, which makes every value of the block NaN).
    pub nan: u64,
}

impl BlockScales {
    /// The summary of `scales`.
    pub fn of(scales: &[f32]) -> BlockScales {
        let numbers = scales.iter().filter(|d| !d.is_nan());
        let (min, max) = numbers.clone().fold((f32::INFINITY, 0f32), |(lo, hi), &d| (lo.min(d), hi.max(d)));
        let (min, max) = if numbers.count() == 0 { (1.0, 1.0) } else { (min, max) };
        let subnormal = scales.iter().filter(|d| d.is_subnormal()).count() as u64;
        let nan = scales.iter().filter(|d| d.is_nan()).count() as u64;
        BlockScales { count: scales.len() as u64, min, max, subnormal, nan }
    }
}

/// What [`cast`] wrote (or, in a dry run, would write).
#[derive(Clone, Debug, serde::Serialize)]
pub struct CastReport {
    /// The output path, as given.
    pub output: String,
    /// The target format.
    pub to: CastTarget,
    /// Scaled FP8 or not.
    pub scale: Option<ScaleMode>,
    /// For per-channel, block and MX scales, and NVFP4, the checkpoint layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<ScaleLayout>,
    /// For per-channel, block and MX scales, and NVFP4, the recipe: `exact`, `deepgemm`,
    /// `compressed-tensors` or `modelopt`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipe: Option<&'static str>,
    /// For FP8 per-channel and block scales stored as powers of two, `ue8m0`, or in
    /// bfloat16, `bf16`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_format: Option<ScaleFormat>,
    /// For scaled FP8, the rounding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rounding: Option<&'static str>,
    /// A dry run: nothing was read or written.
    pub dry_run: bool,
    /// Every tensor, file by file, in file order.
    pub tensors: Vec<CastTensor>,
    /// The index files rewritten (file names in the output).
    pub indexes: Vec<String>,
    /// Whether a `config.json` was written beside the tensors, and with a
    /// `quantization_config`.
    pub config: Option<ConfigWritten>,
    /// What the cast did that a user may not expect, one line each (the CLI prints them
    /// on stderr; JSON lists them): a shard holding tensors its index does not list there
    /// and a file holding tensors of a dtype this tool does not know (both also in a dry
    /// run), a dequantisation scale that is subnormal, a `config.json` that says nothing
    /// of the FP8 tensors.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// What was done with the input's `config.json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfigWritten {
    /// Copied with `quantization_config` (compressed-tensors, per-tensor FP8) added.
    WithQuantizationConfig,
    /// Copied with `torch_dtype` set to the target (bf16/f16), where it had one.
    Copied,
}

/// Why [`cast`] wrote nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CastError {
    /// The inputs cannot be expanded (a missing path, a bad index).
    #[error(transparent)]
    Inputs(#[from] ScanInputError),
    /// A file cannot be opened or its header is refused.
    #[error(transparent)]
    File(#[from] TensorFileError),
    /// A NumPy array of a dtype safetensors has no name for (complex, strings, ...).
    #[error("{}: array '{}' is {}, which a safetensors file cannot hold; remove it from the input", path_text(.path), excerpt(.tensor), excerpt(.dtype))]
    NoSafetensorsDtype {
        /// The file.
        path: PathBuf,
        /// The array.
        tensor: String,
        /// Its NumPy type string.
        dtype: String,
    },
    /// A Fortran-ordered NumPy array of two or more dimensions longer than 1.
    #[error("{}: array '{}' is in Fortran order; save it in C order (np.ascontiguousarray) to cast it", path_text(.path), excerpt(.tensor))]
    FortranOrder {
        /// The file.
        path: PathBuf,
        /// The array.
        tensor: String,
    },
    /// Two input files of one name, which the output folder cannot both hold.
    #[error("{}: another input has the file name '{}'; cast them to separate outputs", path_text(.path), excerpt(.name))]
    SameFileName {
        /// The second of them.
        path: PathBuf,
        /// The name.
        name: String,
    },
    /// A shard of one index that is the same file as a shard of another (a link): cast
    /// writes it once, so one rewritten index would name a file that is not written.
    #[error("{}: the same file as {} (a link), and both are shards of an index: the rewritten index would name a file cast does not write; make one of them a copy", path_text(.path), path_text(.listed))]
    ShardAlias {
        /// The name left out.
        path: PathBuf,
        /// The name the file is cast under.
        listed: PathBuf,
    },
    /// `--only` selected a tensor that is not of a dtype `cast` reads.
    #[error("{}: tensor '{}' is {}, not f32, f64, bf16 or f16: cannot be cast (narrow --only)", path_text(.path), excerpt(.tensor), excerpt(.dtype))]
    NotCastable {
        /// Its file.
        path: PathBuf,
        /// The tensor.
        tensor: String,
        /// Its dtype.
        dtype: String,
    },
    /// A tensor whose amax is too large for a per-tensor f32 scale: `fl32(max / amax)` is
    /// at most `2^-128`, so the dequantisation scale `fl32(1 / s)` would be infinite (only
    /// an f64 tensor, with values past about `1.5e41`, can be one). Exit 1 in the CLI.
    #[error("{}: tensor '{}': amax {amax:e} is too large for an f32 scale (fl32({max} / amax) = {s:e}, whose inverse is past f32's range); nothing written (--scale none saturates instead, or --skip it)", path_text(.path), excerpt(.tensor))]
    ScaleOutOfRange {
        /// Its file.
        path: PathBuf,
        /// The tensor.
        tensor: String,
        /// Its largest finite magnitude.
        amax: f64,
        /// The FP8 format's largest finite value.
        max: f32,
        /// The scale it gives.
        s: f32,
    },
    /// `--only` leaves no tensor to cast (it matches none, a typo most likely; `--skip`
    /// removes what it matches; or those are in the target format already): the output
    /// would be a copy.
    #[error("--only '{}' leaves nothing to cast (it matches no tensor, --skip removes them, or they are {to} already); nothing written", excerpt(.pattern))]
    OnlySelectsNothing {
        /// The target format's name.
        to: &'static str,
        /// The pattern.
        pattern: String,
    },
    /// Options that contradict one another (the library's check of what the CLI
    /// refuses as a usage error; the message names the CLI's options).
    #[error("{0}")]
    Options(&'static str),
    /// An f64 tensor to scale per channel, per block or MX, which the recipes do not take.
    #[error("{}: tensor '{}' is F64: per-channel, block, MX and NVFP4 scales take f32, bf16 or f16 tensors; cast it to FP8 per tensor, or --skip it", path_text(.path), excerpt(.tensor))]
    BlockScaledF64 {
        /// Its file.
        path: PathBuf,
        /// The tensor.
        tensor: String,
    },
    /// A tensor to scale MX whose rows are not a whole number of blocks of 32 (which
    /// compressed-tensors refuses too, and vLLM's kernels assume).
    #[error("{}: tensor '{}' has {columns} columns: MX scales take a multiple of 32 (one scale per 32 values of a row); --skip it, or cast it per channel", path_text(.path), excerpt(.tensor))]
    MxColumns {
        /// Its file.
        path: PathBuf,
        /// The tensor.
        tensor: String,
        /// Its columns.
        columns: usize,
    },
    /// A tensor to cast to NVFP4 whose rows are not a whole number of blocks of 16 (which
    /// compressed-tensors and ModelOpt refuse too, and vLLM's kernels assume).
    #[error("{}: tensor '{}' has {columns} columns: NVFP4 takes a multiple of 16 (one scale per 16 values of a row); --skip it", path_text(.path), excerpt(.tensor))]
    Nvfp4Columns {
        /// Its file.
        path: PathBuf,
        /// The tensor.
        tensor: String,
        /// Its columns.
        columns: usize,
    },
    /// A tensor whose amax is so small (below about `2^-129.6`, an all-zero tensor
    /// included) that ModelOpt's `weight_scale_2 = fl32(amax · fl32(1/2688))`, times its
    /// least block scale `2^-9`, is 0 in f32: its blocks would divide by zero, which
    /// ModelOpt's recipe does not model. Exit 1 in the CLI.
    #[error("{}: tensor '{}': amax {amax:e} is so small that ModelOpt's scales are 0 in f32 (weight_scale_2 = {g:e}) and its blocks divide by zero; nothing written (the exact recipe takes it, or --skip it)", path_text(.path), excerpt(.tensor))]
    ModelOptZeroScale {
        /// Its file.
        path: PathBuf,
        /// The tensor.
        tensor: String,
        /// Its largest magnitude.
        amax: f32,
        /// ModelOpt's `weight_scale_2`.
        g: f32,
    },
    /// An f16 tensor for compressed-tensors' recipe: for MX it finds the scale on the
    /// tensor's own bits, which below f16's normal range differs from the modelled rule;
    /// for NVFP4 it computes the scales in f16, which the recipe does not model.
    #[error("{}: tensor '{}' is F16: compressed-tensors finds an f16 tensor's MX scale on its f16 bits, and its FP8 and NVFP4 scales in f16, which this recipe does not model; cast it by the exact recipe, or from bf16 or f32", path_text(.path), excerpt(.tensor))]
    CompressedTensorsF16 {
        /// Its file.
        path: PathBuf,
        /// The tensor.
        tensor: String,
    },
    /// The name a scale tensor (or NVFP4's renamed codes) would get is taken: by an input
    /// tensor, or by a name the cast gives another tensor's.
    #[error("{}: the scale of tensor '{}' would be '{}', which already exists (or another tensor's cast adds it)", path_text(.path), excerpt(.tensor), excerpt(.scale))]
    ScaleNameTaken {
        /// Its file.
        path: PathBuf,
        /// The tensor.
        tensor: String,
        /// The scale's name.
        scale: String,
    },
    /// An input's JSON (its index, its `config.json`, a file's `__metadata__`) cannot be
    /// read again as a JSON object when the output is written.
    #[error("{}: cannot read it as a JSON object: {error}", path_text(.path))]
    InputJson {
        /// The input file.
        path: PathBuf,
        /// Why.
        error: String,
    },
    /// The output cannot be put there.
    #[error("{}: {}", path_text(.path), .kind)]
    Output {
        /// The output path.
        path: PathBuf,
        /// Why.
        kind: output::CastOutputErrorKind,
    },
    /// Reading a tensor's data failed.
    #[error("{}: tensor '{}': {error}", path_text(.path), excerpt(.tensor))]
    Read {
        /// The input file.
        path: PathBuf,
        /// The tensor.
        tensor: String,
        /// Why.
        error: SourceReadError,
    },
    /// A value that cannot be cast as asked (exit 1 in the CLI).
    #[error(transparent)]
    Refused(#[from] Refusal),
}

impl CastError {
    /// Whether the input was refused for its values (a non-finite value, an overflow, an
    /// amax past an f32 scale's range), not for an error of the job: the CLI's exit
    /// status 1.
    #[doc(hidden)]
    pub fn is_refusal(&self) -> bool {
        matches!(self, CastError::Refused(_) | CastError::ScaleOutOfRange { .. } | CastError::ModelOptZeroScale { .. })
    }
}

/// A value refused: the first non-finite (or overflowing) value of a tensor.
#[derive(Debug, thiserror::Error)]
#[error("{}: tensor '{}' index {index}: {}", path_text(.path), excerpt(.tensor), .kind)]
pub struct Refusal {
    /// The input file.
    pub path: PathBuf,
    /// The tensor.
    pub tensor: String,
    /// The element's index, in flat order.
    pub index: u64,
    /// What is wrong with it.
    pub kind: RefusalKind,
}

/// What is wrong with a refused value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RefusalKind {
    /// NaN or infinite.
    #[error("not finite; nothing written (--nonfinite keep converts it as the format allows)")]
    NonFiniteValues,
    /// NaN or infinite, in a tensor cast to NVFP4, which holds neither.
    #[error("not finite; nothing written (NVFP4 holds no NaN and no infinity: mend the tensor, or --skip it)")]
    Nvfp4NonFinite,
    /// Finite, but past the target's range (it would become infinite or NaN).
    #[error("out of the range of {}; nothing written (--nonfinite keep converts it to infinity or NaN)", .0.name())]
    Overflow(Target),
    /// Finite, at least `1.75 · 2^127` in magnitude, under compressed-tensors' MX recipe:
    /// its block's scale overflows there (to infinity, its values to 0), which the recipe
    /// does not model.
    #[error(
        "at least 1.75 * 2^127 in magnitude: compressed-tensors' MX scale of its block overflows to infinity there, which --recipe compressed-tensors does not model; nothing written (the exact recipe takes it)"
    )]
    PastCompressedTensors,
}

/// One input file with its plan.
#[doc(hidden)]
pub struct PlannedFile {
    /// The file, opened.
    pub file: TensorFile,
    /// Its name in the output.
    pub name: String,
    /// One decision per tensor, in the order of `file.tensors`.
    pub decisions: Vec<Decision>,
    /// Per tensor: stored big-endian (a `.npy` array of `>` byte order), to be swapped.
    pub big_endian: Vec<bool>,
}

/// The whole job's plan: every refusal that needs no data made.
#[doc(hidden)]
pub struct Plan {
    /// The files, in input order.
    pub files: Vec<PlannedFile>,
    /// The indexes met.
    pub indexes: Vec<Index>,
    /// The input's `config.json`, if there is one beside the first input.
    pub config: Option<PathBuf>,
    /// What the inputs do that a user may not expect, one line each: the shards that hold
    /// tensors their index does not list there (as `scan` warns), and the safetensors
    /// files that hold tensors of a dtype this tool does not know.
    pub warnings: Vec<String>,
}

/// The name of the dequantisation scale of tensor `name`: `<name>_scale`, so that
/// `<module>.weight` gets `<module>.weight_scale`, the name vLLM loads;
/// `<name>_scale_inv` in [`ScaleLayout::DeepSeek`] (a dequantisation multiplier too,
/// despite the name).
pub(crate) fn scale_name(name: &str, options: &CastOptions) -> String {
    match (options.blocks(), options.layout) {
        (Some(_), ScaleLayout::DeepSeek) => format!("{name}_scale_inv"),
        _ => format!("{name}_scale"),
    }
}

/// The name a cast tensor's data is stored under: its own, but for NVFP4 in
/// compressed-tensors' layout, `<name>_packed` (so that `<module>.weight` gets
/// `<module>.weight_packed`, the name vLLM loads).
pub(crate) fn data_name(name: &str, options: &CastOptions) -> String {
    match (options.nvfp4(), options.layout) {
        (true, ScaleLayout::CompressedTensors) => format!("{name}_packed"),
        _ => name.to_string(),
    }
}

/// For NVFP4, the name of tensor `name`'s tensor scale: `<name>_global_scale` in
/// compressed-tensors' layout, `<name>_scale_2` in ModelOpt's. `None` for the others.
pub(crate) fn global_scale_name(name: &str, options: &CastOptions) -> Option<String> {
    match (options.nvfp4(), options.layout) {
        (true, ScaleLayout::CompressedTensors) => Some(format!("{name}_global_scale")),
        (true, _) => Some(format!("{name}_scale_2")),
        (false, _) => None,
    }
}

/// The names a cast tensor adds to the output beside its data's: its scale's, and for
/// NVFP4 its tensor scale's.
pub(crate) fn added_names(name: &str, options: &CastOptions) -> Vec<String> {
    let mut names = Vec::new();
    if options.scaled() {
        names.push(scale_name(name, options));
    }
    names.extend(global_scale_name(name, options));
    names
}

/// The report's name of `recipe`, as `--recipe` takes it.
pub(crate) const fn recipe_name(recipe: CastRecipe) -> &'static str {
    match recipe {
        CastRecipe::Exact => "exact",
        CastRecipe::DeepGemm => "deepgemm",
        CastRecipe::CompressedTensors => "compressed-tensors",
        CastRecipe::ModelOpt => "modelopt",
        CastRecipe::Ocp => "ocp",
        CastRecipe::Rceil => "rceil",
    }
}

/// The rows and columns of a 2-D tensor's shape (`None` for any other, and for sides
/// past `usize`).
pub(crate) fn matrix_shape(shape: &[u64]) -> Option<(usize, usize)> {
    match *shape {
        [rows, cols] => Some((usize::try_from(rows).ok()?, usize::try_from(cols).ok()?)),
        _ => None,
    }
}

/// The shape of the scale tensor of a cast tensor of `shape` (`[1]` per tensor);
/// `None` unscaled.
pub(crate) fn scale_shape(shape: &[u64], options: &CastOptions) -> Option<Vec<u64>> {
    if !options.scaled() {
        return None;
    }
    let Some(blocks) = options.blocks() else { return Some(vec![1]) };
    // The plan casts only 2-D tensors with block scales.
    let (rows, cols) = matrix_shape(shape)?;
    let (r, c) = blocks.scale_shape(rows, cols)?;
    Some(vec![r as u64, c as u64])
}

/// Opens the inputs and decides what becomes of every tensor, refusing before any data
/// is read what can be refused from the headers alone.
pub(crate) fn plan(inputs: &[PathBuf], options: &CastOptions) -> Result<Plan, CastError> {
    if let Some(contradiction) = options.contradiction() {
        return Err(CastError::Options(contradiction));
    }
    let expanded = crate::scan::inputs::expand(inputs)?;
    let shards: HashSet<&PathBuf> = expanded.indexes.iter().flat_map(|index| index.weight_map.values()).collect();
    if let Some((path, listed)) = expanded.aliases.iter().find(|(alias, _)| shards.contains(alias)) {
        return Err(CastError::ShardAlias { path: path.clone(), listed: listed.clone() });
    }
    let (mut files, mut output_names, mut big_endians) = (Vec::new(), Vec::new(), Vec::new());
    let mut names = HashSet::new();
    for path in &expanded.files {
        let mut file = TensorFile::open(path)?;
        let name = numpy::output_file_name(path, file.container);
        if !names.insert(name.clone()) {
            return Err(CastError::SameFileName { path: path.clone(), name });
        }
        big_endians.push(numpy_as_safetensors(&mut file)?);
        output_names.push(name);
        files.push(file);
    }
    let mut warnings = layout_warnings(inputs, &expanded, &shards, &output_names);
    for index in &expanded.indexes {
        for unlisted in check_index(index, &files)? {
            warnings.push(format!(
                "{}: {} that {} does not list in this shard (first: '{}'): cast all the same; the rewritten index does not list them there either",
                path_text(&unlisted.shard),
                bitexact_support::output::count_of(unlisted.count as u64, "tensor"),
                path_text(&unlisted.index),
                excerpt(&unlisted.first)
            ));
        }
    }
    let all_names: HashSet<&str> = files.iter().flat_map(|f| f.tensors.iter().map(|t| t.name.as_str())).collect();
    let mut planned = Vec::new();
    for file in &files {
        let mut decisions = Vec::new();
        // The names the cast adds to this file, each once (NVFP4's `a_global_scale` is both
        // `a`'s tensor scale and `a_global`'s block scale in compressed-tensors' layout).
        let mut added: HashSet<String> = HashSet::new();
        for tensor in &file.tensors {
            let mut decision = decide(&tensor.name, &tensor.dtype, tensor.shape.len(), options.to, &options.patterns);
            let fail_path = || file.path.clone();
            if options.blocks().is_some() {
                if matches!(decision, Decision::Cast(_)) && matrix_shape(&tensor.shape).is_none() {
                    decision = Decision::NotAMatrix;
                }
                if matches!(decision, Decision::Cast(_)) && tensor.elements == 0 {
                    decision = Decision::NoElements;
                }
                if decision == Decision::Cast(SourceDtype::F64) {
                    return Err(CastError::BlockScaledF64 { path: fail_path(), tensor: tensor.name.clone() });
                }
                let columns =
                    matrix_shape(&tensor.shape).filter(|_| matches!(decision, Decision::Cast(_))).map(|s| s.1);
                if let Some(columns) = columns.filter(|c| !c.is_multiple_of(mx::BLOCK_SIZE))
                    && options.scale == ScaleMode::Mx
                    && !options.nvfp4()
                {
                    return Err(CastError::MxColumns { path: fail_path(), tensor: tensor.name.clone(), columns });
                }
                if let Some(columns) = columns.filter(|c| !c.is_multiple_of(nvfp4::BLOCK_SIZE))
                    && options.nvfp4()
                {
                    return Err(CastError::Nvfp4Columns { path: fail_path(), tensor: tensor.name.clone(), columns });
                }
                if options.recipe == CastRecipe::CompressedTensors && decision == Decision::Cast(SourceDtype::F16) {
                    return Err(CastError::CompressedTensorsF16 { path: fail_path(), tensor: tensor.name.clone() });
                }
            }
            if decision == Decision::NotASource && options.patterns.only.is_some() {
                return Err(CastError::NotCastable {
                    path: fail_path(),
                    tensor: tensor.name.clone(),
                    dtype: tensor.dtype.clone(),
                });
            }
            // A NumPy type string that is not a safetensors dtype: one NumPy writes (with its
            // byte-order mark) for an array that is not cast, or any that this tool cannot
            // read (a hand-made `F16` or `I8`, which would otherwise pass for the
            // safetensors dtype of that name with another element size).
            let unknown_numpy = file.container != Container::Safetensors && tensor.element.is_unknown_dtype();
            if unknown_numpy || (!matches!(decision, Decision::Cast(_)) && numpy::is_numpy_type_string(&tensor.dtype)) {
                return Err(CastError::NoSafetensorsDtype {
                    path: fail_path(),
                    tensor: tensor.name.clone(),
                    dtype: tensor.dtype.clone(),
                });
            }
            if matches!(decision, Decision::Cast(_)) {
                let data = data_name(&tensor.name, options);
                let renamed = (data != tensor.name).then_some(data);
                for scale in added_names(&tensor.name, options).into_iter().chain(renamed) {
                    if all_names.contains(scale.as_str()) || !added.insert(scale.clone()) {
                        return Err(CastError::ScaleNameTaken {
                            path: fail_path(),
                            tensor: tensor.name.clone(),
                            scale,
                        });
                    }
                }
            }
            decisions.push(decision);
        }
        if let Some(warning) = unknown_dtypes_warning(file) {
            warnings.push(warning);
        }
        planned.push(decisions);
    }
    let config = config_beside(inputs);
    if let Some(path) = &config {
        // Read now, so that a bad one is refused before any work (and by a dry run).
        output::read_json_object(path)?;
    }
    let files = files
        .into_iter()
        .zip(output_names.into_iter().zip(big_endians))
        .zip(planned)
        .map(|((file, (name, big_endian)), decisions)| PlannedFile { file, name, decisions, big_endian })
        .collect();
    Ok(Plan { files, indexes: expanded.indexes, config, warnings })
}

/// The warnings for what the inputs' layout loses in the output, which is one folder of
/// files side by side (or one file): a name that reaches a file listed under another
/// name (a hard link or a symbolic link: written once, under that name), a file beside
/// an index that does not list it (cast as a file of its own, outside the rewritten
/// index), and a file in a subfolder of a folder input (written at the output's top
/// level). `shards`: every index's shards; `output_names`: each of `expanded.files`'
/// names in the output.
fn layout_warnings(
    inputs: &[PathBuf],
    expanded: &Inputs,
    shards: &HashSet<&PathBuf>,
    output_names: &[String],
) -> Vec<String> {
    let mut warnings: Vec<String> = expanded
        .aliases
        .iter()
        .map(|(alias, listed)| {
            format!("{}: the same file as {} (a link): cast once, under that name", path_text(alias), path_text(listed))
        })
        .collect();
    for (path, name) in expanded.files.iter().zip(output_names) {
        let parent = path.parent();
        if !shards.contains(path)
            && let Some(index) = expanded.indexes.iter().find(|index| index.path.parent() == parent)
        {
            warnings.push(format!(
                "{}: beside {}, which does not list it: cast as a file of its own, outside the rewritten index",
                path_text(path),
                path_text(&index.path)
            ));
        }
        let folder = inputs.iter().find(|input| input.is_dir() && path.starts_with(input));
        if let Some(folder) = folder
            && parent != Some(folder.as_path())
        {
            warnings.push(format!(
                "{}: in a subfolder of {}: written as {} at the output's top level",
                path_text(path),
                path_text(folder),
                excerpt(name)
            ));
        }
    }
    warnings
}

/// The warning for a safetensors file's tensors of dtypes this tool does not know (a
/// dtype newer than the `safetensors` crate, or a made-up one such as `I4`): they are
/// copied byte for byte, as `scan` lists them unscanned, and neither can check their
/// data's size against their shape. `None` when it has none, and for NumPy files (whose
/// unknown type strings [`plan`] refuses).
fn unknown_dtypes_warning(file: &TensorFile) -> Option<String> {
    if file.container != Container::Safetensors {
        return None;
    }
    let unknown: Vec<_> = file.tensors.iter().filter(|t| t.element.is_unknown_dtype()).collect();
    let first = unknown.first()?;
    Some(format!(
        "{}: {} of a dtype this tool does not know (first: '{}', dtype '{}'): copied byte for byte, sizes unchecked",
        path_text(&file.path),
        bitexact_support::output::count_of(unknown.len() as u64, "tensor"),
        excerpt(&first.name),
        excerpt(&first.dtype)
    ))
}

/// For a `.npy` or `.npz` file: its arrays named and typed as in the output ([`numpy`]:
/// a `.npy`'s one array after the file, every dtype a safetensors name where there is
/// one; the NumPy type string is kept where there is none, for [`plan`] to refuse), a
/// Fortran-ordered array that needs reordering refused. Returns, per tensor, whether it
/// is stored big-endian. A safetensors file is left as it is (all little-endian).
fn numpy_as_safetensors(file: &mut TensorFile) -> Result<Vec<bool>, CastError> {
    if file.container == Container::Safetensors {
        return Ok(vec![false; file.tensors.len()]);
    }
    if file.container == Container::Npy
        && let [array] = &mut file.tensors[..]
    {
        array.name = numpy::npy_tensor_name(&file.path);
    }
    let mut big_endian = Vec::new();
    for tensor in &mut file.tensors {
        if numpy::needs_reordering(tensor) {
            return Err(CastError::FortranOrder { path: file.path.clone(), tensor: tensor.name.clone() });
        }
        big_endian.push(numpy::is_big_endian(&tensor.dtype));
        if let Some(element) = crate::dtype::ElementType::of_numpy(&tensor.dtype) {
            tensor.dtype = element.safetensors_name().to_string();
        }
    }
    Ok(big_endian)
}

/// The `config.json` beside the first input: in it, for a directory; in its directory,
/// for a file or an index.
fn config_beside(inputs: &[PathBuf]) -> Option<PathBuf> {
    let first = inputs.first()?;
    let directory = if first.is_dir() { first.as_path() } else { first.parent().unwrap_or(Path::new("")) };
    let config = directory.join("config.json");
    config.is_file().then_some(config)
}

/// The report's tensors of a plan (before any value is computed).
fn planned_tensors(plan: &Plan, options: &CastOptions) -> Vec<CastTensor> {
    let mut tensors = Vec::new();
    for file in &plan.files {
        for (tensor, &decision) in file.file.tensors.iter().zip(&file.decisions) {
            let cast = matches!(decision, Decision::Cast(_));
            tensors.push(CastTensor {
                file: file.name.clone(),
                name: tensor.name.clone(),
                shape: tensor.shape.clone(),
                from: tensor.dtype.clone(),
                to: if cast { options.to.safetensors_name().to_string() } else { tensor.dtype.clone() },
                decision,
                scale_tensor: (cast && options.scaled()).then(|| scale_name(&tensor.name, options)),
                dequant_scale: None,
                scale_shape: if cast && options.blocks().is_some() {
                    scale_shape(&tensor.shape, options)
                } else {
                    None
                },
                dequant_scales: None,
                packed_tensor: (cast && data_name(&tensor.name, options) != tensor.name)
                    .then(|| data_name(&tensor.name, options)),
                global_scale_tensor: global_scale_name(&tensor.name, options).filter(|_| cast),
                global_scale: None,
            });
        }
    }
    tensors
}

/// Casts the safetensors checkpoint(s) `inputs` (files, a sharded checkpoint's index or
/// its directory) to `options.to`, into `output`: a folder (which must not exist)
/// holding one output file per input file, of the same name, each index rewritten and
/// the `config.json` beside the input carried over; or, for a single input file and an
/// `output` ending in `.safetensors`, that file. Every value cast is correctly rounded
/// from its own source value (see [`convert`]). Nothing is in place until every file
/// is written whole and synced; on any error, nothing is left.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # mod bitexact { pub use bitexact_files as files; }
/// use bitexact::files::cast::{CastOptions, cast, convert::Target};
/// let options = CastOptions { to: Target::E4m3.into(), ..CastOptions::default() };
/// let report = cast(&["model".into()], "model-fp8".as_ref(), &options)?;
/// println!("{} tensors", report.tensors.len());
/// # Ok(())
/// # }
/// ```
pub fn cast(inputs: &[PathBuf], output: &Path, options: &CastOptions) -> Result<CastReport, CastError> {
    let plan = plan(inputs, options)?;
    if let Some(only) = &options.patterns.only
        && !plan.files.iter().flat_map(|f| &f.decisions).any(|d| matches!(d, Decision::Cast(_)))
    {
        return Err(CastError::OnlySelectsNothing { pattern: only.as_str().to_string(), to: options.to.name() });
    }
    let (output, folder_asked) = output::folder_named(output);
    let output = output.as_path();
    let single_file = !folder_asked && output::single_file_output(output, &plan)?;
    output::check_output(output)?;
    let mut report = CastReport {
        output: output.display().to_string(),
        to: options.to,
        scale: options.to.fp8().map(|_| options.scale),
        layout: options.blocks().map(|_| options.layout),
        recipe: options.blocks().map(|_| recipe_name(options.recipe)),
        scale_format: (options.scale_format != ScaleFormat::F32).then_some(options.scale_format),
        rounding: (options.scaled() && !options.nvfp4()).then_some(match (options.rounding, options.recipe) {
            // DeepGEMM's and compressed-tensors' per-channel and block codes round twice.
            (_, CastRecipe::DeepGemm) => "as the recipe computes it",
            (_, CastRecipe::CompressedTensors) if options.scale != ScaleMode::Mx => "as the recipe computes it",
            (Rounding::Once, _) => "once",
            (Rounding::TwoStep, _) => "two-step",
        }),
        dry_run: options.dry_run,
        tensors: planned_tensors(&plan, options),
        indexes: plan
            .indexes
            .iter()
            .filter_map(|i| i.path.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect(),
        config: None,
        warnings: plan.warnings.clone(),
    };
    if options.dry_run {
        return Ok(report);
    }
    let bytes: u64 = plan
        .files
        .iter()
        .flat_map(|f| f.file.tensors.iter().zip(&f.decisions))
        .map(|(t, d)| {
            // A tensor scaled per tensor is read twice (its amax, then its values); per
            // channel or per block, once.
            let twice = matches!(d, Decision::Cast(_))
                && options.scaled()
                && (options.scale == ScaleMode::PerTensor || options.nvfp4());
            t.data.len() as u64 * if twice { 2 } else { 1 }
        })
        .sum();
    let progress = if options.progress_bar { Progress::new(bytes, "cast") } else { Progress::hidden(bytes) };
    let staged = output::write_all(output, &plan, options, single_file, &progress);
    progress.finish();
    let staged = staged?;
    for tensor in &mut report.tensors {
        let Some(scales) = staged.scales.get(&(tensor.file.clone(), tensor.name.clone())) else { continue };
        match (options.blocks(), scales.blocks.as_slice()) {
            (None, &[d]) => tensor.dequant_scale = Some(d),
            _ => tensor.dequant_scales = Some(BlockScales::of(&scales.blocks)),
        }
        tensor.global_scale = scales.global;
    }
    report.config = staged.config;
    report.warnings.extend(warnings(&report, options));
    staged.commit()?;
    Ok(report)
}

/// The [`CastReport::warnings`] of a cast that is written.
fn warnings(report: &CastReport, options: &CastOptions) -> Vec<String> {
    let mut warnings = Vec::new();
    let clamped = shared::fp8_scale::dequant_scale(f32::MAX);
    for tensor in &report.tensors {
        let Some(d) = tensor.dequant_scale.filter(|d| d.is_subnormal()) else { continue };
        let (file, name) = (bitexact_support::output::escape(&tensor.file), excerpt(&tensor.name));
        warnings.push(if d == clamped {
            format!(
                "{file}: tensor '{name}': its amax is so small that the scale max/amax is past f32 and clamped to f32::MAX: its FP8 codes do not span the format (and its dequantisation scale {d:e} is subnormal)"
            )
        } else {
            format!(
                "{file}: tensor '{name}': its dequantisation scale {d:e} is subnormal in f32: a loader that flushes subnormals to zero reads it as 0"
            )
        });
    }
    for tensor in &report.tensors {
        let Some(g) = tensor.global_scale.filter(|g| g.is_subnormal()) else { continue };
        warnings.push(format!(
            "{}: tensor '{}': its NVFP4 tensor scale {g:e} is subnormal in f32: a loader that flushes subnormals to zero reads it as 0",
            bitexact_support::output::escape(&tensor.file),
            excerpt(&tensor.name),
        ));
    }
    for tensor in &report.tensors {
        let Some(scales) = tensor.dequant_scales.filter(|s| s.nan > 0) else { continue };
        warnings.push(format!(
            "{}: tensor '{}': {} of its {} blocks hold a NaN or an infinity: their scale is E8M0's NaN, so every value of them reads as NaN (OCP MX)",
            bitexact_support::output::escape(&tensor.file),
            excerpt(&tensor.name),
            scales.nan,
            scales.count,
        ));
    }
    // MX scales are stored as exponents (E8M0), not as f32: the warning is not theirs.
    for tensor in report.tensors.iter().filter(|_| options.scale != ScaleMode::Mx) {
        let Some(scales) = tensor.dequant_scales.filter(|s| s.subnormal > 0) else { continue };
        warnings.push(format!(
            "{}: tensor '{}': {} of its {} dequantisation scales {} subnormal in f32 (least {:e}): a loader that flushes subnormals to zero reads them as 0",
            bitexact_support::output::escape(&tensor.file),
            excerpt(&tensor.name),
            scales.subnormal,
            scales.count,
            if scales.subnormal == 1 { "is" } else { "are" },
            scales.min
        ));
    }
    if options.to.fp8().is_some() && report.config == Some(ConfigWritten::Copied) {
        warnings.push(format!(
            "config.json was copied unchanged: only scaled e4m3 gets a quantization_config, so a loader will not know that these {} tensors are FP8",
            options.to.name()
        ));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Power-of-two scales: the exact recipe's and DeepGEMM's, each its own block
    /// arithmetic; a recipe with none is refused with the one-line reason.
    #[test]
    fn ue8m0_scales_are_the_exact_recipes_and_deepgemms() {
        let options = |recipe| CastOptions {
            to: CastTarget::Element(Target::E4m3),
            scale: ScaleMode::Block,
            recipe,
            scale_format: ScaleFormat::Ue8m0,
            ..CastOptions::default()
        };
        let recipe = |o: &CastOptions| o.block_recipe(WeightDtype::F32);
        assert_eq!(recipe(&options(CastRecipe::Exact)), Some(fp8_block::Recipe::ExactUe8m0));
        assert_eq!(recipe(&options(CastRecipe::DeepGemm)), Some(fp8_block::Recipe::DeepGemmUe8m0));
        assert_eq!(options(CastRecipe::Exact).contradiction(), None);
        assert_eq!(options(CastRecipe::DeepGemm).contradiction(), None);
        let refused = options(CastRecipe::CompressedTensors).contradiction();
        assert!(refused.is_some_and(|r| r.starts_with("--scale-format ue8m0 is modelled for")), "{refused:?}");
    }
}
