//! The command line's choices (`--format`, `--device`, `--cpu-level`, `--dtype`, `--layout`,
//! and `cast`'s `--to`, `--scale`, `--rounding`, `--nonfinite`): clap's value enums, with
//! their help text, each mapped onto the library type it stands for. The library's types
//! know nothing of clap.

use bitexact::cpu::Level;
use bitexact::files::backend::Device;
use bitexact::files::cast::convert::CastTarget;
use bitexact::files::cast::{CastRecipe, NonFiniteValues, ScaleFormat, ScaleLayout, ScaleMode};
use bitexact::files::normalize::image::ChannelLayout;
use bitexact::files::write::Dtype;
use shared::fp8_scale::Rounding;

/// Output format of a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// Aligned plain-text table.
    Table,
    /// GitHub-flavoured Markdown table.
    Markdown,
    /// Machine-readable JSON.
    Json,
}

/// The `--format` of a job's one summary (`cast`, `normalize`): a table or JSON. (Its
/// values have no `///` help: per-value help would turn `--help`'s one line of possible
/// values into a list.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SummaryFormat {
    // The summary as text.
    Table,
    // Machine-readable JSON.
    Json,
}

/// The `--device` choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceArg {
    /// Whichever of the CPU and the GPU is faster for the job, measured on its first
    /// slices; the CPU when there is no usable GPU.
    Auto,
    /// The CPU, all cores.
    Cpu,
    /// The GPU; an error when there is none.
    Gpu,
}

impl From<DeviceArg> for Device {
    fn from(device: DeviceArg) -> Device {
        match device {
            DeviceArg::Auto => Device::Auto,
            DeviceArg::Cpu => Device::Cpu,
            DeviceArg::Gpu => Device::Gpu,
        }
    }
}

/// The `--cpu-level` choice: the instruction set the CPU loops run with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CpuLevelArg {
    /// The baseline target's instructions: every x86-64 CPU (and every other).
    Portable,
    /// AVX2, FMA and F16C.
    Avx2,
    /// AVX-512 F, BW and VL on top of avx2.
    Avx512,
}

impl From<CpuLevelArg> for Level {
    fn from(level: CpuLevelArg) -> Level {
        match level {
            CpuLevelArg::Portable => Level::Portable,
            CpuLevelArg::Avx2 => Level::Avx2,
            CpuLevelArg::Avx512 => Level::Avx512,
        }
    }
}

/// Defines a CLI choice over a role of the element-type table
/// (`bitexact::files::dtype`): the newtype `$arg` over `$role`, whose values are the
/// role's members in its order ([`Dtype::ALL`], [`Target::ALL`]), each spelt as its name
/// and described by `$help`; so a dtype added to the role needs nothing here.
macro_rules! role_choice {
    ($(#[$meta:meta])* $arg:ident($role:ident), help: $help:expr) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $arg(pub $role);

        impl $arg {
            /// Every member, in the role's order.
            const ALL: [$arg; $role::ALL.len()] = {
                let mut all = [$arg($role::ALL[0]); $role::ALL.len()];
                let mut i = 0;
                while i < all.len() {
                    all[i] = $arg($role::ALL[i]);
                    i += 1;
                }
                all
            };
        }

        impl clap::ValueEnum for $arg {
            fn value_variants<'a>() -> &'a [$arg] {
                &$arg::ALL
            }

            fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
                let help: fn($role) -> String = $help;
                Some(clap::builder::PossibleValue::new(self.0.name()).help(help(self.0)))
            }
        }

        impl From<$arg> for $role {
            fn from(choice: $arg) -> $role {
                choice.0
            }
        }
    };
}

role_choice!(
    /// The `--dtype` choice: any [`Dtype`], described by its [`Dtype::summary`] (what it
    /// is and which containers hold it).
    DtypeArg(Dtype),
    help: Dtype::summary
);

/// Axis order of the output tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LayoutArg {
    /// [height, width, channels]: the decoder's interleaved order.
    Hwc,
    /// [channels, height, width]: one plane per channel.
    Chw,
}

