//! The PTX of every kernel, built by `build.rs` from `kernels-gpu` and embedded here.

/// PTX for `nvptx64-nvidia-cuda`, `.target sm_75`: one kernel per variant (named like
/// it) and its `<name>_skeleton`, plus the throughput kernels.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// Name of the load/index/store-only kernel built like `variant`'s, for the SASS report.
pub fn skeleton_name(variant: &str) -> String {
    format!("{variant}_skeleton")
}

/// Names of the kernel entry points (`.entry NAME(`) in `ptx`, in order.
pub fn entry_names(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter_map(|line| {
            line.trim_start().strip_prefix(".visible .entry ").or_else(|| line.trim_start().strip_prefix(".entry "))
        })
        .filter_map(|rest| rest.split('(').next())
        .map(str::trim)
        .collect()
}
