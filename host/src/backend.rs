//! Where `scan` and `normalize` do their work: the CPU (all cores), or a device backend
//! plugged in through [`gpu_backend`].
//!
//! A backend gets raw buffers and must give bit for bit what the CPU gives: counts
//! equal to [`FloatFormat::count`] and f32 outputs equal to [`normalize::unorm8_to_f32`]
//! / [`normalize::unorm16_to_f32`]. A device backend may hand any part it has no kernel
//! for to [`Cpu`].

use crate::normalize;
use crate::scan::{self, Counts, Endian, FloatFormat};
use rayon::prelude::*;
use std::path::Path;

/// The `--device` choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Device {
    /// The GPU when one is present and usable, else the CPU.
    Auto,
    /// The CPU, all cores.
    Cpu,
    /// The GPU; an error when there is none.
    Gpu,
}

/// A place to run `scan` and `normalize` on.
pub trait Backend: Sync {
    /// What the reports print as the device (`cpu`, `gpu 0: ...`).
    fn name(&self) -> String;

    /// Counts the non-finite elements of `data` (whole elements of `format`, stored in
    /// `endian` order), indices from 0, calling `progress` with bytes done as it goes.
    fn count_non_finite(
        &self,
        format: FloatFormat,
        endian: Endian,
        data: &[u8],
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Counts, String>;

    /// `dst[i] = src[i] / 255`, correctly rounded. `dst.len() == src.len()`.
    fn unorm8_to_f32(&self, src: &[u8], dst: &mut [f32]) -> Result<(), String>;

    /// `dst[i] = src[i] / 65535`, correctly rounded. `dst.len() == src.len()`.
    fn unorm16_to_f32(&self, src: &[u16], dst: &mut [f32]) -> Result<(), String>;
}

/// The CPU backend: every core of the global rayon pool, in blocks of
/// [`scan::BLOCK_BYTES`].
pub struct Cpu;

impl Backend for Cpu {
    fn name(&self) -> String {
        format!("cpu ({} threads)", rayon::current_num_threads())
    }

    fn count_non_finite(
        &self,
        format: FloatFormat,
        endian: Endian,
        data: &[u8],
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Counts, String> {
        Ok(scan::count_parallel(format, endian, data, progress))
    }

    fn unorm8_to_f32(&self, src: &[u8], dst: &mut [f32]) -> Result<(), String> {
        convert_parallel(src, dst, normalize::unorm8_to_f32);
        Ok(())
    }

    fn unorm16_to_f32(&self, src: &[u16], dst: &mut [f32]) -> Result<(), String> {
        convert_parallel(src, dst, normalize::unorm16_to_f32);
        Ok(())
    }
}

/// Runs an element-wise `kernel` over matching blocks of `src` and `dst` on all cores.
fn convert_parallel<S: Sync, D: Send>(src: &[S], dst: &mut [D], kernel: fn(&[S], &mut [D])) {
    let block = scan::BLOCK_BYTES / size_of::<D>();
    dst.par_chunks_mut(block).zip(src.par_chunks(block)).for_each(|(d, s)| kernel(s, d));
}

/// The hook for a GPU backend: returns it, or why there is none.
///
/// Today no GPU backend is wired in: without a GPU this says so, and with one it says
/// that this build cannot use it yet. Detection needs no CUDA library: it looks for the
/// NVIDIA driver's device nodes.
pub fn gpu_backend() -> Result<Box<dyn Backend>, String> {
    if !nvidia_gpu_present() {
        return Err("no GPU found (no NVIDIA driver device /dev/nvidia0)".into());
    }
    Err("a GPU is present, but this build has no GPU backend for scan/normalize yet".into())
}

/// `true` if the NVIDIA driver exposes at least one GPU.
fn nvidia_gpu_present() -> bool {
    Path::new("/dev/nvidia0").exists()
}

/// The backend for `device`: `gpu` fails without a usable GPU, `auto` falls back to the
/// CPU.
pub fn select(device: Device) -> Result<Box<dyn Backend>, String> {
    match device {
        Device::Cpu => Ok(Box::new(Cpu)),
        Device::Gpu => gpu_backend().map_err(|e| format!("--device gpu: {e}")),
        Device::Auto => Ok(gpu_backend().unwrap_or_else(|_| Box::new(Cpu))),
    }
}