impl From<LayoutArg> for ChannelLayout {
    fn from(layout: LayoutArg) -> ChannelLayout {
        match layout {
            LayoutArg::Hwc => ChannelLayout::Hwc,
            LayoutArg::Chw => ChannelLayout::Chw,
        }
    }
}

role_choice!(
    /// `cast --to`: any [`CastTarget`] (the table's targets, then NVFP4), described by its
    /// title.
    TargetArg(CastTarget),
    help: |target| target.title().to_string()
);

/// `cast --scale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ScaleArg {
    /// s = fl32(max / amax) per tensor; fl32(1/s) stored as <name>_scale (F32, shape [1]).
    PerTensor,
    /// One scale per row of each 2-D tensor: d = fl32(amax_row / max), q = x/d rounded
    /// once; d stored as <name>_scale (F32, [rows, 1]; by --recipe compressed-tensors in the
    /// weights' dtype), compressed-tensors' "channel".
    PerChannel,
    /// One scale per 128x128 tile of each 2-D tensor, as per-channel; d stored as
    /// <name>_scale (F32, [ceil(rows/128), ceil(cols/128)]), or _scale_inv with --layout deepseek.
    Block,
    /// MXFP8: one power of two 2^k per 32 values of a row of each 2-D tensor (its columns
    /// a multiple of 32), q = x/2^k rounded once; k + 127 stored as <name>_scale (U8,
    /// E8M0, [rows, cols/32]), compressed-tensors' "mxfp8-quantized". --to e4m3 only.
    Mx,
    /// No scale: each value converted as it is (saturating unless --no-saturate).
    None,
}

impl From<ScaleArg> for ScaleMode {
    fn from(scale: ScaleArg) -> ScaleMode {
        match scale {
            ScaleArg::PerTensor => ScaleMode::PerTensor,
            ScaleArg::PerChannel => ScaleMode::PerChannel,
            ScaleArg::Block => ScaleMode::Block,
            ScaleArg::Mx => ScaleMode::Mx,
            ScaleArg::None => ScaleMode::None,
        }
    }
}

/// `cast --recipe`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RecipeArg {
    /// d = fl32(amax / max) per block (for mx, the least 2^k with amax <= 448·2^k),
    /// q = x/d rounded once: q·d is the nearest the stored d allows. For --to nvfp4: g =
    /// fl32(amax/2688), s = e4m3(b/(6g)), q = e2m1(x/(s·g)), each from the exact quotient.
    Exact,
    /// DeepGEMM's per_block_cast_to_fp8 (as vLLM runs it on CUDA), modelled on its source: sf = fl32(max(amax, 1e-4) · fl32(1/448)), q = fl32(x · fl32(1/sf)) rounded;
    /// --to e4m3 --scale block only.
    Deepgemm,
    /// compressed-tensors' (llm-compressor's oneshot and model_free_ptq, as they run on
    /// CUDA), modelled on its source, bf16 and f32 tensors: per-channel and block, s =
    /// W(fl32(amax/448)) (W the weights' dtype, which stores s), q =
    /// e4m3(clamp(W(fl32(x/s)), ±448)); mx, 2^k from amax rounded to a power of two up from
    /// a significand of 1.75, q = x/2^k rounded once; --to e4m3 only. For --to nvfp4, its
    /// nvfp4-pack-quantized arithmetic (in the compressed-tensors layout).
    CompressedTensors,
    /// ModelOpt's NVFP4 export (as it runs on CUDA), modelled on its source: g = fl32(amax ·
    /// fl32(1/2688)), s = e4m3(fl32(b / fl32(6g))), q = e2m1(fl32(x / fl32(s·g))); --to nvfp4
    /// in the modelopt layout only.
    Modelopt,
    /// OCP MX v1.0's rule (torchao's FLOOR, as its code since 2026-08-12 computes it): 2^k with
    /// k = floor(log2 amax) - 8, so the block's values past 448·2^k saturate; q = x/2^k rounded
    /// once; --to e4m3 --scale mx only.
    Ocp,
    /// torchao's RCEIL (as its code since 2026-08-12 computes it): 2^k the least at or above
    /// fl32(amax · fl32(1/448)) (the exact rule's on every f32 amax but one); q = x/2^k rounded
    /// once; --to e4m3 --scale mx only.
    Rceil,
}

