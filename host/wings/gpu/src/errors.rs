//! Everything that can go wrong on the GPU side ([`GpuError`]), why a newer module is not
//! loaded ([`ModuleUnavailable`]), and the driver-error wrappers every file of the crate
//! maps its driver calls through.

use crate::ShapeProblem;
use cudarc::driver::{DriverError, sys};
use shared::hardware::PtxTarget;

/// Everything that can go wrong on the GPU side, by stage. `Display` is one line; a
/// variant that wraps a driver error prints it and has no `source()`, so a chain printer
/// shows it once.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GpuError {
    /// `libcuda.so` could not be loaded: no NVIDIA driver on this machine.
    #[error("no CUDA driver: libcuda.so could not be loaded (is the NVIDIA driver installed?)")]
    NoDriver,
    /// The driver loaded but reports no device with that ordinal.
    #[error("no CUDA device {ordinal}: the driver reports {count} device(s)")]
    NoDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices the driver reports.
        count: usize,
    },
    /// A driver call failed while doing `stage`.
    #[error("CUDA driver error while {stage}: {error}")]
    Driver {
        /// What was being done.
        stage: String,
        /// The driver's error.
        error: DriverError,
    },
    /// A module of one's own ([`Gpu::load_user_module`](crate::Gpu::load_user_module)) defines a kernel named like
    /// one of the embedded modules' kernels; loading it would let the table's typed
    /// launches reach a kernel whose signature nobody vouched for.
    #[error("the module defines {name}, a name reserved for this project's own kernels; rename it")]
    NameTaken {
        /// The kernel's name.
        name: String,
    },
    /// The driver's JIT rejected the embedded PTX.
    #[error("the driver rejected the embedded PTX: {log}")]
    PtxRejected {
        /// The JIT's error log.
        log: String,
    },
    /// The PTX has no kernel of that name (a build mismatch).
    #[error("kernel {name} is not in the PTX")]
    KernelMissing {
        /// The kernel's name.
        name: String,
    },
    /// A kernel launch or its execution failed.
    #[error("kernel {kernel} failed: {error}")]
    Launch {
        /// The kernel's name.
        kernel: String,
        /// The driver's error.
        error: DriverError,
    },
    /// A kernel's declaration ([`shared::kernel!`]) does not match its PTX entry's
    /// `.param` list.
    #[error("kernel {kernel} does not match its declaration: {detail}")]
    Signature {
        /// The kernel's name.
        kernel: String,
        /// The first difference.
        detail: String,
    },
    /// A launch shape the device (or the kernel) cannot run.
    #[error("kernel {kernel}: cannot launch {problem}")]
    LaunchShape {
        /// The kernel's name.
        kernel: String,
        /// What is out of range.
        problem: ShapeProblem,
    },
    /// Device memory ran out.
    #[error("out of device memory allocating {bytes} bytes")]
    OutOfMemory {
        /// Bytes asked for.
        bytes: usize,
    },
    /// A kernel's output is not what the CPU computes (found by a benchmark's check).
    #[error("kernel {kernel} computed a wrong result: {detail}")]
    WrongResult {
        /// The kernel's name.
        kernel: String,
        /// What differs.
        detail: String,
    },
    /// Buffers passed to a kernel do not have the lengths it needs.
    #[error("kernel {kernel}: {detail}")]
    Length {
        /// The kernel's name.
        kernel: String,
        /// What was wrong.
        detail: String,
    },
    /// A copy between buffers of different lengths.
    #[error("kernel {}: {} {from} elements into {into}", .copy.kernel(), .copy.verb())]
    CopyLength {
        /// Which copy.
        copy: DeviceCopy,
        /// Elements in the source.
        from: usize,
        /// Elements in the destination.
        into: usize,
    },
    /// The kernel is in a PTX module this device cannot run (its target is newer than
    /// the device) or whose load failed: a hardware kernel of an instruction the device
    /// lacks. Tests report it as a skip.
    #[error("kernel {kernel}: {reason}")]
    NeedsTarget {
        /// The kernel's name.
        kernel: String,
        /// Why, e.g. `needs sm_89; device 0 is sm_80`.
        reason: ModuleUnavailable,
    },
}

/// Why a newer PTX module (a hardware conversion's target) is not loaded on a device.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModuleUnavailable {
    /// The device's compute capability is below the module's target.
    #[error("needs {target}; device {ordinal} is sm_{sm}")]
    OlderDevice {
        /// The module's target.
        target: PtxTarget,
        /// The device.
        ordinal: usize,
        /// The device's `sm_` number (major * 10 + minor).
        sm: i32,
    },
    /// The driver refused the module; its JIT log.
    #[error("the driver rejected the {target} module: {log}")]
    Rejected {
        /// The module's target.
        target: PtxTarget,
        /// What the JIT said.
        log: String,
    },
}

/// A copy out of a device buffer, as [`GpuError::CopyLength`] names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeviceCopy {
    /// Device to host ([`Gpu::download_into`](crate::Gpu::download_into)).
    ToHost,
    /// Device to device ([`Gpu::copy`](crate::Gpu::copy)).
    ToDevice,
}

impl DeviceCopy {
    /// The driver call's name, as [`GpuError::CopyLength`] shows it.
    fn kernel(self) -> &'static str {
        match self {
            DeviceCopy::ToHost => "memcpy_dtoh",
            DeviceCopy::ToDevice => "memcpy_dtod",
        }
    }

    /// How [`GpuError::CopyLength`] says what was copied.
    fn verb(self) -> &'static str {
        match self {
            DeviceCopy::ToHost => "copying",
            DeviceCopy::ToDevice => "copy of",
        }
    }
}

impl GpuError {
    /// `true` when the error means "there is no GPU here" rather than a failure on one.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, GpuError::NoDriver | GpuError::NoDevice { .. })
    }
}

pub(crate) fn driver(stage: impl Into<String>) -> impl FnOnce(DriverError) -> GpuError {
    move |error| GpuError::Driver { stage: stage.into(), error }
}

pub(crate) fn alloc_error(bytes: usize) -> impl FnOnce(DriverError) -> GpuError {
    move |error| match error.0 {
        sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => GpuError::OutOfMemory { bytes },
        _ => GpuError::Driver { stage: format!("allocating {bytes} bytes"), error },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    #[test]
    fn a_driver_error_is_in_the_line_and_not_behind_source_too() {
        // Only `source()` here: a DriverError's Display asks libcuda for its text.
        let error = || DriverError(sys::CUresult::CUDA_ERROR_UNKNOWN);
        let driver = GpuError::Driver { stage: "allocating 4 bytes".into(), error: error() };
        let launch = GpuError::Launch { kernel: "k".into(), error: error() };
        assert!(driver.source().is_none());
        assert!(launch.source().is_none());
    }

    #[test]
    fn each_copy_says_which_driver_call_and_the_lengths() {
        let copy = |copy| GpuError::CopyLength { copy, from: 3, into: 2 }.to_string();
        assert_eq!(copy(DeviceCopy::ToHost), "kernel memcpy_dtoh: copying 3 elements into 2");
        assert_eq!(copy(DeviceCopy::ToDevice), "kernel memcpy_dtod: copy of 3 elements into 2");
        let reason = ModuleUnavailable::OlderDevice { target: PtxTarget { sm: 89, ptx: 81 }, ordinal: 0, sm: 80 };
        let needs = GpuError::NeedsTarget { kernel: "k".into(), reason: reason.clone() };
        assert_eq!(needs.to_string(), format!("kernel k: {reason}"));
        assert!(needs.source().is_none());
    }
}
