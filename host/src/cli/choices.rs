//! The command line's choices (`--format`, `--device`, `--cpu-level`, `--dtype`, `--layout`): clap's
//! value enums, with their help text, each mapped onto the library type it stands for.
//! The library's types know nothing of clap.

use bitexact::cpu::Level;
use bitexact::files::backend::Device;
use bitexact::files::normalize::image::ChannelLayout;
use bitexact::files::write::Dtype;

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

/// The element type of a written tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DtypeArg {
    /// IEEE 754 binary32: .npy <f4, .safetensors F32.
    F32,
    /// IEEE 754 binary16: .npy <f2, .safetensors F16.
    F16,
    /// bfloat16: .safetensors BF16; NumPy has no such dtype, so no .npy.
    Bf16,
}

impl From<DtypeArg> for Dtype {
    fn from(dtype: DtypeArg) -> Dtype {
        match dtype {
            DtypeArg::F32 => Dtype::F32,
            DtypeArg::F16 => Dtype::F16,
            DtypeArg::Bf16 => Dtype::Bf16,
        }
    }
}

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
