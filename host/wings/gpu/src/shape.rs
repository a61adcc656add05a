//! A launch's shape (grid, block, dynamic shared memory) and the device's limits it is
//! checked against, for the typed launches of `typed`.

use cudarc::driver::LaunchConfig;
use shared::launch::Dim3;

/// Why a [`LaunchShape`] cannot run on a device (or for a kernel).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShapeProblem {
    /// An extent is 0 or past the device's maximum.
    #[error("{what}.{axis} = {value}, but it must be 1 ..= {max} on this device")]
    Extent {
        /// `grid` or `block`.
        what: &'static str,
        /// `x`, `y` or `z`.
        axis: char,
        /// The extent asked for.
        value: u32,
        /// The device's maximum.
        max: u32,
    },
    /// More threads per block than the device or the kernel (its registers) allow.
    #[error("a block of {threads} threads, but this kernel may have at most {limit}")]
    Threads {
        /// Threads asked for.
        threads: u64,
        /// The smaller of the device's and the kernel's limits.
        limit: u32,
    },
    /// More shared memory per block than the device allows.
    #[error(
        "{total} bytes of shared memory per block ({static_bytes} static + {dynamic_bytes} dynamic), but the device allows {limit}"
    )]
    Shared {
        /// Static plus dynamic.
        total: u64,
        /// The kernel's static shared memory.
        static_bytes: u32,
        /// The launch's dynamic shared memory.
        dynamic_bytes: u32,
        /// The device's per-block maximum (with the opt-in).
        limit: u32,
    },
}

/// What a device lets a launch ask for (the driver's attributes, read when the device
/// opens).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchLimits {
    /// Threads per block (`MAX_THREADS_PER_BLOCK`, 1024 on sm_75 … sm_120).
    pub max_threads_per_block: u32,
    /// The largest block extent per dimension (1024, 1024, 64).
    pub max_block: Dim3,
    /// The largest grid extent per dimension (2^31 - 1, 65535, 65535).
    pub max_grid: Dim3,
    /// Shared memory one block may have, static and dynamic together, with the opt-in
    /// above 48 KiB (`MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`; 227 KiB on an H100/H200).
    pub max_shared_bytes_per_block: u32,
}

/// A launch's grid, block and dynamic shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    /// Blocks per dimension.
    pub grid: Dim3,
    /// Threads per block per dimension.
    pub block: Dim3,
    /// Bytes of dynamic shared memory per block (`device_support::block::dynamic_shared`).
    pub dynamic_shared_bytes: u32,
}

/// Shared memory, static and dynamic together, a launch gets without the opt-in attribute.
pub(super) const DEFAULT_DYNAMIC_SHARED_LIMIT: u32 = 48 * 1024;

impl LaunchShape {
    /// `blocks` blocks of `threads` threads, in x, no dynamic shared memory.
    pub const fn linear(blocks: u32, threads: u32) -> LaunchShape {
        LaunchShape { grid: Dim3::x(blocks), block: Dim3::x(threads), dynamic_shared_bytes: 0 }
    }

    /// The same shape with `bytes` of dynamic shared memory per block.
    pub const fn with_dynamic_shared(self, bytes: u32) -> LaunchShape {
        LaunchShape { dynamic_shared_bytes: bytes, ..self }
    }

    /// Whether the device can run this shape for a kernel whose static shared memory is
    /// `static_shared_bytes` and whose own thread limit (registers) is
    /// `kernel_max_threads`: every extent at least 1 and within `limits`, the block's
    /// thread count within both limits, static plus dynamic shared memory within the
    /// block's. The error says which.
    pub fn check(
        &self,
        limits: &LaunchLimits,
        static_shared_bytes: u32,
        kernel_max_threads: u32,
    ) -> Result<(), ShapeProblem> {
        let dims = |d: Dim3| [d.x, d.y, d.z];
        for (what, extent, max) in [("grid", self.grid, limits.max_grid), ("block", self.block, limits.max_block)] {
            for ((axis, value), max) in ['x', 'y', 'z'].into_iter().zip(dims(extent)).zip(dims(max)) {
                if value == 0 || value > max {
                    return Err(ShapeProblem::Extent { what, axis, value, max });
                }
            }
        }
        let threads = self.block.volume();
        let limit = limits.max_threads_per_block.min(kernel_max_threads);
        if threads > u64::from(limit) {
            return Err(ShapeProblem::Threads { threads, limit });
        }
        let total = u64::from(static_shared_bytes) + u64::from(self.dynamic_shared_bytes);
        if total > u64::from(limits.max_shared_bytes_per_block) {
            return Err(ShapeProblem::Shared {
                total,
                static_bytes: static_shared_bytes,
                dynamic_bytes: self.dynamic_shared_bytes,
                limit: limits.max_shared_bytes_per_block,
            });
        }
        Ok(())
    }

    /// The shape of the driver's launch configuration `config`, the same grid, block and
    /// dynamic shared memory: the driver configuration of the result is `config` again.
    pub(crate) fn of_config(config: LaunchConfig) -> LaunchShape {
        let dim = |(x, y, z): (u32, u32, u32)| Dim3::new(x, y, z);
        LaunchShape {
            grid: dim(config.grid_dim),
            block: dim(config.block_dim),
            dynamic_shared_bytes: config.shared_mem_bytes,
        }
    }

    /// The driver's launch configuration of this shape.
    pub(super) fn config(&self) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (self.grid.x, self.grid.y, self.grid.z),
            block_dim: (self.block.x, self.block.y, self.block.z),
            shared_mem_bytes: self.dynamic_shared_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_launch_shape_is_checked_against_the_device_limits() {
        let limits = LaunchLimits {
            max_threads_per_block: 1024,
            max_block: Dim3::new(1024, 1024, 64),
            max_grid: Dim3::new(i32::MAX as u32, 65535, 65535),
            max_shared_bytes_per_block: 227 * 1024,
        };
        let ok = LaunchShape { grid: Dim3::new(4, 2, 1), block: Dim3::new(32, 8, 4), dynamic_shared_bytes: 100 * 1024 };
        assert_eq!(ok.check(&limits, 1024, 1024), Ok(()));
        let fails = [
            (LaunchShape::linear(0, 32), "grid.x = 0"),
            (LaunchShape { block: Dim3::new(32, 1, 65), ..ok }, "block.z = 65"),
            (LaunchShape { grid: Dim3::new(1, 65536, 1), ..ok }, "grid.y = 65536"),
            (LaunchShape::linear(1, 2048), "block.x = 2048"),
            (LaunchShape { block: Dim3::new(64, 32, 1), ..ok }, "a block of 2048 threads"),
            (ok.with_dynamic_shared(227 * 1024), "shared memory per block"),
        ];
        for (shape, expected) in fails {
            let error = shape.check(&limits, 1024, 1024).unwrap_err().to_string();
            assert!(error.contains(expected), "{error} should say {expected:?}");
        }
        let config = LaunchConfig { grid_dim: (7, 2, 3), block_dim: (256, 2, 1), shared_mem_bytes: 96 };
        let round_trip = LaunchShape::of_config(config).config();
        assert_eq!(
            (round_trip.grid_dim, round_trip.block_dim, round_trip.shared_mem_bytes),
            (config.grid_dim, config.block_dim, config.shared_mem_bytes)
        );
        // A kernel whose registers allow only 512 threads per block.
        assert!(LaunchShape::linear(1, 1024).check(&limits, 0, 512).unwrap_err().to_string().contains("at most 512"));
    }
}
