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

/// The `--dtype` choice: any [`Dtype`], named and described as its table entry says
/// ([`Dtype::ALL`], [`Dtype::name`], [`Dtype::summary`]), so a new dtype needs nothing here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DtypeArg(pub Dtype);

impl DtypeArg {
    /// Every dtype, in [`Dtype::ALL`]'s order.
    const ALL: [DtypeArg; Dtype::ALL.len()] = {
        let mut all = [DtypeArg(Dtype::F32); Dtype::ALL.len()];
        let mut i = 0;
        while i < all.len() {
            all[i] = DtypeArg(Dtype::ALL[i]);
            i += 1;
        }
        all
    };
}

impl clap::ValueEnum for DtypeArg {
    fn value_variants<'a>() -> &'a [DtypeArg] {
        &DtypeArg::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.name()).help(self.0.summary()))
    }
}

impl From<DtypeArg> for Dtype {
    fn from(dtype: DtypeArg) -> Dtype {
        dtype.0
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