/// `cast --scale-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ScaleFormatArg {
    /// Any f32 (the default): d = fl32(amax / max), or DeepGEMM's sf.
    F32,
    /// Powers of two (DeepSeek-V3.1's scale_fmt "ue8m0"): d = 2^k, the least with amax <=
    /// max·2^k (with --recipe deepgemm, DeepGEMM's sf rounded up to a power of two); still
    /// stored as F32; the exact recipe, --scale per-channel or block, or DeepGEMM's.
    Ue8m0,
    /// bfloat16 (a bf16 model loaded by transformers keeps them; it rounds F32 scales to
    /// bf16): d the least bfloat16 with amax <= max·d, stored as BF16; the exact recipe,
    /// --scale per-channel or block, compressed-tensors' layout.
    Bf16,
}

impl From<ScaleFormatArg> for ScaleFormat {
    fn from(format: ScaleFormatArg) -> ScaleFormat {
        match format {
            ScaleFormatArg::F32 => ScaleFormat::F32,
            ScaleFormatArg::Ue8m0 => ScaleFormat::Ue8m0,
            ScaleFormatArg::Bf16 => ScaleFormat::Bf16,
        }
    }
}

impl From<RecipeArg> for CastRecipe {
    fn from(recipe: RecipeArg) -> CastRecipe {
        match recipe {
            RecipeArg::Exact => CastRecipe::Exact,
            RecipeArg::Deepgemm => CastRecipe::DeepGemm,
            RecipeArg::CompressedTensors => CastRecipe::CompressedTensors,
            RecipeArg::Modelopt => CastRecipe::ModelOpt,
            RecipeArg::Ocp => CastRecipe::Ocp,
            RecipeArg::Rceil => CastRecipe::Rceil,
        }
    }
}

/// `cast --layout`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ScaleLayoutArg {
    /// compressed-tensors: <name>_scale, quant_method "compressed-tensors" (vLLM,
    /// transformers, llm-compressor).
    CompressedTensors,
    /// DeepSeek-V3's fp8: <name>_scale_inv, quant_method "fp8", weight_block_size
    /// [128, 128] (vLLM, transformers); --to e4m3 --scale block only.
    #[value(alias = "fp8")]
    Deepseek,
    /// NVIDIA ModelOpt's NVFP4: the packed codes under the weight's name, <name>_scale and
    /// <name>_scale_2 (= g), quant_method "modelopt" and hf_quant_config.json (vLLM); --to
    /// nvfp4 only, its default with the exact recipe.
    Modelopt,
}

impl From<ScaleLayoutArg> for ScaleLayout {
    fn from(layout: ScaleLayoutArg) -> ScaleLayout {
        match layout {
            ScaleLayoutArg::CompressedTensors => ScaleLayout::CompressedTensors,
            ScaleLayoutArg::Deepseek => ScaleLayout::DeepSeek,
            ScaleLayoutArg::Modelopt => ScaleLayout::ModelOpt,
        }
    }
}

/// `cast --rounding`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RoundingArg {
    /// The exact product x·s rounded once to FP8.
    Once,
    /// fl32(x·s) first, then FP8 (what Transformer Engine and torchao compute).
    TwoStep,
}

impl From<RoundingArg> for Rounding {
    fn from(rounding: RoundingArg) -> Rounding {
        match rounding {
            RoundingArg::Once => Rounding::Once,
            RoundingArg::TwoStep => Rounding::TwoStep,
        }
    }
}

/// `cast --nonfinite`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum NonFiniteArg {
    /// Refuse the input (exit 1, nothing written), naming the first such value.
    Refuse,
    /// Convert them as the format allows.
    Keep,
}

impl From<NonFiniteArg> for NonFiniteValues {
    fn from(nonfinite: NonFiniteArg) -> NonFiniteValues {
        match nonfinite {
            NonFiniteArg::Refuse => NonFiniteValues::Refuse,
            NonFiniteArg::Keep => NonFiniteValues::Keep,
        }
    }
}
